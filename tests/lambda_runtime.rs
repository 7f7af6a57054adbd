//! Each function binary (`target/debug/{mcp,personal,oauth,data,import}`) run the way
//! Lambda runs it (F1, F2): a local Runtime API on loopback hands it the `events/`
//! samples through `GET /2018-06-01/runtime/invocation/next` and takes its answers from
//! `POST …/invocation/{id}/response`, with DynamoDB, Secrets Manager and S3 from a moto
//! server this test starts on loopback. Nothing leaves the machine: dummy credentials,
//! no instance metadata, every endpoint a loopback address.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::Credentials;
use bytes::Bytes;
use e2e::{TempDir, binary, listed_tools, root, sample_events};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mirobody::domain::{UploadKind, UploadRecord, UploadStatus};
use mirobody::store::{DynamoStore, DynamoTables, HealthStore, UploadStore};
use mirobody::testing::Moto;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Mutex as AsyncMutex, mpsc, oneshot};

/// The origin the sample events' `Host` header names; the functions get it as
/// `MCP_PUBLIC_URL`, as the template's default (the API's own URL) does.
const PUBLIC_URL: &str = "https://abc123.execute-api.us-east-1.amazonaws.com";
const FUNCTIONS: [&str; 5] = ["mcp", "personal", "oauth", "data", "console"];
/// Longest a single invocation may take here (the template gives 10-29 s).
const INVOKE_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- the Runtime API

/// What a function posted back for one invocation.
#[derive(Debug)]
enum Outcome {
    Response(Bytes),
    Error(Bytes),
}

struct Queued {
    event: String,
    reply: oneshot::Sender<Outcome>,
}

struct ApiState {
    queue: AsyncMutex<mpsc::UnboundedReceiver<Queued>>,
    in_flight: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    first_poll: Mutex<Option<Instant>>,
    init_error: Mutex<Option<String>>,
    ids: AtomicU64,
}

/// A Lambda Runtime API (2018-06-01) for one function process on a loopback port.
struct RuntimeApi {
    addr: SocketAddr,
    state: Arc<ApiState>,
    events: mpsc::UnboundedSender<Queued>,
    server: tokio::task::JoinHandle<()>,
}

impl RuntimeApi {
    async fn start() -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        let (events, queue) = mpsc::unbounded_channel();
        let state = Arc::new(ApiState {
            queue: AsyncMutex::new(queue),
            in_flight: Mutex::new(HashMap::new()),
            first_poll: Mutex::new(None),
            init_error: Mutex::new(None),
            ids: AtomicU64::new(1),
        });
        let shared = state.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| serve(state.clone(), request));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        RuntimeApi {
            addr,
            state,
            events,
            server,
        }
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn reply(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

async fn serve(
    state: Arc<ApiState>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let rest = path.strip_prefix("/2018-06-01/runtime/").unwrap_or("");
    if method == Method::GET && rest == "invocation/next" {
        state
            .first_poll
            .lock()
            .unwrap()
            .get_or_insert_with(Instant::now);
        // One poller at a time, as in Lambda; this waits until the test queues an event.
        let next = state.queue.lock().await.recv().await;
        let Some(Queued { event, reply }) = next else {
            return Ok(self::reply(StatusCode::GONE, "{}"));
        };
        let id = format!("req-{}", state.ids.fetch_add(1, Ordering::Relaxed));
        state.in_flight.lock().unwrap().insert(id.clone(), reply);
        let deadline = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + INVOKE_TIMEOUT;
        let response = Response::builder()
            .header("content-type", "application/json")
            .header("lambda-runtime-aws-request-id", &id)
            .header(
                "lambda-runtime-deadline-ms",
                deadline.as_millis().to_string(),
            )
            .header(
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:test",
            )
            .header(
                "lambda-runtime-trace-id",
                "Root=1-00000000-000000000000000000000000;Sampled=0",
            )
            .body(Full::new(Bytes::from(event)))
            .expect("a response");
        return Ok(response);
    }
    if method == Method::POST && rest == "init/error" {
        *state.init_error.lock().unwrap() = Some(String::from_utf8_lossy(&body).into_owned());
        return Ok(reply(StatusCode::ACCEPTED, "{\"status\":\"OK\"}"));
    }
    if method == Method::POST
        && let Some(rest) = rest.strip_prefix("invocation/")
        && let Some((id, kind)) = rest.split_once('/')
    {
        let outcome = match kind {
            "response" => Outcome::Response(body),
            "error" => Outcome::Error(body),
            _ => return Ok(reply(StatusCode::NOT_FOUND, "{}")),
        };
        return Ok(match state.in_flight.lock().unwrap().remove(id) {
            Some(waiting) => {
                let _ = waiting.send(outcome);
                reply(StatusCode::ACCEPTED, "{\"status\":\"OK\"}")
            }
            None => reply(
                StatusCode::BAD_REQUEST,
                "{\"errorType\":\"InvalidRequestID\"}",
            ),
        });
    }
    Ok(reply(StatusCode::NOT_FOUND, "{}"))
}

// ---------------------------------------------------------------- a function process

/// One function binary serving events from its own Runtime API; killed on drop.
struct Function {
    name: String,
    child: Mutex<Child>,
    api: RuntimeApi,
    started: Instant,
    log: PathBuf,
    _dir: TempDir,
}

/// A function's answer, decoded from the API Gateway (payload 2.0) response JSON.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: serde_json::Map<String, Value>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(Value::as_str)
    }
}

