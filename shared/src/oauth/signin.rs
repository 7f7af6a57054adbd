//! The sign-in form shared by the consent page and `/mcplogin`: CSRF double-submit
//! tokens bound to the request they were issued for, the form's cookie and
//! `Content-Security-Policy`, and the e-mail and password check.
//!
//! Does not decide what a successful sign-in grants; the endpoints do.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http::header::{COOKIE, RETRY_AFTER, SET_COOKIE};
use http::{HeaderValue, Request, Response, StatusCode};
use sha2::Sha256;

use super::{Form, OAuthApi, field, html, pages};
use crate::http::source_of;
use crate::identity::{SignIn, random_secret};
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

fn cookie(request: &Request<Bytes>, name: &str) -> Option<String> {
    request
        .headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// What a sign-in page shows and carries.
pub(super) struct SignInForm<'a> {
    pub(super) action: &'a str,
    /// The requesting client's name (consent), or `None` for `/mcplogin`.
    pub(super) name: Option<&'a str>,
    pub(super) scope: &'a str,
    /// Hidden fields carried through the post.
    pub(super) fields: &'a [(&'a str, &'a str)],
    /// What the CSRF token is bound to.
    pub(super) binding: &'a str,
    /// Where the post's answer redirects (the client's redirect URI), if anywhere.
    pub(super) redirect_uri: Option<&'a str>,
    /// `/mcplogin`: who asked and when; the form then asks for the user code.
    pub(super) asked: Option<pages::Asked<'a>>,
}

fn csrf_mac(key: &[u8], nonce: &str, binding: &str, issued: u64) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(format!("{nonce}|{binding}|{issued}").as_bytes());
    mac
}

/// A form's CSRF token: `{issued}.{base64url HMAC(nonce|binding|issued)}`.
fn csrf_token(key: &[u8], nonce: &str, binding: &str, issued: u64) -> String {
    let tag = csrf_mac(key, nonce, binding, issued)
        .finalize()
        .into_bytes();
    format!("{issued}.{}", URL_SAFE_NO_PAD.encode(tag))
}

/// Whether `token` is a fresh CSRF token for this nonce and binding. The MAC is compared
/// in constant time (`verify_slice`), so how long a refusal takes says nothing about how
/// much of a forged tag was right (issue 12).
fn csrf_valid(key: &[u8], nonce: &str, binding: &str, token: &str, now: u64) -> bool {
    let Some((issued, tag)) = token
        .split_once('.')
        .and_then(|(issued, tag)| Some((issued.parse::<u64>().ok()?, tag)))
    else {
        return false;
    };
    let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else {
        return false;
    };
    let fresh = now.saturating_sub(issued) <= FORM_SECS;
    fresh
        && csrf_mac(key, nonce, binding, issued)
            .verify_slice(&tag)
            .is_ok()
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
        let (Some(nonce), Some(token)) = (cookie(request, CSRF_COOKIE), token) else {
            return false;
        };
        csrf_valid(&self.form_key, &nonce, binding, token, self.clock.now())
    }

    pub(super) fn form_page(
        &self,
        request: &Request<Bytes>,
        form: SignInForm<'_>,
        error: Option<&str>,
    ) -> Response<Bytes> {
        let SignInForm {
            action,
            name,
            scope,
            fields,
            binding,
            redirect_uri,
            asked,
        } = form;
        let nonce = cookie(request, CSRF_COOKIE)
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
                name,
                scope,
                pages::hidden(&all),
                error,
                asked.as_ref(),
            ),
        );
        if let Some(target) = redirect_uri.and_then(form_target) {
            let csp = format!(
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' {target}"
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

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"a form key of thirty-two bytes!!";

    #[test]
    fn csrf_tokens_are_checked_with_the_mac_in_constant_time() {
        let token = csrf_token(KEY, "nonce", "authorize|c|r|x", 1_000);
        assert!(csrf_valid(KEY, "nonce", "authorize|c|r|x", &token, 1_100));
        // Another nonce, binding or key: refused.
        assert!(!csrf_valid(KEY, "other", "authorize|c|r|x", &token, 1_100));
        assert!(!csrf_valid(KEY, "nonce", "authorize|c|r|y", &token, 1_100));
        assert!(!csrf_valid(
            b"another key",
            "nonce",
            "authorize|c|r|x",
            &token,
            1_100
        ));
        // Expired.
        assert!(!csrf_valid(
            KEY,
            "nonce",
            "authorize|c|r|x",
            &token,
            1_000 + FORM_SECS + 1
        ));
        // A tag with one bit flipped, a truncated tag, an empty tag, a tag that is not
        // base64url, a missing or rewritten issue time: refused.
        let (issued, tag) = token.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(tag).unwrap();
        bytes[31] ^= 1;
        let flipped = format!("{issued}.{}", URL_SAFE_NO_PAD.encode(&bytes));
        let truncated = format!("{issued}.{}", URL_SAFE_NO_PAD.encode(&bytes[..16]));
        for forged in [
            flipped.as_str(),
            truncated.as_str(),
            &format!("{issued}."),
            &format!("{issued}.!!!"),
            tag,
            &format!("1001.{tag}"),
        ] {
            assert!(
                !csrf_valid(KEY, "nonce", "authorize|c|r|x", forged, 1_100),
                "{forged}"
            );
        }
    }
}
