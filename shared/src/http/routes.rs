//! The route table: every route the product serves, one row each, for every function
//! and for the local server. Names, groups, access, the deployment's template list and
//! the parser all read the rows.
//!
//! Owns path shapes and the `HTTP_URI_PREFIX` rule: `/mcp`, `/mcp/{secret}` and
//! `/personal/mcp` live under the prefix, the resource metadata of the prefixed `/mcp`
//! puts it after the well-known name, and every other path (well-known documents, the
//! OAuth and REST APIs) never has it. Names the handler of each route but knows nothing
//! about what handlers do; never shows a path parameter in a name.

use std::collections::HashMap;

use http::Method;

use crate::console::Page;

/// The route groups: one Lambda function each (template.yaml); the local server serves all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteGroup {
    Mcp,
    Personal,
    Oauth,
    Data,
    /// The web console's pages (issue 15).
    Console,
    All,
}

/// Who may call a route. `App::dispatch` checks it before the handler runs, and the
/// CORS headers of the answer follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Cross-origin by design (discovery, registration and token endpoints for
    /// browser-based clients): no `Origin`/`Host` check; CORS allows any origin.
    Open,
    /// Protected against DNS rebinding: the `Origin`/`Host` check (403); CORS echoes an
    /// allowed origin.
    SameOrigin,
    /// Same-origin, and a valid bearer token is required (401 without one).
    SignedIn,
    /// A console page (issue 15): the `Origin`/`Host` check, and no CORS headers at all
    /// (a page and its forms are for this origin's own tabs); the console checks its
    /// session cookie and CSRF token itself.
    Page,
    /// The OAuth sign-in and consent forms (CSRF cookie): like `SameOrigin`, but
    /// `MCP_ALLOWED_ORIGINS` never widens their `Origin` check (issue 16, item 6).
    Form,
}

/// Which bearer tokens a route takes: read by the one check in caller resolution
/// (`CallerResolver::admit`), for signed-in routes and for a bearer token on `/mcp`.
/// A token that does not verify is 401; a valid one of another kind or without the
/// scope is 403 (`insufficient_scope`). A client-credentials token is never a person,
/// so no row takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accepts {
    /// Only a person's first-party session (sign-in, sign-up, the development mint):
    /// the account, data, share, personal-URL and server-registry APIs.
    Session,
    /// A person's session, or an OAuth access token whose scope includes this one.
    SessionOrScope(&'static str),
}

/// Where `HTTP_URI_PREFIX` goes in a route's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// Nowhere: the path is served as written, whatever the prefix.
    Never,
    /// In front: `/mcp` is served at `/api/mcp` with the prefix `/api`.
    Leading,
    /// After this leading part of the path (RFC 9728: the metadata of the resource
    /// `/api/mcp` is at `/.well-known/oauth-protected-resource/api/mcp`).
    After(&'static str),
}

/// What answers a route: one arm each in `App::dispatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handler {
    /// A JSON-RPC request on `/mcp` or `/mcp/{secret}`.
    McpPost,
    /// `GET`/`DELETE /mcp`: 405, a placeholder for a future WebSocket transport.
    McpPlaceholder,
    /// A CORS preflight: 200 with an empty body.
    Preflight,
    /// Readings as JSON or CSV.
    DataHealth,
    /// A raw genotype file.
    DataGenotype,
    /// What the caller has uploaded.
    DataSummary,
    /// Delete the caller's readings and genotypes.
    DataDelete,
    /// Create an upload: where to PUT a whole file (issue 14).
    UploadCreate,
    /// The caller's recent uploads.
    UploadList,
    /// One upload's status (owner only).
    UploadGet,
    /// The local server's PUT of an upload's file (the URL is the capability).
    UploadContent,
    /// The caller's personal MCP URL, or that of an account that shared "chat" with them.
    PersonalUrl,
    PersonalUrlRevoke,
    /// The caller's external MCP servers as the seed's table.
    ExternalTable,
    /// Add or replace one entry of the table.
    ExternalSet,
    /// Remove one entry of the table.
    ExternalRemove,
    ExternalList,
    /// Register a server (probed first).
    ExternalCreate,
    ExternalGet,
    ExternalPatch,
    ExternalDelete,
    /// Probe a registered server again.
    ExternalProbe,
    SignUp,
    SignIn,
    /// Use a mailed confirmation link (issue 27).
    AddressConfirm,
    /// Mail a new confirmation link to the caller's address.
    AddressConfirmResend,
    /// Ask for a password reset link (the same answer for every address).
    PasswordForgot,
    /// Use a reset link: a new password, every session and grant ended.
    PasswordReset,
    ShareGrant,
    ShareRevoke,
    /// Accept an invitation to the caller's confirmed address (issue 27).
    ShareAccept,
    /// The device-style login poll.
    CheckState,
    /// The authorization server metadata.
    OAuthMetadata,
    /// RFC 9728 protected resource metadata for `/mcp`.
    ResourceMetadata,
    OAuthRegister,
    /// The authorization page (the row's path is kept for the form action).
    AuthorizePage,
    AuthorizeSubmit,
    OAuthToken,
    OAuthIntrospect,
    /// The page the login prompt opens.
    McpLoginPage,
    McpLoginSubmit,
    /// End this session.
    SignOut,
    /// End every session, OAuth grant and login-prompt token of the caller.
    SignOutAll,
    PasswordChange,
    /// RFC 7009 token revocation.
    OAuthRevoke,
    /// The OAuth clients the caller authorised.
    OAuthGrants,
    /// Withdraw one client's grant.
    OAuthGrantRevoke,
    /// The shares the caller granted and received (issue 15).
    SharesList,
    /// The caller's live temporary URLs (issue 15).
    TemporaryUrls,
    /// Revoke one temporary URL (issue 15).
    TemporaryUrlRevoke,
    /// A page of the web console (issue 15): the console routes its pages itself.
    Console(Page),
    /// Everything the product holds about the caller, as one gzip JSON download.
    AccountExport,
    /// Delete the caller's account and everything of it (password confirmed).
    AccountDelete,
}

