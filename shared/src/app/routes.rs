//! The route table: every route the product serves, one row each, for every function
//! and for the local server, and each row with its handler. Names, groups, access, the
//! deployment's routes (`template.yaml`, generated from these rows: [`template_with_routes`]),
//! the router and the door all read the rows.
//!
//! A row is `row!(Group "METHOD" "/path" [as "alias name"], access, fields… => handler)`:
//! its name in the request log is "METHOD /path" unless an alias shares another's name;
//! fields not given take the defaults of [`ROW`]. The handler is one of:
//!
//! - `|c| expr`: `c` is the [`Call`] (the app, the row and its path parameters, the
//!   signed-in caller, the request); `expr` answers a response, a
//!   `Result<Response, ApiError>`, or a REST handler's `Result<Success<T>, ApiError>`
//!   that [`IntoReply`] renders in its envelope (`c.user()?` is the signed-in caller of a
//!   signed-in route);
//! - `public |console, c| expr` and `signed_in(SignedOut) |console, session, c| expr`: a
//!   console page (`console::SignedOut` says what a signed-out visitor gets), whose
//!   answer the console's door finishes (the session and CSRF check, the error page, the
//!   page headers);
//! - a named handler: [`PREFLIGHT`], [`PLACEHOLDER`].
//!
//! A handler is compiled only into the builds of its route group (`features.rs`): in
//! another group's build its row answers [`NOT_BUILT`] (never reached: `App::new` refuses
//! a group the build lacks, and `App::serves` lets no other group's route in).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use serde::Serialize;

use super::{App, Refusal};
use crate::http::{
    self as web, Accepts, ApiError, FORM_BODY, Prefix, REGISTRY_BODY, RPC_BODY, RouteGroup,
    Success, UPLOAD_BODY, decode_segment,
};
use crate::identity::Caller;
use crate::mcp::{Era, McpBody, McpError};

/// A row of the table: a route and its handler.
pub(crate) type Route = crate::http::Route<Handler>;
/// A request's row with its path parameters.
pub type Matched<'p> = crate::http::Matched<'p, Handler>;
/// What the table says about a request's method and path.
pub type Resolved<'p> = crate::http::Resolved<'p, Handler>;
/// The table compiled for one prefix.
pub(crate) type Router = crate::http::Router<Handler>;

/// What a handler is given.
pub(crate) struct Call<'a> {
    pub app: &'a App,
    pub matched: &'a Matched<'a>,
    /// The signed-in caller of a signed-in route (the door answered 401 without one).
    pub caller: Option<&'a Caller>,
    pub request: &'a Request<Bytes>,
    /// An MCP POST's body as [`App::handle`] parsed it (once, for its trace too).
    pub mcp: Option<&'a McpBody>,
}

impl<'a> Call<'a> {
    /// The signed-in caller: a signed-in route was admitted with one.
    pub(crate) fn user(&self) -> Result<&'a Caller, Refusal> {
        self.caller
            .ok_or_else(|| Refusal::Door(self.app.callers.unauthorized()))
    }

    /// The value of `{name}` in the path ("" when the route has none).
    pub(crate) fn param(&self, name: &str) -> &'a str {
        self.matched.param(name).unwrap_or_default()
    }

    /// The value of `{name}`, percent-decoded (a client id may be a URL).
    pub(crate) fn decoded(&self, name: &str) -> String {
        decode_segment(self.param(name))
    }

    pub(crate) fn body(&self) -> &'a Bytes {
        self.request.body()
    }

    /// The request's source address, when the binary that received it said.
    pub(crate) fn source(&self) -> Option<std::net::IpAddr> {
        web::source_of(self.request)
    }
}

/// A handler's answer, as a future.
pub(crate) type Reply<'a> =
    Pin<Box<dyn Future<Output = Result<Response<Bytes>, Refusal>> + Send + 'a>>;

/// What answers a route: the function a row carries.
#[derive(Clone, Copy)]
pub struct Handler(pub(crate) for<'a> fn(Call<'a>) -> Reply<'a>);

impl Handler {
    /// Whether `self` and `other` are the same handler (the placeholder's `Allow`).
    pub(crate) fn is(self, other: Handler) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handler")
    }
}

/// What a handler's expression may answer.
pub(crate) trait IntoReply {
    fn into_reply(self) -> Result<Response<Bytes>, Refusal>;
}

impl IntoReply for Response<Bytes> {
    fn into_reply(self) -> Result<Response<Bytes>, Refusal> {
        Ok(self)
    }
}

