//! The application: state built once per cold start, and the one `handle` every
//! Lambda function and the local server call with a plain `http` request.
//!
//! Owns the order of a request's checks (route, `Origin`/`Host`, caller resolution,
//! then the handler) and the one log line per request (route name, status, duration:
//! never a body, a header value or a path secret).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{ALLOW, AUTHORIZATION, HOST, WWW_AUTHENTICATE};
use http::{HeaderValue, Request, Response, StatusCode};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::account_api::{AccountApi, refused};
use crate::clock::Clock;
use crate::config::{Config, ConfigError};
use crate::data_api::DataApi;
use crate::domain::LoginStatus;
use crate::external::{CONNECT_BUDGET, ExternalServers, PROBE_BUDGET};
use crate::http::{self as web, OriginPolicy, Route, RouteGroup};
use crate::identity::{Jwts, Keys, LoginPrompts, McpUrls, Sealer};
use crate::mcp::{Declaration, Exchange, McpServer, Reply};
use crate::oauth::{OAuthApi, OAuthServices};
use crate::prompts::Prompts;
use crate::remote::{AddressGuard, GuardPolicy, GuardedHttp};
use crate::resources::Resources;
use crate::store::Store;
use crate::tools::{self, AgentPolicy, Caller, Registry};

/// JWT issuer and audience until OAuth (issue 5) binds the audience to the resource.
pub const TOKEN_ISSUER: &str = "mirobody";
pub const TOKEN_AUDIENCE: &str = "mirobody-mcp";

/// What the app is built on: built once per cold start by the binary that runs it.
pub struct Services {
    pub store: Arc<dyn Store>,
    /// `None` when no keys are configured: every caller is anonymous and the
    /// account endpoints answer 503.
    pub keys: Option<Keys>,
    pub clock: Arc<dyn Clock>,
}

/// Everything that needs the keys.
struct Signed {
    jwts: Arc<Jwts>,
    sealer: Arc<Sealer>,
    urls: Arc<McpUrls>,
    accounts: AccountApi,
    oauth: OAuthApi,
    external: Arc<ExternalServers>,
}

pub struct App {
    config: Config,
    group: RouteGroup,
    origin: OriginPolicy,
    mcp: McpServer,
    data: DataApi,
    signed: Option<Signed>,
    agents: AgentPolicy,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// The `WWW-Authenticate` challenges (pointing at the RFC 9728 metadata), built once.
    challenges: Challenges,
}

