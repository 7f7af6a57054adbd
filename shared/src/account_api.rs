//! Accounts and what they grant (A7, B1, B2): sign-up and sign-in with e-mail and
//! password, sharing the "chat" permission with another account, and the personal
//! MCP URL endpoint (`POST /personal/mcp` to get it, `DELETE` to revoke it).
//!
//! Owns request validation and the response shapes (`{"code": 0, "msg": "ok",
//! "data": …}`; failures are a non-zero `code` with `msg`). Never logs a password,
//! a token or a URL.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clock::Clock;
use crate::domain::Account;
use crate::http as web;
use crate::identity::{Jwts, MIN_PASSWORD, McpUrls, authenticate, hash_password, random_secret};
use crate::store::{Created, Store, StoreError};
use crate::tools::Caller;

/// Lifetime of a token from sign-in.
pub const SESSION_TOKEN_SECS: u64 = 24 * 3600;
/// The permission B2 checks before minting a URL for another account.
pub const CHAT_PERMISSION: &str = "chat";

pub struct AccountApi {
    pub store: Arc<dyn Store>,
    pub jwts: Arc<Jwts>,
    pub urls: Arc<McpUrls>,
    pub clock: Arc<dyn Clock>,
}

/// The success envelope, shared with the data API.
pub(crate) fn ok(status: StatusCode, data: Value) -> Response<Bytes> {
    web::json(status, &json!({ "code": 0, "msg": "ok", "data": data }))
}

/// The failure envelope: the HTTP status repeated as `code`.
pub fn refused(status: StatusCode, msg: &str) -> Response<Bytes> {
    web::json(status, &json!({ "code": status.as_u16(), "msg": msg }))
}

fn unavailable(error: StoreError) -> Response<Bytes> {
    tracing::warn!(%error, "account API store failure");
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "storage is unavailable; try again shortly",
    )
}

#[derive(Deserialize)]
struct Credentials {
    email: String,
    password: String,
}

#[derive(Deserialize, Default)]
struct ShareRequest {
    grantee: String,
    #[serde(default)]
    permissions: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
struct PersonalRequest {
    #[serde(default)]
    user_id: Option<String>,
}

fn normalise_email(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let valid = !local.is_empty()
        && domain.contains('.')
        && email.len() <= 254
        && !email.contains(char::is_whitespace);
    valid.then_some(email)
}

fn parse<T: for<'de> Deserialize<'de> + Default>(body: &[u8], allow_empty: bool) -> Option<T> {
    if allow_empty && body.iter().all(u8::is_ascii_whitespace) {
        return Some(T::default());
    }
    serde_json::from_slice(body).ok()
}

/// A sign-up or sign-in body that is not `{"email", "password"}`.
fn bad_credentials() -> Response<Bytes> {
    refused(
        StatusCode::BAD_REQUEST,
        "send {\"email\": …, \"password\": …}",
    )
}

fn bad_body() -> Response<Bytes> {
    refused(
        StatusCode::BAD_REQUEST,
        "the body must be a JSON object with the documented fields",
    )
}

impl AccountApi {
    fn token_response(&self, status: StatusCode, user_id: &str) -> Response<Bytes> {
        let token = self
            .jwts
            .mint(user_id, SESSION_TOKEN_SECS, self.clock.now());
        ok(
            status,
            json!({ "user_id": user_id, "token": token, "token_type": "Bearer", "expires_in": SESSION_TOKEN_SECS }),
        )
    }

    pub async fn sign_up(&self, body: &[u8]) -> Response<Bytes> {
        let Ok(request) = serde_json::from_slice::<Credentials>(body) else {
            return bad_credentials();
        };
        let Some(email) = normalise_email(&request.email) else {
            return refused(StatusCode::BAD_REQUEST, "that is not an e-mail address");
        };
        if request.password.chars().count() < MIN_PASSWORD || request.password.len() > 1024 {
            return refused(
                StatusCode::BAD_REQUEST,
                "the password must have at least 10 characters",
            );
        }
        let password = request.password;
        let password_hash =
            match tokio::task::spawn_blocking(move || hash_password(&password)).await {
                Ok(hash) => hash,
                Err(_) => return refused(StatusCode::INTERNAL_SERVER_ERROR, "sign-up failed"),
            };
        let account = Account {
            user_id: format!("u_{}", random_secret(12)),
            email,
            password_hash,
            created_at: self.clock.now(),
        };
        match self.store.create_account(&account).await {
            Ok(Created::Created) => self.token_response(StatusCode::CREATED, &account.user_id),
            Ok(Created::EmailTaken) => refused(
                StatusCode::CONFLICT,
                "an account with this e-mail already exists; sign in instead",
            ),
            Err(error) => unavailable(error),
        }
    }

