//! W3C Trace Context in: which trace a request continues.
//!
//! Sources, in order of precedence:
//! 1. the MCP request's `params._meta.traceparent` (the 2026-07-28 convention): the context
//!    the calling agent set for this very MCP request;
//! 2. the HTTP `traceparent` header: the context of the HTTP hop (a proxy or an HTTP
//!    library may set one of its own, nearer to us but further from the model's call);
//! 3. in Lambda, the X-Ray header's `Root` (its 24 + 8 hex digits as the W3C trace id) and
//!    `Parent`, so X-Ray and the log lines show one id;
//! 4. a new trace.
//!
//! `tracestate` is taken only from the source whose `traceparent` won. Everything is
//! bounded and validated strictly (version `00`, exactly 55 characters, lower-case hex, ids
//! not all zero, one header only); anything else is ignored, never an error and never echoed.

use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;

use super::random_hex;

/// A `traceparent` value of version `00` is exactly this long.
const TRACEPARENT_LEN: usize = 55;
/// W3C: vendors must propagate at least 512 characters of `tracestate`; we keep no more.
const TRACESTATE_MAX: usize = 512;
/// The X-Ray header Lambda sets is short; a longer one is not Lambda's.
const XRAY_MAX: usize = 256;

/// The trace a request continues (or starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceContext {
    /// 32 lower-case hex.
    pub(crate) trace_id: String,
    /// The caller's span (16 lower-case hex), when the request continued one.
    pub(crate) parent_span_id: Option<String>,
    /// The caller's sampled flag (a new trace is sampled).
    pub(crate) sampled: bool,
    /// The caller's `tracestate`, validated and bounded; kept for our own spans only
    /// (never sent to a user's MCP server: it is the caller's vendors' data).
    pub(crate) tracestate: Option<String>,
}

impl TraceContext {
    /// A trace of its own.
    pub(crate) fn new_trace() -> TraceContext {
        TraceContext {
            trace_id: random_hex::<16>(),
            parent_span_id: None,
            sampled: true,
            tracestate: None,
        }
    }

    /// The trace the request continues: see the module comment for the order.
    pub(crate) fn incoming(
        headers: &HeaderMap,
        mcp_meta: Option<MetaTrace>,
        xray_header: Option<&str>,
    ) -> TraceContext {
        if let Some(meta) = mcp_meta
            && let Some(mut context) = parse_traceparent(&meta.traceparent)
        {
            context.tracestate = meta.tracestate.as_deref().and_then(valid_tracestate);
            return context;
        }
        if let Some(value) = single(headers, "traceparent")
            && let Some(mut context) = parse_traceparent(value)
        {
            context.tracestate = single(headers, "tracestate").and_then(valid_tracestate);
            return context;
        }
        xray_header
            .and_then(parse_xray)
            .unwrap_or_else(TraceContext::new_trace)
    }
}

/// The one value of a header sent once, as text.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

