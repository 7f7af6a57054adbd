//! `mirobody-local`: every route in one process on `HTTP_HOST:HTTP_PORT`
//! (default 127.0.0.1:18060). For development and tests; never deployed.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mirobody::{App, Config, RouteGroup, Runtime};
use tokio::net::TcpListener;

/// Largest request body accepted (uploads arrive in batches well under this).
const MAX_BODY: usize = 8 * 1024 * 1024;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match Config::from_env(Runtime::Local) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("mirobody-local: {error}");
            std::process::exit(2);
        }
    };
    let addr = (config.host, config.port);
    let app = match App::new(config, RouteGroup::All) {
        Ok(app) => Arc::new(app),
        Err(error) => {
            eprintln!("mirobody-local: {error}");
            std::process::exit(2);
        }
    };
    let listener = match TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!(
                "mirobody-local: cannot listen on {}:{}: {error}",
                addr.0, addr.1
            );
            std::process::exit(1);
        }
    };
    let local = listener
        .local_addr()
        .expect("a bound listener has an address");
    // Tests read this line to learn the port when HTTP_PORT=0.
    println!("mirobody-local listening on http://{local}");
    tracing::info!(%local, "listening");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| serve(app.clone(), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn serve(
    app: Arc<App>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            let mut response = Response::new(Full::new(Bytes::from_static(
                b"{\"error\":\"request body too large\"}",
            )));
            *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            return Ok(response);
        }
    };
    let response = app.handle(Request::from_parts(parts, body)).await;
    Ok(response.map(Full::new))
}