impl App {
    /// Builds everything expensive once: settings, the tool registry, resources, keys.
    pub fn new(config: Config, group: RouteGroup, services: Services) -> Result<Self, ConfigError> {
        let Services { store, keys, clock } = services;
        let mut registry = Registry::new();
        tools::register_builtin(&mut registry, &store);
        let mut resources = Resources::new();
        resources.load_dirs(&config.resource_dirs)?;
        let mut prompts = Prompts::new();
        let fixtures =
            Self::register_fixtures(&config, &mut registry, &mut resources, &mut prompts);
        let declaration = Declaration::new(&config.server_name, fixtures);
        let origin = config.public_origin();
        let resource = format!("{origin}{}/mcp", config.uri_prefix);
        // The one outbound HTTP stack (CIMD fetches now; remote MCP servers later).
        let policy = match config.remote_dev_loopback {
            true => GuardPolicy::insecure_loopback(config.runtime).unwrap_or_default(),
            false => GuardPolicy::strict(),
        };
        let http = Arc::new(GuardedHttp::new(AddressGuard::system(policy)));
        let signed = keys.map(|keys| {
            let jwts =
                Arc::new(Jwts::new(&keys.jwt, TOKEN_ISSUER, TOKEN_AUDIENCE).accepting(&resource));
            let sealer = Arc::new(Sealer::new(&keys.seal));
            let urls = Arc::new(McpUrls {
                store: store.clone(),
                sealer: sealer.clone(),
                base: format!("{origin}{}", config.uri_prefix),
            });
            let accounts = AccountApi {
                store: store.clone(),
                jwts: jwts.clone(),
                urls: urls.clone(),
                clock: clock.clone(),
            };
            let form_key: [u8; 32] =
                Sha256::digest([&keys.seal[..], b"mirobody form v1"].concat()).into();
            let services = OAuthServices {
                store: store.clone(),
                jwts: jwts.clone(),
                sealer: sealer.clone(),
                clock: clock.clone(),
                http: http.clone(),
                form_key,
            };
            let oauth = OAuthApi::new(services, origin.clone(), resource.clone());
            let mut external =
                ExternalServers::new(store.clone(), sealer.clone(), http.clone(), clock.clone());
            if let Some(secs) = config.remote_timeout_secs {
                let limit = std::time::Duration::from_secs(secs);
                external =
                    external.with_budgets(PROBE_BUDGET.min(limit), CONNECT_BUDGET.min(limit));
            }
            let external = Arc::new(external);
            Signed {
                jwts,
                sealer,
                urls,
                accounts,
                oauth,
                external,
            }
        });
        Ok(App {
            origin: OriginPolicy::new(&config),
            mcp: McpServer {
                declaration,
                tools: registry,
                resources,
                prompts,
                store: store.clone(),
                login: LoginPrompts {
                    store: store.clone(),
                    origin: origin.clone(),
                },
                clock: clock.clone(),
                external: signed.as_ref().map(|s| s.external.clone()),
            },
            data: DataApi {
                store: store.clone(),
            },
            agents: AgentPolicy::new(
                config.allowed_tools.clone(),
                config.disallowed_tools.clone(),
            ),
            signed,
            challenges: Challenges::new(&format!(
                "{origin}/.well-known/oauth-protected-resource{}/mcp",
                config.uri_prefix
            )),
            store,
            clock,
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

    /// B3: a ten-minute MCP URL for one session and one agent (for code that hands
    /// agents their own URL). `None` without keys.
    pub async fn temporary_url(
        &self,
        user_id: &str,
        session_id: &str,
        agent: &str,
    ) -> Option<String> {
        let signed = self.signed.as_ref()?;
        signed
            .urls
            .temporary(user_id, session_id, agent, self.clock.now())
            .await
            .ok()
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
        // Discovery and token endpoints are cross-origin by design (browser-based MCP
        // clients); everything else is protected against DNS rebinding.
        let open = matches!(
            route,
            Route::OAuthMetadata
                | Route::ResourceMetadata
                | Route::OAuthRegister
                | Route::OAuthToken
                | Route::OAuthIntrospect
                | Route::OAuthPreflight
        );
        if route != Route::NotFound && !open && !self.origin.allows(headers) {
            return web::json(
                StatusCode::FORBIDDEN,
                &json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Forbidden: Origin or Host not allowed"}}),
            );
        }
        let allowed_origin = self.origin.allowed_origin(headers);
        let body = request.body();
        let mut response = match route {
            Route::McpPost { secret } => self.mcp_post(request, secret).await,
            Route::McpOptions | Route::PersonalOptions => web::empty(StatusCode::OK),
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
            Route::SignUp | Route::SignIn => match &self.signed {
                None => no_keys(),
                Some(signed) if route == Route::SignUp => signed.accounts.sign_up(body).await,
                Some(signed) => signed.accounts.sign_in(body).await,
            },
            Route::CheckState { state } => self.check_state(state).await,
            Route::OAuthMetadata
            | Route::ResourceMetadata
            | Route::OAuthRegister
            | Route::AuthorizePage { .. }
            | Route::AuthorizeSubmit { .. }
            | Route::OAuthToken
            | Route::OAuthIntrospect
            | Route::McpLoginPage
            | Route::McpLoginSubmit => {
                let Some(signed) = &self.signed else {
                    return no_keys();
                };
                let oauth = &signed.oauth;
                let mut response = match route {
                    Route::OAuthMetadata => oauth.server_metadata(),
                    Route::ResourceMetadata => oauth.resource_metadata(),
                    Route::OAuthRegister => oauth.register(body).await,
                    Route::AuthorizePage { path } => oauth.authorize_page(request, path).await,
                    Route::AuthorizeSubmit { path } => oauth.authorize_submit(request, path).await,
                    Route::OAuthToken => oauth.token(request).await,
                    Route::OAuthIntrospect => oauth.introspect(request),
                    Route::McpLoginPage => oauth.login_page(request).await,
                    _ => oauth.login_submit(request).await,
                };
                if open {
                    web::add_cors(&mut response, Some("*"), "GET, POST, OPTIONS");
                    return response;
                }
                response
            }
            Route::OAuthPreflight => {
                let mut response = web::empty(StatusCode::OK);
                web::add_cors(&mut response, Some("*"), "GET, POST, OPTIONS");
                return response;
            }
            Route::DataHealth
            | Route::DataGenotype
            | Route::DataSummary
            | Route::DataDelete
            | Route::PersonalUrl
            | Route::PersonalUrlRevoke
            | Route::ShareGrant
            | Route::ShareRevoke
            | Route::ExternalTable
            | Route::ExternalSet
            | Route::ExternalRemove
            | Route::ExternalList
            | Route::ExternalCreate
            | Route::ExternalGet { .. }
            | Route::ExternalPatch { .. }
            | Route::ExternalDelete { .. }
            | Route::ExternalProbe { .. } => {
                let (caller, signed) = match (self.bearer(request), &self.signed) {
                    (Bearer::User(caller), Some(signed)) => (caller, signed),
                    _ => return self.unauthorized(),
                };
                match route {
                    Route::DataHealth => self.data.health(&caller, request).await,
                    Route::DataGenotype => self.data.genotype(&caller, request).await,
                    Route::DataSummary => self.data.summary(&caller).await,
                    Route::DataDelete => self.data.delete(&caller).await,
                    Route::PersonalUrl => signed.accounts.personal_url(&caller, body).await,
                    Route::PersonalUrlRevoke => signed.accounts.revoke_personal_url(&caller).await,
                    Route::ShareGrant => signed.accounts.share(&caller, body).await,
                    Route::ShareRevoke => signed.accounts.unshare(&caller, body).await,
                    Route::ExternalTable => signed.external.seed_table(&caller).await,
                    Route::ExternalSet => signed.external.seed_set(&caller, body).await,
                    Route::ExternalRemove => signed.external.seed_delete(&caller, body).await,
                    Route::ExternalList => signed.external.list(&caller).await,
                    Route::ExternalCreate => signed.external.create(&caller, body).await,
                    Route::ExternalGet { name } => signed.external.get(&caller, name).await,
                    Route::ExternalPatch { name } => {
                        signed.external.patch(&caller, name, body).await
                    }
                    Route::ExternalDelete { name } => signed.external.delete(&caller, name).await,
                    Route::ExternalProbe { name } => signed.external.reprobe(&caller, name).await,
                    _ => unreachable!("the outer match admits only these routes"),
                }
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
        web::add_cors(&mut response, allowed_origin, "GET, POST, DELETE, OPTIONS");
        response
    }

    /// A7 step 1: the `Authorization` JWT.
    fn bearer(&self, request: &Request<Bytes>) -> Bearer {
        let Some(value) = request.headers().get(AUTHORIZATION) else {
            return Bearer::Absent;
        };
        let token = value.to_str().ok().and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
        match (token, &self.signed) {
            (Some(token), Some(signed)) => match signed.jwts.verify(token.trim()) {
                Ok(claims) => Bearer::User(Caller::user(claims.sub)),
                Err(_) => Bearer::Invalid,
            },
            _ => Bearer::Invalid,
        }
    }

    /// A7 in order: the JWT, then the URL secret (temporary grants carry a session
    /// and an agent; personal ones do not), else anonymous.
    async fn resolve(
        &self,
        request: &Request<Bytes>,
        secret: Option<&str>,
    ) -> Result<Option<Caller>, Response<Bytes>> {
        match self.bearer(request) {
            Bearer::User(caller) => return Ok(Some(caller)),
            Bearer::Invalid => return Err(self.unauthorized()),
            Bearer::Absent => {}
        }
        let Some(secret) = secret else {
            return Ok(None);
        };
        let Some(signed) = &self.signed else {
            return Err(unknown_url());
        };
        match signed.urls.grant(secret, self.clock.now()).await {
            Ok(Some(grant)) => Ok(Some(Caller {
                user_id: grant.user_id,
                session_id: grant.session_id,
                agent: grant.agent_name,
            })),
            Ok(None) => Err(unknown_url()),
            Err(error) => {
                tracing::warn!(%error, "URL secret lookup failed");
                Err(refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "storage is unavailable; try again shortly",
                ))
            }
        }
    }

    async fn mcp_post(&self, request: &Request<Bytes>, secret: Option<&str>) -> Response<Bytes> {
        let caller = match self.resolve(request, secret).await {
            Ok(caller) => caller,
            Err(response) => return response,
        };
        if caller.is_none() && self.config.require_auth {
            return self.authentication_required();
        }
        let server_url = self.server_url(request);
        let agent = caller.as_ref().and_then(|c| c.agent.as_deref());
        let visible = |name: &str| self.agents.allows(agent, name);
        let exchange = Exchange {
            headers: request.headers(),
            body: request.body(),
            caller: caller.as_ref(),
            visible: &visible,
            server_url: &server_url,
        };
        match self.mcp.handle(exchange).await {
            Reply::Json { status, body, .. } => web::json(status, &body),
            Reply::Stream {
                notifications,
                response,
            } => web::event_stream(&notifications, &response),
            Reply::Raw { status, body } => web::json_bytes(status, body),
            Reply::Accepted => web::empty(StatusCode::ACCEPTED),
        }
    }

    /// C3: the device-style login poll (REFERENCE: 404 not_found, 410 expired,
    /// 200 pending, 200 completed with the token, 400 without a state).
    async fn check_state(&self, state: &str) -> Response<Bytes> {
        if state.trim().is_empty() {
            return web::json(
                StatusCode::BAD_REQUEST,
                &json!({"status": "error", "message": "state is required"}),
            );
        }
        let record = match self.store.login_state(state).await {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!(%error, "login state lookup failed");
                return refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "storage is unavailable; try again shortly",
                );
            }
        };
        match record {
            None => web::json(
                StatusCode::NOT_FOUND,
                &json!({"status": "not_found", "message": "no such login"}),
            ),
            Some(r) if r.expires_at <= self.clock.now() => web::json(
                StatusCode::GONE,
                &json!({"status": "expired", "message": "the login expired; start again"}),
            ),
            Some(r) => match r.status {
                LoginStatus::Pending => web::json(
                    StatusCode::OK,
                    &json!({"status": "pending", "message": "waiting for the browser sign-in"}),
                ),
                LoginStatus::Completed { sealed_token } => {
                    let token = self
                        .signed
                        .as_ref()
                        .and_then(|s| {
                            s.sealer
                                .open(&sealed_token, &format!("login-state:{state}"))
                        })
                        .and_then(|t| String::from_utf8(t).ok());
                    match token {
                        Some(token) => web::json(
                            StatusCode::OK,
                            &json!({"status": "completed", "token": token, "token_type": "Bearer"}),
                        ),
                        None => refused(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "the login could not be read back",
                        ),
                    }
                }
            },
        }
    }

    /// 401 with `WWW-Authenticate` pointing at the protected resource metadata.
    fn unauthorized(&self) -> Response<Bytes> {
        challenge(
            "a valid Bearer token is required (it is missing, expired or not ours)",
            &self.challenges.invalid_token,
        )
    }

    /// `MIROBODY_REQUIRE_AUTH`: 401 for a request without credentials.
    fn authentication_required(&self) -> Response<Bytes> {
        challenge(
            "this server requires sign-in: send a Bearer token (OAuth, see WWW-Authenticate)",
            &self.challenges.sign_in,
        )
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

/// The two `WWW-Authenticate` values a 401 carries.
struct Challenges {
    /// A bearer token that does not verify.
    invalid_token: HeaderValue,
    /// `MIROBODY_REQUIRE_AUTH` and no credentials. No `error` (RFC 6750 section 3.1: the
    /// request had no authentication information); the scope a client should ask for, so
    /// it does not request every scope the metadata lists.
    sign_in: HeaderValue,
}

impl Challenges {
    fn new(resource_metadata_url: &str) -> Self {
        let value = |text: String| {
            HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("Bearer"))
        };
        Challenges {
            invalid_token: value(format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{resource_metadata_url}\""
            )),
            sign_in: value(format!(
                "Bearer resource_metadata=\"{resource_metadata_url}\", scope=\"mcp:tools\""
            )),
        }
    }
}

fn challenge(msg: &str, value: &HeaderValue) -> Response<Bytes> {
    let mut response = web::json(
        StatusCode::UNAUTHORIZED,
        &json!({ "code": 401, "msg": msg }),
    );
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, value.clone());
    response
}

/// Who the `Authorization` header says the caller is.
enum Bearer {
    Absent,
    User(Caller),
    /// A bearer token that does not verify: refused with 401, never treated as anonymous.
    Invalid,
}

fn unknown_url() -> Response<Bytes> {
    refused(
        StatusCode::NOT_FOUND,
        "this MCP URL is not valid (revoked or expired); ask for a new one",
    )
}

fn no_keys() -> Response<Bytes> {
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "accounts are not configured on this deployment (no signing keys)",
    )
}
