//! The guarded HTTP client: how a [`CheckedUrl`] becomes a request.
//!
//! Owns the client settings that make the guard's answer stick (D9): the connection goes
//! only to the addresses the guard checked (the host is pinned to them, and any other
//! name fails to resolve instead of reaching the system resolver), no redirect is
//! followed, no proxy is used (environment variables included), no connection is
//! pooled for reuse by a later check, and every response is read up to a size bound.
//! TLS is rustls with the compiled-in Mozilla roots (`webpki-roots`): a remote server
//! needs a valid public certificate, whatever the machine's own trust store holds.

use std::error::Error as _;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::guard::{AddressGuard, CheckedUrl, GuardError};

/// The response size bound when the caller has no better one.
pub(crate) const DEFAULT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// The most a connection may take to open (within the request's own timeout).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

const USER_AGENT: &str = concat!("mirobody/", env!("CARGO_PKG_VERSION"));

/// Why an outbound request failed. Messages never contain the URL (its path or query
/// may carry a secret) or any header.
#[derive(Debug)]
pub(crate) enum HttpError {
    /// The guard refused the URL; nothing was sent.
    Guard(GuardError),
    /// The server answered with a redirect, which is not followed.
    Redirect { status: StatusCode },
    /// The response body is larger than the bound.
    TooLarge { limit: usize },
    /// The request did not finish within its timeout.
    Timeout,
    /// The connection reached an address the guard did not check (never expected:
    /// the client is pinned; this is the check that it was).
    Unpinned,
    /// Connecting, TLS, or the HTTP exchange failed.
    Transport(String),
    /// The client could not be built.
    Setup(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Guard(err) => err.fmt(f),
            HttpError::Redirect { status } => {
                write!(f, "redirect refused (HTTP {})", status.as_u16())
            }
            HttpError::TooLarge { limit } => {
                write!(f, "response larger than the {limit}-byte limit")
            }
            HttpError::Timeout => f.write_str("timed out"),
            HttpError::Unpinned => f.write_str("connected to an address the guard did not check"),
            HttpError::Transport(detail) => f.write_str(detail),
            HttpError::Setup(detail) => write!(f, "could not build the HTTP client: {detail}"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<GuardError> for HttpError {
    fn from(err: GuardError) -> Self {
        HttpError::Guard(err)
    }
}

impl HttpError {
    fn from_reqwest(err: reqwest::Error) -> Self {
        if err.is_timeout() {
            return HttpError::Timeout;
        }
        // The URL may carry a secret; the error chain below it does not.
        let err = err.without_url();
        let mut detail = err.to_string();
        let mut source = err.source();
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        HttpError::Transport(detail)
    }
}

/// A client that can reach only `checked`'s addresses (tests reach a server with it).
#[cfg(test)]
pub(crate) fn pinned_client(
    checked: &CheckedUrl,
    timeout: Duration,
) -> Result<reqwest::Client, HttpError> {
    build_pinned(checked, timeout, 0)
}

/// The pinned client; `idle` connections are kept for reuse by this client only, which
/// never talks to anything but `checked`'s addresses.
fn build_pinned(
    checked: &CheckedUrl,
    timeout: Duration,
    idle: usize,
) -> Result<reqwest::Client, HttpError> {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config()?)
        .https_only(checked.url().scheme() == "https")
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .pool_max_idle_per_host(idle)
        .dns_resolver(Arc::new(NoResolution))
        .connect_timeout(timeout.min(CONNECT_TIMEOUT))
        .timeout(timeout)
        .user_agent(USER_AGENT);
    if !checked.is_ip_literal() {
        builder = builder.resolve_to_addrs(checked.host(), checked.addrs());
    }
    builder
        .build()
        .map_err(|err| HttpError::Setup(err.to_string()))
}

/// Reads `response`'s body, refusing it as soon as it is known to exceed `max_bytes`
/// (from `Content-Length`, or while reading).
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Bytes, HttpError> {
    let too_large = HttpError::TooLarge { limit: max_bytes };
    if response
        .content_length()
        .is_some_and(|length| length > max_bytes as u64)
    {
        return Err(too_large);
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(HttpError::from_reqwest)? {
        if chunk.len() > max_bytes - body.len() {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// A finished response: any status but a redirect, and the whole (bounded) body.
#[derive(Debug, Clone)]
pub(crate) struct RemoteResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Requests to user-supplied URLs: check, pinned client, request, bounded read.
#[derive(Clone)]
pub(crate) struct GuardedHttp {
    guard: AddressGuard,
}

impl GuardedHttp {
    pub(crate) fn new(guard: AddressGuard) -> Self {
        GuardedHttp { guard }
    }

    pub(crate) fn guard(&self) -> &AddressGuard {
        &self.guard
    }

    /// POSTs `body` as JSON to `url` (re-checked by the guard on every call) with
    /// `headers` (`Content-Type: application/json` unless given). `timeout` bounds the
    /// whole exchange, resolution and body included; `max_bytes` bounds the body.
    /// Any status other than a redirect is returned for the caller to judge.
    #[cfg(test)]
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &serde_json::Value,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<RemoteResponse, HttpError> {
        let exchange = async {
            let endpoint = self.endpoint(url, timeout).await?;
            endpoint.post_json(headers, body, max_bytes).await
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(HttpError::Timeout))
    }
}

/// One checked URL and a client pinned to its addresses, for a short exchange of
/// several requests (one MCP connection): the guard ran once, when it was made (D9:
/// each connection re-validates), and the kept-alive connection goes nowhere else.
#[derive(Clone)]
pub(crate) struct PinnedEndpoint {
    checked: CheckedUrl,
    client: reqwest::Client,
    timeout: Duration,
}

impl fmt::Debug for PinnedEndpoint {
    // The URL may carry a secret in its path or query.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedEndpoint").finish_non_exhaustive()
    }
}

impl GuardedHttp {
    /// Checks `url` and builds a client pinned to it; `timeout` bounds the check and
    /// then each request on the endpoint.
    pub(crate) async fn endpoint(
        &self,
        url: &str,
        timeout: Duration,
    ) -> Result<PinnedEndpoint, HttpError> {
        let checked = tokio::time::timeout(timeout, self.guard.check(url))
            .await
            .map_err(|_| HttpError::Timeout)??;
        let client = build_pinned(&checked, timeout, 1)?;
        Ok(PinnedEndpoint {
            checked,
            client,
            timeout,
        })
    }
}

impl PinnedEndpoint {
    /// The checked URL's host (never its path, query or credentials): what a span names.
    pub(crate) fn host(&self) -> &str {
        self.checked.host()
    }

    /// Sends one request to the checked URL (`build` adds the method, headers and
    /// body) and reads the answer, within the endpoint's timeout.
    async fn send(
        &self,
        build: impl FnOnce(&reqwest::Client, url::Url) -> reqwest::RequestBuilder,
        max_bytes: usize,
    ) -> Result<RemoteResponse, HttpError> {
        let exchange = async {
            let response = build(&self.client, self.checked.url().clone())
                .send()
                .await
                .map_err(HttpError::from_reqwest)?;
            finish(&self.checked, response, max_bytes).await
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(HttpError::Timeout))
    }

    /// A DELETE with `headers` (ending a legacy MCP session): the status, or the failure.
    pub(crate) async fn delete(&self, headers: &HeaderMap) -> Result<StatusCode, HttpError> {
        let response = self
            .send(
                |client, url| client.delete(url).headers(headers.clone()),
                64 * 1024,
            )
            .await?;
        Ok(response.status)
    }

    /// POSTs `body` as JSON, like [`GuardedHttp::post_json`], to the checked URL.
    pub(crate) async fn post_json(
        &self,
        headers: &HeaderMap,
        body: &serde_json::Value,
        max_bytes: usize,
    ) -> Result<RemoteResponse, HttpError> {
        let mut headers = headers.clone();
        headers
            .entry(header::CONTENT_TYPE)
            .or_insert(HeaderValue::from_static("application/json"));
        let body = serde_json::to_vec(body).map_err(|err| HttpError::Setup(err.to_string()))?;
        self.send(
            |client, url| client.post(url).headers(headers).body(body),
            max_bytes,
        )
        .await
    }

    /// POSTs a form (`application/x-www-form-urlencoded`, already encoded), asking
    /// for JSON: a token endpoint's request.
    pub(crate) async fn post_form(
        &self,
        body: String,
        max_bytes: usize,
    ) -> Result<RemoteResponse, HttpError> {
        self.send(
            |client, url| {
                client
                    .post(url)
                    .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .header(header::ACCEPT, "application/json")
                    .body(body)
            },
            max_bytes,
        )
        .await
    }

    /// A GET asking for JSON.
    pub(crate) async fn get(&self, max_bytes: usize) -> Result<RemoteResponse, HttpError> {
        self.send(
            |client, url| client.get(url).header(header::ACCEPT, "application/json"),
            max_bytes,
        )
        .await
    }
}

impl GuardedHttp {
    /// A guarded GET (documents such as OAuth client metadata): same checks as `post_json`.
    pub(crate) async fn get(
        &self,
        url: &str,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<RemoteResponse, HttpError> {
        let exchange = async { self.endpoint(url, timeout).await?.get(max_bytes).await };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(HttpError::Timeout))
    }
}

/// Checks where the response came from and what it is, then reads it.
async fn finish(
    checked: &CheckedUrl,
    response: reqwest::Response,
    max_bytes: usize,
) -> Result<RemoteResponse, HttpError> {
    if let Some(peer) = response.remote_addr() {
        let pinned = checked
            .addrs()
            .iter()
            .any(|addr| addr.ip() == peer.ip() && addr.port() == peer.port());
        if !pinned {
            return Err(HttpError::Unpinned);
        }
    }
    let status = response.status();
    if status.is_redirection() {
        return Err(HttpError::Redirect { status });
    }
    let headers = response.headers().clone();
    let body = read_limited(response, max_bytes).await?;
    Ok(RemoteResponse {
        status,
        headers,
        body,
    })
}

/// rustls over ring, trusting the Mozilla roots only, HTTP/1.1. Built once.
fn tls_config() -> Result<rustls::ClientConfig, HttpError> {
    static CONFIG: OnceLock<Result<rustls::ClientConfig, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|err| err.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(config)
        })
        .clone()
        .map_err(HttpError::Setup)
}

/// The resolver behind the pinned host: every other name fails here rather than
/// reaching the system resolver.
struct NoResolution;

impl reqwest::dns::Resolve for NoResolution {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move { Err(format!("{host} was not checked by the address guard").into()) })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::Runtime;
    use crate::remote::guard::{GuardPolicy, Resolver};
    use futures_util::future::BoxFuture;
    use std::collections::HashMap;
    use std::io;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A made-up name (`.invalid` never resolves for real) and its fake answer.
    const PINNED_NAME: &str = "mcp.pinned.invalid";

    struct LoopbackResolver;

    impl Resolver for LoopbackResolver {
        fn resolve<'a>(
            &'a self,
            host: &'a str,
            _port: u16,
        ) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
            let answers = HashMap::from([(PINNED_NAME, IpAddr::V4(Ipv4Addr::LOCALHOST))]);
            let answer = answers
                .get(host)
                .map(|ip| vec![*ip])
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown test name"));
            Box::pin(async move { answer })
        }
    }

