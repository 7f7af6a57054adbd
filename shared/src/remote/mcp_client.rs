//! A minimal MCP client (Streamable HTTP, legacy handshake) on top of [`GuardedHttp`].
//!
//! Owns the JSON-RPC exchange with one remote MCP server: `initialize` plus
//! `notifications/initialized`, the session id the server hands out, answers sent as a
//! plain JSON body or as a `text/event-stream` body, `tools/list` with pagination and
//! `tools/call`. Every request goes through [`GuardedHttp::post_json`], so the address
//! guard, pinning, the no-redirect rule, the timeout and the size bound all apply.
//!
//! Does not know about accounts, stored servers or tool name mangling (D8); those sit on
//! top. Error messages never contain the URL, the auth headers or any credential.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

use super::client::{DEFAULT_MAX_BYTES, GuardedHttp, HttpError, RemoteResponse};

/// The protocol version this client asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The versions this client accepts from a server (all share the legacy handshake).
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-03-26", "2025-06-18", "2025-11-25"];

/// At most this many `tools/list` pages are read.
pub const MAX_TOOL_PAGES: usize = 10;

/// At most this many tools are kept (D6).
pub const MAX_TOOLS: usize = 256;

const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");

/// Why talking to a remote MCP server failed. Messages never contain the URL, a header
/// or a credential.
#[derive(Debug)]
pub enum RemoteError {
    /// The HTTP exchange failed (guard refusal, redirect, timeout, size, transport).
    Http(HttpError),
    /// The server answered, but not with what the protocol asks for.
    Protocol(String),
    /// The server answered with a JSON-RPC error.
    Remote { code: i64, message: String },
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Http(err) => err.fmt(f),
            RemoteError::Protocol(detail) => write!(f, "MCP protocol error: {detail}"),
            RemoteError::Remote { code, message } => {
                write!(f, "the MCP server returned error {code}: {message}")
            }
        }
    }
}

impl std::error::Error for RemoteError {}

impl From<HttpError> for RemoteError {
    fn from(err: HttpError) -> Self {
        RemoteError::Http(err)
    }
}

fn protocol(detail: impl Into<String>) -> RemoteError {
    RemoteError::Protocol(detail.into())
}

/// One tool as the remote server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
}

/// An initialized connection to one remote MCP server.
pub struct McpConnection {
    http: GuardedHttp,
    url: String,
    auth: HeaderMap,
    timeout: Duration,
    session_id: Option<HeaderValue>,
    protocol_version: String,
    server_name: Option<String>,
    next_id: AtomicI64,
}

impl fmt::Debug for McpConnection {
    // No URL, auth headers or session id: any of them may be a credential.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("protocol_version", &self.protocol_version)
            .field("server_name", &self.server_name)
            .field("has_session", &self.session_id.is_some())
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// Connects to `url`: `initialize`, then `notifications/initialized`. `auth` is sent
    /// on every request; `timeout` bounds each request.
    pub async fn connect(
        http: &GuardedHttp,
        url: &str,
        auth: &HeaderMap,
        timeout: Duration,
    ) -> Result<McpConnection, RemoteError> {
        let mut connection = McpConnection {
            http: http.clone(),
            url: url.to_string(),
            auth: auth.clone(),
            timeout,
            session_id: None,
            protocol_version: PROTOCOL_VERSION.to_string(),
            server_name: None,
            next_id: AtomicI64::new(1),
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mirobody", "version": env!("CARGO_PKG_VERSION")},
        });
        let (result, headers) = connection.exchange("initialize", params, false).await?;
        let result = result
            .as_object()
            .ok_or_else(|| protocol("initialize result is not an object"))?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol("initialize result has no protocolVersion"))?;
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return Err(protocol(format!(
                "unsupported protocol version {:?}",
                truncate(version, 40)
            )));
        }
        connection.protocol_version = version.to_string();
        connection.server_name = result
            .get("serverInfo")
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str)
            .map(|name| truncate(name, 128));
        if let Some(session) = headers.get(SESSION_HEADER) {
            // Visible ASCII only (the spec's rule); anything else is not sent back.
            let valid = session
                .as_bytes()
                .iter()
                .all(|byte| (0x21..=0x7e).contains(byte));
            if !valid || session.is_empty() {
                return Err(protocol("invalid Mcp-Session-Id header"));
            }
            connection.session_id = Some(session.clone());
        }
        connection.notify("notifications/initialized").await?;
        Ok(connection)
    }

    /// The server's self-reported name (`serverInfo.name`), if it gave one.
    pub fn server_name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// Whether the server handed out a session id.
    pub fn has_session(&self) -> bool {
        self.session_id.is_some()
    }

    /// Every tool, following `nextCursor` for at most [`MAX_TOOL_PAGES`] pages and
    /// keeping at most [`MAX_TOOLS`] tools.
    pub async fn list_tools(&self) -> Result<Vec<RemoteTool>, RemoteError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let (result, _) = self.exchange("tools/list", params, true).await?;
            let page = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| protocol("tools/list result has no tools array"))?;
            for tool in page {
                if tools.len() >= MAX_TOOLS {
                    return Ok(tools);
                }
                tools.push(parse_tool(tool)?);
            }
            cursor = match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(tools),
                Some(Value::String(next)) => Some(next.clone()),
                Some(_) => return Err(protocol("tools/list nextCursor is not a string")),
            };
            if tools.len() >= MAX_TOOLS {
                return Ok(tools);
            }
        }
        Ok(tools)
    }

    /// Calls `name` with `arguments`; returns the `CallToolResult` object as sent. A
    /// JSON-RPC error becomes [`RemoteError::Remote`]; a tool error (`isError: true`)
    /// is a normal result.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, RemoteError> {
        let params = json!({ "name": name, "arguments": arguments });
        let (result, _) = self.exchange("tools/call", params, true).await?;
        if !result.is_object() {
            return Err(protocol("tools/call result is not an object"));
        }
        Ok(result)
    }

    fn headers(&self, initialized: bool) -> HeaderMap {
        let mut headers = self.auth.clone();
        headers.insert(header::ACCEPT, ACCEPT_BOTH);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if initialized {
            if let Ok(version) = HeaderValue::from_str(&self.protocol_version) {
                headers.insert(VERSION_HEADER, version);
            }
            if let Some(session) = &self.session_id {
                headers.insert(SESSION_HEADER, session.clone());
            }
        }
        headers
    }

    async fn post(&self, body: &Value, initialized: bool) -> Result<RemoteResponse, RemoteError> {
        let headers = self.headers(initialized);
        Ok(self
            .http
            .post_json(&self.url, &headers, body, self.timeout, DEFAULT_MAX_BYTES)
            .await?)
    }

    /// Sends a request and returns its `result` and the response headers.
    async fn exchange(
        &self,
        method: &str,
        params: Value,
        initialized: bool,
    ) -> Result<(Value, HeaderMap), RemoteError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(&body, initialized).await?;
        if response.status != StatusCode::OK {
            return Err(status_error(method, response.status));
        }
        let message = find_response(&response, id)?;
        let result = into_result(message)?;
        Ok((result, response.headers))
    }

    async fn notify(&self, method: &str) -> Result<(), RemoteError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let response = self.post(&body, true).await?;
        match response.status {
            StatusCode::ACCEPTED | StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            status => Err(status_error(method, status)),
        }
    }
}

