//! The one conversion between `lambda_http` and plain `http` types, and the run loop
//! every function shares (`s3`: the run loop of a function started by S3 events). The
//! `mirobody` crate never sees a Lambda type.

use std::sync::Arc;

use bytes::Bytes;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Error, Request, RequestExt, Response, service_fn};
use mirobody::{App, Config, ConfigError, RouteGroup, Runtime, Services, SourceAddr};

mod s3;
pub use s3::{ObjectCreated, run_object_created};

/// Builds the app once per cold start (settings from the environment), then serves
/// events until the runtime stops the sandbox.
pub async fn run(group: RouteGroup) -> Result<(), Error> {
    init_logging();
    let config = Config::from_vars(Runtime::Lambda, settings(std::env::vars())?)?;
    // The store, and the keys secret read once per cold start (without one every caller
    // is anonymous).
    let services = Services::open(&config).await?;
    let app = Arc::new(App::new(config, group, services)?);
    lambda_http::run(service_fn(move |event: Request| {
        let app = app.clone();
        async move { Ok::<_, Error>(to_lambda(app.handle(from_lambda(event)).await)) }
    }))
    .await
}

/// The variable that carries agent tool lists (A8) in one value, because a SAM template
/// cannot name environment variables after agents chosen at deploy time.
const AGENT_TOOLS_VAR: &str = "MIROBODY_AGENT_TOOLS";

/// The environment, plus the `ALLOWED_TOOLS_<AGENT>` / `DISALLOWED_TOOLS_<AGENT>` settings
/// listed in `MIROBODY_AGENT_TOOLS` as space-separated `NAME=tool,tool` entries. A variable
/// set directly wins over the same name in the list; any other name there is refused.
fn settings(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut vars: Vec<(String, String)> = vars.into_iter().collect();
    let Some(list) = vars
        .iter()
        .find(|(name, _)| name == AGENT_TOOLS_VAR)
        .map(|(_, value)| value.clone())
    else {
        return Ok(vars);
    };
    for entry in list.split_whitespace() {
        let bad = |problem: &str| ConfigError {
            setting: AGENT_TOOLS_VAR.into(),
            problem: format!("{problem} (entries look like ALLOWED_TOOLS_CLAUDE=tool_a,tool_b)"),
        };
        let (name, value) = entry
            .split_once('=')
            .ok_or_else(|| bad("an entry has no '='"))?;
        let agent = name
            .strip_prefix("ALLOWED_TOOLS_")
            .or_else(|| name.strip_prefix("DISALLOWED_TOOLS_"))
            .ok_or_else(|| {
                bad("only ALLOWED_TOOLS_<AGENT> and DISALLOWED_TOOLS_<AGENT> may be set")
            })?;
        if agent.is_empty() {
            return Err(bad("an entry names no agent"));
        }
        if !vars.iter().any(|(set, _)| set == name) {
            vars.push((name.to_string(), value.to_string()));
        }
    }
    Ok(vars)
}

/// JSON log lines without ANSI colours, as CloudWatch wants them: one object per line, the
/// event's fields at the top level (`status`, `duration_ms`, `caller`, …) and the request's
/// span fields in `span` (`span.request_id`, `span.trace_id`, `span.route`), both of which
/// CloudWatch Logs Insights discovers by itself. Lines logged outside a request have no `span`.
fn init_logging() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let _ = tracing::subscriber::set_global_default(json_logs(filter, std::io::stdout));
}

/// The JSON formatter [`init_logging`] installs, writing to `writer`.
fn json_logs<W>(
    filter: tracing_subscriber::EnvFilter,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync + 'static
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_ansi(false)
        .without_time()
        .with_writer(writer)
        .finish()
}

#[cfg(test)]
#[path = "logging_tests.rs"]
mod logging_tests;

/// A Lambda event as a plain request. API Gateway has already decoded base64 bodies.
pub fn from_lambda(event: Request) -> http::Request<Bytes> {
    let source = source_addr(&event);
    let (mut parts, body) = event.into_parts();
    if let Some(source) = source {
        parts.extensions.insert(source);
    }
    let bytes = match body {
        Body::Empty => Bytes::new(),
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    http::Request::from_parts(parts, bytes)
}

/// API Gateway's `requestContext.http.sourceIp`: the address the abuse limits count.
fn source_addr(event: &Request) -> Option<SourceAddr> {
    let RequestContext::ApiGatewayV2(context) = event.request_context_ref()? else {
        return None;
    };
    context
        .http
        .source_ip
        .as_deref()?
        .parse()
        .ok()
        .map(SourceAddr)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn agent_tool_lists_expand_from_one_variable() {
        let expanded = settings(vars(&[
            (
                AGENT_TOOLS_VAR,
                " ALLOWED_TOOLS_CLAUDE=a,b  DISALLOWED_TOOLS_cursor=c ",
            ),
            ("DISALLOWED_TOOLS_cursor", "d"),
        ]))
        .unwrap();
        let config = Config::from_vars(Runtime::Lambda, expanded).unwrap();
        assert_eq!(config.allowed_tools["CLAUDE"], ["a", "b"]);
        // The variable set directly wins.
        assert_eq!(config.disallowed_tools["CURSOR"], ["d"]);
    }

    #[test]
    fn other_settings_cannot_hide_in_the_list() {
        for list in [
            "HTTP_URI_PREFIX=/x",
            "ALLOWED_TOOLS_CLAUDE",
            "ALLOWED_TOOLS_=a",
        ] {
            let err = settings(vars(&[(AGENT_TOOLS_VAR, list)])).unwrap_err();
            assert_eq!(err.setting, AGENT_TOOLS_VAR, "{list}");
        }
    }
}
