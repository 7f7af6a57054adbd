//! `mirobody-local`: every route in one process on `HTTP_HOST:HTTP_PORT`
//! (default 127.0.0.1:18060) over the embedded store. For development and tests;
//! never deployed. Starts with a banner (`banner.rs`): where it listens, its public URL,
//! the MCP endpoint and the console, and a warning for `HTTP_HOST=0.0.0.0` without
//! `MCP_PUBLIC_URL`.
//!
//! ```text
//! mirobody-local                    serve
//! mirobody-local mint-token <user>  print a JWT for <user>, signed with the dev key
//! mirobody-local seed-demo [user]   load the generated demo account (default: demo)
//! mirobody-local migrate            move data stored in an older layout into the current
//!                                   one, in the configured store (safe to run again)
//! mirobody-local temp-url <user> <session> <agent>
//!                                   print a ten-minute agent URL (B3)
//! mirobody-local routes-template    write template.yaml's routes from the route table
//! mirobody-local routes-watch       write CargoLambda.toml, `cargo lambda watch`'s router
//! mirobody-local clients-readme     write the README's client section from the client table
//! mirobody-local --help, --version
//! ```

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use mirobody::{App, BodyPlan, Config, RouteGroup, Runtime, Services, SourceAddr};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// mimalloc, as every function binary has it (`lambda-glue`): fewer instructions per
/// request than the system allocator's.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

mod banner;
mod layered;
mod limits;

use limits::ServerLimits;

/// How much of an over-long body is read and dropped before answering 413 (beyond it, the
/// connection is cut).
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;
/// How long in-flight requests may finish after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Lifetime of a token printed by `mint-token`.
const DEV_TOKEN_SECS: u64 = 30 * 24 * 3600;

/// What `--help` prints: one usage line per command, and where settings come from.
const USAGE: &str = "\
mirobody-local: the whole product in one process on the embedded store (development and tests)