    fn development() -> GuardedHttp {
        let policy = GuardPolicy::insecure_loopback(Runtime::Local).unwrap();
        GuardedHttp::new(AddressGuard::new(policy, Arc::new(LoopbackResolver)))
    }

    fn strict() -> GuardedHttp {
        GuardedHttp::new(AddressGuard::new(
            GuardPolicy::strict(),
            Arc::new(LoopbackResolver),
        ))
    }

    /// A one-answer HTTP server on 127.0.0.1; it records each request head and body.
    pub(in crate::remote) struct Server {
        pub(in crate::remote) addr: SocketAddr,
        connections: Arc<AtomicUsize>,
        requests: Arc<Mutex<Vec<String>>>,
    }

    impl Server {
        /// Every request so far, head and body as text.
        pub(in crate::remote) fn requests(&self) -> Vec<String> {
            self.requests.lock().unwrap().clone()
        }
    }

    /// How a test server answers one request (its head and body as text); `None`
    /// never answers.
    pub(in crate::remote) type Responder = Arc<dyn Fn(&str) -> Option<Vec<u8>> + Send + Sync>;

    /// A TCP server on 127.0.0.1 that reads one request (head and body) per connection
    /// and writes `answer`; `None` never answers. Shared with the MCP client's tests.
    pub(in crate::remote) async fn serve(answer: Option<Vec<u8>>) -> Server {
        serve_with(Arc::new(move |_| answer.clone())).await
    }

