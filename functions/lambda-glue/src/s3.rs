//! The run loop of a function started by S3 `ObjectCreated` notifications (the
//! `import` function): the one place that reads an S3 event. Each record becomes an
//! [`ObjectCreated`] (its key URL-decoded, its size) handed to the function's handler;
//! the handler never sees a Lambda type.
//!
//! Failures: S3 invokes the function asynchronously, so an invocation that returns an
//! error is retried by Lambda (the template allows one retry, within an hour) and then
//! dropped. A handler therefore returns `Ok` for what a retry cannot fix (a bad file is
//! recorded as a failed import by the importer itself; an object already gone) and `Err`
//! only for what may pass (the store or S3 unavailable): the import is idempotent, so a
//! retried object is imported once. Nothing here logs a key: keys carry upload ids.
//!
//! Metrics: a handler answers the [`ImportSummary`] of an import it ran, and
//! the invocation prints their EMF lines (`ImportRows`, `ImportRowsPerSecond`,
//! `ImportFailures`, `ImportDuration`) to stdout in one write at its end; the lines carry
//! Lambda's request id, which the invocation's log lines carry in their `invocation` span.

use std::future::Future;
use std::sync::Arc;

use aws_lambda_events::s3::{S3Event, S3EventRecord};
use lambda_http::lambda_runtime::{self, LambdaEvent};
use lambda_http::{Error, service_fn};
use mirobody::observe::Invocation;
use mirobody::observe::metrics::{self, Emitter};
use mirobody::{Config, ImportSummary, Runtime, Services};
use serde_json::{Value, json};
use tracing::Instrument;

/// One object S3 reported created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectCreated {
    /// The object key, URL-decoded (S3 sends `uploads/a+b%2Bc` for `uploads/a b+c`).
    pub key: String,
    /// Its size in bytes, as the event reports it.
    pub size: u64,
}

/// S3's longest object key (bytes); a longer one in an event is not from S3.
const MAX_KEY_LEN: usize = 1024;

/// Builds what the handler needs once per cold start (`build` gets the settings and the
/// opened services), then hands every created object of every event to the handler.
pub async fn run_object_created<B, BFut, H, HFut>(build: B) -> Result<(), Error>
where
    B: FnOnce(Config, Services) -> BFut,
    BFut: Future<Output = Result<H, Error>>,
    H: Fn(ObjectCreated) -> HFut + Send + Sync + 'static,
    HFut: Future<Output = Result<Option<ImportSummary>, Error>> + Send,
{
    super::init_logging();
    let config = Config::from_vars(Runtime::Lambda, super::settings(std::env::vars())?)?;
    let services = Services::open(&config).await?;
    let handler = Arc::new(build(config, services).await?);
    let namespace = super::Exporters::from_env("import").namespace;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<S3Event>| {
        let (handler, namespace) = (handler.clone(), namespace.clone());
        let invocation = Invocation {
            request_id: event.context.request_id.clone(),
            lambda_request_id: event.context.request_id.clone(),
            xray_trace_header: event.context.xray_trace_id.clone(),
        };
        let span = tracing::info_span!("invocation", request_id = %invocation.request_id);
        async move {
            let emitter = Emitter {
                namespace: &namespace,
                function: "import",
                request_id: &invocation.request_id,
            };
            let (answer, lines) = handle_event(handler.as_ref(), event.payload, &emitter).await;
            super::print_lines(&lines);
            answer
        }
        .instrument(span)
    }))
    .await
}

/// Runs the handler on every created object of one event, in order. Answers how many
/// objects were handled and skipped; fails (so Lambda retries) when a handler failed.
/// Also answers the EMF lines of the imports that ran.
async fn handle_event<H, HFut>(
    handler: &H,
    event: S3Event,
    emitter: &Emitter<'_>,
) -> (Result<Value, Error>, String)
where
    H: Fn(ObjectCreated) -> HFut,
    HFut: Future<Output = Result<Option<ImportSummary>, Error>>,
{
    let (mut handled, mut skipped, mut failed) = (0usize, 0usize, 0usize);
    let mut lines = String::new();
    for record in event.records {
        let Some(object) = object_created(&record) else {
            skipped += 1;
            continue;
        };
        match handler(object).await {
            Ok(summary) => {
                handled += 1;
                if let Some(summary) = summary {
                    lines.push_str(&metrics::import_line(
                        emitter,
                        &summary,
                        std::time::SystemTime::now(),
                    ));
                }
            }
            Err(error) => {
                tracing::error!(%error, "an object could not be handled");
                failed += 1;
            }
        }
    }
    tracing::info!(handled, skipped, failed, "S3 event");
    if failed > 0 {
        let error = format!("{failed} of the event's objects could not be handled");
        return (Err(error.into()), lines);
    }
    (Ok(json!({ "handled": handled, "skipped": skipped })), lines)
}