/// One route. Later needs per route become fields here with a default in [`ROW`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub method: &'static str,
    /// The path without the prefix; `{name}` matches one non-empty segment.
    pub path: &'static str,
    pub prefix: Prefix,
    pub group: RouteGroup,
    /// The name in the request log: safe to log (no path parameter), shared by aliases.
    pub name: &'static str,
    pub access: Access,
    pub handler: Handler,
    /// The bearer tokens it takes (the strictest, a first-party session, by default).
    pub accepts: Accepts,
    /// In `template.yaml`: API Gateway sends it to the group's function. `false` for
    /// what only the local server answers.
    pub deployed: bool,
    /// The largest request body it takes, in bytes: checked before anything parses it
    /// (the local server stops reading there; Lambda's already-read body is refused
    /// unparsed). Issue 13: a 6 MB hostile JSON body must never reach a parser.
    pub max_body: usize,
}

/// Forms and small JSON (accounts, OAuth, shares, the personal URL): the default.
pub(crate) const FORM_BODY: usize = 16 * 1024;
/// A JSON-RPC message: tool arguments are bounded far below this (1,000 rsids is ~15 KB).
pub(crate) const RPC_BODY: usize = 256 * 1024;
/// A server registration: headers, a credential of up to 8 KiB, 256 allowed tool names.
pub(crate) const REGISTRY_BODY: usize = 64 * 1024;
/// An upload of readings or genotypes (API Gateway takes 10 MB; Lambda 6 MB).
pub(crate) const UPLOAD_BODY: usize = 8 * 1024 * 1024;

/// The defaults of a row. Method, path, group, name, access and handler are every row's
/// own: the placeholders here are refused by the table's test (and access defaults to the
/// strictest).
const ROW: Route = Route {
    method: "GET",
    path: "/",
    prefix: Prefix::Never,
    group: RouteGroup::All,
    name: "",
    access: Access::SignedIn,
    handler: Handler::Preflight,
    accepts: Accepts::Session,
    deployed: true,
    max_body: FORM_BODY,
};

/// What `/mcp` takes: a person's session or an access token a client got with `mcp:tools`.
const MCP_TOKENS: Accepts = Accepts::SessionOrScope("mcp:tools");

const RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource";

