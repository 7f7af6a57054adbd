//! The JSON-RPC 2.0 envelope: reading one request from a body, writing one response.
//!
//! Parses each body exactly once. Owns the A3 rules for bodies that are not a request
//! (garbage, batches, no `method`) and never panics on any input. Knows nothing
//! about MCP methods.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::error::McpError;
use crate::observe::MetaTrace;

/// One parsed JSON-RPC message from a client.
#[derive(Debug)]
pub(super) struct Incoming {
    /// `None` for a notification: it gets no response body.
    pub id: Option<Value>,
    pub method: String,
    pub params: Option<Value>,
}

/// Why a body could not be read as a request, with whatever id could be recovered
/// (every error echoes the request id when there is one).
#[derive(Debug)]
pub(super) struct Rejected {
    pub id: Value,
    pub error: McpError,
}

/// The envelope's members as they appear in the body, unparsed: only `params` (and a
/// small `id`) ever become a `Value` tree, so a hostile body (a batch, or junk members)
/// costs no more memory than its own bytes.
#[derive(Deserialize)]
struct Members<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    /// Read into its tree in the same pass (`null` reads as none).
    #[serde(default)]
    params: Option<Value>,
}

/// An MCP POST's body, parsed once: the request, or why it is not one.
/// `App::handle` parses it before the request's observation starts (its `_meta` names the
/// trace the request continues) and hands it to the dispatcher.
#[derive(Debug)]
pub(crate) struct McpBody(Result<Incoming, Rejected>);

impl McpBody {
    pub(crate) fn parse(body: &[u8]) -> McpBody {
        McpBody(parse(body))
    }

    pub(super) fn request(&self) -> Result<&Incoming, &Rejected> {
        self.0.as_ref()
    }

    /// The trace fields of its `params._meta`; `body` is the body it was parsed from,
    /// read again on its own only when it is not a request.
    pub(crate) fn meta_trace(&self, body: &[u8]) -> Option<MetaTrace> {
        match &self.0 {
            Ok(incoming) => incoming.params.as_ref().and_then(MetaTrace::of_params),
            Err(_) => MetaTrace::of_body(body),
        }
    }
}

pub(super) fn parse(body: &[u8]) -> Result<Incoming, Rejected> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    // One pass for a well-formed request object (its params into their tree, the other
    // members raw); a body that is not one is read again only to say why.
    let members = match first {
        Some(b'{') => serde_json::from_slice::<Members<'_>>(body).ok(),
        _ => None,
    };
    let Some(members) = members else {
        return Err(not_a_request(body, first));
    };
    let raw = |member: Option<&RawValue>| {
        member.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
    };
    // A present id that is null (or unreadable) stays present, and is refused below.
    let id = raw(members.id)
        .filter(|id| !id.is_null())
        .or(members.id.map(|_| Value::Null));
    if id
        .as_ref()
        .is_some_and(|id| !(id.is_string() || id.is_i64() || id.is_u64()))
    {
        return Err(reject(Value::Null, "id must be a string or an integer"));
    }
    let echo = id.clone().unwrap_or(Value::Null);
    if !members.jsonrpc.is_some_and(is_version_2) {
        return Err(reject(echo, "jsonrpc must be \"2.0\""));
    }
    // Valid JSON that does not read as a string is another kind of value.
    let method = match members
        .method
        .map(|raw| serde_json::from_str::<String>(raw.get()))
    {
        Some(Ok(method)) => method,
        Some(Err(_)) => return Err(reject(echo, "method must be a string")),
        None => return Err(reject(echo, "the request has no method")),
    };
    let params = members.params;
    if let Some(p) = &params
        && !(p.is_object() || p.is_array() || p.is_null())
    {
        return Err(Rejected {
            id: echo,
            error: McpError::InvalidParams("params must be an object".into()),
        });
    }
    Ok(Incoming {
        id,
        method,
        params: params.filter(|p| !p.is_null()),
    })
}

