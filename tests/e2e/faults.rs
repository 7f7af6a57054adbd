//! Faults: the real `mirobody-local` on DynamoDB (moto) and real remote MCP
//! servers, with a loopback TCP proxy in between that the test turns into the fault: the
//! store unreachable, slow or throttling; a remote server that resets, trickles bytes or
//! answers garbage. And a Lambda function whose keys secret cannot be read at cold start.
//! Each test's doc comment writes down the expected answer; the test asserts it.

use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::{Reply, Server, TempDir, bearer, binary, listed_tools, python, root, rpc, send};
use mirobody::store::{DynamoStore, DynamoTables};
use mirobody::testing::Moto;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest any one request may take while the store misbehaves: the store's own
/// budget (12 s per operation) plus room for a loaded machine.
const BOUND: Duration = Duration::from_secs(20);

/// Seconds our server gives a user's MCP server (`MIROBODY_REMOTE_TIMEOUT_SECS`).
const REMOTE_TIMEOUT_SECS: u64 = 4;

const STORAGE_UNAVAILABLE: &str = "storage is unavailable; try again shortly";

const CSV: &str = "indicator,value,unit,time,source\n\
HbA1c,6.1,%,2026-01-10,City Lab\n\
HbA1c,5.9,%,2026-02-11,City Lab\n\
HbA1c,5.7,%,2026-03-12T09:30:00,City Lab\n";

// ---------------------------------------------------------------- the fault proxy

/// What the proxy does with the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Forwards every request.
    Pass,
    /// Closes every connection as soon as it is accepted (an unreachable service).
    Down,
    /// Forwards every request after this pause.
    Slow(Duration),
    /// Answers DynamoDB's throttling error (HTTP 400) to requests whose `X-Amz-Target`
    /// contains this operation (any request for ""); forwards the others.
    Throttle(&'static str),
    /// Reads the request, then resets the connection (RST).
    Reset,
    /// Answers 200 with a JSON content length, then one byte every 300 ms.
    Trickle,
    /// Answers 200 `application/json` with this body.
    Garbage(&'static str),
}

/// A loopback HTTP/1.1 proxy to `127.0.0.1:<upstream>`, request by request (each
/// forwarded on its own upstream connection), whose behaviour the test switches.
struct Proxy {
    port: u16,
    mode: Arc<Mutex<Mode>>,
    /// Requests answered with the throttling error so far.
    throttled: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(Mode::Pass));
        let throttled = Arc::new(AtomicUsize::new(0));
        let (m, t) = (mode.clone(), throttled.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *m.lock().unwrap() == Mode::Down {
                    drop(client);
                    continue;
                }
                tokio::spawn(connection(client, upstream, m.clone(), t.clone()));
            }
        });
        Proxy {
            port,
            mode,
            throttled,
            task,
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// One whole HTTP/1.1 request (head and `Content-Length` body), or `None` at EOF.
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return Some(data);
            }
        }
        let n = client.read(&mut buffer).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buffer[..n]);
    }
}

/// The request with `Connection: close` (the upstream answer then ends at EOF).
fn closing(request: &[u8]) -> Vec<u8> {
    let end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&request[..end]);
    let mut out = String::new();
    for line in head.split("\r\n") {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&request[end + 4..]);
    bytes
}

async fn connection(
    mut client: TcpStream,
    upstream: u16,
    mode: Arc<Mutex<Mode>>,
    throttled: Arc<AtomicUsize>,
) {
    while let Some(request) = read_request(&mut client).await {
        let now = *mode.lock().unwrap();
        let head = String::from_utf8_lossy(&request).to_ascii_lowercase();
        match now {
            Mode::Down => return,
            Mode::Reset => {
                let _ = client.set_zero_linger();
                return;
            }
            Mode::Garbage(body) => {
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = client.write_all(answer.as_bytes()).await;
                continue;
            }
            Mode::Trickle => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n";
                if client.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for byte in b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{"
                    .iter()
                    .cycle()
                    .take(400)
                {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    if client.write_all(&[*byte]).await.is_err() {
                        return;
                    }
                }
                return;
            }
            Mode::Throttle(op)
                if head.lines().any(|l| {
                    l.starts_with("x-amz-target:") && l.contains(&op.to_ascii_lowercase())
                }) =>
            {
                throttled.fetch_add(1, Ordering::SeqCst);
                let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}"#;
                let answer = format!(
                    "HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\nx-amzn-RequestId: fault-proxy\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                if client.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
                continue;
            }
            Mode::Slow(pause) => tokio::time::sleep(pause).await,
            Mode::Pass | Mode::Throttle(_) => {}
        }
        let Ok(mut server) = TcpStream::connect((Ipv4Addr::LOCALHOST, upstream)).await else {
            return;
        };
        if server.write_all(&closing(&request)).await.is_err() {
            return;
        }
        let mut answer = Vec::new();
        if server.read_to_end(&mut answer).await.is_err() {
            return;
        }
        if client.write_all(&answer).await.is_err() {
            return;
        }
        // The answer said `Connection: close` (it was asked to): the client opens a new
        // connection for its next request.
        return;
    }
}