/// Every route. Paths outside the prefix are tried before paths under it, so the prefix
/// can never hide a fixed path; otherwise the order is for the reader. Every row ends
/// with `..ROW`, so a new field needs only its default there.
#[rustfmt::skip]
#[allow(clippy::needless_update)]
pub(crate) static ROUTES: &[Route] = {
    use Access::{Form, Open, Page, SameOrigin, SignedIn};
    use Handler::*;
    use Prefix::{After, Leading};
    use RouteGroup::{Console, Data, Mcp, Oauth, Personal};
    use crate::console::Page as P;
    &[
        // The MCP endpoint, under the prefix.
        Route { method: "POST", path: "/mcp", prefix: Leading, group: Mcp, name: "POST /mcp",
                access: SameOrigin, handler: McpPost, accepts: MCP_TOKENS, max_body: RPC_BODY,
                ..ROW },
        Route { method: "GET", path: "/mcp", prefix: Leading, group: Mcp, name: "GET /mcp",
                access: SameOrigin, handler: McpPlaceholder, ..ROW },
        Route { method: "DELETE", path: "/mcp", prefix: Leading, group: Mcp, name: "DELETE /mcp",
                access: SameOrigin, handler: McpPlaceholder, deployed: false, ..ROW },
        Route { method: "OPTIONS", path: "/mcp", prefix: Leading, group: Mcp, name: "OPTIONS /mcp",
                access: SameOrigin, handler: Preflight, ..ROW },
        Route { method: "POST", path: "/mcp/{secret}", prefix: Leading, group: Mcp,
                name: "POST /mcp/{secret}", access: SameOrigin, handler: McpPost,
                accepts: MCP_TOKENS, max_body: RPC_BODY, ..ROW },
        Route { method: "OPTIONS", path: "/mcp/{secret}", prefix: Leading, group: Mcp,
                name: "OPTIONS /mcp", access: SameOrigin, handler: Preflight, ..ROW },

        // The data API.
        Route { method: "POST", path: "/api/data/health", group: Data,
                name: "POST /api/data/health", access: SignedIn, handler: DataHealth,
                max_body: UPLOAD_BODY, ..ROW },
        Route { method: "POST", path: "/api/data/genotype", group: Data,
                name: "POST /api/data/genotype", access: SignedIn, handler: DataGenotype,
                max_body: UPLOAD_BODY, ..ROW },
        Route { method: "GET", path: "/api/data", group: Data, name: "GET /api/data",
                access: SignedIn, handler: DataSummary, ..ROW },
        Route { method: "DELETE", path: "/api/data", group: Data, name: "DELETE /api/data",
                access: SignedIn, handler: DataDelete, ..ROW },
        Route { method: "POST", path: "/api/data/uploads", group: Data,
                name: "POST /api/data/uploads", access: SignedIn, handler: UploadCreate, ..ROW },
        Route { method: "GET", path: "/api/data/uploads", group: Data,
                name: "GET /api/data/uploads", access: SignedIn, handler: UploadList, ..ROW },
        Route { method: "GET", path: "/api/data/uploads/{id}", group: Data,
                name: "GET /api/data/uploads/{id}", access: SignedIn, handler: UploadGet, ..ROW },
        // Local only: the file itself, streamed to disk by the local server (deployed, the
        // client PUTs to S3). The body is never buffered, so the cap here is unused there.
        Route { method: "PUT", path: "/api/data/objects/{key}", group: Data,
                name: "PUT /api/data/objects/{key}", access: SameOrigin, handler: UploadContent,
                deployed: false, max_body: UPLOAD_BODY, ..ROW },

        // The personal URL, under the prefix, and the caller's external MCP servers.
        Route { method: "POST", path: "/personal/mcp", prefix: Leading, group: Personal,
                name: "POST /personal/mcp", access: SignedIn, handler: PersonalUrl, ..ROW },
        Route { method: "DELETE", path: "/personal/mcp", prefix: Leading, group: Personal,
                name: "DELETE /personal/mcp", access: SignedIn, handler: PersonalUrlRevoke, ..ROW },
        Route { method: "OPTIONS", path: "/personal/mcp", prefix: Leading, group: Personal,
                name: "OPTIONS /personal/mcp", access: SameOrigin, handler: Preflight, ..ROW },
        Route { method: "GET", path: "/api/user/mcp", group: Personal,
                name: "GET|POST /api/user/mcp", access: SignedIn, handler: ExternalTable, ..ROW },
        Route { method: "POST", path: "/api/user/mcp", group: Personal,
                name: "GET|POST /api/user/mcp", access: SignedIn, handler: ExternalTable,
                max_body: REGISTRY_BODY, ..ROW },
        Route { method: "POST", path: "/api/user/mcp/set", group: Personal,
                name: "POST /api/user/mcp/set", access: SignedIn, handler: ExternalSet,
                max_body: REGISTRY_BODY, ..ROW },
        Route { method: "POST", path: "/api/user/mcp/delete", group: Personal,
                name: "POST /api/user/mcp/delete", access: SignedIn, handler: ExternalRemove,
                ..ROW },
        Route { method: "GET", path: "/api/user/mcp-servers", group: Personal,
                name: "GET /api/user/mcp-servers", access: SignedIn, handler: ExternalList, ..ROW },
        Route { method: "POST", path: "/api/user/mcp-servers", group: Personal,
                name: "POST /api/user/mcp-servers", access: SignedIn, handler: ExternalCreate,
                max_body: REGISTRY_BODY, ..ROW },
        Route { method: "GET", path: "/api/user/mcp-servers/{name}", group: Personal,
                name: "GET /api/user/mcp-servers/{name}", access: SignedIn, handler: ExternalGet,
                ..ROW },
        Route { method: "PATCH", path: "/api/user/mcp-servers/{name}", group: Personal,
                name: "PATCH /api/user/mcp-servers/{name}", access: SignedIn,
                handler: ExternalPatch, max_body: REGISTRY_BODY, ..ROW },
        Route { method: "DELETE", path: "/api/user/mcp-servers/{name}", group: Personal,
                name: "DELETE /api/user/mcp-servers/{name}", access: SignedIn,
                handler: ExternalDelete, ..ROW },
        Route { method: "POST", path: "/api/user/mcp-servers/{name}/probe", group: Personal,
                name: "POST /api/user/mcp-servers/{name}/probe", access: SignedIn,
                handler: ExternalProbe, ..ROW },
        Route { method: "GET", path: "/api/user/urls", group: Personal,
                name: "GET /api/user/urls", access: SignedIn, handler: TemporaryUrls, ..ROW },
        Route { method: "DELETE", path: "/api/user/urls/{id}", group: Personal,
                name: "DELETE /api/user/urls/{id}", access: SignedIn,
                handler: TemporaryUrlRevoke, ..ROW },

        // Accounts and shares.
        Route { method: "POST", path: "/auth/signup", group: Oauth, name: "POST /auth/signup",
                access: SameOrigin, handler: SignUp, ..ROW },
        Route { method: "POST", path: "/auth/signin", group: Oauth, name: "POST /auth/signin",
                access: SameOrigin, handler: SignIn, ..ROW },
        Route { method: "POST", path: "/auth/confirm", group: Oauth, name: "POST /auth/confirm",
                access: SameOrigin, handler: AddressConfirm, ..ROW },
        Route { method: "POST", path: "/auth/confirm/resend", group: Oauth,
                name: "POST /auth/confirm/resend", access: SignedIn,
                handler: AddressConfirmResend, ..ROW },
        Route { method: "POST", path: "/auth/forgot", group: Oauth, name: "POST /auth/forgot",
                access: SameOrigin, handler: PasswordForgot, ..ROW },
        Route { method: "POST", path: "/auth/reset", group: Oauth, name: "POST /auth/reset",
                access: SameOrigin, handler: PasswordReset, ..ROW },
        Route { method: "POST", path: "/api/shares", group: Oauth, name: "POST /api/shares",
                access: SignedIn, handler: ShareGrant, ..ROW },
        Route { method: "POST", path: "/api/shares/accept", group: Oauth,
                name: "POST /api/shares/accept", access: SignedIn, handler: ShareAccept, ..ROW },
        Route { method: "DELETE", path: "/api/shares", group: Oauth, name: "DELETE /api/shares",
                access: SignedIn, handler: ShareRevoke, ..ROW },
        Route { method: "GET", path: "/oauth2/check_state/{state}", group: Oauth,
                name: "GET /oauth2/check_state/{state}", access: SameOrigin, handler: CheckState,
                ..ROW },
        Route { method: "POST", path: "/auth/signout", group: Oauth, name: "POST /auth/signout",
                access: SignedIn, handler: SignOut, ..ROW },
        Route { method: "POST", path: "/auth/signout-all", group: Oauth,
                name: "POST /auth/signout-all", access: SignedIn, handler: SignOutAll, ..ROW },
        Route { method: "POST", path: "/auth/password", group: Oauth, name: "POST /auth/password",
                access: SignedIn, handler: PasswordChange, ..ROW },
        Route { method: "GET", path: "/api/user/oauth-grants", group: Oauth,
                name: "GET /api/user/oauth-grants", access: SignedIn, handler: OAuthGrants, ..ROW },
        Route { method: "DELETE", path: "/api/user/oauth-grants/{client_id}", group: Oauth,
                name: "DELETE /api/user/oauth-grants/{client_id}", access: SignedIn,
                handler: OAuthGrantRevoke, ..ROW },
        Route { method: "GET", path: "/api/shares", group: Oauth, name: "GET /api/shares",
                access: SignedIn, handler: SharesList, ..ROW },
        Route { method: "GET", path: "/api/user/export", group: Oauth,
                name: "GET /api/user/export", access: SignedIn, handler: AccountExport, ..ROW },
        Route { method: "DELETE", path: "/api/user", group: Oauth, name: "DELETE /api/user",
                access: SignedIn, handler: AccountDelete, ..ROW },

        // The web console (issue 15): pages on the same origin; the console checks its
        // session cookie and CSRF token itself (`console/mod.rs`).
        Route { method: "GET", path: "/", group: Console, name: "GET /",
                access: Page, handler: Handler::Console(P::Home), ..ROW },
        Route { method: "GET", path: "/console", group: Console, name: "GET /",
                access: Page, handler: Handler::Console(P::Home), ..ROW },
        Route { method: "GET", path: "/console/assets/{file}", group: Console, name: "GET /console/assets/{file}",
                access: Page, handler: Handler::Console(P::Asset), ..ROW },
        Route { method: "GET", path: "/console/signup", group: Console, name: "GET /console/signup",
                access: Page, handler: Handler::Console(P::SignUpForm), ..ROW },
        Route { method: "POST", path: "/console/signup", group: Console, name: "POST /console/signup",
                access: Page, handler: Handler::Console(P::SignUp), ..ROW },
        Route { method: "GET", path: "/console/signin", group: Console, name: "GET /console/signin",
                access: Page, handler: Handler::Console(P::SignInForm), ..ROW },
        Route { method: "POST", path: "/console/signin", group: Console, name: "POST /console/signin",
                access: Page, handler: Handler::Console(P::SignIn), ..ROW },
        Route { method: "GET", path: "/console/confirm", group: Console, name: "GET /console/confirm",
                access: Page, handler: Handler::Console(P::ConfirmForm), ..ROW },
        Route { method: "POST", path: "/console/confirm", group: Console, name: "POST /console/confirm",
                access: Page, handler: Handler::Console(P::Confirm), ..ROW },
        Route { method: "POST", path: "/console/confirm/resend", group: Console, name: "POST /console/confirm/resend",
                access: Page, handler: Handler::Console(P::ConfirmResend), ..ROW },
        Route { method: "GET", path: "/console/forgot", group: Console, name: "GET /console/forgot",
                access: Page, handler: Handler::Console(P::ForgotForm), ..ROW },
        Route { method: "POST", path: "/console/forgot", group: Console, name: "POST /console/forgot",
                access: Page, handler: Handler::Console(P::Forgot), ..ROW },
        Route { method: "GET", path: "/console/reset", group: Console, name: "GET /console/reset",
                access: Page, handler: Handler::Console(P::ResetForm), ..ROW },
        Route { method: "POST", path: "/console/reset", group: Console, name: "POST /console/reset",
                access: Page, handler: Handler::Console(P::Reset), ..ROW },
        Route { method: "POST", path: "/console/signout", group: Console, name: "POST /console/signout",
                access: Page, handler: Handler::Console(P::SignOut), ..ROW },
        Route { method: "GET", path: "/console/password", group: Console, name: "GET /console/password",
                access: Page, handler: Handler::Console(P::PasswordForm), ..ROW },
        Route { method: "POST", path: "/console/password", group: Console, name: "POST /console/password",
                access: Page, handler: Handler::Console(P::Password), ..ROW },
        Route { method: "GET", path: "/console/data", group: Console, name: "GET /console/data",
                access: Page, handler: Handler::Console(P::Data), ..ROW },
        Route { method: "GET", path: "/console/data/{indicator}", group: Console, name: "GET /console/data/{indicator}",
                access: Page, handler: Handler::Console(P::Indicator), ..ROW },
        Route { method: "GET", path: "/console/genome", group: Console, name: "GET /console/genome",
                access: Page, handler: Handler::Console(P::Genome), ..ROW },
        Route { method: "GET", path: "/console/upload", group: Console, name: "GET /console/upload",
                access: Page, handler: Handler::Console(P::Upload), ..ROW },
        Route { method: "POST", path: "/console/uploads", group: Console, name: "POST /console/uploads",
                access: Page, handler: Handler::Console(P::UploadCreate), ..ROW },
        Route { method: "GET", path: "/console/uploads/{id}", group: Console, name: "GET /console/uploads/{id}",
                access: Page, handler: Handler::Console(P::UploadStatus), ..ROW },
        Route { method: "GET", path: "/console/connect", group: Console, name: "GET /console/connect",
                access: Page, handler: Handler::Console(P::Connect), ..ROW },
        Route { method: "POST", path: "/console/connect/url", group: Console, name: "POST /console/connect/url",
                access: Page, handler: Handler::Console(P::UrlCreate), ..ROW },
        Route { method: "POST", path: "/console/connect/url/revoke", group: Console, name: "POST /console/connect/url/revoke",
                access: Page, handler: Handler::Console(P::UrlRevoke), ..ROW },
        Route { method: "GET", path: "/console/servers", group: Console, name: "GET /console/servers",
                access: Page, handler: Handler::Console(P::Servers), ..ROW },
        Route { method: "POST", path: "/console/servers", group: Console, name: "POST /console/servers",
                access: Page, handler: Handler::Console(P::ServerAdd), max_body: REGISTRY_BODY, ..ROW },
        Route { method: "GET", path: "/console/servers/{name}", group: Console, name: "GET /console/servers/{name}",
                access: Page, handler: Handler::Console(P::ServerEditForm), ..ROW },
        Route { method: "POST", path: "/console/servers/{name}", group: Console, name: "POST /console/servers/{name}",
                access: Page, handler: Handler::Console(P::ServerEdit), max_body: REGISTRY_BODY, ..ROW },
        Route { method: "POST", path: "/console/servers/{name}/toggle", group: Console, name: "POST /console/servers/{name}/toggle",
                access: Page, handler: Handler::Console(P::ServerToggle), ..ROW },
        Route { method: "POST", path: "/console/servers/{name}/probe", group: Console, name: "POST /console/servers/{name}/probe",
                access: Page, handler: Handler::Console(P::ServerProbe), ..ROW },
        Route { method: "POST", path: "/console/servers/{name}/delete", group: Console, name: "POST /console/servers/{name}/delete",
                access: Page, handler: Handler::Console(P::ServerDelete), ..ROW },
        Route { method: "GET", path: "/console/access", group: Console, name: "GET /console/access",
                access: Page, handler: Handler::Console(P::Access), ..ROW },
        Route { method: "POST", path: "/console/access/grants/{client_id}/revoke", group: Console, name: "POST /console/access/grants/{client_id}/revoke",
                access: Page, handler: Handler::Console(P::GrantRevoke), ..ROW },
        Route { method: "POST", path: "/console/access/shares", group: Console, name: "POST /console/access/shares",
                access: Page, handler: Handler::Console(P::ShareOffer), ..ROW },
        Route { method: "POST", path: "/console/access/invitations/accept", group: Console, name: "POST /console/access/invitations/accept",
                access: Page, handler: Handler::Console(P::InvitationAccept), ..ROW },
        Route { method: "POST", path: "/console/access/shares/revoke", group: Console, name: "POST /console/access/shares/revoke",
                access: Page, handler: Handler::Console(P::ShareRevoke), ..ROW },
        Route { method: "POST", path: "/console/access/urls/revoke", group: Console, name: "POST /console/access/urls/revoke",
                access: Page, handler: Handler::Console(P::TemporaryUrlRevoke), ..ROW },
        Route { method: "POST", path: "/console/access/signout-all", group: Console, name: "POST /console/access/signout-all",
                access: Page, handler: Handler::Console(P::SignOutAll), ..ROW },
        Route { method: "GET", path: "/console/account", group: Console, name: "GET /console/account",
                access: Page, handler: Handler::Console(P::Account), ..ROW },
        Route { method: "GET", path: "/console/account/export", group: Console, name: "GET /console/account/export",
                access: Page, handler: Handler::Console(P::Export), ..ROW },
        Route { method: "POST", path: "/console/account/delete-data", group: Console, name: "POST /console/account/delete-data",
                access: Page, handler: Handler::Console(P::DeleteData), ..ROW },
        Route { method: "POST", path: "/console/account/delete", group: Console, name: "POST /console/account/delete",
                access: Page, handler: Handler::Console(P::DeleteAccount), ..ROW },

        // The authorization server: its metadata at three paths, the resource metadata.
        Route { method: "GET", path: "/.well-known/oauth-authorization-server", group: Oauth,
                name: "GET /.well-known/oauth-authorization-server", access: Open,
                handler: OAuthMetadata, ..ROW },
        Route { method: "GET", path: "/.well-known/oauth-authorization-server/mcp", group: Oauth,
                name: "GET /.well-known/oauth-authorization-server", access: Open,
                handler: OAuthMetadata, ..ROW },
        Route { method: "GET", path: "/.well-known/mcp-configuration", group: Oauth,
                name: "GET /.well-known/oauth-authorization-server", access: Open,
                handler: OAuthMetadata, ..ROW },
        Route { method: "GET", path: RESOURCE_METADATA, group: Oauth,
                name: "GET /.well-known/oauth-protected-resource", access: Open,
                handler: ResourceMetadata, ..ROW },
        Route { method: "GET", path: "/.well-known/oauth-protected-resource/mcp",
                prefix: After(RESOURCE_METADATA), group: Oauth,
                name: "GET /.well-known/oauth-protected-resource", access: Open,
                handler: ResourceMetadata, ..ROW },
        Route { method: "OPTIONS", path: "/.well-known/oauth-authorization-server", group: Oauth,
                name: "OPTIONS /oauth/*", access: Open, handler: Preflight, ..ROW },
        Route { method: "OPTIONS", path: "/.well-known/oauth-authorization-server/mcp",
                group: Oauth, name: "OPTIONS /oauth/*", access: Open, handler: Preflight, ..ROW },
        Route { method: "OPTIONS", path: "/.well-known/mcp-configuration", group: Oauth,
                name: "OPTIONS /oauth/*", access: Open, handler: Preflight, ..ROW },
        Route { method: "OPTIONS", path: RESOURCE_METADATA, group: Oauth, name: "OPTIONS /oauth/*",
                access: Open, handler: Preflight, ..ROW },
        Route { method: "OPTIONS", path: "/.well-known/oauth-protected-resource/mcp",
                prefix: After(RESOURCE_METADATA), group: Oauth, name: "OPTIONS /oauth/*",
                access: Open, handler: Preflight, ..ROW },

        // The authorization server's endpoints (`/oauth2/authorize` is the seed's alias).
        Route { method: "POST", path: "/oauth/register", group: Oauth, name: "POST /oauth/register",
                access: Open, handler: OAuthRegister, ..ROW },
        Route { method: "OPTIONS", path: "/oauth/register", group: Oauth, name: "OPTIONS /oauth/*",
                access: Open, handler: Preflight, ..ROW },
        Route { method: "GET", path: "/oauth/authorize", group: Oauth, name: "GET /oauth/authorize",
                access: Form, handler: AuthorizePage, ..ROW },
        Route { method: "POST", path: "/oauth/authorize", group: Oauth,
                name: "POST /oauth/authorize", access: Form, handler: AuthorizeSubmit,
                ..ROW },
        Route { method: "GET", path: "/oauth2/authorize", group: Oauth,
                name: "GET /oauth/authorize", access: Form, handler: AuthorizePage, ..ROW },
        Route { method: "POST", path: "/oauth2/authorize", group: Oauth,
                name: "POST /oauth/authorize", access: Form, handler: AuthorizeSubmit,
                ..ROW },
        Route { method: "POST", path: "/oauth/token", group: Oauth, name: "POST /oauth/token",
                access: Open, handler: OAuthToken, ..ROW },
        Route { method: "OPTIONS", path: "/oauth/token", group: Oauth, name: "OPTIONS /oauth/*",
                access: Open, handler: Preflight, ..ROW },
        Route { method: "POST", path: "/oauth/introspect", group: Oauth,
                name: "POST /oauth/introspect", access: Open, handler: OAuthIntrospect, ..ROW },
        Route { method: "OPTIONS", path: "/oauth/introspect", group: Oauth,
                name: "OPTIONS /oauth/*", access: Open, handler: Preflight, ..ROW },
        Route { method: "POST", path: "/oauth/revoke", group: Oauth, name: "POST /oauth/revoke",
                access: Open, handler: OAuthRevoke, ..ROW },
        Route { method: "OPTIONS", path: "/oauth/revoke", group: Oauth, name: "OPTIONS /oauth/*",
                access: Open, handler: Preflight, ..ROW },
        Route { method: "GET", path: "/mcplogin", group: Oauth, name: "GET /mcplogin",
                access: Form, handler: McpLoginPage, ..ROW },
        Route { method: "POST", path: "/mcplogin", group: Oauth, name: "POST /mcplogin",
                access: Form, handler: McpLoginSubmit, ..ROW },
    ]
};

