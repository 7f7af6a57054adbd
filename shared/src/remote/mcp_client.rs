//! A minimal MCP client (Streamable HTTP) on top of the guarded, pinned HTTP client.
//!
//! Owns the JSON-RPC exchange with one remote MCP server in either dialect:
//! - 2026-07-28 ([`Dialect::Stateless`]): every request stands alone, with its version,
//!   client info and capabilities in `_meta` and the `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name` and `Mcp-Param-*` (`x-mcp-header`) headers; `server/discover` tells the
//!   era apart (the spec's backward-compatibility probe);
//! - 2025-03-26 to 2025-11-25 ([`Dialect::Handshake`]): `initialize` plus
//!   `notifications/initialized` and the session id the server hands out.
//!
//! Answers may be a plain JSON body or a `text/event-stream` body. `tools/list` follows
//! cursors; `tools/call` returns the remote's result. One connection checks the URL once
//! ([`GuardedHttp::endpoint`]) and sends every request through that pinned endpoint, so
//! the address guard, pinning, the no-redirect rule, the timeout and the size bound all
//! apply.
//!
//! The protocol's versions, `_meta` keys, header names and error codes come from
//! [`crate::wire`], the one vocabulary the server side uses too.
//!
//! Every request is a span of the request that made it (`observe`: the host only, the
//! HTTP status) and carries its W3C `traceparent` (in `params._meta` too on 2026-07-28).
//!
//! Does not know about accounts, stored servers or tool name mangling (D8); those sit on
//! top. Error messages never contain the URL, the auth headers or any credential.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use serde_json::{Map, Value, json};

use super::client::{DEFAULT_MAX_BYTES, GuardedHttp, HttpError, PinnedEndpoint, RemoteResponse};
use crate::observe::{self, Outcome, SpanKind};
use crate::wire::{
    self, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO,
    METHOD_HEADER, MODERN_VERSION, NAME_HEADER, PARAM_HEADER_ANNOTATION, PARAM_HEADER_PREFIX,
    PROTOCOL_VERSION_HEADER, RESULT_INPUT_REQUIRED, SESSION_ID_HEADER,
    STREAMABLE_HANDSHAKE_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION,
};

/// The version this client asks for on the handshake: the newest one.
const HANDSHAKE_VERSION: &str = STREAMABLE_HANDSHAKE_VERSIONS[0];

/// At most this many `tools/list` pages are read.
pub(crate) const MAX_TOOL_PAGES: usize = 10;

/// At most this many tools are kept (D6).
pub(crate) const MAX_TOOLS: usize = 256;

/// A kept tool's description is cut to this many characters (D6): the one bound for
/// what the model reads on `/mcp` and what the person reads in the registry and the
/// console, so nothing reaches the model that the person cannot read.
pub(crate) const MAX_TOOL_DESCRIPTION: usize = 500;

/// A tool whose name is longer than this many characters is left out, everywhere:
/// what is kept is stored whole, so the person sees and can allow every tool the model
/// is offered. (D6 says 128, the MCP spec's advice for a name; a 200-character name is
/// real enough that the gateway offers it under a cut and hashed name, so the stored
/// bound is wider. The listing's byte bound keeps the stored record small.)
pub(crate) const MAX_TOOL_NAME: usize = 256;

/// A tool whose `inputSchema` serialises to more bytes than this is left out.
pub(crate) const MAX_TOOL_SCHEMA: usize = 16 * 1024;

/// What one server's kept tools may add up to (names, descriptions, schemas); tools
/// past it are left out.
pub(crate) const MAX_LISTING_BYTES: usize = 256 * 1024;

/// A tool's `title` (and `annotations.title`) is cut to this many characters.
pub(crate) const MAX_TOOL_TITLE: usize = 200;

/// A `tools/call` answer is read up to this many bytes (a large result is
/// cut down to the gateway's result limit after it is read, so this bound is what a
/// result may reach before the call fails instead; at most 4 MiB of content plus the
/// JSON-RPC envelope, JSON escaping and the event-stream framing).
pub(crate) const MAX_CALL_BYTES: usize = 8 * 1024 * 1024;

