//! The request's fields on every log line written while it runs: `request_id`, `trace_id`
//! and `route`, read from the request's context (`context.rs`) only when a line is written,
//! so a request makes no tracing span and formats nothing it does not log.
//!
//! Wraps the line format the binary chose: a text line ends with
//! `request_id=… trace_id=… route="…"`; a JSON line carries them in `span`
//! (`span.request_id`, `span.trace_id`, `span.route`, `span.name` = `request`), where
//! CloudWatch Logs Insights finds them. Lines written outside a request are the inner
//! format's, unchanged. Owns the lines' shape only; the binaries choose the writer and filter.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::context;

/// A line format with the current request's fields added (see the module doc).
#[derive(Debug, Clone)]
pub struct RequestLines<F> {
    inner: F,
    json: bool,
}

impl<F> RequestLines<F> {
    /// Around a text format (`tracing_subscriber::fmt::format()`).
    pub fn text(inner: F) -> RequestLines<F> {
        RequestLines { inner, json: false }
    }

    /// Around a JSON format (`format().json()`), one object per line.
    pub fn json(inner: F) -> RequestLines<F> {
        RequestLines { inner, json: true }
    }
}

impl<S, N, F> FormatEvent<S, N> for RequestLines<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if context::current(|_| ()).is_none() {
            return self.inner.format_event(ctx, writer, event);
        }
        let mut line = String::with_capacity(256);
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        let line = line.strip_suffix('\n').unwrap_or(&line);
        // Written inside the context's borrow: its ids are not copied.
        context::current(move |request| self.end_line(writer, line, request))
            .unwrap_or(Err(fmt::Error))
    }
}

impl<F> RequestLines<F> {
    /// `line` (the inner format's, without its newline) with `request`'s fields.
    fn end_line(
        &self,
        mut writer: Writer<'_>,
        line: &str,
        request: &context::RequestContext,
    ) -> fmt::Result {
        let (request_id, trace_id, route) =
            (&request.request_id, &request.trace.trace_id, request.route);
        match self.json {
            false => writeln!(
                writer,
                "{line} request_id={request_id} trace_id={trace_id} route={route:?}"
            ),
            true => {
                let object = line.strip_suffix('}').ok_or(fmt::Error)?;
                let comma = if object.trim_end().ends_with('{') {
                    ""
                } else {
                    ","
                };
                writeln!(
                    writer,
                    "{object}{comma}\"span\":{{\"request_id\":{},\"trace_id\":{},\"route\":{},\"name\":\"request\"}}}}",
                    json_string(request_id),
                    json_string(trace_id),
                    json_string(route),
                )
            }
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::observe::context::RequestContext;
    use crate::observe::trace_context::TraceContext;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn lines_of(json: bool, log: impl FnOnce()) -> Vec<String> {
        let captured = Captured::default();
        let writer = captured.clone();
        let builder = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false);
        let subscriber: Box<dyn Subscriber + Send + Sync> = match json {
            false => Box::new(
                builder
                    .event_format(RequestLines::text(
                        tracing_subscriber::fmt::format().with_ansi(false),
                    ))
                    .finish(),
            ),
            true => Box::new(
                builder
                    .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
                    .event_format(RequestLines::json(
                        tracing_subscriber::fmt::format()
                            .json()
                            .flatten_event(true)
                            .with_current_span(true)
                            .with_span_list(false),
                    ))
                    .finish(),
            ),
        };
        tracing::subscriber::with_default(subscriber, log);
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_string).collect()
    }

    fn a_request() -> Arc<RequestContext> {
        let trace = TraceContext::incoming(&http::HeaderMap::new(), None, None);
        RequestContext::new("req-\"1\"".into(), trace, "POST /mcp")
    }

    #[test]
    fn a_text_line_in_a_request_ends_with_its_fields_and_others_are_unchanged() {
        let request = a_request();
        let trace_id = request.trace.trace_id.clone();
        let lines = lines_of(false, || {
            tracing::warn!(status = 503, "inside");
            request.in_scope(|| tracing::warn!(status = 503, "inside"));
        });
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("inside status=503"), "{}", lines[0]);
        assert!(
            lines[1].ends_with(&format!(
                "inside status=503 request_id=req-\"1\" trace_id={trace_id} route=\"POST /mcp\""
            )),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn a_json_line_in_a_request_carries_its_fields_in_span() {
        let request = a_request();
        let lines = lines_of(true, || {
            tracing::warn!("outside");
            request.in_scope(|| tracing::warn!(status = 503, "inside"));
        });
        let outside: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert!(outside.get("span").is_none(), "{outside}");
        let inside: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(inside["message"], "inside", "{inside}");
        assert_eq!(inside["status"], 503, "{inside}");
        assert_eq!(inside["span"]["request_id"], "req-\"1\"", "{inside}");
        assert_eq!(inside["span"]["trace_id"], request.trace.trace_id.as_str());
        assert_eq!(inside["span"]["route"], "POST /mcp");
        assert_eq!(inside["span"]["name"], "request");
    }
}
