//! The X-Ray export of a request's [`FinishedTrace`], without a sidecar.
//!
//! The path: segment documents over UDP to the daemon address Lambda provides
//! (`AWS_XRAY_DAEMON_ADDRESS`; with active tracing Lambda runs the daemon for the
//! function), each datagram the header `{"format":"json","version":1}\n` and one
//! document. Chosen over the alternatives because it needs nothing next to the
//! function: the ADOT layer and any OpenTelemetry OTLP exporter need a collector
//! extension running beside the function (a sidecar, with its own cold start and memory),
//! `opentelemetry-aws`'s X-Ray exporter brings the whole OpenTelemetry SDK for a
//! document this module writes in a page, and the X-Ray daemon crates on crates.io
//! (`xray-tracing` 0.0.1, `xray-lite`) are unmaintained forks of a 2018 client. The
//! documents are small JSON written with `serde_json`; the socket is `std`'s.
//!
//! What is sent: with active tracing Lambda itself records the function's segment and
//! hands its id as the trace header's `Parent`. Only when the header says `Sampled=1`,
//! this module sends the request's work as a subsegment of that `Parent`, under its
//! `Root`: named after the route, annotated with the route, the status, the request id
//! and (when the request continued a W3C trace of its own) the W3C trace id, with one
//! nested subsegment per [`SpanRecord`] (namespace `aws` with `aws.operation` for store
//! calls; `remote` with the host and `http.response.status` for forwarded MCP calls;
//! `fault`/`error`/`throttle` flags). Never a body, a path, a query, a user id.
//!
//! Sending never fails or slows the invocation: one non-blocking socket, every error
//! ignored, and a document larger than a datagram (64 KB) is split into the request's
//! subsegment and one document per span (at most [`MAX_DOCUMENTS`]); a span that still
//! does not fit is dropped.

use std::collections::{HashMap, HashSet};
use std::net::{SocketAddr, UdpSocket};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use mirobody::observe::{FinishedTrace, SpanKind, SpanRecord};
use serde_json::{Map, Value, json};

/// The daemon's header line, before every document.
const HEADER: &str = "{\"format\":\"json\",\"version\":1}\n";

/// The largest datagram sent (the header included).
const MAX_DATAGRAM: usize = 64 * 1024;

/// The most datagrams one request sends when its document is split.
pub(crate) const MAX_DOCUMENTS: usize = 256;

/// The longest trace header read (Lambda's is about 100 bytes).
const MAX_HEADER: usize = 1024;

/// X-Ray's longest segment name.
const MAX_NAME: usize = 200;

/// The deepest nesting of spans written (deeper spans hang from the request).
const MAX_DEPTH: usize = 16;

/// The parts of Lambda's trace header this export needs (`Root=1-…;Parent=…;Sampled=1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceHeader {
    pub(crate) root: String,
    pub(crate) parent: String,
    pub(crate) sampled: bool,
}

impl TraceHeader {
    /// `None` for a header without a well-formed `Root` and `Parent`.
    pub(crate) fn parse(header: &str) -> Option<TraceHeader> {
        if header.len() > MAX_HEADER {
            return None;
        }
        let (mut root, mut parent, mut sampled) = (None, None, false);
        for part in header.split(';') {
            match part.trim().split_once('=') {
                Some(("Root", value)) => root = Some(value),
                Some(("Parent", value)) => parent = Some(value),
                Some(("Sampled", value)) => sampled = value == "1",
                _ => {}
            }
        }
        let root = root.filter(|r| is_root(r))?;
        let parent = parent.filter(|p| is_hex(p, 16))?;
        Some(TraceHeader {
            root: root.to_string(),
            parent: parent.to_string(),
            sampled,
        })
    }

    /// The Root as a W3C trace id (`1-5759e988-bd86…` → `5759e988bd86…`).
    fn w3c_trace_id(&self) -> String {
        self.root[2..].replace('-', "")
    }
}

