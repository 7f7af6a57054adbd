//! Helpers for the end-to-end tests: start the real `mirobody-local` binary on a
//! free loopback port, speak HTTP to it, build modern (2026-07-28) requests, run the
//! SDK clients of `tests/clients/`, read the sample events of `events/`, run the app
//! in-process, start a person's own MCP server (`remote_server`), and read
//! `template.yaml` (`template`). Its unit test `wiring` fails when a `tests/e2e/*.rs`
//! file is not a `mod` of the end-to-end binary (`tests/e2e/main.rs`), or a test file
//! sits directly in `tests/` (either would never run).
//!
//! The binaries are built by the test command (`scripts/test`) before the tests run;
//! the clients' dependencies are installed by `scripts/install-test-deps`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use std::sync::Arc;

use mirobody::clock::FakeClock;
use mirobody::identity::Keys;
use mirobody::store::{EmbeddedStore, LocalObjects};
use mirobody::{App, Config, RouteGroup, Runtime, Services};
use serde_json::{Value, json};

pub mod load;
pub mod oauth_flow;
pub mod remote_server;
pub mod template;
#[cfg(test)]
mod wiring;

pub const MODERN: &str = "2026-07-28";

/// The workspace root.
/// A builder for a test's HTTP client. The build's reqwest takes its TLS crypto from the
/// process (the product hands its own client a ring config): ring is installed first.
pub fn web_client() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf()
}

/// The cargo running the tests, as a command a test can run in the workspace, without
/// the variables cargo sets for the test itself (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, ...).
/// Inherited, they reach the build scripts of what that cargo builds: ring's tracks
/// `CARGO_MANIFEST_DIR`, so a build started from a test (`cargo lambda watch`) found it
/// changed and rebuilt ring, rustls, reqwest and mirobody, and the next `scripts/test`
/// rebuilt them back (its clippy and build phases both recompiled them).
pub fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY_",
            "CARGO_TARGET_TMPDIR",
        ]
        .iter()
        .any(|set_for_the_test| name.starts_with(set_for_the_test))
        {
            command.env_remove(name.as_ref());
        }
    }
    command.current_dir(root());
    command
}

/// A built binary of this workspace, next to the running test executable.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built: run scripts/test (it builds the binaries first)",
        path.display()
    );
    path
}

/// The Python of `.venv`, which has the Python SDK the clients in `tests/clients/` use.
pub fn python() -> PathBuf {
    let venv = root().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "no .venv with the Python SDK: run scripts/install-test-deps (scripts/test does)"
    );
    venv
}

/// Runs a client script from the workspace root; its last stdout line that is a JSON
/// object is its report.
pub fn run_client(program: &Path, args: &[&str]) -> Value {
    let output = Command::new(program)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("{} does not run ({e})", program.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} {args:?} failed ({}):\nstderr:\n{stderr}\nstdout:\n{stdout}",
        program.display(),
        output.status
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!(
                "no JSON line from {}:\n{stdout}\n{stderr}",
                program.display()
            )
        });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// Every sample event in `events/` (API Gateway HTTP API requests), by file stem, in
