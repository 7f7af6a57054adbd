//! Method dispatch for one MCP request: parse once, decide the era, validate, run
//! the method, shape the result for the era.
//!
//! Owns the method table of A2 and the per-era result rules (A4: `resultType`,
//! serverInfo in `_meta`, caching fields). Does not know HTTP routing, CORS or how
//! a caller is authenticated: the caller arrives already resolved.

use std::sync::Arc;

use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};

use super::capabilities::Declaration;
use super::era::{self, Era, META_SERVER_INFO, RequestMeta};
use super::error::McpError;
use super::jsonrpc::{self, Incoming};
use crate::clock::Clock;
use crate::domain::DataPresence;
use crate::external::{ExternalListing, ExternalServers, TOOL_PREFIX};
use crate::identity::LoginPrompts;
use crate::prompts::{PromptOutput, PromptRequest, Prompts};
use crate::resources::{Resources, Substitutions};
use crate::store::Store;
use crate::tools::{
    CallContext, Caller, DataKind, Notifier, Registry, ToolOutput, ToolSpec, call_result,
};

/// Where a `tools/list` result notes the caller's external servers that did not answer.
pub const META_UNAVAILABLE_SERVERS: &str = "io.mirobody/unavailableServers";

/// How long clients may cache list and discovery results.
pub const CACHE_TTL_MS: u64 = 300_000;

/// The MCP server: everything a request needs, built once per process.
pub struct McpServer {
    pub declaration: Declaration,
    pub tools: Registry,
    pub resources: Resources,
    pub prompts: Prompts,
    /// Answers which kinds of data a caller holds (A5 gating) and which MCP servers they
    /// registered (D8), in one read per `tools/list`.
    pub store: Arc<dyn Store>,
    /// What an anonymous call to a tool that needs a user gets (A7 step 3).
    pub login: LoginPrompts,
    pub clock: Arc<dyn Clock>,
    /// The caller's own external MCP servers (D8); `None` without keys.
    pub external: Option<Arc<ExternalServers>>,
}

/// One request as the transport hands it over.
pub struct Exchange<'a> {
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// The resolved caller, when there is one.
    pub caller: Option<&'a Caller>,
    /// Which tools, by name, this request may see and call (agent scoping).
    pub visible: &'a (dyn Fn(&str) -> bool + Sync),
    /// The public origin for resource substitution (A9).
    pub server_url: &'a str,
}

/// What goes back on the wire.
#[derive(Debug)]
pub enum Reply {
    /// A JSON-RPC response (result or error) with its HTTP status.
    Json {
        status: StatusCode,
        body: Value,
        era: Era,
    },
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
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    let level = match era {
        Era::Modern => meta
            .and_then(|m| m.get("io.modelcontextprotocol/logLevel"))
            .and_then(Value::as_str)
            .map(String::from),
        _ => None,
    };
    Notifier::new(token, level)
}