/// `1-` then 8 hex, `-`, 24 hex.
fn is_root(root: &str) -> bool {
    let mut parts = root.split('-');
    parts.next() == Some("1")
        && parts.next().is_some_and(|p| is_hex(p, 8))
        && parts.next().is_some_and(|p| is_hex(p, 24))
        && parts.next().is_none()
}

fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The datagrams for one request (header line included), empty unless sampled.
pub(crate) fn datagrams(
    header: &TraceHeader,
    request_id: &str,
    trace: &FinishedTrace,
) -> Vec<Vec<u8>> {
    if !header.sampled || !is_hex(&trace.span_id, 16) {
        return Vec::new();
    }
    let mut request = request_subsegment(header, request_id, trace);
    let spans: Vec<&SpanRecord> = trace
        .spans
        .iter()
        .filter(|s| is_hex(&s.span_id, 16))
        .collect();
    let nested = nest(&trace.span_id, &spans);
    request["subsegments"] = Value::Array(nested);
    if let Some(whole) = datagram(&request) {
        return vec![whole];
    }
    // Too large for one datagram: the request alone, then each span on its own,
    // hanging from its parent (the request's subsegment or another span's).
    request.as_object_mut().map(|r| r.remove("subsegments"));
    let mut out: Vec<Vec<u8>> = datagram(&request).into_iter().collect();
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    for span in spans {
        if out.len() >= MAX_DOCUMENTS {
            break;
        }
        let parent = if ids.contains(span.parent_span_id.as_str()) {
            span.parent_span_id.as_str()
        } else {
            trace.span_id.as_str()
        };
        let mut document = span_subsegment(span);
        document["type"] = json!("subsegment");
        document["trace_id"] = json!(header.root);
        document["parent_id"] = json!(parent);
        out.extend(datagram(&document));
    }
    out
}

/// The request's own subsegment (without its nested spans).
fn request_subsegment(header: &TraceHeader, request_id: &str, trace: &FinishedTrace) -> Value {
    let end = trace.end.unwrap_or_else(SystemTime::now);
    let start = trace.start.unwrap_or(end);
    let mut annotations = Map::new();
    annotations.insert("route".into(), json!(trace.route));
    annotations.insert("status".into(), json!(trace.status));
    if !request_id.is_empty() {
        annotations.insert("request_id".into(), json!(bounded(request_id, MAX_NAME)));
    }
    if is_hex(&trace.trace_id, 32) && trace.trace_id != header.w3c_trace_id() {
        annotations.insert("w3c_trace_id".into(), json!(trace.trace_id));
    }
    if let Some(method) = &trace.mcp_method {
        annotations.insert("mcp_method".into(), json!(bounded(method, MAX_NAME)));
    }
    if let Some(tool) = &trace.tool {
        annotations.insert("tool".into(), json!(bounded(tool, MAX_NAME)));
    }
    let mut document = json!({
        "name": name(trace.route),
        "id": trace.span_id,
        "trace_id": header.root,
        "parent_id": header.parent,
        "type": "subsegment",
        "start_time": seconds(start),
        "end_time": seconds(end),
        "annotations": annotations,
        "http": { "response": { "status": trace.status } },
    });
    flags(
        &mut document,
        trace.status >= 500,
        (400..500).contains(&trace.status),
        trace.status == 429,
    );
    document
}

/// One span as a subsegment (without its children).
fn span_subsegment(span: &SpanRecord) -> Value {
    let mut document = json!({
        "id": span.span_id,
        "start_time": seconds(span.start),
        "end_time": seconds(span.end),
    });
    match span.kind {
        SpanKind::Store => {
            let (service, operation) = span.name.split_once('.').unwrap_or((&span.name, ""));
            document["name"] = json!(name(service));
            document["namespace"] = json!("aws");
            if !operation.is_empty() {
                document["aws"] = json!({ "operation": bounded(operation, MAX_NAME) });
            }
        }
        SpanKind::Remote => {
            let host = span.remote_host.as_deref().unwrap_or("remote");
            document["name"] = json!(name(host));
            document["namespace"] = json!("remote");
            if let Some(status) = span.http_status {
                document["http"] = json!({ "response": { "status": status } });
            }
        }
    }
    flags(
        &mut document,
        span.error && !span.throttled,
        span.throttled,
        span.throttled,
    );
    document
}

