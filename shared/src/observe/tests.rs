//! `App::handle` in process: the trace a request continues, its MCP method and tool, and
//! the spans of its store calls on DynamoDB (moto), on the response's [`FinishedTrace`].

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use serde_json::{Value, json};

use super::{FinishedTrace, SpanKind};
use crate::App;
use crate::clock::FakeClock;
use crate::config::{Config, Runtime};
use crate::http::RouteGroup;
use crate::identity::{Jwts, Keys};
use crate::services::Services;
use crate::store::{LocalObjects, Store};

const HEADER_TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
const META_TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01";

struct Fixture {
    app: App,
    dir: std::path::PathBuf,
    _moto: Option<Arc<crate::testing::Moto>>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn app_on(store: Arc<dyn Store>, moto: Option<Arc<crate::testing::Moto>>) -> Fixture {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("mirobody-observe-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let vars = [("MIROBODY_DATA_DIR".to_string(), dir.display().to_string())];
    let config = Config::from_vars(Runtime::Local, vars).unwrap();
    let services = Services {
        mail: None,
        store,
        keys: Some(Keys {
            jwt: [1; 32],
            seal: [2; 32],
        }),
        clock: Arc::new(FakeClock::at(now())),
        objects: Arc::new(
            LocalObjects::open(dir.join("uploads"), &config.public_origin()).unwrap(),
        ),
    };
    let app = App::new(config, RouteGroup::All, services).unwrap();
    Fixture {
        app,
        dir,
        _moto: moto,
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(app: &App, user: &str) -> String {
    Jwts::for_origin(&[1; 32], &app.config().public_origin()).mint(user, 3600, now())
}

async fn call(app: &App, headers: &[(&str, &str)], body: Value) -> Response<Bytes> {
    let mut request = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = Bytes::from(serde_json::to_vec(&body).unwrap());
    app.handle(request.body(body).unwrap()).await
}

/// A fresh SQLite store in a directory of its own (removed by the test).
fn sqlite() -> (Arc<dyn Store>, std::path::PathBuf) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "mirobody-observe-db-{}-{nanos}",
        std::process::id()
    ));
    let store = crate::store::EmbeddedStore::open(dir.join("db.sqlite3")).unwrap();
    (Arc::new(store), dir)
}

fn tool_call(meta: Option<&str>) -> Value {
    let mut params = json!({"name": "query_health_indicators", "arguments": {}});
    if let Some(traceparent) = meta {
        params["_meta"] = json!({ "traceparent": traceparent });
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

fn trace_of(response: &Response<Bytes>) -> &FinishedTrace {
    response
        .extensions()
        .get::<FinishedTrace>()
        .expect("every response carries its trace")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_continues_the_callers_trace_with_its_dynamodb_calls_as_spans() {
    let (store, moto) = crate::store::moto_dynamo_store().await;
    let app = app_on(Arc::new(store), moto).await;
    let bearer = format!("Bearer {}", token(&app.app, "alice"));
    let headers = [
        ("authorization", bearer.as_str()),
        ("traceparent", HEADER_TRACE),
    ];

    // The header alone: continued.
    let response = call(&app.app, &headers, tool_call(None)).await;
    assert_eq!(response.status(), 200);
    let trace = trace_of(&response);
    assert_eq!(trace.trace_id, "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(trace.parent_span_id.as_deref(), Some("00f067aa0ba902b7"));
    assert_eq!(trace.route, "POST /mcp");
    assert_eq!(trace.mcp_method, Some("tools/call"));
    assert_eq!(trace.tool, Some("query_health_indicators"));
    assert_eq!(trace.status, 200);
    assert_eq!(trace.span_id.len(), 16);
    assert_ne!(trace.span_id, "00f067aa0ba902b7");
    assert!(!trace.spans.is_empty(), "no store spans: {trace:?}");
    for span in &trace.spans {
        assert_eq!(span.kind, SpanKind::Store, "{span:?}");
        assert!(span.name.starts_with("DynamoDB."), "{span:?}");
        assert_eq!(span.parent_span_id, trace.span_id, "{span:?}");
        assert!(!span.error && !span.throttled, "{span:?}");
        assert_eq!(span.http_status, Some(200), "{span:?}");
        assert!(span.start <= span.end);
        assert!(trace.start.unwrap() <= span.start && span.end <= trace.end.unwrap());
    }
    // The token's state is read (one GetItem), then the catalogue.
    let names: Vec<&str> = trace.spans.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"DynamoDB.GetItem"), "{names:?}");

    // `_meta.traceparent` wins over the header.
    let response = call(&app.app, &headers, tool_call(Some(META_TRACE))).await;
    let trace = trace_of(&response);
    assert_eq!(trace.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(trace.parent_span_id.as_deref(), Some("b7ad6b7169203331"));
}

#[tokio::test]
async fn garbage_trace_context_is_ignored_and_the_request_answered() {
    let (store, dir) = sqlite();
    let app = app_on(store, None).await;
    let long = format!("{HEADER_TRACE}{}", "a".repeat(10_000));
    for bad in [
        "garbage",
        long.as_str(),
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
    ] {
        let response = call(&app.app, &[("traceparent", bad)], tool_call(Some(bad))).await;
        assert_eq!(response.status(), 200, "{bad}");
        let trace = trace_of(&response);
        assert_eq!(trace.parent_span_id, None, "{bad}");
        assert_eq!(trace.trace_id.len(), 32);
        assert!(!bad.contains(&trace.trace_id), "{bad}");
        // Anonymous: the login prompt, no store call.
        assert_eq!(trace.tool, Some("query_health_indicators"));
        let answer: Value = serde_json::from_slice(response.body()).unwrap();
        assert!(answer.get("result").is_some(), "{answer}");
    }
    // An unknown route has a trace too.
    let request = Request::builder()
        .uri("/nowhere")
        .body(Bytes::new())
        .unwrap();
    let response = app.app.handle(request).await;
    assert_eq!(response.status(), 404);
    assert_eq!(trace_of(&response).route, "not found");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn sqlite_store_calls_are_one_span_each() {
    let (store, dir) = sqlite();
    let app = app_on(store, None).await;
    let bearer = format!("Bearer {}", token(&app.app, "alice"));
    let response = call(&app.app, &[("authorization", &bearer)], tool_call(None)).await;
    let trace = trace_of(&response);
    assert!(!trace.spans.is_empty(), "{trace:?}");
    for span in &trace.spans {
        assert!(span.name.starts_with("SQLite."), "{span:?}");
        assert_eq!(span.parent_span_id, trace.span_id);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_failed_tool_call_is_marked_for_the_tool_errors_metric() {
    let (store, dir) = sqlite();
    let app = app_on(store, None).await;
    let bearer = format!("Bearer {}", token(&app.app, "alice"));
    let headers = [("authorization", bearer.as_str())];
    // Answered, and nothing failed.
    let response = call(&app.app, &headers, tool_call(None)).await;
    assert!(!trace_of(&response).tool_failed);
    // An argument of the wrong type: the tool answers an error the model sees.
    let mut bad = tool_call(None);
    bad["params"]["arguments"] = json!({"indicators": 7});
    let response = call(&app.app, &headers, bad).await;
    assert_eq!(response.status(), 200);
    let trace = trace_of(&response);
    assert_eq!(trace.tool, Some("query_health_indicators"));
    assert!(trace.tool_failed, "{trace:?}");
    let _ = std::fs::remove_dir_all(dir);
}
