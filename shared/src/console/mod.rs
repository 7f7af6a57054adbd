//! The web console (issue 15): server-rendered pages for people, on the same origin as
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
mod layout;
mod page;
mod servers;
mod session;
mod stages;
mod upload;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use http::{HeaderValue, Request, Response, StatusCode};
use maud::Markup;

use crate::account_api::AccountApi;
use crate::clock::Clock;
use crate::data_api::DataApi;
use crate::external::ExternalServers;
use crate::http::{ApiError, Matched};
use crate::identity::{CallerResolver, Jwts, McpUrls};
use crate::imports::api::UploadsApi;

pub(crate) use page::Page;
pub(crate) use session::Session;

/// The console, built once per process.
pub(crate) struct ConsoleApi {
    /// The data pages' reads (the data API's typed cores).
    pub data: Arc<DataApi>,
    pub accounts: Arc<AccountApi>,
    pub jwts: Arc<Jwts>,
    pub urls: Arc<McpUrls>,
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
    /// Where the upload page's script may PUT besides this origin (the S3 bucket's).
    pub upload_origin: Option<String>,
}

/// A console handler's answer: a page, or a refusal mapped to a page once here.
pub(crate) type Answer = Result<Response<Bytes>, ApiError>;

impl ConsoleApi {
    /// The page of `matched` for `request`: the session from the cookie, the CSRF check
    /// of a state-changing request, the handler, then the page headers.
    pub(crate) async fn serve(
        &self,
        page: Page,
        matched: &Matched<'_>,
        request: &Request<Bytes>,
    ) -> Response<Bytes> {
        let answer = self.route(page, matched, request).await;
        let response = answer.unwrap_or_else(|error| self.error_page(page, error));
        with_page_headers(response, self.upload_origin.as_deref())
    }

    async fn route(&self, page: Page, matched: &Matched<'_>, request: &Request<Bytes>) -> Answer {
        // Pages anyone may see (the forms before sign-in and the static files).
        match page {
            Page::Asset => return assets::serve(matched.param("file").unwrap_or_default()),
            Page::SignUpForm => return self.sign_up_form(request, None),
            Page::SignUp => return self.sign_up(request).await,
            Page::SignInForm => return self.sign_in_form(request, None),
            Page::SignIn => return self.sign_in(request).await,
            Page::ConfirmForm => return self.confirm_form(request, None),
            Page::Confirm => return self.confirm(request).await,
            Page::ForgotForm => return self.forgot_form(request, None),
            Page::Forgot => return self.forgot(request).await,
            Page::ResetForm => return self.reset_form(request, None),
            Page::Reset => return self.reset(request).await,
            _ => {}
        }
        let Some(session) = self.session(request).await? else {
            return Ok(match page {
                Page::Home | Page::SignOut => redirect("/console/signin"),
                Page::UploadCreate | Page::UploadStatus => ApiError::refused(
                    StatusCode::UNAUTHORIZED,
                    "your session ended: sign in again",
                )
                .into_response(),
                _ => redirect(&format!("/console/signin?next={}", next_of(request))),
            });
        };
        if request.method() != http::Method::GET && !session.csrf_ok(request, &self.form_key) {
            return Err(ApiError::refused(
                StatusCode::FORBIDDEN,
                "this form expired or did not come from this site: reload the page and try again",
            ));
        }
        let param = |name: &str| matched.param(name).map(decode).unwrap_or_default();
        match page {
            // Answered above, before the session.
            Page::Asset
            | Page::SignUpForm
            | Page::SignUp
            | Page::SignInForm
            | Page::SignIn
            | Page::ConfirmForm
            | Page::Confirm
            | Page::ForgotForm
            | Page::Forgot
            | Page::ResetForm
            | Page::Reset => Err(ApiError::NoRoute),
            Page::ConfirmResend => self.confirm_resend(&session).await,
            Page::ShareOffer => self.share_offer(&session, request).await,
            Page::InvitationAccept => self.invitation_accept(&session, request).await,
            Page::Home => Ok(redirect("/console/data")),
            Page::SignOut => self.sign_out(&session).await,
            Page::PasswordForm => self.password_form(&session, None),
            Page::Password => self.password(&session, request).await,
            Page::Data => self.data_page(&session).await,
            Page::Indicator => self.indicator_page(&session, &param("indicator")).await,
            Page::Genome => self.genome_page(&session, request).await,
            Page::Upload => self.upload_page(&session).await,
            Page::UploadCreate => self.upload_create(&session, request).await,
            Page::UploadStatus => self.upload_status(&session, &param("id")).await,
            Page::Connect => self.connect_page(&session).await,
            Page::UrlCreate => self.url_create(&session).await,
            Page::UrlRevoke => self.url_revoke(&session).await,
            Page::Servers => self.servers_page(&session, request).await,
            Page::ServerAdd => self.server_add(&session, request).await,
            Page::ServerEditForm => self.server_edit_form(&session, &param("name")).await,
            Page::ServerEdit => self.server_edit(&session, &param("name"), request).await,
            Page::ServerToggle => self.server_toggle(&session, &param("name")).await,
            Page::ServerProbe => self.server_probe(&session, &param("name")).await,
            Page::ServerDelete => self.server_delete(&session, &param("name")).await,
            Page::Access => self.access_page(&session, request).await,
            Page::GrantRevoke => self.grant_revoke(&session, &param("client_id")).await,
            Page::ShareRevoke => self.share_revoke(&session, request).await,
            Page::TemporaryUrlRevoke => self.temporary_url_revoke(&session, request).await,
            Page::SignOutAll => self.sign_out_all(&session).await,
            Page::Account => self.account_page(&session, request).await,
            Page::Export => self.export(&session).await,
            Page::DeleteData => self.delete_data(&session, request).await,
            Page::DeleteAccount => self.delete_account(&session, request).await,
        }
    }

    /// The one mapping of a refusal to what the console shows: JSON for the upload
    /// page's script, otherwise a page in the console's frame with the refusal's status.
    fn error_page(&self, page: Page, error: ApiError) -> Response<Bytes> {
        if matches!(page, Page::UploadCreate | Page::UploadStatus) {
            return error.into_response();
        }
        let status = error.status();
        let message = error.message();
        html(
            status,
            layout::message_page("Something went wrong", &message),
        )
    }
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
pub(crate) fn decode(segment: &str) -> String {
    let encoded = format!("x={}", segment.replace('+', "%2B"));
    form_urlencoded::parse(encoded.as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

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
