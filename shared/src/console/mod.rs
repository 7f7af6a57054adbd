//! The web console: server-rendered pages for people, on the same origin as
//! the APIs. Sign up, in and out with a session cookie; see your data; upload; connect
//! your AI; your MCP servers; who can act for you; export and delete your account.
//!
//! Owns the console's door: the session cookie (`session.rs`: the same revocable session
//! token the JSON API hands out, in an `HttpOnly`, `SameSite=Lax` cookie, `Secure` on
//! https), the CSRF check of every state-changing request (a token bound to the session,
//! or before sign-in a double-submit nonce), the page headers (CSP with no inline script,
//! `frame-ancestors 'none'`, `X-Frame-Options: DENY`, `no-store`), and the one mapping of
//! an `ApiError` to an HTML page. One file per area renders and answers its pages;
//! `layout.rs` is the frame every page shares. HTML is built with `maud`, which escapes
//! every value.
//!
//! Must not: accept the cookie anywhere but here (the JSON API and `/mcp` take bearer
//! tokens only, so a cross-site form can never ride on the cookie there), call the
//! store (it goes through the typed cores of the JSON API's modules: `AccountApi`,
//! `DataApi`, `UploadsApi`, `ExternalServers`, `WholeAccount`), or log a page, a form
//! value or a cookie.

mod access;
mod account;
mod address;
mod agp;
mod assets;
mod auth;
mod chart;
mod connect;
mod data;
mod export;
mod layout;
mod range;
mod servers;
mod session;
mod stages;
mod summary;
mod upload;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use http::{HeaderValue, Request, Response, StatusCode};
use maud::Markup;

use crate::api::accounts::AccountApi;
use crate::api::data::DataApi;
use crate::api::uploads::UploadsApi;
use crate::clock::Clock;
use crate::external::ExternalServers;
use crate::http::ApiError;
use crate::identity::{CallerResolver, Jwts};

pub(crate) use session::Session;

/// The console, built once per process.
pub(crate) struct ConsoleApi {
    /// The data pages' reads (the data API's typed cores).
    pub data: Arc<DataApi>,
    pub accounts: Arc<AccountApi>,
    pub jwts: Arc<Jwts>,
    pub external: Arc<ExternalServers>,
    pub uploads: Arc<UploadsApi>,
    pub callers: Arc<CallerResolver>,
    pub clock: Arc<dyn Clock>,
    /// The HMAC key of CSRF tokens (derived from the seal key, console-specific).
    pub form_key: [u8; 32],
    /// The public origin (`https://…` sets `Secure` on cookies).
    pub origin: String,
    /// The MCP endpoint's URL, for the connect page.
    pub mcp_url: String,
    /// Whether `/mcp` asks an anonymous caller to sign in (`MIROBODY_REQUIRE_AUTH`): only
    /// then does a connector given the plain URL run the OAuth sign-in.
    pub mcp_signs_in: bool,
    /// Where the upload page's script may PUT besides this origin (the S3 bucket's).
    pub upload_origin: Option<String>,
}

/// A console handler's answer: a page, or a refusal mapped to a page once here.
pub(crate) type Answer = Result<Response<Bytes>, ApiError>;

/// What a signed-in page answers a visitor without a session (the route table's rows say
/// which, `app/routes.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignedOut {
    /// The sign-in page (`GET /`, sign-out).
    SignIn,
    /// The sign-in page, then back here (`?next=`).
    Back,
    /// JSON for the page's script: 401, and refusals as JSON too.
    Script,
}

/// The stylesheet and the one script.
pub(crate) use assets::serve as asset;

impl ConsoleApi {
    /// The door of a signed-in page: the session from the cookie, then the CSRF check of
    /// a state-changing request. `Ok(Err(answer))`: no session, and what the visitor gets.
    pub(crate) async fn admit(
        &self,
        request: &Request<Bytes>,
        signed_out: SignedOut,
    ) -> Result<Result<Session, Response<Bytes>>, ApiError> {
        let Some(session) = self.session(request).await? else {
            return Ok(Err(match signed_out {
                SignedOut::SignIn => redirect("/console/signin"),
                SignedOut::Script => ApiError::refused(
                    StatusCode::UNAUTHORIZED,
                    "your session ended: sign in again",
                )
                .into_response(),
                SignedOut::Back => redirect(&format!("/console/signin?next={}", next_of(request))),
            }));
        };
        if request.method() != http::Method::GET && !session.csrf_ok(request, &self.form_key) {
            return Err(ApiError::refused(
                StatusCode::FORBIDDEN,
                "this form expired or did not come from this site: reload the page and try again",
            ));
        }
        Ok(Ok(session))
    }