/// Whether a `jsonrpc` member is the string "2.0" (as written by every client, or with
/// escapes, read as a string).
fn is_version_2(raw: &RawValue) -> bool {
    raw.get() == r#""2.0""#
        || serde_json::from_str::<String>(raw.get()).is_ok_and(|version| version == "2.0")
}

/// Why a body that did not read as a request object is none: not JSON at all (checked
/// without building anything), a batch, another value, or an object with a member twice.
fn not_a_request(body: &[u8], first: Option<&u8>) -> Rejected {
    if serde_json::from_slice::<IgnoredAny>(body).is_err() {
        return Rejected {
            id: Value::Null,
            error: McpError::Parse,
        };
    }
    match first {
        Some(b'[') => reject(
            Value::Null,
            "batch requests are not supported; send one request per POST",
        ),
        // A member named twice is refused (serde), where a tree kept the last one.
        _ => reject(Value::Null, "the body must be a JSON-RPC request object"),
    }
}

fn reject(id: Value, why: &str) -> Rejected {
    Rejected {
        id,
        error: McpError::InvalidRequest(why.into()),
    }
}

/// A response envelope for results serialised straight to bytes.
#[derive(serde::Serialize)]
pub(super) struct Envelope<'a, R: serde::Serialize> {
    pub jsonrpc: &'static str,
    pub id: &'a Value,
    pub result: R,
}

pub(super) fn result(id: &Value, result: Map<String, Value>) -> Value {
    // Built by hand: `json!` would copy the whole result through `to_value`.
    let mut envelope = Map::new();
    envelope.insert("jsonrpc".into(), "2.0".into());
    envelope.insert("id".into(), id.clone());
    envelope.insert("result".into(), Value::Object(result));
    Value::Object(envelope)
}

pub(super) fn error(id: &Value, error: &McpError) -> Value {
    let mut body = json!({ "code": error.code(), "message": error.message() });
    if let Some(data) = error.data() {
        body["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_batches_and_missing_methods_are_rejected_with_the_a3_codes() {
        assert_eq!(parse(b"{nope").unwrap_err().error.code(), -32700);
        assert_eq!(parse(b"").unwrap_err().error.code(), -32700);
        assert_eq!(parse(b"[]").unwrap_err().error.code(), -32600);
        assert_eq!(parse(b"42").unwrap_err().error.code(), -32600);
        let no_method = parse(br#"{"jsonrpc":"2.0","id":7}"#).unwrap_err();
        assert_eq!((no_method.error.code(), no_method.id), (-32600, json!(7)));
    }

    #[test]
    fn the_version_and_the_method_are_strings_however_written() {
        // A3: "2.0" with an escape is still "2.0"; 2.0 the number, or "2.1", is not.
        let escaped = parse(br#"{"jsonrpc":"\u0032.0","id":1,"method":"tools\/list"}"#);
        assert_eq!(escaped.unwrap().method, "tools/list");
        for refused in [
            &br#"{"jsonrpc":2.0,"id":1,"method":"tools/list"}"#[..],
            br#"{"jsonrpc":"2.1","id":1,"method":"tools/list"}"#,
            br#"{"id":1,"method":"tools/list"}"#,
        ] {
            let rejected = parse(refused).unwrap_err();
            assert_eq!(rejected.error.code(), -32600, "{rejected:?}");
            assert!(
                format!("{rejected:?}").contains("jsonrpc must be"),
                "{rejected:?}"
            );
        }
        for method in [
            &br#"{"jsonrpc":"2.0","id":1,"method":7}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":["tools/list"]}"#,
        ] {
            let rejected = parse(method).unwrap_err();
            assert_eq!(
                (rejected.error.code(), rejected.id.clone()),
                (-32600, json!(1))
            );
            assert!(
                format!("{rejected:?}").contains("method must be a string"),
                "{rejected:?}"
            );
        }
    }

    #[test]
    fn a_request_without_id_is_a_notification() {
        let n = parse(br#"{"jsonrpc":"2.0","method":"tools/list"}"#).unwrap();
        assert!(n.id.is_none());
    }
}
