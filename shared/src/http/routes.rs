//! The route table: one place that maps (method, path) to what answers it, for
//! every function and for the local server.
//!
//! Owns path shapes and the `HTTP_URI_PREFIX` rule (A1: `/mcp`, `/mcp/{secret}` and
//! `/personal/mcp` live under the prefix; well-known documents never do). Knows
//! nothing about what the handlers do.

use http::Method;

/// The route groups of DESIGN: one Lambda function each; the local server serves all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteGroup {
    Mcp,
    Personal,
    Oauth,
    Data,
    All,
}

/// A matched route. The MCP secret is borrowed from the path; it must never be
/// logged (B4), so `Route` has no `Debug` that shows it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Route<'p> {
    McpPost {
        secret: Option<&'p str>,
    },
    McpGet,
    McpDelete,
    McpOptions,
    /// `POST /api/data/health`: readings as JSON or CSV (E4).
    DataHealth,
    /// `POST /api/data/genotype`: a raw genotype file (E4).
    DataGenotype,
    /// `GET /api/data`: what the caller has uploaded.
    DataSummary,
    /// `DELETE /api/data`: delete the caller's readings and genotypes.
    DataDelete,
    /// `POST {prefix}/personal/mcp`: the caller's personal MCP URL (B1, B2).
    PersonalUrl,
    /// `DELETE {prefix}/personal/mcp`: revoke it.
    PersonalUrlRevoke,
    /// `OPTIONS {prefix}/personal/mcp`: browser preflight, served by the personal group.
    PersonalOptions,
    /// `GET`/`POST /api/user/mcp`: the caller's external MCP servers as the seed's table (D1).
    ExternalTable,
    /// `POST /api/user/mcp/set`: add or replace one entry.
    ExternalSet,
    /// `POST /api/user/mcp/delete`: remove one entry.
    ExternalRemove,
    /// `GET /api/user/mcp-servers`.
    ExternalList,
    /// `POST /api/user/mcp-servers`: register (probe first, D4).
    ExternalCreate,
    /// `GET`/`PATCH`/`DELETE /api/user/mcp-servers/{name}`.
    ExternalGet {
        name: &'p str,
    },
    ExternalPatch {
        name: &'p str,
    },
    ExternalDelete {
        name: &'p str,
    },
    /// `POST /api/user/mcp-servers/{name}/probe`: probe again.
    ExternalProbe {
        name: &'p str,
    },
    /// `POST /auth/signup`, `POST /auth/signin`.
    SignUp,
    SignIn,
    /// `POST /api/shares` (grant), `DELETE /api/shares` (revoke).
    ShareGrant,
    ShareRevoke,
    /// `GET /oauth2/check_state/{state}`: the device-style login poll (C3).
    CheckState {
        state: &'p str,
    },
    /// The authorization server metadata (C1), at its three paths.
    OAuthMetadata,
    /// RFC 9728 protected resource metadata for `/mcp`.
    ResourceMetadata,
    OAuthRegister,
    /// `GET /oauth/authorize` or `/oauth2/authorize` (the path is kept for the form action).
    AuthorizePage {
        path: &'static str,
    },
    AuthorizeSubmit {
        path: &'static str,
    },
    OAuthToken,
    OAuthIntrospect,
    /// `GET`/`POST /mcplogin`: the page the login prompt opens.
    McpLoginPage,
    McpLoginSubmit,
    /// CORS preflight for the OAuth endpoints browser-based clients call.
    OAuthPreflight,
    /// A known path with a method it does not serve.
    MethodNotAllowed(&'static str),
    NotFound,
}