/// A server's tools, bounded: those kept, in its order, and what was left out.
#[derive(Debug, Default)]
pub(crate) struct ToolList {
    pub tools: Vec<RemoteTool>,
    /// Tools left out because their input schema is over [`MAX_TOOL_SCHEMA`].
    pub oversized: usize,
    /// Tools left out because their name is over [`MAX_TOOL_NAME`] characters.
    pub long_names: usize,
    /// Whether tools past [`MAX_TOOLS`], [`MAX_LISTING_BYTES`] or [`MAX_TOOL_PAGES`]
    /// were left out.
    pub truncated: bool,
    /// How long the server said its list may be considered fresh (`ttlMs`, the least of
    /// its pages'; a negative one counts as 0). `None` when it said nothing, which the
    /// caching utility reads as 0 (immediately stale).
    pub ttl_ms: Option<u64>,
}

impl ToolList {
    /// What to tell the caller about the tools left out, if any.
    pub(crate) fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.oversized > 0 {
            parts.push(format!(
                "{} of its tools were left out because their input schemas are over {} KiB",
                self.oversized,
                MAX_TOOL_SCHEMA / 1024
            ));
        }
        if self.long_names > 0 {
            parts.push(format!(
                "{} of its tools were left out because their names are over {MAX_TOOL_NAME} characters",
                self.long_names
            ));
        }
        if self.truncated {
            parts.push(format!(
                "only its first {} tools are listed (at most {MAX_TOOLS} tools and {} KiB per server)",
                self.tools.len(),
                MAX_LISTING_BYTES / 1024
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");

/// Which generation of Streamable HTTP a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// 2026-07-28: no handshake, no session; every request carries its version.
    Stateless,
    /// 2025-03-26 to 2025-11-25: `initialize` first, then the session id, if any.
    Handshake,
}

/// Why talking to a remote MCP server failed. Messages never contain the URL, a header
/// or a credential.
#[derive(Debug)]
pub(crate) enum RemoteError {
    /// The HTTP exchange failed (guard refusal, redirect, timeout, size, transport).
    Http(HttpError),
    /// The server answered, but not with what the protocol asks for.
    Protocol(String),
    /// The server answered with a JSON-RPC error.
    Remote { code: i64, message: String },
    /// A 2026-07-28 tool asked for more input (`input_required`), which a forwarded
    /// call cannot give: the server itself answered well.
    InputRequired,
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Http(err) => err.fmt(f),
            RemoteError::Protocol(detail) => write!(f, "MCP protocol error: {detail}"),
            RemoteError::Remote { code, message } => {
                write!(f, "the MCP server returned error {code}: {message}")
            }
            RemoteError::InputRequired => f.write_str(
                "MCP protocol error: the tool asked for more input, which a forwarded call cannot give",
            ),
        }
    }
}

impl std::error::Error for RemoteError {}

impl RemoteError {
    /// The server's message when it refused the request itself (an unknown resource or
    /// prompt, bad arguments: -32002 or -32602), rather than failing.
    pub(crate) fn refused_request(&self) -> Option<&str> {
        match self {
            RemoteError::Remote { code, message }
                if [wire::RESOURCE_NOT_FOUND, wire::INVALID_PARAMS].contains(code) =>
            {
                Some(message)
            }
            _ => None,
        }
    }
}

impl From<HttpError> for RemoteError {
    fn from(err: HttpError) -> Self {
        RemoteError::Http(err)
    }
}

pub(super) fn protocol(detail: impl Into<String>) -> RemoteError {
    RemoteError::Protocol(detail.into())
}

/// One tool as the remote server describes it, reduced to what is passed on: the
/// known, well-typed fields, each bounded.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RemoteTool {
    pub name: String,
    /// `title`, cut to [`MAX_TOOL_TITLE`] characters.
    pub title: Option<String>,
    pub description: Option<String>,
    pub input_schema: Value,
    /// `outputSchema` when it is an object schema (`"type": "object"`, what every era
    /// of the protocol accepts) of at most [`MAX_TOOL_SCHEMA`] bytes.
    pub output_schema: Option<Value>,
    /// `annotations` with only the spec's keys of the right types (`title` a string,
    /// the four hints booleans); `None` when none is left.
    pub annotations: Option<Value>,
}

