//! The discovery documents (C1, C2, RFC 8414, RFC 9728). Built once per process as
//! bytes, so the three authorization-server paths serve byte-identical documents.

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::json;

use super::OAuthApi;
use crate::http as web;

pub(crate) const SCOPES: &[&str] = &[
    "openid",
    "profile",
    "email",
    "offline_access",
    "mcp:read",
    "mcp:write",
    "mcp:tools",
    "mcp:servers",
    "mcp:admin",
    "mcp:connect",
];

/// The authorization server metadata: exactly what the server does, with absolute
/// URLs from the public origin (C4). Always at the service root.
pub(super) fn authorization_server(origin: &str) -> Bytes {
    let doc = json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/oauth/authorize"),
        "token_endpoint": format!("{origin}/oauth/token"),
        "registration_endpoint": format!("{origin}/oauth/register"),
        "introspection_endpoint": format!("{origin}/oauth/introspect"),
        "revocation_endpoint": format!("{origin}/oauth/revoke"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
        "scopes_supported": SCOPES,
        "claims_supported": ["sub", "kind", "iss", "aud", "iat", "nbf", "exp", "scope", "client_id", "jti", "epoch", "sid"],
        "token_endpoint_auth_signing_alg_values_supported": ["HS256"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true
    });
    Bytes::from(serde_json::to_vec_pretty(&doc).expect("metadata serialises"))
}

/// RFC 9728 protected resource metadata for the MCP endpoint.
pub(super) fn protected_resource(origin: &str, resource: &str) -> Bytes {
    let doc = json!({
        "resource": resource,
        "authorization_servers": [origin],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "Mirobody health data (MCP)"
    });
    Bytes::from(serde_json::to_vec_pretty(&doc).expect("metadata serialises"))
}

impl OAuthApi {
    /// C1: the same bytes at every authorization-server metadata path.
    pub(crate) fn server_metadata(&self) -> Response<Bytes> {
        web::json_bytes(StatusCode::OK, self.server_metadata.clone())
    }

    pub(crate) fn resource_metadata(&self) -> Response<Bytes> {
        web::json_bytes(StatusCode::OK, self.resource_metadata.clone())
    }
}
