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

use std::sync::Arc;

use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};

use crate::config::{Config, ConfigError};
use crate::data_api::DataApi;
use crate::http::{self as web, OriginPolicy, Route, RouteGroup};
use crate::identity::Jwts;
use crate::mcp::{Declaration, Exchange, McpServer, Reply};
use crate::prompts::Prompts;
use crate::resources::Resources;
use crate::store::Store;
use crate::tools::{self, Caller, Registry};

/// JWT issuer and audience until OAuth (issue 5) binds the audience to the resource.
pub const TOKEN_ISSUER: &str = "mirobody";
pub const TOKEN_AUDIENCE: &str = "mirobody-mcp";

/// What the app is built on: built once per cold start by the binary that runs it.
pub struct Services {
    pub store: Arc<dyn Store>,
    /// `None` when no signing key is configured: every caller is anonymous.
    pub jwts: Option<Jwts>,
}

pub struct App {
    config: Config,
    group: RouteGroup,
    origin: OriginPolicy,
    mcp: McpServer,
    data: DataApi,
    jwts: Option<Jwts>,
}

/// Who a request says it is.
enum Credentials {
    Anonymous,
    User(Caller),
    /// A bearer token that does not verify: refused with 401, never treated as anonymous.
    Invalid,
}

impl App {
    /// Builds everything expensive once: settings, the tool registry, resources.
    pub fn new(config: Config, group: RouteGroup, services: Services) -> Result<Self, ConfigError> {
        let mut registry = Registry::new();
        tools::register_builtin(&mut registry, &services.store);
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
                store: services.store.clone(),
            },
            data: DataApi {
                store: services.store,
            },
            jwts: services.jwts,
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
            Route::DataHealth | Route::DataGenotype | Route::DataSummary | Route::DataDelete => {
                let caller = match self.credentials(request) {
                    Credentials::User(caller) => caller,
                    Credentials::Anonymous | Credentials::Invalid => return unauthorized(),
                };
                match route {
                    Route::DataHealth => self.data.health(&caller, request).await,
                    Route::DataGenotype => self.data.genotype(&caller, request).await,
                    Route::DataSummary => self.data.summary(&caller).await,
                    _ => self.data.delete(&caller).await,
                }
            }
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

    /// A7 step 1: the `Authorization` JWT. (URL secrets and the login prompt: issue 4.)
    fn credentials(&self, request: &Request<Bytes>) -> Credentials {
        let Some(value) = request.headers().get(AUTHORIZATION) else {
            return Credentials::Anonymous;
        };
        let token = value.to_str().ok().and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
        match (token, &self.jwts) {
            (Some(token), Some(jwts)) => match jwts.verify(token.trim()) {
                Ok(claims) => Credentials::User(Caller {
                    user_id: claims.sub,
                }),
                Err(_) => Credentials::Invalid,
            },
            _ => Credentials::Invalid,
        }
    }

    async fn mcp_post(&self, request: &Request<Bytes>, _secret: Option<&str>) -> Response<Bytes> {
        let caller = match self.credentials(request) {
            Credentials::User(caller) => Some(caller),
            Credentials::Anonymous => None,
            Credentials::Invalid => return unauthorized(),
        };
        let server_url = self.server_url(request);
        let exchange = Exchange {
            headers: request.headers(),
            body: request.body(),
            caller: caller.as_ref(),
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

fn unauthorized() -> Response<Bytes> {
    let mut response = web::json(
        StatusCode::UNAUTHORIZED,
        &json!({ "code": 401, "msg": "a valid Bearer token is required (it is missing, expired or not ours)" }),
    );
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer error=\"invalid_token\""),
    );
    response
}