/// A request's route with the values of its path parameters. Its `Debug` shows the
/// route's name only: a parameter may be a secret.
#[derive(Clone)]
pub struct Matched<'p> {
    pub(crate) route: &'static Route,
    params: Vec<(&'static str, &'p str)>,
}

impl<'p> Matched<'p> {
    /// The value of `{name}` in the path, if the route's path has it.
    pub(crate) fn param(&self, name: &str) -> Option<&'p str> {
        self.params
            .iter()
            .find(|(param, _)| *param == name)
            .map(|(_, value)| *value)
    }
}

impl std::fmt::Debug for Matched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.route.name)
    }
}

/// What the table says about a request's method and path.
#[derive(Debug, Clone)]
pub enum Resolved<'p> {
    Route(Matched<'p>),
    /// A known path with a method it does not serve: the methods it does, for `Allow`.
    /// (`App::handle` answers it with 404, as it always has.)
    MethodNotAllowed(String),
    NotFound,
}

impl Resolved<'_> {
    /// The group whose function serves the route; `None` when nothing does.
    pub fn group(&self) -> Option<RouteGroup> {
        match self {
            Resolved::Route(matched) => Some(matched.route.group),
            _ => None,
        }
    }
}

/// Finds the route for `method` and `path` with the configured prefix. Trailing slashes
/// are ignored; paths outside the prefix are tried first. Builds a [`Router`] per call:
/// the app builds one once and calls [`Router::resolve`].
pub fn resolve<'p>(method: &Method, path: &'p str, prefix: &str) -> Resolved<'p> {
    Router::new(prefix).resolve(method, path)
}

