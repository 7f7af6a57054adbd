//! `Mcp-Param-*` header validation (2026-07-28 transport, "Custom Headers from Tool
//! Parameters").
//!
//! Owns the server's side of `x-mcp-header`: for a `tools/call` of a tool whose input
//! schema marks parameters with `x-mcp-header`, each marked argument present in the
//! body must arrive mirrored in its `Mcp-Param-{Name}` header (plain, or in the
//! `=?base64?…?=` form), and a header must not name a value the body lacks. Headers are
//! untrusted: their number and size are bounded before anything is decoded. Knows
//! nothing about which tool runs; the dispatcher hands it the schema. Error messages
//! name headers and argument paths, never values.

use http::HeaderMap;
use serde_json::{Map, Value};

use super::error::McpError;
use crate::wire::{PARAM_HEADER_ANNOTATION, PARAM_HEADER_PREFIX, decode_header_value};

/// At most this many `Mcp-Param-*` headers on one request.
const MAX_PARAM_HEADERS: usize = 64;
/// At most this many bytes in one `Mcp-Param-*` value, before decoding.
const MAX_PARAM_HEADER_BYTES: usize = 8 * 1024;
/// How deep `properties` chains are followed when looking for `x-mcp-header`.
const MAX_SCHEMA_DEPTH: usize = 8;

/// One parameter the schema mirrors into a header.
struct Mirrored<'s> {
    /// The chain of `properties` keys from the schema root to the parameter.
    path: Vec<&'s str>,
    /// The `x-mcp-header` name: the header is `Mcp-Param-{header}`.
    header: &'s str,
}

/// Checks the request's `Mcp-Param-*` headers against `arguments` for a tool with
/// input schema `schema`. A tool without `x-mcp-header` parameters needs no header.
pub(crate) fn validate(
    schema: &Value,
    arguments: Option<&Value>,
    headers: &HeaderMap,
) -> Result<(), McpError> {
    let mut mirrored = Vec::new();
    collect(schema, &mut Vec::new(), &mut mirrored, 0);
    if mirrored.is_empty() {
        return Ok(());
    }
    let count = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(PARAM_HEADER_PREFIX))
        .count();
    if count > MAX_PARAM_HEADERS {
        return Err(McpError::HeaderMismatch(format!(
            "more than {MAX_PARAM_HEADERS} Mcp-Param headers"
        )));
    }
    let arguments = arguments.and_then(Value::as_object);
    for param in &mirrored {
        check(param, arguments, headers)?;
    }
    Ok(())
}

/// Every `x-mcp-header` reachable from the root through `properties` keys only.
fn collect<'s>(
    schema: &'s Value,
    path: &mut Vec<&'s str>,
    out: &mut Vec<Mirrored<'s>>,
    depth: usize,
) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        path.push(name);
        if let Some(header) = property
            .get(PARAM_HEADER_ANNOTATION)
            .and_then(Value::as_str)
        {
            out.push(Mirrored {
                path: path.clone(),
                header,
            });
        }
        collect(property, path, out, depth + 1);
        path.pop();
    }
}

fn check(
    param: &Mirrored<'_>,
    arguments: Option<&Map<String, Value>>,
    headers: &HeaderMap,
) -> Result<(), McpError> {
    let header_name = format!("{PARAM_HEADER_PREFIX}{}", param.header.to_ascii_lowercase());
    let display = format!("Mcp-Param-{}", param.header);
    let argument = format!("arguments.{}", param.path.join("."));
    let value = value_at(arguments, &param.path).filter(|v| !v.is_null());
    let mut sent = headers.get_all(header_name.as_str()).iter();
    let header = sent.next();
    if sent.next().is_some() {
        return Err(McpError::HeaderMismatch(format!(
            "{display} header is sent more than once"
        )));
    }
    let (value, header) = match (value, header) {
        (None, None) => return Ok(()),
        (Some(_), None) => {
            return Err(McpError::HeaderMismatch(format!(
                "{display} header is required: {argument} is in the body"
            )));
        }
        (None, Some(_)) => {
            return Err(McpError::HeaderMismatch(format!(
                "{display} header is sent but {argument} is not in the body"
            )));
        }
        (Some(value), Some(header)) => (value, header),
    };
    if header.len() > MAX_PARAM_HEADER_BYTES {
        return Err(McpError::HeaderMismatch(format!(
            "{display} header is longer than {MAX_PARAM_HEADER_BYTES} bytes"
        )));
    }
    let raw = std::str::from_utf8(header.as_bytes())
        .ok()
        .filter(|v| v.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b)))
        .ok_or_else(|| {
            McpError::HeaderMismatch(format!("{display} header has invalid characters"))
        })?;
    let decoded = decode_header_value(raw.trim_matches([' ', '\t'])).ok_or_else(|| {
        McpError::HeaderMismatch(format!("{display} header is not valid base64 UTF-8"))
    })?;
    if matches(value, &decoded) {
        Ok(())
    } else {
        Err(McpError::HeaderMismatch(format!(
            "{display} header does not match {argument}"
        )))
    }
}

fn value_at<'a>(arguments: Option<&'a Map<String, Value>>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = arguments?.get(*first)?;
    for key in rest {
        value = value.get(*key)?;
    }
    Some(value)
}