    pub async fn sign_in(&self, body: &[u8]) -> Response<Bytes> {
        let Ok(request) = serde_json::from_slice::<Credentials>(body) else {
            return bad_credentials();
        };
        let wrong = || refused(StatusCode::UNAUTHORIZED, "wrong e-mail or password");
        let Some(email) = normalise_email(&request.email) else {
            return wrong();
        };
        match authenticate(self.store.as_ref(), &email, &request.password).await {
            Ok(Some(user_id)) => self.token_response(StatusCode::OK, &user_id),
            Ok(None) => wrong(),
            Err(error) => unavailable(error),
        }
    }

    /// B2: the caller (owner) grants another account permissions on their data.
    pub async fn share(&self, caller: &Caller, body: &[u8]) -> Response<Bytes> {
        let Some(request) = parse::<ShareRequest>(body, false) else {
            return bad_body();
        };
        let grantee = match self.grantee(&request.grantee).await {
            Ok(account) => account,
            Err(response) => return response,
        };
        let permissions = request
            .permissions
            .unwrap_or_else(|| vec![CHAT_PERMISSION.to_string()]);
        if permissions.is_empty() || permissions.iter().any(|p| p != CHAT_PERMISSION) {
            return refused(
                StatusCode::BAD_REQUEST,
                "the only permission that can be shared is \"chat\"",
            );
        }
        match self
            .store
            .put_share(&caller.user_id, &grantee.user_id, &permissions)
            .await
        {
            Ok(()) => ok(
                StatusCode::OK,
                json!({ "grantee": grantee.user_id, "permissions": permissions }),
            ),
            Err(error) => unavailable(error),
        }
    }

    pub async fn unshare(&self, caller: &Caller, body: &[u8]) -> Response<Bytes> {
        let Some(request) = parse::<ShareRequest>(body, false) else {
            return bad_body();
        };
        let grantee = match self.grantee(&request.grantee).await {
            Ok(account) => account,
            Err(response) => return response,
        };
        match self
            .store
            .delete_share(&caller.user_id, &grantee.user_id)
            .await
        {
            Ok(()) => ok(
                StatusCode::OK,
                json!({ "grantee": grantee.user_id, "permissions": [] }),
            ),
            Err(error) => unavailable(error),
        }
    }

    /// A grantee is named by e-mail or by user id; 404 when there is no such account.
    async fn grantee(&self, who: &str) -> Result<Account, Response<Bytes>> {
        let found = match normalise_email(who) {
            Some(email) => self.store.account_by_email(&email).await,
            None => self.store.account(who.trim()).await,
        };
        match found {
            Ok(Some(account)) => Ok(account),
            Ok(None) => Err(refused(
                StatusCode::NOT_FOUND,
                "no account with that e-mail",
            )),
            Err(error) => Err(unavailable(error)),
        }
    }

    /// B1/B2: the personal URL of the caller, or of an account that shared "chat" with them.
    pub async fn personal_url(&self, caller: &Caller, body: &[u8]) -> Response<Bytes> {
        let Some(request) = parse::<PersonalRequest>(body, true) else {
            return bad_body();
        };
        let owner = match request
            .user_id
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
        {
            None => caller.user_id.clone(),
            Some(owner) if owner == caller.user_id => owner.to_string(),
            Some(owner) => match self.store.share(owner, &caller.user_id).await {
                Ok(Some(perms)) if perms.iter().any(|p| p == CHAT_PERMISSION) => owner.to_string(),
                Ok(_) => {
                    return refused(
                        StatusCode::FORBIDDEN,
                        "that account has not shared its chat permission with you",
                    );
                }
                Err(error) => return unavailable(error),
            },
        };
        match self.urls.personal(&owner, self.clock.now()).await {
            Ok(url) => ok(StatusCode::OK, json!({ "url": url })),
            Err(error) => unavailable(error),
        }
    }

    pub async fn revoke_personal_url(&self, caller: &Caller) -> Response<Bytes> {
        match self.urls.revoke(&caller.user_id).await {
            Ok(revoked) => ok(StatusCode::OK, json!({ "revoked": revoked })),
            Err(error) => unavailable(error),
        }
    }
}
