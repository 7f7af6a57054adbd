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
            Route::SignUp => "POST /auth/signup",
            Route::SignIn => "POST /auth/signin",
            Route::ShareGrant => "POST /api/shares",
            Route::ShareRevoke => "DELETE /api/shares",
            Route::CheckState { .. } => "GET /oauth2/check_state/{state}",
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
            Route::PersonalUrl | Route::PersonalUrlRevoke => Some(RouteGroup::Personal),
            Route::SignUp
            | Route::SignIn
            | Route::ShareGrant
            | Route::ShareRevoke
            | Route::CheckState { .. } => Some(RouteGroup::Oauth),
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
    ("POST", "/auth/signup", RouteGroup::Oauth),
    ("POST", "/auth/signin", RouteGroup::Oauth),
    ("POST", "/api/shares", RouteGroup::Oauth),
    ("DELETE", "/api/shares", RouteGroup::Oauth),
    ("GET", "/oauth2/check_state/{state}", RouteGroup::Oauth),
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
        _ => {}
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
            Method::OPTIONS => Route::McpOptions,
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
    fn route_names_never_show_the_secret() {
        let r = route(&Method::POST, "/mcp/top-secret-value", "");
        assert!(!format!("{r:?} {}", r.name()).contains("top-secret-value"));
    }
}
