//! Method dispatch for one MCP request: parse once, decide the era, validate, run
//! the method, shape the result for the era.
//!
//! Owns the method table of A2 and the per-era result rules (A4: `resultType`,
//! serverInfo in `_meta`, caching fields). Does not know HTTP routing, CORS or how
//! a caller is authenticated: the caller arrives already resolved. Tools are the
//! toolbox's business; their answers become results in `results`.

use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};

use super::capabilities::Declaration;
use super::era::{self, Era, RequestMeta};
use super::error::McpError;
use super::jsonrpc::{self, Incoming, McpBody};
use super::param_headers;
use super::results::{self, call_result, mark_input_required};
use crate::observe;
use crate::prompts::{PromptOutput, PromptRequest, Prompts};
use crate::resources::{Resources, Substitutions};
use crate::tools::{
    CallContext, Caller, ItemError, ItemKind, ItemRequest, Notifier, Retry, ToolOutput, Toolbox,
};
use crate::wire::{
    META_LOG_LEVEL, META_PROGRESS_TOKEN, META_SERVER_INFO, META_UNAVAILABLE_SERVERS,
    MODERN_VERSION, RESULT_COMPLETE,
};

/// How long clients may cache list and discovery results.
pub(crate) const CACHE_TTL_MS: u64 = 300_000;

/// The MCP server: everything a request needs, built once per process.
pub(crate) struct McpServer {
    pub declaration: Declaration,
    /// What [`shape`] adds to a `tools/list` result, serialised once per era.
    pub(crate) list_tails: ListTails,
    /// Every tool a request can reach: built-in ones and the caller's own servers.
    pub(crate) tools: Toolbox,
    pub resources: Resources,
    pub prompts: Prompts,
}

/// One request as the transport hands it over.
pub(crate) struct Exchange<'a> {
    pub headers: &'a HeaderMap,
    /// The body, parsed once by `App::handle`.
    pub body: &'a McpBody,
    /// The resolved caller, when there is one.
    pub caller: Option<&'a Caller>,
    /// Which tools, by name, this request may see and call (agent scoping).
    pub visible: &'a (dyn Fn(&str) -> bool + Sync),
    /// The public origin for resource substitution (A9), made when a resource needs it.
    pub server_url: &'a (dyn Fn() -> String + Sync),
    /// The request's source address, when the binary said (limits the login prompts).
    pub source: Option<std::net::IpAddr>,
}

/// What goes back on the wire.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A JSON-RPC response (result or error) with its HTTP status.
    Json { status: StatusCode, body: Value },
    /// Notifications the request asked for (progress, log messages), then the
    /// response: written as one `text/event-stream` body.
    Stream {
        notifications: Vec<Value>,
        response: Value,
    },
    /// A JSON-RPC response already serialised (the `tools/list` fast path).
    Raw {
        status: StatusCode,
        body: bytes::Bytes,
    },
    /// A notification was accepted: 202, no body.
    Accepted,
}

/// The members [`shape`] gives every `tools/list` result, per era, serialised once (without
/// the braces): a page with no cursor, no notes and no external validity is its tools
/// array and these, written without building or walking a map.
#[derive(Default)]
pub(crate) struct ListTails([std::sync::OnceLock<String>; 3]);

impl ListTails {
    fn of(&self, declaration: &Declaration, era: Era) -> &str {
        let index = match era {
            Era::Modern => 0,
            Era::Legacy => 1,
            Era::Unknown => 2,
        };
        self.0[index].get_or_init(|| {
            let shaped = shape(declaration, Map::new(), "tools/list", era);
            let text = Value::Object(shaped).to_string();
            text[1..text.len() - 1].to_string()
        })
    }
}

/// A plain `tools/list` answer (see [`ListTails`]): the same bytes as the envelope of
/// [`WithTools`] over the shaped result.
fn plain_tools_list(id: &Value, tools: &[&serde_json::value::RawValue], tail: &str) -> Vec<u8> {
    let size = 64 + tail.len() + tools.iter().map(|t| t.get().len() + 1).sum::<usize>();
    let mut body = Vec::with_capacity(size);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // An id is a string or an integer (`jsonrpc::parse`): it always serialises.
    let _ = serde_json::to_writer(&mut body, id);
    body.extend_from_slice(br#","result":{"tools":["#);
    for (n, tool) in tools.iter().enumerate() {
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(tool.get().as_bytes());
    }
    body.push(b']');
    if !tail.is_empty() {
        body.push(b',');
        body.extend_from_slice(tail.as_bytes());
    }
    body.extend_from_slice(b"}}");
    body
}

/// A result whose `tools` array is spliced in from pre-serialised listings.
struct WithTools<'a> {
    tools: &'a [&'a serde_json::value::RawValue],
    rest: &'a Map<String, Value>,
}

