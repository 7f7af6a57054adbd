//! The ceiling `scripts/bench` measures beside the product: a bare hyper HTTP/1.1 server on
//! loopback answering every request with the same fixed bytes (the product's own
//! `tools/list` answer, read from the file `CEILING_BODY`). What tokio, hyper and the
//! machine's network stack cost with no application at all, on the same machine in the
//! same run. Not part of the product; listens on 127.0.0.1 only.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("HTTP_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(18091);
    let body = match std::env::var_os("CEILING_BODY") {
        Some(path) => Bytes::from(std::fs::read(path)?),
        None => Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#),
    };
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let body = body.clone();
        tokio::spawn(async move {
            let answer = move |_request: Request<hyper::body::Incoming>| {
                let body = body.clone();
                async move {
                    let mut response = Response::new(Full::new(body));
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                    Ok::<_, Infallible>(response)
                }
            };
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
        });
    }
}
