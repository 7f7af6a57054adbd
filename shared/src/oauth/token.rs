//! `POST /oauth/token`: client authentication (none, `client_secret_post`,
//! `client_secret_basic`), then the authorization code grant with PKCE S256, refresh
//! tokens with rotation and reuse detection (a rotated token that comes back revokes its
//! family); `client_credentials` is answered `unsupported_grant_type`, even for a client
//! registered with it. Refresh tokens are stored hashed.
//!
//! Does not show pages and never logs a code, a token or a secret.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, Response, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    ACCESS_TOKEN_SECS, Form, OAuthApi, REFRESH_TOKEN_SECS, field, form, no_store, oauth_error,
    unavailable,
};
use crate::domain::{OAuthClient, RefreshRecord, RefreshUse, TokenState};
use crate::http as web;
use crate::identity::{Grant, TokenKind, random_secret, secret_hash};
use crate::store::TokenChange;

/// PKCE S256: BASE64URL(SHA256(verifier)) == challenge, verifier 43-128 unreserved characters.
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let valid = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    valid && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

impl OAuthApi {
    /// The client making a token (or introspection) request: authenticated when
    /// confidential.
    pub(super) async fn client(
        &self,
        request: &Request<Bytes>,
        params: &Form,
    ) -> Result<OAuthClient, Response<Bytes>> {
        let invalid = || {
            oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client authentication failed",
            )
        };
        let basic = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|v| STANDARD.decode(v.trim()).ok())
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|v| {
                let (id, secret) = v.split_once(':')?;
                let decode = |s: &str| {
                    form_urlencoded::parse(format!("x={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                };
                Some((decode(id)?, decode(secret)?))
            });
        let (client_id, secret) = match (&basic, field(params, "client_id")) {
            (Some((id, secret)), _) => (id.clone(), Some(secret.clone())),
            (None, Some(id)) => (
                id.to_string(),
                field(params, "client_secret").map(String::from),
            ),
            (None, None) => return Err(invalid()),
        };
        let client = match self.load_client(&client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(invalid()),
            Err(e) => return Err(unavailable(e)),
        };
        match (&client.secret_hash, secret) {
            (None, _) => {}
            (Some(hash), Some(secret)) if secret_hash(&secret) == *hash => {}
            _ => return Err(invalid()),
        }
        self.keep_client(&client).await;
        Ok(client)
    }

    /// `POST /oauth/token`.
    pub(crate) async fn token(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = form(request.body());
        let client = match self.client(request, &params).await {
            Ok(client) => client,
            Err(response) => return response,
        };
        let grant_type = field(&params, "grant_type").unwrap_or("");
        let now = self.clock.now();
        let permitted = client.grant_types.iter().any(|g| g == grant_type);
        match (grant_type, permitted) {
            ("authorization_code", true) => self.exchange_code(&client, &params, now).await,
            ("refresh_token", true) => self.refresh(&client, &params, now).await,
            ("authorization_code" | "refresh_token", false) => oauth_error(
                StatusCode::BAD_REQUEST,
                "unauthorized_client",
                "this client may not use that grant",
            ),
            // Even for a client registered with it: an app's own token has
            // nothing here to reach, so the grant is not offered at all.
            ("client_credentials", _) => oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "client_credentials is not supported: every resource here is a person's; use authorization_code",
            ),
            _ => oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "unsupported grant_type",
            ),
        }
    }

    /// RFC 8707: a requested resource must be this server's MCP endpoint.
    fn audience(&self, resource: Option<&str>) -> Option<String> {
        match resource {
            None => Some(self.resource.clone()),
            Some(r) if r == self.resource => Some(r.to_string()),
            Some(_) => None,
        }
    }

    async fn exchange_code(
        &self,
        client: &OAuthClient,
        params: &Form,
        now: u64,
    ) -> Response<Bytes> {
        let Some(code) = field(params, "code") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "code is missing",
            );
        };
        let record = match self.store.take_code(&secret_hash(code), now).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "the code is invalid, expired or already used",
                );
            }
            Err(e) => return unavailable(e),
        };
        if record.client_id != client.client_id {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the code was issued to another client",
            );
        }
        if field(params, "redirect_uri") != Some(record.redirect_uri.as_str()) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "redirect_uri does not match the authorization request",
            );
        }
        let Some(verifier) = field(params, "code_verifier") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "code_verifier is required (PKCE)",
            );
        };
        if !pkce_matches(verifier, &record.code_challenge) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "code_verifier does not match the code_challenge",
            );
        }
        let requested = field(params, "resource");
        if requested.is_some()
            && record.resource.is_some()
            && requested != record.resource.as_deref()
        {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource differs from the authorization request",
            );
        }
        let audience = match self.audience(requested.or(record.resource.as_deref())) {
            Some(audience) => audience,
            None => return wrong_target(),
        };
        // A code made before the user's sign-out everywhere, password
        // change or reset, or before they withdrew this client, grants nothing.
        let stamp = Stamp {
            epoch: record.epoch,
            issued_at: record.issued_at,
            client_id: &record.client_id,
            family: None,
        };
        if let Some(refused) = self.refused_if_ended(&record.user_id, &stamp).await {
            return refused;
        }
        // The user's grants list shows this client from now on; the family starts at
        // the user's current epoch.
        let grant = TokenChange::Grant {
            client_id: client.client_id.clone(),
            client_name: client.client_name.clone(),
            scope: record.scope.clone(),
        };
        let state = match self.store.change_tokens(&record.user_id, &grant, now).await {
            Ok(state) => state,
            Err(e) => return unavailable(e),
        };
        let refresh = RefreshRecord {
            user_id: record.user_id.clone(),
            client_id: client.client_id.clone(),
            scope: record.scope.clone(),
            resource: Some(audience),
            family_id: random_secret(16),
            expires_at: now + REFRESH_TOKEN_SECS,
            epoch: state.epoch,
            issued_at: now,
        };
        self.issue_pair(&refresh, now).await
    }

    async fn refresh(&self, client: &OAuthClient, params: &Form, now: u64) -> Response<Bytes> {
        let Some(token) = field(params, "refresh_token") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "refresh_token is missing",
            );
        };
        match self.store.use_refresh(&secret_hash(token), now).await {
            Ok(RefreshUse::Fresh(record)) if record.client_id == client.client_id => {
                if let Some(refused) = self
                    .refused_if_ended(&record.user_id, &Stamp::of_family(&record))
                    .await
                {
                    return refused;
                }
                let next = RefreshRecord {
                    expires_at: now + REFRESH_TOKEN_SECS,
                    ..record
                };
                self.issue_pair(&next, now).await
            }
            Ok(RefreshUse::Fresh(_)) => oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the refresh token belongs to another client",
            ),
            Ok(RefreshUse::Reused(record)) => {
                // Reuse detection: a rotated token came back, so its whole family is revoked.
                if let Err(e) = self
                    .store
                    .revoke_refresh_family(&record.family_id, now + REFRESH_TOKEN_SECS)
                    .await
                {
                    return unavailable(e);
                }
                oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "the refresh token was already used; sign in again",
                )
            }
            Ok(RefreshUse::Unknown) => oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the refresh token is invalid or expired",
            ),
            Err(e) => unavailable(e),
        }
    }

    async fn issue_pair(&self, refresh: &RefreshRecord, now: u64) -> Response<Bytes> {
        let refresh_token = random_secret(32);
        if let Err(e) = self
            .store
            .put_refresh(&secret_hash(&refresh_token), refresh)
            .await
        {
            return unavailable(e);
        }
        let access = self.jwts.issue(&Grant {
            kind: TokenKind::Access,
            subject: &refresh.user_id,
            audience: refresh.resource.as_deref(),
            scope: Some(&refresh.scope),
            client_id: Some(&refresh.client_id),
            lifetime_secs: ACCESS_TOKEN_SECS,
            now,
            epoch: refresh.epoch,
            sid: Some(&refresh.family_id),
        });
        token_response(json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_SECS,
            "refresh_token": refresh_token,
            "scope": refresh.scope
        }))
    }
}

