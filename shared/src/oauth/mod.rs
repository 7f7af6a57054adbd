//! The OAuth 2.1 authorization server for MCP clients, one file per endpoint:
//! `metadata` (discovery documents), `register` (dynamic client registration),
//! `authorize` (the sign-in and consent page and its post), `token` (authorization code
//! with PKCE S256, refresh rotation and reuse detection; never client credentials),
//! `introspect`, `revoke` (RFC 7009), and `mcplogin` (the page the login prompt opens, which completes a
//! device-style login state). `clients` finds a client and checks its redirect URIs,
//! `signin` is the CSRF-protected sign-in form both pages share, `pages` renders HTML.
//!
//! This module holds `OAuthApi`, what it is built on, the lifetimes of what it issues,
//! and the responses every endpoint shares (RFC 6749 errors, `no-store`, HTML pages).
//! Owns the RFC 6749 error codes and every check on codes, clients and redirect URIs.
//! Stores through `Store`; never logs a code, a token, a secret or a password.

// The HTML endpoints (maud: authorize, mcplogin, pages, signin) are built where the
// pages are (the oauth and console groups).
#[cfg(feature = "pages")]
mod authorize;
mod clients;
mod introspect;
#[cfg(feature = "pages")]
mod mcplogin;
mod metadata;
#[cfg(feature = "pages")]
mod pages;
mod register;
mod revoke;
#[cfg(feature = "pages")]
mod signin;
mod token;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Request, Response, StatusCode};
use serde_json::json;

use crate::clock::Clock;
use crate::http as web;
use crate::identity::{Jwts, Passwords, Sealer};
use crate::remote::GuardedHttp;
use crate::store::{Store, StoreError};

pub(crate) use metadata::SCOPES;

/// Authorization codes live ten minutes and are single use.
pub(crate) const CODE_SECS: u64 = 600;
pub(crate) const ACCESS_TOKEN_SECS: u64 = 3600;
pub(crate) const REFRESH_TOKEN_SECS: u64 = 30 * 24 * 3600;
/// A dynamically registered client nobody uses lapses after a week (anonymous
/// registrations must not pile up for ever).
pub(crate) const UNUSED_CLIENT_SECS: u64 = 7 * 24 * 3600;
/// Once used at the token endpoint, a client lapses when idle for longer than its newest
/// refresh token lives (a day more, since the lapse time moves at most once a day).
pub(crate) const IDLE_CLIENT_SECS: u64 = REFRESH_TOKEN_SECS + 24 * 3600;
/// A token the `/mcplogin` flow hands to a polling client.
pub(crate) const LOGIN_TOKEN_SECS: u64 = 24 * 3600;

pub(crate) struct OAuthApi {
    pub store: Arc<dyn Store>,
    pub jwts: Arc<Jwts>,
    pub sealer: Arc<Sealer>,
    pub clock: Arc<dyn Clock>,
    /// The public origin (issuer), no trailing slash.
    pub origin: String,
    /// The MCP endpoint's URL: the default token audience and the RFC 9728 resource.
    pub resource: String,
    /// Key for the consent form's CSRF tokens.
    pub form_key: [u8; 32],
    server_metadata: Bytes,
    resource_metadata: Bytes,
    /// Fetches Client ID Metadata Documents, through the address guard.
    http: Arc<GuardedHttp>,
    /// Fetched Client ID Metadata Documents, per process.
    documents: clients::DocumentCache,
    /// The sign-in check, its limits and the hashing queue.
    passwords: Arc<Passwords>,
}

/// What the authorization server is built on (built once per process).
pub(crate) struct OAuthServices {
    /// The whole store: the authorization server spans three domains (its own clients,
    /// codes and refresh tokens; accounts for sign-in; login states for `/mcplogin`).
    pub store: Arc<dyn Store>,
    pub jwts: Arc<Jwts>,
    pub sealer: Arc<Sealer>,
    pub clock: Arc<dyn Clock>,
    /// Fetches Client ID Metadata Documents through the address guard.
    pub http: Arc<GuardedHttp>,
    /// Key for the sign-in forms' CSRF tokens.
    pub form_key: [u8; 32],
    /// The sign-in check, its limits and the hashing queue.
    pub passwords: Arc<Passwords>,
}

type Form = Vec<(String, String)>;

fn form(body: &[u8]) -> Form {
    form_urlencoded::parse(body).into_owned().collect()
}

fn field<'f>(form: &'f Form, name: &str) -> Option<&'f str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn query(request: &Request<Bytes>) -> Form {
    form(request.uri().query().unwrap_or("").as_bytes())
}

/// Marks a response `Cache-Control: no-store`: tokens, codes, client secrets, errors
/// and sign-in pages are never cached (RFC 6749 5.1).
fn no_store(mut response: Response<Bytes>) -> Response<Bytes> {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// An RFC 6749 error response.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response<Bytes> {
    no_store(web::json(
        status,
        &json!({ "error": error, "error_description": description }),
    ))
}

fn unavailable(error: StoreError) -> Response<Bytes> {
    tracing::warn!(%error, "OAuth store failure");
    oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        web::STORAGE_UNAVAILABLE,
    )
}

fn html(status: StatusCode, page: String) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(page));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    no_store(response)
}

/// Every space-separated scope is one this server knows.
fn known_scopes(scope: &str) -> bool {
    scope.split_whitespace().all(|s| SCOPES.contains(&s))
}

impl OAuthApi {
    /// `origin` is the issuer; `resource` the MCP endpoint's URL.
    pub(crate) fn new(services: OAuthServices, origin: String, resource: String) -> Self {
        let OAuthServices {
            store,
            jwts,
            sealer,
            clock,
            http,
            form_key,
            passwords,
        } = services;
        OAuthApi {
            server_metadata: metadata::authorization_server(&origin),
            resource_metadata: metadata::protected_resource(&origin, &resource),
            store,
            jwts,
            sealer,
            clock,
            origin,
            resource,
            form_key,
            http,
            documents: clients::DocumentCache::new(),
            passwords,
        }
    }
}
