//! Telemetry: logs and traces over HTTP against `mirobody-local`. A
//! request's W3C trace context (the `traceparent` header, or `params._meta.traceparent`,
//! which wins) is continued in every log line of the request and sent on to a person's own
//! MCP server (the Python SDK's server records what reached it); garbage is ignored; the
//! closing `request` line names the caller's kind and a keyed user hash, never a token, a
//! URL secret, a user id, a reading or a remote URL's query or credential.

use std::path::Path;

use e2e::remote_server::RemoteServer;
use e2e::{Reply, Server, TempDir, bearer, modern, post_json, send};
use serde_json::{Value, json};

const REMOTE_TOKEN: &str = "remote-credential-9f3a";
const QUERY_SECRET: &str = "query-secret-55c1";
const USER: &str = "user-telemetry-4d2b";
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "00f067aa0ba902b7";
const META_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const META_PARENT: &str = "b7ad6b7169203331";
const READING: &str = "187.35";

/// The local server with its log (RUST_LOG=trace) in a file, a remote MCP server that
/// records the trace headers it gets, registered for `USER` as `shop`.
struct Setup {
    server: Server,
    token: String,
    remote: RemoteServer,
    trace_log: std::path::PathBuf,
    log: std::path::PathBuf,
    _dir: TempDir,
}

async fn setup() -> Setup {
    let dir = TempDir::new("telemetry");
    let trace_log = dir.0.join("remote-trace.jsonl");
    let log = dir.0.join("server.log");
    let remote = RemoteServer::start(&[
        "--token",
        REMOTE_TOKEN,
        "--trace-log",
        trace_log.to_str().unwrap(),
    ]);
    let env = [
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
        ("RUST_LOG", "trace"),
    ];
    let server = Server::start_logging(&env, std::fs::File::create(&log).unwrap());
    let token = server.token(USER);
    let registered = api(
        &server,
        "POST",
        "/api/user/mcp-servers",
        &token,
        json!({
            "name": "shop",
            "url": format!("{}?k={QUERY_SECRET}", remote.url()),
            "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
        }),
    )
    .await;
    assert_eq!(registered.status, 201, "{}", registered.body);
    // Only what comes next counts (the registration probed the server).
    std::fs::write(&trace_log, "").unwrap();
    Setup {
        server,
        token,
        remote,
        trace_log,
        log,
        _dir: dir,
    }
}

async fn api(server: &Server, method: &str, path: &str, token: &str, body: Value) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    send(method, &server.url(path), &headers, Some(body.to_string())).await
}

/// A 2026-07-28 `tools/call` to `url` with extra headers and extra `_meta` keys.
async fn tools_call(
    url: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    meta: Value,
    name: &str,
    arguments: Value,
) -> Reply {
    let (mut all, mut body) = modern(
        1,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    if let Some(token) = token {
        all.extend(bearer(token));
    }
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    if let Some(extra) = meta.as_object() {
        for (key, value) in extra {
            body["params"]["_meta"][key] = value.clone();
        }
    }
    post_json(url, &all, &body).await
}

/// The server's log without ANSI colours, one entry per line.
fn log_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain.lines().map(str::to_string).collect()
}

/// `name=value` in a text log line (a quoted value without its quotes).
fn field(line: &str, name: &str) -> Option<String> {
    let at = line.find(&format!("{name}="))? + name.len() + 1;
    let rest = &line[at..];
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.split('"').next().map(str::to_string);
    }
    Some(
        rest.split([' ', '}', ':'])
            .next()
            .unwrap_or_default()
            .to_string(),
    )
}

/// The closing `request` line of the request with this trace id.
fn closing_line(lines: &[String], trace_id: &str) -> String {
    lines
        .iter()
        .find(|l| {
            l.contains(&format!("trace_id={trace_id}"))
                && l.contains("status=")
                && l.contains("duration_ms=")
        })
        .unwrap_or_else(|| panic!("no closing line for {trace_id}:\n{}", lines.join("\n")))
        .clone()
}

/// Every line logged with the request's id carries its trace id, and there are several.
fn assert_correlated(lines: &[String], request_id: &str, trace_id: &str) {
    let of_request: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(&format!("request_id={request_id}")))
        .collect();
    assert!(of_request.len() >= 3, "{of_request:#?}");
    for line in &of_request {
        assert!(line.contains(&format!("trace_id={trace_id}")), "{line}");
    }
    for line in lines
        .iter()
        .filter(|l| l.contains(&format!("trace_id={trace_id}")))
    {
        assert!(line.contains(&format!("request_id={request_id}")), "{line}");
    }
}

