//! The request's observation context: made once per request by `App::handle` (and
//! `handle_streamed`), and reachable from anywhere the request's own task runs.
//!
//! Carried in a `tokio::task_local!` rather than as a parameter: the store's SDK
//! interceptors, the SQLite worker call and the outbound MCP client are far below the
//! handlers, and threading a handle through every store and tool signature would change
//! hundreds of functions for a concern none of them has. A task-local is scoped to the
//! request's future (no leaking between requests on one thread, unlike a thread-local).
//!
//! Work that leaves the task: a `tokio::spawn` made during a request is not recorded unless
//! it is wrapped in [`carry`] (the DynamoDB batch writers are); `spawn_blocking` closures
//! (the SQLite worker, parsers) are timed from the calling task, which waits for them; the
//! local server's background import after an upload runs after the request ended and is not
//! part of its trace.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use super::trace_context::TraceContext;
use super::{SpanKind, SpanRecord, random_hex};

/// A request keeps at most this many spans (a large batch of store calls keeps its
/// first ones): a trace is a diagnosis, not an audit log.
const MAX_SPANS: usize = 256;

tokio::task_local! {
    static CURRENT: Arc<RequestContext>;
}

/// Who called, by kind: never an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallerKind {
    /// A person's session token (bearer).
    Token,
    /// A personal, temporary or delegated MCP URL.
    Url,
    /// An OAuth access token a client holds.
    OAuthClient,
    /// The web console's session cookie.
    Session,
}

impl CallerKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CallerKind::Token => "token",
            CallerKind::Url => "url",
            CallerKind::OAuthClient => "oauth_client",
            CallerKind::Session => "session",
        }
    }
}

/// What one request is, and what it did so far.
#[derive(Debug)]
pub(crate) struct RequestContext {
    pub(crate) request_id: String,
    pub(crate) trace: TraceContext,
    /// The route's name (its row in the route table), for log lines.
    pub(crate) route: &'static str,
    /// The request's own span (16 lower-case hex).
    pub(crate) span_id: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    spans: Vec<SpanRecord>,
    /// The caller's kind and user id (the id is hashed before it is logged).
    caller: Option<(CallerKind, String)>,
    mcp_method: Option<&'static str>,
    tool: Option<&'static str>,
    tool_failed: bool,
}

/// What a finished request's log line and trace take from its context.
#[derive(Debug, Default)]
pub(crate) struct Closing {
    pub(crate) spans: Vec<SpanRecord>,
    pub(crate) caller: Option<(CallerKind, String)>,
    pub(crate) mcp_method: Option<&'static str>,
    pub(crate) tool: Option<&'static str>,
    /// The `tools/call` answered a JSON-RPC error or `isError: true`.
    pub(crate) tool_failed: bool,
}

impl RequestContext {
    pub(crate) fn new(
        request_id: String,
        trace: TraceContext,
        route: &'static str,
    ) -> Arc<RequestContext> {
        Arc::new(RequestContext {
            request_id,
            trace,
            route,
            span_id: random_hex::<8>(),
            state: Mutex::new(State::default()),
        })
    }

    /// Runs `work` with this context as the current one.
    pub(crate) async fn scope<F: Future>(self: &Arc<Self>, work: F) -> F::Output {
        CURRENT.scope(self.clone(), work).await
    }

    /// Runs `f` (synchronous: a log line) with this context as the current one.
    pub(crate) fn in_scope<T>(self: &Arc<Self>, f: impl FnOnce() -> T) -> T {
        CURRENT.sync_scope(self.clone(), f)
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// What the closing line and the trace need, taken once at the end.
    pub(crate) fn close(&self) -> Closing {
        self.with_state(|state| Closing {
            spans: std::mem::take(&mut state.spans),
            caller: state.caller.take(),
            mcp_method: state.mcp_method,
            tool: state.tool,
            tool_failed: state.tool_failed,
        })
    }
}

fn with_current(f: impl FnOnce(&RequestContext)) {
    let _ = CURRENT.try_with(|context| f(context));
}

/// `f` of the current request's context; `None` outside a request.
pub(crate) fn current<T>(f: impl FnOnce(&RequestContext) -> T) -> Option<T> {
    CURRENT.try_with(|context| f(context)).ok()
}

/// `work` with the current request's context (if any), for a task it is spawned as.
pub(crate) fn carry<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let context = CURRENT.try_with(Arc::clone).ok();
    async move {
        match context {
            Some(context) => CURRENT.scope(context, work).await,
            None => work.await,
        }
    }
}

/// Notes who called (the last resolution wins: the door, then the MCP URL).
pub(crate) fn note_caller(kind: CallerKind, user_id: &str) {
    with_current(|c| c.with_state(|s| s.caller = Some((kind, user_id.to_string()))));
}

/// The JSON-RPC methods a log line may name; any other method is logged as `other`
/// (a method is the client's text, and may be anything).
const MCP_METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "ping",
    "logging/setLevel",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// Notes the MCP request's method.
pub(crate) fn note_mcp_method(method: &str) {
    let known = MCP_METHODS.iter().find(|m| **m == method).copied();
    with_current(|c| c.with_state(|s| s.mcp_method = Some(known.unwrap_or("other"))));
}

/// Notes that the `tools/call` failed (a JSON-RPC error or `isError: true`).
pub(crate) fn note_tool_failed() {
    with_current(|c| c.with_state(|s| s.tool_failed = true));
}

/// Notes the tool a `tools/call` runs: a built-in tool's name, or `external`.
pub(crate) fn note_tool(tool: &'static str) {
    with_current(|c| c.with_state(|s| s.tool = Some(tool)));
}

/// A call of the current request, timed from [`start`] to [`Started::finish`].
#[derive(Debug)]
pub(crate) struct Started {
    context: Arc<RequestContext>,
    span_id: String,
    name: String,
    kind: SpanKind,
    start: SystemTime,
}

/// Starts a span under the current request's span; `None` outside a request.
pub(crate) fn start(name: impl Into<String>, kind: SpanKind) -> Option<Started> {
    let context = CURRENT.try_with(Arc::clone).ok()?;
    Some(Started {
        context,
        span_id: random_hex::<8>(),
        name: name.into(),
        kind,
        start: SystemTime::now(),
    })
}

/// How a call ended.
#[derive(Debug, Default, Clone)]
pub(crate) struct Outcome {
    pub(crate) error: bool,
    pub(crate) throttled: bool,
    pub(crate) remote_host: Option<String>,
    pub(crate) http_status: Option<u16>,
}

impl Started {
    /// The W3C `traceparent` naming this span as the parent: for an outbound request.
    pub(crate) fn traceparent(&self) -> String {
        let flags = if self.context.trace.sampled {
            "01"
        } else {
            "00"
        };
        format!(
            "00-{}-{}-{flags}",
            self.context.trace.trace_id, self.span_id
        )
    }

    /// Records the span on its request.
    pub(crate) fn finish(&self, outcome: Outcome) {
        let record = SpanRecord {
            span_id: self.span_id.clone(),
            parent_span_id: self.context.span_id.clone(),
            name: self.name.clone(),
            kind: self.kind,
            start: self.start,
            end: SystemTime::now(),
            error: outcome.error,
            throttled: outcome.throttled,
            remote_host: outcome.remote_host,
            http_status: outcome.http_status,
        };
        self.context.with_state(|state| {
            if state.spans.len() < MAX_SPANS {
                state.spans.push(record);
            }
        });
    }
}