fn status_error(method: &str, status: StatusCode) -> RemoteError {
    let hint = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => " (authorization refused)",
        StatusCode::NOT_FOUND => " (no MCP endpoint, or the session expired)",
        _ => "",
    };
    protocol(format!("{method} answered HTTP {}{hint}", status.as_u16()))
}

/// The JSON-RPC response with id `id` in a JSON or an SSE body.
fn find_response(response: &RemoteResponse, id: i64) -> Result<Value, RemoteError> {
    let content_type = response
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let text =
        std::str::from_utf8(&response.body).map_err(|_| protocol("response body is not UTF-8"))?;
    let candidates: Vec<Value> = if content_type.starts_with("text/event-stream") {
        sse_data(text)
            .into_iter()
            .filter_map(|data| serde_json::from_str(&data).ok())
            .collect()
    } else if content_type.starts_with("application/json") {
        let value: Value =
            serde_json::from_str(text).map_err(|_| protocol("response body is not JSON"))?;
        vec![value]
    } else {
        return Err(protocol("response is neither JSON nor an event stream"));
    };
    candidates
        .into_iter()
        .flat_map(|value| match value {
            Value::Array(batch) => batch,
            other => vec![other],
        })
        .find(|message| {
            message.get("id").and_then(Value::as_i64) == Some(id)
                && (message.get("result").is_some() || message.get("error").is_some())
        })
        .ok_or_else(|| protocol("no JSON-RPC response with the request's id"))
}

/// The `data` of each event in an SSE body (multi-line data joined with `\n`).
fn sse_data(text: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut data: Option<String> = None;
    for line in text.lines() {
        if line.is_empty() {
            events.extend(data.take());
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if field == "data" {
            match &mut data {
                Some(buffer) => {
                    buffer.push('\n');
                    buffer.push_str(value);
                }
                None => data = Some(value.to_string()),
            }
        }
    }
    events.extend(data);
    events
}

fn into_result(mut message: Value) -> Result<Value, RemoteError> {
    if let Some(error) = message.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        return Err(RemoteError::Remote {
            code,
            message: truncate(text, 500),
        });
    }
    message
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| protocol("JSON-RPC response has neither result nor error"))
}

fn parse_tool(tool: &Value) -> Result<RemoteTool, RemoteError> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| protocol("a tool has no name"))?;
    let input_schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        None | Some(Value::Null) => json!({"type": "object"}),
        Some(_) => return Err(protocol("a tool's inputSchema is not an object")),
    };
    Ok(RemoteTool {
        name: name.to_string(),
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        input_schema,
    })
}

fn truncate(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

#[cfg(test)]
#[path = "mcp_client_tests.rs"]
mod tests;
