//! Metrics without a metrics server: a request's numbers as CloudWatch Embedded
//! Metric Format (EMF) lines, which CloudWatch Logs turns into metrics when a Lambda
//! function prints them to stdout. This module only builds the lines (from a
//! [`FinishedTrace`] and the function's name, or from an import's [`ImportSummary`]); the
//! `lambda-glue` crate prints them, once per invocation, in Lambda only.
//!
//! One JSON object per line, each with its own dimension sets:
//! - the request: `[["Function"], ["Function","Route"]]`: `Requests`, `Latency`,
//!   `Errors4xx`, `Errors5xx`;
//! - a `tools/call`: `[["Function","Tool"]]`: `ToolCalls`, `ToolLatency`, `ToolErrors`
//!   (`Tool` is a built-in tool's name or `external`, never a name a user chose);
//! - the request's store calls: `[["Function"]]`: `StoreCalls`, `StoreLatency` (one value
//!   per call), `StoreThrottles`;
//! - forwarded MCP calls (to users' own MCP servers): `[["Function"]]`: `ForwardedCalls`,
//!   `ForwardedLatency`, `ForwardedFailures`. Never per host: a host
//!   is a name a user chose, so as a dimension it would make one custom metric per name
//!   anyone registers and write every user's server host into CloudWatch;
//! - an import: `[["Function"]]`: `ImportRows`, `ImportRowsPerSecond`, `ImportFailures`,
//!   `ImportDuration`.
//!
//! Every line also carries `request_id` and `trace_id` as plain properties (not
//! dimensions), so a metric's data point leads to its log lines and its trace. Values are
//! exact: latencies are the trace's own end minus start, in milliseconds. Nothing else of
//! the request is written: no body, no user, no URL.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::{FinishedTrace, ImportSummary, SpanKind, SpanRecord};

/// The namespace when `MIROBODY_METRICS_NAMESPACE` is not set.
pub const DEFAULT_NAMESPACE: &str = "Mirobody";

/// EMF takes at most 100 values for one metric in one line; more calls go on more lines.
const MAX_VALUES: usize = 100;

/// Who wrote the lines: the namespace, the function's name (`mcp`, `data`, …) and the
/// ids that tie the lines to the invocation's logs and trace.
#[derive(Debug, Clone, Copy)]
pub struct Emitter<'a> {
    pub namespace: &'a str,
    pub function: &'a str,
    /// API Gateway's request id (or Lambda's), as in the log lines.
    pub request_id: &'a str,
}

/// The EMF lines of one finished HTTP request, each ending in `\n`.
pub fn request_lines(emitter: &Emitter<'_>, trace: &FinishedTrace) -> String {
    let at = trace.end.unwrap_or_else(SystemTime::now);
    let mut lines = String::new();
    let latency = millis_between(trace.start, trace.end);

    let mut request = Line::new(emitter, at, &trace.trace_id);
    request.dimension("Route", trace.route);
    request.metric("Requests", "Count", json!(1));
    if let Some(latency) = latency {
        request.metric("Latency", "Milliseconds", json!(latency));
    }
    request.metric(
        "Errors4xx",
        "Count",
        json!(u8::from((400..500).contains(&trace.status))),
    );
    request.metric("Errors5xx", "Count", json!(u8::from(trace.status >= 500)));
    lines.push_str(&request.finish(&[&["Function"], &["Function", "Route"]]));

    if trace.mcp_method == Some("tools/call")
        && let Some(tool) = &trace.tool
    {
        let mut call = Line::new(emitter, at, &trace.trace_id);
        call.dimension("Tool", tool);
        call.metric("ToolCalls", "Count", json!(1));
        if let Some(latency) = latency {
            call.metric("ToolLatency", "Milliseconds", json!(latency));
        }
        call.metric(
            "ToolErrors",
            "Count",
            json!(u8::from(trace.tool_failed || trace.status >= 400)),
        );
        lines.push_str(&call.finish(&[&["Function", "Tool"]]));
    }

    let store: Vec<&SpanRecord> = trace
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Store)
        .collect();
    for chunk in store.chunks(MAX_VALUES) {
        let mut line = Line::new(emitter, at, &trace.trace_id);
        line.metric("StoreCalls", "Count", json!(chunk.len()));
        line.metric("StoreLatency", "Milliseconds", latencies(chunk));
        let throttles = chunk.iter().filter(|s| s.throttled).count();
        line.metric("StoreThrottles", "Count", json!(throttles));
        lines.push_str(&line.finish(&[&["Function"]]));
    }

    let remote: Vec<&SpanRecord> = trace
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Remote)
        .collect();
    for chunk in remote.chunks(MAX_VALUES) {
        let mut line = Line::new(emitter, at, &trace.trace_id);
        line.metric("ForwardedCalls", "Count", json!(chunk.len()));
        line.metric("ForwardedLatency", "Milliseconds", latencies(chunk));
        let failures = chunk.iter().filter(|s| s.error).count();
        line.metric("ForwardedFailures", "Count", json!(failures));
        lines.push_str(&line.finish(&[&["Function"]]));
    }
    lines
}

