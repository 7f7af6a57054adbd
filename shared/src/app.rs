//! The application: state built once per cold start, and the one `handle` every
//! Lambda function and the local server call with a plain `http` request.
//!
//! Owns the order of a request's checks (the route and its group, then access from
//! the route's row: `Origin`/`Host`, the bearer token; then the handler), CORS by
//! access, and the observation of every request (`observe::Observed`: its log span and
//! closing line, with the route name, status and duration, never a body, a header value or
//! a path secret; its trace on the response). Handlers live with their APIs; this file
//! only picks them.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ALLOW, HOST};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use sha2::{Digest, Sha256};

use crate::account_api::AccountApi;
use crate::clock::Clock;
use crate::config::{Config, ConfigError};
#[cfg(feature = "console")]
use crate::console::ConsoleApi;
use crate::data_api::DataApi;
use crate::external::{CONNECT_BUDGET, ExternalServers, PROBE_BUDGET};
use crate::http::{
    self as web, Access, ApiError, CorsOrigin, Handler, Matched, OriginPolicy, Resolved,
    RouteGroup, Router,
};
use crate::identity::{
    Caller, CallerResolver, Jwts, LoginPoll, LoginPrompts, McpUrls, Passwords, Sealer,
};
use crate::imports::Importer;
use crate::imports::api::UploadsApi;
use crate::mcp::{Declaration, Era, Exchange, McpBody, McpError, McpServer, Reply};
use crate::oauth::{OAuthApi, OAuthServices};
use crate::observe::{Observed, UserKey};
use crate::prompts::Prompts;
use crate::remote::{AddressGuard, GuardPolicy, GuardedHttp};
use crate::resources::Resources;
use crate::services::Services;
use crate::tools::{self, AgentPolicy, Registry, ToolSource, Toolbox};
use crate::whole_account::WholeAccount;

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
enum Refusal {
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
        let importer = Arc::new(Importer::new(&config, &services));
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
                    .with_result_limit(config.remote_result_max_bytes);
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
                store: store.clone(),
                accounts: accounts.clone(),
                jwts: jwts.clone(),
                urls: urls.clone(),
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
            router: Router::new(&config.uri_prefix),
            origin: OriginPolicy::new(&config),
            mcp: McpServer {
                declaration,
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
                let mcp = (route.handler == Handler::McpPost && body.len() <= route.max_body)
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
                    .unwrap_or_else(|_| panicked(route.handler));
                observed.end(self.user_key.as_ref(), response)
            }
            // No CORS headers and no `Origin` check, as always.
            _ => {
                let observed =
                    Observed::begin("not found", request.headers(), request.extensions(), None);
                observed.end(None, ApiError::NoRoute.into_response())
            }
        }
    }

    /// The largest body `method path` takes (its route's cap; the smallest for a path no
    /// route of this app answers): an HTTP server stops reading there.
    pub fn body_limit(&self, method: &http::Method, path: &str) -> usize {
        match self.router.resolve(method, path) {
            Resolved::Route(matched) if self.serves(matched.route.group) => matched.route.max_body,
            _ => web::FORM_BODY,
        }
    }

    /// The 413 for a body an HTTP server stopped reading at [`App::body_limit`].
    pub fn body_too_large(&self, limit: usize) -> Response<Bytes> {
        ApiError::body_too_large(limit).into_response()
    }

    /// Whether `method path` is the local PUT of an upload's file, whose body an HTTP
    /// server streams to [`App::handle_streamed`] instead of reading it whole.
    pub fn streams_body(&self, method: &http::Method, path: &str) -> bool {
        matches!(
            self.router.resolve(method, path),
            Resolved::Route(matched)
                if self.serves(matched.route.group)
                    && matched.route.handler == Handler::UploadContent
        )
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
                if self.serves(matched.route.group)
                    && matched.route.handler == Handler::UploadContent =>
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
                    let response = answer.unwrap_or_else(ApiError::into_response);
                    self.with_cors(matched.route.access, headers, response)
                };
                let response = observed
                    .run(web::catch_panic(work))
                    .await
                    .unwrap_or_else(|_| panicked(matched.route.handler));
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

    /// The handler of each route: one dispatch per route group, compiled in with its group
    /// (`features.rs`). `caller` is the signed-in caller of a signed-in route.
    async fn answer(
        &self,
        matched: &Matched<'_>,
        caller: Option<&Caller>,
        request: &Request<Bytes>,
        mcp: Option<&McpBody>,
    ) -> Result<Response<Bytes>, Refusal> {
        #[cfg(not(feature = "group-mcp"))]
        let _ = mcp;
        if matched.route.handler == Handler::Preflight {
            return Ok(web::empty(StatusCode::OK));
        }
        match matched.route.group {
            #[cfg(feature = "group-mcp")]
            RouteGroup::Mcp => self.answer_mcp(matched, request, mcp).await,
            #[cfg(feature = "group-data")]
            RouteGroup::Data => self.answer_data(matched, caller, request).await,
            #[cfg(feature = "group-personal")]
            RouteGroup::Personal => self.answer_personal(matched, caller, request).await,
            #[cfg(feature = "group-oauth")]
            RouteGroup::Oauth => self.answer_oauth(matched, caller, request).await,
            #[cfg(feature = "group-console")]
            RouteGroup::Console => match matched.route.handler {
                Handler::Console(page) => Ok(self.console()?.serve(page, matched, request).await),
                _ => Err(Refusal::Api(ApiError::NoRoute)),
            },
            // Never reached: `App::new` refuses a group this build lacks, and `serves` lets
            // no other group's route in.
            #[allow(unreachable_patterns)]
            _ => Err(Refusal::Api(ApiError::NoRoute)),
        }
    }

    /// The MCP group's routes.
    #[cfg(feature = "group-mcp")]
    async fn answer_mcp(
        &self,
        matched: &Matched<'_>,
        request: &Request<Bytes>,
        mcp: Option<&McpBody>,
    ) -> Result<Response<Bytes>, Refusal> {
        Ok(match matched.route.handler {
            Handler::McpPost => self.mcp_post(matched, request, mcp).await,
            Handler::McpPlaceholder => mcp_placeholder(matched),
            _ => return Err(Refusal::Api(ApiError::NoRoute)),
        })
    }

    /// The data group's routes: the data API and uploads.
    #[cfg(feature = "group-data")]
    async fn answer_data(
        &self,
        matched: &Matched<'_>,
        caller: Option<&Caller>,
        request: &Request<Bytes>,
    ) -> Result<Response<Bytes>, Refusal> {
        let body = request.body();
        // A signed-in route was admitted with its caller (the door answered 401 otherwise).
        let user = || caller.ok_or_else(|| Refusal::Door(self.callers.unauthorized()));
        Ok(match matched.route.handler {
            Handler::DataHealth => self.data.health(user()?, request).await?,
            Handler::DataGenotype => self.data.genotype(user()?, request).await?,
            Handler::DataSummary => self.data.summary(user()?).await?,
            Handler::DataDelete => {
                let (store, objects) = (self.uploads.store.as_ref(), self.uploads.objects.as_ref());
                let now = self.clock.now();
                crate::whole_account::erase_data(store, objects, now, &user()?.user_id).await?;
                crate::account_api::ok(StatusCode::OK, serde_json::json!({ "deleted": true }))
            }
            Handler::UploadCreate => self.uploads.create(user()?, body).await?,
            Handler::UploadList => self.uploads.list(user()?).await?,
            Handler::UploadGet => {
                let id = matched.param("id").unwrap_or_default();
                self.uploads.get(user()?, id).await?
            }
            Handler::UploadContent => {
                // A body already read whole (not the local server's streamed path).
                let (sender, chunks) = tokio::sync::mpsc::channel(1);
                let _ = sender.try_send(Ok(body.clone()));
                drop(sender);
                let key = decode_segment(matched.param("key").unwrap_or_default());
                let query = request.uri().query().unwrap_or_default();
                let max = matched.route.max_body as u64;
                self.uploads.receive(&key, query, chunks, max).await?
            }
            _ => return Err(Refusal::Api(ApiError::NoRoute)),
        })
    }

    /// The personal group's routes: the personal URL, temporary URLs, the registry API.
    #[cfg(feature = "group-personal")]
    async fn answer_personal(
        &self,
        matched: &Matched<'_>,
        caller: Option<&Caller>,
        request: &Request<Bytes>,
    ) -> Result<Response<Bytes>, Refusal> {
        let body = request.body();
        let user = || caller.ok_or_else(|| Refusal::Door(self.callers.unauthorized()));
        let name = || matched.param("name").unwrap_or_default();
        Ok(match matched.route.handler {
            Handler::PersonalUrl => self.accounts()?.personal_url(user()?, body).await?,
            Handler::PersonalUrlRevoke => {
                self.accounts()?.revoke_personal_url(user()?, body).await?
            }
            Handler::ExternalTable => self.external()?.seed_table(user()?).await?,
            Handler::ExternalSet => self.external()?.seed_set(user()?, body).await?,
            Handler::ExternalRemove => self.external()?.seed_delete(user()?, body).await?,
            Handler::ExternalList => self.external()?.list(user()?).await?,
            Handler::ExternalCreate => self.external()?.create(user()?, body).await?,
            Handler::ExternalGet => self.external()?.get(user()?, name()).await?,
            Handler::ExternalPatch => self.external()?.patch(user()?, name(), body).await?,
            Handler::ExternalDelete => self.external()?.delete(user()?, name()).await?,
            Handler::ExternalProbe => self.external()?.reprobe(user()?, name()).await?,
            Handler::TemporaryUrls => self.accounts()?.list_temporary_urls(user()?).await?,
            Handler::TemporaryUrlRevoke => {
                let id = matched.param("id").map(decode_segment).unwrap_or_default();
                self.accounts()?.delete_temporary_url(user()?, &id).await?
            }
            _ => return Err(Refusal::Api(ApiError::NoRoute)),
        })
    }

    /// The oauth group's routes: accounts, shares, the authorization server, the whole
    /// account.
    #[cfg(feature = "group-oauth")]
    async fn answer_oauth(
        &self,
        matched: &Matched<'_>,
        caller: Option<&Caller>,
        request: &Request<Bytes>,
    ) -> Result<Response<Bytes>, Refusal> {
        let body = request.body();
        let user = || caller.ok_or_else(|| Refusal::Door(self.callers.unauthorized()));
        let path = matched.route.path;
        Ok(match matched.route.handler {
            Handler::SignUp => {
                self.accounts()?
                    .sign_up(body, web::source_of(request))
                    .await?
            }
            Handler::SignIn => {
                self.accounts()?
                    .sign_in(body, web::source_of(request))
                    .await?
            }
            Handler::AddressConfirm => self.accounts()?.confirm_api(body).await?,
            Handler::AddressConfirmResend => {
                self.accounts()?.resend_confirmation_api(user()?).await?
            }
            Handler::PasswordForgot => {
                self.accounts()?
                    .forgot_api(body, web::source_of(request))
                    .await?
            }
            Handler::PasswordReset => self.accounts()?.reset_api(body).await?,
            Handler::ShareAccept => self.accounts()?.accept_api(user()?, body).await?,
            Handler::ShareGrant => self.accounts()?.share(user()?, body).await?,
            Handler::ShareRevoke => self.accounts()?.unshare(user()?, body).await?,
            Handler::CheckState => {
                let state = matched.param("state").unwrap_or_default();
                let query = url::form_urlencoded::parse(
                    request.uri().query().unwrap_or_default().as_bytes(),
                )
                .find(|(name, _)| name == "poll_secret")
                .map(|(_, value)| value.into_owned());
                let header = request
                    .headers()
                    .get("x-poll-secret")
                    .and_then(|v| v.to_str().ok());
                self.login_poll
                    .check(state, query.as_deref().or(header))
                    .await?
            }
            Handler::SignOut => {
                let claims = self.callers.claims(request.headers());
                let claims = claims.ok_or_else(|| Refusal::Door(self.callers.unauthorized()))?;
                self.accounts()?.sign_out(&claims).await?
            }
            Handler::SignOutAll => self.accounts()?.sign_out_all(user()?).await?,
            Handler::PasswordChange => {
                let source = web::source_of(request);
                self.accounts()?
                    .change_password(user()?, body, source)
                    .await?
            }
            Handler::OAuthGrants => self.oauth()?.grants(user()?).await?,
            Handler::OAuthGrantRevoke => {
                let client_id = matched.param("client_id").map(decode_segment);
                let client_id = client_id.unwrap_or_default();
                self.oauth()?.withdraw_grant(user()?, &client_id).await?
            }
            Handler::SharesList => self.accounts()?.list_shares(user()?).await?,
            Handler::AccountExport => self.whole_account()?.export_api(&user()?.user_id).await?,
            Handler::AccountDelete => {
                let source = web::source_of(request);
                self.whole_account()?
                    .delete_account_api(&user()?.user_id, body, source)
                    .await?
            }

            Handler::OAuthMetadata => self.oauth()?.server_metadata(),
            Handler::ResourceMetadata => self.oauth()?.resource_metadata(),
            Handler::OAuthRegister => self.oauth()?.register(body, web::source_of(request)).await,
            Handler::AuthorizePage => self.oauth()?.authorize_page(request, path).await,
            Handler::AuthorizeSubmit => self.oauth()?.authorize_submit(request, path).await,
            Handler::OAuthToken => self.oauth()?.token(request).await,
            Handler::OAuthIntrospect => self.oauth()?.introspect(request).await,
            Handler::OAuthRevoke => self.oauth()?.revoke(request).await,
            Handler::McpLoginPage => self.oauth()?.login_page(request).await,
            Handler::McpLoginSubmit => self.oauth()?.login_submit(request).await,
            _ => return Err(Refusal::Api(ApiError::NoRoute)),
        })
    }

    /// The account API; without keys its routes answer 503 (with CORS headers).
    fn accounts(&self) -> Result<&AccountApi, ApiError> {
        self.signed
            .as_ref()
            .map(|s| s.accounts.as_ref())
            .ok_or(ApiError::NoKeys)
    }

    /// Export and deletion of the whole account (issue 15); needs the account API.
    fn whole_account(&self) -> Result<WholeAccount<'_>, ApiError> {
        Ok(WholeAccount {
            store: self.uploads.store.as_ref(),
            objects: self.uploads.objects.as_ref(),
            accounts: self.accounts()?,
            clock: self.clock.as_ref(),
        })
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
        let server_url = self.server_url(request);
        let agent = caller.as_ref().and_then(|c| c.agent.as_deref());
        let visible = |name: &str| self.agents.allows(agent, name);
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

/// A percent-encoded path segment's value (a client id may be a URL); `+` stays `+`.
fn decode_segment(segment: &str) -> String {
    let encoded = format!("x={}", segment.replace('+', "%2B"));
    form_urlencoded::parse(encoded.as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// The answer to a request whose handling panicked: a JSON-RPC internal error on the
/// MCP endpoint, else the REST envelope's 500.
fn panicked(handler: Handler) -> Response<Bytes> {
    if handler == Handler::McpPost {
        let error = McpError::Internal;
        return web::json(error.http_status(Era::Unknown), &error.transport_body());
    }
    ApiError::refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal error: the request was not completed",
    )
    .into_response()
}

/// `GET`/`DELETE /mcp`: 405, allowing what the path answers for real.
fn mcp_placeholder(matched: &Matched<'_>) -> Response<Bytes> {
    let error = McpError::PostOnly;
    let mut response = web::json(error.http_status(Era::Unknown), &error.transport_body());
    let allow = web::methods_at(matched.route, Handler::McpPlaceholder);
    if let Ok(allow) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(ALLOW, allow);
    }
    response
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
