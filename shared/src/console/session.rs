//! The console's session: the cookie that carries a person's session token, and the
//! CSRF tokens of its forms.
//!
//! The cookie holds the same session token sign-in hands out (`HttpOnly`, `SameSite=Lax`,
//! `Path=/`, `Secure` on an https origin, a day). It is checked exactly like a bearer
//! token (signature, expiry, then the user's token state, so sign-out, sign-out
//! everywhere and a password change end it on the server) and only a person's session
//! token is taken. A signed-in form's CSRF token is an HMAC of the session's key under
//! the console's form key; before sign-in, a double-submit nonce cookie does the job.

use bytes::Bytes;
use http::header::SET_COOKIE;
use http::{HeaderValue, Request, Response};

use super::{ConsoleApi, field, form};
use crate::api::accounts::SESSION_TOKEN_SECS;
use crate::http::{ApiError, SESSION_COOKIE, cookie};
use crate::identity::{Claims, csrf_token, csrf_valid, random_secret};

/// The nonce of the signed-out forms (sign-in, sign-up).
const NONCE_COOKIE: &str = "mirobody_console_nonce";
/// How long a signed-out form's token stays good.
const FORM_SECS: u64 = 3600;

/// A signed-in person on a console request.
pub(crate) struct Session {
    pub user_id: String,
    /// The session token's claims (sign-out names its session).
    pub claims: Claims,
    /// The CSRF token every form of this session carries.
    pub csrf: String,
}

impl Session {
    /// Whether a state-changing request carries this session's CSRF token, in the form
    /// field `csrf` or the `x-csrf-token` header (the upload page's script).
    pub(crate) fn csrf_ok(&self, request: &Request<Bytes>, form_key: &[u8]) -> bool {
        let header = request
            .headers()
            .get("x-csrf-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let sent = header.or_else(|| field(&form(request), "csrf").map(str::to_string));
        // Issued at 0 and never stale by age: the session's own expiry bounds it.
        sent.is_some_and(|sent| {
            let (nonce, binding) = session_binding(&self.claims);
            csrf_valid(form_key, &nonce, binding, &sent, 0, u64::MAX)
        })
    }
}

/// What a session's CSRF token is bound to: the session's key and its user.
fn session_binding(claims: &Claims) -> (String, &str) {
    let key = claims.session_key().unwrap_or_default();
    (format!("console session|{key}"), claims.sub.as_str())
}

impl ConsoleApi {
    /// The request's session, if its cookie holds a person's session token that
    /// verifies and was not ended.
    pub(crate) async fn session(
        &self,
        request: &Request<Bytes>,
    ) -> Result<Option<Session>, ApiError> {
        let Some(token) = cookie(request.headers(), SESSION_COOKIE) else {
            return Ok(None);
        };
        let Some(claims) = self.callers.session_token(&token).await? else {
            return Ok(None);
        };
        let (nonce, binding) = session_binding(&claims);
        let csrf = csrf_token(&self.form_key, &nonce, binding, 0);
        Ok(Some(Session {
            user_id: claims.sub.clone(),
            claims,
            csrf,
        }))
    }

    fn secure(&self) -> &'static str {
        if self.origin.starts_with("https://") {
            "; Secure"
        } else {
            ""
        }
    }

    /// Sets the session cookie holding a new session token for `user_id`.
    pub(crate) fn start_session(&self, response: &mut Response<Bytes>, user_id: &str, epoch: u64) {
        let token = self
            .jwts
            .session(user_id, epoch, SESSION_TOKEN_SECS, self.clock.now());
        let cookie = format!(
            "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={SESSION_TOKEN_SECS}{}",
            self.secure()
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }

    /// Clears the session cookie (the session itself is ended in the store by the caller).
    pub(crate) fn end_session_cookie(&self, response: &mut Response<Bytes>) {
        let cookie = format!(
            "{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{}",
            self.secure()
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }

    /// A signed-out form's CSRF token and the nonce cookie it is bound to (the request's
    /// nonce if it has one, else a new one to set).
    pub(crate) fn signed_out_csrf(
        &self,
        request: &Request<Bytes>,
        form_name: &str,
    ) -> (String, Option<String>) {
        let existing = cookie(request.headers(), NONCE_COOKIE).filter(|n| n.len() >= 20);
        let nonce = existing.clone().unwrap_or_else(|| random_secret(24));
        let binding = format!("console form|{form_name}");
        let token = csrf_token(&self.form_key, &nonce, &binding, self.clock.now());
        (token, existing.is_none().then_some(nonce))
    }

    /// Sets the nonce cookie of a signed-out form.
    pub(crate) fn set_nonce_cookie(&self, response: &mut Response<Bytes>, nonce: &str) {
        let cookie = format!(
            "{NONCE_COOKIE}={nonce}; Path=/console; HttpOnly; SameSite=Strict{}",
            self.secure()
        );
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }

    /// Whether a signed-out form's post carries a fresh token for its nonce cookie.
    pub(crate) fn signed_out_csrf_ok(&self, request: &Request<Bytes>, form_name: &str) -> bool {
        let Some(nonce) = cookie(request.headers(), NONCE_COOKIE) else {
            return false;
        };
        let fields = form(request);
        let Some(token) = field(&fields, "csrf") else {
            return false;
        };
        let binding = format!("console form|{form_name}");
        csrf_valid(
            &self.form_key,
            &nonce,
            &binding,
            token,
            self.clock.now(),
            FORM_SECS,
        )
    }
}