fn is_lower_hex(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn not_all_zero(text: &str) -> bool {
    text.bytes().any(|b| b != b'0')
}

/// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, strictly.
pub(crate) fn parse_traceparent(value: &str) -> Option<TraceContext> {
    if value.len() != TRACEPARENT_LEN {
        return None;
    }
    let mut parts = value.split('-');
    let (version, trace_id, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || version != "00" {
        return None;
    }
    let shaped = trace_id.len() == 32 && parent.len() == 16 && flags.len() == 2;
    if !shaped || ![trace_id, parent, flags].iter().all(|p| is_lower_hex(p)) {
        return None;
    }
    if !not_all_zero(trace_id) || !not_all_zero(parent) {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(TraceContext {
        trace_id: trace_id.to_string(),
        parent_span_id: Some(parent.to_string()),
        sampled: flags & 1 == 1,
        tracestate: None,
    })
}

/// A `tracestate` kept only when short and plain (printable ASCII, as the W3C grammar's
/// keys and values are).
fn valid_tracestate(value: &str) -> Option<String> {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    (!value.is_empty() && value.len() <= TRACESTATE_MAX && plain).then(|| value.to_string())
}

/// `Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1`.
pub(crate) fn parse_xray(value: &str) -> Option<TraceContext> {
    if value.len() > XRAY_MAX {
        return None;
    }
    let field = |name: &str| {
        value
            .split(';')
            .filter_map(|part| part.trim().split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, v)| v)
    };
    let root = field("Root")?;
    let mut parts = root.split('-');
    let (version, time, random) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || version != "1" || time.len() != 8 || random.len() != 24 {
        return None;
    }
    let trace_id = format!("{time}{random}");
    if !is_lower_hex(&trace_id) || !not_all_zero(&trace_id) {
        return None;
    }
    let parent = field("Parent")
        .filter(|p| p.len() == 16 && is_lower_hex(p) && not_all_zero(p))
        .map(str::to_string);
    Some(TraceContext {
        trace_id,
        parent_span_id: parent,
        sampled: field("Sampled") != Some("0"),
        tracestate: None,
    })
}

/// The trace fields of an MCP request's `params._meta`, not yet checked: what
/// [`TraceContext::incoming`] continues first.
#[derive(Debug, Deserialize)]
pub(crate) struct MetaTrace {
    traceparent: String,
    tracestate: Option<String>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(rename = "_meta")]
    meta: Option<MetaTrace>,
}

impl MetaTrace {
    /// From the `params` of a request the MCP dispatcher parsed (the body is
    /// parsed once, and the dispatcher reads the same `params`).
    pub(crate) fn of_params(params: &Value) -> Option<MetaTrace> {
        let meta = params.get("_meta")?;
        Some(MetaTrace {
            traceparent: meta.get("traceparent")?.as_str()?.to_string(),
            tracestate: meta
                .get("tracestate")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// From a body that is not a JSON-RPC request the dispatcher takes (it answers an
    /// error): read on its own, without keeping anything else of the body (which the
    /// caller bounded before).
    pub(crate) fn of_body(body: &[u8]) -> Option<MetaTrace> {
        #[derive(Deserialize)]
        struct Request {
            params: Option<Params>,
        }
        let request: Request = serde_json::from_slice(body).ok()?;
        request.params?.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_continued() {
        let context = parse_traceparent(GOOD).unwrap();
        assert_eq!(context.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(context.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
        assert!(context.sampled);
        let unsampled = GOOD.replace("-01", "-00");
        assert!(!parse_traceparent(&unsampled).unwrap().sampled);
    }

    #[test]
    fn anything_else_is_ignored() {
        for bad in [
            "",
            "garbage",
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-0g",
            "00-0af7651916cd43dd8448eb211c8031-9c00f067aa0ba902b7-01",
            "00_0af7651916cd43dd8448eb211c80319c_00f067aa0ba902b7_01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        assert_eq!(
            parse_traceparent(&format!("{GOOD}{}", "0".repeat(5000))),
            None
        );
    }

    #[test]
    fn meta_wins_over_the_header_then_xray_then_new() {
        let meta = "00-11111111111111111111111111111111-2222222222222222-01";
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"traceparent":"{meta}","tracestate":"a=b"}}}}}}"#
        );
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", GOOD.parse().unwrap());
        headers.insert("tracestate", "x=y".parse().unwrap());
        let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        let both =
            TraceContext::incoming(&headers, MetaTrace::of_body(body.as_bytes()), Some(xray));
        let params: Value = serde_json::from_str::<Value>(&body).unwrap()["params"].clone();
        let parsed = TraceContext::incoming(&headers, MetaTrace::of_params(&params), Some(xray));
        assert_eq!(parsed, both);
        assert_eq!(both.trace_id, "11111111111111111111111111111111");
        assert_eq!(both.tracestate.as_deref(), Some("a=b"));
        let header = TraceContext::incoming(&headers, MetaTrace::of_body(b"{}"), Some(xray));
        assert_eq!(header.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(header.tracestate.as_deref(), Some("x=y"));
        let from_xray = TraceContext::incoming(&HeaderMap::new(), None, Some(xray));
        assert_eq!(from_xray.trace_id, "5759e988bd862e3fe1be46a994272793");
        assert_eq!(
            from_xray.parent_span_id.as_deref(),
            Some("53995c3f42cd8ad8")
        );
        let fresh = TraceContext::incoming(&HeaderMap::new(), None, Some("Root=nonsense"));
        assert_eq!(fresh.trace_id.len(), 32);
        assert_eq!(fresh.parent_span_id, None);
    }

    #[test]
    fn a_repeated_header_or_a_bad_meta_falls_through() {
        let mut headers = HeaderMap::new();
        headers.append("traceparent", GOOD.parse().unwrap());
        headers.append("traceparent", GOOD.parse().unwrap());
        let body = br#"{"params":{"_meta":{"traceparent":"00-zz"}}}"#;
        let context = TraceContext::incoming(&headers, MetaTrace::of_body(body), None);
        assert_ne!(context.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(context.parent_span_id, None);
    }
}