/// A header's decoded text against the body's value: strings exactly, numbers
/// numerically (`42.0` is `42`), booleans as `true` / `false`.
fn matches(value: &Value, header: &str) -> bool {
    match value {
        Value::String(text) => text == header,
        Value::Bool(flag) => header == if *flag { "true" } else { "false" },
        Value::Number(number) => match (number.as_i64(), header.parse::<i64>()) {
            (Some(body), Ok(sent)) => body == sent,
            _ => match (number.as_f64(), header.parse::<f64>()) {
                (Some(body), Ok(sent)) => sent.is_finite() && body == sent,
                _ => false,
            },
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "priority": { "type": "integer", "x-mcp-header": "Priority" },
            "verbose": { "type": "boolean", "x-mcp-header": "Verbose" },
            "target": { "type": "object", "properties": {
                "zone": { "type": "string", "x-mcp-header": "Zone" }
            }},
            "query": { "type": "string" }
        }})
    }

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        map
    }

    fn run(arguments: Value, pairs: &[(&str, &[u8])]) -> Result<(), McpError> {
        validate(&schema(), Some(&arguments), &headers(pairs))
    }

    #[test]
    fn matching_headers_pass_in_every_encoding() {
        let arguments = json!({
            "region": "Hello, 世界", "priority": 42, "verbose": false,
            "target": { "zone": "a" }, "query": "SELECT 1"
        });
        let pairs: &[(&str, &[u8])] = &[
            ("mcp-param-region", b"=?base64?SGVsbG8sIOS4lueVjA==?="),
            ("Mcp-Param-Priority", b" 42.0 "),
            ("MCP-PARAM-VERBOSE", b"false"),
            ("mcp-param-zone", b"a"),
            ("mcp-param-unknown", b"ignored"),
        ];
        assert_eq!(run(arguments, pairs), Ok(()));
        // Values without the whole sentinel are literal.
        let literal = json!({ "region": "=?base64?SGVsbG8=" });
        assert_eq!(
            run(literal, &[("mcp-param-region", b"=?base64?SGVsbG8=")]),
            Ok(())
        );
    }

    #[test]
    fn null_or_absent_values_need_no_header() {
        assert_eq!(run(json!({ "verbose": null, "query": "x" }), &[]), Ok(()));
        assert_eq!(run(json!({}), &[]), Ok(()));
        assert_eq!(validate(&schema(), None, &HeaderMap::new()), Ok(()));
        // A tool without annotations ignores every Mcp-Param header.
        let plain = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
        let sent = headers(&[("mcp-param-q", b"whatever")]);
        assert_eq!(validate(&plain, Some(&json!({ "q": "x" })), &sent), Ok(()));
    }

    #[test]
    fn missing_mismatching_and_badly_encoded_headers_are_refused() {
        let refused = |arguments: Value, pairs: &[(&str, &[u8])]| {
            let error = run(arguments, pairs).unwrap_err();
            assert_eq!(error.code(), -32020, "{error:?}");
            error.message()
        };
        let message = refused(json!({ "region": "us-west1" }), &[]);
        assert!(message.contains("Mcp-Param-Region"), "{message}");
        assert!(!message.contains("us-west1"), "values stay out: {message}");
        refused(json!({ "region": "us" }), &[("mcp-param-region", b"eu")]);
        refused(json!({ "region": "US" }), &[("mcp-param-region", b"us")]);
        refused(json!({ "priority": 42 }), &[("mcp-param-priority", b"43")]);
        refused(
            json!({ "priority": 42 }),
            &[("mcp-param-priority", b"forty")],
        );
        refused(
            json!({ "verbose": true }),
            &[("mcp-param-verbose", b"True")],
        );
        refused(json!({ "target": { "zone": "a" } }), &[]);
        // Bad padding, bad alphabet, not UTF-8.
        for bad in [
            &b"=?base64?SGVsbG8?="[..],
            b"=?base64?SGVs!!!bG8=?=",
            b"=?base64?/w==?=",
        ] {
            refused(json!({ "region": "Hello" }), &[("mcp-param-region", bad)]);
        }
        // Non-ASCII bytes in the raw value.
        refused(
            json!({ "region": "é" }),
            &[("mcp-param-region", "é".as_bytes())],
        );
        // A header naming a value the body lacks, or sent twice.
        refused(json!({}), &[("mcp-param-region", b"us")]);
        refused(
            json!({ "region": "us" }),
            &[("mcp-param-region", b"us"), ("mcp-param-region", b"us")],
        );
    }

    #[test]
    fn header_count_and_size_are_bounded_before_decoding() {
        let long = format!("=?base64?{}?=", "A".repeat(MAX_PARAM_HEADER_BYTES));
        let error = run(
            json!({ "region": "x" }),
            &[("mcp-param-region", long.as_bytes())],
        )
        .unwrap_err();
        assert!(error.message().contains("longer than"), "{error:?}");
        let names: Vec<String> = (0..=MAX_PARAM_HEADERS)
            .map(|i| format!("mcp-param-extra{i}"))
            .collect();
        let pairs: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"1"[..])).collect();
        let error = run(json!({}), &pairs).unwrap_err();
        assert!(error.message().contains("more than"), "{error:?}");
    }
}
