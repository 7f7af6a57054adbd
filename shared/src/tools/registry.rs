//! The registry of built-in tools: one per process, built once per cold start,
//! shared by every caller.
//!
//! Owns what a tool is (name, description, input schema, whether it needs the caller,
//! an async call), deterministic ordering by name, cursor pagination and argument
//! checking. Does not resolve callers, touch storage, decide which tools a caller may
//! see (the toolbox passes it a filter) or shape results (`mcp` does).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::notifier::Notifier;
use super::output::{ToolError, ToolOutput};

/// How a tool presents itself in `tools/list`.
#[derive(Debug, Clone)]
pub(crate) struct ToolSpec {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    /// A JSON Schema object; a built-in tool's is derived from its `Params` type
    /// (`input_schema`). Argument names outside `properties` are refused unless
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
pub(crate) enum DataKind {
    Health,
    Genotype,
}

impl ToolSpec {
    pub(crate) fn new(name: &'static str, description: &'static str, input_schema: Value) -> Self {
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
    pub(crate) fn requires(mut self, kind: DataKind) -> Self {
        self.requires = Some(kind);
        self
    }

    /// The annotations every data tool of the original carries.
    pub(crate) fn read_only(mut self) -> Self {
        self.annotations = Some(json!({
            "readOnlyHint": true, "destructiveHint": false, "openWorldHint": false
        }));
        self
    }

    pub(crate) fn needs_caller(mut self) -> Self {
        self.needs_caller = true;
        self
    }
}

pub(crate) use crate::identity::Caller;

/// Everything a tool gets for one call.
#[cfg_attr(not(feature = "fixtures"), allow(dead_code))] // some fields: the fixture pack only
pub(crate) struct ToolCall<'a> {
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

pub(crate) trait Tool: Send + Sync + 'static {
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
pub(crate) struct ToolPage<'r> {
    pub tools: Vec<&'r RawValue>,
    pub next_cursor: Option<String>,
}

/// All tools, sorted by name. Built once; read-only afterwards.
#[derive(Default)]
pub(crate) struct Registry {
    entries: BTreeMap<&'static str, Entry>,
}

/// Tools per `tools/list` page.
pub(crate) const PAGE_SIZE: usize = 100;

impl Registry {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Registration is one line per tool; a duplicate name is a bug.
    pub(crate) fn register(&mut self, tool: impl Tool) -> &mut Self {
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

    pub(crate) fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entries.get(name).map(|e| &e.spec)
    }

    /// One page of the tools `visible` admits, in name order.
    pub(crate) fn page(
        &self,
        cursor: Option<&str>,
        visible: &dyn Fn(&ToolSpec) -> bool,
    ) -> Result<ToolPage<'_>, ToolError> {
        let offset = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(cursor).ok_or(ToolError::InvalidCursor)?,
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

    /// Checks the arguments against the tool's schema and runs it; arguments the schema
    /// refuses are a tool error the model can correct.
    pub(crate) async fn call(
        &self,
        name: &str,
        call: ToolCall<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| ToolError::UnknownTool(name.into()))?;
        if let Err(why) = check_arguments(
            &entry.spec.input_schema,
            entry.strict_arguments,
            &call.arguments,
        ) {
            return Ok(ToolOutput::Error(why));
        }
        Ok(entry.tool.call(call).await)
    }
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
    for (name, value) in arguments {
        if let Some(property) = properties.and_then(|p| p.get(name)) {
            check_bounds(name, property, value)?;
        }
    }
    Ok(())
}

/// The schema a value of this JSON type answers to: the `oneOf`/`anyOf` branch of that
/// `type` when there is one, else the schema itself.
fn branch<'s>(schema: &'s Value, value: &Value) -> &'s Value {
    let kind = match value {
        Value::String(_) => "string",
        Value::Array(_) => "array",
        _ => return schema,
    };
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find(|b| b.get("type").and_then(Value::as_str) == Some(kind))
        .unwrap_or(schema)
}

