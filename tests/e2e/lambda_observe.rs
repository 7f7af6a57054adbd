//! The Lambda side of metrics and traces: the `mcp`, `data`, `oauth` and `import`
//! binaries run the way Lambda runs them (the Runtime API harness of
//! `support/runtime_api.rs`, moto for the store), with `Lambda-Runtime-Trace-Id` headers
//! and `AWS_XRAY_DAEMON_ADDRESS` pointing at a loopback UDP socket this test reads.
//! What an operator would see: stdout is JSON lines only; the EMF lines parse (namespace,
//! dimensions, values) and name the route and the API Gateway request id; X-Ray gets the
//! request as a subsegment of Lambda's segment (the Root and Parent given) only when
//! sampled; no bearer token, URL secret or body value reaches stdout or the daemon.

use std::net::UdpSocket;
use std::time::Duration;

use crate::runtime_api::{Function, Outcome, deployment, event, import_deployment, sdk_config};
use mirobody::domain::{UploadKind, UploadRecord};
use mirobody::store::{DynamoStore, DynamoTables, UploadStore};
use mirobody::testing::Moto;
use serde_json::{Value, json};

const NAMESPACE: &str = "Mirobody/observe-test";
const ROOT: &str = "1-6751f3a0-4c1d2e3f4a5b6c7d8e9f0a1b";
const PARENT: &str = "7a1b2c3d4e5f6071";

fn sampled(sampled: bool) -> String {
    format!("Root={ROOT};Parent={PARENT};Sampled={}", u8::from(sampled))
}

/// The loopback "X-Ray daemon": a UDP socket the functions send to.
struct Daemon(UdpSocket);

impl Daemon {
    fn start() -> Daemon {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("a UDP port");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Daemon(socket)
    }

    fn address(&self) -> String {
        self.0.local_addr().unwrap().to_string()
    }

    /// Every datagram that arrives within `wait` (a datagram resets nothing: the wait is
    /// the whole window), as text.
    fn received(&self, wait: Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + wait;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 70_000];
        while std::time::Instant::now() < deadline {
            if let Ok(n) = self.0.recv(&mut buf) {
                out.push(String::from_utf8(buf[..n].to_vec()).expect("UTF-8 datagrams"));
            }
        }
        out
    }
}

/// A sample event with its API Gateway request id replaced.
fn with_request_id(raw: &str, id: &str) -> String {
    let mut e: Value = serde_json::from_str(raw).unwrap();
    e["requestContext"]["requestId"] = json!(id);
    e.to_string()
}

/// Every stdout line as JSON: fails on any other line.
fn json_lines(name: &str, stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{name}: a stdout line is not JSON ({e}): {l}"))
        })
        .collect()
}

/// The EMF lines carrying `metric`, for one request id.
fn emf<'a>(lines: &'a [Value], metric: &str, request_id: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l.get("_aws").is_some() && l.get(metric).is_some())
        .filter(|l| l["request_id"] == request_id)
        .collect()
}

