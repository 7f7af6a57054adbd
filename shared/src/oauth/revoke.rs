//! `POST /oauth/revoke` (RFC 7009): a client ends a token it was issued. A refresh
//! token ends its whole family (and the family's live access tokens, which name it as
//! their session); an access token ends its own session.
//!
//! The client authenticates as at the token endpoint (a confidential client with its
//! secret; a public client, which has none, by its `client_id`: the token it presents
//! is the credential, and revocation only takes access away). The answer is 200 with
//! nothing revoked for a token that is unknown, expired or another client's (RFC 7009
//! 2.2), so the endpoint says nothing about other clients' tokens; presenting another
//! client's refresh token still marks it used, as presenting it at the token endpoint
//! would. `token_type_hint` is only a hint: both kinds are tried.
//!
//! Never logs a token.

use bytes::Bytes;
use http::{Request, Response, StatusCode};

use super::{
    ACCESS_TOKEN_SECS, OAuthApi, REFRESH_TOKEN_SECS, field, form, no_store, oauth_error,
    unavailable,
};
use crate::domain::RefreshUse;
use crate::http as web;
use crate::identity::{TokenKind, secret_hash};
use crate::store::TokenChange;

impl OAuthApi {
    /// `POST /oauth/revoke` (RFC 7009).
    pub(crate) async fn revoke(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = form(request.body());
        let client = match self.client(request, &params).await {
            Ok(client) => client,
            Err(response) => return response,
        };
        let Some(token) = field(&params, "token") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "token is missing",
            );
        };
        let now = self.clock.now();
        // An access token this server signed for this client: its session ends.
        if let Ok(claims) = self.jwts.verify(token) {
            if claims.kind == TokenKind::Access
                && claims.client_id.as_deref() == Some(&client.client_id)
                && let Some(sid) = claims.session_key()
            {
                let end = TokenChange::EndSession {
                    sid: sid.to_string(),
                    expires_at: claims.exp,
                };
                if let Err(e) = self.store.change_tokens(&claims.sub, &end, now).await {
                    return unavailable(e);
                }
            }
            return revoked();
        }
        // A refresh token: presenting it marks it used, and its family ends.
        let record = match self.store.use_refresh(&secret_hash(token), now).await {
            Ok(RefreshUse::Fresh(record) | RefreshUse::Reused(record)) => record,
            Ok(RefreshUse::Unknown) => return revoked(),
            Err(e) => return unavailable(e),
        };
        if record.client_id != client.client_id {
            return revoked();
        }
        if let Err(e) = self
            .store
            .revoke_refresh_family(&record.family_id, now + REFRESH_TOKEN_SECS)
            .await
        {
            return unavailable(e);
        }
        // The family's access tokens name it as their session.
        let end = TokenChange::EndSession {
            sid: record.family_id.clone(),
            expires_at: now + ACCESS_TOKEN_SECS,
        };
        match self.store.change_tokens(&record.user_id, &end, now).await {
            Ok(_) => revoked(),
            Err(e) => unavailable(e),
        }
    }
}

/// RFC 7009 2.2: 200 whether or not there was anything to revoke.
fn revoked() -> Response<Bytes> {
    no_store(web::empty(StatusCode::OK))
}
