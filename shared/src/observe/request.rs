//! A request observed from its start to its closing log line: the context every line
//! of the request is logged with (`request_id`, `trace_id`, `route`: `log_lines.rs` writes
//! them, no tracing span is made), the one closing `request` line (caller kind, keyed user hash, status, duration, MCP method and
//! tool), and the [`FinishedTrace`] put on the response for an exporter.

use std::future::Future;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::context::RequestContext;
use super::trace_context::{MetaTrace, TraceContext};
use super::{FinishedTrace, Invocation, hex, random_hex};
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, Response};
use sha2::Sha256;

/// An id from outside longer than this is not API Gateway's or Lambda's.
const REQUEST_ID_MAX: usize = 128;

/// The key a user id is hashed under for log lines: derived from the sealing key (itself
/// derived from the keys master), so a log reader without the keys cannot test guesses.
#[derive(Clone)]
pub(crate) struct UserKey([u8; 32]);

impl UserKey {
    pub(crate) fn from_seal(seal: &[u8; 32]) -> UserKey {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(seal).expect("HMAC takes any key");
        mac.update(b"mirobody log user v1");
        UserKey(mac.finalize().into_bytes().into())
    }

    /// 16 hex digits of HMAC-SHA256(user id): the same user, the same value; never the id.
    pub(crate) fn hash(&self, user_id: &str) -> String {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(user_id.as_bytes());
        hex(&mac.finalize().into_bytes()[..8])
    }
}

/// One request being handled.
pub(crate) struct Observed {
    context: Arc<RequestContext>,
    route: &'static str,
    started: Instant,
    wall_start: SystemTime,
}

impl Observed {
    /// Starts observing a request on `route`: its id (API Gateway's or Lambda's from
    /// [`Invocation`], else a new one) and the trace it continues (`mcp_meta`: the trace
    /// fields of an MCP POST's `params._meta`, from the body the dispatcher parsed).
    pub(crate) fn begin(
        route: &'static str,
        headers: &HeaderMap,
        extensions: &http::Extensions,
        mcp_meta: Option<MetaTrace>,
    ) -> Observed {
        let invocation = extensions.get::<Invocation>();
        let request_id = invocation
            .map(|i| i.request_id.as_str())
            .filter(|id| !id.is_empty() && id.len() <= REQUEST_ID_MAX)
            .map(str::to_string)
            .unwrap_or_else(random_hex::<16>);
        let xray = invocation.and_then(|i| i.xray_trace_header.as_deref());
        let trace = TraceContext::incoming(headers, mcp_meta, xray);
        let context = RequestContext::new(request_id, trace, route);
        Observed {
            context,
            route,
            started: Instant::now(),
            wall_start: SystemTime::now(),
        }
    }

    /// Runs the request's handling inside its context (its log lines carry its fields).
    pub(crate) async fn run<F: Future>(&self, work: F) -> F::Output {
        self.context.scope(work).await
    }

    /// The closing `request` line, and the response with its [`FinishedTrace`].
    pub(crate) fn end(
        self,
        user_key: Option<&UserKey>,
        mut response: Response<Bytes>,
    ) -> Response<Bytes> {
        let mut closing = self.context.close();
        let status = response.status().as_u16();
        let duration_ms = self.started.elapsed().as_micros() as f64 / 1000.0;
        let caller = closing.caller.as_ref().map(|(kind, _)| kind.as_str());
        // The keyed hash (an HMAC) only for a line that is written.
        if tracing::enabled!(tracing::Level::INFO) {
            let user = match (&closing.caller, user_key) {
                (Some((_, id)), Some(key)) => Some(key.hash(id)),
                _ => None,
            };
            self.context.in_scope(|| {
                tracing::info!(
                    caller = caller.unwrap_or("anonymous"),
                    user = user.as_deref(),
                    status,
                    duration_ms,
                    mcp_method = closing.mcp_method,
                    tool = closing.tool,
                    "request"
                )
            });
        }
        closing.spans.sort_by_key(|span| span.start);
        // The context's ids move into the trace unless a task spawned for the request
        // still holds the context (then they are copied).
        let (trace_id, span_id, parent_span_id) = match Arc::try_unwrap(self.context) {
            Ok(context) => (
                context.trace.trace_id,
                context.span_id,
                context.trace.parent_span_id,
            ),
            Err(shared) => (
                shared.trace.trace_id.clone(),
                shared.span_id.clone(),
                shared.trace.parent_span_id.clone(),
            ),
        };
        let trace = FinishedTrace {
            trace_id,
            span_id,
            parent_span_id,
            route: self.route,
            mcp_method: closing.mcp_method,
            tool: closing.tool,
            tool_failed: closing.tool_failed,
            status,
            start: Some(self.wall_start),
            end: Some(SystemTime::now()),
            spans: closing.spans,
        };
        response.extensions_mut().insert(trace);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_hash_is_keyed_short_and_stable() {
        let key = UserKey::from_seal(&[7; 32]);
        let hash = key.hash("alice@example.com");
        assert_eq!(hash.len(), 16);
        assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(hash, key.hash("alice@example.com"));
        assert_ne!(hash, key.hash("bob"));
        assert_ne!(hash, UserKey::from_seal(&[8; 32]).hash("alice@example.com"));
    }
}