impl Route<'_> {
    /// A name safe for logs (no secrets).
    pub fn name(&self) -> &'static str {
        match self {
            Route::McpPost { secret: None } => "POST /mcp",
            Route::McpPost { secret: Some(_) } => "POST /mcp/{secret}",
            Route::McpGet => "GET /mcp",
            Route::McpDelete => "DELETE /mcp",
            Route::McpOptions => "OPTIONS /mcp",
            Route::DataHealth => "POST /api/data/health",
            Route::DataGenotype => "POST /api/data/genotype",
            Route::DataSummary => "GET /api/data",
            Route::DataDelete => "DELETE /api/data",
            Route::PersonalUrl => "POST /personal/mcp",
            Route::PersonalUrlRevoke => "DELETE /personal/mcp",
            Route::PersonalOptions => "OPTIONS /personal/mcp",
            Route::ExternalTable => "GET|POST /api/user/mcp",
            Route::ExternalSet => "POST /api/user/mcp/set",
            Route::ExternalRemove => "POST /api/user/mcp/delete",
            Route::ExternalList => "GET /api/user/mcp-servers",
            Route::ExternalCreate => "POST /api/user/mcp-servers",
            Route::ExternalGet { .. } => "GET /api/user/mcp-servers/{name}",
            Route::ExternalPatch { .. } => "PATCH /api/user/mcp-servers/{name}",
            Route::ExternalDelete { .. } => "DELETE /api/user/mcp-servers/{name}",
            Route::ExternalProbe { .. } => "POST /api/user/mcp-servers/{name}/probe",
            Route::SignUp => "POST /auth/signup",
            Route::SignIn => "POST /auth/signin",
            Route::ShareGrant => "POST /api/shares",
            Route::ShareRevoke => "DELETE /api/shares",
            Route::CheckState { .. } => "GET /oauth2/check_state/{state}",
            Route::OAuthMetadata => "GET /.well-known/oauth-authorization-server",
            Route::ResourceMetadata => "GET /.well-known/oauth-protected-resource",
            Route::OAuthRegister => "POST /oauth/register",
            Route::AuthorizePage { .. } => "GET /oauth/authorize",
            Route::AuthorizeSubmit { .. } => "POST /oauth/authorize",
            Route::OAuthToken => "POST /oauth/token",
            Route::OAuthIntrospect => "POST /oauth/introspect",
            Route::McpLoginPage => "GET /mcplogin",
            Route::McpLoginSubmit => "POST /mcplogin",
            Route::OAuthPreflight => "OPTIONS /oauth/*",
            Route::MethodNotAllowed(_) => "method not allowed",
            Route::NotFound => "not found",
        }
    }

    pub fn group(&self) -> Option<RouteGroup> {
        match self {
            Route::McpPost { .. } | Route::McpGet | Route::McpDelete | Route::McpOptions => {
                Some(RouteGroup::Mcp)
            }
            Route::DataHealth | Route::DataGenotype | Route::DataSummary | Route::DataDelete => {
                Some(RouteGroup::Data)
            }
            Route::PersonalUrl
            | Route::PersonalUrlRevoke
            | Route::PersonalOptions
            | Route::ExternalTable
            | Route::ExternalSet
            | Route::ExternalRemove
            | Route::ExternalList
            | Route::ExternalCreate
            | Route::ExternalGet { .. }
            | Route::ExternalPatch { .. }
            | Route::ExternalDelete { .. }
            | Route::ExternalProbe { .. } => Some(RouteGroup::Personal),
            Route::SignUp
            | Route::SignIn
            | Route::ShareGrant
            | Route::ShareRevoke
            | Route::CheckState { .. }
            | Route::OAuthMetadata
            | Route::ResourceMetadata
            | Route::OAuthRegister
            | Route::AuthorizePage { .. }
            | Route::AuthorizeSubmit { .. }
            | Route::OAuthToken
            | Route::OAuthIntrospect
            | Route::McpLoginPage
            | Route::McpLoginSubmit
            | Route::OAuthPreflight => Some(RouteGroup::Oauth),
            Route::MethodNotAllowed(_) | Route::NotFound => None,
        }
    }
}