impl McpServer {
    pub async fn handle(&self, exchange: Exchange<'_>) -> Reply {
        let incoming = match jsonrpc::parse(exchange.body) {
            Ok(incoming) => incoming,
            Err(rejected) => {
                let era = era::classify(None, exchange.headers);
                return error_reply(&rejected.id, &rejected.error, era);
            }
        };
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
        let reply = match self.run(&incoming, era, &meta, &notifier, &exchange).await {
            Ok(result) => Reply::Json {
                status: StatusCode::OK,
                body: jsonrpc::result(&id, self.shape(result, &incoming.method, era)),
                era,
            },
            Err(error) => error_reply(&id, &error, era),
        };
        let notifications = notifier.take();
        match reply {
            Reply::Json {
                status: StatusCode::OK,
                body,
                ..
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
                Ok(single("resources", self.resources.list().into()))
            }
            "resources/templates/list" => {
                cursor(params)?.map_or(Ok(()), |_| Err(McpError::InvalidCursor))?;
                Ok(single(
                    "resourceTemplates",
                    self.resources.list_templates().into(),
                ))
            }
            "resources/read" => {
                let uri = required_str(params, "uri")?;
                let token = exchange
                    .headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                let subs = Substitutions {
                    server_url: exchange.server_url,
                    token,
                };
                let contents = self
                    .resources
                    .read(uri, &subs)
                    .ok_or_else(|| McpError::ResourceNotFound(uri.into()))?;
                Ok(single("contents", contents))
            }
            "prompts/list" => {
                cursor(params)?.map_or(Ok(()), |_| Err(McpError::InvalidCursor))?;
                Ok(single("prompts", self.prompts.list().into()))
            }
            "prompts/get" => {
                let name = required_str(params, "name")?;
                let prompt = self
                    .prompts
                    .get(name)
                    .ok_or_else(|| McpError::InvalidParams(format!("unknown prompt: {name}")))?;
                let arguments = object_param(params, "arguments")?;
                let (input_responses, request_state) = round_trip(params)?;
                let request = PromptRequest {
                    arguments: &arguments,
                    input_responses,
                    request_state,
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
                                era::MODERN_VERSION
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
        if let (Some(external), Some(caller)) = (&self.external, exchange.caller)
            && name.starts_with(TOOL_PREFIX)
        {
            if !(exchange.visible)(name) {
                return Err(McpError::UnknownTool(name.into()));
            }
            let arguments = object_param(Some(params), "arguments")?;
            return external.call(caller, name, arguments).await;
        }
        let spec = self
            .tools
            .spec(name)
            .ok_or_else(|| McpError::UnknownTool(name.into()))?;
        if !(exchange.visible)(spec.name) {
            // A tool hidden from this caller is not callable by it either.
            return Err(McpError::UnknownTool(name.into()));
        }
        let arguments = object_param(Some(params), "arguments")?;
        if spec.needs_caller && exchange.caller.is_none() {
            // A7 step 3: the call succeeds with a login prompt instead of running.
            return match self.login.prompt(self.clock.now()).await {
                Ok(prompt) => call_result(ToolOutput::Json(prompt)),
                Err(error) => {
                    tracing::warn!(%error, "login prompt could not be stored");
                    call_result(ToolOutput::Error(
                        "sign-in is unavailable right now; try again shortly".into(),
                    ))
                }
            };
        }
        let (input_responses, request_state) = round_trip(Some(params))?;
        let context = CallContext {
            caller: if spec.needs_caller {
                exchange.caller
            } else {
                None
            },
            client_capabilities: &meta.client_capabilities,
            input_responses,
            request_state,
            notifier,
        };
        let output = self.tools.call(name, arguments, context).await?;
        // A legacy client cannot answer input requests, and the capabilities it declared
        // in `initialize` are not remembered (no sessions): both become tool errors.
        if era != Era::Modern
            && matches!(
                output,
                ToolOutput::InputRequired { .. } | ToolOutput::MissingCapability(_)
            )
        {
            return call_result(ToolOutput::Error(format!(
                "{name} needs a client that speaks MCP {}",
                era::MODERN_VERSION
            )));
        }
        let input_required = matches!(output, ToolOutput::InputRequired { .. });
        let result = call_result(output)?;
        Ok(if input_required {
            mark_input_required(result)
        } else {
            result
        })
    }

    /// `tools/list`, the hot path: each tool's listing was serialised once at
    /// registration and is written into the response as it is, never re-parsed.
    async fn tools_list(
        &self,
        id: &Value,
        params: Option<&Value>,
        era: Era,
        exchange: &Exchange<'_>,
    ) -> Reply {
        // A signed-in caller's data presence (A5) and external servers (D8) come from
        // one store read; the external listing then contacts the servers.
        let (presence, external) = match exchange.caller {
            None => (None, ExternalListing::default()),
            Some(caller) => {
                let (presence, servers) =
                    match self.store.presence_and_mcp_servers(&caller.user_id).await {
                        Ok((presence, servers)) => (Some(presence), Ok(servers)),
                        Err(error) => {
                            tracing::warn!(%error, "availability probe failed; listing every tool");
                            (None, Err(error))
                        }
                    };
                let external = match &self.external {
                    Some(external) => external.listing(caller, servers).await,
                    None => ExternalListing::default(),
                };
                (presence, external)
            }
        };
        let visible = |spec: &ToolSpec| (exchange.visible)(spec.name) && gate(spec, presence);
        let page = match cursor(params.and_then(Value::as_object))
            .and_then(|c| self.tools.page(c, &visible))
        {
            Ok(page) => page,
            Err(error) => return error_reply(id, &error, era),
        };
        let mut result = Map::new();
        if let Some(next) = &page.next_cursor {
            result.insert("nextCursor".into(), next.clone().into());
        }
        // External tools follow the built-in ones, on the last page (with at most
        // `PAGE_SIZE` built-in tools, always the first).
        let external = match page.next_cursor {
            None => external,
            Some(_) => Default::default(),
        };
        if !external.unavailable.is_empty() {
            result.insert(
                "_meta".into(),
                json!({ META_UNAVAILABLE_SERVERS: external.unavailable }),
            );
        }
        let tools: Vec<&serde_json::value::RawValue> = page
            .tools
            .iter()
            .copied()
            .chain(
                external
                    .tools()
                    .filter(|(name, _)| (exchange.visible)(name))
                    .map(|(_, listing)| listing),
            )
            .collect();
        let result = self.shape(result, "tools/list", era);
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

    /// Adds what the era and the method require to a result.
    fn shape(&self, mut result: Map<String, Value>, method: &str, era: Era) -> Map<String, Value> {
        if matches!(
            method,
            "server/discover"
                | "tools/list"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
                | "prompts/list"
        ) {
            result.insert("ttlMs".into(), CACHE_TTL_MS.into());
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
                .or_insert_with(|| "complete".into());
            let meta = result.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(
                    META_SERVER_INFO.into(),
                    self.declaration.server_info.clone(),
                );
            }
        } else if method == "server/discover" {
            result.insert(
                "_meta".into(),
                json!({ META_SERVER_INFO: self.declaration.server_info }),
            );
        }
        result
    }
}

/// A5: a data tool is listed only when the caller holds its kind of data (or when
/// that is unknown: anonymous callers and failed probes see everything).
fn gate(spec: &ToolSpec, presence: Option<DataPresence>) -> bool {
    match (spec.requires, presence) {
        (Some(DataKind::Health), Some(p)) => p.health,
        (Some(DataKind::Genotype), Some(p)) => p.genotype,
        _ => true,
    }
}

fn mark_input_required(mut result: Map<String, Value>) -> Map<String, Value> {
    result.insert("resultType".into(), "input_required".into());
    result
}

/// A multi-round retry's `inputResponses` and `requestState` (MRTR).
type RoundTrip<'p> = (Option<&'p Map<String, Value>>, Option<&'p str>);

fn round_trip(params: Option<&Map<String, Value>>) -> Result<RoundTrip<'_>, McpError> {
    let input_responses = match params.and_then(|p| p.get("inputResponses")) {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map),
        Some(_) => {
            return Err(McpError::InvalidParams(
                "inputResponses must be an object".into(),
            ));
        }
    };
    let request_state = match params.and_then(|p| p.get("requestState")) {
        None | Some(Value::Null) => None,
        Some(Value::String(state)) => Some(state.as_str()),
        Some(_) => {
            return Err(McpError::InvalidParams(
                "requestState must be a string".into(),
            ));
        }
    };
    Ok((input_responses, request_state))
}

fn error_reply(id: &Value, error: &McpError, era: Era) -> Reply {
    Reply::Json {
        status: error.http_status(era),
        body: jsonrpc::error(id, error),
        era,
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
