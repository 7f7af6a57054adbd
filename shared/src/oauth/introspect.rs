//! `POST /oauth/introspect` (RFC 7662): whether a token this server signed is active,
//! and its claims. Accepts only this server's own JWTs.
//!
//! Does not touch the store.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use serde_json::json;

use super::{OAuthApi, field, form, no_store};
use crate::http as web;

impl OAuthApi {
    /// `POST /oauth/introspect` (RFC 7662).
    pub(crate) fn introspect(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = form(request.body());
        let body = match field(&params, "token").map(|t| self.jwts.verify(t)) {
            Some(Ok(claims)) => {
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