/// What a code or a refresh family was made under: the user's epoch then, when, for
/// which client, and (a family) its id.
struct Stamp<'a> {
    epoch: u64,
    issued_at: u64,
    client_id: &'a str,
    family: Option<&'a str>,
}

impl<'a> Stamp<'a> {
    fn of_family(record: &'a RefreshRecord) -> Self {
        Stamp {
            epoch: record.epoch,
            issued_at: record.issued_at,
            client_id: &record.client_id,
            family: Some(&record.family_id),
        }
    }
}

/// Whether the user ended what `stamp` was made under since: signed out everywhere,
/// changed or reset the password (a newer epoch), deleted the account, withdrew the
/// client's grant at or after it, or revoked the family.
fn ended(state: &TokenState, stamp: &Stamp<'_>) -> bool {
    stamp.epoch < state.epoch
        || state.deleted()
        || state
            .revoked_clients
            .get(stamp.client_id)
            .is_some_and(|&at| at >= stamp.issued_at)
        || stamp
            .family
            .is_some_and(|family| state.revoked_sessions.contains_key(family))
}

impl OAuthApi {
    /// `invalid_grant` when the user ended what `stamp` was made under (one read of the
    /// user's token state; a store failure answers 503), else `None`.
    async fn refused_if_ended(&self, user_id: &str, stamp: &Stamp<'_>) -> Option<Response<Bytes>> {
        match self.store.token_state(user_id).await {
            Ok(state) if ended(&state, stamp) => Some(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the grant was revoked; sign in again",
            )),
            Ok(_) => None,
            Err(e) => Some(unavailable(e)),
        }
    }
}

fn wrong_target() -> Response<Bytes> {
    oauth_error(
        StatusCode::BAD_REQUEST,
        "invalid_target",
        "resource must be this server's MCP endpoint",
    )
}

fn token_response(body: Value) -> Response<Bytes> {
    let mut response = no_store(web::json(StatusCode::OK, &body));
    response
        .headers_mut()
        .insert("pragma", HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deleted account's refresh families are all ended, whatever epoch
    /// they carry.
    #[test]
    fn a_deleted_accounts_refresh_families_are_ended() {
        let tombstone = TokenState {
            epoch: TokenState::DELETED_EPOCH,
            ..TokenState::default()
        };
        for epoch in [0, 3, TokenState::DELETED_EPOCH] {
            let record = RefreshRecord {
                user_id: "u".into(),
                client_id: "c".into(),
                scope: "mcp:tools".into(),
                resource: None,
                family_id: "f".into(),
                expires_at: 10,
                epoch,
                issued_at: 1,
            };
            assert!(
                ended(&tombstone, &Stamp::of_family(&record)),
                "epoch {epoch}"
            );
            assert!(
                !ended(&TokenState::default(), &Stamp::of_family(&record)),
                "live account"
            );
        }
    }

    #[test]
    fn pkce_s256_matches_a_known_pair() {
        let verifier = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ";
        assert!(pkce_matches(
            verifier,
            "NE2XJ59GphBVFt4KUjGdI4VnkWDNnYoWui8kGu3L2Wo"
        ));
        assert!(!pkce_matches(
            verifier,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!pkce_matches(
            "short",
            "NE2XJ59GphBVFt4KUjGdI4VnkWDNnYoWui8kGu3L2Wo"
        ));
    }
}