// ---------------------------------------------------------------- the store

/// Tables in moto, and the server's settings to reach them through `endpoint`.
async fn tables(moto: &Moto, label: &str, endpoint: &str) -> Vec<(String, String)> {
    let config = crate::runtime_api::sdk_config(moto).await;
    let tables = DynamoTables {
        keys: format!("{label}-keys"),
        data: format!("{label}-data"),
    };
    DynamoStore::create_tables(&aws_sdk_dynamodb::Client::new(&config), &tables)
        .await
        .expect("tables created in moto");
    vec![
        ("MIROBODY_STORE".into(), "dynamodb".into()),
        ("MIROBODY_KEYS_TABLE".into(), tables.keys),
        ("MIROBODY_DATA_TABLE".into(), tables.data),
        ("AWS_ENDPOINT_URL_DYNAMODB".into(), endpoint.to_string()),
    ]
}

/// Moto, a proxy to it, and a server whose store is reached through the proxy.
async fn through_proxy(label: &str) -> (Moto, Proxy, Server) {
    let moto = Moto::start();
    let port: u16 = moto.endpoint.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = Proxy::start(port).await;
    let settings = tables(&moto, label, &proxy.endpoint()).await;
    let settings: Vec<(&str, &str)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let server = Server::start(&settings);
    (moto, proxy, server)
}

/// A request, timed: its reply and how long it took (asserted under [`BOUND`]).
async fn timed<F: std::future::Future<Output = Reply>>(what: &str, request: F) -> Reply {
    let started = Instant::now();
    let reply = request.await;
    let took = started.elapsed();
    println!("{what}: {} in {took:?}", reply.status);
    assert!(took < BOUND, "{what} took {took:?}");
    reply
}

async fn upload(server: &Server, token: &str, body: &str) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "text/csv".into()));
    send(
        "POST",
        &server.url("/api/data/health"),
        &headers,
        Some(body.to_string()),
    )
    .await
}

async fn summary(server: &Server, token: &str) -> Reply {
    send("GET", &server.url("/api/data"), &bearer(token), None).await
}

async fn mcp(server: &Server, token: Option<&str>, method: &str, params: Value) -> Reply {
    rpc(&server.url("/mcp"), token, method, params).await
}

async fn hba1c(server: &Server, token: Option<&str>) -> Reply {
    mcp(
        server,
        token,
        "tools/call",
        json!({"name": "query_health_indicators",
               "arguments": {"keywords": ["HbA1c"], "aggregate": "stats"}}),
    )
    .await
}

