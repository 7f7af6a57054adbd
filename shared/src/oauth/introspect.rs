//! `POST /oauth/introspect` (RFC 7662): whether a token this server signed is active,
//! and its claims. Accepts only this server's own JWTs.
//!
//! The caller must authenticate as a registered confidential client
//! (`client_secret_basic` or `client_secret_post`), or it gets 401 `invalid_client`
//! (RFC 7662 2.1: the endpoint must not be a token-scanning oracle). Registration is
//! open, so client authentication alone would only slow a scanner down; therefore an
//! authenticated client learns only about tokens issued to itself, and every other token
//! is `{"active": false}` (RFC 7662 2.2 lets the server answer inactive to a caller not
//! entitled to know). A bearer token was not chosen as the credential: this server's own
//! resource (`/mcp`) verifies its tokens itself and never introspects, and a bearer
//! token of a user would turn introspection into a way to read other tokens' claims.
//!
//! Reads the store for the client and, for a person's token, the user's revocations
//! (a token the user ended is inactive).

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use serde_json::json;

use super::{OAuthApi, field, form, no_store, oauth_error, unavailable};
use crate::http as web;

impl OAuthApi {
    /// `POST /oauth/introspect` (RFC 7662).
    pub(crate) async fn introspect(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = form(request.body());
        let client = match self.client(request, &params).await {
            Ok(client) if client.secret_hash.is_some() => client,
            Ok(_) => {
                return oauth_error(
                    StatusCode::UNAUTHORIZED,
                    "invalid_client",
                    "introspection requires a confidential client's authentication",
                );
            }
            Err(response) => return response,
        };
        let claims = match field(&params, "token").map(|t| self.jwts.verify(t)) {
            Some(Ok(claims)) if claims.client_id.as_deref() == Some(&client.client_id) => {
                Some(claims)
            }
            _ => None,
        };
        // A token the user ended (signed out, withdrew the grant) is inactive.
        let live = match &claims {
            Some(claims) => match self.store.token_state(&claims.sub).await {
                Ok(state) => !claims.ended_by(&state),
                Err(e) => return unavailable(e),
            },
            None => true,
        };
        let body = match claims.filter(|_| live) {
            Some(claims) => {
                let mut value = serde_json::to_value(&claims).unwrap_or_else(|_| json!({}));
                value["active"] = true.into();
                value["token_type"] = "Bearer".into();
                value
            }
            _ => json!({ "active": false }),
        };
        no_store(web::json(StatusCode::OK, &body))
    }
}
