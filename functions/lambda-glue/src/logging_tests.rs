//! Lambda's JSON log lines, through `App::handle`: every line of a request has
//! the request's `span` object (`request_id`, `trace_id`, `route`), the closing line its
//! fields at the top level, where CloudWatch Logs Insights finds them.

use std::io::Write;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mirobody::observe::Invocation;
use mirobody::{App, Config, RouteGroup, Runtime, Services};
use serde_json::Value;

use super::json_logs;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn every_line_of_a_request_carries_its_ids_and_the_closing_line_its_fields() {
    let dir = std::env::temp_dir().join(format!(
        "lambda-glue-logs-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = json_logs("debug".into(), move || writer.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let vars = [("MIROBODY_DATA_DIR".to_string(), dir.display().to_string())];
    let config = Config::from_vars(Runtime::Local, vars).unwrap();
    let response = tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let services = Services::open(&config).await.unwrap();
            let app = App::new(config, RouteGroup::All, services).unwrap();
            tracing::info!("outside a request");
            let mut request = http::Request::builder()
                .method("POST")
                .uri("/mcp")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header(
                    "traceparent",
                    "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
                )
                .body(Bytes::from_static(
                    br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
                ))
                .unwrap();
            request.extensions_mut().insert(Invocation {
                request_id: "apigw-id-1".into(),
                lambda_request_id: "lambda-id-1".into(),
                xray_trace_header: None,
            });
            app.handle(request).await
        })
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(response.status(), 200);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect();
    let of_request: Vec<&Value> = lines
        .iter()
        .filter(|l| l["span"]["request_id"] == "apigw-id-1")
        .collect();
    assert!(!of_request.is_empty(), "{text}");
    for line in &of_request {
        assert_eq!(line["span"]["trace_id"], "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(line["span"]["route"], "POST /mcp");
    }
    let closing = of_request
        .iter()
        .find(|l| l["message"] == "request")
        .unwrap_or_else(|| panic!("no closing line: {text}"));
    assert_eq!(closing["status"], 200, "{closing}");
    assert_eq!(closing["caller"], "anonymous", "{closing}");
    assert_eq!(closing["mcp_method"], "tools/list", "{closing}");
    assert!(closing["duration_ms"].is_number(), "{closing}");
    assert!(closing.get("user").is_none(), "{closing}");
    let outside = lines
        .iter()
        .find(|l| l["message"] == "outside a request")
        .unwrap();
    assert!(outside.get("span").is_none(), "{outside}");
}
