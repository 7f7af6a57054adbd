//! Caller resolution: turns a request's credentials into the user a tool or an API
//! acts for.
//!
//! Owns the order: the `Authorization` bearer JWT, then the MCP URL's secret, else
//! anonymous; a bearer token that does not verify, or that its user ended (signed out,
//! signed out everywhere, changed the password, withdrew the client's grant: one read
//! of the user's token state), is refused (401 with a challenge pointing at the
//! protected resource metadata), never treated as anonymous. Owns the
//! one check of a token's kind and scope against the route's `accepts` ([`admit`]):
//! a valid token the route does not take is 403 `insufficient_scope`. Does not know
//! which tools exist or what a caller may see; never logs a token or a secret. Notes the
//! caller's kind (and user id, hashed before it is logged) on the request's observation
//! context.
//!
//! [`admit`]: CallerResolver::admit

use std::sync::Arc;

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderValue, StatusCode};

use super::jwt::{Claims, TokenKind};
use super::{Jwts, McpUrls};
use crate::clock::Clock;
use crate::domain::Delegation;
use crate::http::{Accepts, ApiError};
use crate::observe::{self, CallerKind};
use crate::store::AccountStore;

/// The user a tool acts for, as resolved by the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    pub user_id: String,
    /// Set by a temporary URL: the conversation it was minted for.
    pub session_id: Option<String>,
    /// Set by a temporary URL: narrows the tools to this agent's allowed and disallowed lists.
    pub agent: Option<String>,
    /// Set by a grantee's delegated URL (B2): `user_id` is the owner whose data the
    /// grantee reaches, with this permission, and never the owner's external servers.
    pub delegation: Option<Delegation>,
    /// Whether the credential may reach the user's own MCP servers with the credentials
    /// stored for them: the person's own session and URLs; an app's
    /// token only when the person granted [`SERVERS_SCOPE`] (the login prompt's token
    /// never does).
    pub servers: bool,
}

/// The scope that lets an app's token reach the person's own MCP servers, beside
/// `mcp:tools` for the built-in tools.
pub(crate) const SERVERS_SCOPE: &str = "mcp:servers";

impl Caller {
    pub(crate) fn user(user_id: impl Into<String>) -> Self {
        Caller {
            user_id: user_id.into(),
            session_id: None,
            agent: None,
            delegation: None,
            servers: true,
        }
    }

    /// Whether the owner's external MCP servers (and the credentials they are called
    /// with) are reachable: for the owner's own credentials that carry the right to,
    /// never through a share.
    pub(crate) fn reaches_external_servers(&self) -> bool {
        self.delegation.is_none() && self.servers
    }
}

/// Who the `Authorization` header says the caller is.
enum Bearer {
    Absent,
    /// A token that verifies: what it may do is decided by [`CallerResolver::admit`].
    Token(Box<Claims>),
    /// A bearer token that does not verify: refused with 401, never treated as anonymous.
    Invalid,
    /// One signed with this server's key for another origin: refused with 401 that says so.
    OtherOrigin,
}

/// Resolves callers; built once per process. Without keys no token verifies and no URL
/// secret is known.
pub(crate) struct CallerResolver {
    jwts: Option<Arc<Jwts>>,
    urls: Option<Arc<McpUrls>>,
    clock: Arc<dyn Clock>,
    /// Where a person's token state is read: one read per request with a bearer token.
    tokens: Arc<dyn AccountStore>,
    /// A bearer token that does not verify.
    invalid_token: HeaderValue,
    /// `MIROBODY_REQUIRE_AUTH` and no credentials. No `error` (RFC 6750 section 3.1: the
    /// request had no authentication information); the scope a client should ask for, so
    /// it does not request every scope the metadata lists.
    sign_in: HeaderValue,
    resource_metadata_url: String,
}