Usage:
  mirobody-local                          serve on HTTP_HOST:HTTP_PORT (default 127.0.0.1:18060)
  mirobody-local mint-token <user>        print a session token for <user> (30 days)
  mirobody-local seed-demo [user]         load the generated demo account (default: demo), print a token
  mirobody-local migrate                  move data stored in an older layout into the current one
  mirobody-local temp-url <user> <session> <agent>
                                          print a ten-minute agent URL
  mirobody-local routes-template [file]   write template.yaml's routes from the route table
  mirobody-local routes-watch [file]      write CargoLambda.toml (cargo lambda watch's router)
  mirobody-local clients-readme [file]    write README.md's client section from the client table
  mirobody-local --help | -h | help       this text
  mirobody-local --version | -V           the version

Settings come from the environment and the config file (see the README's settings table);
every command reads the same ones, so a token is for the origin the server serves
(MCP_PUBLIC_URL, else http://HTTP_HOST:HTTP_PORT).
";

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("mirobody-local: {message}");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        // A server's log is read from a file or a collector, not a terminal.
        .with_ansi(false)
        // The request's fields (`request_id=…`) come from its context, not a span.
        .event_format(mirobody::observe::RequestLines::text(
            tracing_subscriber::fmt::format().with_ansi(false),
        ))
        .init();
    // Help and the version need no settings: a bad one must not hide them.
    match std::env::args().nth(1).as_deref() {
        Some("--help" | "-h" | "help") => {
            print!("{USAGE}");
            return;
        }
        Some("--version" | "-V") => {
            println!("mirobody-local {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        _ => {}
    }
    let vars = layered::vars().unwrap_or_else(|e| fail(e));
    let limits = ServerLimits::from_vars(&vars).unwrap_or_else(|e| fail(e));
    let config = Config::from_vars(Runtime::Local, vars).unwrap_or_else(|e| fail(e));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("mint-token") => {
            let user = args
                .get(1)
                .unwrap_or_else(|| fail("usage: mirobody-local mint-token <user>"));
            println!("{}", token(&config, user).await);
            for_origin(&config);
            return;
        }
        Some("seed-demo") => {
            let user = args.get(1).map(String::as_str).unwrap_or("demo");
            let services = Services::open(&config).await.unwrap_or_else(|e| fail(e));
            let first_day = chrono::NaiveDate::from_ymd_opt(2025, 11, 1).expect("a valid date");
            let (readings, genotypes) = services
                .seed_demo(user, first_day)
                .await
                .unwrap_or_else(|e| fail(e));
            eprintln!("{readings} readings and {genotypes} genotypes written");
            println!("demo data loaded for user {user:?}; a token for it:");
            println!("{}", token(&config, user).await);
            for_origin(&config);
            return;
        }
        Some("migrate") => {
            let services = Services::open(&config).await.unwrap_or_else(|e| fail(e));
            let migrated = services
                .migrate_legacy_data()
                .await
                .unwrap_or_else(|e| fail(e));
            println!("{} readings moved to the current layout", migrated.readings);
            println!("{} users' genotypes moved into a genome", migrated.genomes);
            println!(
                "{} readings made canonical by the measures catalogue",
                migrated.canonical
            );
            return;
        }
        Some("temp-url") => {
            let [_, user, session, agent] = args.as_slice() else {
                fail("usage: mirobody-local temp-url <user> <session> <agent>")
            };
            let services = Services::open(&config).await.unwrap_or_else(|e| fail(e));
            let app = App::new(config, RouteGroup::All, services).unwrap_or_else(|e| fail(e));
            match app.temporary_url(user, session, agent).await {
                Some(url) => println!("{url}"),
                None => fail("the URL could not be stored"),
            }
            return;
        }
        Some("routes-template") => {
            // template.yaml's routes, generated from the route table.
            let path = args.get(1).map(String::as_str).unwrap_or("template.yaml");
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("{path}: {e}")));
            let routed = mirobody::routes::template_with_routes(&text).unwrap_or_else(|e| fail(e));
            if routed == text {
                println!("{path}: its routes are the route table's already");
            } else {
                std::fs::write(path, routed).unwrap_or_else(|e| fail(format!("{path}: {e}")));
                println!("{path}: routes written from the route table");
            }
            return;
        }
        Some("routes-watch") => {
            // `cargo lambda watch`'s router, generated from the route table.
            let path = args
                .get(1)
                .map(String::as_str)
                .unwrap_or("CargoLambda.toml");
            let router = mirobody::routes::watch_router();
            if std::fs::read_to_string(path).is_ok_and(|text| text == router) {
                println!("{path}: its router is the route table's already");
            } else {
                std::fs::write(path, router).unwrap_or_else(|e| fail(format!("{path}: {e}")));
                println!("{path}: router written from the route table");
            }
            return;
        }
        Some("clients-readme") => {
            // The README's client section, generated from the table the console shows.
            let path = args.get(1).map(String::as_str).unwrap_or("README.md");
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("{path}: {e}")));
            let written = mirobody::clients::readme_with_clients(&text).unwrap_or_else(|e| fail(e));
            if written == text {
                println!("{path}: its client section is the table's already");
            } else {
                std::fs::write(path, written).unwrap_or_else(|e| fail(format!("{path}: {e}")));
                println!("{path}: client section written from the client table");
            }
            return;
        }
        Some(other) => fail(format!(
            "unknown command {other:?} (commands: mint-token, seed-demo, migrate, temp-url, \
             routes-template, routes-watch, clients-readme; --help says more)"
        )),
        None => {}
    }
    let addr = (config.host, config.port);
    let listener = TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| fail(format!("cannot listen on {}:{}: {e}", addr.0, addr.1)));
    let local = listener
        .local_addr()
        .expect("a bound listener has an address");
    // With HTTP_PORT=0 the absolute URLs the server hands out must name the real port.
    let mut config = config;
    config.port = local.port();
    let services = Services::open(&config).await.unwrap_or_else(|e| fail(e));
    let app = Arc::new(App::new(config, RouteGroup::All, services).unwrap_or_else(|e| fail(e)));
    // Tests read this line to learn the port when HTTP_PORT=0.
    // Signal handlers before the first line, so a SIGTERM right after it is graceful too.
    let shutdown =
        shutdown_signal().unwrap_or_else(|e| fail(format!("cannot handle signals: {e}")));
    println!("mirobody-local listening on http://{local}");
    // The rest of the banner; a reader that stopped after the first
    // line (the tests) must not stop the server, so write errors are ignored.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        for line in banner::lines(app.config()) {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }
    if let Some(warning) = banner::warning(app.config(), local) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{warning}");
    }
    tracing::info!(%local, "listening");
    serve_until_signalled(listener, app, limits, shutdown).await;
}

