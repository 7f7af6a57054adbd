//! `POST /oauth/register`: open dynamic client registration (RFC 7591). Checks the
//! token endpoint auth method, the grant types and the redirect URIs (required unless
//! the client asks for `client_credentials` only), then stores the client with its
//! secret hashed; the secret is shown once, in this response.
//!
//! Bounded: a body over the route's cap (16 KiB, the route table's default) is refused
//! (413) before it reaches here, redirect
//! URIs are at most 10 of at most 2,000 bytes each, names at most 100 characters, and
//! a source address may register [`REGISTRATIONS_PER_HOUR`] clients in this hour and
//! the one before together (429 with `Retry-After` after that; the counter is the
//! store's, keyed by a hash of the address).
//!
//! Does not issue tokens or codes.

use std::net::IpAddr;

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderValue, Response, StatusCode};
use serde_json::{Value, json};

use super::clients::{acceptable_redirects, client_name};
use super::{OAuthApi, UNUSED_CLIENT_SECS, no_store, oauth_error, unavailable};
use crate::domain::OAuthClient;
use crate::http as web;
use crate::identity::{Quota, random_secret, secret_hash};

/// Clients one source address may register in an hour.
pub(crate) const REGISTRATIONS_PER_HOUR: u32 = 30;
const REGISTRATIONS: Quota = Quota {
    kind: "register-ip",
    allowed: REGISTRATIONS_PER_HOUR,
    window_secs: 3600,
};

impl OAuthApi {
    /// Open dynamic client registration (RFC 7591) with validated redirect URIs.
    /// `source`: where the request came from, for the per-address cap.
    pub(crate) async fn register(&self, body: &[u8], source: Option<IpAddr>) -> Response<Bytes> {
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "the body must be JSON",
            );
        };
        let redirect_uris: Vec<String> = request
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let method = request
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .unwrap_or("client_secret_basic");
        if !matches!(
            method,
            "none" | "client_secret_post" | "client_secret_basic"
        ) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "unsupported token_endpoint_auth_method",
            );
        }
        let grant_types: Vec<String> = match request.get("grant_types").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            None => vec!["authorization_code".into(), "refresh_token".into()],
        };
        // A client_credentials client registers (RFC 7591) but gets no token: the
        // token endpoint answers `unsupported_grant_type`, since every resource here
        // belongs to a person.
        let known = ["authorization_code", "refresh_token", "client_credentials"];
        if grant_types.is_empty() || grant_types.iter().any(|g| !known.contains(&g.as_str())) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "unsupported grant_types",
            );
        }
        // Redirect URIs are for the browser grants; a client_credentials-only client may
        // have none, but any it sends are checked like everyone's.
        let redirecting = grant_types.iter().any(|g| g != "client_credentials");
        if (redirecting || !redirect_uris.is_empty()) && !acceptable_redirects(&redirect_uris) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_redirect_uri",
                "redirect_uris must be 1-10 absolute https URIs (http only for localhost) of at most 2000 characters, without fragments",
            );
        }
        if let Some(source) = source {
            match REGISTRATIONS
                .spend(self.store.as_ref(), source, self.clock.now())
                .await
            {
                Ok(None) => {}
                Ok(Some(retry_after)) => {
                    let mut response = oauth_error(
                        StatusCode::TOO_MANY_REQUESTS,
                        "temporarily_unavailable",
                        "too many registrations from this address; try again later",
                    );
                    response
                        .headers_mut()
                        .insert(RETRY_AFTER, HeaderValue::from(retry_after));
                    return response;
                }
                Err(e) => return unavailable(e),
            }
        }
        let secret = (method != "none").then(|| random_secret(32));
        let client = OAuthClient {
            client_id: format!("c_{}", random_secret(16)),
            secret_hash: secret.as_deref().map(secret_hash),
            redirect_uris,
            grant_types,
            token_endpoint_auth_method: method.into(),
            client_name: client_name(&request),
            created_at: self.clock.now(),
            expires_at: Some(self.clock.now() + UNUSED_CLIENT_SECS),
        };
        match self.store.put_client(&client).await {
            Ok(true) => {}
            Ok(false) => {
                return oauth_error(StatusCode::CONFLICT, "invalid_client_metadata", "try again");
            }
            Err(e) => return unavailable(e),
        }
        let mut out = json!({
            "client_id": client.client_id,
            "client_name": client.client_name,
            "redirect_uris": client.redirect_uris,
            "grant_types": client.grant_types,
            "response_types": match redirecting {
                true => json!(["code"]),
                false => json!([]),
            },
            "token_endpoint_auth_method": client.token_endpoint_auth_method,
            "client_id_issued_at": client.created_at,
        });
        if let Some(secret) = secret {
            out["client_secret"] = secret.into();
            // RFC 7591: when the secret stops working. An unused registration lapses
            // then (each use at the token endpoint moves it on), so it is not 0.
            out["client_secret_expires_at"] = client.expires_at.unwrap_or(0).into();
        }
        no_store(web::json(StatusCode::CREATED, &out))
    }
}
