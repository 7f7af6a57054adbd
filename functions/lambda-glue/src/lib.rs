//! The one conversion between `lambda_http` and plain `http` types, and the run loop
//! every function shares (`s3`: the run loop of a function started by S3 events). The
//! `mirobody` crate never sees a Lambda type.
//!
//! Per invocation the glue puts the [`Invocation`] on the request (API
//! Gateway's request id, Lambda's, the X-Ray trace header), and takes the response's
//! [`FinishedTrace`] to the two exporters: its EMF metric lines
//! (`mirobody::observe::metrics`), printed to stdout in one write, and its X-Ray
//! subsegments (`xray`), sent over UDP to the daemon Lambda provides when the
//! invocation is sampled.

use std::io::Write;

/// Every function's allocator: mimalloc, whose small allocations and frees cost a
/// fraction of the system allocator's (a request makes about a hundred).
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Error, Request, RequestExt, Response, service_fn};
use mirobody::observe::metrics::{self, Emitter};
use mirobody::observe::{FinishedTrace, Invocation};
use mirobody::{App, Config, ConfigError, RouteGroup, Runtime, Services, SourceAddr};

mod s3;
mod xray;
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
    let exporters = Arc::new(Exporters::from_env(function_name(group)));
    lambda_http::run(service_fn(move |event: Request| {
        let (app, exporters) = (app.clone(), exporters.clone());
        async move {
            let request = from_lambda(event);
            let invocation = request.extensions().get::<Invocation>().cloned();
            let response = app.handle(request).await;
            if let (Some(invocation), Some(trace)) =
                (invocation, response.extensions().get::<FinishedTrace>())
            {
                exporters.export(&invocation, trace);
            }
            Ok::<_, Error>(to_lambda(response))
        }
    }))
    .await
}

/// The function's name in metrics (`Function` dimension): its route group's.
fn function_name(group: RouteGroup) -> &'static str {
    match group {
        RouteGroup::Mcp => "mcp",
        RouteGroup::Personal => "personal",
        RouteGroup::Oauth => "oauth",
        RouteGroup::Data => "data",
        RouteGroup::Console => "console",
        RouteGroup::All => "all",
    }
}

/// The variable naming the metrics' CloudWatch namespace (the template sets
/// `Mirobody/<stack>`).
const NAMESPACE_VAR: &str = "MIROBODY_METRICS_NAMESPACE";

/// Where an invocation's metrics and trace go, read once per cold start.
#[derive(Debug, Clone)]
struct Exporters {
    namespace: String,
    function: &'static str,
    /// The X-Ray daemon (`AWS_XRAY_DAEMON_ADDRESS`), when Lambda runs one.
    daemon: Option<SocketAddr>,
}

impl Exporters {
    fn from_env(function: &'static str) -> Exporters {
        let namespace = std::env::var(NAMESPACE_VAR)
            .ok()
            .filter(|n| !n.is_empty() && n.len() <= 255)
            .unwrap_or_else(|| metrics::DEFAULT_NAMESPACE.to_string());
        let daemon = xray::daemon_address(std::env::var("AWS_XRAY_DAEMON_ADDRESS").ok().as_deref());
        Exporters {
            namespace,
            function,
            daemon,
        }
    }

    fn emitter<'a>(&'a self, invocation: &'a Invocation) -> Emitter<'a> {
        Emitter {
            namespace: &self.namespace,
            function: self.function,
            request_id: &invocation.request_id,
        }
    }

    /// One request's EMF lines to stdout, and its X-Ray subsegments when sampled.
    fn export(&self, invocation: &Invocation, trace: &FinishedTrace) {
        print_lines(&metrics::request_lines(&self.emitter(invocation), trace));
        let header = invocation
            .xray_trace_header
            .as_deref()
            .and_then(xray::TraceHeader::parse);
        if let (Some(daemon), Some(header)) = (self.daemon, header) {
            xray::send(
                daemon,
                &xray::datagrams(&header, &invocation.request_id, trace),
            );
        }
    }
}

/// Whole lines to stdout in one write, so no log line lands inside them; a failed write
/// is ignored (metrics are never worth an invocation).
fn print_lines(lines: &str) {
    if lines.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(lines.as_bytes());
    let _ = out.flush();
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
    // The request's fields (`span.request_id`, …) come from its context, not a span.
    let lines = tracing_subscriber::fmt::format()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_ansi(false)
        .without_time();
    tracing_subscriber::fmt()
        .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
        .event_format(mirobody::observe::RequestLines::json(lines))
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
}

#[cfg(test)]
#[path = "logging_tests.rs"]
mod logging_tests;

/// A Lambda event as a plain request, with its [`Invocation`]. API Gateway has already
/// decoded base64 bodies.
pub fn from_lambda(event: Request) -> http::Request<Bytes> {
    let source = source_addr(&event);
    let invocation = invocation(&event);
    let (mut parts, body) = event.into_parts();
    if let Some(source) = source {
        parts.extensions.insert(source);
    }
    parts.extensions.insert(invocation);
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

/// The ids of this invocation: API Gateway's request id (else Lambda's), Lambda's, and
/// the X-Ray trace header Lambda sent (`Lambda-Runtime-Trace-Id`).
fn invocation(event: &Request) -> Invocation {
    let lambda = event.lambda_context_ref();
    let lambda_request_id = lambda.map(|c| c.request_id.clone()).unwrap_or_default();
    let gateway = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.request_id.clone(),
        _ => None,
    };
    Invocation {
        request_id: gateway
            .filter(|id| !id.is_empty() && id.len() <= 128)
            .unwrap_or_else(|| lambda_request_id.clone()),
        lambda_request_id,
        xray_trace_header: lambda.and_then(|c| c.xray_trace_id.clone()),
    }
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
    fn the_invocation_carries_the_gateway_request_id_and_the_trace_header() {
        let raw = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../events/mcp-get.json"),
        )
        .unwrap();
        let mut context = lambda_http::Context::default();
        context.request_id = "lambda-1".into();
        context.xray_trace_id = Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".into());
        let event = lambda_http::request::from_str(&raw)
            .unwrap()
            .with_lambda_context(context);
        let gateway = match event.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(c)) => c.request_id.clone().unwrap(),
            _ => panic!("an HTTP API event"),
        };
        let request = from_lambda(event);
        let invocation = request.extensions().get::<Invocation>().unwrap();
        assert_eq!(invocation.request_id, gateway);
        assert_eq!(invocation.lambda_request_id, "lambda-1");
        assert_eq!(
            invocation.xray_trace_header.as_deref(),
            Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
        );

        // Without API Gateway's id, Lambda's.
        let mut context = lambda_http::Context::default();
        context.request_id = "lambda-2".into();
        let bare = lambda_http::Request::default().with_lambda_context(context);
        assert_eq!(invocation_of(bare).request_id, "lambda-2");
    }

    fn invocation_of(event: Request) -> Invocation {
        from_lambda(event)
            .extensions()
            .get::<Invocation>()
            .cloned()
            .unwrap()
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
