//! `Origin` and `Host` checks against DNS rebinding (MCP transport security), and which
//! origin a CORS answer names.
//!
//! Owns which origins and hosts may reach each kind of route: loopback and the configured
//! public URL always; the origins of `MCP_ALLOWED_ORIGINS` only where
//! no cookie is ever read. A present, foreign `Origin` is refused with 403; a foreign
//! `Host` is refused too whenever the set of expected hosts is known (the setting never
//! widens the `Host` check: it names other sites, not this server).
//!
//! By access kind (`routes::Access`):
//! - `Open` (discovery, registration, token, introspection, revocation): no check; CORS
//!   `*`, as always.
//! - `SameOrigin` and `SignedIn` (`/mcp`, the JSON APIs, the login poll): bearer tokens,
//!   URL secrets or poll secrets only, never a cookie, so the listed origins pass too and
//!   get their own origin echoed; with `*` any origin passes and is answered
//!   `Access-Control-Allow-Origin: *`. Never `Access-Control-Allow-Credentials`.
//! - `Form` (the OAuth sign-in and consent forms, `/oauth/authorize` and `/mcplogin`) and
//!   `Page` (the console): cookie-bound (CSRF and session cookies), so the public URL
//!   only, whatever the setting, and loopback only while the public URL is not https
//!   (on an https deployment a page on the person's own machine is
//!   another site, which must not post a form their cookies ride on).

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

use super::routes::Access;
use crate::config::{AllowedOrigins, Config, Runtime, normalise_origin};

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// What a CORS answer names as its allowed origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CorsOrigin<'h> {
    /// The request's own `Origin`, echoed.
    Echo(&'h str),
    /// `*` (no `Origin`, or any origin allowed by `MCP_ALLOWED_ORIGINS=*`).
    Any,
}

#[derive(Debug, Clone)]
pub(crate) struct OriginPolicy {
    /// The public origin, exactly (`https://mcp.example.com`).
    public_origin: Option<String>,
    /// The public host (with port if any), for the `Host` check.
    public_host: Option<String>,
    /// Whether a `Host` outside loopback and the public host is refused. Off only in
    /// Lambda without a configured public URL, where the gateway's own name is unknown.
    check_host: bool,
    /// `MCP_ALLOWED_ORIGINS`, for the routes that read no cookie.
    allowed: AllowedOrigins,
    /// Whether loopback origins may reach the cookie-bound routes: only when the public
    /// URL is not https (local development, where loopback is the server's own origin).
    loopback_forms: bool,
}

impl OriginPolicy {
    pub(crate) fn new(config: &Config) -> Self {
        let public_origin = config
            .public_url
            .as_ref()
            .map(|url| origin_of(url).to_ascii_lowercase());
        let public_host = public_origin
            .as_ref()
            .and_then(|o| o.split_once("://").map(|(_, host)| host.to_string()));
        let check_host = public_origin.is_some() || config.runtime == Runtime::Local;
        let loopback_forms = !public_origin
            .as_deref()
            .is_some_and(|origin| origin.starts_with("https://"));
        OriginPolicy {
            public_origin,
            public_host,
            check_host,
            allowed: config.allowed_origins.clone(),
            loopback_forms,
        }
    }

    /// The origin a CORS answer on a route of this `access` names, or `None` when the
    /// request's `Origin` may not read it.
    pub(crate) fn cors_origin<'h>(
        &self,
        access: Access,
        headers: &'h HeaderMap,
    ) -> Option<CorsOrigin<'h>> {
        let Some(origin) = headers.get(ORIGIN) else {
            return Some(CorsOrigin::Any);
        };
        let origin = origin.to_str().ok()?;
        if self.is_public(origin) {
            return Some(CorsOrigin::Echo(origin));
        }
        if is_loopback(origin) {
            let cookie_bound = matches!(access, Access::Page | Access::Form);
            return (!cookie_bound || self.loopback_forms).then_some(CorsOrigin::Echo(origin));
        }
        match (access, &self.allowed) {
            (Access::Open, _) => Some(CorsOrigin::Any),
            (Access::Page | Access::Form, _) | (_, AllowedOrigins::Listed) => None,
            (_, AllowedOrigins::Any) => Some(CorsOrigin::Any),
            (Access::SameOrigin | Access::SignedIn, AllowedOrigins::Origins(list)) => {
                let normal = normalise_origin(origin)?;
                list.contains(&normal).then_some(CorsOrigin::Echo(origin))
            }
        }
    }

    /// False when a request to a route of this `access` must be refused with 403.
    pub(crate) fn allows(&self, access: Access, headers: &HeaderMap) -> bool {
        if access == Access::Open {
            return true;
        }
        if headers.contains_key(ORIGIN) && self.cors_origin(access, headers).is_none() {
            return false;
        }
        if self.check_host
            && let Some(host) = headers.get(HOST)
        {
            let Ok(host) = host.to_str() else {
                return false;
            };
            let host = host.to_ascii_lowercase();
            let loopback = LOOPBACK_HOSTS.contains(&strip_port(&host));
            if !loopback && self.public_host.as_deref() != Some(host.as_str()) {
                return false;
            }
        }
        true
    }

    /// The public URL's origin: allowed on every kind of route.
    fn is_public(&self, origin: &str) -> bool {
        self.public_origin.as_deref() == Some(origin.to_ascii_lowercase().as_str())
    }
}

