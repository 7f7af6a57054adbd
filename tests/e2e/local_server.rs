//! End to end against the real local server: bodies are
//! bounded per route before anything parses them (a 6 MB hostile JSON body no longer
//! grows the process by hundreds of MiB), and slow or idle clients cannot hold it
//! (header and body read timeouts, a connection limit, graceful shutdown on SIGTERM).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use e2e::{Server, bearer, in_process, post_json, send};
use serde_json::json;

/// `[{"":0},{"":0},…]` of about `bytes` bytes: the parse-amplification body of the issue.
fn hostile_json(bytes: usize) -> String {
    let mut body = String::with_capacity(bytes + 16);
    body.push('[');
    while body.len() < bytes {
        body.push_str("{\"\":0},");
    }
    body.push_str("{\"\":0}]");
    body
}

fn address(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

/// Finding 2: 6 MB of `[{"":0},…]` to `/mcp`, `/oauth/register` and `/auth/signin`, four
/// at once, anonymous: each is 413 (naming the route's cap) and the server's peak memory
/// barely moves (before: 9 → 592 MiB for one, 1.5 GiB for four).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_are_refused_before_parsing_and_memory_stays_flat() {
    let server = Server::start(&[]);
    let body = hostile_json(6 * 1024 * 1024);
    let headers = [("content-type".to_string(), "application/json".to_string())];
    // Warm up (first requests allocate the runtime's buffers), then measure.
    let warm = post_json(&server.url("/mcp"), &[], &json!({})).await;
    assert!(warm.status < 500);
    let before = server.peak_rss_kib();
    let started = Instant::now();
    let tasks: Vec<_> = ["/mcp", "/oauth/register", "/auth/signin", "/mcp"]
        .into_iter()
        .map(|path| {
            let (url, headers, body) = (server.url(path), headers.clone(), body.clone());
            tokio::spawn(async move { send("POST", &url, &headers, Some(body)).await })
        })
        .collect();
    let mut replies = Vec::new();
    for task in tasks {
        replies.push(task.await.unwrap());
    }
    for (reply, cap) in replies
        .iter()
        .zip(["256 KiB", "16 KiB", "16 KiB", "256 KiB"])
    {
        assert_eq!(reply.status, 413, "{}", reply.body);
        assert!(reply.body.contains(cap), "{}", reply.body);
    }
    let grew = server.peak_rss_kib().saturating_sub(before);
    println!(
        "four 6 MB hostile bodies: refused in {:?}, peak RSS grew {grew} KiB",
        started.elapsed()
    );
    assert!(grew < 32 * 1024, "peak RSS grew {grew} KiB");
    // Still serving.
    let ok = post_json(
        &server.url("/mcp"),
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

/// The same caps in `App` itself, so Lambda (whose body is already read) gets them: a
/// body over the route's cap is 413 before the caller is resolved or the body parsed;
/// the upload routes keep their 8 MiB.
#[tokio::test]
async fn the_app_refuses_bodies_over_the_routes_cap_unparsed() {
    let process = in_process(&[]);
    let headers = [("content-type".to_string(), "application/json".to_string())];
    let rpc = process
        .send("POST", "/mcp", &headers, hostile_json(300 * 1024))
        .await;
    assert_eq!(rpc.status, 413, "{}", rpc.body);
    let form = process
        .send("POST", "/auth/signup", &headers, hostile_json(20 * 1024))
        .await;
    assert_eq!(form.status, 413, "{}", form.body);
    // An upload of 1 MB is not refused for its size (it is anonymous: 401).
    let mut headers = headers.to_vec();
    headers.extend(bearer("not-a-token"));
    let upload = process
        .send(
            "POST",
            "/api/data/health",
            &headers,
            hostile_json(1024 * 1024),
        )
        .await;
    assert_eq!(upload.status, 401, "{}", upload.body);
}

/// Finding 6: a half-sent request (headers never finished) is dropped after the header
/// timeout instead of holding its connection (before: still held after 40 s).
#[test]
fn a_half_sent_request_is_dropped_after_the_header_timeout() {
    let server = Server::start(&[("MIROBODY_HEADER_TIMEOUT_SECS", "1")]);
    let mut stream = TcpStream::connect(address(&server)).unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/")
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "the connection was held {took:?}"
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
}

/// Finding 6: a body that stops arriving is 408 after the body timeout.
#[test]
fn a_body_that_stops_arriving_is_408() {
    let server = Server::start(&[("MIROBODY_BODY_TIMEOUT_SECS", "1")]);
    let mut stream = TcpStream::connect(address(&server)).unwrap();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
        )
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(started.elapsed() < Duration::from_secs(5));
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// Finding 6: connections beyond `MIROBODY_MAX_CONNECTIONS` wait (in the backlog) until
/// one closes, instead of each taking memory and a task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let server = Server::start(&[("MIROBODY_MAX_CONNECTIONS", "2")]);
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(address(&server)).unwrap())
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let url = server.url("/.well-known/oauth-authorization-server");
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let reply = e2e::get(&url).await;
        (reply.status, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!waiting.is_finished(), "served beyond the limit");
    drop(idle);
    let (status, took) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("served once a slot is free")
        .unwrap();
    assert_eq!(status, 200);
    assert!(took >= Duration::from_millis(900), "{took:?}");
}