impl IntoReply for Result<Response<Bytes>, Refusal> {
    fn into_reply(self) -> Result<Response<Bytes>, Refusal> {
        self
    }
}

impl IntoReply for Result<Response<Bytes>, ApiError> {
    fn into_reply(self) -> Result<Response<Bytes>, Refusal> {
        self.map_err(Refusal::Api)
    }
}

/// A REST handler's success, rendered in its envelope (`Success::into_response`, the
/// one place the envelopes are written).
impl<T: Serialize> IntoReply for Result<Success<T>, ApiError> {
    fn into_reply(self) -> Result<Response<Bytes>, Refusal> {
        self.map(Success::into_response).map_err(Refusal::Api)
    }
}

impl<T: Serialize> IntoReply for Result<Success<T>, Refusal> {
    fn into_reply(self) -> Result<Response<Bytes>, Refusal> {
        self.map(Success::into_response)
    }
}

/// A CORS preflight: 200 with an empty body (every `OPTIONS` row).
pub(crate) const PREFLIGHT: Handler =
    Handler(|_| Box::pin(async { Ok(web::empty(StatusCode::OK)) }));

/// `GET`/`DELETE /mcp`: 405, a placeholder for a future WebSocket transport, allowing what
/// the path answers for real.
pub(crate) const PLACEHOLDER: Handler =
    Handler(|call| Box::pin(async move { Ok(super::mcp_placeholder(call.matched)) }));

/// The handler of a row whose group this build left out (never reached).
pub(crate) const NOT_BUILT: Handler =
    Handler(|_| Box::pin(async { Err(Refusal::Api(ApiError::NoRoute)) }));

/// A row's handler, compiled in with its route group only.
macro_rules! gate {
    (Mcp, $handler:expr) => { gate!(@ "group-mcp", $handler) };
    (Personal, $handler:expr) => { gate!(@ "group-personal", $handler) };
    (Oauth, $handler:expr) => { gate!(@ "group-oauth", $handler) };
    (Data, $handler:expr) => { gate!(@ "group-data", $handler) };
    (Console, $handler:expr) => { gate!(@ "group-console", $handler) };
    (@ $feature:literal, $handler:expr) => {{
        #[cfg(feature = $feature)]
        let handler = $handler;
        #[cfg(not(feature = $feature))]
        let handler = NOT_BUILT;
        handler
    }};
}

/// The handler a row writes (see the module's documentation).
macro_rules! handler {
    ($group:ident public |$console:pat_param, $call:pat_param| $body:expr) => {
        gate!($group, {
            fn handler<'a>(call: Call<'a>) -> Reply<'a> {
                Box::pin(async move {
                    let console = call.app.console()?;
                    let answer: crate::console::Answer = async {
                        let $console = console;
                        let $call = &call;
                        $body
                    }
                    .await;
                    Ok(console.finish(answer, None, call.request))
                })
            }
            Handler(handler)
        })
    };
    ($group:ident signed_in($signed_out:ident)
        |$console:pat_param, $session:pat_param, $call:pat_param| $body:expr) => {
        gate!($group, {
            fn handler<'a>(call: Call<'a>) -> Reply<'a> {
                Box::pin(async move {
                    let console = call.app.console()?;
                    let signed_out = crate::console::SignedOut::$signed_out;
                    let answer: crate::console::Answer = async {
                        let session = match console.admit(call.request, signed_out).await? {
                            Ok(session) => session,
                            Err(answer) => return Ok(answer),
                        };
                        let $console = console;
                        let $session = &session;
                        let $call = &call;
                        $body
                    }
                    .await;
                    Ok(console.finish(answer, Some(signed_out), call.request))
                })
            }
            Handler(handler)
        })
    };
    ($group:ident |$call:pat_param| $body:expr) => {
        gate!($group, {
            fn handler<'a>(call: Call<'a>) -> Reply<'a> {
                Box::pin(async move {
                    let $call = &call;
                    IntoReply::into_reply($body)
                })
            }
            Handler(handler)
        })
    };
    ($group:ident $named:ident) => {
        $named
    };
}

/// One row of the table.
macro_rules! row {
    ($group:ident $method:literal $path:literal $(as $name:literal)?, $access:ident
        $(, $field:ident: $value:expr)* => $($handler:tt)+) => {
        Route {
            method: $method,
            path: $path,
            group: RouteGroup::$group,
            name: row!(@name $method $path $($name)?),
            access: crate::http::Access::$access,
            handler: handler!($group $($handler)+),
            $($field: $value,)*
            ..ROW
        }
    };
    (@name $method:literal $path:literal) => { concat!($method, " ", $path) };
    (@name $method:literal $path:literal $name:literal) => { $name };
}

