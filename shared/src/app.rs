//! The application: state built once per cold start, and the one `handle` every
//! Lambda function and the local server call with a plain `http` request.
//!
//! Owns the order of a request's checks (the route and its group, then access from
//! the route's row: `Origin`/`Host`, the bearer token; then the handler), CORS by
//! access, and the observation of every request (`observe::Observed`: its log span and
//! closing line, with the route name, status and duration, never a body, a header value or
//! a path secret; its trace on the response). Handlers live with their APIs; the route
//! table (`app/routes.rs`) names each row's, and this file calls it.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ALLOW, HOST};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use sha2::{Digest, Sha256};

use crate::api::accounts::AccountApi;
use crate::api::data::DataApi;
use crate::api::uploads::UploadsApi;
use crate::api::whole_account::WholeAccount;
use crate::clock::Clock;
use crate::config::{Config, ConfigError};
#[cfg(feature = "console")]
use crate::console::ConsoleApi;
use crate::external::{CONNECT_BUDGET, ExternalServers, PROBE_BUDGET};
use crate::http::{self as web, Access, ApiError, CorsOrigin, OriginPolicy, RouteGroup, Success};
use crate::identity::{
    Caller, CallerResolver, Jwts, LoginPoll, LoginPrompts, McpUrls, Passwords, Sealer,
};
use crate::mcp::{Declaration, Era, Exchange, McpBody, McpError, McpServer, Reply};
use crate::oauth::{OAuthApi, OAuthServices};
use crate::observe::{Observed, UserKey};
use crate::prompts::Prompts;
use crate::remote::{AddressGuard, GuardPolicy, GuardedHttp};
use crate::resources::Resources;
use crate::services::Services;
use crate::tools::{self, AgentPolicy, Registry, ToolSource, Toolbox};

pub mod routes;

use crate::http::decode_segment;
use routes::{Call, Matched, ROUTES, Resolved, Router, panicked, speaks_json_rpc};

/// Everything that needs the keys.
struct Signed {
    jwts: Arc<Jwts>,
    sealer: Arc<Sealer>,
    urls: Arc<McpUrls>,
    accounts: Arc<AccountApi>,
    oauth: OAuthApi,
    external: Arc<ExternalServers>,
    #[cfg(feature = "console")]
    console: ConsoleApi,
}

/// How [`App::body_plan`] says a request's body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyPlan {
    /// Streamed as it arrives, to [`App::handle_streamed`].
    Streamed,
    /// Read whole, up to this many bytes (a 413 past them), for [`App::handle`].
    Whole(usize),
}

pub struct App {
    config: Config,
    /// The route table compiled for the configured prefix, once.
    router: Router,
    group: RouteGroup,
    origin: OriginPolicy,
    mcp: McpServer,
    data: DataApi,
    uploads: Arc<UploadsApi>,
    signed: Option<Signed>,
    agents: AgentPolicy,
    callers: Arc<CallerResolver>,
    login_poll: LoginPoll,
    clock: Arc<dyn Clock>,
    /// The key a signed-in caller's user id is hashed under in log lines (none without keys).
    user_key: Option<UserKey>,
}

/// Why a request got no answer from its handler.
pub(crate) enum Refusal {
    /// The handler, or the service it needs, refused: an answer like any other, with
    /// CORS headers.
    Api(ApiError),
    /// Turned away before any handler ran (the bearer token, no authorization server):
    /// without CORS headers, as these answers always were.
    Door(ApiError),
    /// The `Origin`/`Host` check failed: a JSON-RPC refusal without CORS headers.
    ForbiddenOrigin,
}

impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Self {
        Refusal::Api(error)
    }
}