/// The route table compiled for one prefix, built once per process: the rows without a
/// path parameter by the exact path they answer (one hash look-up), and the few rows
/// with one, tried in table order. Answers exactly as a scan of the rows in order would.
pub(crate) struct Router {
    prefix: String,
    /// Full path (prefix placed) → indices into [`ROUTES`] of the rows without a
    /// parameter that answer it, in table order.
    exact: HashMap<String, Vec<usize>>,
    /// The rows whose path has a `{param}`, in table order: the index and the literal
    /// start of the full path (prefix placed), which a request path must begin with.
    patterns: Vec<(usize, String)>,
}

impl Router {
    pub(crate) fn new(prefix: &str) -> Router {
        let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
        let mut patterns = Vec::new();
        for (index, route) in ROUTES.iter().enumerate() {
            let full = match route.prefix {
                Prefix::Never => route.path.to_string(),
                Prefix::Leading => format!("{prefix}{}", route.path),
                Prefix::After(head) => {
                    format!("{head}{prefix}{}", &route.path[head.len()..])
                }
            };
            match full.find('{') {
                Some(at) => patterns.push((index, full[..at].to_string())),
                None => exact.entry(full).or_default().push(index),
            }
        }
        Router {
            prefix: prefix.to_string(),
            exact,
            patterns,
        }
    }