/// The defaults of a row. Method, path, group, access and handler are every row's own
/// (the placeholders here are refused by the table's test, and access defaults to the
/// strictest).
const ROW: Route = Route {
    method: "GET",
    path: "/",
    prefix: Prefix::Never,
    group: RouteGroup::All,
    name: "",
    access: crate::http::Access::SignedIn,
    handler: NOT_BUILT,
    accepts: Accepts::Session,
    deployed: true,
    max_body: FORM_BODY,
    streamed: false,
};

/// What `/mcp` takes: a person's session or an access token a client got with `mcp:tools`.
const MCP_TOKENS: Accepts = Accepts::SessionOrScope("mcp:tools");

const RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource";

/// Every route. Paths outside the prefix are tried before paths under it, so the prefix
/// can never hide a fixed path; otherwise the order is for the reader.
#[rustfmt::skip]
#[allow(clippy::needless_update)]
pub(crate) static ROUTES: &[Route] = {
    use Prefix::{After, Leading};
    &[

        // The MCP endpoint, under the prefix.
        row!(Mcp "POST" "/mcp", SameOrigin, prefix: Leading, accepts: MCP_TOKENS, max_body: RPC_BODY
            => |c| c.app.mcp_post(c.matched, c.request, c.mcp).await),
        row!(Mcp "GET" "/mcp", SameOrigin, prefix: Leading
            => PLACEHOLDER),
        row!(Mcp "DELETE" "/mcp", SameOrigin, prefix: Leading, deployed: false
            => PLACEHOLDER),
        row!(Mcp "OPTIONS" "/mcp", SameOrigin, prefix: Leading
            => PREFLIGHT),
        row!(Mcp "POST" "/mcp/{secret}", SameOrigin, prefix: Leading, accepts: MCP_TOKENS, max_body: RPC_BODY
            => |c| c.app.mcp_post(c.matched, c.request, c.mcp).await),
        row!(Mcp "OPTIONS" "/mcp/{secret}" as "OPTIONS /mcp", SameOrigin, prefix: Leading
            => PREFLIGHT),
        // No stream to open, as on /mcp: 405, which the SDKs read as "no SSE here" (a
        // 404 would tell them the session ended).
        row!(Mcp "GET" "/mcp/{secret}" as "GET /mcp", SameOrigin, prefix: Leading
            => PLACEHOLDER),

        // The data API.
        row!(Data "POST" "/api/data/health", SignedIn, max_body: UPLOAD_BODY
            => |c| c.app.data.health(c.user()?, c.request).await),
        row!(Data "POST" "/api/data/genotype", SignedIn, max_body: UPLOAD_BODY
            => |c| c.app.data.genotype(c.user()?, c.request).await),
        row!(Data "GET" "/api/data", SignedIn
            => |c| c.app.data.summary(c.user()?).await),
        row!(Data "DELETE" "/api/data", SignedIn
            => |c| c.app.delete_data(c.user()?).await),
        row!(Data "POST" "/api/data/uploads", SignedIn
            => |c| c.app.uploads.create(c.user()?, c.body()).await),
        row!(Data "GET" "/api/data/uploads", SignedIn
            => |c| c.app.uploads.list(c.user()?).await),
        row!(Data "GET" "/api/data/uploads/{id}", SignedIn
            => |c| c.app.uploads.get(c.user()?, c.param("id")).await),
        // Local only: the file itself, streamed to disk by the local server (deployed, the
        // client PUTs to S3). The body is never buffered, so the cap here is unused there.
        row!(Data "PUT" "/api/data/objects/{key}", SameOrigin, deployed: false, max_body: UPLOAD_BODY, streamed: true
            => |c| c.app.upload_content(c.matched, c.request).await),

        // The personal URL, under the prefix, and the caller's external MCP servers.
        row!(Personal "POST" "/personal/mcp", SignedIn, prefix: Leading
            => |c| c.app.accounts()?.personal_url(c.user()?, c.body()).await),
        row!(Personal "DELETE" "/personal/mcp", SignedIn, prefix: Leading
            => |c| c.app.accounts()?.revoke_personal_url(c.user()?, c.body()).await),
        row!(Personal "OPTIONS" "/personal/mcp", SameOrigin, prefix: Leading
            => PREFLIGHT),
        row!(Personal "GET" "/api/user/mcp" as "GET|POST /api/user/mcp", SignedIn
            => |c| c.app.external()?.seed_table(c.user()?).await),
        row!(Personal "POST" "/api/user/mcp" as "GET|POST /api/user/mcp", SignedIn, max_body: REGISTRY_BODY
            => |c| c.app.external()?.seed_table(c.user()?).await),
        row!(Personal "POST" "/api/user/mcp/set", SignedIn, max_body: REGISTRY_BODY
            => |c| c.app.external()?.seed_set(c.user()?, c.body()).await),
        row!(Personal "POST" "/api/user/mcp/delete", SignedIn
            => |c| c.app.external()?.seed_delete(c.user()?, c.body()).await),
        row!(Personal "GET" "/api/user/mcp-servers", SignedIn
            => |c| c.app.external()?.list(c.user()?).await),
        row!(Personal "POST" "/api/user/mcp-servers", SignedIn, max_body: REGISTRY_BODY
            => |c| c.app.external()?.create(c.user()?, c.body()).await),
        row!(Personal "GET" "/api/user/mcp-servers/{name}", SignedIn
            => |c| c.app.external()?.get(c.user()?, c.param("name")).await),
        row!(Personal "PATCH" "/api/user/mcp-servers/{name}", SignedIn, max_body: REGISTRY_BODY
            => |c| c.app.external()?.patch(c.user()?, c.param("name"), c.body()).await),
        row!(Personal "DELETE" "/api/user/mcp-servers/{name}", SignedIn
            => |c| c.app.external()?.delete(c.user()?, c.param("name")).await),
        row!(Personal "POST" "/api/user/mcp-servers/{name}/probe", SignedIn
            => |c| c.app.external()?.reprobe(c.user()?, c.param("name")).await),
        row!(Personal "GET" "/api/user/urls", SignedIn
            => |c| c.app.accounts()?.list_temporary_urls(c.user()?).await),
        row!(Personal "DELETE" "/api/user/urls/{id}", SignedIn
            => |c| c.app.accounts()?.delete_temporary_url(c.user()?, &c.decoded("id")).await),

        // Accounts and shares.
        row!(Oauth "POST" "/auth/signup", SameOrigin
            => |c| c.app.accounts()?.sign_up(c.body(), c.source()).await),
        row!(Oauth "POST" "/auth/signin", SameOrigin
            => |c| c.app.accounts()?.sign_in(c.body(), c.source()).await),
        row!(Oauth "POST" "/auth/confirm", SameOrigin
            => |c| c.app.accounts()?.confirm_api(c.body()).await),
        row!(Oauth "POST" "/auth/confirm/resend", SignedIn
            => |c| c.app.accounts()?.resend_confirmation_api(c.user()?).await),
        row!(Oauth "POST" "/auth/forgot", SameOrigin
            => |c| c.app.accounts()?.forgot_api(c.body(), c.source()).await),
        row!(Oauth "POST" "/auth/reset", SameOrigin
            => |c| c.app.accounts()?.reset_api(c.body()).await),
        row!(Oauth "POST" "/api/shares", SignedIn
            => |c| c.app.accounts()?.share(c.user()?, c.body()).await),
        row!(Oauth "POST" "/api/shares/accept", SignedIn
            => |c| c.app.accounts()?.accept_api(c.user()?, c.body()).await),
        row!(Oauth "DELETE" "/api/shares", SignedIn
            => |c| c.app.accounts()?.unshare(c.user()?, c.body()).await),
        row!(Oauth "GET" "/oauth2/check_state/{state}", SameOrigin
            => |c| c.app.check_state(c.matched, c.request).await),
        row!(Oauth "POST" "/auth/signout", SignedIn
            => |c| c.app.sign_out(c.request).await),
        row!(Oauth "POST" "/auth/signout-all", SignedIn
            => |c| c.app.accounts()?.sign_out_all(c.user()?).await),
        row!(Oauth "POST" "/auth/password", SignedIn
            => |c| c.app.accounts()?.change_password(c.user()?, c.body(), c.source()).await),
        row!(Oauth "GET" "/api/user/oauth-grants", SignedIn
            => |c| c.app.oauth_grants()?.list_oauth_grants(c.user()?).await),
        row!(Oauth "DELETE" "/api/user/oauth-grants/{client_id}", SignedIn
            => |c| c.app.oauth_grants()?.withdraw_oauth_grant(c.user()?, &c.decoded("client_id")).await),
        row!(Oauth "GET" "/api/shares", SignedIn
            => |c| c.app.accounts()?.list_shares(c.user()?).await),
        row!(Oauth "GET" "/api/user/export", SignedIn
            => |c| c.app.whole_account()?.export_api(&c.user()?.user_id).await),
        row!(Oauth "DELETE" "/api/user", SignedIn
            => |c| c.app.whole_account()?.delete_account_api(&c.user()?.user_id, c.body(), c.source()).await),

        // The web console: pages on the same origin; the console checks its
        // session cookie and CSRF token itself (`console/mod.rs`).
        row!(Console "GET" "/", Page
            => signed_in(SignIn) |_, _, _| Ok(crate::console::redirect("/console/data"))),
        row!(Console "GET" "/console" as "GET /", Page
            => signed_in(SignIn) |_, _, _| Ok(crate::console::redirect("/console/data"))),
        row!(Console "GET" "/console/assets/{file}", Page
            => public |_, c| crate::console::asset(c.param("file"))),
        row!(Console "GET" "/console/signup", Page
            => public |con, c| con.sign_up_form(c.request, None)),
        row!(Console "POST" "/console/signup", Page
            => public |con, c| con.sign_up(c.request).await),
        row!(Console "GET" "/console/signin", Page
            => public |con, c| con.sign_in_form(c.request, None)),
        row!(Console "POST" "/console/signin", Page
            => public |con, c| con.sign_in(c.request).await),
        row!(Console "GET" "/console/confirm", Page
            => public |con, c| con.confirm_form(c.request, None)),
        row!(Console "POST" "/console/confirm", Page
            => public |con, c| con.confirm(c.request).await),
        row!(Console "POST" "/console/confirm/resend", Page
            => signed_in(Back) |con, s, _| con.confirm_resend(s).await),
        row!(Console "GET" "/console/forgot", Page
            => public |con, c| con.forgot_form(c.request, None)),
        row!(Console "POST" "/console/forgot", Page
            => public |con, c| con.forgot(c.request).await),
        row!(Console "GET" "/console/reset", Page
            => public |con, c| con.reset_form(c.request, None)),
        row!(Console "POST" "/console/reset", Page
            => public |con, c| con.reset(c.request).await),
        row!(Console "POST" "/console/signout", Page
            => signed_in(SignIn) |con, s, _| con.sign_out(s).await),
        row!(Console "GET" "/console/password", Page
            => signed_in(Back) |con, s, _| con.password_form(s, None)),
        row!(Console "POST" "/console/password", Page
            => signed_in(Back) |con, s, c| con.password(s, c.request).await),
        row!(Console "GET" "/console/data", Page
            => signed_in(Back) |con, s, c| con.data_page(s, c.request).await),
        row!(Console "GET" "/console/data/{indicator}", Page
            => signed_in(Back) |con, s, c| con.indicator_page(s, &c.decoded("indicator"), c.request).await),
        row!(Console "GET" "/console/data/{indicator}/readings.csv", Page
            => signed_in(Back) |con, s, c| con.indicator_export(s, &c.decoded("indicator"), c.request).await),
        row!(Console "GET" "/console/genome", Page
            => signed_in(Back) |con, s, c| con.genome_page(s, c.request).await),
        row!(Console "GET" "/console/upload", Page
            => signed_in(Back) |con, s, _| con.upload_page(s).await),
        row!(Console "POST" "/console/uploads", Page
            => signed_in(Script) |con, s, c| con.upload_create(s, c.request).await),
        row!(Console "GET" "/console/uploads/{id}", Page
            => signed_in(Script) |con, s, c| con.upload_status(s, &c.decoded("id")).await),
        row!(Console "GET" "/console/connect", Page
            => signed_in(Back) |con, s, _| con.connect_page(s).await),
        row!(Console "POST" "/console/connect/url", Page
            => signed_in(Back) |con, s, _| con.url_create(s).await),
        row!(Console "POST" "/console/connect/url/revoke", Page
            => signed_in(Back) |con, s, _| con.url_revoke(s).await),
        row!(Console "GET" "/console/servers", Page
            => signed_in(Back) |con, s, c| con.servers_page(s, c.request).await),
        row!(Console "POST" "/console/servers", Page, max_body: REGISTRY_BODY
            => signed_in(Back) |con, s, c| con.server_add(s, c.request).await),
        row!(Console "GET" "/console/servers/{name}", Page
            => signed_in(Back) |con, s, c| con.server_edit_form(s, &c.decoded("name")).await),
        row!(Console "POST" "/console/servers/{name}", Page, max_body: REGISTRY_BODY
            => signed_in(Back) |con, s, c| con.server_edit(s, &c.decoded("name"), c.request).await),
        row!(Console "POST" "/console/servers/{name}/toggle", Page
            => signed_in(Back) |con, s, c| con.server_toggle(s, &c.decoded("name")).await),
        row!(Console "POST" "/console/servers/{name}/probe", Page
            => signed_in(Back) |con, s, c| con.server_probe(s, &c.decoded("name")).await),
        row!(Console "POST" "/console/servers/{name}/delete", Page
            => signed_in(Back) |con, s, c| con.server_delete(s, &c.decoded("name")).await),
        row!(Console "POST" "/console/servers/{name}/sign-in", Page
            => signed_in(Back) |con, s, c| con.server_sign_in(s, &c.decoded("name")).await),
        row!(Console "GET" "/console/oauth/callback", Page
            => signed_in(Back) |con, s, c| con.server_signed_in(s, c.request).await),
        row!(Console "GET" "/console/access", Page
            => signed_in(Back) |con, s, c| con.access_page(s, c.request).await),
        row!(Console "POST" "/console/access/grants/{client_id}/revoke", Page
            => signed_in(Back) |con, s, c| con.grant_revoke(s, &c.decoded("client_id")).await),
        row!(Console "POST" "/console/access/shares", Page
            => signed_in(Back) |con, s, c| con.share_offer(s, c.request).await),
        row!(Console "POST" "/console/access/invitations/accept", Page
            => signed_in(Back) |con, s, c| con.invitation_accept(s, c.request).await),
        row!(Console "POST" "/console/access/shares/revoke", Page
            => signed_in(Back) |con, s, c| con.share_revoke(s, c.request).await),
        row!(Console "POST" "/console/access/urls/revoke", Page
            => signed_in(Back) |con, s, c| con.temporary_url_revoke(s, c.request).await),
        row!(Console "POST" "/console/access/signout-all", Page
            => signed_in(Back) |con, s, _| con.sign_out_all(s).await),
        row!(Console "GET" "/console/account", Page
            => signed_in(Back) |con, s, c| con.account_page(s, c.request).await),
        row!(Console "GET" "/console/account/export", Page
            => signed_in(Back) |con, s, _| con.export(s).await),
        row!(Console "POST" "/console/account/delete-data", Page
            => signed_in(Back) |con, s, c| con.delete_data(s, c.request).await),
        row!(Console "POST" "/console/account/delete", Page
            => signed_in(Back) |con, s, c| con.delete_account(s, c.request).await),

        // The authorization server: its metadata at three paths, the resource metadata.
        row!(Oauth "GET" "/.well-known/oauth-authorization-server", Open
            => |c| c.app.oauth()?.server_metadata()),
        row!(Oauth "GET" "/.well-known/oauth-authorization-server/mcp" as "GET /.well-known/oauth-authorization-server", Open
            => |c| c.app.oauth()?.server_metadata()),
        row!(Oauth "GET" "/.well-known/mcp-configuration" as "GET /.well-known/oauth-authorization-server", Open
            => |c| c.app.oauth()?.server_metadata()),
        row!(Oauth "GET" "/.well-known/oauth-protected-resource", Open
            => |c| c.app.oauth()?.resource_metadata()),
        row!(Oauth "GET" "/.well-known/oauth-protected-resource/mcp" as "GET /.well-known/oauth-protected-resource", Open, prefix: After(RESOURCE_METADATA)
            => |c| c.app.oauth()?.resource_metadata()),
        row!(Oauth "OPTIONS" "/.well-known/oauth-authorization-server" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "OPTIONS" "/.well-known/oauth-authorization-server/mcp" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "OPTIONS" "/.well-known/mcp-configuration" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "OPTIONS" "/.well-known/oauth-protected-resource" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "OPTIONS" "/.well-known/oauth-protected-resource/mcp" as "OPTIONS /oauth/*", Open, prefix: After(RESOURCE_METADATA)
            => PREFLIGHT),

        // The authorization server's endpoints (`/oauth2/authorize` is the seed's alias).
        row!(Oauth "POST" "/oauth/register", Open
            => |c| c.app.oauth()?.register(c.body(), c.source()).await),
        row!(Oauth "OPTIONS" "/oauth/register" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "GET" "/oauth/authorize", Form
            => |c| c.app.oauth()?.authorize_page(c.request, c.matched.route.path).await),
        row!(Oauth "POST" "/oauth/authorize", Form
            => |c| c.app.oauth()?.authorize_submit(c.request, c.matched.route.path).await),
        row!(Oauth "GET" "/oauth2/authorize" as "GET /oauth/authorize", Form
            => |c| c.app.oauth()?.authorize_page(c.request, c.matched.route.path).await),
        row!(Oauth "POST" "/oauth2/authorize" as "POST /oauth/authorize", Form
            => |c| c.app.oauth()?.authorize_submit(c.request, c.matched.route.path).await),
        row!(Oauth "POST" "/oauth/token", Open
            => |c| c.app.oauth()?.token(c.request).await),
        row!(Oauth "OPTIONS" "/oauth/token" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "POST" "/oauth/introspect", Open
            => |c| c.app.oauth()?.introspect(c.request).await),
        row!(Oauth "OPTIONS" "/oauth/introspect" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "POST" "/oauth/revoke", Open
            => |c| c.app.oauth()?.revoke(c.request).await),
        row!(Oauth "OPTIONS" "/oauth/revoke" as "OPTIONS /oauth/*", Open
            => PREFLIGHT),
        row!(Oauth "GET" "/mcplogin", Form
            => |c| c.app.oauth()?.login_page(c.request).await),
        row!(Oauth "POST" "/mcplogin", Form
            => |c| c.app.oauth()?.login_submit(c.request).await),

    ]
};