/// The EMF line of one import (the `import` function, per S3 object), ending in `\n`.
pub fn import_line(emitter: &Emitter<'_>, summary: &ImportSummary, at: SystemTime) -> String {
    let mut line = Line::new(emitter, at, "");
    let millis = summary.duration.as_secs_f64() * 1000.0;
    let nanos = summary.duration.as_nanos();
    let per_second = if nanos > 0 {
        summary.rows as f64 * 1e9 / nanos as f64
    } else {
        0.0
    };
    line.metric("ImportRows", "Count", json!(summary.rows));
    line.metric("ImportRowsPerSecond", "Count/Second", json!(per_second));
    line.metric("ImportFailures", "Count", json!(u8::from(summary.failed)));
    line.metric("ImportDuration", "Milliseconds", json!(millis));
    line.finish(&[&["Function"]])
}

/// One EMF object under construction: its properties and its metric declarations.
struct Line<'a> {
    emitter: &'a Emitter<'a>,
    at: SystemTime,
    properties: Map<String, Value>,
    metrics: Vec<Value>,
}

impl<'a> Line<'a> {
    fn new(emitter: &'a Emitter<'a>, at: SystemTime, trace_id: &str) -> Line<'a> {
        let mut properties = Map::new();
        properties.insert("Function".into(), json!(emitter.function));
        if !emitter.request_id.is_empty() {
            properties.insert("request_id".into(), json!(emitter.request_id));
        }
        if !trace_id.is_empty() {
            properties.insert("trace_id".into(), json!(trace_id));
        }
        Line {
            emitter,
            at,
            properties,
            metrics: Vec::new(),
        }
    }

    fn dimension(&mut self, name: &str, value: &str) {
        self.properties.insert(name.into(), json!(value));
    }

    fn metric(&mut self, name: &str, unit: &str, value: Value) {
        self.metrics.push(json!({ "Name": name, "Unit": unit }));
        self.properties.insert(name.into(), value);
    }

    fn finish(mut self, dimensions: &[&[&str]]) -> String {
        let timestamp = self
            .at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        self.properties.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp,
                "CloudWatchMetrics": [{
                    "Namespace": self.emitter.namespace,
                    "Dimensions": dimensions,
                    "Metrics": self.metrics,
                }],
            }),
        );
        let mut line = Value::Object(self.properties).to_string();
        line.push('\n');
        line
    }
}

/// Milliseconds from `start` to `end` (fractional; `None` without both, 0 if reversed).
fn millis_between(start: Option<SystemTime>, end: Option<SystemTime>) -> Option<f64> {
    let elapsed = end?.duration_since(start?).unwrap_or(Duration::ZERO);
    Some(elapsed.as_secs_f64() * 1000.0)
}

