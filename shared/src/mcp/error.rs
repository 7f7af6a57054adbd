//! The MCP boundary's one error type, and the one place that maps it to a JSON-RPC
//! code, `data`, and an HTTP status.
//!
//! Handlers return `Result<_, McpError>`; nobody else writes an error number or a
//! status code for the MCP endpoint. Messages never contain credentials or tool output.

use http::StatusCode;
use serde_json::{Value, json};

use super::era::Era;
use crate::wire;

/// Everything that can make an MCP request fail at the protocol level.
/// Tool failures are not here: they are results with `isError: true`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum McpError {
    /// The body is not JSON (-32700).
    Parse,
    /// The body is JSON but not a JSON-RPC request object (-32600).
    InvalidRequest(String),
    /// No such method, or not in this protocol era (-32601).
    MethodNotFound(String),
    /// Bad or missing parameters, including a modern request's `_meta` (-32602).
    InvalidParams(String),
    /// `tools/call` naming a tool the server (or this caller) lacks (-32602).
    UnknownTool(String),
    /// `resources/read` of a uri nobody serves (-32602, `data.uri`).
    ResourceNotFound(String),
    /// A pagination cursor the server did not issue (-32602).
    InvalidCursor,
    /// A mirrored header is missing, malformed or disagrees with the body (-32020).
    HeaderMismatch(String),
    /// The request needs a client capability it did not declare (-32021).
    MissingCapability(Value),
    /// The request's protocol version is not one this server speaks (-32022).
    UnsupportedVersion {
        requested: String,
        supported: Vec<&'static str>,
    },
    /// Something broke on our side (-32603). The message is generic on the wire.
    Internal,
    /// A user's own MCP server failed to give what was asked of it through us (a
    /// resource, a prompt): -32603 with the reason in words (never a URL or credential).
    Upstream(String),
    /// The request's `Origin` or `Host` is not allowed (DNS rebinding): -32600 with 403,
    /// before any body is read.
    ForbiddenOrigin,
    /// `GET` or `DELETE /mcp`, a placeholder for a future WebSocket transport: -32000
    /// with 405.
    PostOnly,
}

impl McpError {
    pub(crate) fn code(&self) -> i64 {
        match self {
            McpError::Parse => -32700,
            McpError::InvalidRequest(_) => -32600,
            McpError::MethodNotFound(_) => wire::METHOD_NOT_FOUND,
            McpError::InvalidParams(_)
            | McpError::UnknownTool(_)
            | McpError::ResourceNotFound(_)
            | McpError::InvalidCursor => wire::INVALID_PARAMS,
            McpError::HeaderMismatch(_) => -32020,
            McpError::MissingCapability(_) => -32021,
            McpError::UnsupportedVersion { .. } => wire::UNSUPPORTED_PROTOCOL_VERSION,
            McpError::Internal | McpError::Upstream(_) => -32603,
            McpError::ForbiddenOrigin => -32600,
            McpError::PostOnly => -32000,
        }
    }

    pub(crate) fn message(&self) -> String {
        match self {
            McpError::Parse => "Parse error: the body is not valid JSON".into(),
            McpError::InvalidRequest(why) => format!("Invalid Request: {why}"),
            McpError::MethodNotFound(method) => format!("Method not found: {method}"),
            McpError::InvalidParams(why) => format!("Invalid params: {why}"),
            McpError::UnknownTool(name) => format!("Unknown tool: {name}"),
            McpError::ResourceNotFound(uri) => format!("Resource not found: {uri}"),
            McpError::InvalidCursor => "Invalid params: unknown pagination cursor".into(),
            McpError::HeaderMismatch(why) => format!("Header mismatch: {why}"),
            McpError::MissingCapability(_) => {
                "Missing required client capability for this request".into()
            }
            McpError::UnsupportedVersion { requested, .. } => {
                format!("Unsupported protocol version: {requested}")
            }
            McpError::Internal => "Internal error".into(),
            McpError::Upstream(why) => why.clone(),
            McpError::ForbiddenOrigin => "Forbidden: Origin or Host not allowed".into(),
            McpError::PostOnly => "Method not allowed: GET /mcp is a placeholder for a future \
                                   WebSocket transport; send JSON-RPC requests with POST"
                .into(),
        }
    }

    pub(crate) fn data(&self) -> Option<Value> {
        match self {
            McpError::ResourceNotFound(uri) => Some(json!({ "uri": uri })),
            McpError::MissingCapability(required) => {
                Some(json!({ "requiredCapabilities": required }))
            }
            McpError::UnsupportedVersion {
                requested,
                supported,
            } => Some(json!({ "supported": supported, "requested": requested })),
            _ => None,
        }
    }

    /// The HTTP status for this error. Modern (2026-07-28) requests follow the
    /// transport spec's table; legacy clients get 200 with the error in the body, as
    /// the original server answered them, except for bodies that are not a request at all.
    pub(crate) fn http_status(&self, era: Era) -> StatusCode {
        match self {
            McpError::ForbiddenOrigin => return StatusCode::FORBIDDEN,
            McpError::PostOnly => return StatusCode::METHOD_NOT_ALLOWED,
            _ => {}
        }
        match era {
            Era::Modern => match self {
                McpError::MethodNotFound(_) => StatusCode::NOT_FOUND,
                McpError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
                // A tool, resource or cursor that does not exist is a well-formed request
                // with a JSON-RPC error: 200, like any other answered request.
                McpError::UnknownTool(_)
                | McpError::ResourceNotFound(_)
                | McpError::InvalidCursor
                | McpError::Upstream(_) => StatusCode::OK,
                _ => StatusCode::BAD_REQUEST,
            },
            Era::Legacy | Era::Unknown => match self {
                McpError::Parse | McpError::InvalidRequest(_) => StatusCode::BAD_REQUEST,
                McpError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::OK,
            },
        }
    }

    /// The whole body of an error answered before any JSON-RPC request was read
    /// (`ForbiddenOrigin`, `PostOnly`): no `id`, as there is no request to name.
    pub(crate) fn transport_body(&self) -> Value {
        json!({ "jsonrpc": "2.0", "error": { "code": self.code(), "message": self.message() } })
    }
}