impl std::fmt::Debug for Route<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every (method, path template) the product serves, for documentation, the SAM
/// template check and the sample events. Paths are shown without the prefix.
pub const ROUTE_TABLE: &[(&str, &str, RouteGroup)] = &[
    ("POST", "/mcp", RouteGroup::Mcp),
    ("GET", "/mcp", RouteGroup::Mcp),
    ("OPTIONS", "/mcp", RouteGroup::Mcp),
    ("POST", "/mcp/{secret}", RouteGroup::Mcp),
    ("OPTIONS", "/mcp/{secret}", RouteGroup::Mcp),
    ("POST", "/api/data/health", RouteGroup::Data),
    ("POST", "/api/data/genotype", RouteGroup::Data),
    ("GET", "/api/data", RouteGroup::Data),
    ("DELETE", "/api/data", RouteGroup::Data),
    ("POST", "/personal/mcp", RouteGroup::Personal),
    ("DELETE", "/personal/mcp", RouteGroup::Personal),
    ("OPTIONS", "/personal/mcp", RouteGroup::Personal),
    ("GET", "/api/user/mcp", RouteGroup::Personal),
    ("POST", "/api/user/mcp", RouteGroup::Personal),
    ("POST", "/api/user/mcp/set", RouteGroup::Personal),
    ("POST", "/api/user/mcp/delete", RouteGroup::Personal),
    ("GET", "/api/user/mcp-servers", RouteGroup::Personal),
    ("POST", "/api/user/mcp-servers", RouteGroup::Personal),
    ("GET", "/api/user/mcp-servers/{name}", RouteGroup::Personal),
    (
        "PATCH",
        "/api/user/mcp-servers/{name}",
        RouteGroup::Personal,
    ),
    (
        "DELETE",
        "/api/user/mcp-servers/{name}",
        RouteGroup::Personal,
    ),
    (
        "POST",
        "/api/user/mcp-servers/{name}/probe",
        RouteGroup::Personal,
    ),
    ("POST", "/auth/signup", RouteGroup::Oauth),
    ("POST", "/auth/signin", RouteGroup::Oauth),
    ("POST", "/api/shares", RouteGroup::Oauth),
    ("DELETE", "/api/shares", RouteGroup::Oauth),
    ("GET", "/oauth2/check_state/{state}", RouteGroup::Oauth),
    (
        "GET",
        "/.well-known/oauth-authorization-server",
        RouteGroup::Oauth,
    ),
    (
        "GET",
        "/.well-known/oauth-authorization-server/mcp",
        RouteGroup::Oauth,
    ),
    ("GET", "/.well-known/mcp-configuration", RouteGroup::Oauth),
    (
        "GET",
        "/.well-known/oauth-protected-resource",
        RouteGroup::Oauth,
    ),
    (
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        RouteGroup::Oauth,
    ),
    ("POST", "/oauth/register", RouteGroup::Oauth),
    ("OPTIONS", "/oauth/register", RouteGroup::Oauth),
    ("GET", "/oauth/authorize", RouteGroup::Oauth),
    ("POST", "/oauth/authorize", RouteGroup::Oauth),
    ("GET", "/oauth2/authorize", RouteGroup::Oauth),
    ("POST", "/oauth2/authorize", RouteGroup::Oauth),
    ("POST", "/oauth/token", RouteGroup::Oauth),
    ("OPTIONS", "/oauth/token", RouteGroup::Oauth),
    ("POST", "/oauth/introspect", RouteGroup::Oauth),
    ("OPTIONS", "/oauth/introspect", RouteGroup::Oauth),
    (
        "OPTIONS",
        "/.well-known/oauth-authorization-server",
        RouteGroup::Oauth,
    ),
    (
        "OPTIONS",
        "/.well-known/oauth-authorization-server/mcp",
        RouteGroup::Oauth,
    ),
    (
        "OPTIONS",
        "/.well-known/mcp-configuration",
        RouteGroup::Oauth,
    ),
    (
        "OPTIONS",
        "/.well-known/oauth-protected-resource",
        RouteGroup::Oauth,
    ),
    (
        "OPTIONS",
        "/.well-known/oauth-protected-resource/mcp",
        RouteGroup::Oauth,
    ),
    ("GET", "/mcplogin", RouteGroup::Oauth),
    ("POST", "/mcplogin", RouteGroup::Oauth),
];

