//! What every tool source answers with: a tool's output, or why the request never
//! reached a tool.
//!
//! Owns the one vocabulary that built-in tools and the user's own MCP servers share.
//! Must not shape the wire: `mcp` alone turns a [`ToolOutput`] into a `tools/call`
//! result and a [`ToolError`] into a JSON-RPC error.

use serde_json::{Map, Value};

/// What a tool returns.
#[cfg_attr(not(feature = "fixtures"), allow(dead_code))] // some variants: the fixture pack only
#[derive(Debug, Clone)]
pub(crate) enum ToolOutput {
    /// The product's tool shape: an object with `success` and `data` or `error`,
    /// which `mcp` maps to text content, `structuredContent` and `isError`.
    Json(Value),
    /// A ready `CallToolResult` body (`content`, optional `isError`,
    /// `structuredContent`), for tools that return images, audio or resources.
    Result(Map<String, Value>),
    /// Another MCP server's answer to a forwarded call, reduced to what a result may
    /// carry here (see [`ToolOutput::forwarded`]).
    Forwarded {
        content: Vec<Value>,
        structured_content: Option<Value>,
        is_error: bool,
    },
    /// The tool needs the client's input first (MRTR): `inputRequests` keyed by id,
    /// and an opaque state the client echoes on its retry.
    InputRequired {
        input_requests: Map<String, Value>,
        request_state: Option<String>,
    },
    /// A tool execution error the model can act on (`isError: true`).
    Error(String),
    /// The tool cannot run without a client capability the request did not declare.
    MissingCapability(Value),
    /// The request itself is malformed for this tool (a tampered `requestState`):
    /// a JSON-RPC error, not a tool result.
    InvalidParams(String),
}

impl ToolOutput {
    /// A data tool's answer in the product's tool shape: `{success: true, data}`, or
    /// `{success: false, error}` for a problem the model can explain.
    pub(crate) fn data(answer: Result<Value, String>) -> Self {
        // Built by hand: `json!` would copy the whole answer through `to_value`.
        let mut out = Map::new();
        match answer {
            Ok(data) => {
                out.insert("success".into(), true.into());
                out.insert("data".into(), data);
            }
            Err(message) => {
                out.insert("success".into(), false.into());
                out.insert("error".into(), message.into());
            }
        }
        ToolOutput::Json(Value::Object(out))
    }

    /// What a tool that reads the caller's own data returns to an anonymous call.
    pub(crate) fn sign_in_first() -> Self {
        ToolOutput::Error("sign in first: this tool reads your own data".into())
    }

    /// A remote server's `CallToolResult` as it arrived, keeping only its `content`
    /// (an array, else nothing), an object `structuredContent`, and `isError: true`.
    pub(crate) fn forwarded(mut result: Value) -> Self {
        let content = match result.get_mut("content").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        let structured_content = match result.get_mut("structuredContent").map(Value::take) {
            Some(structured @ Value::Object(_)) => Some(structured),
            _ => None,
        };
        ToolOutput::Forwarded {
            content,
            structured_content,
            is_error: result.get("isError") == Some(&Value::Bool(true)),
        }
    }
}

/// Why a `tools/list` or `tools/call` request was refused before any tool ran: a
/// protocol error for the client, unlike a tool's own failure ([`ToolOutput::Error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolError {
    /// No tool by that name for this caller (never registered, or hidden from it).
    UnknownTool(String),
    /// A pagination cursor this server did not issue.
    InvalidCursor,
    /// The call's parameters are malformed (arguments that are not an object, a
    /// multi-round retry of the wrong shape).
    InvalidParams(String),
}
