//! Protocol eras and version rules (A4).
//!
//! Owns which era a request belongs to, the `initialize` version negotiation, and the
//! validation a modern (2026-07-28) request must pass before dispatch, in the order
//! clients expect: `_meta` shape, then the mirrored headers, then version support.
//! The version strings, `_meta` keys and header names themselves are in [`crate::wire`].
//! Knows nothing about tools or storage.

use http::{HeaderMap, HeaderName};
use serde_json::{Map, Value};

use super::error::McpError;
use crate::wire::{
    HANDSHAKE_VERSIONS, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION,
    METHOD_HEADER, MODERN_VERSIONS, NAME_HEADER, PROTOCOL_VERSION_HEADER, SUPPORTED_VERSIONS,
    decode_header_value,
};

/// How a request is served, decided per request from what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2026-07-28: per-request `_meta`, header validation, `resultType` on results.
    Modern,
    /// 2024-11-05 … 2025-11-25: `initialize` handshake, errors over HTTP 200.
    Legacy,
    /// Not known yet (the body could not be read as a request).
    Unknown,
}

/// `initialize` negotiation: echo a supported version, otherwise answer the newest.
pub(crate) fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| SUPPORTED_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(SUPPORTED_VERSIONS[0])
}

/// A request is modern when its `_meta` names a protocol version, or when its
/// `MCP-Protocol-Version` header names a version that is not a legacy one
/// (then a missing `_meta` is reported rather than silently served as legacy).
pub(crate) fn classify(params: Option<&Value>, headers: &HeaderMap) -> Era {
    let meta_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION));
    if meta_version.is_some() {
        return Era::Modern;
    }
    match header_str(headers, &PROTOCOL_VERSION_HEADER) {
        Some(Ok(v)) if !HANDSHAKE_VERSIONS.contains(&v) => Era::Modern,
        Some(Err(())) => Era::Modern,
        _ => Era::Legacy,
    }
}

/// What a validated modern request declared about itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestMeta {
    pub client_capabilities: Map<String, Value>,
    /// `clientInfo.name` as the client gave it, if it did (shown on the login page).
    pub client_name: Option<String>,
}

/// Checks a modern request in the order the spec's clients expect.
pub(crate) fn validate_modern(
    method: &str,
    params: Option<&Value>,
    headers: &HeaderMap,
) -> Result<RequestMeta, McpError> {
    // 1. `_meta` shape.
    let meta = params
        .and_then(|p| p.as_object())
        .and_then(|p| p.get("_meta"))
        .ok_or_else(|| McpError::InvalidParams("params._meta is required".into()))?
        .as_object()
        .ok_or_else(|| McpError::InvalidParams("params._meta must be an object".into()))?;
    let version = meta
        .get(META_PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::InvalidParams(format!(
                "_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
            ))
        })?;
    let capabilities = meta
        .get(META_CLIENT_CAPABILITIES)
        .and_then(Value::as_object)
        .ok_or_else(|| {
            McpError::InvalidParams(format!(
                "_meta[\"{META_CLIENT_CAPABILITIES}\"] is required (use {{}} for none)"
            ))
        })?;
    if let Some(info) = meta.get(META_CLIENT_INFO)
        && !info.is_object()
    {
        return Err(McpError::InvalidParams(format!(
            "_meta[\"{META_CLIENT_INFO}\"] must be an object"
        )));
    }

    // 2. Mirrored headers against the body.
    let header_version = required_header(headers, &PROTOCOL_VERSION_HEADER)?;
    if header_version != version {
        return Err(McpError::HeaderMismatch(format!(
            "MCP-Protocol-Version header '{header_version}' does not match _meta version '{version}'"
        )));
    }
    let header_method = required_header(headers, &METHOD_HEADER)?;
    if header_method != method {
        return Err(McpError::HeaderMismatch(format!(
            "Mcp-Method header '{header_method}' does not match body method '{method}'"
        )));
    }
    if let Some(field) = named_field(method) {
        let body_name = params.and_then(|p| p.get(field)).and_then(Value::as_str);
        let header_name = decode_sentinel(required_header(headers, &NAME_HEADER)?)?;
        if Some(header_name.as_str()) != body_name {
            return Err(McpError::HeaderMismatch(format!(
                "Mcp-Name header does not match params.{field}"
            )));
        }
    }

    // 3. Version support.
    if !MODERN_VERSIONS.contains(&version) {
        return Err(McpError::UnsupportedVersion {
            requested: version.to_string(),
            supported: MODERN_VERSIONS.to_vec(),
        });
    }
    let client_name = meta
        .get(META_CLIENT_INFO)
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str)
        .map(String::from);
    Ok(RequestMeta {
        client_capabilities: capabilities.clone(),
        client_name,
    })
}

/// The body field that `Mcp-Name` mirrors, for the methods that carry one.
fn named_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

fn header_str<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<Result<&'h str, ()>> {
    headers.get(name).map(|v| v.to_str().map_err(|_| ()))
}

fn required_header<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Result<&'h str, McpError> {
    match header_str(headers, name) {
        Some(Ok(v)) => Ok(v.trim()),
        Some(Err(())) => Err(McpError::HeaderMismatch(format!(
            "{name} header is not valid ASCII"
        ))),
        None => Err(McpError::HeaderMismatch(format!(
            "{name} header is required"
        ))),
    }
}

/// Decodes the `=?base64?…?=` sentinel form of a mirrored header value.
fn decode_sentinel(value: &str) -> Result<String, McpError> {
    decode_header_value(value)
        .ok_or_else(|| McpError::HeaderMismatch("Mcp-Name is not valid base64 UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::MODERN_VERSION;

    #[test]
    fn initialize_echoes_supported_and_answers_newest_otherwise() {
        for v in SUPPORTED_VERSIONS {
            assert_eq!(negotiate(Some(v)), v);
        }
        assert_eq!(negotiate(Some("1999-01-01")), MODERN_VERSION);
        assert_eq!(negotiate(None), MODERN_VERSION);
    }

    #[test]
    fn sentinel_header_values_are_decoded() {
        assert_eq!(
            decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert_eq!(decode_sentinel("plain").unwrap(), "plain");
        assert!(decode_sentinel("=?base64?!!!?=").is_err());
    }
}
