//! The one conversion between `lambda_http` and plain `http` types, and the run loop
//! every function shares. The `mirobody` crate never sees a Lambda type.

use std::sync::Arc;

use bytes::Bytes;
use lambda_http::{Body, Error, Request, Response, service_fn};
use mirobody::clock::SystemClock;
use mirobody::identity::Keys;
use mirobody::store::open_store;
use mirobody::{App, Config, RouteGroup, Runtime, Services};

/// Builds the app once per cold start (settings from the environment), then serves
/// events until the runtime stops the sandbox.
pub async fn run(group: RouteGroup) -> Result<(), Error> {
    init_logging();
    let config = Config::from_env(Runtime::Lambda)?;
    let store = open_store(&config).await?;
    // Read once per cold start. Without a configured secret every caller is anonymous.
    let keys = match &config.keys_secret {
        Some(secret) => Some(
            Keys::from_secrets_manager(secret, config.secretsmanager_endpoint.as_deref()).await?,
        ),
        None => None,
    };
    let app = Arc::new(App::new(
        config,
        group,
        Services {
            store,
            keys,
            clock: Arc::new(SystemClock),
        },
    )?);
    lambda_http::run(service_fn(move |event: Request| {
        let app = app.clone();
        async move { Ok::<_, Error>(to_lambda(app.handle(from_lambda(event)).await)) }
    }))
    .await
}

/// JSON log lines without ANSI colours, as CloudWatch wants them.
fn init_logging() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_current_span(false)
        .with_ansi(false)
        .without_time()
        .init();
}

/// A Lambda event as a plain request. API Gateway has already decoded base64 bodies.
pub fn from_lambda(event: Request) -> http::Request<Bytes> {
    let (parts, body) = event.into_parts();
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    http::Request::from_parts(parts, bytes)
}

/// A plain response as a Lambda response (text bodies stay text for API Gateway).
pub fn to_lambda(response: http::Response<Bytes>) -> Response<Body> {
    let (parts, bytes) = response.into_parts();
    let body = if bytes.is_empty() {
        Body::Empty
    } else {
        match String::from_utf8(bytes.to_vec()) {
            Ok(text) => Body::Text(text),
            Err(error) => Body::Binary(error.into_bytes()),
        }
    };
    Response::from_parts(parts, body)
}