impl App {
    /// Builds everything expensive once: settings, the tool registry, resources, keys.
    /// Refuses a group this build was compiled without (`features.rs`).
    pub fn new(config: Config, group: RouteGroup, services: Services) -> Result<Self, ConfigError> {
        crate::features::check_group(group)?;
        // The measures catalogue is read once per cold start, here, not by the first request.
        let _ = crate::domain::measures::catalogue();
        let importer = Arc::new(services.importer());
        let Services {
            store,
            keys,
            clock,
            objects,
            mail,
        } = services;
        let uploads = Arc::new(UploadsApi {
            store: store.clone(),
            objects,
            clock: clock.clone(),
            importer,
            stall_secs: config.import_stall_secs,
        });
        let mut registry = Registry::new();
        tools::register_builtin(&mut registry, store.clone());
        let mut resources = Resources::new();
        resources.load_dirs(&config.resource_dirs)?;
        let mut prompts = Prompts::new();
        let fixtures =
            Self::register_fixtures(&config, &mut registry, &mut resources, &mut prompts);
        let declaration = Declaration::new(&config.server_name, fixtures);
        let origin = config.public_origin();
        let resource = format!("{origin}{}/mcp", config.uri_prefix);
        let resource_metadata_url = format!(
            "{origin}/.well-known/oauth-protected-resource{}/mcp",
            config.uri_prefix
        );
        // The one outbound HTTP stack (CIMD fetches now; remote MCP servers later).
        let policy = match config.remote_dev_loopback {
            true => GuardPolicy::insecure_loopback(config.runtime).unwrap_or_default(),
            false => GuardPolicy::strict(),
        };
        let http = Arc::new(GuardedHttp::new(AddressGuard::system(policy)));
        let user_key = keys.as_ref().map(|keys| UserKey::from_seal(&keys.seal));
        let signed = keys.map(|keys| {
            // Sessions are for the origin; OAuth access tokens for the MCP resource (RFC 8707).
            let jwts = Arc::new(Jwts::for_origin(&keys.jwt, &origin).accepting(&resource));
            let sealer = Arc::new(Sealer::new(&keys.seal));
            let urls = Arc::new(McpUrls {
                store: store.clone(),
                sealer: sealer.clone(),
                base: format!("{origin}{}", config.uri_prefix),
            });
            let passwords = Arc::new(Passwords::new(
                store.clone(),
                clock.clone(),
                config.hash_permits,
            ));
            let accounts = Arc::new(AccountApi {
                store: store.clone(),
                jwts: jwts.clone(),
                urls: urls.clone(),
                clock: clock.clone(),
                passwords: passwords.clone(),
                mail: mail.clone(),
                origin: origin.clone(),
            });
            let form_key: [u8; 32] =
                Sha256::digest([&keys.seal[..], b"mirobody form v1"].concat()).into();
            let services = OAuthServices {
                store: store.clone(),
                jwts: jwts.clone(),
                sealer: sealer.clone(),
                clock: clock.clone(),
                http: http.clone(),
                form_key,
                passwords: passwords.clone(),
            };
            let oauth = OAuthApi::new(services, origin.clone(), resource.clone());
            let mut external =
                ExternalServers::new(store.clone(), sealer.clone(), http.clone(), clock.clone())
                    .with_result_limit(config.remote_result_max_bytes)
                    .with_console_origin(config.public_origin());
            if let Some(secs) = config.remote_timeout_secs {
                let limit = std::time::Duration::from_secs(secs);
                external =
                    external.with_budgets(PROBE_BUDGET.min(limit), CONNECT_BUDGET.min(limit));
            }
            if let Some(secs) = config.snapshot_ttl_secs {
                external = external.with_snapshot_ttl(std::time::Duration::from_secs(secs));
            }
            let external = Arc::new(external);
            #[cfg(feature = "console")]
            let console = ConsoleApi {
                data: Arc::new(DataApi {
                    store: store.clone(),
                    clock: clock.clone(),
                }),
                accounts: accounts.clone(),
                jwts: jwts.clone(),
                external: external.clone(),
                uploads: uploads.clone(),
                callers: Arc::new(CallerResolver::new(
                    Some(jwts.clone()),
                    Some(urls.clone()),
                    clock.clone(),
                    &resource_metadata_url,
                    store.clone(),
                )),
                clock: clock.clone(),
                form_key: Sha256::digest([&keys.seal[..], b"mirobody console v1"].concat()).into(),
                origin: origin.clone(),
                mcp_url: resource.clone(),
                mcp_signs_in: config.require_auth,
                upload_origin: config.upload_origin(),
            };
            Signed {
                jwts,
                sealer,
                urls,
                accounts,
                oauth,
                external,
                #[cfg(feature = "console")]
                console,
            }
        });
        let callers = Arc::new(CallerResolver::new(
            signed.as_ref().map(|s| s.jwts.clone()),
            signed.as_ref().map(|s| s.urls.clone()),
            clock.clone(),
            &resource_metadata_url,
            store.clone(),
        ));
        let login_poll = LoginPoll {
            store: store.clone(),
            sealer: signed.as_ref().map(|s| s.sealer.clone()),
            clock: clock.clone(),
        };
        Ok(App {
            router: Router::new(ROUTES, &config.uri_prefix),
            origin: OriginPolicy::new(&config),
            mcp: McpServer {
                declaration,
                list_tails: Default::default(),
                tools: Toolbox {
                    registry,
                    store: store.clone(),
                    login: LoginPrompts {
                        store: store.clone(),
                        origin: origin.clone(),
                    },
                    clock: clock.clone(),
                    external: signed
                        .as_ref()
                        .map(|s| s.external.clone() as Arc<dyn ToolSource>),
                },
                resources,
                prompts,
            },
            data: DataApi {
                store: store.clone(),
                clock: clock.clone(),
            },
            uploads,
            agents: AgentPolicy::new(
                config.allowed_tools.clone(),
                config.disallowed_tools.clone(),
            ),
            signed,
            callers,
            login_poll,
            clock,
            user_key,
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
        let resolved = self.router.resolve(request.method(), request.uri().path());
        // A known path with another method answers 404 like an unknown one, as it always has.
        match resolved {
            Resolved::Route(matched) if self.serves(matched.route.group) => {
                let route = matched.route;
                // An MCP body (bounded first) is parsed once, here: its `_meta` may carry
                // the trace the request continues, and the dispatcher reads the same parse.
                let body = request.body();
                let mcp = (speaks_json_rpc(route) && body.len() <= route.max_body)
                    .then(|| McpBody::parse(body));
                let observed = Observed::begin(
                    route.name,
                    request.headers(),
                    request.extensions(),
                    mcp.as_ref().and_then(|mcp| mcp.meta_trace(body)),
                );
                // The panic boundary: a panic ends this request with a 500, never the process.
                let response = observed
                    .run(web::catch_panic(self.dispatch(
                        &matched,
                        &request,
                        mcp.as_ref(),
                    )))
                    .await
                    .unwrap_or_else(|_| panicked(route));
                observed.end(self.user_key.as_ref(), response)
            }
            // No CORS headers and no `Origin` check, as always.
            _ => {
                let observed =
                    Observed::begin("not found", request.headers(), request.extensions(), None);
                observed.end(None, self.no_route(request.uri().path()))
            }
        }
    }

    /// How an HTTP server reads the body of `method path`, from one lookup of the route:
    /// streamed to [`App::handle_streamed`] (the local PUT of an upload's file), or read
    /// whole up to the route's cap (the smallest for a path no route of this app answers)
    /// and handed to [`App::handle`].
    pub fn body_plan(&self, method: &http::Method, path: &str) -> BodyPlan {
        match self.router.resolve(method, path) {
            Resolved::Route(matched) if self.serves(matched.route.group) => {
                match matched.route.streamed {
                    true => BodyPlan::Streamed,
                    false => BodyPlan::Whole(matched.route.max_body),
                }
            }
            _ => BodyPlan::Whole(web::FORM_BODY),
        }
    }

    /// The 413 for a body an HTTP server stopped reading at the limit of [`App::body_plan`].
    pub fn body_too_large(&self, limit: usize) -> Response<Bytes> {
        ApiError::body_too_large(limit).into_response()
    }

    /// The local PUT of an upload's file with its body as it arrives (at most
    /// `max_bytes`; the sender ends the body with an error when the client idles): the
    /// `Origin`/`Host` check, the URL's capability, the body streamed to disk, then the
    /// import in the background. One log line, as [`App::handle`].
    pub async fn handle_streamed(
        &self,
        request: Request<()>,
        body: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
        max_bytes: u64,
    ) -> Response<Bytes> {
        let resolved = self.router.resolve(request.method(), request.uri().path());
        match resolved {
            Resolved::Route(matched)
                if self.serves(matched.route.group) && matched.route.streamed =>
            {
                let headers = request.headers();
                let observed =
                    Observed::begin(matched.route.name, headers, request.extensions(), None);
                let work = async {
                    if !self.origin.allows(matched.route.access, headers) {
                        let error = McpError::ForbiddenOrigin;
                        return web::json(error.http_status(Era::Unknown), &error.transport_body());
                    }
                    let key = decode_segment(matched.param("key").unwrap_or_default());
                    let query = request.uri().query().unwrap_or_default();
                    let answer = self.uploads.receive(&key, query, body, max_bytes).await;
                    let response = answer
                        .map(Success::into_response)
                        .unwrap_or_else(ApiError::into_response);
                    self.with_cors(matched.route.access, headers, response)
                };
                let response = observed
                    .run(web::catch_panic(work))
                    .await
                    .unwrap_or_else(|_| panicked(matched.route));
                observed.end(self.user_key.as_ref(), response)
            }
            _ => {
                let observed =
                    Observed::begin("not found", request.headers(), request.extensions(), None);
                observed.end(None, ApiError::NoRoute.into_response())
            }
        }
    }

    fn serves(&self, group: RouteGroup) -> bool {
        self.group == RouteGroup::All || self.group == group
    }

    /// Access, then the handler, then CORS by access on whatever the handler answered.
    /// `mcp`: an MCP POST's body, parsed by [`App::handle`].
    async fn dispatch(
        &self,
        matched: &Matched<'_>,
        request: &Request<Bytes>,
        mcp: Option<&McpBody>,
    ) -> Response<Bytes> {
        let access = matched.route.access;
        // Bounded before parsed, and before the caller is even resolved.
        let too_large = request.body().len() > matched.route.max_body;
        let admitted = match too_large {
            true => Err(Refusal::Api(ApiError::body_too_large(
                matched.route.max_body,
            ))),
            false => self.admit(matched, request.headers()).await,
        };
        let answer = match admitted {
            Ok(caller) => self.answer(matched, caller.as_ref(), request, mcp).await,
            Err(refusal) => Err(refusal),
        };
        match answer {
            Ok(response) => self.with_cors(access, request.headers(), response),
            Err(Refusal::Api(error)) => {
                self.with_cors(access, request.headers(), error.into_response())
            }
            Err(Refusal::Door(error)) => error.into_response(),
            Err(Refusal::ForbiddenOrigin) => {
                let error = McpError::ForbiddenOrigin;
                web::json(error.http_status(Era::Unknown), &error.transport_body())
            }
        }
    }

    /// Open routes allow any origin; the others echo the request's origin if allowed, or
    /// answer `*` where `MCP_ALLOWED_ORIGINS=*` lets any origin in (`http/origin.rs`).
    fn with_cors(
        &self,
        access: Access,
        headers: &HeaderMap,
        mut response: Response<Bytes>,
    ) -> Response<Bytes> {
        match access {
            Access::Open => web::add_cors(
                &mut response,
                Some(CorsOrigin::Any),
                "GET, POST, OPTIONS",
                headers,
            ),
            Access::Page => {}
            Access::SameOrigin | Access::SignedIn | Access::Form => web::add_cors(
                &mut response,
                self.origin.cors_origin(access, headers),
                "GET, POST, DELETE, OPTIONS",
                headers,
            ),
        }
        response
    }

    /// The door: the `Origin`/`Host` check against DNS rebinding (all but open routes),
    /// then the bearer token of signed-in routes (its kind and scope against the row's
    /// `accepts`), who are the caller.
    async fn admit(
        &self,
        matched: &Matched<'_>,
        headers: &HeaderMap,
    ) -> Result<Option<Caller>, Refusal> {
        let route = matched.route;
        if !self.origin.allows(route.access, headers) {
            return Err(Refusal::ForbiddenOrigin);
        }
        match route.access {
            Access::SignedIn => self
                .callers
                .signed_in(headers, route.accepts)
                .await
                .map(Some)
                .map_err(Refusal::Door),
            Access::Open | Access::SameOrigin | Access::Page | Access::Form => Ok(None),
        }
    }

    /// The row's handler (`routes.rs`; compiled in with its group, `features.rs`).
    /// `caller` is the signed-in caller of a signed-in route.
    async fn answer(
        &self,
        matched: &Matched<'_>,
        caller: Option<&Caller>,
        request: &Request<Bytes>,
        mcp: Option<&McpBody>,
    ) -> Result<Response<Bytes>, Refusal> {
        let call = Call {
            app: self,
            matched,
            caller,
            request,
            mcp,
        };
        (matched.route.handler.0)(call).await
    }

    /// `DELETE /api/data`: the caller's readings, genotypes and uploads.
    async fn delete_data(&self, caller: &Caller) -> Result<Success, ApiError> {
        let (store, objects) = (self.uploads.store.as_ref(), self.uploads.objects.as_ref());
        let now = self.clock.now();
        crate::api::whole_account::erase_data(store, objects, now, &caller.user_id).await?;
        Ok(Success::ok(serde_json::json!({ "deleted": true })))
    }

    /// The local PUT of an upload's file with a body already read whole (not the local
    /// server's streamed path, [`App::handle_streamed`]).
    async fn upload_content(
        &self,
        matched: &Matched<'_>,
        request: &Request<Bytes>,
    ) -> Result<Success, ApiError> {
        let (sender, chunks) = tokio::sync::mpsc::channel(1);
        let _ = sender.try_send(Ok(request.body().clone()));
        drop(sender);
        let key = decode_segment(matched.param("key").unwrap_or_default());
        let query = request.uri().query().unwrap_or_default();
        let max = matched.route.max_body as u64;
        self.uploads.receive(&key, query, chunks, max).await
    }

    /// The device-style login poll: the poll secret from the query or the header.
    async fn check_state(
        &self,
        matched: &Matched<'_>,
        request: &Request<Bytes>,
    ) -> Result<Response<Bytes>, ApiError> {
        let state = matched.param("state").unwrap_or_default();
        let query =
            url::form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
                .find(|(name, _)| name == "poll_secret")
                .map(|(_, value)| value.into_owned());
        let header = request
            .headers()
            .get("x-poll-secret")
            .and_then(|v| v.to_str().ok());
        self.login_poll
            .check(state, query.as_deref().or(header))
            .await
    }

    /// `POST /auth/signout`: ends the session whose token signed the request.
    async fn sign_out(&self, request: &Request<Bytes>) -> Result<Success, Refusal> {
        let claims = self.callers.claims(request.headers());
        let claims = claims.ok_or_else(|| Refusal::Door(self.callers.unauthorized()))?;
        Ok(self.accounts()?.sign_out(&claims).await?)
    }

    /// The account API; without keys its routes answer 503 (with CORS headers).
    fn accounts(&self) -> Result<&AccountApi, ApiError> {
        self.signed
            .as_ref()
            .map(|s| s.accounts.as_ref())
            .ok_or(ApiError::NoKeys)
    }

    /// Export and deletion of the whole account; needs the account API.
    fn whole_account(&self) -> Result<WholeAccount<'_>, ApiError> {
        Ok(WholeAccount::new(
            &self.uploads,
            self.accounts()?,
            self.clock.as_ref(),
        ))
    }

    /// No route: under `/console` (in a build serving the console) a page a person can
    /// read and leave; elsewhere the API's JSON.
    fn no_route(&self, path: &str) -> Response<Bytes> {
        #[cfg(feature = "console")]
        if (path == "/console" || path.starts_with("/console/"))
            && self.serves(RouteGroup::Console)
            && let Ok(console) = self.console()
        {
            return console.not_found_page();
        }
        // A build without the console answers every path in JSON.
        #[cfg(not(feature = "console"))]
        let _ = path;
        ApiError::NoRoute.into_response()
    }

    /// The web console; without keys there are no accounts, and its pages answer 503.
    #[cfg(feature = "console")]
    fn console(&self) -> Result<&ConsoleApi, ApiError> {
        self.signed
            .as_ref()
            .map(|s| &s.console)
            .ok_or(ApiError::NoKeys)
    }

    /// The registry API; its routes are signed-in, so there are keys.
    fn external(&self) -> Result<&ExternalServers, ApiError> {
        self.signed
            .as_ref()
            .map(|s| s.external.as_ref())
            .ok_or(ApiError::NoKeys)
    }

    /// The authorization server; without keys there is none, and its routes answer 503
    /// at the door (without CORS headers).
    fn oauth(&self) -> Result<&OAuthApi, Refusal> {
        match &self.signed {
            Some(signed) => Ok(&signed.oauth),
            None => Err(Refusal::Door(ApiError::NoKeys)),
        }
    }

    /// The OAuth grants' routes: the account API's handlers behind the authorization
    /// server's door (without keys, 503 at the door, as every OAuth route).
    fn oauth_grants(&self) -> Result<&AccountApi, Refusal> {
        self.oauth()?;
        Ok(self.accounts()?)
    }

    /// `parsed`: the body as [`App::handle`] parsed it (parsed here if it did not).
    async fn mcp_post(
        &self,
        matched: &Matched<'_>,
        request: &Request<Bytes>,
        parsed: Option<&McpBody>,
    ) -> Response<Bytes> {
        let secret = matched.param("secret");
        let accepts = matched.route.accepts;
        let caller = match self
            .callers
            .resolve(request.headers(), secret, accepts)
            .await
        {
            Ok(caller) => caller,
            Err(error) => return error.into_response(),
        };
        if caller.is_none() && self.config.require_auth {
            return self.callers.sign_in_required().into_response();
        }
        let server_url = || self.server_url(request);
        let agent = caller.as_ref().and_then(|c| c.agent.as_deref());
        let visible = |name: &str| {
            self.agents
                .allows(agent, name, crate::external::is_external_tool(name))
        };
        let parsed_here;
        let body = match parsed {
            Some(body) => body,
            None => {
                parsed_here = McpBody::parse(request.body());
                &parsed_here
            }
        };
        let exchange = Exchange {
            headers: request.headers(),
            body,
            caller: caller.as_ref(),
            visible: &visible,
            server_url: &server_url,
            source: web::source_of(request),
        };
        match self.mcp.handle(exchange).await {
            Reply::Json { status, body } => web::json(status, &body),
            Reply::Stream {
                notifications,
                response,
            } => web::event_stream(&notifications, &response),
            Reply::Raw { status, body } => web::json_bytes(status, body),
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

/// `GET`/`DELETE /mcp`: 405, allowing what the path answers for real.
fn mcp_placeholder(matched: &Matched<'_>) -> Response<Bytes> {
    let error = McpError::PostOnly;
    let mut response = web::json(error.http_status(Era::Unknown), &error.transport_body());
    let allow = routes::allowed_besides(matched.route);
    if let Ok(allow) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(ALLOW, allow);
    }
    response
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