    pub(crate) fn resolve<'p>(&self, method: &Method, path: &'p str) -> Resolved<'p> {
        let path = if path.len() > 1 {
            path.trim_end_matches('/')
        } else {
            path
        };
        let exact = self.exact.get(path).map(Vec::as_slice).unwrap_or_default();
        for under_prefix in [false, true] {
            let in_pass =
                |index: &usize| (ROUTES[*index].prefix == Prefix::Leading) == under_prefix;
            // The rows that answer this path, in table order, with their parameters.
            let mut found: Vec<(usize, Vec<(&'static str, &'p str)>)> = exact
                .iter()
                .filter(|index| in_pass(index))
                .map(|&index| (index, Vec::new()))
                .collect();
            for (index, head) in &self.patterns {
                if !in_pass(index) || !path.starts_with(head.as_str()) {
                    continue;
                }
                let index = *index;
                if let Some(params) = captures(&ROUTES[index], &self.prefix, path) {
                    found.push((index, params));
                }
            }
            found.sort_by_key(|(index, _)| *index);
            let mut allowed: Vec<&str> = Vec::new();
            for (index, params) in found {
                let route = &ROUTES[index];
                if route.method == method.as_str() {
                    return Resolved::Route(Matched { route, params });
                }
                if !allowed.contains(&route.method) {
                    allowed.push(route.method);
                }
            }
            if !allowed.is_empty() {
                return Resolved::MethodNotAllowed(allowed.join(", "));
            }
        }
        Resolved::NotFound
    }
}