    /// A page's answer finished: a refusal mapped to what the console shows (JSON for the
    /// upload page's script, `SignedOut::Script`; otherwise a page in the console's frame
    /// with the refusal's status), then the page headers, and a large page compressed for
    /// a browser that takes gzip. `signed_out`: the page's, `None` for a page anyone may
    /// see.
    pub(crate) fn finish(
        &self,
        answer: Answer,
        signed_out: Option<SignedOut>,
        request: &Request<Bytes>,
    ) -> Response<Bytes> {
        let response = answer.unwrap_or_else(|error| {
            if signed_out == Some(SignedOut::Script) {
                return error.into_response();
            }
            let status = error.status();
            let message = error.message();
            html(
                status,
                layout::message_page("Something went wrong", &message),
            )
        });
        let response = with_page_headers(response, self.upload_origin.as_deref());
        if accepts_gzip(request) {
            compressed(response)
        } else {
            response
        }
    }

    /// A console address no route answers: a page in words with the way back, 404.
    pub(crate) fn not_found_page(&self) -> Response<Bytes> {
        let text = "There is no page at this address. Your data is at /console/data.";
        let page = html(
            StatusCode::NOT_FOUND,
            layout::message_page("Page not found", text),
        );
        with_page_headers(page, self.upload_origin.as_deref())
    }
}

/// Pages from this size on are sent compressed to a browser that takes gzip (a chart's
/// points carry their words: a year of day points is some 50 KB of HTML, 8 KB sent).
const COMPRESS_FROM: usize = 8 * 1024;

/// Whether the request's `Accept-Encoding` takes gzip.
pub(crate) fn accepts_gzip(request: &Request<Bytes>) -> bool {
    request
        .headers()
        .get_all(http::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or_default().trim();
            // `gzip;q=0` refuses it.
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name == "gzip" && !refused
        })
}

/// An HTML page of [`COMPRESS_FROM`] bytes or more, gzip-compressed (`Content-Encoding`,
/// `Vary`); anything else as it is.
fn compressed(mut response: Response<Bytes>) -> Response<Bytes> {
    use std::io::Write;
    let html = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/html"));
    let encoded = response
        .headers()
        .contains_key(http::header::CONTENT_ENCODING);
    if !html || encoded || response.body().len() < COMPRESS_FROM {
        return response;
    }
    let mut gzip = flate2::write::GzEncoder::new(
        Vec::with_capacity(response.body().len() / 4),
        flate2::Compression::fast(),
    );
    let Ok(body) = gzip.write_all(response.body()).and_then(|()| gzip.finish()) else {
        return response;
    };
    *response.body_mut() = Bytes::from(body);
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_ENCODING,
        HeaderValue::from_static("gzip"),
    );
    headers.insert(
        http::header::VARY,
        HeaderValue::from_static("accept-encoding"),
    );
    response
}

/// A console page: HTML, never cached, never framed.
pub(crate) fn html(status: StatusCode, markup: Markup) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(markup.into_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// `303 See Other` to a console path (after a form post, so reload does not repost).
pub(crate) fn redirect(location: &str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// The headers every console answer carries: no framing (clickjacking), no inline
/// script, no caching of pages with personal data.
fn with_page_headers(
    mut response: Response<Bytes>,
    upload_origin: Option<&str>,
) -> Response<Bytes> {
    let connect = match upload_origin {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_string(),
    };
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src {connect}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&csp) {
        headers.insert("content-security-policy", value);
    }
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// A percent-encoded path segment's value.
#[cfg(test)]
pub(crate) use crate::http::decode_segment as decode;

/// The fields of a form post (`application/x-www-form-urlencoded`).
pub(crate) fn form(request: &Request<Bytes>) -> Vec<(String, String)> {
    form_urlencoded::parse(request.body())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// One field of a form, if present and not empty.
pub(crate) fn field<'f>(form: &'f [(String, String)], name: &str) -> Option<&'f str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// One query parameter of the request.
pub(crate) fn query_param(request: &Request<Bytes>, name: &str) -> Option<String> {
    let query = request.uri().query()?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Where to come back to after sign-in: this console path, percent-encoded (only
/// console paths, so the parameter can never send anyone elsewhere).
fn next_of(request: &Request<Bytes>) -> String {
    let path = request.uri().path();
    let path = if path.starts_with("/console/") && request.method() == http::Method::GET {
        path
    } else {
        "/console/data"
    };
    form_urlencoded::byte_serialize(path.as_bytes()).collect()
}