impl RemoteTool {
    /// Whether the server annotated it `readOnlyHint: true`: a hint from the server,
    /// which the read-only and ask-first controls take at its word (the spec's
    /// annotations are untrusted for security, but they are what the person chose by).
    pub(crate) fn read_only(&self) -> bool {
        self.annotations
            .as_ref()
            .and_then(|annotations| annotations.get("readOnlyHint"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The bytes its listing entry carries of the remote's text and schemas.
    fn listing_bytes(&self, input_schema_bytes: usize) -> usize {
        let json_len = |value: &Option<Value>| {
            value
                .as_ref()
                .map_or(0, |v| serde_json::to_vec(v).map_or(0, |bytes| bytes.len()))
        };
        self.name.len()
            + self.title.as_ref().map_or(0, String::len)
            + self.description.as_ref().map_or(0, String::len)
            + input_schema_bytes
            + json_len(&self.output_schema)
            + json_len(&self.annotations)
    }
}

/// An open connection to one remote MCP server.
pub(crate) struct McpConnection {
    endpoint: PinnedEndpoint,
    auth: HeaderMap,
    dialect: Dialect,
    session_id: Option<HeaderValue>,
    protocol_version: String,
    server_name: Option<String>,
    /// The server's declared `capabilities` (from `server/discover` or `initialize`);
    /// `None` when the connection was adopted without asking.
    capabilities: Option<Map<String, Value>>,
    next_id: AtomicI64,
}

impl fmt::Debug for McpConnection {
    // No URL, auth headers or session id: any of them may be a credential.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpConnection")
            .field("dialect", &self.dialect)
            .field("protocol_version", &self.protocol_version)
            .field("server_name", &self.server_name)
            .field("has_session", &self.session_id.is_some())
            .finish_non_exhaustive()
    }
}

/// How one attempt at a dialect ended when it did not connect.
enum Attempt {
    /// The server does not speak this dialect: try the other one.
    OtherDialect(RemoteError),
    /// Trying the other dialect cannot help (unreachable, refused, timed out…).
    Failed(RemoteError),
}

impl From<RemoteError> for Attempt {
    fn from(err: RemoteError) -> Self {
        match err {
            RemoteError::Http(_) => Attempt::Failed(err),
            other => Attempt::OtherDialect(other),
        }
    }
}

impl McpConnection {
    /// Connects to `url`: the URL is checked once, then `prefer`'s dialect is tried
    /// first (2026-07-28 when `None`, as the spec's compatibility probe does) and the
    /// other one only when the server plainly does not speak the first. A server already
    /// known to speak 2026-07-28 (`Some(Stateless)`) is adopted without a probe: stateless
    /// requests need no handshake, so its first request is the real one. `auth` is sent
    /// on every request; `timeout` bounds each request.
    pub(crate) async fn connect(
        http: &GuardedHttp,
        url: &str,
        auth: &HeaderMap,
        timeout: Duration,
        prefer: Option<Dialect>,
    ) -> Result<McpConnection, RemoteError> {
        let endpoint = http.endpoint(url, timeout).await?;
        let connection = McpConnection {
            endpoint,
            auth: auth.clone(),
            dialect: prefer.unwrap_or(Dialect::Stateless),
            session_id: None,
            protocol_version: MODERN_VERSION.to_string(),
            server_name: None,
            capabilities: None,
            next_id: AtomicI64::new(1),
        };
        if prefer == Some(Dialect::Stateless) {
            return Ok(connection);
        }
        let first = connection.dialect;
        let second = match first {
            Dialect::Stateless => Dialect::Handshake,
            Dialect::Handshake => Dialect::Stateless,
        };
        let connection = match connection.open(first).await {
            Ok(connection) => return Ok(connection),
            Err((_, Attempt::Failed(err))) => return Err(err),
            Err((connection, Attempt::OtherDialect(_))) => connection,
        };
        connection
            .open(second)
            .await
            .map_err(|(_, attempt)| match attempt {
                Attempt::Failed(err) | Attempt::OtherDialect(err) => err,
            })
    }

    async fn open(mut self, dialect: Dialect) -> Result<McpConnection, (McpConnection, Attempt)> {
        self.dialect = dialect;
        self.session_id = None;
        self.next_id = AtomicI64::new(1);
        let outcome = match dialect {
            Dialect::Stateless => self.discover().await,
            Dialect::Handshake => self.handshake().await,
        };
        match outcome {
            Ok(()) => Ok(self),
            Err(attempt) => Err((self, attempt)),
        }
    }

    /// 2026-07-28: `server/discover`. A modern refusal of our version is read for the
    /// versions the server does support (the spec asks a client to retry with one of
    /// them): 2026-07-28 listed after all is asked once more, a handshake-era version
    /// sends us to the handshake, and anything else ends here. Any other refusal means a
    /// server of the handshake era.
    async fn discover(&mut self) -> Result<(), Attempt> {
        let supported = match self.discover_once().await? {
            Ok(()) => return Ok(()),
            Err(supported) if supported.iter().any(|v| v == MODERN_VERSION) => {
                match self.discover_once().await? {
                    Ok(()) => return Ok(()),
                    Err(supported) => supported,
                }
            }
            Err(supported) => supported,
        };
        let refusal = protocol(format!(
            "the server does not speak MCP {MODERN_VERSION} (it supports {})",
            if supported.is_empty() {
                "(not said)".to_string()
            } else {
                supported.join(", ")
            }
        ));
        let handshake_era = supported
            .iter()
            .any(|v| STREAMABLE_HANDSHAKE_VERSIONS.contains(&v.as_str()));
        Err(if handshake_era {
            Attempt::OtherDialect(refusal)
        } else {
            Attempt::Failed(refusal)
        })
    }

    /// One `server/discover`; `Ok(Err(supported))` is a refusal of our version, with
    /// the versions the server says it supports.
    async fn discover_once(&mut self) -> Result<Result<(), Vec<String>>, Attempt> {
        self.protocol_version = MODERN_VERSION.to_string();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = self.request_body(id, "server/discover", json!({}));
        let response = self
            .post(&body, "server/discover", None, DEFAULT_MAX_BYTES)
            .await?;
        if matches!(
            response.status,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            return Err(Attempt::Failed(status_error(
                "server/discover",
                response.status,
            )));
        }
        let message = find_response(&response, id).map_err(Attempt::OtherDialect)?;
        if let Some(error) = message.get("error")
            && error.get("code").and_then(Value::as_i64) == Some(UNSUPPORTED_PROTOCOL_VERSION)
        {
            // At most a few short version strings are kept from the refusal.
            let supported = error
                .get("data")
                .and_then(|data| data.get("supported"))
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .take(8)
                        .filter_map(Value::as_str)
                        .map(|version| truncate(version, 40))
                        .collect()
                })
                .unwrap_or_default();
            return Ok(Err(supported));
        }
        if response.status != StatusCode::OK {
            return Err(Attempt::OtherDialect(status_error(
                "server/discover",
                response.status,
            )));
        }
        let result = into_result(message)?;
        let speaks_modern = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(MODERN_VERSION)));
        if !speaks_modern {
            return Err(Attempt::OtherDialect(protocol(
                "server/discover did not list 2026-07-28",
            )));
        }
        self.capabilities = capabilities(result.get("capabilities"));
        self.server_name = result
            .get("_meta")
            .and_then(|meta| meta.get(META_SERVER_INFO))
            .or_else(|| result.get("serverInfo"))
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str)
            .map(|name| truncate(name, 128));
        Ok(Ok(()))
    }

    /// 2025-era: `initialize`, then `notifications/initialized`.
    async fn handshake(&mut self) -> Result<(), Attempt> {
        let params = json!({
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": client_info(),
        });
        let (result, headers) = self
            .exchange("initialize", params, None, DEFAULT_MAX_BYTES)
            .await?;
        let result = result
            .as_object()
            .ok_or_else(|| protocol("initialize result is not an object"))?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol("initialize result has no protocolVersion"))?;
        if !STREAMABLE_HANDSHAKE_VERSIONS.contains(&version) {
            return Err(Attempt::Failed(protocol(format!(
                "unsupported protocol version {:?}",
                truncate(version, 40)
            ))));
        }
        self.protocol_version = version.to_string();
        self.capabilities = capabilities(result.get("capabilities"));
        self.server_name = result
            .get("serverInfo")
            .and_then(|info| info.get("name"))
            .and_then(Value::as_str)
            .map(|name| truncate(name, 128));
        if let Some(session) = headers.get(SESSION_ID_HEADER) {
            // Visible ASCII only (the spec's rule); anything else is not sent back.
            let valid = session
                .as_bytes()
                .iter()
                .all(|byte| (0x21..=0x7e).contains(byte));
            if !valid || session.is_empty() {
                return Err(Attempt::Failed(protocol("invalid Mcp-Session-Id header")));
            }
            self.session_id = Some(session.clone());
        }
        self.notify("notifications/initialized")
            .await
            .map_err(Attempt::Failed)?;
        Ok(())
    }

    /// The server's self-reported name (`serverInfo.name`), if it gave one.
    pub(crate) fn server_name(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    /// The protocol version in use.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// The dialect the server speaks.
    pub(crate) fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub(super) fn is_stateless(&self) -> bool {
        self.dialect == Dialect::Stateless
    }

    /// Whether the server declared the capability `name` (`resources`, `prompts`);
    /// `None` when its capabilities were not asked for.
    pub(super) fn declares(&self, name: &str) -> Option<bool> {
        self.capabilities
            .as_ref()
            .map(|capabilities| capabilities.get(name).is_some_and(Value::is_object))
    }

    /// Whether the server handed out a session id.
    #[cfg(test)]
    pub(crate) fn has_session(&self) -> bool {
        self.session_id.is_some()
    }

    /// Every tool, following `nextCursor` for at most [`MAX_TOOL_PAGES`] pages and
    /// keeping at most [`MAX_TOOLS`] tools. On 2026-07-28 a tool whose `x-mcp-header`
    /// annotations are invalid is left out, as the transport spec requires.
    pub(crate) async fn list_tools(&self) -> Result<ToolList, RemoteError> {
        let mut list = ToolList::default();
        let mut bytes = 0usize;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            // One page is read whole (at most 4 MiB) and cut down as it is parsed.
            let (result, _) = self
                .exchange("tools/list", params, None, DEFAULT_MAX_BYTES)
                .await?;
            let page = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| protocol("tools/list result has no tools array"))?;
            if let Some(ttl) = result.get("ttlMs").and_then(Value::as_f64) {
                // Whole milliseconds, never negative; `as` saturates a huge one.
                let ttl = ttl.max(0.0) as u64;
                list.ttl_ms = Some(list.ttl_ms.map_or(ttl, |least| least.min(ttl)));
            }
            for tool in page {
                if list.tools.len() >= MAX_TOOLS {
                    list.truncated = true;
                    return Ok(list);
                }
                let tool = parse_tool(tool)?;
                if tool.name.chars().count() > MAX_TOOL_NAME {
                    list.long_names += 1;
                    continue;
                }
                if self.dialect == Dialect::Stateless
                    && param_annotations(&tool.input_schema).is_err()
                {
                    tracing::warn!(
                        tool = truncate(&tool.name, 64),
                        "remote tool left out: invalid x-mcp-header annotation"
                    );
                    continue;
                }
                let schema_bytes =
                    serde_json::to_vec(&tool.input_schema).map_or(usize::MAX, |v| v.len());
                if schema_bytes > MAX_TOOL_SCHEMA {
                    list.oversized += 1;
                    continue;
                }
                let size = tool.listing_bytes(schema_bytes);
                if bytes + size > MAX_LISTING_BYTES {
                    list.truncated = true;
                    return Ok(list);
                }
                bytes += size;
                list.tools.push(tool);
            }
            cursor = match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(list),
                Some(Value::String(next)) => Some(next.clone()),
                Some(_) => return Err(protocol("tools/list nextCursor is not a string")),
            };
            if list.tools.len() >= MAX_TOOLS {
                list.truncated = true;
                return Ok(list);
            }
        }
        // Pages left unread.
        list.truncated = true;
        Ok(list)
    }

    /// Calls `tool` with `arguments`; returns the `CallToolResult` object as sent. A
    /// JSON-RPC error becomes [`RemoteError::Remote`]; a tool error (`isError: true`)
    /// is a normal result; an answer over [`MAX_CALL_BYTES`] is
    /// [`HttpError::TooLarge`]. A 2026-07-28 tool that asks for more input
    /// (`input_required`) cannot be answered on the user's behalf: a protocol error.
    pub(crate) async fn call_tool(
        &self,
        tool: &RemoteTool,
        arguments: Map<String, Value>,
    ) -> Result<Value, RemoteError> {
        let mut extra = HeaderMap::new();
        if self.dialect == Dialect::Stateless {
            extra.insert(NAME_HEADER, header_value(&tool.name));
            let annotations = param_annotations(&tool.input_schema).map_err(protocol)?;
            for (path, name) in annotations {
                if let Some(value) = lookup(&arguments, &path).and_then(param_text)
                    && let Ok(name) = HeaderName::try_from(format!("{PARAM_HEADER_PREFIX}{name}"))
                {
                    extra.insert(name, header_value(&value));
                }
            }
        }
        let params = json!({ "name": tool.name, "arguments": arguments });
        // Read up to [`MAX_CALL_BYTES`]: the gateway cuts a large result down itself.
        let (result, _) = self
            .exchange("tools/call", params, Some(extra), MAX_CALL_BYTES)
            .await?;
        if !result.is_object() {
            return Err(protocol("tools/call result is not an object"));
        }
        if result.get("resultType").and_then(Value::as_str) == Some(RESULT_INPUT_REQUIRED) {
            return Err(RemoteError::InputRequired);
        }
        Ok(result)
    }

    /// Ends the session a 2025-era server handed out (HTTP DELETE, as that revision asks
    /// of a client that is done), within `timeout`; failures are ignored. Nothing to do
    /// on 2026-07-28, which has no sessions.
    pub(crate) async fn close(self, timeout: Duration) {
        let Some(session) = &self.session_id else {
            return;
        };
        let mut headers = self.auth.clone();
        headers.insert(SESSION_ID_HEADER, session.clone());
        if let Ok(version) = HeaderValue::from_str(&self.protocol_version) {
            headers.insert(PROTOCOL_VERSION_HEADER, version);
        }
        let _ = tokio::time::timeout(timeout, self.endpoint.delete(&headers)).await;
    }

    fn headers(&self, method: &str, extra: Option<HeaderMap>) -> HeaderMap {
        let mut headers = self.auth.clone();
        headers.insert(header::ACCEPT, ACCEPT_BOTH);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let versioned = self.dialect == Dialect::Stateless || method != "initialize";
        if versioned && let Ok(version) = HeaderValue::from_str(&self.protocol_version) {
            headers.insert(PROTOCOL_VERSION_HEADER, version);
        }
        if self.dialect == Dialect::Stateless {
            headers.insert(METHOD_HEADER, header_value(method));
        }
        if let Some(session) = &self.session_id {
            headers.insert(SESSION_ID_HEADER, session.clone());
        }
        if let Some(extra) = extra {
            headers.extend(extra);
        }
        headers
    }

    /// A JSON-RPC request; 2026-07-28 requests carry the version, client info and
    /// capabilities in `params._meta`.
    fn request_body(&self, id: i64, method: &str, mut params: Value) -> Value {
        if self.dialect == Dialect::Stateless
            && let Some(object) = params.as_object_mut()
        {
            object.insert(
                "_meta".into(),
                json!({
                    META_PROTOCOL_VERSION: MODERN_VERSION,
                    META_CLIENT_INFO: client_info(),
                    META_CLIENT_CAPABILITIES: {},
                }),
            );
        }
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    async fn post(
        &self,
        body: &Value,
        method: &str,
        extra: Option<HeaderMap>,
        max_bytes: usize,
    ) -> Result<RemoteResponse, RemoteError> {
        let mut headers = self.headers(method, extra);
        // A span of the request that made the call, and its trace context sent along:
        // `traceparent` only (never the caller's `tracestate` or `baggage`, which are the
        // caller's vendors' data, not the user's MCP server's).
        let span = observe::start(format!("MCP {}", span_method(method)), SpanKind::Remote);
        let mut traced;
        let mut body = body;
        if let Some(span) = &span {
            let traceparent = span.traceparent();
            if let Ok(value) = HeaderValue::from_str(&traceparent) {
                headers.insert(TRACEPARENT, value);
            }
            // 2026-07-28: the trace context in `params._meta` too, the spec's convention.
            if self.dialect == Dialect::Stateless
                && let Some(meta) = body
                    .get("params")
                    .and_then(|p| p.get("_meta"))
                    .filter(|m| m.is_object())
            {
                let mut meta = meta.clone();
                meta[TRACEPARENT] = Value::String(traceparent);
                traced = body.clone();
                traced["params"]["_meta"] = meta;
                body = &traced;
            }
        }
        let answer = self.endpoint.post_json(&headers, body, max_bytes).await;
        if let Some(span) = span {
            let http_status = answer.as_ref().ok().map(|r| r.status.as_u16());
            span.finish(Outcome {
                error: http_status.is_none_or(|s| s >= 400),
                throttled: http_status == Some(429),
                remote_host: Some(self.endpoint.host().to_string()),
                http_status,
            });
        }
        Ok(answer?)
    }

    /// Sends a request and returns its `result` and the response headers; the answer
    /// is read up to `max_bytes`.
    pub(super) async fn exchange(
        &self,
        method: &str,
        params: Value,
        extra: Option<HeaderMap>,
        max_bytes: usize,
    ) -> Result<(Value, HeaderMap), RemoteError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = self.request_body(id, method, params);
        let response = self.post(&body, method, extra, max_bytes).await?;
        if response.status == StatusCode::BAD_REQUEST {
            // A 2026-07-28 server answers a JSON-RPC error with 400 (the Python SDK does
            // for an unknown resource or bad arguments): the server was reached and said
            // why, which is worth more than the status.
            return Err(match find_response(&response, id).map(into_result) {
                Ok(Err(error @ RemoteError::Remote { .. })) => error,
                _ => status_error(method, response.status),
            });
        }
        if response.status != StatusCode::OK {
            return Err(status_error(method, response.status));
        }
        let message = find_response(&response, id)?;
        let result = into_result(message)?;
        Ok((result, response.headers))
    }

    async fn notify(&self, method: &str) -> Result<(), RemoteError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let response = self.post(&body, method, None, DEFAULT_MAX_BYTES).await?;
        match response.status {
            StatusCode::ACCEPTED | StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            status => Err(status_error(method, status)),
        }
    }
}