/// Graceful shutdown: SIGTERM stops the server promptly with a clean exit.
#[test]
fn sigterm_shuts_down_cleanly() {
    let mut server = Server::start(&[]);
    let status = server
        .terminate(Duration::from_secs(5))
        .expect("exits within 5 s of SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// `mirobody-local` with `args` and `env` (nothing else from this process's
/// environment but PATH, and a data directory of its own): exit code, stdout, stderr.
fn local_command(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let data = e2e::TempDir::new("local-command");
    let out = std::process::Command::new(e2e::binary("mirobody-local"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MIROBODY_DATA_DIR", &data.0)
        .envs(env.iter().copied())
        .output()
        .expect("mirobody-local runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 30: `--help`, `-h`, `help` and `--version` answer (exit 0) even with a bad
/// setting, which still stops every other command, naming the setting; `mint-token`
/// says which origin its token is for, on stderr (stdout is the token alone).
#[test]
fn the_local_binary_explains_itself() {
    let bad = [("HTTP_PORT", "not-a-port")];
    for flag in ["--help", "-h", "help"] {
        let (code, out, _) = local_command(&[flag], &bad);
        assert_eq!(code, 0, "{flag}");
        assert!(out.contains("Usage:"), "{flag}: {out}");
        for command in [
            "mint-token <user>",
            "seed-demo [user]",
            "migrate",
            "temp-url",
            "routes-template",
            "--version",
        ] {
            assert!(out.contains(command), "{flag} names {command}: {out}");
        }
    }
    let (code, out, _) = local_command(&["--version"], &bad);
    assert_eq!(
        (code, out.trim()),
        (
            0,
            format!("mirobody-local {}", env!("CARGO_PKG_VERSION")).as_str()
        )
    );

    let (code, out, err) = local_command(&["mint-token", "ann"], &bad);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("HTTP_PORT"), "the setting is named: {err}");
    let (code, out, _) = local_command(&["frobnicate"], &[]);
    assert_eq!(code, 2, "{out}");

    let (code, token, err) = local_command(&["mint-token", "ann"], &[("HTTP_PORT", "18777")]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        token.lines().count(),
        1,
        "stdout is the token alone: {token}"
    );
    assert!(
        err.contains(
            "the token is for http://127.0.0.1:18777 (its MCP endpoint http://127.0.0.1:18777/mcp)"
        ),
        "{err}"
    );
}

/// Issue 30: a token minted with another port's settings (the same keys) is refused with
/// a 401 that says it is for another origin; any other bad token gets the usual words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_origin_is_refused_in_words() {
    let server = Server::start(&[]);
    let data = server.data_dir().display().to_string();
    let env = [
        ("MIROBODY_DATA_DIR", data.as_str()),
        ("MIROBODY_FIXTURES", "true"),
        ("HTTP_PORT", "18777"),
    ];
    let (code, token, err) = local_command(&["mint-token", "ann"], &env);
    assert_eq!(code, 0, "{err}");
    let call = |token: String| {
        let server = &server;
        async move {
            e2e::rpc(
                &server.url("/mcp"),
                Some(&token),
                "tools/call",
                json!({ "name": "query_health_indicators", "arguments": {} }),
            )
            .await
        }
    };
    let refused = call(token.trim().to_string()).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("this token was issued for another origin"),
        "{}",
        refused.body
    );
    let garbage = call("not.a.token".to_string()).await;
    assert_eq!(garbage.status, 401);
    assert!(
        garbage.body.contains("missing, expired or not ours"),
        "{}",
        garbage.body
    );
    // The server's own token still works.
    assert_eq!(call(server.token("ann")).await.status, 200);
}