impl serde::Serialize for WithTools<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.rest.len() + 1))?;
        map.serialize_entry("tools", self.tools)?;
        for (key, value) in self.rest {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The request's own notification wishes, from `_meta` (modern: `progressToken`,
/// `logLevel`; legacy clients also send `progressToken`).
fn notifier_for(params: Option<&Value>, era: Era) -> Notifier {
    let meta = params.and_then(|p| p.get("_meta"));
    let token = meta
        .and_then(|m| m.get(META_PROGRESS_TOKEN))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    let level = match era {
        Era::Modern => meta
            .and_then(|m| m.get(META_LOG_LEVEL))
            .and_then(Value::as_str)
            .map(String::from),
        _ => None,
    };
    Notifier::new(token, level)
}

impl McpServer {
    pub(crate) async fn handle(&self, exchange: Exchange<'_>) -> Reply {
        let incoming = match exchange.body.request() {
            Ok(incoming) => incoming,
            Err(rejected) => {
                let era = era::classify(None, exchange.headers);
                return error_reply(&rejected.id, &rejected.error, era);
            }
        };
        observe::note_mcp_method(&incoming.method);
        let era = era::classify(incoming.params.as_ref(), exchange.headers);
        let Some(id) = incoming.id.clone() else {
            // Notifications (and requests sent without an id) get no response body.
            return Reply::Accepted;
        };
        let meta = match era {
            Era::Modern => {
                match era::validate_modern(
                    &incoming.method,
                    incoming.params.as_ref(),
                    exchange.headers,
                ) {
                    Ok(meta) => meta,
                    Err(error) => return error_reply(&id, &error, era),
                }
            }
            _ => RequestMeta::default(),
        };
        if incoming.method == "tools/list" {
            return self
                .tools_list(&id, incoming.params.as_ref(), era, &exchange)
                .await;
        }
        let notifier = notifier_for(incoming.params.as_ref(), era);
        let reply = match self.run(incoming, era, &meta, &notifier, &exchange).await {
            Ok(result) => Reply::Json {
                status: StatusCode::OK,
                body: jsonrpc::result(&id, shape(&self.declaration, result, &incoming.method, era)),
            },
            Err(error) => error_reply(&id, &error, era),
        };
        let notifications: Vec<Value> = notifier
            .take()
            .into_iter()
            .map(results::notification)
            .collect();
        match reply {
            Reply::Json {
                status: StatusCode::OK,
                body,
            } if !notifications.is_empty() => Reply::Stream {
                notifications,
                response: body,
            },
            reply => reply,
        }
    }

    async fn run(
        &self,
        request: &Incoming,
        era: Era,
        meta: &RequestMeta,
        notifier: &Notifier,
        exchange: &Exchange<'_>,
    ) -> Result<Map<String, Value>, McpError> {
        let params = request.params.as_ref().and_then(Value::as_object);
        let modern = era == Era::Modern;
        match request.method.as_str() {
            "initialize" if !modern => {
                let requested = params
                    .and_then(|p| p.get("protocolVersion"))
                    .and_then(Value::as_str);
                Ok(self
                    .declaration
                    .initialize_result(era::negotiate(requested)))
            }
            "ping" | "logging/setLevel" if !modern => Ok(Map::new()),
            "server/discover" => Ok(self.declaration.discover_result()),
            "tools/call" => self.call_tool(params, meta, era, notifier, exchange).await,
            "resources/list" => {
                cursor(params)?.map_or(Ok(()), |_| Err(McpError::InvalidCursor))?;
                let builtin = self.resources.list();
                Ok(self
                    .with_external(ItemKind::Resources, builtin, exchange)
                    .await)
            }
            "resources/templates/list" => {
                cursor(params)?.map_or(Ok(()), |_| Err(McpError::InvalidCursor))?;
                let builtin = self.resources.list_templates();
                Ok(self
                    .with_external(ItemKind::ResourceTemplates, builtin, exchange)
                    .await)
            }
            "resources/read" => {
                let uri = required_str(params, "uri")?;
                let request = ItemRequest::Resource { uri };
                if self.tools.owns_item(&request) {
                    return self.fetch_external(request, exchange).await.map_err(
                        |error| match error {
                            ItemError::Unknown => McpError::ResourceNotFound(uri.into()),
                            other => item_error(other),
                        },
                    );
                }
                let server_url = (exchange.server_url)();
                let subs = Substitutions {
                    server_url: &server_url,
                };
                let contents = self
                    .resources
                    .read(uri, &subs)
                    .ok_or_else(|| McpError::ResourceNotFound(uri.into()))?;
                Ok(single("contents", contents))
            }
            "prompts/list" => {
                cursor(params)?.map_or(Ok(()), |_| Err(McpError::InvalidCursor))?;
                let builtin = self.prompts.list();
                Ok(self
                    .with_external(ItemKind::Prompts, builtin, exchange)
                    .await)
            }
            "prompts/get" => {
                let name = required_str(params, "name")?;
                let request = ItemRequest::Prompt {
                    name,
                    arguments: object_param(params, "arguments")?,
                };
                if self.tools.owns_item(&request) {
                    return self.fetch_external(request, exchange).await.map_err(
                        |error| match error {
                            ItemError::Unknown => {
                                McpError::InvalidParams(format!("unknown prompt: {name}"))
                            }
                            other => item_error(other),
                        },
                    );
                }
                let prompt = self
                    .prompts
                    .get(name)
                    .ok_or_else(|| McpError::InvalidParams(format!("unknown prompt: {name}")))?;
                let arguments = object_param(params, "arguments")?;
                let retry = round_trip(params).map_err(McpError::InvalidParams)?;
                let request = PromptRequest {
                    arguments: &arguments,
                    input_responses: retry.input_responses,
                };
                match (prompt.render)(request) {
                    PromptOutput::Messages(messages) => {
                        let mut result = single("messages", messages);
                        if let Some(d) = &prompt.description {
                            result.insert("description".into(), d.clone().into());
                        }
                        Ok(result)
                    }
                    PromptOutput::InputRequired {
                        input_requests,
                        request_state,
                    } => {
                        if era != Era::Modern {
                            return Err(McpError::InvalidParams(format!(
                                "{name} needs a client that speaks MCP {}",
                                MODERN_VERSION
                            )));
                        }
                        call_result(ToolOutput::InputRequired {
                            input_requests,
                            request_state,
                        })
                        .map(mark_input_required)
                    }
                    PromptOutput::Invalid(why) => Err(McpError::InvalidParams(why)),
                }
            }
            "completion/complete" => Ok(single(
                "completion",
                json!({ "values": [], "total": 0, "hasMore": false }),
            )),
            other => Err(McpError::MethodNotFound(other.into())),
        }
    }

    /// A list result of `kind`: the built-in entries, then those of the caller's own
    /// MCP servers, with a note for each server left out and a `ttlMs` no longer than
    /// the external part holds.
    async fn with_external(
        &self,
        kind: ItemKind,
        builtin: Vec<Value>,
        exchange: &Exchange<'_>,
    ) -> Map<String, Value> {
        let key = match kind {
            ItemKind::Resources => "resources",
            ItemKind::ResourceTemplates => "resourceTemplates",
            ItemKind::Prompts => "prompts",
        };
        let external = self
            .tools
            .external_items(exchange.caller, exchange.visible, kind)
            .await;
        let mut items = builtin;
        items.extend(external.items);
        let mut result = single(key, items.into());
        if !external.unavailable.is_empty() {
            result.insert(
                "_meta".into(),
                json!({ META_UNAVAILABLE_SERVERS: results::unavailable_notes(&external.unavailable) }),
            );
        }
        if let Some(valid_for) = external.valid_for {
            result.insert("ttlMs".into(), results::ttl_ms(valid_for).into());
        }
        result
    }

    async fn fetch_external(
        &self,
        request: ItemRequest<'_>,
        exchange: &Exchange<'_>,
    ) -> Result<Map<String, Value>, ItemError> {
        self.tools
            .fetch_external(exchange.caller, exchange.visible, request)
            .await
    }

    async fn call_tool(
        &self,
        params: Option<&Map<String, Value>>,
        meta: &RequestMeta,
        era: Era,
        notifier: &Notifier,
        exchange: &Exchange<'_>,
    ) -> Result<Map<String, Value>, McpError> {
        let params =
            params.ok_or_else(|| McpError::InvalidParams("tools/call needs params".into()))?;
        let name = required_str(Some(params), "name")?;
        if era == Era::Modern {
            self.check_param_headers(name, params.get("arguments"), exchange)?;
        }
        let context = CallContext {
            client_capabilities: &meta.client_capabilities,
            client_name: meta.client_name.as_deref(),
            retry: round_trip(Some(params)),
            notifier,
            source: exchange.source,
        };
        let answer = self
            .tools
            .call(
                exchange.caller,
                exchange.visible,
                name,
                params.get("arguments"),
                context,
            )
            .await;
        let result = results::tool_result(answer, name, era);
        let failed = match &result {
            Ok(result) => result.get("isError") == Some(&Value::Bool(true)),
            Err(_) => true,
        };
        if failed {
            observe::note_tool_failed();
        }
        result
    }

    /// A built-in tool's `x-mcp-header` parameters against the request's `Mcp-Param-*`
    /// headers. Tools the caller cannot see, and external tools, are not checked here.
    fn check_param_headers(
        &self,
        name: &str,
        arguments: Option<&Value>,
        exchange: &Exchange<'_>,
    ) -> Result<(), McpError> {
        let external = self.tools.external.as_ref().is_some_and(|s| s.owns(name));
        match self.tools.registry.spec(name) {
            Some(spec) if !external && (exchange.visible)(name) => {
                param_headers::validate(&spec.input_schema, arguments, exchange.headers)
            }
            _ => Ok(()),
        }
    }

    /// `tools/list`, the hot path: each tool's listing was serialised once (at
    /// registration, or when a server's snapshot was taken) and is written into the
    /// response as it is, never re-parsed.
    async fn tools_list(
        &self,
        id: &Value,
        params: Option<&Value>,
        era: Era,
        exchange: &Exchange<'_>,
    ) -> Reply {
        let cursor = params
            .and_then(Value::as_object)
            .and_then(|p| p.get("cursor"));
        let list = match self
            .tools
            .list(exchange.caller, exchange.visible, cursor)
            .await
        {
            Ok(list) => list,
            Err(error) => return error_reply(id, &error.into(), era),
        };
        let tools = list.listings();
        if list.next_cursor.is_none() && list.unavailable().is_empty() && list.valid_for().is_none()
        {
            let tail = self.list_tails.of(&self.declaration, era);
            return Reply::Raw {
                status: StatusCode::OK,
                body: plain_tools_list(id, &tools, tail).into(),
            };
        }
        let mut result = Map::new();
        if let Some(next) = &list.next_cursor {
            result.insert("nextCursor".into(), next.clone().into());
        }
        if !list.unavailable().is_empty() {
            result.insert(
                "_meta".into(),
                json!({ META_UNAVAILABLE_SERVERS: results::unavailable_notes(list.unavailable()) }),
            );
        }
        let mut result = shape(&self.declaration, result, "tools/list", era);
        if let Some(valid_for) = list.valid_for() {
            result.insert("ttlMs".into(), results::ttl_ms(valid_for).into());
        }
        let envelope = jsonrpc::Envelope {
            jsonrpc: "2.0",
            id,
            result: WithTools {
                tools: &tools,
                rest: &result,
            },
        };
        match serde_json::to_vec(&envelope) {
            Ok(body) => Reply::Raw {
                status: StatusCode::OK,
                body: body.into(),
            },
            Err(_) => error_reply(id, &McpError::Internal, era),
        }
    }
}

/// Adds what the era and the method require to a result.
fn shape(
    declaration: &Declaration,
    mut result: Map<String, Value>,
    method: &str,
    era: Era,
) -> Map<String, Value> {
    if matches!(
        method,
        "server/discover"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
    ) {
        result.entry("ttlMs").or_insert(CACHE_TTL_MS.into());
        let scope = if method == "server/discover" {
            "public"
        } else {
            "private"
        };
        result.insert("cacheScope".into(), scope.into());
    }
    if era == Era::Modern {
        result
            .entry("resultType")
            .or_insert_with(|| RESULT_COMPLETE.into());
        let meta = result.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(META_SERVER_INFO.into(), declaration.server_info.clone());
        }
    } else if method == "server/discover" {
        result.insert(
            "_meta".into(),
            json!({ META_SERVER_INFO: declaration.server_info }),
        );
    }
    result
}