    /// [`serve`] with an answer that depends on the request.
    pub(in crate::remote) async fn serve_with(respond: Responder) -> Server {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (connections.clone(), requests.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let respond = respond.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        let text = String::from_utf8_lossy(&request).to_string();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let length = text
                                .lines()
                                .find_map(|line| {
                                    let (name, value) = line.split_once(':')?;
                                    name.eq_ignore_ascii_case("content-length")
                                        .then(|| value.trim().parse::<usize>().ok())?
                                })
                                .unwrap_or(0);
                            if request.len() >= end + 4 + length {
                                break;
                            }
                        }
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&request).to_string();
                    let answer = respond(&text);
                    seen.lock().unwrap().push(text);
                    match answer {
                        Some(answer) => {
                            let _ = stream.write_all(&answer).await;
                            let _ = stream.shutdown().await;
                        }
                        None => tokio::time::sleep(Duration::from_secs(60)).await,
                    }
                });
            }
        });
        Server {
            addr,
            connections,
            requests,
        }
    }

    fn answer(head: &str, body: &[u8]) -> Option<Vec<u8>> {
        let mut out = format!("HTTP/1.1 {head}\r\nConnection: close\r\n").into_bytes();
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        Some(out)
    }

    const SECOND: Duration = Duration::from_secs(5);

    async fn post(http: &GuardedHttp, url: &str, max: usize) -> Result<RemoteResponse, HttpError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-test", HeaderValue::from_static("1"));
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        http.post_json(url, &headers, &body, SECOND, max).await
    }

    #[tokio::test]
    async fn a_made_up_name_reaches_the_loopback_server_it_was_checked_as() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let server = serve(answer(
            &format!(
                "200 OK\r\nContent-Type: application/json\r\nContent-Length: {}",
                json.len()
            ),
            json,
        ))
        .await;
        let url = format!("http://{PINNED_NAME}:{}/mcp", server.addr.port());
        let response = post(&development(), &url, DEFAULT_MAX_BYTES).await.unwrap();
        assert_eq!(response.status, StatusCode::OK);
        assert_eq!(&response.body[..], json);
        assert_eq!(response.headers["content-type"], "application/json");
        let requests = server.requests.lock().unwrap();
        let request = requests[0].to_ascii_lowercase();
        assert!(request.starts_with("post /mcp http/1.1\r\n"), "{request}");
        assert!(request.contains(&format!("host: {PINNED_NAME}:{}", server.addr.port())));
        assert!(request.contains("content-type: application/json"));
        assert!(request.contains("x-test: 1"));
        assert!(request.ends_with(r#"{"id":1,"jsonrpc":"2.0","method":"ping"}"#));
    }

    #[tokio::test]
    async fn a_pinned_client_resolves_no_other_name() {
        let server = serve(answer("204 No Content", b"")).await;
        let port = server.addr.port();
        let guard = development().guard().clone();
        let checked = guard
            .check(&format!("http://{PINNED_NAME}:{port}/"))
            .await
            .unwrap();
        assert_eq!(
            checked.addrs(),
            [SocketAddr::from((Ipv4Addr::LOCALHOST, port))]
        );
        let client = pinned_client(&checked, SECOND).unwrap();
        let ok = client.get(checked.url().clone()).send().await.unwrap();
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        let err = client
            .get(format!("http://elsewhere.invalid:{port}/"))
            .send()
            .await
            .unwrap_err();
        let err = HttpError::from_reqwest(err).to_string();
        assert!(
            err.contains("elsewhere.invalid was not checked by the address guard"),
            "{err}"
        );
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn redirects_are_refused_not_followed() {
        for status in [
            "301 Moved Permanently",
            "302 Found",
            "307 Temporary Redirect",
        ] {
            let server = serve(None).await;
            let target = format!("http://127.0.0.1:{}/elsewhere", server.addr.port());
            let redirecting = serve(answer(
                &format!("{status}\r\nLocation: {target}\r\nContent-Length: 0"),
                b"",
            ))
            .await;
            let url = format!("http://{PINNED_NAME}:{}/mcp", redirecting.addr.port());
            let err = post(&development(), &url, DEFAULT_MAX_BYTES)
                .await
                .unwrap_err();
            assert!(matches!(err, HttpError::Redirect { .. }), "{err:?}");
            assert!(err.to_string().starts_with("redirect refused"), "{err}");
            assert_eq!(
                server.connections.load(Ordering::SeqCst),
                0,
                "followed {status}"
            );
        }
    }

    #[tokio::test]
    async fn oversized_bodies_are_refused() {
        // Declared too large.
        let server = serve(answer("200 OK\r\nContent-Length: 100", &[b'x'; 100])).await;
        let url = format!("http://127.0.0.1:{}/", server.addr.port());
        let err = post(&development(), &url, 99).await.unwrap_err();
        assert!(matches!(err, HttpError::TooLarge { limit: 99 }), "{err:?}");

        // Undeclared (read to close), found too large while reading.
        let server = serve(answer("200 OK", &vec![b'x'; 64 * 1024])).await;
        let url = format!("http://127.0.0.1:{}/", server.addr.port());
        let err = post(&development(), &url, 1024).await.unwrap_err();
        assert!(
            matches!(err, HttpError::TooLarge { limit: 1024 }),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "response larger than the 1024-byte limit");

        // Exactly at the bound is fine.
        let server = serve(answer("200 OK", &[b'x'; 100])).await;
        let url = format!("http://[::ffff:127.0.0.1]:{}/", server.addr.port());
        assert!(
            post(&development(), &url, 100).await.is_err(),
            "wrapped loopback"
        );
        let url = format!("http://127.0.0.1:{}/", server.addr.port());
        let response = post(&development(), &url, 100).await.unwrap();
        assert_eq!(response.body.len(), 100);
    }

    #[tokio::test]
    async fn the_strict_guard_refuses_before_connecting() {
        let server = serve(answer("200 OK\r\nContent-Length: 0", b"")).await;
        let port = server.addr.port();
        for url in [
            format!("http://127.0.0.1:{port}/"),
            format!("https://127.0.0.1:{port}/"),
            format!("https://{PINNED_NAME}:{port}/"),
            format!("https://[::1]:{port}/"),
        ] {
            let err = post(&strict(), &url, DEFAULT_MAX_BYTES).await.unwrap_err();
            assert!(matches!(&err, HttpError::Guard(g) if g.code() == "invalid_mcp_server_url"));
        }
        assert_eq!(server.connections.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let server = serve(None).await;
        let url = format!("http://127.0.0.1:{}/", server.addr.port());
        let started = std::time::Instant::now();
        let body = serde_json::json!({});
        let err = development()
            .post_json(
                &url,
                &HeaderMap::new(),
                &body,
                Duration::from_millis(300),
                1024,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, HttpError::Timeout), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn transport_errors_do_not_repeat_the_url() {
        // A port nothing listens on any more.
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("http://127.0.0.1:{port}/mcp/s3cr3t?key=k3y");
        let err = post(&development(), &url, DEFAULT_MAX_BYTES)
            .await
            .unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, HttpError::Transport(_)), "{shown}");
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("k3y"),
            "{shown}"
        );
    }
}