/// The HbA1c readings the store holds for the caller (through the tool).
async fn hba1c_count(server: &Server, token: &str) -> Value {
    let reply = hba1c(server, Some(token)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = reply.json();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    answer["result"]["structuredContent"]["indicators"][0]["count"].clone()
}

fn assert_storage_503(reply: &Reply) {
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(reply.json()["msg"], STORAGE_UNAVAILABLE, "{}", reply.body);
}

/// Fault 1, the store unreachable mid-run (every connection to it closed). Expected:
/// anonymous `tools/list` still answers 200 with the data tools (gating fails open); an
/// anonymous data-tool call answers 200 with a tool error saying sign-in (the data behind
/// it) is unavailable right now, never a 5xx; a bearer token
/// is refused with 503 and the storage message on `/mcp` (never admitted unchecked), and
/// `/api/data` answers 503 with the storage message; every answer within [`BOUND`]. When
/// the store is back, the same token lists, queries and uploads as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_1_an_unreachable_store_fails_closed_for_tokens_and_open_for_gating() {
    let (_moto, proxy, server) = through_proxy("down").await;
    let token = server.token("dora");
    assert_eq!(upload(&server, &token, CSV).await.status, 200);
    assert_eq!(hba1c_count(&server, &token).await, 3);

    proxy.set(Mode::Down);
    let listed = timed(
        "anonymous tools/list, store down",
        mcp(&server, None, "tools/list", json!({})),
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let names = listed_tools(&listed.json());
    assert!(
        names.contains(&"query_health_indicators".to_string())
            && names.contains(&"get_genetic_data".to_string()),
        "{names:?}"
    );
    let anonymous = timed("anonymous data tool, store down", hba1c(&server, None)).await;
    assert_eq!(anonymous.status, 200, "{}", anonymous.body);
    let answer = anonymous.json();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "sign-in is unavailable right now; try again shortly",
        "{answer}"
    );
    let with_token = timed("bearer data tool, store down", hba1c(&server, Some(&token))).await;
    assert_storage_503(&with_token);
    let listed = timed(
        "bearer tools/list, store down",
        mcp(&server, Some(&token), "tools/list", json!({})),
    )
    .await;
    assert_storage_503(&listed);
    assert_storage_503(&timed("GET /api/data, store down", summary(&server, &token)).await);
    assert_storage_503(&timed("upload, store down", upload(&server, &token, CSV)).await);

    proxy.set(Mode::Pass);
    assert_eq!(hba1c_count(&server, &token).await, 3);
    let reply = summary(&server, &token).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["data"]["health"], true, "{}", reply.body);
    let names = listed_tools(
        &mcp(&server, Some(&token), "tools/list", json!({}))
            .await
            .json(),
    );
    assert!(names.contains(&"query_health_indicators".to_string()));
}