/// The schema's bounds, checked before the tool does any work:
/// `maxLength` and `enum` (strings, the length in characters), `minimum` and `maximum`
/// (numbers), `maxItems` (arrays, then each item against `items`). A tool's schema is
/// derived from its `Params` type (`params.rs`), so these are the bounds it declares.
/// Counting stops at the limit, so an oversized argument costs no more than the limit.
fn check_bounds(name: &str, schema: &Value, value: &Value) -> Result<(), String> {
    let schema = branch(schema, value);
    let limit = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
    };
    match value {
        Value::String(text) => {
            if let Some(max) = limit("maxLength")
                && text.chars().nth(max).is_some()
            {
                return Err(format!("{name} is longer than {max} characters"));
            }
            match schema.get("enum").and_then(Value::as_array) {
                Some(allowed) if !allowed.contains(value) => {
                    let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
                    Err(format!("{name} must be one of {}", allowed.join(", ")))
                }
                _ => Ok(()),
            }
        }
        Value::Number(number) => {
            let (Some(n), minimum, maximum) = (
                number.as_f64(),
                schema.get("minimum").and_then(Value::as_number),
                schema.get("maximum").and_then(Value::as_number),
            ) else {
                return Ok(());
            };
            let below = minimum.is_some_and(|min| min.as_f64().is_some_and(|min| n < min));
            let above = maximum.is_some_and(|max| max.as_f64().is_some_and(|max| n > max));
            if !below && !above {
                return Ok(());
            }
            Err(match (minimum, maximum) {
                (Some(min), Some(max)) => format!("{name} must be between {min} and {max}"),
                (Some(min), None) => format!("{name} must be at least {min}"),
                (None, _) => format!("{name} must be at most {}", maximum.expect("above it")),
            })
        }
        Value::Array(items) => {
            if let Some(max) = limit("maxItems")
                && items.len() > max
            {
                return Err(format!("{name} may list at most {max} items"));
            }
            match schema.get("items") {
                Some(item_schema) => items
                    .iter()
                    .try_for_each(|item| check_bounds(name, item_schema, item)),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
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

    fn call<'a>(
        arguments: Map<String, Value>,
        caps: &'a Map<String, Value>,
        notifier: &'a Notifier,
    ) -> ToolCall<'a> {
        ToolCall {
            arguments,
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
            Err(ToolError::InvalidCursor)
        ));
    }

    #[test]
    fn max_items_and_max_length_are_enforced_per_branch() {
        let schema = json!({
            "type": "object",
            "properties": {
                "ids": {
                    "oneOf": [
                        { "type": "string", "maxLength": 5 },
                        { "type": "array", "maxItems": 2, "items": { "type": "string", "maxLength": 3 } }
                    ]
                }
            }
        });
        let check = |value: Value| {
            let mut arguments = Map::new();
            arguments.insert("ids".into(), value);
            check_arguments(&schema, true, &arguments)
        };
        assert!(check(json!("abcde")).is_ok());
        assert!(check(json!(["abc", "d"])).is_ok());
        assert!(
            check(json!("abcdef"))
                .unwrap_err()
                .contains("longer than 5")
        );
        assert!(
            check(json!(["a", "b", "c"]))
                .unwrap_err()
                .contains("at most 2")
        );
        assert!(
            check(json!(["abcd"]))
                .unwrap_err()
                .contains("longer than 3")
        );
        assert!(check(json!(42)).is_ok());
    }

    #[test]
    fn ranges_and_enums_are_enforced() {
        let schema = json!({
            "type": "object",
            "properties": {
                "limit": { "type": "integer", "minimum": 1, "maximum": 500 },
                "floor": { "type": "integer", "minimum": 0 },
                "aggregate": { "type": "string", "enum": ["none", "day"] }
            }
        });
        let check = |name: &str, value: Value| {
            let mut arguments = Map::new();
            arguments.insert(name.into(), value);
            check_arguments(&schema, true, &arguments)
        };
        assert!(check("limit", json!(1)).is_ok());
        assert!(check("limit", json!(500)).is_ok());
        for refused in [
            json!(0),
            json!(501),
            json!(-3),
            json!(9_223_372_036_854_775_807_u64),
        ] {
            assert_eq!(
                check("limit", refused).unwrap_err(),
                "limit must be between 1 and 500"
            );
        }
        assert_eq!(
            check("floor", json!(-1)).unwrap_err(),
            "floor must be at least 0"
        );
        assert!(check("aggregate", json!("day")).is_ok());
        assert_eq!(
            check("aggregate", json!("hour")).unwrap_err(),
            "aggregate must be one of \"none\", \"day\""
        );
        assert!(
            check("limit", json!("ten")).is_ok(),
            "types are the tool's own business"
        );
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
            .call("echo", call(args, &caps, &notifier))
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
}