/// Finds the route for `method` and `path` with the configured prefix. Trailing slashes
/// are ignored; paths outside the prefix are tried first. Builds a [`Router`] per call:
/// the app builds one once.
pub fn resolve<'p>(method: &Method, path: &'p str, prefix: &str) -> Resolved<'p> {
    Router::new(ROUTES, prefix).resolve(method, path)
}

/// Every deployed (method, path without the prefix, group): what `template.yaml`
/// routes and the sample events exercise.
pub fn templates() -> impl Iterator<Item = (&'static str, &'static str, RouteGroup)> {
    ROUTES
        .iter()
        .filter(|route| route.deployed)
        .map(|route| (route.method, route.path, route.group))
}

/// The methods `route`'s path is served with, except by `route`'s own handler (the
/// placeholder's `Allow` header).
pub(crate) fn allowed_besides(route: &Route) -> String {
    web::methods_at(ROUTES, route, |other| !other.handler.is(route.handler))
}

/// The answer to a request whose handling panicked: a JSON-RPC internal error on the
/// MCP endpoint, else the REST envelope's 500.
pub(crate) fn panicked(route: &Route) -> Response<Bytes> {
    if speaks_json_rpc(route) {
        let error = McpError::Internal;
        return web::json(error.http_status(Era::Unknown), &error.transport_body());
    }
    ApiError::refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal error: the request was not completed",
    )
    .into_response()
}