/// An `http(s)` origin on a loopback host.
fn is_loopback(origin: &str) -> bool {
    let origin = origin.to_ascii_lowercase();
    let Some((scheme, host)) = origin.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https") && LOOPBACK_HOSTS.contains(&strip_port(host))
}

fn origin_of(url: &str) -> &str {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = scheme.len() + 3 + rest.find('/').unwrap_or(rest.len());
            &url[..end]
        }
        None => url,
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.split(':').next().unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn policy(public: Option<&str>) -> OriginPolicy {
        policy_allowing(public, None)
    }

    fn policy_allowing(public: Option<&str>, allowed: Option<&str>) -> OriginPolicy {
        let mut vars = vec![];
        if let Some(p) = public {
            vars.push(("MCP_PUBLIC_URL".to_string(), p.to_string()));
        }
        if let Some(a) = allowed {
            vars.push(("MCP_ALLOWED_ORIGINS".to_string(), a.to_string()));
        }
        OriginPolicy::new(&Config::from_vars(Runtime::Local, vars).unwrap())
    }

    fn headers(pairs: &[(http::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_and_public_origins_pass_foreign_ones_do_not() {
        let p = policy(Some("https://mcp.example.com/base"));
        assert!(p.allows(
            Access::SameOrigin,
            &headers(&[(ORIGIN, "http://localhost:3000")])
        ));
        assert!(p.allows(
            Access::SameOrigin,
            &headers(&[(ORIGIN, "https://mcp.example.com")])
        ));
        assert!(!p.allows(
            Access::SameOrigin,
            &headers(&[(ORIGIN, "https://evil.example")])
        ));
        assert!(!p.allows(
            Access::SameOrigin,
            &headers(&[(ORIGIN, "http://localhost.evil.example")])
        ));
        assert!(p.allows(Access::SameOrigin, &headers(&[])));
    }

    /// On an https deployment a loopback page is another site, so
    /// it may not post the cookie-bound forms; locally (no https) it is the server's own.
    #[test]
    fn loopback_origins_reach_cookie_routes_only_without_https() {
        let loopback = headers(&[(ORIGIN, "http://localhost:3000")]);
        let deployed = policy(Some("https://mcp.example.com"));
        for access in [Access::Page, Access::Form] {
            assert!(!deployed.allows(access, &loopback), "{access:?}");
        }
        assert!(deployed.allows(Access::SameOrigin, &loopback));
        assert!(deployed.allows(Access::SignedIn, &loopback));
        let public = headers(&[(ORIGIN, "https://mcp.example.com")]);
        assert!(deployed.allows(Access::Page, &public));
        for local in [policy(None), policy(Some("http://127.0.0.1:18060"))] {
            assert!(local.allows(Access::Page, &loopback));
            assert!(local.allows(Access::Form, &loopback));
        }
    }

    #[test]
    fn a_foreign_host_is_refused() {
        let p = policy(None);
        assert!(p.allows(Access::SameOrigin, &headers(&[(HOST, "127.0.0.1:18060")])));
        assert!(p.allows(Access::SameOrigin, &headers(&[(HOST, "[::1]:18060")])));
        assert!(!p.allows(
            Access::SameOrigin,
            &headers(&[(HOST, "evil.example:18060")])
        ));
    }

    #[test]
    fn listed_origins_pass_where_no_cookie_is_read() {
        let p = policy_allowing(None, Some("https://app.example"));
        let listed = headers(&[(ORIGIN, "https://app.example")]);
        for access in [Access::SameOrigin, Access::SignedIn] {
            assert!(p.allows(access, &listed));
            assert_eq!(
                p.cors_origin(access, &listed),
                Some(CorsOrigin::Echo("https://app.example"))
            );
        }
        for access in [Access::Page, Access::Form] {
            assert!(!p.allows(access, &listed), "{access:?}");
            assert_eq!(p.cors_origin(access, &listed), None);
        }
        let other = headers(&[(ORIGIN, "https://other.example")]);
        assert!(!p.allows(Access::SameOrigin, &other));
        assert!(p.allows(Access::Open, &other));
        let loopback = headers(&[(ORIGIN, "http://localhost:3000")]);
        assert!(p.allows(Access::Form, &loopback));
    }

    #[test]
    fn any_origin_is_star_and_never_for_cookie_routes() {
        let p = policy_allowing(None, Some("*"));
        let foreign = headers(&[(ORIGIN, "https://anywhere.example")]);
        assert!(p.allows(Access::SameOrigin, &foreign));
        assert_eq!(
            p.cors_origin(Access::SameOrigin, &foreign),
            Some(CorsOrigin::Any)
        );
        assert!(!p.allows(Access::Page, &foreign));
        assert!(!p.allows(Access::Form, &foreign));
        // The `Host` check is not widened.
        let host = headers(&[(ORIGIN, "https://anywhere.example"), (HOST, "evil.example")]);
        assert!(!p.allows(Access::SameOrigin, &host));
    }
}