/// Fault 2, a slow store (300 ms added to every DynamoDB request). Expected: uploads,
/// `tools/list`, a data-tool call and `/api/data` all succeed, each within [`BOUND`];
/// the latencies are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_2_a_slow_store_still_answers_in_bounded_time() {
    let (_moto, proxy, server) = through_proxy("slow").await;
    let token = server.token("sam");
    proxy.set(Mode::Slow(Duration::from_millis(300)));
    let reply = timed("upload, store +300 ms", upload(&server, &token, CSV)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = timed(
        "tools/list, store +300 ms",
        mcp(&server, Some(&token), "tools/list", json!({})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(listed_tools(&reply.json()).contains(&"query_health_indicators".to_string()));
    let started = Instant::now();
    assert_eq!(hba1c_count(&server, &token).await, 3);
    let took = started.elapsed();
    println!("data tool, store +300 ms: {took:?}");
    assert!(took < BOUND, "{took:?}");
    let reply = timed("GET /api/data, store +300 ms", summary(&server, &token)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// Fault 3, a throttling store (DynamoDB's `ProvisionedThroughputExceededException`,
/// HTTP 400). What the code does: the SDK retries the throttled request (standard retry
/// mode), then the store reports it unavailable. Expected: an upload while every write
/// (readings go out as TransactWriteItems) is throttled answers 503
/// "retry the same upload" within [`BOUND`], after more than one attempt; reads throttled the same way answer 503 on `/api/data` and on `/mcp` for
/// a token. Afterwards nothing is half-written: the store holds exactly the readings of
/// the uploads that answered 200, and the refused upload, retried, is written once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_3_a_throttling_store_answers_503_and_writes_nothing_half() {
    let (_moto, proxy, server) = through_proxy("throttle").await;
    let token = server.token("theo");
    assert_eq!(upload(&server, &token, CSV).await.status, 200);

    let more = "indicator,value,unit,time,source\n\
HbA1c,5.5,%,2026-04-10,City Lab\n\
HbA1c,5.4,%,2026-05-10,City Lab\n";
    proxy.set(Mode::Throttle("TransactWriteItems"));
    let reply = timed("upload, writes throttled", upload(&server, &token, more)).await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert_eq!(
        reply.json()["msg"],
        "saving readings failed: storage is unavailable; retry the same upload (it never duplicates rows)",
        "{}",
        reply.body
    );
    let attempts = proxy.throttled.load(Ordering::SeqCst);
    println!("throttled write attempts: {attempts}");
    assert!(attempts > 1, "the throttled write was not retried");

    proxy.set(Mode::Throttle(""));
    assert_storage_503(&timed("GET /api/data, throttled", summary(&server, &token)).await);
    let listed = timed(
        "bearer tools/list, throttled",
        mcp(&server, Some(&token), "tools/list", json!({})),
    )
    .await;
    assert_storage_503(&listed);

    proxy.set(Mode::Pass);
    assert_eq!(
        hba1c_count(&server, &token).await,
        3,
        "a refused upload wrote"
    );
    assert_eq!(upload(&server, &token, more).await.status, 200);
    assert_eq!(hba1c_count(&server, &token).await, 5);
}

// ---------------------------------------------------------------- remote MCP servers

fn free_port() -> u16 {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `tests/clients/remote_server.py` on a free port, killed on drop (as in
/// `external_servers.rs`).
struct Remote {
    child: Child,
    port: u16,
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Remote {
    fn python() -> Remote {
        let port = free_port();
        let mut child = Command::new(python())
            .arg(root().join("tests/clients/remote_server.py"))
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Python MCP server starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("remote_server.py exited ({status})");
            }
            assert!(Instant::now() < deadline, "remote_server.py did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Remote { child, port }
    }
}

async fn api(server: &Server, method: &str, path: &str, token: &str, body: Option<Value>) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    send(
        method,
        &server.url(path),
        &headers,
        body.map(|b| b.to_string()),
    )
    .await
}

/// Fault 4, remote MCP servers that misbehave after registering: one resets every
/// connection, one trickles its answer a byte at a time (past the remote timeout), one
/// answers non-JSON, one answers a JSON-RPC message of the wrong shape. Expected: our
/// `tools/list` answers within the remote timeout plus a margin, with the healthy server's
/// tools and none of the others', each of them named in `io.mirobody/unavailableServers`
/// and recorded with a `last_connect_error`; a call to one of their tools answers
/// `isError: true`; the healthy server's tool still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_4_misbehaving_remote_servers_are_left_out_and_the_others_answer() {
    let remote = Remote::python();
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]);
    let token = server.token("rita");
    let faults = [
        ("resets", Mode::Reset),
        ("trickles", Mode::Trickle),
        ("garbage", Mode::Garbage("<html>this is not JSON</html>")),
        (
            "wrongrpc",
            Mode::Garbage(r#"{"jsonrpc":"2.0","id":"nobody-asked","result":"tools? no"}"#),
        ),
    ];
    let mut proxies = Vec::new();
    for (name, _) in faults.iter() {
        let proxy = Proxy::start(remote.port).await;
        let url = format!("http://127.0.0.1:{}/mcp", proxy.port);
        let reply = api(
            &server,
            "POST",
            "/api/user/mcp-servers",
            &token,
            Some(json!({"name": name, "url": url})),
        )
        .await;
        assert_eq!(reply.status, 201, "{name}: {}", reply.body);
        proxies.push(proxy);
    }
    let steady = format!("http://127.0.0.1:{}/mcp", remote.port);
    let reply = api(
        &server,
        "POST",
        "/api/user/mcp-servers",
        &token,
        Some(json!({"name": "steady", "url": steady})),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    for (proxy, (_, mode)) in proxies.iter().zip(faults.iter()) {
        proxy.set(*mode);
    }

    let started = Instant::now();
    let reply = mcp(&server, Some(&token), "tools/list", json!({})).await;
    let took = started.elapsed();
    println!("tools/list with four misbehaving servers: {took:?}");
    assert!(
        took < Duration::from_secs(REMOTE_TIMEOUT_SECS + 4),
        "{took:?}"
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let listed = reply.json();
    let names = listed_tools(&listed);
    assert!(
        names.contains(&"mcp__steady__lookup_order".to_string()),
        "{names:?}"
    );
    let notes = listed["result"]["_meta"]["io.mirobody/unavailableServers"].clone();
    for (name, _) in faults.iter() {
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with(&format!("mcp__{name}__"))),
            "{name}: {names:?}"
        );
        assert!(
            notes
                .as_array()
                .is_some_and(|n| n.iter().any(|note| note["server"] == *name)),
            "{name} has no note: {notes}"
        );
        let called = mcp(
            &server,
            Some(&token),
            "tools/call",
            json!({"name": format!("mcp__{name}__lookup_order"),
                   "arguments": {"order_number": "B7"}}),
        )
        .await;
        assert_eq!(called.status, 200, "{}", called.body);
        assert_eq!(called.json()["result"]["isError"], true, "{}", called.body);
        let view = api(
            &server,
            "GET",
            &format!("/api/user/mcp-servers/{name}"),
            &token,
            None,
        )
        .await;
        let error = &view.json()["last_connect_error"];
        println!("{name}: last_connect_error {error}");
        assert!(
            error.as_str().is_some_and(|e| !e.is_empty()),
            "{name}: {}",
            view.body
        );
    }
    let called = mcp(
        &server,
        Some(&token),
        "tools/call",
        json!({"name": "mcp__steady__lookup_order", "arguments": {"order_number": "B7"}}),
    )
    .await;
    assert_eq!(
        called.json()["result"]["content"][0]["text"],
        "order B7: shipped",
        "{}",
        called.body
    );
}

// ---------------------------------------------------------------- keys at cold start

/// A Lambda Runtime API that only records whether the function asked for an event (and
/// never gives it one).
async fn runtime_api() -> (u16, Arc<AtomicBool>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let polled = Arc::new(AtomicBool::new(false));
    let seen = polled.clone();
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                if String::from_utf8_lossy(&request).contains("/invocation/next") {
                    seen.store(true, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                let _ = socket
                    .write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    (port, polled, task)
}

/// A loopback port that accepts connections and never answers.
async fn black_hole() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (port, task)
}

/// The `mcp` function with `MIROBODY_KEYS_SECRET` set and Secrets Manager at `endpoint`:
/// its exit status, how long it ran, whether it asked for an event, and its output.
async fn cold_start_without_secrets(endpoint: &str) -> (bool, Duration, bool, String) {
    let (api_port, polled, api) = runtime_api().await;
    let dir = TempDir::new("faults-lambda");
    let log = dir.0.join("output.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new(binary("mcp"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{api_port}"))
        .env("AWS_LAMBDA_FUNCTION_NAME", "mirobody-mcp")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/mirobody-mcp")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
        .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
        .env("LAMBDA_TASK_ROOT", &dir.0)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("RUST_LOG", "info")
        .env("MIROBODY_STORE", "dynamodb")
        .env("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
        .env("MIROBODY_KEYS_SECRET", "mirobody-keys")
        .env("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint)
        .env(
            "MCP_PUBLIC_URL",
            "https://abc123.execute-api.us-east-1.amazonaws.com",
        )
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .expect("the mcp function starts");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline || polled.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = started.elapsed();
    api.abort();
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    (
        status.is_some_and(|s| !s.success()),
        took,
        polled.load(Ordering::SeqCst),
        output,
    )
}

/// Fault 5, Secrets Manager unreachable at cold start, refused (a closed loopback port)
/// or silent (a port that accepts and never answers). Expected: the function exits with
/// a failure before it asks the Runtime API for any event (it never serves without its
/// keys), within 20 s, and its output names the setting `MIROBODY_KEYS_SECRET`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_5_an_unreachable_keys_secret_stops_the_cold_start_fast() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    let (silent_port, silent) = black_hole().await;
    let silent_url = format!("http://127.0.0.1:{silent_port}");
    for (what, endpoint) in [
        ("refused", closed.as_str()),
        ("silent", silent_url.as_str()),
    ] {
        let (failed, took, polled, output) = cold_start_without_secrets(endpoint).await;
        println!("Secrets Manager {what}: exited after {took:?}");
        assert!(
            !polled,
            "{what}: it asked for an event without keys:\n{output}"
        );
        assert!(failed, "{what}: it did not exit with a failure:\n{output}");
        assert!(took < BOUND, "{what}: took {took:?}");
        assert!(output.contains("MIROBODY_KEYS_SECRET"), "{what}: {output}");
    }
    silent.abort();
}
