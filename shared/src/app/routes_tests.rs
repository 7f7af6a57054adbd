use super::*;
use crate::http::{Params, captures};

/// The table scanned row by row in order: what [`Router`] must answer identically.
fn scan<'p>(method: &Method, path: &'p str, prefix: &str) -> Resolved<'p> {
    let path = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    for under_prefix in [false, true] {
        let mut allowed: Vec<&str> = Vec::new();
        for route in ROUTES {
            if (route.prefix == Prefix::Leading) != under_prefix {
                continue;
            }
            let Some(params) = captures(route, prefix, path) else {
                continue;
            };
            if route.method == method.as_str() {
                return Resolved::Route(Matched {
                    route,
                    params: Params(params),
                });
            }
            if !allowed.contains(&route.method) {
                allowed.push(route.method);
            }
        }
        if !allowed.is_empty() {
            return Resolved::MethodNotAllowed(allowed.join(", "));
        }
    }
    Resolved::NotFound
}

fn outcome(resolved: Resolved<'_>) -> String {
    match resolved {
        Resolved::Route(matched) => format!("{} {:?}", matched.route.name, matched.params.0),
        Resolved::MethodNotAllowed(allow) => format!("405 {allow}"),
        Resolved::NotFound => "404".into(),
    }
}

#[test]
fn the_compiled_router_answers_exactly_as_a_scan_of_the_rows() {
    let methods = ["GET", "POST", "DELETE", "PATCH", "OPTIONS", "PUT"];
    for prefix in [
        "",
        "/api",
        "/api/user",
        "/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let router = Router::new(ROUTES, prefix);
        let mut paths: Vec<String> = vec!["/".into(), "".into(), "/nowhere".into()];
        for route in ROUTES {
            let concrete = route
                .path
                .replace("{secret}", "s3cr3t")
                .replace("{state}", "st")
                .replace("{name}", "srv");
            for base in [route.path.to_string(), concrete] {
                paths.push(base.clone());
                paths.push(format!("{prefix}{base}"));
                paths.push(format!("{prefix}{base}/"));
                paths.push(format!("{base}/extra"));
                paths.push(format!(
                    "{RESOURCE_METADATA}{prefix}{}",
                    base.trim_start_matches(RESOURCE_METADATA)
                ));
            }
        }
        for path in &paths {
            for method in methods {
                let method = Method::from_bytes(method.as_bytes()).unwrap();
                assert_eq!(
                    outcome(router.resolve(&method, path)),
                    outcome(scan(&method, path, prefix)),
                    "{method} {path} with prefix {prefix:?}"
                );
            }
        }
    }
}

/// The route's name and its one path parameter, or `None` for no route.
fn found<'p>(
    method: Method,
    path: &'p str,
    prefix: &str,
) -> Option<(&'static str, Option<&'p str>)> {
    match resolve(&method, path, prefix) {
        Resolved::Route(matched) => {
            let param = matched.params.0.first().map(|(_, value)| *value);
            Some((matched.route.name, param))
        }
        _ => None,
    }
}

#[test]
fn mcp_routes_live_under_the_prefix() {
    assert_eq!(found(Method::POST, "/mcp", ""), Some(("POST /mcp", None)));
    assert_eq!(
        found(Method::POST, "/api/mcp", "/api"),
        Some(("POST /mcp", None))
    );
    assert_eq!(found(Method::POST, "/mcp", "/api"), None);
    assert_eq!(
        found(Method::POST, "/api/mcp/s3cr3t", "/api"),
        Some(("POST /mcp/{secret}", Some("s3cr3t")))
    );
    assert_eq!(found(Method::GET, "/mcp/", ""), Some(("GET /mcp", None)));
    assert_eq!(found(Method::POST, "/mcp/a/b", ""), None);
    assert_eq!(found(Method::POST, "/mcp/", ""), Some(("POST /mcp", None)));
    assert_eq!(
        found(Method::POST, "/api/personal/mcp", "/api"),
        Some(("POST /personal/mcp", None))
    );
}

#[test]
fn well_known_documents_and_apis_never_take_the_prefix() {
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/mcp-configuration",
        "/.well-known/oauth-protected-resource",
        "/oauth/token",
        "/api/data",
    ] {
        let method = if path.starts_with("/oauth") {
            Method::POST
        } else {
            Method::GET
        };
        assert!(found(method.clone(), path, "/api").is_some(), "{path}");
        assert!(
            found(method, &format!("/api{path}"), "/api").is_none(),
            "{path}"
        );
    }
    // RFC 9728: the prefixed resource's metadata has the prefix after the well-known name.
    let name = Some(("GET /.well-known/oauth-protected-resource", None));
    assert_eq!(
        found(
            Method::GET,
            "/.well-known/oauth-protected-resource/api/mcp",
            "/api"
        ),
        name
    );
    assert_eq!(
        found(
            Method::GET,
            "/.well-known/oauth-protected-resource/mcp",
            "/api"
        ),
        None
    );
    assert_eq!(
        found(Method::GET, "/.well-known/oauth-protected-resource/mcp", ""),
        name
    );
}

