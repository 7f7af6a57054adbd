//! Hostile input as data: every file in `tests/data/hostile/` is one request an
//! attacker might send, and what a safe answer looks like: a clear 4xx (or a JSON-RPC
//! error), within a time bound, with the server still alive afterwards. The whole corpus
//! runs against one server, whose peak resident memory may grow by at most
//! [`MEMORY_BUDGET_KIB`] over it. The format is in `tests/data/hostile/README.md`.

use std::time::{Duration, Instant};

use e2e::load::prepare;
use e2e::{Server, root};
use serde_json::Value;

/// How much the server's peak resident memory may grow over the whole corpus.
const MEMORY_BUDGET_KIB: u64 = 64 * 1024;

/// The request body a case describes: `body` (text), `body_hex` (bytes), or `repeat`
/// (`prefix` + `unit` × `times` + `suffix`, for big or deep bodies).
fn body_of(request: &Value) -> Vec<u8> {
    if let Some(text) = request["body"].as_str() {
        return text.as_bytes().to_vec();
    }
    if let Some(hex) = request["body_hex"].as_str() {
        return (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
    }
    if let Some(repeat) = request.get("repeat") {
        let text = |k: &str| repeat[k].as_str().unwrap_or("").to_string();
        let times = repeat["times"].as_u64().expect("repeat.times") as usize;
        let mut body = text("prefix");
        body.push_str(&text("unit").repeat(times));
        body.push_str(&text("suffix"));
        return body.into_bytes();
    }
    Vec::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_request_gets_a_clear_refusal_and_the_server_lives() {
    let dir = root().join("tests/data/hostile");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "the hostile corpus went missing");
    let server = Server::start(&[]);
    let actors = prepare(&server.base, "hostile@example.com").await;
    let client = e2e::web_client()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let before = server.peak_rss_kib();
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let case: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let request = &case["request"];
        let path = request["path"].as_str().expect("request.path");
        let method = request["method"].as_str().unwrap_or("POST");
        let mut builder = client.request(method.parse().unwrap(), server.url(path));
        if let Some(headers) = request["headers"].as_object() {
            for (k, v) in headers {
                builder = builder.header(k, v.as_str().unwrap());
            }
        }
        if request["auth"] == "session" {
            builder = builder.header("authorization", format!("Bearer {}", actors.token));
        }
        let body = body_of(request);
        if !body.is_empty() {
            builder = builder.body(body);
        }
        let started = Instant::now();
        let answer = builder.send().await;
        let took = started.elapsed();
        let (status, text) = match answer {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.text().await.unwrap_or_default())
            }
            Err(e) => {
                failures.push(format!("{name}: no answer: {e}"));
                continue;
            }
        };
        let expect = &case["expect"];
        let allowed: Vec<u16> = expect["status"]
            .as_array()
            .map(|list| list.iter().map(|s| s.as_u64().unwrap() as u16).collect())
            .unwrap_or_default();
        let mut problems = Vec::new();
        if allowed.is_empty() && !(400..500).contains(&status) {
            problems.push(format!("status {status} is not a 4xx"));
        }
        if !allowed.is_empty() && !allowed.contains(&status) {
            problems.push(format!("status {status} not in {allowed:?}"));
        }
        if expect["jsonrpc_error"] == true {
            let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if !parsed["error"]["code"].is_i64() && parsed["result"]["isError"] != true {
                problems.push("no JSON-RPC error and no tool error".into());
            }
        }
        let max_ms = expect["max_ms"].as_u64().unwrap_or(3000);
        if took > Duration::from_millis(max_ms) {
            problems.push(format!("took {took:?} (bound {max_ms} ms)"));
        }
        // Still alive, and still serving.
        let alive = client
            .get(server.url("/.well-known/oauth-authorization-server"))
            .send()
            .await
            .map(|r| r.status().as_u16());
        if alive.as_ref().ok() != Some(&200) {
            problems.push(format!("the server stopped answering ({alive:?})"));
            failures.push(format!("{name}: {}", problems.join("; ")));
            break;
        }
        if !problems.is_empty() {
            let snippet: String = text.chars().take(200).collect();
            failures.push(format!(
                "{name} ({}): {}; got {status} {snippet}",
                case["about"].as_str().unwrap_or(""),
                problems.join("; ")
            ));
        }
    }
    let grew = server.peak_rss_kib().saturating_sub(before);
    println!("{} hostile requests; peak RSS grew {grew} KiB", files.len());
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    assert!(grew < MEMORY_BUDGET_KIB, "peak RSS grew {grew} KiB");
}
