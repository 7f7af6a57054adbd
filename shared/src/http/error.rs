//! `ApiError`: every refusal of the REST endpoints (accounts, shares, the personal URL,
//! the data API, the registry API, the login poll) and of the app's own checks (a
//! missing or invalid bearer token, a URL secret nobody minted, no keys), with its HTTP
//! status and body rendered in this one place.
//!
//! Owns the envelopes: the router's 404, the account API's `{"code": <status>, "msg": …}` (a 401 adds its
//! `WWW-Authenticate` challenge), the registry's two forms, the login poll's
//! `{"status": …, "message": …}`. Must not: know JSON-RPC (the MCP endpoint's errors are
//! `McpError`), or put a credential or a request body into a message.

use std::borrow::Cow;

use bytes::Bytes;
use http::header::{RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderValue, Response, StatusCode};
use serde_json::json;

use super::json;
use crate::store::StoreError;

/// What every endpoint says when the store fails (the data API's uploads say more:
/// [`ApiError::unavailable_while`]).
pub(crate) const STORAGE_UNAVAILABLE: &str = "storage is unavailable; try again shortly";

/// A refusal of a REST endpoint. Handlers return `Result<Success<…>, ApiError>` (or a
/// `Response` of their own) and use `?`; a store failure becomes the one 503.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// No route (or not in this function's group): 404 `{"error": "not found"}`.
    NoRoute,
    /// `{"code": <status>, "msg": …}`.
    Refused(StatusCode, Cow<'static, str>),
    /// 401 `{"code": 401, "msg": …}` with this `WWW-Authenticate` challenge.
    Unauthorized(&'static str, HeaderValue),
    /// 403 `{"code": 403, "msg": …}` with this `WWW-Authenticate` challenge: a valid
    /// token of a kind or scope the route does not take (RFC 6750 `insufficient_scope`).
    Forbidden(&'static str, HeaderValue),
    /// The store failed: 503, [`STORAGE_UNAVAILABLE`].
    Unavailable,
    /// The store failed during this step of the data API: 503 saying what failed and
    /// that retrying the same upload is safe ([`ApiError::unavailable_while`]).
    UnavailableWhile(&'static str),
    /// No signing keys on this deployment: accounts, OAuth and sign-in are off (503).
    NoKeys,
    /// A refusal with a stable machine code (the registry API's), in one of its forms.
    Coded {
        status: StatusCode,
        code: &'static str,
        message: String,
        form: Form,
    },
    /// The login poll: `{"status": <state>, "message": …}`.
    LoginPoll(StatusCode, &'static str, &'static str),
    /// An abuse limit: 429 `{"code": 429, "msg": …}` with `Retry-After` in seconds.
    TooMany { msg: &'static str, retry_after: u64 },
}

/// The two envelopes of the registry API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// The seed's table endpoints (`/api/user/mcp*`): `{"success": false, "code":
    /// <status>, "msg": …, "error": <code>}`.
    Seed,
    /// The REST endpoints (`/api/user/mcp-servers*`): `{"error": {"code", "message"}}`.
    Rest,
}

impl ApiError {
    /// 413: the body is over the route's cap (`limit` bytes), refused unparsed.
    pub(crate) fn body_too_large(limit: usize) -> Self {
        let limit = match limit {
            l if l >= 1024 * 1024 && l % (1024 * 1024) == 0 => format!("{} MiB", l / 1024 / 1024),
            l if l >= 1024 && l % 1024 == 0 => format!("{} KiB", l / 1024),
            l => format!("{l} bytes"),
        };
        ApiError::Refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body too large (at most {limit} here)").into(),
        )
    }

    pub(crate) fn refused(status: StatusCode, msg: impl Into<Cow<'static, str>>) -> Self {
        ApiError::Refused(status, msg.into())
    }

    /// The data API's store failure while doing `what` (`"saving readings"`): logged,
    /// then [`ApiError::UnavailableWhile`].
    pub(crate) fn unavailable_while(what: &'static str) -> impl FnOnce(StoreError) -> Self {
        move |error| {
            tracing::warn!(%error, what, "data API store failure");
            ApiError::UnavailableWhile(what)
        }
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::Refused(status, _)
            | ApiError::Coded { status, .. }
            | ApiError::LoginPoll(status, _, _) => *status,
            ApiError::NoRoute => StatusCode::NOT_FOUND,
            ApiError::Unauthorized(..) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(..) => StatusCode::FORBIDDEN,
            ApiError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable | ApiError::UnavailableWhile(_) | ApiError::NoKeys => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// What the refusal says in words (the console shows it on a page).
    pub(crate) fn message(&self) -> String {
        match self {
            ApiError::NoRoute => "there is no such page".to_string(),
            ApiError::Refused(_, msg) => msg.to_string(),
            ApiError::Unauthorized(msg, _) | ApiError::Forbidden(msg, _) => msg.to_string(),
            ApiError::TooMany { msg, .. } => msg.to_string(),
            ApiError::Unavailable => STORAGE_UNAVAILABLE.to_string(),
            ApiError::UnavailableWhile(what) => failed_while(what),
            ApiError::NoKeys => {
                "accounts are not configured on this deployment (no signing keys)".to_string()
            }
            ApiError::Coded { message, .. } => message.clone(),
            ApiError::LoginPoll(_, _, message) => message.to_string(),
        }
    }

    pub(crate) fn into_response(self) -> Response<Bytes> {
        let status = self.status();
        let account = |msg: &str| json(status, &json!({ "code": status.as_u16(), "msg": msg }));
        match self {
            ApiError::NoRoute => json(status, &json!({"error": "not found"})),
            ApiError::Refused(_, msg) => account(&msg),
            ApiError::Unauthorized(msg, challenge) | ApiError::Forbidden(msg, challenge) => {
                let mut response = account(msg);
                response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
                response
            }
            ApiError::TooMany { msg, retry_after } => {
                let mut response = account(msg);
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(retry_after));
                response
            }
            ApiError::Unavailable => account(STORAGE_UNAVAILABLE),
            ApiError::UnavailableWhile(what) => account(&failed_while(what)),
            ApiError::NoKeys => {
                account("accounts are not configured on this deployment (no signing keys)")
            }
            ApiError::Coded {
                code,
                message,
                form: Form::Seed,
                ..
            } => json(
                status,
                &json!({
                    "success": false,
                    "code": status.as_u16(),
                    "msg": message,
                    "error": code,
                }),
            ),
            ApiError::Coded {
                code,
                message,
                form: Form::Rest,
                ..
            } => json(
                status,
                &json!({ "error": { "code": code, "message": message } }),
            ),
            ApiError::LoginPoll(_, state, message) => {
                json(status, &json!({ "status": state, "message": message }))
            }
        }
    }
}

/// What [`ApiError::UnavailableWhile`] says.
fn failed_while(what: &str) -> String {
    format!(
        "{what} failed: storage is unavailable; retry the same upload (it never duplicates rows)"
    )
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failure");
        ApiError::Unavailable
    }
}
