//! The product's MCP client under the official conformance suite's client scenarios
//! (feature `testing`; `scripts/conformance` runs it through `tests/clients/conformance_client.rs`).
//!
//! Owns one script, the one the gateway itself follows with a person's server: connect
//! through the address guard (loopback allowed, as in local development), list the tools,
//! call each one kept, end the session. Arguments come from each tool's input schema:
//! every required property gets a sample of its type, and the optional properties the
//! suite's header scenarios look at get the awkward values they test (non-ASCII, spaces,
//! control characters), and a property named `schema` another tool's schema as kept.
//!
//! Must not grow behaviour of its own: what the suite checks is [`McpConnection`] as the
//! gateway uses it. Never compiled into a deployed function.

use std::time::Duration;

use http::HeaderMap;
use serde_json::{Map, Value, json};

use super::{AddressGuard, GuardPolicy, GuardedHttp};
use super::{Dialect, McpConnection, RemoteTool};
use crate::config::Runtime;
use crate::wire::MODERN_VERSION;

/// Each request's bound, as the gateway's own default.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the script against the scenario server at `url`. `version` is the revision the
/// suite asks for (`MCP_CONFORMANCE_PROTOCOL_VERSION`): a dated one before 2026-07-28
/// means the handshake; none means the spec's own probe. Returns one line per step.
pub async fn run(url: &str, version: Option<&str>) -> Result<Vec<String>, String> {
    let policy = GuardPolicy::insecure_loopback(Runtime::Local)
        .ok_or("the loopback policy is refused in this runtime")?;
    let http = GuardedHttp::new(AddressGuard::system(policy));
    let prefer = match version {
        Some(version) if version != MODERN_VERSION => Some(Dialect::Handshake),
        _ => None,
    };
    let connection = McpConnection::connect(&http, url, &HeaderMap::new(), TIMEOUT, prefer)
        .await
        .map_err(|err| format!("connect: {err}"))?;
    let mut steps = vec![format!(
        "connected: {:?}, protocol {}",
        connection.dialect(),
        connection.protocol_version()
    )];
    let list = connection
        .list_tools()
        .await
        .map_err(|err| format!("tools/list: {err}"))?;
    steps.push(format!("tools/list: {} kept", list.tools.len()));
    for tool in &list.tools {
        let arguments = arguments_for(tool, &list.tools);
        let outcome = match connection.call_tool(tool, arguments).await {
            Ok(result) => format!("answered, isError {}", result["isError"] == json!(true)),
            Err(err) => format!("failed: {err}"),
        };
        steps.push(format!("tools/call {}: {outcome}", tool.name));
    }
    connection.close(TIMEOUT).await;
    Ok(steps)
}

/// A sample argument of every required property, and the header scenarios' optional
/// ones (by name) with the values their checks are about. A required object property
/// named `schema` gets another listed tool's input schema as this client kept it: the
/// schema-preservation scenario reads back what the gateway would pass on.
fn arguments_for(tool: &RemoteTool, listing: &[RemoteTool]) -> Map<String, Value> {
    let mut arguments = Map::new();
    let Some(properties) = tool.input_schema["properties"].as_object() else {
        return arguments;
    };
    let required: Vec<&str> = tool.input_schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, schema) in properties {
        let kept_schema = listing
            .iter()
            .find(|other| other.name != tool.name)
            .map(|other| other.input_schema.clone());
        let value = match awkward_value(name) {
            Some(value) => value,
            None if name == "schema" && schema["type"] == "object" && kept_schema.is_some() => {
                kept_schema.unwrap_or_default()
            }
            None if required.contains(&name.as_str()) => sample(schema),
            None => continue,
        };
        arguments.insert(name.clone(), value);
    }
    arguments
}

/// The values the `x-mcp-header` scenarios mirror into headers (SEP-2243): each needs
/// the encoding its check names.
fn awkward_value(name: &str) -> Option<Value> {
    let value = match name {
        "non_ascii_val" => json!("Zürich 東京"),
        "whitespace_val" => json!("  padded  "),
        "leading_space_val" => json!(" leading"),
        "trailing_space_val" => json!("trailing "),
        "internal_space_val" => json!("in between"),
        "control_char_val" => json!("bell\u{7}here"),
        "crlf_val" => json!("line\r\nbreak"),
        "tab_val" => json!("\ttabbed"),
        "empty_val" => json!(""),
        "debug" => json!(false),
        _ => return None,
    };
    Some(value)
}

/// A value of the property's type that satisfies the simple constraints the scenarios use.
fn sample(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("integer") => json!(3),
        Some("number") => json!(2.5),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        Some("null") => Value::Null,
        _ => json!("sample-1"),
    }
}