/// The trace context header (W3C Trace Context).
const TRACEPARENT: &str = "traceparent";

/// A method a span may name (ours, from this file): anything else is `other`.
fn span_method(method: &str) -> &'static str {
    [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
    ]
    .into_iter()
    .find(|m| *m == method)
    .unwrap_or("other")
}

/// The `capabilities` of a discovery or `initialize` result (absent: none declared).
fn capabilities(declared: Option<&Value>) -> Option<Map<String, Value>> {
    Some(
        declared
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    )
}

fn client_info() -> Value {
    json!({"name": "mirobody", "version": env!("CARGO_PKG_VERSION")})
}

/// A mirrored header value, in the sentinel form when it is not plain visible ASCII.
pub(super) fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(&wire::encode_header_value(text)).unwrap_or(HeaderValue::from_static(""))
}

/// The `x-mcp-header` annotations of a 2026-07-28 tool: (property path, header name).
/// An annotation that breaks the spec's constraints (not a token, duplicated, on a
/// non-primitive, or anywhere but a chain of `properties`) makes the tool invalid.
fn param_annotations(schema: &Value) -> Result<Vec<(Vec<String>, String)>, String> {
    fn walk(
        schema: &Value,
        path: &mut Vec<String>,
        found: &mut Vec<(Vec<String>, String)>,
    ) -> Result<(), String> {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return Ok(());
        };
        for (key, property) in properties {
            path.push(key.clone());
            if let Some(annotation) = property.get(PARAM_HEADER_ANNOTATION) {
                let name = annotation
                    .as_str()
                    .filter(|name| !name.is_empty() && name.bytes().all(is_tchar))
                    .ok_or("an x-mcp-header value is not a header token")?;
                let primitive = matches!(
                    property.get("type").and_then(Value::as_str),
                    Some("string" | "integer" | "boolean")
                );
                if !primitive {
                    return Err("x-mcp-header on a non-primitive parameter".into());
                }
                if found
                    .iter()
                    .any(|(_, other)| other.eq_ignore_ascii_case(name))
                {
                    return Err("duplicate x-mcp-header".into());
                }
                found.push((path.clone(), name.to_string()));
            }
            walk(property, path, found)?;
            path.pop();
        }
        Ok(())
    }
    fn count(value: &Value) -> usize {
        match value {
            Value::Object(map) => map
                .iter()
                .map(|(key, inner)| usize::from(key == PARAM_HEADER_ANNOTATION) + count(inner))
                .sum(),
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), &mut found)?;
    if count(schema) != found.len() {
        return Err("x-mcp-header outside a chain of properties".into());
    }
    Ok(found)
}

fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn lookup<'v>(arguments: &'v Map<String, Value>, path: &[String]) -> Option<&'v Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(arguments.get(first)?, |value, key| value.get(key))
}

fn param_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) if number.is_i64() || number.is_u64() => Some(number.to_string()),
        _ => None,
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
        title: tool
            .get("title")
            .and_then(Value::as_str)
            .map(|text| cut(text, MAX_TOOL_TITLE)),
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .map(|text| cut(text, MAX_TOOL_DESCRIPTION)),
        input_schema,
        output_schema: tool.get("outputSchema").and_then(output_schema),
        annotations: tool.get("annotations").and_then(annotations),
    })
}

/// An `outputSchema` worth passing on: an object schema (`"type": "object"`, which the
/// 2025 revisions require and every client takes) of at most [`MAX_TOOL_SCHEMA`] bytes.
/// Anything else is dropped; the tool itself stays.
fn output_schema(schema: &Value) -> Option<Value> {
    let object = schema.as_object()?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let bytes = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    (bytes <= MAX_TOOL_SCHEMA).then(|| schema.clone())
}

/// The spec's `ToolAnnotations` keys with the right JSON types (`title` cut to
/// [`MAX_TOOL_TITLE`] characters); every other key or type is dropped.
fn annotations(annotations: &Value) -> Option<Value> {
    const HINTS: [&str; 4] = [
        "readOnlyHint",
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
    ];
    let given = annotations.as_object()?;
    let mut kept = Map::new();
    if let Some(title) = given.get("title").and_then(Value::as_str) {
        kept.insert("title".into(), cut(title, MAX_TOOL_TITLE).into());
    }
    for hint in HINTS {
        if let Some(flag) = given.get(hint).and_then(Value::as_bool) {
            kept.insert(hint.into(), flag.into());
        }
    }
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// `text` cut to `max_chars` characters, with an ellipsis when something was cut.
pub(super) fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}

#[cfg(test)]
#[path = "mcp_client_tests.rs"]
mod tests;