/// The spans under `parent`, nested by their parent ids; spans no chain from `parent`
/// reaches (or deeper than [`MAX_DEPTH`]) hang from the top.
fn nest(parent: &str, spans: &[&SpanRecord]) -> Vec<Value> {
    let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
    for (at, span) in spans.iter().enumerate() {
        children
            .entry(span.parent_span_id.as_str())
            .or_default()
            .push(at);
    }
    let mut placed = vec![false; spans.len()];
    let mut top = subtree(parent, spans, &children, &mut placed, 0);
    for (at, span) in spans.iter().enumerate() {
        if !placed[at] {
            top.push(span_subsegment(span));
        }
    }
    top
}

fn subtree(
    parent: &str,
    spans: &[&SpanRecord],
    children: &HashMap<&str, Vec<usize>>,
    placed: &mut [bool],
    depth: usize,
) -> Vec<Value> {
    let Some(under) = children.get(parent) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &at in under {
        if placed[at] || depth >= MAX_DEPTH {
            continue;
        }
        placed[at] = true;
        let mut document = span_subsegment(spans[at]);
        let nested = subtree(&spans[at].span_id, spans, children, placed, depth + 1);
        if !nested.is_empty() {
            document["subsegments"] = Value::Array(nested);
        }
        out.push(document);
    }
    out
}

/// X-Ray's `fault` (server side), `error` (client side) and `throttle` flags; a throttle
/// is an error too.
fn flags(document: &mut Value, fault: bool, error: bool, throttle: bool) {
    if fault {
        document["fault"] = json!(true);
    }
    if error || throttle {
        document["error"] = json!(true);
    }
    if throttle {
        document["throttle"] = json!(true);
    }
}

/// The header and the document, if they fit in one datagram.
fn datagram(document: &Value) -> Option<Vec<u8>> {
    let mut bytes = HEADER.as_bytes().to_vec();
    serde_json::to_writer(&mut bytes, document).ok()?;
    (bytes.len() <= MAX_DATAGRAM).then_some(bytes)
}

/// A segment name X-Ray accepts: letters, digits, spaces and `_.:/%&#=+\-@`, at most 200
/// characters (`GET /api/data/uploads/{id}` becomes `GET /api/data/uploads/id`).
fn name(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace() || "_.:/%&#=+\\-@".contains(*c))
        .take(MAX_NAME)
        .collect();
    if kept.is_empty() { "_".into() } else { kept }
}

