//! The tool registry (E3): one per process, built once per cold start, shared by
//! every caller.
//!
//! Owns what a tool is (name, description, input schema, whether it needs the caller,
//! an async call), deterministic ordering by name, cursor pagination, argument
//! checking, and the mapping from a tool's output to a `tools/call` result (A6).
//! Does not resolve callers, touch storage or decide which tools a caller may see;
//! the dispatcher passes it a filter.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::mcp::McpError;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a tool presents itself in `tools/list`.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    /// A JSON Schema object. Argument names outside `properties` are refused unless
    /// the schema sets `additionalProperties` to anything but `false`.
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Option<Value>,
    /// The tool acts for a user (it takes `user_info`, A7): the server resolves the
    /// caller; the client can never supply one.
    pub needs_caller: bool,
    /// The kind of data the caller must hold for the tool to be listed (A5).
    pub requires: Option<DataKind>,
}

/// Kinds of user data a tool can depend on (availability gating, A5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    Health,
    Genotype,
}

impl ToolSpec {
    pub fn new(name: &'static str, description: &'static str, input_schema: Value) -> Self {
        ToolSpec {
            name,
            title: None,
            description,
            input_schema,
            output_schema: None,
            annotations: None,
            needs_caller: false,
            requires: None,
        }
    }

    /// Listed only for callers who hold this kind of data (A5).
    pub fn requires(mut self, kind: DataKind) -> Self {
        self.requires = Some(kind);
        self
    }

    /// The annotations every data tool of the original carries.
    pub fn read_only(mut self) -> Self {
        self.annotations = Some(json!({
            "readOnlyHint": true, "destructiveHint": false, "openWorldHint": false
        }));
        self
    }

    pub fn needs_caller(mut self) -> Self {
        self.needs_caller = true;
        self
    }
}

pub use crate::identity::Caller;

/// Everything a tool gets for one call.
pub struct ToolCall<'a> {
    pub arguments: Map<String, Value>,
    /// Set for tools that need the caller; `None` for the others.
    pub caller: Option<&'a Caller>,
    /// The client capabilities the request declared (2026-07-28 `_meta`, or `{}`).
    pub client_capabilities: &'a Map<String, Value>,
    /// Multi-round (MRTR) retry: the client's answers and the state we handed out.
    pub input_responses: Option<&'a Map<String, Value>>,
    pub request_state: Option<&'a str>,
    /// Progress and log notifications for this request's response stream.
    pub notifier: &'a Notifier,
}

/// Collects the notifications a tool sends while it runs (progress, log messages).
/// The transport writes them to the request's event stream before the result.
#[derive(Debug, Default)]
pub struct Notifier {
    progress_token: Option<Value>,
    log_level: Option<String>,
    sent: Mutex<Vec<Value>>,
}

impl Notifier {
    /// `progress_token` and `log_level` come from the request's `_meta`: without
    /// them the client asked for no notifications, and none are sent.
    pub fn new(progress_token: Option<Value>, log_level: Option<String>) -> Self {
        Notifier {
            progress_token,
            log_level,
            sent: Mutex::default(),
        }
    }

    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        self.push(
            json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params }),
        );
    }

    /// A log message, sent only when the request asked for this level or a lower one.
    pub fn log(&self, level: &str, data: Value) {
        const LEVELS: [&str; 8] = [
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        ];
        let rank = |l: &str| LEVELS.iter().position(|x| *x == l);
        let Some(wanted) = self.log_level.as_deref().and_then(rank) else {
            return;
        };
        if rank(level).is_some_and(|r| r >= wanted) {
            self.push(json!({
                "jsonrpc": "2.0", "method": "notifications/message",
                "params": { "level": level, "data": data }
            }));
        }
    }

    fn push(&self, notification: Value) {
        self.sent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(notification);
    }

    pub fn take(&self) -> Vec<Value> {
        std::mem::take(
            &mut *self
                .sent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}

/// What a tool returns.
#[derive(Debug, Clone)]
pub enum ToolOutput {
    /// The product's tool shape: an object with `success` and `data` or `error`,
    /// mapped to a result as A6 says.
    Json(Value),
    /// A ready `CallToolResult` body (`content`, optional `isError`,
    /// `structuredContent`), for tools that return images, audio or resources.
    Result(Map<String, Value>),
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
    pub fn data(answer: Result<Value, String>) -> Self {
        match answer {
            Ok(data) => ToolOutput::Json(json!({ "success": true, "data": data })),
            Err(message) => ToolOutput::Json(json!({ "success": false, "error": message })),
        }
    }

    /// What a tool that reads the caller's own data returns to an anonymous call.
    pub fn sign_in_first() -> Self {
        ToolOutput::Error("sign in first: this tool reads your own data".into())
    }
}

pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> ToolSpec;
    fn call<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput>;
}