/// Whether the route takes a JSON-RPC message: a `POST` of the MCP group.
pub(crate) fn speaks_json_rpc(route: &Route) -> bool {
    route.group == RouteGroup::Mcp && route.method == "POST"
}

/// The first line of the routes `template.yaml` carries, generated from the table.
const BEGIN_ROUTES: &str = "  # BEGIN ROUTES";
/// The line after them.
const END_ROUTES: &str = "  # END ROUTES";

/// `template` (the SAM template's text) with its routes, the lines from `# BEGIN ROUTES`
/// to `# END ROUTES`, generated from the table: one `AWS::ApiGatewayV2::Route` per
/// deployed row, to its group's integration, `${HttpUriPrefix}` where the router places
/// the prefix. A route the template already has keeps its logical id (CloudFormation would
/// replace a renamed route, and API Gateway refuses the new one while the old one still
/// holds its key); a new one is named `Route<Method><Path>`. What
/// `mirobody-local routes-template` writes, and what the template test checks is current.
pub fn template_with_routes(template: &str) -> Result<String, String> {
    let begin = template
        .find(BEGIN_ROUTES)
        .ok_or("the template has no `# BEGIN ROUTES` line")?;
    let end = template[begin..]
        .find(END_ROUTES)
        .map(|at| begin + at)
        .ok_or("the template has no `# END ROUTES` line")?;
    let kept = route_ids(template);
    let mut taken: Vec<String> = kept.iter().map(|(_, id)| id.clone()).collect();
    let mut out = String::new();
    out.push_str(BEGIN_ROUTES);
    out.push_str(
        ": generated from the route table (shared/src/app/routes.rs) by\n  \
         # `cargo run -p mirobody-local -- routes-template template.yaml`: do not edit them\n  \
         # here. One per deployed row; unknown paths get API Gateway's own 404.\n",
    );
    let mut group = None;
    for route in ROUTES.iter().filter(|route| route.deployed) {
        let key = route_key(route);
        let id = match kept.iter().find(|(k, _)| *k == key) {
            Some((_, id)) => id.clone(),
            None => new_route_id(route, &taken),
        };
        taken.push(id.clone());
        if group != Some(route.group) {
            group = Some(route.group);
            out.push_str(&format!(
                "\n  # {} group\n",
                format!("{:?}", route.group).to_lowercase()
            ));
        }
        let key = match route.prefix {
            Prefix::Never => format!("\"{key}\""),
            _ => format!("!Sub \"{key}\""),
        };
        out.push_str(&format!(
            "  {id}:\n    Type: AWS::ApiGatewayV2::Route\n    Properties:\n      \
             ApiId: !Ref HttpApi\n      RouteKey: {key}\n      \
             Target: !Sub \"integrations/${{{:?}Integration}}\"\n",
            route.group
        ));
    }
    Ok(format!("{}{out}{}", &template[..begin], &template[end..]))
}

