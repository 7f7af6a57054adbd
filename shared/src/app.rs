//! The application: state built once per cold start, and the one `handle` every
//! Lambda function and the local server call with a plain `http` request.
//!
//! Owns the order of a request's checks (route, `Origin`/`Host`, then the handler)
//! and the one log line per request (route name, status, duration: never a body,
//! a header value or a path secret).

use std::time::Instant;

use bytes::Bytes;
use http::header::{ALLOW, HOST};
use http::{HeaderValue, Request, Response, StatusCode};
use serde_json::json;

use crate::config::{Config, ConfigError};
use crate::http::{self as web, OriginPolicy, Route, RouteGroup};
use crate::mcp::{Declaration, Exchange, McpServer, Reply};
use crate::prompts::Prompts;
use crate::resources::Resources;
use crate::tools::{self, Registry};

pub struct App {
    config: Config,
    group: RouteGroup,
    origin: OriginPolicy,
    mcp: McpServer,
}

impl App {
    /// Builds everything expensive once: settings, the tool registry, resources.
    pub fn new(config: Config, group: RouteGroup) -> Result<Self, ConfigError> {
        let mut registry = Registry::new();
        tools::register_builtin(&mut registry);
        let mut resources = Resources::new();
        resources.load_dirs(&config.resource_dirs)?;
        let mut prompts = Prompts::new();
        let fixtures =
            Self::register_fixtures(&config, &mut registry, &mut resources, &mut prompts);
        let declaration = Declaration::new(&config.server_name, fixtures);
        Ok(App {
            origin: OriginPolicy::new(&config),
            mcp: McpServer {
                declaration,
                tools: registry,
                resources,
                prompts,
            },
            config,
            group,
        })
    }

    #[cfg(feature = "fixtures")]
    fn register_fixtures(
        config: &Config,
        registry: &mut Registry,
        resources: &mut Resources,
        prompts: &mut Prompts,
    ) -> bool {
        if config.fixtures {
            tools::fixtures::register(registry, resources, prompts);
        }
        config.fixtures
    }

    #[cfg(not(feature = "fixtures"))]
    fn register_fixtures(_: &Config, _: &mut Registry, _: &mut Resources, _: &mut Prompts) -> bool {
        false
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub async fn handle(&self, request: Request<Bytes>) -> Response<Bytes> {
        let started = Instant::now();
        let route = web::route(
            request.method(),
            request.uri().path(),
            &self.config.uri_prefix,
        );
        let route = match route.group() {
            Some(group) if self.group == RouteGroup::All || self.group == group => route,
            _ => Route::NotFound,
        };
        let response = self.dispatch(route, &request).await;
        tracing::info!(
            route = route.name(),
            status = response.status().as_u16(),
            micros = started.elapsed().as_micros() as u64,
            "request"
        );
        response
    }

    async fn dispatch(&self, route: Route<'_>, request: &Request<Bytes>) -> Response<Bytes> {
        let headers = request.headers();
        if route != Route::NotFound && !self.origin.allows(headers) {
            return web::json(
                StatusCode::FORBIDDEN,
                &json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Forbidden: Origin or Host not allowed"}}),
            );
        }
        let allowed_origin = self.origin.allowed_origin(headers);
        let mut response = match route {
            Route::McpPost { secret } => self.mcp_post(request, secret).await,
            Route::McpOptions => web::empty(StatusCode::OK),
            Route::McpGet | Route::McpDelete => {
                let mut response = web::json(
                    StatusCode::METHOD_NOT_ALLOWED,
                    &json!({
                        "jsonrpc": "2.0",
                        "error": {"code": -32000, "message": "Method not allowed: GET /mcp is a placeholder for a future WebSocket transport; send JSON-RPC requests with POST"}
                    }),
                );
                response
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("POST, OPTIONS"));
                response
            }
            Route::MethodNotAllowed(allow) => {
                let mut response = web::json(
                    StatusCode::METHOD_NOT_ALLOWED,
                    &json!({"error": "method not allowed"}),
                );
                response
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static(allow));
                response
            }
            Route::NotFound => {
                return web::json(StatusCode::NOT_FOUND, &json!({"error": "not found"}));
            }
        };
        web::add_cors(&mut response, allowed_origin, "GET, POST, OPTIONS");
        response
    }

    async fn mcp_post(&self, request: &Request<Bytes>, _secret: Option<&str>) -> Response<Bytes> {
        let server_url = self.server_url(request);
        let exchange = Exchange {
            headers: request.headers(),
            body: request.body(),
            caller: None,
            visible: &|_| true,
            server_url: &server_url,
        };
        match self.mcp.handle(exchange).await {
            Reply::Json { status, body, .. } => web::json(status, &body),
            Reply::Stream {
                notifications,
                response,
            } => web::event_stream(&notifications, &response),
            Reply::Accepted => web::empty(StatusCode::ACCEPTED),
        }
    }

    /// The origin substituted into resources: the public URL, else the request's own host.
    fn server_url(&self, request: &Request<Bytes>) -> String {
        if let Some(url) = &self.config.public_url {
            return url.clone();
        }
        match request.headers().get(HOST).and_then(|h| h.to_str().ok()) {
            Some(host) => format!("http://{host}"),
            None => self.config.public_origin(),
        }
    }
}
