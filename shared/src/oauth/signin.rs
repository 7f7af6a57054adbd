//! The sign-in form shared by the consent page and `/mcplogin`: CSRF double-submit
//! tokens bound to the request they were issued for, the form's cookie and
//! `Content-Security-Policy`, and the e-mail and password check.
//!
//! Does not decide what a successful sign-in grants; the endpoints do.

use bytes::Bytes;
use http::header::{RETRY_AFTER, SET_COOKIE};
use http::{HeaderValue, Request, Response, StatusCode};

use super::{Form, OAuthApi, field, html, pages};
use crate::http::{cookie, source_of};
use crate::identity::{SignIn, csrf_token, csrf_valid, random_secret};
use crate::store::StoreError;

const FORM_SECS: u64 = 600;
const CSRF_COOKIE: &str = "mirobody_csrf";

/// The CSP source for where a consent form's answer may redirect: the registered
/// redirect URI's origin (`http(s)://host:port`), or `scheme:` for a private-use scheme.
/// Chromium applies `form-action` to the redirect after a form post, so `'self'` alone
/// blocks every authorization response.
fn form_target(redirect_uri: &str) -> Option<String> {
    let url = url::Url::parse(redirect_uri).ok()?;
    match url.scheme() {
        "http" | "https" => Some(url.origin().ascii_serialization()),
        scheme => Some(format!("{scheme}:")),
    }
}

/// What a sign-in page shows and carries.
pub(super) struct SignInForm<'a> {
    pub(super) action: &'a str,
    /// What the requesting client asks for (consent), or `None` for `/mcplogin`.
    pub(super) consent: Option<pages::Consent<'a>>,
    /// Hidden fields carried through the post.
    pub(super) fields: &'a [(&'a str, &'a str)],
    /// What the CSRF token is bound to.
    pub(super) binding: &'a str,
    /// Where the post's answer redirects (the client's redirect URI), if anywhere.
    pub(super) redirect_uri: Option<&'a str>,
    /// `/mcplogin`: who asked and when; the form then asks for the user code.
    pub(super) asked: Option<pages::Asked<'a>>,
    /// The console session this browser is signed in with: the form then asks for no
    /// password and names the account.
    pub(super) signed_in: Option<pages::SignedIn<'a>>,
}

impl OAuthApi {
    /// Double-submit: the form's token is an HMAC over the cookie's nonce, the
    /// request it was issued for, and its age.
    pub(super) fn csrf_ok(
        &self,
        request: &Request<Bytes>,
        token: Option<&str>,
        binding: &str,
    ) -> bool {
        let (Some(nonce), Some(token)) = (cookie(request.headers(), CSRF_COOKIE), token) else {
            return false;
        };
        csrf_valid(
            &self.form_key,
            &nonce,
            binding,
            token,
            self.clock.now(),
            FORM_SECS,
        )
    }

    pub(super) fn form_page(
        &self,
        request: &Request<Bytes>,
        form: SignInForm<'_>,
        error: Option<&str>,
    ) -> Response<Bytes> {
        let SignInForm {
            action,
            consent,
            fields,
            binding,
            redirect_uri,
            asked,
            signed_in,
        } = form;
        let nonce = cookie(request.headers(), CSRF_COOKIE)
            .filter(|n| n.len() >= 20)
            .unwrap_or_else(|| random_secret(24));
        let csrf = csrf_token(&self.form_key, &nonce, binding, self.clock.now());
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        all.push(("csrf", &csrf));
        let status = if error.is_some() {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::OK
        };
        let mut response = html(
            status,
            pages::sign_in(
                action,
                consent.as_ref(),
                pages::hidden(&all),
                error,
                asked.as_ref(),
                signed_in.as_ref(),
            ),
        );
        if let Some(target) = redirect_uri.and_then(form_target) {
            let csp = format!(
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' {target}; frame-ancestors 'none'"
            );
            if let Ok(value) = HeaderValue::from_str(&csp) {
                response
                    .headers_mut()
                    .insert("content-security-policy", value);
            }
        }
        let secure = if self.origin.starts_with("https://") {
            "; Secure"
        } else {
            ""
        };
        if let Ok(value) = HeaderValue::from_str(&format!(
            "{CSRF_COOKIE}={nonce}; Path=/; HttpOnly; SameSite=Strict{secure}"
        )) {
            response.headers_mut().insert(SET_COOKIE, value);
        }
        response
    }

    /// The form's e-mail and password, checked within the sign-in limits for the
    /// request's source address. A form without both is a wrong sign-in (not counted).
    pub(super) async fn check_credentials(
        &self,
        request: &Request<Bytes>,
        params: &Form,
    ) -> Result<SignIn, StoreError> {
        match (field(params, "email"), field(params, "password")) {
            (Some(email), Some(password)) => {
                self.passwords
                    .sign_in(email, password, source_of(request))
                    .await
            }
            _ => Ok(SignIn::Wrong),
        }
    }
}

/// What a sign-in form says when the limit refused the attempt.
pub(super) const LIMITED: &str = "Too many failed sign-ins. Wait a minute, then try again.";

/// The sign-in form re-shown after the limit refused the attempt: 429 with
/// `Retry-After`.
pub(super) fn limited(mut page: Response<Bytes>, retry_after: u64) -> Response<Bytes> {
    *page.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    page.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after));
    page
}