/// name order.
pub fn sample_events() -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("events"))
        .expect("events/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&f).expect("an event"))
        })
        .collect()
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("mirobody-e2e-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `mirobody-local` with its own data directory, killed on drop.
pub struct Server {
    child: Child,
    pub base: String,
    env: Vec<(String, String)>,
    _data: TempDir,
}

/// `mirobody-local` with a clean environment: only what the test gives it.
fn command(env: &[(String, String)]) -> Command {
    let mut command = Command::new(binary("mirobody-local"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .current_dir(root());
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

/// Spawns `mirobody-local` with `env`: the child and the base URL it printed.
fn spawn(env: &[(String, String)], log: Stdio) -> (Child, String) {
    let mut command = command(env);
    command.stdout(Stdio::piped()).stderr(log);
    let mut child = command.spawn().expect("mirobody-local starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("mirobody-local prints its address");
    let base = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|url| url.starts_with("http://"))
        .unwrap_or_else(|| panic!("unexpected first line from mirobody-local: {line:?}"))
        .to_string();
    (child, base)
}

impl Server {
    /// Starts the local server with the fixture pack and extra settings.
    pub fn start(env: &[(&str, &str)]) -> Server {
        Self::start_logging(env, Stdio::null())
    }

    /// Starts it with its stderr (all of its log output) going to `log`.
    pub fn start_logging(env: &[(&str, &str)], log: impl Into<Stdio>) -> Server {
        let data = TempDir::new("server");
        let mut all: Vec<(String, String)> = vec![
            ("HTTP_PORT".into(), "0".into()),
            ("MIROBODY_FIXTURES".into(), "true".into()),
            ("MIROBODY_DATA_DIR".into(), data.0.display().to_string()),
        ];
        all.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let (child, base) = spawn(&all, log.into());
        // Subcommands (`mint-token`) see the real port: tokens are signed for the origin.
        let port = base.rsplit(':').next().unwrap_or("0").to_string();
        for (k, v) in all.iter_mut() {
            if k == "HTTP_PORT" {
                *v = port.clone();
            }
        }
        Server {
            child,
            base,
            env: all,
            _data: data,
        }
    }

    /// Kills the server (SIGKILL: no shutdown, as a crash or a Lambda timeout does) and
    /// starts it again on the same port, data directory and settings, so its tokens
    /// stay valid.
    pub fn kill_and_restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (child, base) = spawn(&self.env, Stdio::null());
        assert_eq!(base, self.base, "restarted on the same address");
        self.child = child;
    }

    /// The server's data directory (its database and dev keys).
    pub fn data_dir(&self) -> &Path {
        &self._data.0
    }

    /// Runs a `mirobody-local` subcommand against this server's data and keys.
    pub fn command(&self, args: &[&str]) -> String {
        let output = command(&self.env)
            .args(args)
            .output()
            .expect("mirobody-local runs");
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("UTF-8 output")
    }

    /// A JWT for `user`, signed with this server's dev key.
    pub fn token(&self, user: &str) -> String {
        self.command(&["mint-token", user]).trim().to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's peak resident memory so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the server is running");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status")
    }

    /// The server's CPU time so far, user and system (`/proc/<pid>/stat`, in the
    /// kernel's `USER_HZ` ticks, 100 a second on Linux).
    pub fn cpu_time(&self) -> std::time::Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))
            .expect("the server is running");
        // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks: u64 = [11, 12]
            .iter()
            .map(|&i| {
                fields
                    .get(i)
                    .and_then(|f| f.parse::<u64>().ok())
                    .expect("utime and stime")
            })
            .sum();
        std::time::Duration::from_millis(ticks * 10)
    }

    /// Sends SIGTERM and waits up to `within` for the process to exit; its exit status,
    /// or `None` if it is still running.
    pub fn terminate(&mut self, within: std::time::Duration) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }

    /// The public origin the server signs its tokens for (their `iss`), from its settings.
    pub fn origin(&self) -> String {
        Config::from_vars(Runtime::Local, self.env.clone())
            .expect("valid test settings")
            .public_origin()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn send(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<String>,
) -> Reply {
    send_via(None, method, url, headers, body).await
}

/// As [`send`], from the loopback address `source` (any address of 127.0.0.0/8 works on
/// Linux), so that one test can be several sources to the server's per-source limits.
pub async fn send_from(
    source: std::net::IpAddr,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<String>,
) -> Reply {
    send_via(Some(source), method, url, headers, body).await
}

async fn send_via(
    source: Option<std::net::IpAddr>,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<String>,
) -> Reply {
    let client = web_client()
        .no_proxy()
        .local_address(source)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let mut request = client.request(method.parse().expect("an HTTP method"), url);
    for (k, v) in headers {
        request = request.header(k, v);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.expect("a readable body");
    Reply {
        status,
        headers,
        body,
    }
}

/// `method path` with the caller's bearer token and a JSON body (if any).
pub async fn bearer_json(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Reply {
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

/// A form `POST` to `path`, with a `cookie` header if given.
pub async fn form_with_cookie(
    server: &Server,
    path: &str,
    pairs: &[(&str, &str)],
    cookie: Option<&str>,
) -> Reply {
    let mut headers = vec![(
        "content-type".to_string(),
        "application/x-www-form-urlencoded".to_string(),
    )];
    if let Some(cookie) = cookie {
        headers.push(("cookie".into(), cookie.into()));
    }
    send(
        "POST",
        &server.url(path),
        &headers,
        Some(encode_form(pairs)),
    )
    .await
}

/// `application/x-www-form-urlencoded` for `pairs` (every byte but the unreserved ones
/// percent-encoded).
pub fn encode_form(pairs: &[(&str, &str)]) -> String {
    let escape = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The `name=value` of each cookie a reply sets, in order.
pub fn set_cookies(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_string())
        .collect()
}

/// The hidden inputs of a server-rendered form page, and its CSRF cookie.
pub fn form_of(page: &Reply) -> (Vec<(String, String)>, String) {
    let cookie = page
        .header("set-cookie")
        .expect("the form sets its CSRF cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let mut fields = Vec::new();
    for input in page.body.split("<input type=\"hidden\" ").skip(1) {
        let attr = |name: &str| {
            let start = input.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            let end = start + input[start..].find('"').unwrap();
            input[start..end]
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        };
        fields.push((attr("name"), attr("value")));
    }
    (fields, cookie)
}

/// The value of attribute `name` after `marker` in a page's `body` (`&amp;` read back).
pub fn attr_after(body: &str, marker: &str, name: &str) -> String {
    let at = body
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker}: {body}"));
    let rest = &body[at..];
    let start = rest.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    let end = start + rest[start..].find('"').unwrap();
    rest[start..end].replace("&amp;", "&")
}

pub async fn get(url: &str) -> Reply {
    send("GET", url, &[], None).await
}

/// Signs up `email` with `password` (`POST /auth/signup`, which must answer 201): the new
/// account's user id and session token.
pub async fn sign_up_as(server: &Server, email: &str, password: &str) -> (String, String) {
    let body = json!({ "email": email, "password": password });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let data = &reply.json()["data"];
    let field = |name: &str| data[name].as_str().expect("a string field").to_string();
    (field("user_id"), field("token"))
}

/// Two HbA1c results, as a person uploads them in the client tests (`POST /api/data/health`).
pub const HBA1C_CSV: &str = "indicator,value,unit,time,source\n\
HbA1c,6.1,%,2026-01-10,City Lab\n\
HbA1c,5.7,%,2026-03-12,City Lab\n";

/// What `query_health_indicators` with `keywords: ["HbA1c"]` answers for [`HBA1C_CSV`]
/// (its `structuredContent.indicators[0].rows`): both results, newest first, worked out
/// from the file by hand.
pub const HBA1C_ROWS: [&str; 2] = ["2026-03-12T00:00:00|5.7", "2026-01-10T00:00:00|6.1"];

/// Signs up `email` with `password` at `base` (a server's origin) and uploads
/// [`HBA1C_CSV`] as them: their session token.
pub async fn person_with_hba1c(base: &str, email: &str, password: &str) -> String {
    let body = json!({ "email": email, "password": password });
    let reply = post_json(&format!("{base}/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let token = reply.json()["data"]["token"]
        .as_str()
        .expect("a session token")
        .to_string();
    let mut headers = bearer(&token);
    headers.push(("content-type".into(), "text/csv".into()));
    let upload = send(
        "POST",
        &format!("{base}/api/data/health"),
        &headers,
        Some(HBA1C_CSV.into()),
    )
    .await;
    assert_eq!(upload.status, 200, "{}", upload.body);
    token
}

/// Asserts a `query_health_indicators` result (`result`, as the client got it) is the
/// person's [`HBA1C_CSV`]: not an error, the measure by its name, both rows.
pub fn assert_hba1c_answer(result: &Value, client: &str) {
    assert_eq!(result["isError"], false, "{client}: {result}");
    let hba1c = &result["structuredContent"]["indicators"][0];
    assert_eq!(hba1c["name"], "Hemoglobin A1c", "{client}: {result}");
    assert_eq!(
        hba1c["rows"],
        json!(HBA1C_ROWS),
        "{client}: the person's two readings, newest first: {result}"
    );
}

pub async fn post_json(url: &str, headers: &[(String, String)], body: &Value) -> Reply {
    let mut all = vec![("content-type".to_string(), "application/json".to_string())];
    all.extend_from_slice(headers);
    send("POST", url, &all, Some(body.to_string())).await
}

/// The `authorization` header of a bearer token.
pub fn bearer(token: &str) -> Vec<(String, String)> {
    vec![("authorization".to_string(), format!("Bearer {token}"))]
}

/// A modern MCP request to `url` (`/mcp` or a personal URL), with `token` as the
/// bearer when there is one.
pub async fn rpc(url: &str, token: Option<&str>, method: &str, params: Value) -> Reply {
    let (mut headers, body) = modern(1, method, params);
    if let Some(token) = token {
        headers.extend(bearer(token));
    }
    post_json(url, &headers, &body).await
}

/// The tool names of a `tools/list` answer (its `result.tools`), in their order.
pub fn listed_tools(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {answer}"))
        .iter()
        .map(|t| t["name"].as_str().expect("a tool name").to_string())
        .collect()
}

/// The `_meta` a 2026-07-28 client sends.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": { "name": "e2e", "version": "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A modern request: `_meta` merged into params, and the mirrored headers.
pub fn modern(id: i64, method: &str, params: Value) -> (Vec<(String, String)>, Value) {
    let mut params = if params.is_null() { json!({}) } else { params };
    params["_meta"] = modern_meta();
    let mut headers = vec![
        ("mcp-protocol-version".to_string(), MODERN.to_string()),
        ("mcp-method".to_string(), method.to_string()),
        (
            "accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
    ];
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str);
    if let (Some(name), true) = (
        name,
        matches!(method, "tools/call" | "prompts/get" | "resources/read"),
    ) {
        headers.push(("mcp-name".to_string(), name.to_string()));
    }
    (
        headers,
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
}

/// Is `expected` contained in `actual` (objects by key, everything else equal)?
pub fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e
            .iter()
            .all(|(k, ev)| a.get(k).is_some_and(|av| contains(av, ev))),
        (Value::Array(a), Value::Array(e)) => {
            a.len() == e.len() && a.iter().zip(e).all(|(av, ev)| contains(av, ev))
        }
        _ => actual == expected,
    }
}

/// The app in-process (no socket), on a fresh embedded store, with a fake clock that
/// tests advance instead of sleeping, and fixed test keys.
pub struct InProcess {
    pub app: App,
    pub clock: Arc<FakeClock>,
    pub store: Arc<EmbeddedStore>,
    _dir: TempDir,
}

impl InProcess {
    /// One request through `App::handle`, read whole (the in-process `send`).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, String)],
        body: String,
    ) -> Reply {
        let mut request = http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            request = request.header(k, v);
        }
        let request = request.body(body.into()).expect("a valid request");
        let response = self.app.handle(request).await;
        Reply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: String::from_utf8(response.body().to_vec()).expect("a UTF-8 body"),
        }
    }
}

pub fn in_process(env: &[(&str, &str)]) -> InProcess {
    in_process_at(env, 1_800_000_000)
}

/// [`in_process`] with its fake clock starting at `now` (Unix seconds): the real time,
/// for a test whose tokens another server or the token checks (which read the real
/// time) must accept.
pub fn in_process_at(env: &[(&str, &str)], now: u64) -> InProcess {
    let dir = TempDir::new("in-process");
    let clock = Arc::new(FakeClock::at(now));
    let store = Arc::new(EmbeddedStore::open(dir.0.join("db.sqlite3")).expect("an embedded store"));
    in_process_with(env, dir, clock, store)
}

impl InProcess {
    /// A second instance of the app beside this one (as Lambda runs one per concurrent
    /// request): its own process state, the same store, keys and clock.
    pub fn beside(&self, env: &[(&str, &str)]) -> InProcess {
        let dir = TempDir::new("in-process-beside");
        in_process_with(env, dir, self.clock.clone(), self.store.clone())
    }
}

fn in_process_with(
    env: &[(&str, &str)],
    dir: TempDir,
    clock: Arc<FakeClock>,
    store: Arc<EmbeddedStore>,
) -> InProcess {
    let vars = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let config = Config::from_vars(Runtime::Local, vars).expect("valid test settings");
    let keys = Keys {
        jwt: [1; 32],
        seal: [2; 32],
    };
    let services = Services {
        mail: None,
        store: store.clone(),
        keys: Some(keys),
        clock: clock.clone(),
        objects: Arc::new(
            LocalObjects::open(dir.0.join("uploads"), &config.public_origin())
                .expect("an objects directory"),
        ),
    };
    let app = App::new(config, RouteGroup::All, services).expect("the app builds");
    InProcess {
        app,
        clock,
        store,
        _dir: dir,
    }
}

// ---------------------------------------------------------------- mail

impl Server {
    /// Where the server writes each message it sends (`<data dir>/mail`).
    pub fn mail_dir(&self) -> PathBuf {
        self.data_dir().join("mail")
    }

    /// Every message the server wrote so far, oldest first (whole text, headers included).
    pub fn mails(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.mail_dir()) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "eml"))
            .collect();
        files.sort();
        files
            .iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect()
    }

    /// The messages to `to`, oldest first.
    pub fn mails_to(&self, to: &str) -> Vec<String> {
        let header = format!("\r\nTo: {to}\r\n");
        self.mails()
            .into_iter()
            .filter(|mail| mail.contains(&header))
            .collect()
    }

    /// The token of the newest link to `path` (`/console/confirm`, `/console/reset`)
    /// mailed to `to`, waiting up to five seconds for it.
    pub async fn mailed_token(&self, to: &str, path: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let needle = format!("{path}?token=");
        loop {
            let token = self.mails_to(to).iter().rev().find_map(|mail| {
                let at = mail.find(&needle)? + needle.len();
                Some(
                    mail[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                        .collect::<String>(),
                )
            });
            if let Some(token) = token {
                return token;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no mail to {to} with a {path} link in {}",
                self.mail_dir().display()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Confirms `email` through the link the server mailed it (`POST /auth/confirm`).
    pub async fn confirm_address(&self, email: &str) {
        let token = self.mailed_token(email, "/console/confirm").await;
        let reply = post_json(&self.url("/auth/confirm"), &[], &json!({ "token": token })).await;
        assert_eq!(reply.status, 200, "confirming {email}: {}", reply.body);
    }

    /// Confirms the grantee's address (if need be) and accepts every invitation waiting
    /// for it, as the grantee; the accepted owners' `{user_id, email}`.
    pub async fn accept_invitations(&self, grantee_email: &str, grantee_token: &str) -> Vec<Value> {
        let shares = || async {
            let listed = send(
                "GET",
                &self.url("/api/shares"),
                &bearer(grantee_token),
                None,
            )
            .await;
            assert_eq!(listed.status, 200, "{}", listed.body);
            listed.json()["data"].clone()
        };
        if shares().await["email_confirmed"] != true {
            self.confirm_address(grantee_email).await;
        }
        let invitations = shares().await["invitations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut owners = Vec::new();
        for invitation in invitations {
            let mut headers = bearer(grantee_token);
            headers.push(("content-type".into(), "application/json".into()));
            let body = json!({ "id": invitation["id"] }).to_string();
            let reply = send(
                "POST",
                &self.url("/api/shares/accept"),
                &headers,
                Some(body),
            )
            .await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            owners.push(reply.json()["data"]["owner"].clone());
        }
        owners
    }
}