fn bounded(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// Seconds since the epoch, as X-Ray's `start_time`/`end_time`.
fn seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// The daemon's UDP address from `AWS_XRAY_DAEMON_ADDRESS` (`host:port`, or
/// `tcp:… udp:…`): `None` when unset or not an address.
pub(crate) fn daemon_address(value: Option<&str>) -> Option<SocketAddr> {
    let value = value?;
    value
        .split_whitespace()
        .find_map(|part| match part.split_once(':') {
            Some(("udp", rest)) => Some(rest),
            Some(("tcp", _)) => None,
            _ => Some(part),
        })?
        .parse()
        .ok()
}

/// Sends the datagrams to the daemon from one non-blocking socket per process; every
/// error is ignored (a trace is never worth an invocation).
pub(crate) fn send(daemon: SocketAddr, datagrams: &[Vec<u8>]) {
    static SOCKET: OnceLock<Option<UdpSocket>> = OnceLock::new();
    let socket = SOCKET.get_or_init(|| {
        let local: SocketAddr = if daemon.is_ipv4() {
            "0.0.0.0:0".parse().ok()?
        } else {
            "[::]:0".parse().ok()?
        };
        let socket = UdpSocket::bind(local).ok()?;
        socket.set_nonblocking(true).ok()?;
        Some(socket)
    });
    if let Some(socket) = socket {
        for datagram in datagrams {
            let _ = socket.send_to(datagram, daemon);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const ROOT: &str = "1-5759e988-bd862e3fe1be46a994272793";
    const PARENT: &str = "53995c3f42cd8ad8";

    fn header(sampled: bool) -> TraceHeader {
        TraceHeader::parse(&format!(
            "Root={ROOT};Parent={PARENT};Sampled={}",
            u8::from(sampled)
        ))
        .unwrap()
    }

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_790_000_000_000 + ms)
    }

    fn span(id: u64, parent: &str, kind: SpanKind) -> SpanRecord {
        SpanRecord {
            span_id: format!("{id:016x}"),
            parent_span_id: parent.into(),
            name: "DynamoDB.Query".into(),
            kind,
            start: at(1),
            end: at(3),
            error: false,
            throttled: false,
            remote_host: None,
            http_status: None,
        }
    }

    fn trace() -> FinishedTrace {
        FinishedTrace {
            trace_id: "5759e988bd862e3fe1be46a994272793".into(),
            span_id: "00000000000000aa".into(),
            route: "GET /api/data/uploads/{id}",
            status: 200,
            start: Some(at(0)),
            end: Some(at(10)),
            ..FinishedTrace::default()
        }
    }

    fn documents(datagrams: &[Vec<u8>]) -> Vec<Value> {
        datagrams
            .iter()
            .map(|d| {
                let text = std::str::from_utf8(d).unwrap();
                let document = text.strip_prefix(HEADER).expect("the daemon header");
                assert!(d.len() <= MAX_DATAGRAM);
                serde_json::from_str(document).unwrap()
            })
            .collect()
    }

    #[test]
    fn the_trace_header_is_read_strictly() {
        let parsed = header(true);
        assert_eq!(
            (parsed.root.as_str(), parsed.parent.as_str()),
            (ROOT, PARENT)
        );
        assert!(parsed.sampled);
        assert!(
            !TraceHeader::parse(&format!("Root={ROOT};Parent={PARENT}"))
                .unwrap()
                .sampled
        );
        for bad in [
            "",
            "Root=1-00000000-000000000000000000000000;Sampled=1",
            &format!("Root=2-5759e988-bd862e3fe1be46a994272793;Parent={PARENT};Sampled=1"),
            &format!("Root={ROOT};Parent=xyz;Sampled=1"),
            &format!("Root={ROOT}\"}};Parent={PARENT};Sampled=1"),
            &"Root=".repeat(400),
        ] {
            assert_eq!(TraceHeader::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_daemon_address_comes_in_either_form() {
        let addr: SocketAddr = "169.254.79.129:2000".parse().unwrap();
        assert_eq!(daemon_address(Some("169.254.79.129:2000")), Some(addr));
        assert_eq!(
            daemon_address(Some("tcp:127.0.0.1:2000 udp:169.254.79.129:2000")),
            Some(addr)
        );
        assert_eq!(daemon_address(Some("localhost:2000")), None);
        assert_eq!(daemon_address(None), None);
    }

    #[test]
    fn an_unsampled_request_sends_nothing() {
        assert!(datagrams(&header(false), "r", &trace()).is_empty());
    }

    #[test]
    fn a_request_is_a_subsegment_of_lambdas_segment_with_its_spans_nested() {
        let mut t = trace();
        let mut throttled = span(2, "00000000000000aa", SpanKind::Store);
        throttled.throttled = true;
        throttled.error = true;
        let mut remote = span(3, "00000000000000aa", SpanKind::Remote);
        remote.remote_host = Some("tools.example".into());
        remote.http_status = Some(502);
        remote.error = true;
        remote.name = "MCP tools/call".into();
        // A store call made under the forwarded call, and one whose parent is unknown.
        let inner = span(4, &format!("{:016x}", 3), SpanKind::Store);
        let orphan = span(5, "ffffffffffffffff", SpanKind::Store);
        t.spans = vec![
            span(1, "00000000000000aa", SpanKind::Store),
            throttled,
            remote,
            inner,
            orphan,
        ];
        t.status = 503;
        let sent = documents(&datagrams(&header(true), "apigw-1", &t));
        assert_eq!(sent.len(), 1);
        let request = &sent[0];
        assert_eq!(request["trace_id"], ROOT);
        assert_eq!(request["parent_id"], PARENT);
        assert_eq!(request["type"], "subsegment");
        assert_eq!(request["id"], "00000000000000aa");
        assert_eq!(request["name"], "GET /api/data/uploads/id");
        assert_eq!(
            request["annotations"]["route"],
            "GET /api/data/uploads/{id}"
        );
        assert_eq!(request["annotations"]["status"], 503);
        assert_eq!(request["annotations"]["request_id"], "apigw-1");
        // The W3C trace id is the Root's: not repeated.
        assert!(request["annotations"].get("w3c_trace_id").is_none());
        assert_eq!(request["fault"], true);
        let took = request["end_time"].as_f64().unwrap() - request["start_time"].as_f64().unwrap();
        assert!((took - 0.01).abs() < 1e-5, "{took}");

        let subs = request["subsegments"].as_array().unwrap();
        assert_eq!(subs.len(), 4, "{subs:?}");
        assert_eq!(subs[0]["namespace"], "aws");
        assert_eq!(subs[0]["name"], "DynamoDB");
        assert_eq!(subs[0]["aws"]["operation"], "Query");
        assert!(subs[0].get("error").is_none() && subs[0].get("fault").is_none());
        assert_eq!(
            (subs[1]["throttle"].clone(), subs[1]["error"].clone()),
            (json!(true), json!(true))
        );
        assert_eq!(subs[2]["namespace"], "remote");
        assert_eq!(subs[2]["name"], "tools.example");
        assert_eq!(subs[2]["http"]["response"]["status"], 502);
        assert_eq!(subs[2]["fault"], true);
        assert_eq!(subs[2]["subsegments"][0]["id"], format!("{:016x}", 4));
        assert_eq!(subs[3]["id"], format!("{:016x}", 5));
    }

    #[test]
    fn a_continued_w3c_trace_is_annotated() {
        let mut t = trace();
        t.trace_id = "0af7651916cd43dd8448eb211c80319c".into();
        let sent = documents(&datagrams(&header(true), "", &t));
        assert_eq!(
            sent[0]["annotations"]["w3c_trace_id"],
            "0af7651916cd43dd8448eb211c80319c"
        );
    }

    #[test]
    fn a_document_too_large_for_a_datagram_is_split_and_bounded() {
        let mut t = trace();
        t.spans = (1..=2_000)
            .map(|i| {
                let mut s = span(i, "00000000000000aa", SpanKind::Store);
                s.name = format!("DynamoDB.{}", "Q".repeat(150));
                s
            })
            .collect();
        let sent = documents(&datagrams(&header(true), "r", &t));
        assert_eq!(sent.len(), MAX_DOCUMENTS);
        assert!(sent[0].get("subsegments").is_none());
        assert_eq!(sent[0]["parent_id"], PARENT);
        for span in &sent[1..] {
            assert_eq!(span["trace_id"], ROOT);
            assert_eq!(span["parent_id"], "00000000000000aa");
            assert_eq!(span["type"], "subsegment");
        }
    }

    #[test]
    fn sending_to_a_closed_port_neither_fails_nor_blocks() {
        let closed = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let started = std::time::Instant::now();
        for _ in 0..100 {
            send(addr, &[vec![0u8; 60_000]]);
        }
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