/// The created object a record names, or `None` (logged) for any other notification or
/// a key that is not a URL-encoded S3 key.
fn object_created(record: &S3EventRecord) -> Option<ObjectCreated> {
    let name = record.event_name.as_deref().unwrap_or_default();
    if !name.starts_with("ObjectCreated:") {
        tracing::warn!(event = name, "not an ObjectCreated record: skipped");
        return None;
    }
    let key = record
        .s3
        .object
        .key
        .as_deref()
        .filter(|k| !k.is_empty() && k.len() <= 3 * MAX_KEY_LEN)
        .and_then(decode_key)
        .filter(|k| k.len() <= MAX_KEY_LEN);
    let Some(key) = key else {
        tracing::warn!("an ObjectCreated record without a valid key: skipped");
        return None;
    };
    let size = record
        .s3
        .object
        .size
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or_default();
    Some(ObjectCreated { key, size })
}

/// Decodes an event's object key: `+` is a space, `%XX` a byte; the result must be
/// UTF-8. `None` for a malformed escape.
fn decode_key(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(at + 1..at + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                at += 2;
            }
            other => out.push(other),
        }
        at += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    const EMITTER: Emitter<'static> = Emitter {
        namespace: "Mirobody",
        function: "import",
        request_id: "lambda-1",
    };

    fn event(records: &[(&str, &str, i64)]) -> S3Event {
        let records: Vec<Value> = records
            .iter()
            .map(|(name, key, size)| {
                json!({
                    "eventVersion": "2.1",
                    "eventSource": "aws:s3",
                    "awsRegion": "us-east-1",
                    "eventTime": "2026-11-30T12:00:00.000Z",
                    "eventName": name,
                    "userIdentity": { "principalId": "AWS:EXAMPLE" },
                    "requestParameters": { "sourceIPAddress": "192.0.2.1" },
                    "responseElements": {},
                    "s3": {
                        "s3SchemaVersion": "1.0",
                        "configurationId": "import",
                        "bucket": { "name": "b", "arn": "arn:aws:s3:::b" },
                        "object": { "key": key, "size": size, "sequencer": "00" }
                    }
                })
            })
            .collect();
        serde_json::from_value(json!({ "Records": records })).unwrap()
    }

    #[test]
    fn keys_are_url_decoded() {
        assert_eq!(
            decode_key("uploads/a+b%2Bc%C3%A9").as_deref(),
            Some("uploads/a b+cé")
        );
        assert_eq!(
            decode_key("uploads/plain").as_deref(),
            Some("uploads/plain")
        );
        for bad in ["%", "%4", "%zz", "%FF", "a%C3"] {
            assert_eq!(decode_key(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn every_created_object_reaches_the_handler_and_others_are_skipped() {
        let seen = Mutex::new(Vec::new());
        let handler = |object: ObjectCreated| {
            let summary = (object.key == "uploads/u3").then_some(ImportSummary {
                rows: 7,
                duration: std::time::Duration::from_millis(70),
                failed: false,
            });
            seen.lock().unwrap().push(object);
            async move { Ok(summary) }
        };
        let (answer, lines) = handle_event(
            &handler,
            event(&[
                ("ObjectCreated:Put", "uploads/u%201", 12),
                ("ObjectRemoved:Delete", "uploads/u2", 0),
                ("ObjectCreated:CompleteMultipartUpload", "uploads/u3", 7),
                ("ObjectCreated:Put", "uploads/%zz", 1),
            ]),
            &EMITTER,
        )
        .await;
        assert_eq!(answer.unwrap(), json!({ "handled": 2, "skipped": 2 }));
        // One EMF line, for the one import that ran.
        let lines: Vec<Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["ImportRows"], 7);
        assert_eq!(lines[0]["ImportRowsPerSecond"], 100.0);
        assert_eq!(lines[0]["request_id"], "lambda-1");
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ObjectCreated {
                    key: "uploads/u 1".into(),
                    size: 12
                },
                ObjectCreated {
                    key: "uploads/u3".into(),
                    size: 7
                }
            ]
        );
    }

    #[tokio::test]
    async fn a_failed_object_fails_the_invocation_after_the_others_ran() {
        let seen = Mutex::new(0);
        let handler = |object: ObjectCreated| {
            *seen.lock().unwrap() += 1;
            async move {
                if object.key.ends_with("bad") {
                    Err(Error::from("store unavailable"))
                } else {
                    Ok(None)
                }
            }
        };
        let result = handle_event(
            &handler,
            event(&[
                ("ObjectCreated:Put", "uploads/bad", 1),
                ("ObjectCreated:Put", "uploads/good", 1),
            ]),
            &EMITTER,
        )
        .await
        .0;
        assert!(result.is_err());
        assert_eq!(*seen.lock().unwrap(), 2);
    }
}