struct Entry {
    spec: ToolSpec,
    tool: Arc<dyn Tool>,
    /// The tool's `tools/list` entry, serialised once at registration.
    listing: Box<RawValue>,
    strict_arguments: bool,
}

/// A page of `tools/list`.
pub struct ToolPage<'r> {
    pub tools: Vec<&'r RawValue>,
    pub next_cursor: Option<String>,
}

/// All tools, sorted by name. Built once; read-only afterwards.
#[derive(Default)]
pub struct Registry {
    entries: BTreeMap<&'static str, Entry>,
}

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 100;

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Registration is one line per tool; a duplicate name is a bug.
    pub fn register(&mut self, tool: impl Tool) -> &mut Self {
        let spec = tool.spec();
        let listing = listing_json(&spec);
        let strict_arguments = matches!(
            spec.input_schema.get("additionalProperties"),
            None | Some(Value::Bool(false))
        );
        let previous = self.entries.insert(
            spec.name,
            Entry {
                spec,
                tool: Arc::new(tool),
                listing,
                strict_arguments,
            },
        );
        assert!(previous.is_none(), "two tools registered under one name");
        self
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.keys().copied()
    }

    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entries.get(name).map(|e| &e.spec)
    }

    /// One page of the tools `visible` admits, in name order.
    pub fn page(
        &self,
        cursor: Option<&str>,
        visible: &dyn Fn(&ToolSpec) -> bool,
    ) -> Result<ToolPage<'_>, McpError> {
        let offset = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(cursor).ok_or(McpError::InvalidCursor)?,
        };
        let mut shown = self
            .entries
            .values()
            .filter(|e| visible(&e.spec))
            .skip(offset);
        let tools: Vec<&RawValue> = shown
            .by_ref()
            .take(PAGE_SIZE)
            .map(|e| &*e.listing)
            .collect();
        let next_cursor = shown.next().map(|_| encode_cursor(offset + PAGE_SIZE));
        Ok(ToolPage { tools, next_cursor })
    }

    /// Checks the arguments against the tool's schema and runs it.
    pub async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        context: CallContext<'_>,
    ) -> Result<ToolOutput, McpError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| McpError::UnknownTool(name.into()))?;
        if let Err(why) =
            check_arguments(&entry.spec.input_schema, entry.strict_arguments, &arguments)
        {
            return Ok(ToolOutput::Error(why));
        }
        let call = ToolCall {
            arguments,
            caller: context.caller,
            client_capabilities: context.client_capabilities,
            input_responses: context.input_responses,
            request_state: context.request_state,
            notifier: context.notifier,
        };
        Ok(entry.tool.call(call).await)
    }
}

/// What the dispatcher knows about the request, handed to the tool.
#[derive(Clone, Copy)]
pub struct CallContext<'a> {
    pub caller: Option<&'a Caller>,
    pub client_capabilities: &'a Map<String, Value>,
    pub input_responses: Option<&'a Map<String, Value>>,
    pub request_state: Option<&'a str>,
    pub notifier: &'a Notifier,
}