impl Function {
    async fn start(name: &str, settings: &[(String, String)]) -> Function {
        let api = RuntimeApi::start().await;
        let dir = TempDir::new(&format!("lambda-{name}"));
        let log = dir.0.join("output.log");
        let file = std::fs::File::create(&log).expect("a log file");
        let mut command = Command::new(binary(name));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            // What Lambda sets for a custom runtime (provided.al2023).
            .env("AWS_LAMBDA_RUNTIME_API", api.addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", format!("mirobody-{name}"))
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/mirobody-{name}"),
            )
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
            .env("LAMBDA_TASK_ROOT", &dir.0)
            // Never AWS: dummy credentials, no instance metadata.
            .env("AWS_REGION", "us-east-1")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("RUST_LOG", "info")
            .current_dir(&dir.0)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("a log handle"))
            .stderr(file);
        for (k, v) in settings {
            command.env(k, v);
        }
        let started = Instant::now();
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        Function {
            name: name.to_string(),
            child: Mutex::new(child),
            api,
            started,
            log,
            _dir: dir,
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test with the function's output if it has exited.
    fn check_alive(&self) {
        if let Ok(Some(status)) = self.child.lock().unwrap().try_wait() {
            panic!(
                "{} exited ({status}); init error: {:?}; output:\n{}",
                self.name,
                self.api.state.init_error.lock().unwrap(),
                self.output()
            );
        }
    }

    /// Waits until the function first asks for an event: its init time.
    async fn ready(&self) -> Duration {
        let deadline = Instant::now() + INVOKE_TIMEOUT;
        loop {
            if let Some(at) = *self.api.state.first_poll.lock().unwrap() {
                return at - self.started;
            }
            self.check_alive();
            assert!(
                Instant::now() < deadline,
                "{} did not poll for an event within {INVOKE_TIMEOUT:?}:\n{}",
                self.name,
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Runs one event (an API Gateway HTTP API request) and decodes the answer.
    async fn invoke(&self, event: &str) -> Answer {
        let bytes = match self.invoke_raw(event).await {
            Outcome::Response(bytes) => bytes,
            Outcome::Error(error) => panic!(
                "{}: invocation error {}:\n{}",
                self.name,
                String::from_utf8_lossy(&error),
                self.output()
            ),
        };
        let response: Value = serde_json::from_slice(&bytes).expect("the response is JSON");
        let body = response["body"].as_str().unwrap_or_default();
        let body = if response["isBase64Encoded"] == true {
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(body)
                .expect("base64 body");
            String::from_utf8(raw).expect("UTF-8 body")
        } else {
            body.to_string()
        };
        Answer {
            status: response["statusCode"].as_u64().expect("statusCode") as u16,
            headers: response["headers"].as_object().cloned().unwrap_or_default(),
            body,
        }
    }

    /// Runs one event of any kind and returns what the function posted back.
    async fn invoke_raw(&self, event: &str) -> Outcome {
        let (reply, mut answer) = oneshot::channel();
        self.api
            .events
            .send(Queued {
                event: event.to_string(),
                reply,
            })
            .expect("the runtime API is running");
        let deadline = Instant::now() + INVOKE_TIMEOUT;
        loop {
            match tokio::time::timeout(Duration::from_millis(50), &mut answer).await {
                Ok(Ok(outcome)) => return outcome,
                Ok(Err(_)) => panic!("{}: the invocation was dropped", self.name),
                Err(_) => {
                    self.check_alive();
                    assert!(
                        Instant::now() < deadline,
                        "{}: no answer within {INVOKE_TIMEOUT:?}:\n{}",
                        self.name,
                        self.output()
                    );
                }
            }
        }
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

// ---------------------------------------------------------------- moto

/// An SDK configuration for the test's own calls to moto (never AWS).
async fn sdk_config(moto: &Moto) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(&moto.endpoint)
        .load()
        .await
}

/// Tables created from `infra/tables.json` and a keys secret shaped like the template's.
async fn deployment(moto: &Moto) -> Vec<(String, String)> {
    let config = sdk_config(moto).await;
    let tables = DynamoTables {
        keys: "lambda-runtime-keys".into(),
        data: "lambda-runtime-data".into(),
    };
    DynamoStore::create_tables(&aws_sdk_dynamodb::Client::new(&config), &tables)
        .await
        .expect("tables created in moto");
    let secret = aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name("lambda-runtime-keys")
        .secret_string(json!({ "master": "k".repeat(64) }).to_string())
        .send()
        .await
        .expect("secret created in moto");
    vec![
        ("MIROBODY_STORE".into(), "dynamodb".into()),
        ("MIROBODY_KEYS_TABLE".into(), tables.keys),
        ("MIROBODY_DATA_TABLE".into(), tables.data),
        (
            "MIROBODY_KEYS_SECRET".into(),
            secret.arn().expect("an ARN").to_string(),
        ),
        ("AWS_ENDPOINT_URL_DYNAMODB".into(), moto.endpoint.clone()),
        (
            "AWS_ENDPOINT_URL_SECRETS_MANAGER".into(),
            moto.endpoint.clone(),
        ),
        ("MCP_PUBLIC_URL".into(), PUBLIC_URL.into()),
        ("HTTP_SERVER_NAME".into(), "mirobody-lambda-test".into()),
    ]
}

// ---------------------------------------------------------------- events

fn event(name: &str) -> String {
    std::fs::read_to_string(root().join("events").join(format!("{name}.json")))
        .unwrap_or_else(|_| panic!("events/{name}.json"))
}

/// The function that serves an event: its file name's first word.
fn function_of(name: &str) -> &str {
    let group = name.split('-').next().unwrap_or_default();
    assert!(
        FUNCTIONS.contains(&group),
        "events/{name}.json: no function {group}"
    );
    group
}

/// The status each sample gets as written, from a fresh deployment, in name order
/// (`oauth-signin` runs before `oauth-signup`, so it finds no account yet).
fn expected_as_written(name: &str) -> u16 {
    match name {
        "mcp-get" => 405,
        // A URL secret nobody minted.
        "mcp-secret-post-tools-list" => 404,
        // SAMPLE_TOKEN is not a token of this deployment.
        "personal-post" | "personal-delete" | "oauth-shares-post" | "oauth-shares-delete" => 401,
        n if n.starts_with("personal-user-mcp") || n.starts_with("personal-mcp-server") => 401,
        n if n.starts_with("data-") => 401,
        "oauth-signin" => 401,
        "oauth-signup" | "oauth-register" => 201,
        "oauth-check-state" => 404,
        // SAMPLE_CLIENT is not a registered client.
        "oauth-authorize-get"
        | "oauth-authorize-post"
        | "oauth-oauth2-authorize-get"
        | "oauth-oauth2-authorize-post" => 400,
        "oauth-token" => 401,
        // Introspection needs a confidential client's authentication (issue 12).
        "oauth-introspect" => 401,
        // A sign-in form posted without the page's CSRF token.
        "oauth-mcplogin-post" => 403,
        // The page of a login state nobody made (issue 12, finding 3: the page reads
        // the state to say who asked; it used to show the form for any state).
        "oauth-mcplogin-get" => 410,
        // The console (issue 15): SAMPLE_TOKEN is no session, so a page sends the
        // browser to sign in; a sign-in form posted without its CSRF token is refused.
        "console-data-get" => 303,
        "console-signin-post" => 403,
        _ => 200,
    }
}

/// The modern `tools/call` of a tool that needs the caller, from the tools/list sample.
fn anonymous_tool_call() -> String {
    let mut e: Value = serde_json::from_str(&event("mcp-post-tools-list")).unwrap();
    let mut body: Value = serde_json::from_str(e["body"].as_str().unwrap()).unwrap();
    body["method"] = json!("tools/call");
    body["params"]["name"] = json!("query_health_indicators");
    body["params"]["arguments"] = json!({ "keywords": ["HbA1c"] });
    e["body"] = json!(body.to_string());
    e["headers"]["mcp-method"] = json!("tools/call");
    e["headers"]["mcp-name"] = json!("query_health_indicators");
    e.to_string()
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn every_function_serves_its_sample_events_through_the_runtime_api() {
    let moto = Moto::start();
    let settings = deployment(&moto).await;
    let mut functions = HashMap::new();
    for name in FUNCTIONS {
        functions.insert(name, Function::start(name, &settings).await);
    }
    for name in FUNCTIONS {
        let init = functions[name].ready().await;
        eprintln!(
            "{name}: first poll for an event {} ms after start",
            init.as_millis()
        );
    }

    // Every sample as written.
    let samples = sample_events();
    for group in FUNCTIONS {
        assert!(
            samples.iter().any(|(n, _)| function_of(n) == group),
            "events/ has no sample for the {group} function"
        );
    }
    for (name, raw) in &samples {
        let answer = functions[function_of(name)].invoke(raw).await;
        assert_eq!(
            answer.status,
            expected_as_written(name),
            "{name}: {}",
            answer.body
        );
        if name.ends_with("options") {
            // A preflight passes: the page's origin comes back (loopback pages are
            // allowed), or `*` where no origin was sent and on the public OAuth endpoints.
            let sent: Value = serde_json::from_str(raw).unwrap();
            let origin = sent["headers"]["origin"].as_str().unwrap_or("*");
            let allowed = answer.header("access-control-allow-origin");
            assert!(
                allowed == Some(origin) || (name.starts_with("oauth-") && allowed == Some("*")),
                "{name}: preflight answered with {allowed:?}"
            );
        }
        if name.starts_with("mcp-post") {
            assert!(
                answer.json()["result"].is_object(),
                "{name}: {}",
                answer.body
            );
        }
    }

    // The samples again, signed in: the deployment's routes end to end.
    let signed_in = functions["oauth"].invoke(&event("oauth-signin")).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let with_token = |name: &str| event(name).replace("SAMPLE_TOKEN", &token);

    let health = functions["data"]
        .invoke(&with_token("data-post-health"))
        .await;
    assert_eq!(health.status, 200, "{}", health.body);
    assert_eq!(health.json()["data"]["written"], 2);
    let genotypes = functions["data"]
        .invoke(&with_token("data-post-genotype"))
        .await;
    assert_eq!(genotypes.status, 200, "{}", genotypes.body);
    assert_eq!(genotypes.json()["data"]["written"], 3);
    let summary = functions["data"].invoke(&with_token("data-get")).await;
    assert_eq!(
        summary.json()["data"],
        json!({"health": true, "genotype": true})
    );

    let personal = functions["personal"]
        .invoke(&with_token("personal-post"))
        .await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    let url = personal.json()["data"]["url"]
        .as_str()
        .expect("a URL")
        .to_string();
    let secret = url
        .strip_prefix(&format!("{PUBLIC_URL}/mcp/"))
        .unwrap_or_else(|| panic!("a personal URL under MCP_PUBLIC_URL: {url}"))
        .to_string();
    let by_secret = event("mcp-secret-post-tools-list").replace("SAMPLE_SECRET", &secret);
    let listed = functions["mcp"].invoke(&by_secret).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let names = listed_tools(&listed.json());
    assert!(
        names.contains(&"query_health_indicators".to_string())
            && names.contains(&"get_genetic_data".to_string()),
        "gating sees the uploaded data through the personal URL: {names:?}"
    );

    // The console function (issue 15) takes the session token as its cookie: the
    // signed-in page, framed by nobody.
    let page = functions["console"]
        .invoke(&with_token("console-data-get"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<html"), "{}", page.body);
    assert_eq!(page.header("x-frame-options"), Some("DENY"));

    // No account named by the grantee: the e-mail lookup ran, and the answer is the
    // same as for an existing account (issue 12; this used to assert 404).
    let share = functions["oauth"]
        .invoke(&with_token("oauth-shares-post"))
        .await;
    assert_eq!(share.status, 200, "{}", share.body);
    assert_eq!(share.json()["data"]["grantee"], "friend@example.com");

    // An anonymous call to a tool that needs the caller: the login prompt's state is
    // written by the mcp function and polled through the oauth function.
    let prompt = functions["mcp"].invoke(&anonymous_tool_call()).await;
    assert_eq!(prompt.status, 200, "{}", prompt.body);
    let text = prompt.json()["result"]["content"][0]["text"]
        .as_str()
        .expect("a text result")
        .to_string();
    let prompt: Value = serde_json::from_str(&text).expect("the prompt is JSON");
    let state = prompt["auto_polling"]["state"].as_str().expect("a state");
    let poll_secret = prompt["auto_polling"]["poll_secret"]
        .as_str()
        .expect("a poll secret");
    assert!(
        prompt["authorization_url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{PUBLIC_URL}/mcplogin?"))),
        "{prompt}"
    );
    let poll = functions["oauth"]
        .invoke(
            &event("oauth-check-state")
                .replace("SAMPLE_STATE", state)
                .replace("SAMPLE_POLL_SECRET", poll_secret),
        )
        .await;
    assert_eq!(poll.status, 200, "{}", poll.body);
    assert_eq!(poll.json()["status"], "pending");

    // The OAuth server (C1-C4) on DynamoDB: one metadata document at three paths, a
    // registered client's sign-in page, a code that was never issued, introspection.
    let metadata: Vec<String> = [
        "oauth-metadata",
        "oauth-metadata-mcp",
        "oauth-mcp-configuration",
    ]
    .iter()
    .map(|name| event(name))
    .collect();
    let mut documents = Vec::new();
    for raw in &metadata {
        documents.push(functions["oauth"].invoke(raw).await.body);
    }
    assert!(
        documents.iter().all(|d| d == &documents[0]),
        "C1: byte-identical"
    );
    let resource = functions["oauth"]
        .invoke(&event("oauth-resource-metadata-mcp"))
        .await;
    assert_eq!(resource.json()["resource"], format!("{PUBLIC_URL}/mcp"));
    let registered = functions["oauth"].invoke(&event("oauth-register")).await;
    let client_id = registered.json()["client_id"]
        .as_str()
        .expect("a client id")
        .to_string();
    let with_client = |name: &str| event(name).replace("SAMPLE_CLIENT", &client_id);
    for page in ["oauth-authorize-get", "oauth-oauth2-authorize-get"] {
        let answer = functions["oauth"].invoke(&with_client(page)).await;
        assert_eq!(answer.status, 200, "{page}: {}", answer.body);
        assert!(answer.body.contains("<form"), "{page}: a sign-in form");
    }
    let exchanged = functions["oauth"].invoke(&with_client("oauth-token")).await;
    assert_eq!(exchanged.status, 400, "{}", exchanged.body);
    assert_eq!(exchanged.json()["error"], "invalid_grant");
    let introspected = functions["oauth"]
        .invoke(&with_token("oauth-introspect"))
        .await;
    // Introspection needs a confidential client's authentication (issue 12, finding 6;
    // this used to assert `active: true` for the sample event, which carries none).
    assert_eq!(introspected.status, 401, "{}", introspected.body);
    assert_eq!(introspected.json()["error"], "invalid_client");
    let login_page = functions["oauth"]
        .invoke(&event("oauth-mcplogin-get").replace("SAMPLE_STATE", state))
        .await;
    assert_eq!(login_page.status, 200, "{}", login_page.body);

    let revoked = functions["personal"]
        .invoke(&with_token("personal-delete"))
        .await;
    assert_eq!(revoked.json()["data"]["revoked"], true, "{}", revoked.body);
    assert_eq!(functions["mcp"].invoke(&by_secret).await.status, 404);
    let deleted = functions["data"].invoke(&with_token("data-delete")).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);

    // Logs: one JSON line per request, never a token or a URL secret (B4).
    for (name, function) in &functions {
        let output = function.output();
        assert!(
            !output.contains(&token) && !output.contains(&secret),
            "{name} logged a secret"
        );
        assert!(
            output.contains("\"route\""),
            "{name} logged no request line"
        );
    }
}

#[tokio::test]
async fn a_bad_setting_stops_the_function_before_it_polls_and_names_the_setting() {
    let settings = vec![("HTTP_URI_PREFIX".to_string(), "/a b".to_string())];
    let function = Function::start("mcp", &settings).await;
    let deadline = Instant::now() + INVOKE_TIMEOUT;
    let status = loop {
        if let Some(status) = function.child.lock().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the function kept running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(!status.success());
    assert!(
        function.api.state.first_poll.lock().unwrap().is_none(),
        "it asked for an event"
    );
    let output = function.output();
    assert!(output.contains("HTTP_URI_PREFIX"), "{output}");
}

// ---------------------------------------------------------------- the import function

/// `events/s3/object-created.json` naming one object of one bucket, its key URL-encoded
/// as S3 sends it (a space is `+`).
fn object_created(bucket: &str, key: &str, size: usize) -> String {
    let mut e: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("events/s3/object-created.json"))
            .expect("events/s3/object-created.json"),
    )
    .expect("the sample is JSON");
    let record = &mut e["Records"][0]["s3"];
    record["bucket"]["name"] = json!(bucket);
    record["bucket"]["arn"] = json!(format!("arn:aws:s3:::{bucket}"));
    record["object"]["key"] = json!(key.replace('+', "%2B").replace(' ', "+"));
    record["object"]["size"] = json!(size);
    e.to_string()
}

/// Issue 14, the deployed upload path: a file PUT to a presigned URL of the upload bucket
/// (moto's S3), then S3's ObjectCreated event through the Runtime API to the `import`
/// binary, which imports it as a stream: the upload is done, its rows landed and the
/// file is removed (DynamoDB on moto too).
#[tokio::test]
async fn the_import_function_imports_an_uploaded_object_named_by_an_s3_event() {
    let moto = Moto::start();
    let mut settings: Vec<(String, String)> = deployment(&moto)
        .await
        .into_iter()
        // As in the template: the import function holds no keys.
        .filter(|(name, _)| name != "MIROBODY_KEYS_SECRET")
        .collect();
    let bucket = "mirobody-uploads-123456789012";
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk_config(&moto).await)
            .force_path_style(true)
            .build(),
    );
    s3.create_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("bucket created in moto");
    settings.extend([
        ("MIROBODY_UPLOAD_BUCKET".to_string(), bucket.to_string()),
        ("AWS_ENDPOINT_URL_S3".to_string(), moto.endpoint.clone()),
    ]);

    // The upload as `POST /api/data/uploads` records it (its object key is what the S3
    // event names), then the client's side: one PUT of the file to a presigned URL.
    let key = "uploads/upload 7f3a+1";
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
    store
        .create_upload(&UploadRecord::waiting(
            "7f3a".into(),
            "importer-user".into(),
            UploadKind::Health,
            "cgm.csv".into(),
            key.into(),
            now,
            now + 3600,
        ))
        .await
        .expect("upload recorded");
    let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let content = std::iter::once("indicator,value,unit,time\n".to_string())
        .chain((0..20_000).map(|i| {
            let at = start + chrono::Duration::minutes(5 * i);
            format!(
                "glucose,{},mg/dL,{}\n",
                80 + i % 50,
                at.format("%Y-%m-%dT%H:%M:%S")
            )
        }))
        .collect::<String>();
    let presigned = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .presigned(
            aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(900))
                .expect("a presigning config"),
        )
        .await
        .expect("a presigned PUT");
    let put = reqwest::Client::new()
        .put(presigned.uri())
        .body(content.clone())
        .send()
        .await
        .expect("the PUT reaches moto");
    assert!(put.status().is_success(), "{}", put.status());

    let function = Function::start("import", &settings).await;
    let init = function.ready().await;
    eprintln!(
        "import: first poll for an event {} ms after start",
        init.as_millis()
    );

    let answer = match function
        .invoke_raw(&object_created(bucket, key, content.len()))
        .await
    {
        Outcome::Response(bytes) => serde_json::from_slice::<Value>(&bytes).expect("JSON"),
        Outcome::Error(error) => panic!(
            "invocation error {}:\n{}",
            String::from_utf8_lossy(&error),
            function.output()
        ),
    };
    assert_eq!(answer, json!({ "handled": 1, "skipped": 0 }));
    // Imported: the upload is done with every row written, the readings are there, and
    // the file is gone from the bucket.
    let record = store
        .upload("importer-user", "7f3a", now)
        .await
        .expect("store read")
        .expect("the upload");
    assert_eq!(
        record.status,
        UploadStatus::Done,
        "{record:?}\n{}",
        function.output()
    );
    assert_eq!(record.rows_written, 20_000, "{record:?}");
    assert_eq!(record.bytes, content.len() as u64, "{record:?}");
    assert!(store.data_presence("importer-user").await.unwrap().health);
    assert!(
        s3.head_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .is_err(),
        "the imported file is removed"
    );

    // A second delivery of the event after the object is gone: handled, not retried.
    let again = function
        .invoke_raw(&object_created(bucket, key, content.len()))
        .await;
    assert!(
        matches!(&again, Outcome::Response(bytes) if bytes.as_ref() == br#"{"handled":1,"skipped":0}"#),
        "{again:?}"
    );
    let again = store
        .upload("importer-user", "7f3a", now)
        .await
        .expect("store read")
        .expect("the upload");
    assert_eq!(
        (again.status, again.rows_written),
        (UploadStatus::Done, 20_000),
        "imported once"
    );

    // An event that is not ObjectCreated is skipped.
    let removed =
        object_created(bucket, key, 0).replace("ObjectCreated:Put", "ObjectRemoved:Delete");
    let skipped = function.invoke_raw(&removed).await;
    assert!(
        matches!(&skipped, Outcome::Response(bytes) if bytes.as_ref() == br#"{"handled":0,"skipped":1}"#),
        "{skipped:?}"
    );

    // Keys carry upload ids: never logged.
    let output = function.output();
    assert!(!output.contains("7f3a"), "the key was logged:\n{output}");
}