/// The path parameters when `path` is the route's path with the prefix placed by its rule.
fn captures<'p>(
    route: &Route,
    prefix: &str,
    path: &'p str,
) -> Option<Vec<(&'static str, &'p str)>> {
    let (head, inserted) = match route.prefix {
        Prefix::Never => ("", ""),
        Prefix::Leading => ("", prefix),
        Prefix::After(head) => (head, prefix),
    };
    let rest = path.strip_prefix(head)?.strip_prefix(inserted)?;
    let template = &route.path[head.len()..];
    // Most paths have no parameter: one comparison.
    let Some(literal) = template.find('{') else {
        return (rest == template).then(Vec::new);
    };
    if !rest.starts_with(&template[..literal]) {
        return None;
    }
    let mut template = template.split('/');
    let mut segments = rest.split('/');
    let mut params = Vec::new();
    loop {
        match (template.next(), segments.next()) {
            (None, None) => return Some(params),
            (Some(part), Some(segment)) => {
                match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(name) if !segment.is_empty() => params.push((name, segment)),
                    Some(_) => return None,
                    None if part == segment => {}
                    None => return None,
                }
            }
            _ => return None,
        }
    }
}

/// The methods a route's path is served with, except by `excluded` (for an `Allow` header).
pub(crate) fn methods_at(route: &Route, excluded: Handler) -> String {
    let mut methods: Vec<&str> = Vec::new();
    for other in ROUTES {
        let same = other.path == route.path && other.prefix == route.prefix;
        if same && other.handler != excluded && !methods.contains(&other.method) {
            methods.push(other.method);
        }
    }
    methods.join(", ")
}

