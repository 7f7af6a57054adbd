//! `mirobody-local`: every route in one process on `HTTP_HOST:HTTP_PORT`
//! (default 127.0.0.1:18060) over the embedded store. For development and tests;
//! never deployed.
//!
//! ```text
//! mirobody-local                    serve
//! mirobody-local mint-token <user>  print a JWT for <user>, signed with the dev key
//! mirobody-local seed-demo [user]   load the generated demo account (default: demo)
//! mirobody-local temp-url <user> <session> <agent>
//!                                   print a ten-minute agent URL (B3)
//! ```

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mirobody::{App, Config, RouteGroup, Runtime, Services, SourceAddr};
use tokio::net::TcpListener;

mod layered;

/// Largest request body accepted (API Gateway allows 10 MB; Lambda 6 MB).
const MAX_BODY: usize = 8 * 1024 * 1024;
/// Lifetime of a token printed by `mint-token`.
const DEV_TOKEN_SECS: u64 = 30 * 24 * 3600;

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
        .init();
    let config = layered::vars()
        .and_then(|vars| Config::from_vars(Runtime::Local, vars))
        .unwrap_or_else(|e| fail(e));
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("mint-token") => {
            let user = args
                .get(1)
                .unwrap_or_else(|| fail("usage: mirobody-local mint-token <user>"));
            println!("{}", token(&config, user).await);
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
        Some(other) => fail(format!(
            "unknown command {other:?} (commands: mint-token, seed-demo, temp-url)"
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
    println!("mirobody-local listening on http://{local}");
    tracing::info!(%local, "listening");
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let source = SourceAddr(peer.ip());
            let service = service_fn(move |request| serve(app.clone(), source, request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// A token for `user`, signed with the dev key (without opening the store).
async fn token(config: &Config, user: &str) -> String {
    match Services::mint_token(config, user, DEV_TOKEN_SECS).await {
        Ok(Some(token)) => token,
        Ok(None) => fail("no signing keys"),
        Err(e) => fail(e),
    }
}

async fn serve(
    app: Arc<App>,
    source: SourceAddr,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(source);
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let mut response = Response::new(Full::new(Bytes::from_static(
                b"{\"code\":413,\"msg\":\"request body too large (8 MB)\"}",
            )));
            *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            return Ok(response);
        }
    };
    let response = app.handle(Request::from_parts(parts, body)).await;
    Ok(response.map(Full::new))
}