pub fn route<'p>(method: &Method, path: &'p str, prefix: &str) -> Route<'p> {
    let trimmed = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    match (trimmed, method) {
        ("/api/data/health", &Method::POST) => return Route::DataHealth,
        ("/api/data/genotype", &Method::POST) => return Route::DataGenotype,
        ("/api/data", &Method::GET) => return Route::DataSummary,
        ("/api/data", &Method::DELETE) => return Route::DataDelete,
        ("/api/data/health" | "/api/data/genotype", _) => return Route::MethodNotAllowed("POST"),
        ("/api/data", _) => return Route::MethodNotAllowed("GET, DELETE"),
        ("/auth/signup", &Method::POST) => return Route::SignUp,
        ("/auth/signin", &Method::POST) => return Route::SignIn,
        ("/auth/signup" | "/auth/signin", _) => return Route::MethodNotAllowed("POST"),
        ("/api/shares", &Method::POST) => return Route::ShareGrant,
        ("/api/shares", &Method::DELETE) => return Route::ShareRevoke,
        ("/api/shares", _) => return Route::MethodNotAllowed("POST, DELETE"),
        ("/api/user/mcp", &Method::GET | &Method::POST) => return Route::ExternalTable,
        ("/api/user/mcp", _) => return Route::MethodNotAllowed("GET, POST"),
        ("/api/user/mcp/set", &Method::POST) => return Route::ExternalSet,
        ("/api/user/mcp/delete", &Method::POST) => return Route::ExternalRemove,
        ("/api/user/mcp/set" | "/api/user/mcp/delete", _) => {
            return Route::MethodNotAllowed("POST");
        }
        ("/api/user/mcp-servers", &Method::GET) => return Route::ExternalList,
        ("/api/user/mcp-servers", &Method::POST) => return Route::ExternalCreate,
        ("/api/user/mcp-servers", _) => return Route::MethodNotAllowed("GET, POST"),
        _ => {}
    }
    if let Some(rest) = trimmed.strip_prefix("/api/user/mcp-servers/") {
        let (name, probe) = match rest.strip_suffix("/probe") {
            Some(name) => (name, true),
            None => (rest, false),
        };
        if name.is_empty() || name.contains('/') {
            return Route::NotFound;
        }
        return match (*method == Method::POST, probe) {
            (true, true) => Route::ExternalProbe { name },
            (false, true) => Route::MethodNotAllowed("POST"),
            _ => match *method {
                Method::GET => Route::ExternalGet { name },
                Method::PATCH => Route::ExternalPatch { name },
                Method::DELETE => Route::ExternalDelete { name },
                _ => Route::MethodNotAllowed("GET, PATCH, DELETE"),
            },
        };
    }
    match (trimmed, method) {
        (
            "/.well-known/oauth-authorization-server"
            | "/.well-known/oauth-authorization-server/mcp"
            | "/.well-known/mcp-configuration",
            &Method::GET,
        ) => return Route::OAuthMetadata,
        (
            "/.well-known/oauth-authorization-server"
            | "/.well-known/oauth-authorization-server/mcp"
            | "/.well-known/mcp-configuration",
            &Method::OPTIONS,
        ) => return Route::OAuthPreflight,
        ("/oauth/register", &Method::POST) => return Route::OAuthRegister,
        ("/oauth/authorize", &Method::GET) => {
            return Route::AuthorizePage {
                path: "/oauth/authorize",
            };
        }
        ("/oauth/authorize", &Method::POST) => {
            return Route::AuthorizeSubmit {
                path: "/oauth/authorize",
            };
        }
        ("/oauth2/authorize", &Method::GET) => {
            return Route::AuthorizePage {
                path: "/oauth2/authorize",
            };
        }
        ("/oauth2/authorize", &Method::POST) => {
            return Route::AuthorizeSubmit {
                path: "/oauth2/authorize",
            };
        }
        ("/oauth/token", &Method::POST) => return Route::OAuthToken,
        ("/oauth/introspect", &Method::POST) => return Route::OAuthIntrospect,
        ("/mcplogin", &Method::GET) => return Route::McpLoginPage,
        ("/mcplogin", &Method::POST) => return Route::McpLoginSubmit,
        ("/oauth/register" | "/oauth/token" | "/oauth/introspect", &Method::OPTIONS) => {
            return Route::OAuthPreflight;
        }
        ("/oauth/register" | "/oauth/token" | "/oauth/introspect", _) => {
            return Route::MethodNotAllowed("POST, OPTIONS");
        }
        ("/oauth/authorize" | "/oauth2/authorize" | "/mcplogin", _) => {
            return Route::MethodNotAllowed("GET, POST");
        }
        _ => {}
    }
    if let Some(rest) = trimmed.strip_prefix("/.well-known/oauth-protected-resource") {
        let known = rest.is_empty() || rest == format!("{prefix}/mcp");
        return match *method {
            Method::GET if known => Route::ResourceMetadata,
            Method::OPTIONS if known => Route::OAuthPreflight,
            _ if known => Route::MethodNotAllowed("GET, OPTIONS"),
            _ => Route::NotFound,
        };
    }
    if let Some(state) = trimmed.strip_prefix("/oauth2/check_state/") {
        return match *method {
            Method::GET if !state.is_empty() && !state.contains('/') => Route::CheckState { state },
            Method::GET => Route::NotFound,
            _ => Route::MethodNotAllowed("GET"),
        };
    }
    let Some(rest) = path.strip_prefix(prefix) else {
        return Route::NotFound;
    };
    let rest = if rest.len() > 1 {
        rest.trim_end_matches('/')
    } else {
        rest
    };
    match rest {
        "/personal/mcp" => match *method {
            Method::POST => Route::PersonalUrl,
            Method::DELETE => Route::PersonalUrlRevoke,
            Method::OPTIONS => Route::PersonalOptions,
            _ => Route::MethodNotAllowed("POST, DELETE, OPTIONS"),
        },
        "/mcp" => match *method {
            Method::POST => Route::McpPost { secret: None },
            Method::GET => Route::McpGet,
            Method::DELETE => Route::McpDelete,
            Method::OPTIONS => Route::McpOptions,
            _ => Route::MethodNotAllowed("GET, POST, OPTIONS"),
        },
        _ => match rest.strip_prefix("/mcp/") {
            Some(secret) if !secret.is_empty() && !secret.contains('/') => match *method {
                Method::POST => Route::McpPost {
                    secret: Some(secret),
                },
                Method::OPTIONS => Route::McpOptions,
                _ => Route::MethodNotAllowed("POST, OPTIONS"),
            },
            _ => Route::NotFound,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_routes_live_under_the_prefix() {
        assert_eq!(
            route(&Method::POST, "/mcp", ""),
            Route::McpPost { secret: None }
        );
        assert_eq!(
            route(&Method::POST, "/api/mcp", "/api"),
            Route::McpPost { secret: None }
        );
        assert_eq!(route(&Method::POST, "/mcp", "/api"), Route::NotFound);
        assert_eq!(
            route(&Method::POST, "/api/mcp/s3cr3t", "/api"),
            Route::McpPost {
                secret: Some("s3cr3t")
            }
        );
        assert_eq!(route(&Method::GET, "/mcp/", ""), Route::McpGet);
        assert_eq!(route(&Method::POST, "/mcp/a/b", ""), Route::NotFound);
    }

    #[test]
    fn every_route_table_entry_routes_to_its_own_group() {
        for (method, path, group) in ROUTE_TABLE {
            let method: Method = method.parse().unwrap();
            let path = path
                .replace("{secret}", "s3cr3t")
                .replace("{state}", "st4te")
                .replace("{name}", "shop");
            assert_eq!(
                route(&method, &path, "").group(),
                Some(*group),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn route_names_never_show_the_secret() {
        let r = route(&Method::POST, "/mcp/top-secret-value", "");
        assert!(!format!("{r:?} {}", r.name()).contains("top-secret-value"));
    }
}