/// The route's key in the template: "METHOD path", `${HttpUriPrefix}` where the prefix goes.
fn route_key(route: &Route) -> String {
    let path = match route.prefix {
        Prefix::Never => route.path.to_string(),
        Prefix::Leading => format!("${{HttpUriPrefix}}{}", route.path),
        Prefix::After(head) => format!("{head}${{HttpUriPrefix}}{}", &route.path[head.len()..]),
    };
    format!("{} {path}", route.method)
}

/// The logical id of each `AWS::ApiGatewayV2::Route` of the template, by its route key.
fn route_ids(template: &str) -> Vec<(String, String)> {
    let mut ids = Vec::new();
    let mut resource: Option<&str> = None;
    let mut is_route = false;
    for line in template.lines() {
        if let Some(name) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(':'))
            && !name.starts_with([' ', '#'])
        {
            resource = Some(name);
            is_route = false;
        } else if line.trim() == "Type: AWS::ApiGatewayV2::Route" {
            is_route = true;
        } else if let Some(key) = line.trim().strip_prefix("RouteKey:")
            && is_route
            && let Some(id) = resource
        {
            let key = key
                .trim()
                .trim_start_matches("!Sub")
                .trim()
                .trim_matches('"');
            ids.push((key.to_string(), id.to_string()));
        }
    }
    ids
}