/// The spans' latencies as an EMF value array.
fn latencies(spans: &[&SpanRecord]) -> Value {
    spans
        .iter()
        .map(|s| json!(millis_between(Some(s.start), Some(s.end)).unwrap_or(0.0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMITTER: Emitter<'static> = Emitter {
        namespace: "Mirobody/test",
        function: "mcp",
        request_id: "apigw-1",
    };

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_790_000_000_000 + ms)
    }

    fn span(kind: SpanKind, start: u64, end: u64) -> SpanRecord {
        SpanRecord {
            span_id: "00000000000000a1".into(),
            parent_span_id: "00000000000000b2".into(),
            name: "DynamoDB.Query".into(),
            kind,
            start: at(start),
            end: at(end),
            error: false,
            throttled: false,
            remote_host: None,
            http_status: None,
        }
    }

    fn trace(status: u16) -> FinishedTrace {
        FinishedTrace {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "00000000000000b2".into(),
            route: "POST /mcp",
            status,
            start: Some(at(0)),
            end: Some(at(42)),
            ..FinishedTrace::default()
        }
    }

    fn parse(lines: &str) -> Vec<Value> {
        assert!(lines.ends_with('\n'));
        lines
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
            .collect()
    }

    fn declared(line: &Value) -> (Value, Vec<String>) {
        let metrics = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(metrics["Namespace"], "Mirobody/test");
        assert!(line["_aws"]["Timestamp"].as_u64().unwrap() > 1_700_000_000_000);
        let names = metrics["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap().to_string())
            .collect();
        (metrics["Dimensions"].clone(), names)
    }

    #[test]
    fn a_request_is_one_line_with_exact_values_and_both_dimension_sets() {
        let lines = parse(&request_lines(&EMITTER, &trace(200)));
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        let (dimensions, names) = declared(line);
        assert_eq!(dimensions, json!([["Function"], ["Function", "Route"]]));
        assert_eq!(names, ["Requests", "Latency", "Errors4xx", "Errors5xx"]);
        assert_eq!(line["Function"], "mcp");
        assert_eq!(line["Route"], "POST /mcp");
        assert_eq!(line["Requests"], 1);
        assert_eq!(line["Latency"], 42.0);
        assert_eq!(
            (line["Errors4xx"].clone(), line["Errors5xx"].clone()),
            (json!(0), json!(0))
        );
        assert_eq!(line["request_id"], "apigw-1");
        assert_eq!(line["trace_id"], "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(line["_aws"]["Timestamp"], 1_790_000_000_042u64);

        let client = &parse(&request_lines(&EMITTER, &trace(404)))[0];
        assert_eq!(
            (client["Errors4xx"].clone(), client["Errors5xx"].clone()),
            (json!(1), json!(0))
        );
        let server = &parse(&request_lines(&EMITTER, &trace(503)))[0];
        assert_eq!(
            (server["Errors4xx"].clone(), server["Errors5xx"].clone()),
            (json!(0), json!(1))
        );
    }

    #[test]
    fn a_tool_call_adds_its_tool_line_and_other_methods_do_not() {
        let mut call = trace(200);
        call.mcp_method = Some("tools/call");
        call.tool = Some("external");
        let lines = parse(&request_lines(&EMITTER, &call));
        assert_eq!(lines.len(), 2);
        let (dimensions, names) = declared(&lines[1]);
        assert_eq!(dimensions, json!([["Function", "Tool"]]));
        assert_eq!(names, ["ToolCalls", "ToolLatency", "ToolErrors"]);
        assert_eq!(lines[1]["Tool"], "external");
        assert_eq!(lines[1]["ToolLatency"], 42.0);
        assert_eq!(lines[1]["ToolErrors"], 0);

        let mut list = trace(200);
        list.mcp_method = Some("tools/list");
        assert_eq!(parse(&request_lines(&EMITTER, &list)).len(), 1);
    }

    #[test]
    fn store_calls_are_counted_with_one_latency_each_and_throttles() {
        let mut t = trace(200);
        let mut throttled = span(SpanKind::Store, 10, 13);
        throttled.throttled = true;
        throttled.error = true;
        t.spans = vec![span(SpanKind::Store, 1, 6), throttled];
        let lines = parse(&request_lines(&EMITTER, &t));
        assert_eq!(lines.len(), 2);
        let (dimensions, names) = declared(&lines[1]);
        assert_eq!(dimensions, json!([["Function"]]));
        assert_eq!(names, ["StoreCalls", "StoreLatency", "StoreThrottles"]);
        assert_eq!(lines[1]["StoreCalls"], 2);
        assert_eq!(lines[1]["StoreLatency"], json!([5.0, 3.0]));
        assert_eq!(lines[1]["StoreThrottles"], 1);

        // More calls than one EMF array holds: more lines, every call counted once.
        t.spans = (0..250).map(|i| span(SpanKind::Store, i, i + 1)).collect();
        let lines = parse(&request_lines(&EMITTER, &t));
        let counted: u64 = lines[1..]
            .iter()
            .map(|l| l["StoreCalls"].as_u64().unwrap())
            .sum();
        assert_eq!(counted, 250);
        assert!(
            lines[1..]
                .iter()
                .all(|l| l["StoreLatency"].as_array().unwrap().len() <= 100)
        );
    }

    /// Forwarded calls are counted per function, and no line names
    /// the host a user chose.
    #[test]
    fn forwarded_calls_are_per_function_and_name_no_host() {
        let mut t = trace(200);
        let remote = |host: &str, error: bool| SpanRecord {
            remote_host: Some(host.into()),
            error,
            http_status: Some(if error { 502 } else { 200 }),
            name: "MCP tools/call".into(),
            ..span(SpanKind::Remote, 0, 20)
        };
        t.spans = vec![
            remote("b.example", false),
            remote("a.example", true),
            remote("b.example", true),
        ];
        let text = request_lines(&EMITTER, &t);
        assert!(
            !text.contains("a.example") && !text.contains("b.example"),
            "{text}"
        );
        assert!(!text.contains("RemoteHost"), "{text}");
        let lines = parse(&text);
        assert_eq!(lines.len(), 2);
        let (dimensions, names) = declared(&lines[1]);
        assert_eq!(dimensions, json!([["Function"]]));
        assert_eq!(
            names,
            ["ForwardedCalls", "ForwardedLatency", "ForwardedFailures"]
        );
        assert_eq!(
            (
                lines[1]["ForwardedCalls"].clone(),
                lines[1]["ForwardedFailures"].clone()
            ),
            (json!(3), json!(2))
        );
        assert_eq!(lines[1]["ForwardedLatency"], json!([20.0, 20.0, 20.0]));
    }

    #[test]
    fn an_import_is_one_line_with_its_rate() {
        let emitter = Emitter {
            function: "import",
            request_id: "",
            ..EMITTER
        };
        let summary = ImportSummary {
            rows: 20_000,
            duration: Duration::from_millis(2_500),
            failed: false,
        };
        let lines = parse(&import_line(&emitter, &summary, at(0)));
        let (dimensions, names) = declared(&lines[0]);
        assert_eq!(dimensions, json!([["Function"]]));
        assert_eq!(
            names,
            [
                "ImportRows",
                "ImportRowsPerSecond",
                "ImportFailures",
                "ImportDuration"
            ]
        );
        assert_eq!(lines[0]["Function"], "import");
        assert_eq!(lines[0]["ImportRows"], 20_000);
        assert_eq!(lines[0]["ImportRowsPerSecond"], 8_000.0);
        assert_eq!(lines[0]["ImportFailures"], 0);
        assert_eq!(lines[0]["ImportDuration"], 2_500.0);
        assert!(lines[0].get("request_id").is_none());

        let failed = ImportSummary {
            rows: 0,
            duration: Duration::ZERO,
            failed: true,
        };
        let line = &parse(&import_line(&emitter, &failed, at(0)))[0];
        assert_eq!(
            (
                line["ImportFailures"].clone(),
                line["ImportRowsPerSecond"].clone()
            ),
            (json!(1), json!(0.0))
        );
    }
}