#[test]
fn aliases_share_their_names() {
    assert_eq!(
        found(Method::GET, "/oauth2/authorize", ""),
        Some(("GET /oauth/authorize", None))
    );
    assert_eq!(
        found(Method::POST, "/api/user/mcp", ""),
        Some(("GET|POST /api/user/mcp", None))
    );
    assert_eq!(
        found(Method::OPTIONS, "/mcp/s3cr3t", ""),
        Some(("OPTIONS /mcp", Some("s3cr3t")))
    );
    assert_eq!(
        found(Method::GET, "/.well-known/mcp-configuration", ""),
        Some(("GET /.well-known/oauth-authorization-server", None))
    );
}

#[test]
fn a_parameter_is_one_non_empty_segment() {
    let probe = Some(("POST /api/user/mcp-servers/{name}/probe", Some("shop")));
    assert_eq!(
        found(Method::POST, "/api/user/mcp-servers/shop/probe/", ""),
        probe
    );
    assert_eq!(
        found(Method::GET, "/api/user/mcp-servers/probe", ""),
        Some(("GET /api/user/mcp-servers/{name}", Some("probe")))
    );
    assert_eq!(
        found(Method::POST, "/api/user/mcp-servers//probe", ""),
        None
    );
    assert_eq!(found(Method::GET, "/api/user/mcp-servers/a/b", ""), None);
    assert_eq!(found(Method::GET, "/oauth2/check_state/", ""), None);
    assert_eq!(found(Method::GET, "/oauth2/check_state/a/b", ""), None);
}

#[test]
fn a_known_path_with_another_method_lists_the_methods_it_serves() {
    let allow = |method: Method, path: &str| match resolve(&method, path, "") {
        Resolved::MethodNotAllowed(allow) => allow,
        other => panic!("{method} {path}: {other:?}"),
    };
    assert_eq!(allow(Method::PUT, "/api/data"), "GET, DELETE");
    assert_eq!(allow(Method::GET, "/api/data/health"), "POST");
    assert_eq!(
        allow(Method::GET, "/api/user/mcp-servers/shop/probe"),
        "POST"
    );
    assert_eq!(
        allow(Method::POST, "/api/user/mcp-servers/shop"),
        "GET, PATCH, DELETE"
    );
    assert_eq!(allow(Method::GET, "/oauth/token"), "POST, OPTIONS");
    assert_eq!(allow(Method::PUT, "/personal/mcp"), "POST, DELETE, OPTIONS");
    assert!(matches!(
        resolve(&Method::GET, "/nowhere", ""),
        Resolved::NotFound
    ));
}

#[test]
fn a_prefix_never_hides_a_fixed_path() {
    assert_eq!(
        found(Method::GET, "/api/user/mcp", "/api/user"),
        Some(("GET|POST /api/user/mcp", None))
    );
    assert!(matches!(
        resolve(&Method::DELETE, "/api/user/mcp", "/api/user"),
        Resolved::MethodNotAllowed(_)
    ));
}

#[test]
fn the_placeholder_allows_what_mcp_answers() {
    let get = ROUTES.iter().find(|r| r.name == "GET /mcp").unwrap();
    assert_eq!(allowed_besides(get), "POST, OPTIONS");
}

#[test]
fn every_route_table_entry_routes_to_its_own_group() {
    for (method, path, group) in templates() {
        let method: Method = method.parse().unwrap();
        let path = path
            .replace("{secret}", "s3cr3t")
            .replace("{state}", "st4te")
            .replace("{name}", "shop");
        assert_eq!(
            resolve(&method, &path, "").group(),
            Some(group),
            "{method} {path}"
        );
    }
}

#[test]
fn rows_are_well_formed_and_distinct() {
    for (i, route) in ROUTES.iter().enumerate() {
        assert!(route.path.starts_with('/'), "{}", route.path);
        assert!(route.group != RouteGroup::All, "{}: no group", route.path);
        // The name starts with the method(s) it stands for (aliases share one name).
        let (methods, _) = route.name.split_once(' ').unwrap_or_default();
        assert!(
            methods.split('|').any(|m| m == route.method),
            "{}",
            route.name
        );
        assert_eq!(
            route.handler.is(PREFLIGHT),
            route.method == "OPTIONS",
            "{}",
            route.name
        );
        if let Prefix::After(head) = route.prefix {
            assert!(
                route.path.starts_with(head) && !head.contains('{'),
                "{}",
                route.path
            );
        }
        let twin = ROUTES[..i].iter().any(|other| {
            other.method == route.method && other.path == route.path && other.prefix == route.prefix
        });
        assert!(!twin, "{} {} twice", route.method, route.path);
    }
}

#[test]
fn route_names_never_show_the_secret() {
    let Resolved::Route(matched) = resolve(&Method::POST, "/mcp/top-secret-value", "") else {
        panic!("no route");
    };
    let shown = format!("{matched:?} {}", matched.route.name);
    assert!(!shown.contains("top-secret-value"));
}