/// What reached the remote server, one entry per POST.
fn remote_saw(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn forwarded_call(seen: &[Value]) -> &Value {
    seen.iter()
        .find(|s| s["method"] == "tools/call")
        .unwrap_or_else(|| panic!("no forwarded tools/call: {seen:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_traceparent_header_is_continued_in_the_logs_and_to_the_users_mcp_server() {
    let setup = setup().await;
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let reply = tools_call(
        &setup.server.url("/mcp"),
        Some(&setup.token),
        &[
            ("traceparent", traceparent.as_str()),
            ("tracestate", "callervendor=private-state"),
        ],
        json!({}),
        "mcp__shop__lookup_order",
        json!({"order_number": "A1001"}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply.body.contains("order A1001: shipped"),
        "{}",
        reply.body
    );

    let seen = remote_saw(&setup.trace_log);
    let call = forwarded_call(&seen);
    let sent = call["traceparent"].as_str().expect("a traceparent header");
    assert!(sent.starts_with(&format!("00-{TRACE}-")), "{sent}");
    assert!(sent.ends_with("-01"), "{sent}");
    assert!(!sent.contains(PARENT), "our own span is the parent: {sent}");
    // 2026-07-28: the same context in `_meta`; the caller's tracestate stays with us.
    assert_eq!(call["meta_traceparent"], sent, "{call}");
    assert_eq!(call["tracestate"], Value::Null, "{call}");

    drop(setup.remote);
    let mut server = setup.server;
    server.terminate(std::time::Duration::from_secs(5));
    let lines = log_lines(&setup.log);
    let closing = closing_line(&lines, TRACE);
    assert_eq!(
        field(&closing, "route").as_deref(),
        Some("POST /mcp"),
        "{closing}"
    );
    assert_eq!(
        field(&closing, "caller").as_deref(),
        Some("token"),
        "{closing}"
    );
    assert_eq!(field(&closing, "mcp_method").as_deref(), Some("tools/call"));
    assert_eq!(
        field(&closing, "tool").as_deref(),
        Some("external"),
        "{closing}"
    );
    assert_eq!(field(&closing, "status").as_deref(), Some("200"));
    let user = field(&closing, "user").expect("a user hash");
    assert_eq!(user.len(), 16, "{closing}");
    assert!(user.bytes().all(|b| b.is_ascii_hexdigit()), "{closing}");
    let request_id = field(&closing, "request_id").expect("a request id");
    assert_correlated(&lines, &request_id, TRACE);
}

#[tokio::test(flavor = "multi_thread")]
async fn meta_traceparent_on_a_modern_tools_call_wins_and_reaches_the_users_mcp_server() {
    let setup = setup().await;
    let header = format!("00-{TRACE}-{PARENT}-01");
    let meta = format!("00-{META_TRACE}-{META_PARENT}-01");
    let reply = tools_call(
        &setup.server.url("/mcp"),
        Some(&setup.token),
        &[("traceparent", header.as_str())],
        json!({ "traceparent": meta }),
        "mcp__shop__lookup_order",
        json!({"order_number": "A1002"}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let seen = remote_saw(&setup.trace_log);
    let call = forwarded_call(&seen);
    let sent = call["traceparent"].as_str().expect("a traceparent header");
    assert!(sent.starts_with(&format!("00-{META_TRACE}-")), "{sent}");
    assert_eq!(call["meta_traceparent"], sent, "{call}");

    drop(setup.remote);
    let mut server = setup.server;
    server.terminate(std::time::Duration::from_secs(5));
    let lines = log_lines(&setup.log);
    let closing = closing_line(&lines, META_TRACE);
    let request_id = field(&closing, "request_id").expect("a request id");
    assert_correlated(&lines, &request_id, META_TRACE);
    assert!(
        !lines
            .iter()
            .any(|l| l.contains(&format!("trace_id={TRACE}"))),
        "the header lost to _meta"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_oversized_or_all_zero_trace_context_is_ignored() {
    let dir = TempDir::new("telemetry-garbage");
    let log = dir.0.join("server.log");
    let server = Server::start_logging(
        &[("RUST_LOG", "debug")],
        std::fs::File::create(&log).unwrap(),
    );
    let oversized = format!("00-{TRACE}-{PARENT}-01{}", "-ab".repeat(3000));
    let zero = format!("00-{}-{PARENT}-01", "0".repeat(32));
    let upper = format!("00-{}-{PARENT}-01", TRACE.to_uppercase());
    for bad in [
        "garbage-tp",
        oversized.as_str(),
        zero.as_str(),
        upper.as_str(),
    ] {
        let reply = tools_call(
            &server.url("/mcp"),
            None,
            &[("traceparent", bad)],
            json!({ "traceparent": bad }),
            "query_health_indicators",
            json!({}),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert!(reply.json()["result"].is_object(), "{}", reply.body);
        assert!(!reply.body.contains(bad) && !reply.body.contains(TRACE));
        for (_, value) in reply.headers.iter() {
            assert!(!value.to_str().unwrap_or_default().contains(TRACE));
        }
    }
    drop(server);
    let lines = log_lines(&log);
    let closings: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("route=\"POST /mcp\"") && l.contains("status=200"))
        .collect();
    assert_eq!(closings.len(), 4, "{lines:#?}");
    for line in &closings {
        let trace = field(line, "trace_id").unwrap();
        assert_eq!(trace.len(), 32, "{line}");
        assert_ne!(trace, TRACE);
        assert_ne!(trace, "0".repeat(32));
        assert_eq!(field(line, "caller").as_deref(), Some("anonymous"));
    }
    let text = lines.join("\n");
    assert!(!text.contains("garbage-tp") && !text.contains(TRACE));
}

/// The log-leak check extended to the new fields: a signed-in tools/call, a call on a
/// personal URL, an upload and a forwarded call, with RUST_LOG=trace.
#[tokio::test(flavor = "multi_thread")]
async fn the_new_log_fields_leak_no_secret_and_no_health_data() {
    let setup = setup().await;
    let server = &setup.server;
    let mut headers = bearer(&setup.token);
    headers.push(("content-type".into(), "text/csv".into()));
    let csv = format!("indicator,value,unit,time,source\nGlucose,{READING},mg/dL,2026-01-10,Lab\n");
    let uploaded = send("POST", &server.url("/api/data/health"), &headers, Some(csv)).await;
    assert!(uploaded.status < 300, "{}", uploaded.body);
    let personal = api(server, "POST", "/personal/mcp", &setup.token, json!({})).await;
    let url = personal.json()["data"]["url"].as_str().unwrap().to_string();
    let secret = url.rsplit('/').next().unwrap().to_string();
    assert!(secret.len() >= 16, "{url}");
    let on_url = tools_call(
        &url,
        None,
        &[],
        json!({}),
        "query_health_indicators",
        json!({"keywords": ["glucose"]}),
    )
    .await;
    assert!(on_url.body.contains(READING), "{}", on_url.body);
    let forwarded = tools_call(
        &server.url("/mcp"),
        Some(&setup.token),
        &[],
        json!({}),
        "mcp__shop__lookup_order",
        json!({"order_number": "A1003"}),
    )
    .await;
    assert!(forwarded.body.contains("order A1003"), "{}", forwarded.body);

    drop(setup.remote);
    let mut server = setup.server;
    server.terminate(std::time::Duration::from_secs(5));
    let lines = log_lines(&setup.log);
    let text = lines.join("\n");
    for secret in [
        setup.token.as_str(),
        secret.as_str(),
        USER,
        READING,
        REMOTE_TOKEN,
        QUERY_SECRET,
        "order A1003",
    ] {
        assert!(!text.contains(secret), "{secret} reached the log");
    }
    let closing = |route: &str, caller: &str| {
        lines.iter().any(|l| {
            field(l, "route").as_deref() == Some(route)
                && field(l, "caller").as_deref() == Some(caller)
                && field(l, "user").is_some_and(|u| u.len() == 16)
                && field(l, "request_id").is_some()
                && field(l, "trace_id").is_some_and(|t| t.len() == 32)
        })
    };
    assert!(closing("POST /api/data/health", "token"), "{text}");
    assert!(closing("POST /mcp/{secret}", "url"), "{text}");
    assert!(closing("POST /mcp", "token"), "{text}");
}