fn listing_json(spec: &ToolSpec) -> Box<RawValue> {
    let mut tool = Map::new();
    tool.insert("name".into(), spec.name.into());
    if let Some(title) = spec.title {
        tool.insert("title".into(), title.into());
    }
    tool.insert("description".into(), spec.description.into());
    tool.insert("inputSchema".into(), spec.input_schema.clone());
    if let Some(output) = &spec.output_schema {
        tool.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = &spec.annotations {
        tool.insert("annotations".into(), annotations.clone());
    }
    RawValue::from_string(Value::Object(tool).to_string()).expect("a JSON object is valid JSON")
}

/// Unknown argument names are refused by name (the original silently dropped them);
/// required ones must be present. Types are the tool's own business.
fn check_arguments(
    schema: &Value,
    strict: bool,
    arguments: &Map<String, Value>,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if strict {
        let unknown: Vec<&str> = arguments
            .keys()
            .filter(|k| !properties.is_some_and(|p| p.contains_key(*k)))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let known: Vec<&str> = properties
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Err(format!(
                "unknown argument(s): {}; this tool accepts: {}",
                unknown.join(", "),
                if known.is_empty() {
                    "no arguments".into()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    let missing: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|r| arguments.get(*r).is_none_or(Value::is_null))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing required argument(s): {}",
            missing.join(", ")
        ));
    }
    Ok(())
}

fn encode_cursor(offset: usize) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("tools:{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("tools:")?
        .parse()
        .ok()
}

/// A6: the `tools/call` result for a tool's output (without `resultType`, which
/// the dispatcher adds by era).
pub fn call_result(output: ToolOutput) -> Result<Map<String, Value>, McpError> {
    match output {
        ToolOutput::Json(value) => Ok(json_result(value)),
        ToolOutput::Result(result) => Ok(result),
        ToolOutput::Error(message) => Ok(text_result(message, true)),
        ToolOutput::InputRequired {
            input_requests,
            request_state,
        } => {
            let mut result = Map::new();
            result.insert("inputRequests".into(), Value::Object(input_requests));
            if let Some(state) = request_state {
                result.insert("requestState".into(), Value::String(state));
            }
            Ok(result)
        }
        ToolOutput::MissingCapability(required) => Err(McpError::MissingCapability(required)),
        ToolOutput::InvalidParams(why) => Err(McpError::InvalidParams(why)),
    }
}

fn json_result(value: Value) -> Map<String, Value> {
    let success = value
        .get("success")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !success {
        let text = match value.get("error") {
            Some(Value::String(message)) => message.clone(),
            Some(other) => other.to_string(),
            None => value.to_string(),
        };
        return text_result(text, true);
    }
    let shown = value.get("data").unwrap_or(&value);
    let mut result = text_result(shown.to_string(), false);
    let structured = match shown {
        Value::Object(_) => shown.clone(),
        other => json!({ "data": other }),
    };
    result.insert("structuredContent".into(), structured);
    result
}

fn text_result(text: String, is_error: bool) -> Map<String, Value> {
    let mut result = Map::new();
    result.insert("content".into(), json!([{ "type": "text", "text": text }]));
    result.insert("isError".into(), Value::Bool(is_error));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo(&'static str);
    impl Tool for Echo {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new(
                self.0,
                "echoes",
                json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
            )
        }
        fn call<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
            Box::pin(
                async move { ToolOutput::Json(json!({"success": true, "data": call.arguments})) },
            )
        }
    }

    fn no_caps() -> Map<String, Value> {
        Map::new()
    }

    fn context<'a>(caps: &'a Map<String, Value>, notifier: &'a Notifier) -> CallContext<'a> {
        CallContext {
            caller: None,
            client_capabilities: caps,
            input_responses: None,
            request_state: None,
            notifier,
        }
    }

    #[test]
    fn tools_are_listed_by_name_and_paginated() {
        let mut registry = Registry::new();
        let names: Vec<&'static str> = (0..(PAGE_SIZE + 5))
            .map(|i| &*format!("t{i:03}").leak())
            .collect();
        for name in names.iter().rev() {
            registry.register(Echo(name));
        }
        let first = registry.page(None, &|_| true).unwrap();
        assert_eq!(first.tools.len(), PAGE_SIZE);
        assert!(first.tools[0].get().contains("\"t000\""));
        let second = registry
            .page(first.next_cursor.as_deref(), &|_| true)
            .unwrap();
        assert_eq!(second.tools.len(), 5);
        assert!(second.next_cursor.is_none());
        assert!(matches!(
            registry.page(Some("bogus"), &|_| true),
            Err(McpError::InvalidCursor)
        ));
    }

    #[tokio::test]
    async fn unknown_arguments_are_refused_by_name() {
        let mut registry = Registry::new();
        registry.register(Echo("echo"));
        let caps = no_caps();
        let mut args = Map::new();
        args.insert("text".into(), json!("hi"));
        args.insert("user_info".into(), json!({"user_id": "someone-else"}));
        let notifier = Notifier::default();
        let out = registry
            .call("echo", args, context(&caps, &notifier))
            .await
            .unwrap();
        let ToolOutput::Error(message) = out else {
            panic!("expected a tool error")
        };
        assert!(
            message.contains("user_info") && message.contains("text"),
            "{message}"
        );
    }

    #[test]
    fn a6_success_maps_data_to_text_and_structured_content() {
        let ok = call_result(ToolOutput::Json(json!({"success": true, "data": [1, 2]}))).unwrap();
        assert_eq!(ok["isError"], json!(false));
        assert_eq!(ok["content"][0]["text"], json!("[1,2]"));
        assert_eq!(ok["structuredContent"], json!({"data": [1, 2]}));
        let failed = call_result(ToolOutput::Json(
            json!({"success": false, "error": "no data"}),
        ))
        .unwrap();
        assert_eq!(failed["isError"], json!(true));
        assert_eq!(failed["content"][0]["text"], json!("no data"));
        assert!(failed.get("structuredContent").is_none());
    }
}