/// Every deployed (method, path without the prefix, group): what `template.yaml`
/// routes and the sample events exercise.
pub fn templates() -> impl Iterator<Item = (&'static str, &'static str, RouteGroup)> {
    ROUTES
        .iter()
        .filter(|route| route.deployed)
        .map(|route| (route.method, route.path, route.group))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table scanned row by row in order: what [`Router`] must answer identically.
    fn scan<'p>(method: &Method, path: &'p str, prefix: &str) -> Resolved<'p> {
        let path = if path.len() > 1 {
            path.trim_end_matches('/')
        } else {
            path
        };
        for under_prefix in [false, true] {
            let mut allowed: Vec<&str> = Vec::new();
            for route in ROUTES {
                if (route.prefix == Prefix::Leading) != under_prefix {
                    continue;
                }
                let Some(params) = captures(route, prefix, path) else {
                    continue;
                };
                if route.method == method.as_str() {
                    return Resolved::Route(Matched { route, params });
                }
                if !allowed.contains(&route.method) {
                    allowed.push(route.method);
                }
            }
            if !allowed.is_empty() {
                return Resolved::MethodNotAllowed(allowed.join(", "));
            }
        }
        Resolved::NotFound
    }

    fn outcome(resolved: Resolved<'_>) -> String {
        match resolved {
            Resolved::Route(matched) => format!("{} {:?}", matched.route.name, matched.params),
            Resolved::MethodNotAllowed(allow) => format!("405 {allow}"),
            Resolved::NotFound => "404".into(),
        }
    }

    #[test]
    fn the_compiled_router_answers_exactly_as_a_scan_of_the_rows() {
        let methods = ["GET", "POST", "DELETE", "PATCH", "OPTIONS", "PUT"];
        for prefix in [
            "",
            "/api",
            "/api/user",
            "/mcp",
            "/.well-known/oauth-protected-resource",
        ] {
            let router = Router::new(prefix);
            let mut paths: Vec<String> = vec!["/".into(), "".into(), "/nowhere".into()];
            for route in ROUTES {
                let concrete = route
                    .path
                    .replace("{secret}", "s3cr3t")
                    .replace("{state}", "st")
                    .replace("{name}", "srv");
                for base in [route.path.to_string(), concrete] {
                    paths.push(base.clone());
                    paths.push(format!("{prefix}{base}"));
                    paths.push(format!("{prefix}{base}/"));
                    paths.push(format!("{base}/extra"));
                    paths.push(format!(
                        "{RESOURCE_METADATA}{prefix}{}",
                        base.trim_start_matches(RESOURCE_METADATA)
                    ));
                }
            }
            for path in &paths {
                for method in methods {
                    let method = Method::from_bytes(method.as_bytes()).unwrap();
                    assert_eq!(
                        outcome(router.resolve(&method, path)),
                        outcome(scan(&method, path, prefix)),
                        "{method} {path} with prefix {prefix:?}"
                    );
                }
            }
        }
    }

    /// The route's name and its one path parameter, or `None` for no route.
    fn found<'p>(
        method: Method,
        path: &'p str,
        prefix: &str,
    ) -> Option<(&'static str, Option<&'p str>)> {
        match resolve(&method, path, prefix) {
            Resolved::Route(matched) => {
                let param = matched.params.first().map(|(_, value)| *value);
                Some((matched.route.name, param))
            }
            _ => None,
        }
    }

    #[test]
    fn mcp_routes_live_under_the_prefix() {
        assert_eq!(found(Method::POST, "/mcp", ""), Some(("POST /mcp", None)));
        assert_eq!(
            found(Method::POST, "/api/mcp", "/api"),
            Some(("POST /mcp", None))
        );
        assert_eq!(found(Method::POST, "/mcp", "/api"), None);
        assert_eq!(
            found(Method::POST, "/api/mcp/s3cr3t", "/api"),
            Some(("POST /mcp/{secret}", Some("s3cr3t")))
        );
        assert_eq!(found(Method::GET, "/mcp/", ""), Some(("GET /mcp", None)));
        assert_eq!(found(Method::POST, "/mcp/a/b", ""), None);
        assert_eq!(found(Method::POST, "/mcp/", ""), Some(("POST /mcp", None)));
        assert_eq!(
            found(Method::POST, "/api/personal/mcp", "/api"),
            Some(("POST /personal/mcp", None))
        );
    }

    #[test]
    fn well_known_documents_and_apis_never_take_the_prefix() {
        for path in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/mcp-configuration",
            "/.well-known/oauth-protected-resource",
            "/oauth/token",
            "/api/data",
        ] {
            let method = if path.starts_with("/oauth") {
                Method::POST
            } else {
                Method::GET
            };
            assert!(found(method.clone(), path, "/api").is_some(), "{path}");
            assert!(
                found(method, &format!("/api{path}"), "/api").is_none(),
                "{path}"
            );
        }
        // RFC 9728: the prefixed resource's metadata has the prefix after the well-known name.
        let name = Some(("GET /.well-known/oauth-protected-resource", None));
        assert_eq!(
            found(
                Method::GET,
                "/.well-known/oauth-protected-resource/api/mcp",
                "/api"
            ),
            name
        );
        assert_eq!(
            found(
                Method::GET,
                "/.well-known/oauth-protected-resource/mcp",
                "/api"
            ),
            None
        );
        assert_eq!(
            found(Method::GET, "/.well-known/oauth-protected-resource/mcp", ""),
            name
        );
    }

    #[test]
    fn aliases_share_their_names() {
        assert_eq!(
            found(Method::GET, "/oauth2/authorize", ""),
            Some(("GET /oauth/authorize", None))
        );
        assert_eq!(
            found(Method::POST, "/api/user/mcp", ""),
            Some(("GET|POST /api/user/mcp", None))
        );
        assert_eq!(
            found(Method::OPTIONS, "/mcp/s3cr3t", ""),
            Some(("OPTIONS /mcp", Some("s3cr3t")))
        );
        assert_eq!(
            found(Method::GET, "/.well-known/mcp-configuration", ""),
            Some(("GET /.well-known/oauth-authorization-server", None))
        );
    }

    #[test]
    fn a_parameter_is_one_non_empty_segment() {
        let probe = Some(("POST /api/user/mcp-servers/{name}/probe", Some("shop")));
        assert_eq!(
            found(Method::POST, "/api/user/mcp-servers/shop/probe/", ""),
            probe
        );
        assert_eq!(
            found(Method::GET, "/api/user/mcp-servers/probe", ""),
            Some(("GET /api/user/mcp-servers/{name}", Some("probe")))
        );
        assert_eq!(
            found(Method::POST, "/api/user/mcp-servers//probe", ""),
            None
        );
        assert_eq!(found(Method::GET, "/api/user/mcp-servers/a/b", ""), None);
        assert_eq!(found(Method::GET, "/oauth2/check_state/", ""), None);
        assert_eq!(found(Method::GET, "/oauth2/check_state/a/b", ""), None);
    }

    #[test]
    fn a_known_path_with_another_method_lists_the_methods_it_serves() {
        let allow = |method: Method, path: &str| match resolve(&method, path, "") {
            Resolved::MethodNotAllowed(allow) => allow,
            other => panic!("{method} {path}: {other:?}"),
        };
        assert_eq!(allow(Method::PUT, "/api/data"), "GET, DELETE");
        assert_eq!(allow(Method::GET, "/api/data/health"), "POST");
        assert_eq!(
            allow(Method::GET, "/api/user/mcp-servers/shop/probe"),
            "POST"
        );
        assert_eq!(
            allow(Method::POST, "/api/user/mcp-servers/shop"),
            "GET, PATCH, DELETE"
        );
        assert_eq!(allow(Method::GET, "/oauth/token"), "POST, OPTIONS");
        assert_eq!(allow(Method::PUT, "/personal/mcp"), "POST, DELETE, OPTIONS");
        assert!(matches!(
            resolve(&Method::GET, "/nowhere", ""),
            Resolved::NotFound
        ));
    }

    #[test]
    fn a_prefix_never_hides_a_fixed_path() {
        assert_eq!(
            found(Method::GET, "/api/user/mcp", "/api/user"),
            Some(("GET|POST /api/user/mcp", None))
        );
        assert!(matches!(
            resolve(&Method::DELETE, "/api/user/mcp", "/api/user"),
            Resolved::MethodNotAllowed(_)
        ));
    }

    #[test]
    fn the_placeholder_allows_what_mcp_answers() {
        let get = ROUTES.iter().find(|r| r.name == "GET /mcp").unwrap();
        assert_eq!(methods_at(get, Handler::McpPlaceholder), "POST, OPTIONS");
    }

    #[test]
    fn every_route_table_entry_routes_to_its_own_group() {
        for (method, path, group) in templates() {
            let method: Method = method.parse().unwrap();
            let path = path
                .replace("{secret}", "s3cr3t")
                .replace("{state}", "st4te")
                .replace("{name}", "shop");
            assert_eq!(
                resolve(&method, &path, "").group(),
                Some(group),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn rows_are_well_formed_and_distinct() {
        for (i, route) in ROUTES.iter().enumerate() {
            assert!(route.path.starts_with('/'), "{}", route.path);
            assert!(route.group != RouteGroup::All, "{}: no group", route.path);
            // The name starts with the method(s) it stands for (aliases share one name).
            let (methods, _) = route.name.split_once(' ').unwrap_or_default();
            assert!(
                methods.split('|').any(|m| m == route.method),
                "{}",
                route.name
            );
            assert_eq!(
                route.handler == Handler::Preflight,
                route.method == "OPTIONS",
                "{}",
                route.name
            );
            if let Prefix::After(head) = route.prefix {
                assert!(
                    route.path.starts_with(head) && !head.contains('{'),
                    "{}",
                    route.path
                );
            }
            let twin = ROUTES[..i].iter().any(|other| {
                other.method == route.method
                    && other.path == route.path
                    && other.prefix == route.prefix
            });
            assert!(!twin, "{} {} twice", route.method, route.path);
        }
    }

    #[test]
    fn route_names_never_show_the_secret() {
        let Resolved::Route(matched) = resolve(&Method::POST, "/mcp/top-secret-value", "") else {
            panic!("no route");
        };
        let shown = format!("{matched:?} {}", matched.route.name);
        assert!(!shown.contains("top-secret-value"));
    }
}