impl CallerResolver {
    /// `resource_metadata_url`: where a 401's challenge points (RFC 9728); `tokens`:
    /// where revocations are read.
    pub(crate) fn new(
        jwts: Option<Arc<Jwts>>,
        urls: Option<Arc<McpUrls>>,
        clock: Arc<dyn Clock>,
        resource_metadata_url: &str,
        tokens: Arc<dyn AccountStore>,
    ) -> Self {
        let value = |text: String| {
            HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("Bearer"))
        };
        CallerResolver {
            jwts,
            urls,
            clock,
            tokens,
            invalid_token: value(format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{resource_metadata_url}\""
            )),
            sign_in: value(format!(
                "Bearer resource_metadata=\"{resource_metadata_url}\", scope=\"mcp:tools mcp:servers\""
            )),
            resource_metadata_url: resource_metadata_url.into(),
        }
    }

    /// The `Authorization` JWT: verified, then (a person's token) checked against the
    /// user's token state, one store read: a token the user ended is as invalid as a
    /// forged one.
    async fn bearer(&self, headers: &HeaderMap) -> Result<Bearer, ApiError> {
        let Some(value) = headers.get(AUTHORIZATION) else {
            return Ok(Bearer::Absent);
        };
        let Some(claims) = self.verified(value) else {
            let other = match (self.jwts.as_ref(), bearer_token(value)) {
                (Some(jwts), Some(token)) => jwts.for_another_origin(token),
                _ => false,
            };
            return Ok(if other {
                Bearer::OtherOrigin
            } else {
                Bearer::Invalid
            });
        };
        let state = self.tokens.token_state(&claims.sub).await?;
        if claims.ended_by(&state) {
            return Ok(Bearer::Invalid);
        }
        Ok(Bearer::Token(Box::new(claims)))
    }

    /// The claims of a bearer header value that verifies (signature, expiry, issuer,
    /// audience); nothing is read from the store.
    fn verified(&self, value: &HeaderValue) -> Option<Claims> {
        self.jwts.as_ref()?.verify(bearer_token(value)?).ok()
    }

    /// The console's session cookie: the claims of a person's session token that
    /// verifies and that its user did not end (the same token-state read as a bearer
    /// token). Any other kind of token is no session.
    pub(crate) async fn session_token(&self, token: &str) -> Result<Option<Claims>, ApiError> {
        let Some(jwts) = &self.jwts else {
            return Ok(None);
        };
        let claims = jwts.live_session(&*self.tokens, token).await?;
        if let Some(claims) = &claims {
            observe::note_caller(CallerKind::Session, &claims.sub);
        }
        Ok(claims)
    }

    /// The claims of the request's bearer token, for a handler whose route the door
    /// already admitted it to (sign-out names the token's session).
    pub(crate) fn claims(&self, headers: &HeaderMap) -> Option<Claims> {
        self.verified(headers.get(AUTHORIZATION)?)
    }

    /// The one check of a verified token against what the route takes: a person's
    /// session anywhere a person is needed; an access token only where the route names
    /// a scope, and only with that scope. (No kind stands for an app: the
    /// client-credentials grant is not offered, and a token saying `client` does not verify.)
    fn admit(&self, accepts: Accepts, claims: Claims) -> Result<Caller, ApiError> {
        let has = |wanted: &str| {
            claims
                .scope
                .as_deref()
                .is_some_and(|scope| scope.split_whitespace().any(|s| s == wanted))
        };
        let admitted = match (claims.kind, accepts) {
            (TokenKind::Session, _) => true,
            (TokenKind::Access, Accepts::SessionOrScope(needed)) => has(needed),
            (TokenKind::Access, Accepts::Session) => false,
        };
        let servers = claims.kind == TokenKind::Session || has(SERVERS_SCOPE);
        match admitted {
            true => {
                let kind = match claims.kind {
                    TokenKind::Session => CallerKind::Token,
                    TokenKind::Access => CallerKind::OAuthClient,
                };
                observe::note_caller(kind, &claims.sub);
                Ok(Caller {
                    servers,
                    ..Caller::user(claims.sub)
                })
            }
            false => Err(self.insufficient(accepts)),
        }
    }

    /// 403 for a valid token the route does not take (RFC 6750 section 3.1).
    fn insufficient(&self, accepts: Accepts) -> ApiError {
        let url = &self.resource_metadata_url;
        let (challenge, msg) = match accepts {
            Accepts::SessionOrScope(scope) => (
                format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{url}\""
                ),
                "this token does not carry the scope this endpoint needs",
            ),
            Accepts::Session => (
                "Bearer error=\"insufficient_scope\"".to_string(),
                "this endpoint takes only a person's own sign-in token, not an app's token",
            ),
        };
        let challenge = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static(
            "Bearer error=\"insufficient_scope\"",
        ));
        ApiError::Forbidden(msg, challenge)
    }

    /// A signed-in route's caller: a bearer token that verifies (else 401) and that the
    /// route takes (else 403).
    pub(crate) async fn signed_in(
        &self,
        headers: &HeaderMap,
        accepts: Accepts,
    ) -> Result<Caller, ApiError> {
        match self.bearer(headers).await? {
            Bearer::Token(claims) => self.admit(accepts, *claims),
            Bearer::Absent | Bearer::Invalid => Err(self.unauthorized()),
            Bearer::OtherOrigin => Err(self.other_origin()),
        }
    }

    /// The MCP endpoint's caller, in order: the JWT (if the route takes it), then the
    /// URL secret (temporary grants carry a session and an agent, a share's delegated
    /// grant its grantee and permission; personal ones neither), else anonymous.
    pub(crate) async fn resolve(
        &self,
        headers: &HeaderMap,
        secret: Option<&str>,
        accepts: Accepts,
    ) -> Result<Option<Caller>, ApiError> {
        match self.bearer(headers).await? {
            Bearer::Token(claims) => return self.admit(accepts, *claims).map(Some),
            Bearer::Invalid => return Err(self.unauthorized()),
            Bearer::OtherOrigin => return Err(self.other_origin()),
            Bearer::Absent => {}
        }
        let Some(secret) = secret else {
            return Ok(None);
        };
        let Some(urls) = &self.urls else {
            return Err(unknown_url());
        };
        match urls.grant(secret, self.clock.now()).await? {
            Some(grant) => {
                observe::note_caller(CallerKind::Url, &grant.user_id);
                Ok(Some(Caller {
                    user_id: grant.user_id,
                    session_id: grant.session_id,
                    agent: grant.agent_name,
                    delegation: grant.delegation,
                    servers: true,
                }))
            }
            None => Err(unknown_url()),
        }
    }

    /// 401 for a bearer token that is missing, expired or not ours.
    pub(crate) fn unauthorized(&self) -> ApiError {
        ApiError::Unauthorized(
            "a valid Bearer token is required (it is missing, expired or not ours)",
            self.invalid_token.clone(),
        )
    }

    /// 401 for a token signed with this server's key but for another origin: what a
    /// token printed by `mirobody-local mint-token` with another port's settings is.
    fn other_origin(&self) -> ApiError {
        ApiError::Unauthorized(
            "this token was issued for another origin (another port or public URL): mint it \
             with this server's own settings (HTTP_PORT, MCP_PUBLIC_URL), or sign in again",
            self.invalid_token.clone(),
        )
    }

    /// `MIROBODY_REQUIRE_AUTH`: 401 for a request without credentials.
    pub(crate) fn sign_in_required(&self) -> ApiError {
        ApiError::Unauthorized(
            "this server requires sign-in: send a Bearer token (OAuth, see WWW-Authenticate)",
            self.sign_in.clone(),
        )
    }
}

/// The token of an `Authorization: Bearer …` value.
fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let value = value.to_str().ok()?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
}

fn unknown_url() -> ApiError {
    ApiError::refused(
        StatusCode::NOT_FOUND,
        "this MCP URL is not valid (revoked or expired); ask for a new one",
    )
}