/// A multi-round (MRTR) retry's `inputResponses` and `requestState`, or why they are
/// malformed.
fn round_trip(params: Option<&Map<String, Value>>) -> Result<Retry<'_>, String> {
    let input_responses = match params.and_then(|p| p.get("inputResponses")) {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => return Err("inputResponses must be an object".into()),
    };
    let request_state = match params.and_then(|p| p.get("requestState")) {
        None | Some(Value::Null) => None,
        Some(Value::String(state)) => Some(state.as_str()),
        Some(_) => return Err("requestState must be a string".into()),
    };
    Ok(Retry {
        input_responses,
        request_state,
    })
}

/// What a failed read or get of an external item answers (unknown items are mapped
/// by the method, which knows what was asked for).
fn item_error(error: ItemError) -> McpError {
    match error {
        ItemError::Unknown => McpError::InvalidParams("unknown item".into()),
        ItemError::Invalid(why) => McpError::InvalidParams(why),
        ItemError::Failed(why) => McpError::Upstream(why),
    }
}

fn error_reply(id: &Value, error: &McpError, era: Era) -> Reply {
    Reply::Json {
        status: error.http_status(era),
        body: jsonrpc::error(id, error),
    }
}

fn single(key: &str, value: Value) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(key.into(), value);
    map
}

