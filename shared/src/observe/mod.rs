//! What a request leaves behind for operators: its log lines, its metrics and
//! its trace. This module owns the request's observation context (request id, route,
//! caller kind, trace context, the store and outbound calls it made) and the formats it is
//! written in; it never sees a body, a header value, a secret or a health record.
//!
//! Files: `ids.rs` (request, trace and span ids: a per-thread generator, hex),
//! `trace_context.rs` (W3C `traceparent`/`tracestate` in, X-Ray's root, which source
//! wins), `context.rs` (the request's context in a task-local; spans of store and outbound
//! calls), `log_lines.rs` (the request's fields on each log line, read from the context only
//! when a line is written), `request.rs` (the closing line, the keyed user hash, the
//! [`FinishedTrace`]), `metrics.rs` (the CloudWatch EMF lines of a finished trace and of
//! an import's summary, which the Lambda glue prints). `store/dynamo/spans.rs` is its
//! SDK interceptor.
//!
//! The binaries hand it what only Lambda knows through plain `http` extensions:
//! [`Invocation`] on the request, and take the finished trace back as [`FinishedTrace`] on
//! the response (the `lambda-glue` crate exports it to X-Ray).

pub mod metrics;

use std::time::SystemTime;

mod context;
mod ids;
mod log_lines;
mod request;
mod trace_context;

pub(crate) use ids::hex;
use ids::random_hex;

pub(crate) use context::{
    CallerKind, Outcome, Started, carry, note_caller, note_mcp_method, note_tool, note_tool_failed,
    start,
};
pub use log_lines::RequestLines;
pub(crate) use request::{Observed, UserKey};
pub(crate) use trace_context::MetaTrace;

/// What one import did, for its metrics (`metrics::import_line`): the rows written (0
/// for a failed import), how long it ran (from its start to the outcome recorded), and
/// whether it failed. `imports::Importer::import_object` answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportSummary {
    pub rows: u64,
    pub duration: std::time::Duration,
    pub failed: bool,
}

/// Set by a Lambda binary on the request: the ids Lambda and API Gateway gave this
/// invocation. Absent locally (a request id is made up then).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// API Gateway's request id (`requestContext.requestId`, the `apigw-requestid` answer
    /// header), else the Lambda request id.
    pub request_id: String,
    /// Lambda's request id (`Lambda-Runtime-Aws-Request-Id`).
    pub lambda_request_id: String,
    /// Lambda's X-Ray trace header (`Root=1-…;Parent=…;Sampled=1`), when tracing is active.
    pub xray_trace_header: Option<String>,
}

/// Put on the response by `App::handle`: the request's trace, for an exporter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinishedTrace {
    /// The W3C trace id (32 lower-case hex) the request continued or started.
    pub trace_id: String,
    /// The request's own span id (16 lower-case hex): the parent of `spans`' top level.
    pub span_id: String,
    /// The W3C parent span id the request continued, if it came with one.
    pub parent_span_id: Option<String>,
    /// The route's name (`POST /mcp`).
    pub route: &'static str,
    /// For MCP requests: the JSON-RPC method (`tools/call`).
    pub mcp_method: Option<&'static str>,
    /// For `tools/call`: the built-in tool's name, or `external` for a user's server's tool
    /// (never a name a user chose).
    pub tool: Option<&'static str>,
    /// The `tools/call` answered a JSON-RPC error or a result with `isError: true`.
    pub tool_failed: bool,
    pub status: u16,
    pub start: Option<SystemTime>,
    pub end: Option<SystemTime>,
    /// Store calls and outbound MCP calls, in the order they started.
    pub spans: Vec<SpanRecord>,
}

/// One timed call a request made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanRecord {
    /// 16 lower-case hex.
    pub span_id: String,
    /// The request's `span_id`, or another span's.
    pub parent_span_id: String,
    /// What was called: `DynamoDB.Query`, `SQLite.query_readings`, `MCP tools/call`.
    pub name: String,
    pub kind: SpanKind,
    pub start: SystemTime,
    pub end: SystemTime,
    /// The call failed (an error answer, a throttle, no answer).
    pub error: bool,
    /// The call was throttled (DynamoDB `ProvisionedThroughputExceeded`, throttling).
    pub throttled: bool,
    /// For outbound calls: the remote host (never the path, the query or a credential).
    pub remote_host: Option<String>,
    /// For outbound calls: the HTTP status, if one came back.
    pub http_status: Option<u16>,
}

/// Where a span's call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// The store (DynamoDB, S3, SQLite).
    Store,
    /// A user's external MCP server.
    Remote,
}

#[cfg(test)]
mod tests;
