//! The Lambda Runtime API harness the function-binary tests share (`e2e/lambda_runtime.rs`,
//! `e2e/lambda_observe.rs`): a local Runtime API (2018-06-01) on loopback that hands one
//! function process its events and takes its answers, the process itself (its stdout and
//! stderr kept apart), and a moto deployment (tables, keys secret). The end-to-end binary
//! (`e2e/main.rs`) includes this file as its module `runtime_api`.

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
use e2e::{TempDir, binary, root};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mirobody::store::{DynamoStore, DynamoTables};
use mirobody::testing::Moto;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Mutex as AsyncMutex, mpsc, oneshot};

/// The origin the sample events' `Host` header names; the functions get it as
/// `MCP_PUBLIC_URL`, as the template's default (the API's own URL) does.
pub const PUBLIC_URL: &str = "https://abc123.execute-api.us-east-1.amazonaws.com";
/// Longest a single invocation may take here (the template gives 10-29 s).
pub const INVOKE_TIMEOUT: Duration = Duration::from_secs(30);
/// The trace header of an invocation that does not name one: not sampled.
pub const UNSAMPLED: &str = "Root=1-00000000-000000000000000000000000;Sampled=0";

// ---------------------------------------------------------------- the Runtime API

/// What a function posted back for one invocation.
#[derive(Debug)]
pub enum Outcome {
    Response(Bytes),
    Error(Bytes),
}

pub struct Queued {
    pub event: String,
    /// `Lambda-Runtime-Trace-Id`.
    pub trace_header: String,
    pub reply: oneshot::Sender<Outcome>,
}

pub struct ApiState {
    pub queue: AsyncMutex<mpsc::UnboundedReceiver<Queued>>,
    pub in_flight: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    pub first_poll: Mutex<Option<Instant>>,
    pub init_error: Mutex<Option<String>>,
    pub ids: AtomicU64,
}

/// A Lambda Runtime API (2018-06-01) for one function process on a loopback port.
pub struct RuntimeApi {
    pub addr: SocketAddr,
    pub state: Arc<ApiState>,
    pub events: mpsc::UnboundedSender<Queued>,
    pub server: tokio::task::JoinHandle<()>,
}

impl RuntimeApi {
    pub async fn start() -> RuntimeApi {
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

pub fn reply(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

pub async fn serve(
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
        let Some(Queued {
            event,
            trace_header,
            reply,
        }) = next
        else {
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
            .header("lambda-runtime-trace-id", trace_header)
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
pub struct Function {
    pub name: String,
    pub child: Mutex<Child>,
    pub api: RuntimeApi,
    pub started: Instant,
    /// Its stdout; stderr goes to `stderr`.
    pub log: PathBuf,
    pub stderr: PathBuf,
    pub _dir: TempDir,
}

/// A function's answer, decoded from the API Gateway (payload 2.0) response JSON.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: serde_json::Map<String, Value>,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(Value::as_str)
    }
}

impl Function {
    pub async fn start(name: &str, settings: &[(String, String)]) -> Function {
        let api = RuntimeApi::start().await;
        let dir = TempDir::new(&format!("lambda-{name}"));
        let log = dir.0.join("stdout.log");
        let stderr = dir.0.join("stderr.log");
        let file = std::fs::File::create(&log).expect("a log file");
        let errors = std::fs::File::create(&stderr).expect("a log file");
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
            .stdout(file)
            .stderr(errors);
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
            stderr,
            _dir: dir,
        }
    }

    /// Everything it printed: stdout, then stderr.
    pub fn output(&self) -> String {
        self.stdout() + &std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// What it printed to stdout (where Lambda's logs and EMF lines go).
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails the test with the function's output if it has exited.
    pub fn check_alive(&self) {
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
    pub async fn ready(&self) -> Duration {
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
    pub async fn invoke(&self, event: &str) -> Answer {
        self.invoke_with_trace(event, UNSAMPLED).await
    }

    /// [`Function::invoke`] with the given `Lambda-Runtime-Trace-Id` header.
    pub async fn invoke_with_trace(&self, event: &str, trace_header: &str) -> Answer {
        let bytes = match self.invoke_traced(event, trace_header).await {
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
    pub async fn invoke_raw(&self, event: &str) -> Outcome {
        self.invoke_traced(event, UNSAMPLED).await
    }

    /// Runs one event with the given `Lambda-Runtime-Trace-Id` header.
    pub async fn invoke_traced(&self, event: &str, trace_header: &str) -> Outcome {
        let (reply, mut answer) = oneshot::channel();
        self.api
            .events
            .send(Queued {
                event: event.to_string(),
                trace_header: trace_header.to_string(),
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
pub async fn sdk_config(moto: &Moto) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(mirobody::aws::http_client())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(&moto.endpoint)
        .load()
        .await
}

/// Tables created from `infra/tables.json` and a keys secret shaped like the template's.
pub async fn deployment(moto: &Moto) -> Vec<(String, String)> {
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

/// The import function's deployment, as in the template: `deployment` without the keys
/// secret, plus an upload bucket created in moto's S3 (and a client for the test's own
/// calls to it).
pub async fn import_deployment(
    moto: &Moto,
    bucket: &str,
) -> (Vec<(String, String)>, aws_sdk_s3::Client) {
    let mut settings: Vec<(String, String)> = deployment(moto)
        .await
        .into_iter()
        .filter(|(name, _)| name != "MIROBODY_KEYS_SECRET")
        .collect();
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk_config(moto).await)
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
    (settings, s3)
}

// ---------------------------------------------------------------- events

pub fn event(name: &str) -> String {
    std::fs::read_to_string(root().join("events").join(format!("{name}.json")))
        .unwrap_or_else(|_| panic!("events/{name}.json"))
}