/// A new route's logical id: `Route`, the method, then the path's words (`POST
/// /api/user/mcp-servers/{name}/probe` is `RoutePostApiUserMcpServersNameProbe`).
fn new_route_id(route: &Route, taken: &[String]) -> String {
    let mut id = String::from("Route");
    let words = std::iter::once(route.method).chain(
        route
            .path
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| !word.is_empty()),
    );
    for word in words {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            id.push(first.to_ascii_uppercase());
            id.extend(chars.map(|c| c.to_ascii_lowercase()));
        }
    }
    let mut unique = id.clone();
    let mut n = 2;
    while taken.contains(&unique) {
        unique = format!("{id}{n}");
        n += 1;
    }
    unique
}

/// `CargoLambda.toml`, `cargo lambda watch`'s router, generated from the table: every
/// deployed row's path to its group's function for its method, so that the real paths
/// (`/mcp`, `/oauth/token`, the console) reach the function that serves them, as API
/// Gateway's routes do (without `${HttpUriPrefix}`: watch serves the root). What
/// `mirobody-local routes-watch` writes, and what the watch test checks is current.
pub fn watch_router() -> String {
    let mut paths: Vec<(&str, Vec<&Route>)> = Vec::new();
    for route in ROUTES.iter().filter(|route| route.deployed) {
        match paths.iter_mut().find(|(path, _)| *path == route.path) {
            Some((_, rows)) => rows.push(route),
            None => paths.push((route.path, vec![route])),
        }
    }
    let mut out = String::from(
        "# `cargo lambda watch`'s router: each path of the route table (shared/src/app/routes.rs)\n\
         # to the function that serves it, per method. Generated by\n\
         # `cargo run -p mirobody-local -- routes-watch CargoLambda.toml`: do not edit it here.\n\
         \n[watch.router]\n",
    );
    for (path, rows) in paths {
        out.push_str(&format!("\"{path}\" = [\n"));
        for route in rows {
            out.push_str(&format!(
                "  {{ method = \"{}\", function = \"{}\" }},\n",
                route.method,
                format!("{:?}", route.group).to_lowercase()
            ));
        }
        out.push_str("]\n");
    }
    out
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
