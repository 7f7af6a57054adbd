//! Tool answers as the wire carries them: the `tools/call` result for each
//! [`ToolOutput`] (a data tool's `{success, data | error}` becomes text content,
//! `structuredContent` and `isError`), the JSON-RPC error for each [`ToolError`], the
//! per-era rule for outputs a legacy client cannot take, the notes of a `tools/list`
//! page and its `ttlMs` when the caller's external tools are in it, and the JSON-RPC
//! notification for each [`Notification`] a tool sent.
//!
//! The one place a tool's answer becomes JSON-RPC: tools and tool sources never shape
//! results. Adds nothing that depends on the method (`resultType`, caching fields,
//! `_meta`): the dispatcher does that for every result, taking a listing's `ttlMs`
//! from [`ttl_ms`].

use serde_json::{Map, Value, json};

use super::era::Era;
use super::error::McpError;
use crate::tools::{Notification, ToolError, ToolOutput, Unavailable};
use crate::wire::{MODERN_VERSION, RESULT_INPUT_REQUIRED};

impl From<ToolError> for McpError {
    fn from(error: ToolError) -> Self {
        match error {
            ToolError::UnknownTool(name) => McpError::UnknownTool(name),
            ToolError::InvalidCursor => McpError::InvalidCursor,
            ToolError::InvalidParams(why) => McpError::InvalidParams(why),
        }
    }
}

/// The `tools/call` result for what the toolbox answered about the tool `name`.
pub(super) fn tool_result(
    answer: Result<ToolOutput, ToolError>,
    name: &str,
    era: Era,
) -> Result<Map<String, Value>, McpError> {
    let output = answer?;
    // A legacy client cannot answer input requests, and the capabilities it declared
    // in `initialize` are not remembered (no sessions): both become tool errors.
    if era != Era::Modern
        && matches!(
            output,
            ToolOutput::InputRequired { .. } | ToolOutput::MissingCapability(_)
        )
    {
        return call_result(ToolOutput::Error(format!(
            "{name} needs a client that speaks MCP {MODERN_VERSION}"
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

/// The `tools/call` result for a tool's output (without `resultType`, which the
/// dispatcher adds by era).
pub(super) fn call_result(output: ToolOutput) -> Result<Map<String, Value>, McpError> {
    match output {
        ToolOutput::Json(value) => Ok(json_result(value)),
        ToolOutput::Result(result) => Ok(result),
        ToolOutput::Forwarded {
            content,
            structured_content,
            is_error,
        } => {
            let mut result = Map::new();
            result.insert("content".into(), content.into());
            if let Some(structured) = structured_content {
                result.insert("structuredContent".into(), structured);
            }
            if is_error {
                result.insert("isError".into(), true.into());
            }
            Ok(result)
        }
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

pub(super) fn mark_input_required(mut result: Map<String, Value>) -> Map<String, Value> {
    result.insert("resultType".into(), RESULT_INPUT_REQUIRED.into());
    result
}

/// The notes of a `tools/list` page on the caller's servers that did not answer.
pub(super) fn unavailable_notes(unavailable: &[Unavailable]) -> Value {
    unavailable
        .iter()
        .map(|note| json!({ "server": note.server, "error": note.error }))
        .collect()
}

/// The `ttlMs` of a `tools/list` page that lists the caller's external tools (or
/// notes about them): never longer than the usual one, nor than what is left of the
/// validity of the snapshots it was made from, so a client re-lists once they expire.
pub(super) fn ttl_ms(valid_for: std::time::Duration) -> u64 {
    u64::try_from(valid_for.as_millis())
        .unwrap_or(u64::MAX)
        .min(super::dispatch::CACHE_TTL_MS)
}

/// The JSON-RPC notification for what a tool sent while it ran.
pub(super) fn notification(sent: Notification) -> Value {
    match sent {
        Notification::Progress {
            token,
            progress,
            total,
            message,
        } => {
            let mut params = json!({ "progressToken": token, "progress": progress });
            if let Some(total) = total {
                params["total"] = total.into();
            }
            if let Some(message) = message {
                params["message"] = message.into();
            }
            json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params })
        }
        Notification::Log { level, data } => json!({
            "jsonrpc": "2.0", "method": "notifications/message",
            "params": { "level": level, "data": data }
        }),
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
    let mut value = value;
    let shown = match value.get_mut("data") {
        Some(data) => data.take(),
        None => value,
    };
    let mut result = text_result(compact(&shown), false);
    let structured = match shown {
        Value::Object(_) => shown,
        other => Value::Object(Map::from_iter([("data".to_string(), other)])),
    };
    result.insert("structuredContent".into(), structured);
    result
}

/// `value` as compact JSON, written straight into the string (`Value`'s `Display`
/// goes through a formatter, about twice the work).
pub(crate) fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn text_result(text: String, is_error: bool) -> Map<String, Value> {
    // Built by hand: `json!` would copy the text through `to_value`.
    let mut item = Map::new();
    item.insert("type".into(), "text".into());
    item.insert("text".into(), text.into());
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(vec![Value::Object(item)]));
    result.insert("isError".into(), Value::Bool(is_error));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Notifier;

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

    #[test]
    fn notifications_are_json_rpc_and_only_what_the_request_asked_for() {
        let notifier = Notifier::new(Some(json!("t1")), Some("info".into()));
        notifier.progress(50.0, Some(100.0), Some("half"));
        notifier.progress(60.0, None, None);
        notifier.log("debug", json!("too detailed"));
        notifier.log("warning", json!({"n": 1}));
        let sent: Vec<Value> = notifier.take().into_iter().map(notification).collect();
        assert_eq!(
            sent,
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "t1", "progress": 50.0, "total": 100.0, "message": "half"}}),
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "t1", "progress": 60.0}}),
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "warning", "data": {"n": 1}}}),
            ]
        );
        assert!(notifier.take().is_empty());
        let silent = Notifier::new(None, None);
        silent.progress(1.0, None, None);
        silent.log("emergency", json!("x"));
        assert!(silent.take().is_empty());
    }

    #[test]
    fn forwarded_results_keep_content_structure_and_error_flag_only() {
        let result = json!({
            "content": [{"type": "text", "text": "ok"}],
            "structuredContent": {"n": 1},
            "isError": true,
            "_meta": {"x": 1},
            "resultType": "complete"
        });
        let forwarded = |result| call_result(ToolOutput::forwarded(result)).unwrap();
        let out = forwarded(result);
        assert_eq!(
            Value::Object(out),
            json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}, "isError": true})
        );
        assert_eq!(
            Value::Object(forwarded(json!({"isError": "yes"}))),
            json!({"content": []})
        );
    }
}