/// Serves connections (at most `max_connections` at once, each with the header and body
/// timeouts) until SIGINT or SIGTERM, then stops accepting and lets in-flight requests
/// finish for up to [`SHUTDOWN_GRACE`].
async fn serve_until_signalled(
    listener: TcpListener,
    app: Arc<App>,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) {
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let body_limits = BodyLimits {
        timeout: limits.body_timeout,
        upload_max: limits.upload_max_bytes,
        upload_idle: limits.upload_idle_timeout,
    };
    tokio::pin!(shutdown);
    loop {
        // A free slot first: while all are taken, new connections wait in the backlog.
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => permit.expect("never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let source = SourceAddr(peer.ip());
        let service = service_fn(move |request| serve(app.clone(), source, body_limits, request));
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    tracing::info!("shutting down: no new connections");
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish in time");
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM; the handlers are installed by this call.
fn shutdown_signal() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// A token for `user`, signed with the dev key (without opening the store).
/// Says, on stderr (stdout is the token alone), which server a printed token is for: a
/// server on another origin refuses it.
fn for_origin(config: &Config) {
    eprintln!(
        "the token is for {} (its MCP endpoint {}/mcp); a server on another origin refuses it",
        config.public_origin(),
        config.public_origin()
    );
}

async fn token(config: &Config, user: &str) -> String {
    match Services::mint_token(config, user, DEV_TOKEN_SECS).await {
        Ok(Some(token)) => token,
        Ok(None) => fail("no signing keys"),
        Err(e) => fail(e),
    }
}

/// How request bodies are read.
#[derive(Clone, Copy)]
struct BodyLimits {
    /// A whole (buffered) body must arrive within this.
    timeout: Duration,
    /// An upload's streamed PUT: at most this many bytes, and no pause longer than
    /// `upload_idle` between chunks.
    upload_max: u64,
    upload_idle: Duration,
}

/// Chunks of a streamed body in flight between the socket and the file.
const STREAM_CHUNKS: usize = 8;

/// One request: its body read up to its route's cap, within the body timeout; an
/// upload's PUT streamed to the app as it arrives instead.
async fn serve(
    app: Arc<App>,
    source: SourceAddr,
    limits: BodyLimits,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(source);
    let limit = match app.body_plan(&parts.method, parts.uri.path()) {
        BodyPlan::Whole(limit) => limit,
        BodyPlan::Streamed => {
            let (sender, chunks) = tokio::sync::mpsc::channel(STREAM_CHUNKS);
            tokio::spawn(forward_body(body, sender, limits.upload_idle));
            let request = Request::from_parts(parts, ());
            let response = app
                .handle_streamed(request, chunks, limits.upload_max)
                .await;
            return Ok(response.map(Full::new));
        }
    };
    let body = match tokio::time::timeout(limits.timeout, read_body(body, limit)).await {
        Ok(Ok(Some(body))) => body,
        Ok(Ok(None)) => return Ok(app.body_too_large(limit).map(Full::new)),
        // The client went away mid-body: nobody reads this answer.
        Ok(Err(_)) => {
            return Ok(plain(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            ));
        }
        Err(_) => {
            let mut response = plain(
                StatusCode::REQUEST_TIMEOUT,
                "the request body did not arrive in time",
            );
            response.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return Ok(response);
        }
    };
    let response = app.handle(Request::from_parts(parts, body)).await;
    Ok(response.map(Full::new))
}

/// The body, kept up to `limit` bytes; `None` if it was longer. The rest of a longer body
/// is read and dropped (up to [`DRAIN_LIMIT`]) so the client, still sending, gets the 413
/// instead of a broken pipe; it is never kept.
async fn read_body(mut body: Incoming, limit: usize) -> Result<Option<Bytes>, hyper::Error> {
    let mut kept = BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        seen = seen.saturating_add(data.len());
        if seen <= limit {
            kept.extend_from_slice(&data);
        } else if seen > DRAIN_LIMIT {
            break;
        }
    }
    Ok((seen <= limit).then(|| kept.freeze()))
}

/// Sends a streamed body's chunks to the app as they arrive; a client that sends
/// nothing for `idle` (or breaks off) ends the body with an error. Stops when the app
/// stops listening (it refused the URL, or the body passed the cap).
async fn forward_body(
    mut body: Incoming,
    sender: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
    idle: Duration,
) {
    loop {
        let chunk = match tokio::time::timeout(idle, body.frame()).await {
            Ok(None) => return,
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => Ok(data),
                Err(_) => continue, // trailers
            },
            Ok(Some(Err(error))) => Err(std::io::Error::other(error)),
            Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut)),
        };
        let failed = chunk.is_err();
        if sender.send(chunk).await.is_err() || failed {
            return;
        }
    }
}

/// The local server's own refusals, in the account API's envelope.
fn plain(status: StatusCode, msg: &str) -> Response<Full<Bytes>> {
    let body = format!("{{\"code\":{},\"msg\":\"{msg}\"}}", status.as_u16());
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}