/// Checks one EMF line's declaration: namespace, dimension sets, declared metrics.
fn declares(line: &Value, dimensions: Value, metrics: &[&str]) {
    let declared = &line["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(declared["Namespace"], NAMESPACE, "{line}");
    assert_eq!(declared["Dimensions"], dimensions, "{line}");
    let names: Vec<&str> = declared["Metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m["Name"].as_str().unwrap())
        .collect();
    assert_eq!(names, metrics, "{line}");
    assert!(line["_aws"]["Timestamp"].as_u64().unwrap() > 1_700_000_000_000);
}

/// The request lines' values: the route, one request, the error counts, a latency.
fn request_line(lines: &[Value], request_id: &str, function: &str, route: &str) -> Value {
    let found = emf(lines, "Requests", request_id);
    assert_eq!(
        found.len(),
        1,
        "one request line for {request_id}: {lines:?}"
    );
    let line = found[0].clone();
    declares(
        &line,
        json!([["Function"], ["Function", "Route"]]),
        &["Requests", "Latency", "Errors4xx", "Errors5xx"],
    );
    assert_eq!(line["Function"], function);
    assert_eq!(line["Route"], route);
    assert_eq!(line["Requests"], 1);
    let latency = line["Latency"].as_f64().expect("a latency");
    assert!((0.0..30_000.0).contains(&latency), "{latency}");
    line
}

#[tokio::test]
async fn functions_print_their_metrics_and_send_sampled_requests_to_xray() {
    let moto = Moto::start();
    let daemon = Daemon::start();
    let mut settings = deployment(&moto).await;
    settings.extend([
        (
            "MIROBODY_METRICS_NAMESPACE".to_string(),
            NAMESPACE.to_string(),
        ),
        ("AWS_XRAY_DAEMON_ADDRESS".to_string(), daemon.address()),
    ]);
    let mcp = Function::start("mcp", &settings).await;
    let data = Function::start("data", &settings).await;
    let oauth = Function::start("oauth", &settings).await;
    for function in [&mcp, &data, &oauth] {
        function.ready().await;
    }

    // A sampled MCP request: its metrics on stdout, its subsegment at the daemon.
    let listed = mcp
        .invoke_with_trace(
            &with_request_id(&event("mcp-post-tools-list"), "obs-mcp-1"),
            &sampled(true),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let sent = daemon.received(Duration::from_secs(2));
    assert_eq!(sent.len(), 1, "one datagram for the request: {sent:?}");
    let document = sent[0]
        .strip_prefix("{\"format\":\"json\",\"version\":1}\n")
        .expect("the daemon header first");
    let document: Value = serde_json::from_str(document).expect("a JSON segment document");
    assert_eq!(document["type"], "subsegment");
    assert_eq!(document["trace_id"], ROOT, "under Lambda's Root");
    assert_eq!(
        document["parent_id"], PARENT,
        "under Lambda's function segment"
    );
    assert_eq!(document["name"], "POST /mcp");
    assert_eq!(document["annotations"]["route"], "POST /mcp");
    assert_eq!(document["annotations"]["status"], 200);
    assert_eq!(document["annotations"]["request_id"], "obs-mcp-1");
    assert!(
        document["id"]
            .as_str()
            .is_some_and(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())),
        "{document}"
    );
    let took = document["end_time"].as_f64().unwrap() - document["start_time"].as_f64().unwrap();
    assert!((0.0..30.0).contains(&took), "{document}");

    // A caller's own W3C trace (an agent's OpenTelemetry): logs and metrics carry it, and
    // X-Ray, whose trace stays Lambda's Root, names it in an annotation.
    let callers = "4bf92f3577b34da6a3ce929d0e0e4736";
    let mut traced: Value =
        serde_json::from_str(&with_request_id(&event("mcp-post-tools-list"), "obs-mcp-4")).unwrap();
    traced["headers"]["traceparent"] = json!(format!("00-{callers}-00f067aa0ba902b7-01"));
    let traced_answer = mcp
        .invoke_with_trace(&traced.to_string(), &sampled(true))
        .await;
    assert_eq!(traced_answer.status, 200);
    let sent_traced = daemon.received(Duration::from_secs(2));
    assert_eq!(sent_traced.len(), 1, "{sent_traced:?}");
    assert!(sent_traced[0].contains(ROOT), "{sent_traced:?}");
    assert!(
        sent_traced[0].contains(&format!("\"w3c_trace_id\":\"{callers}\"")),
        "{sent_traced:?}"
    );

    // Not sampled: nothing is sent (the next window below would hold its datagram too),
    // and the metrics are printed all the same.
    let unsampled = mcp
        .invoke_with_trace(
            &with_request_id(&event("mcp-post-tools-list"), "obs-mcp-2"),
            &sampled(false),
        )
        .await;
    assert_eq!(unsampled.status, 200);

    // A URL secret nobody minted (404): an error counted, the secret written nowhere.
    let url_secret = "obsUrlSecretQ7rT2vX9zK4mN8pL3wY6";
    let by_secret = mcp
        .invoke_with_trace(
            &with_request_id(
                &event("mcp-secret-post-tools-list").replace("SAMPLE_SECRET", url_secret),
                "obs-mcp-3",
            ),
            &sampled(true),
        )
        .await;
    assert_eq!(by_secret.status, 404);
    let sent_by_secret = daemon.received(Duration::from_secs(2));
    assert_eq!(sent_by_secret.len(), 1, "{sent_by_secret:?}");
    assert!(sent_by_secret[0].contains("POST /mcp/{secret}"));
    assert!(
        sent_by_secret[0].contains("\"error\":true"),
        "a 4xx is an error"
    );

    let lines = json_lines("mcp", &mcp.stdout());
    let first = request_line(&lines, "obs-mcp-1", "mcp", "POST /mcp");
    // One trace id for logs, metrics and X-Ray: without a traceparent, the W3C id is
    // Lambda's Root (8 + 24 hex), so X-Ray needs no separate annotation.
    let w3c = ROOT[2..].replace('-', "");
    assert_eq!(first["trace_id"], w3c.as_str());
    assert!(
        document["annotations"].get("w3c_trace_id").is_none(),
        "{document}"
    );
    let closing: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "request" && l["span"]["request_id"] == "obs-mcp-1")
        .collect();
    assert_eq!(
        closing.len(),
        1,
        "one closing log line for obs-mcp-1: {lines:?}"
    );
    assert_eq!(closing[0]["span"]["trace_id"], w3c.as_str());
    assert_eq!(closing[0]["span"]["route"], "POST /mcp");
    assert_eq!(closing[0]["status"], 200);
    assert_eq!(closing[0]["mcp_method"], "tools/list");
    let continued = request_line(&lines, "obs-mcp-4", "mcp", "POST /mcp");
    assert_eq!(continued["trace_id"], callers);
    assert!(lines.iter().any(|l| l["message"] == "request"
        && l["span"]["request_id"] == "obs-mcp-4"
        && l["span"]["trace_id"] == callers));
    // Every log line logged inside a request names one of the requests sent.
    for line in lines.iter().filter(|l| l.get("_aws").is_none()) {
        if let Some(id) = line["span"]["request_id"].as_str() {
            assert!(
                ["obs-mcp-1", "obs-mcp-2", "obs-mcp-3", "obs-mcp-4"].contains(&id),
                "{line}"
            );
            assert!(
                line["span"]["trace_id"]
                    .as_str()
                    .is_some_and(|t| t.len() == 32),
                "{line}"
            );
        }
    }
    let second = request_line(&lines, "obs-mcp-2", "mcp", "POST /mcp");
    assert_eq!(
        (second["Errors4xx"].clone(), second["Errors5xx"].clone()),
        (json!(0), json!(0))
    );
    let refused = request_line(&lines, "obs-mcp-3", "mcp", "POST /mcp/{secret}");
    assert_eq!(
        (refused["Errors4xx"].clone(), refused["Errors5xx"].clone()),
        (json!(1), json!(0))
    );
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "request" || l["message"] == "request"),
        "the request's log line is JSON on stdout too: {lines:?}"
    );

    // Signed in through the oauth function, readings through the data function.
    let email = "observe-7f3a@example.com";
    let password = "obs-password-Zq8w";
    let credentials = |name: &str| {
        let mut e: Value = serde_json::from_str(&event(name)).unwrap();
        e["body"] = json!(json!({ "email": email, "password": password }).to_string());
        e.to_string()
    };
    assert_eq!(oauth.invoke(&credentials("oauth-signup")).await.status, 201);
    let signed_in = oauth.invoke(&credentials("oauth-signin")).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let health = with_request_id(&event("data-post-health"), "obs-data-1")
        .replace("SAMPLE_TOKEN", &token)
        .replace("City Lab", "Obs Lab Kx93");
    let written = data.invoke_with_trace(&health, &sampled(true)).await;
    assert_eq!(written.status, 200, "{}", written.body);
    let sent_data = daemon.received(Duration::from_secs(2));
    assert_eq!(sent_data.len(), 1, "{sent_data:?}");
    let document: Value = serde_json::from_str(sent_data[0].split_once('\n').unwrap().1).unwrap();
    assert_eq!(document["annotations"]["route"], "POST /api/data/health");
    assert_eq!(
        (document["trace_id"].clone(), document["parent_id"].clone()),
        (json!(ROOT), json!(PARENT))
    );
    // The same request without a token: a 401 counted as a client error.
    let anonymous = with_request_id(&event("data-post-health"), "obs-data-2");
    assert_eq!(data.invoke(&anonymous).await.status, 401);

    let lines = json_lines("data", &data.stdout());
    let ok = request_line(&lines, "obs-data-1", "data", "POST /api/data/health");
    assert_eq!(ok["Errors4xx"], 0);
    let refused = request_line(&lines, "obs-data-2", "data", "POST /api/data/health");
    assert_eq!(refused["Errors4xx"], 1);
    json_lines("oauth", &oauth.stdout());

    // Nothing secret or personal in any stdout or datagram.
    let everything = [mcp.stdout(), data.stdout(), oauth.stdout()]
        .into_iter()
        .chain(sent)
        .chain(sent_by_secret)
        .chain(sent_data)
        .collect::<Vec<_>>()
        .join("\n");
    for secret in [token.as_str(), url_secret, email, password, "Obs Lab Kx93"] {
        assert!(!everything.contains(secret), "{secret} was written");
    }
}