fn required_str<'p>(
    params: Option<&'p Map<String, Value>>,
    key: &str,
) -> Result<&'p str, McpError> {
    match params.and_then(|p| p.get(key)) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(McpError::InvalidParams(format!(
            "{key} must be a non-empty string"
        ))),
        None => Err(McpError::InvalidParams(format!("{key} is required"))),
    }
}

fn object_param(
    params: Option<&Map<String, Value>>,
    key: &str,
) -> Result<Map<String, Value>, McpError> {
    match params.and_then(|p| p.get(key)) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(McpError::InvalidParams(format!("{key} must be an object"))),
    }
}

fn cursor(params: Option<&Map<String, Value>>) -> Result<Option<&str>, McpError> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(McpError::InvalidCursor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    #[test]
    fn a_plain_tools_list_is_the_same_bytes_as_the_shaped_envelope() {
        let declaration = Declaration::new("mirobody", true);
        let tails = ListTails::default();
        let one = RawValue::from_string(r#"{"name":"a","inputSchema":{}}"#.into()).unwrap();
        let two = RawValue::from_string(r#"{"name":"b \"q\""}"#.into()).unwrap();
        for era in [Era::Modern, Era::Legacy, Era::Unknown] {
            for tools in [vec![], vec![&*one], vec![&*one, &*two]] {
                for id in [json!(7), json!("req-\"x\"")] {
                    let rest = shape(&declaration, Map::new(), "tools/list", era);
                    let envelope = jsonrpc::Envelope {
                        jsonrpc: "2.0",
                        id: &id,
                        result: WithTools {
                            tools: &tools,
                            rest: &rest,
                        },
                    };
                    let shaped = serde_json::to_vec(&envelope).unwrap();
                    let plain = plain_tools_list(&id, &tools, tails.of(&declaration, era));
                    assert_eq!(
                        String::from_utf8(plain).unwrap(),
                        String::from_utf8(shaped).unwrap(),
                        "{era:?}"
                    );
                }
            }
        }
        // What the tail says, worked out from A4 by hand (not from `shape` itself).
        let modern = format!("{{{}}}", tails.of(&declaration, Era::Modern));
        let modern: Value = serde_json::from_str(&modern).unwrap();
        assert_eq!(modern["resultType"], "complete");
        assert_eq!(modern["cacheScope"], "private");
        assert_eq!(modern["ttlMs"], 300_000);
        assert_eq!(modern["_meta"][META_SERVER_INFO]["name"], "mirobody");
        let legacy = format!("{{{}}}", tails.of(&declaration, Era::Legacy));
        let legacy: Value = serde_json::from_str(&legacy).unwrap();
        assert_eq!(legacy, json!({"cacheScope": "private", "ttlMs": 300_000}));
    }
}
