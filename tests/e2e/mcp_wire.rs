//! Wire behaviour as data (A1-A4, A6): every file in `tests/data/wire/` is one request
//! and the response a user must see (HTTP status, JSON-RPC code, result fields,
//! headers). Adding a case is adding a file; `tests/data/wire/README.md` documents the
//! format this harness reads. Cases that need other settings (a URI prefix, resource
//! dirs) get their own server.

use std::collections::BTreeMap;

use e2e::{Reply, Server, contains, modern, root, send};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wire_case_behaves_as_recorded() {
    let dir = root().join("tests/data/wire");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        // The corpus's format, documented next to the cases; every other file is a case.
        .filter(|p| p.file_name().is_none_or(|n| n != "README.md"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "the wire corpus went missing");
    let mut servers: BTreeMap<String, Server> = BTreeMap::new();
    let mut failures = Vec::new();
    for file in &files {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let env_key = case.get("env").map(Value::to_string).unwrap_or_default();
        let server = servers.entry(env_key).or_insert_with(|| {
            let env: Vec<(String, String)> = case
                .get("env")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Server::start(&env)
        });
        let reply = perform(server, &case["request"]).await;
        let problems = check(&reply, &case["expect"]);
        if !problems.is_empty() {
            failures.push(format!(
                "{} ({}: {}):\n    {}\n    got {} {}",
                file.file_name().unwrap().to_string_lossy(),
                case["spec"].as_str().unwrap_or(""),
                case["about"].as_str().unwrap_or(""),
                problems.join("\n    "),
                reply.status,
                reply.body
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} wire cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

async fn perform(server: &Server, request: &Value) -> Reply {
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("POST");
    let path = request
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or("/mcp");
    let mut headers: Vec<(String, String)> =
        vec![("content-type".into(), "application/json".into())];
    let mut body = None;
    if let Some(m) = request.get("modern") {
        let (h, mut b) = modern(0, m["method"].as_str().unwrap(), m["params"].clone());
        b["id"] = m["id"].clone();
        if request.get("drop_meta").is_some() {
            b["params"].as_object_mut().unwrap().remove("_meta");
        }
        for key in request
            .get("drop_meta_keys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            b["params"]["_meta"]
                .as_object_mut()
                .unwrap()
                .remove(key.as_str().unwrap());
        }
        if let Some(version) = request.get("meta_version") {
            b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = version.clone();
        }
        headers.extend(h);
        body = Some(b.to_string());
    } else if let Some(json) = request.get("json") {
        body = Some(json.to_string());
    } else if let Some(raw) = request.get("raw") {
        body = Some(raw.as_str().unwrap().to_string());
    }
    for (name, value) in request
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        if let Some(value) = value.as_str() {
            // `{{token:USER}}` stands for a JWT the server accepts for USER.
            let value = match value
                .split_once("{{token:")
                .and_then(|(head, rest)| Some((head, rest.split_once("}}")?)))
            {
                Some((head, (user, tail))) => format!("{head}{}{tail}", server.token(user)),
                None => value.to_string(),
            };
            headers.push((name.clone(), value));
        }
    }
    send(method, &server.url(path), &headers, body).await
}

fn check(reply: &Reply, expect: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let mut fail = |p: String| problems.push(p);
    let expect = expect.as_object().unwrap();
    let json = || serde_json::from_str::<Value>(&reply.body).unwrap_or(Value::Null);
    for (key, want) in expect {
        match key.as_str() {
            "status" => {
                if reply.status != want.as_u64().unwrap() as u16 {
                    fail(format!("status: want {want}"));
                }
            }
            "id" => {
                if json().get("id") != Some(want) {
                    fail(format!("id: want {want}"));
                }
            }
            "code" => {
                if json().pointer("/error/code") != Some(want) {
                    fail(format!("error.code: want {want}"));
                }
            }
            "data" => {
                if !json()
                    .pointer("/error/data")
                    .is_some_and(|d| contains(d, want))
                {
                    fail(format!("error.data: want {want}"));
                }
            }
            "message_contains" => {
                let message = json()
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if !message.contains(want.as_str().unwrap()) {
                    fail(format!("error.message should contain {want}"));
                }
            }
            "result" => {
                if !json().get("result").is_some_and(|r| contains(r, want)) {
                    fail(format!("result should contain {want}"));
                }
            }
            "result_exact" => {
                if json().get("result") != Some(want) {
                    fail(format!("result should be exactly {want}"));
                }
            }
            "result_absent" => {
                for field in want.as_array().unwrap() {
                    if json()
                        .get("result")
                        .and_then(|r| r.get(field.as_str().unwrap()))
                        .is_some()
                    {
                        fail(format!("result should not have {field}"));
                    }
                }
            }
            "headers" => {
                for (name, value) in want.as_object().unwrap() {
                    if reply.header(name) != value.as_str() {
                        fail(format!(
                            "header {name}: want {value}, got {:?}",
                            reply.header(name)
                        ));
                    }
                }
            }
            "header_contains" => {
                for (name, value) in want.as_object().unwrap() {
                    if !reply
                        .header(name)
                        .unwrap_or("")
                        .contains(value.as_str().unwrap())
                    {
                        fail(format!("header {name} should contain {value}"));
                    }
                }
            }
            "absent_headers" => {
                for name in want.as_array().unwrap() {
                    if reply.header(name.as_str().unwrap()).is_some() {
                        fail(format!("header {name} should be absent"));
                    }
                }
            }
            "body_empty" => {
                if !reply.body.is_empty() {
                    fail("body should be empty".into());
                }
            }
            "body_contains" => {
                if !reply.body.contains(want.as_str().unwrap()) {
                    fail(format!("body should contain {want}"));
                }
            }
            "body_lacks" => {
                if reply.body.contains(want.as_str().unwrap()) {
                    fail(format!("body should not contain {want}"));
                }
            }
            "sorted_names" => {
                let body = json();
                let names: Vec<&str> = body
                    .pointer(want.as_str().unwrap())
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
                    .unwrap_or_default();
                let mut sorted = names.clone();
                sorted.sort();
                if names.is_empty() || names != sorted {
                    fail(format!(
                        "names at {want} should be non-empty and sorted: {names:?}"
                    ));
                }
            }
            other => fail(format!("unknown expectation {other:?} in the case file")),
        }
    }
    problems
}