/// The import function (the S3 path): each import prints one EMF line with its
/// rows, its rate, its duration and whether it failed.
#[tokio::test]
async fn the_import_function_prints_each_imports_metrics() {
    let moto = Moto::start();
    let bucket = "mirobody-uploads-observe";
    let (mut settings, s3) = import_deployment(&moto, bucket).await;
    settings.extend([(
        "MIROBODY_METRICS_NAMESPACE".to_string(),
        NAMESPACE.to_string(),
    )]);
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&sdk_config(&moto).await),
        DynamoTables {
            keys: "lambda-runtime-keys".into(),
            data: "lambda-runtime-data".into(),
        },
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let good: String = std::iter::once("indicator,value,unit,time\n".to_string())
        .chain((0..300).map(|i| {
            format!(
                "glucose,{},mg/dL,2026-01-01T{:02}:{:02}:00\n",
                80 + i % 40,
                i / 60,
                i % 60
            )
        }))
        .collect();
    let bad = "indicator,value,unit,time\nglucose,,mg/dL,2026-01-01T00:00:00\n";
    for (id, content) in [("good01", good.as_str()), ("bad01", bad)] {
        let key = format!("uploads/{id}");
        store
            .create_upload(&UploadRecord::waiting(
                id.into(),
                "observe-user".into(),
                UploadKind::Health,
                "cgm.csv".into(),
                key.clone(),
                now,
                now + 3600,
            ))
            .await
            .expect("an upload");
        s3.put_object()
            .bucket(bucket)
            .key(&key)
            .body(content.as_bytes().to_vec().into())
            .send()
            .await
            .expect("the object");
    }

    let function = Function::start("import", &settings).await;
    function.ready().await;
    let s3_event = |key: &str| {
        let mut e: Value = serde_json::from_str(
            &std::fs::read_to_string(e2e::root().join("events/s3/object-created.json")).unwrap(),
        )
        .unwrap();
        e["Records"][0]["s3"]["bucket"]["name"] = json!(bucket);
        e["Records"][0]["s3"]["object"]["key"] = json!(key);
        e.to_string()
    };
    for key in ["uploads/good01", "uploads/bad01"] {
        let outcome = function.invoke_raw(&s3_event(key)).await;
        assert!(
            matches!(&outcome, Outcome::Response(b) if b.as_ref() == br#"{"handled":1,"skipped":0}"#),
            "{outcome:?}\n{}",
            function.output()
        );
    }
    // A repeated event runs no import: no line.
    function.invoke_raw(&s3_event("uploads/good01")).await;

    let lines = json_lines("import", &function.stdout());
    let imports: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("ImportRows").is_some())
        .collect();
    assert_eq!(imports.len(), 2, "one line per import that ran: {lines:?}");
    for line in &imports {
        declares(
            line,
            json!([["Function"]]),
            &[
                "ImportRows",
                "ImportRowsPerSecond",
                "ImportFailures",
                "ImportDuration",
            ],
        );
        assert_eq!(line["Function"], "import");
        assert!(
            line["request_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("req-")),
            "{line}"
        );
        assert!(line["ImportDuration"].as_f64().unwrap() > 0.0, "{line}");
    }
    let (done, failed) = (imports[0], imports[1]);
    assert_eq!(
        (done["ImportRows"].clone(), done["ImportFailures"].clone()),
        (json!(300), json!(0))
    );
    let rate = done["ImportRowsPerSecond"].as_f64().unwrap();
    let expected = 300.0 / (done["ImportDuration"].as_f64().unwrap() / 1000.0);
    assert!(
        (rate - expected).abs() / expected < 1e-6,
        "{rate} vs {expected}"
    );
    assert_eq!(
        (
            failed["ImportRows"].clone(),
            failed["ImportFailures"].clone()
        ),
        (json!(0), json!(1))
    );
    // Keys carry upload ids: never written.
    assert!(
        !function.stdout().contains("good01"),
        "{}",
        function.stdout()
    );
}
