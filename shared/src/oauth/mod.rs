//! The OAuth 2.1 authorization server for MCP clients (C1-C4): metadata, dynamic
//! client registration, the authorize sign-in and consent pages, the token endpoint
//! (authorization code with PKCE S256, refresh tokens with rotation and reuse
//! detection, client credentials), introspection, and `/mcplogin`, the page the
//! login prompt opens, which completes a device-style login state.
//!
//! Owns the RFC 6749 error codes and every check on codes, clients and redirect URIs.
//! Stores through `Store`; never logs a code, a token, a secret or a password.

mod metadata;
mod pages;

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use http::{HeaderValue, Request, Response, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::domain::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};
use crate::http as web;
use crate::identity::{Grant, Jwts, Sealer, authenticate, random_secret, secret_hash};
use crate::remote::GuardedHttp;
use crate::store::{Store, StoreError};

pub use metadata::SCOPES;

/// Fetching a client's metadata document: time and size bounds.
const CIMD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const CIMD_MAX_BYTES: usize = 64 * 1024;

/// Authorization codes live ten minutes and are single use.
pub const CODE_SECS: u64 = 600;
pub const ACCESS_TOKEN_SECS: u64 = 3600;
pub const REFRESH_TOKEN_SECS: u64 = 30 * 24 * 3600;
/// A token the `/mcplogin` flow hands to a polling client.
pub const LOGIN_TOKEN_SECS: u64 = 24 * 3600;
const FORM_SECS: u64 = 600;
const CSRF_COOKIE: &str = "mirobody_csrf";

pub struct OAuthApi {
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
}

/// What the authorization server is built on (built once per process).
pub struct OAuthServices {
    pub store: Arc<dyn Store>,
    pub jwts: Arc<Jwts>,
    pub sealer: Arc<Sealer>,
    pub clock: Arc<dyn Clock>,
    /// Fetches Client ID Metadata Documents through the address guard.
    pub http: Arc<GuardedHttp>,
    /// Key for the sign-in forms' CSRF tokens.
    pub form_key: [u8; 32],
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
        "storage is unavailable",
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
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        ),
    );
    no_store(response)
}

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

fn redirect(location: &str) -> Response<Bytes> {
    let mut response = web::empty(StatusCode::FOUND);
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    no_store(response)
}

fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    let encoded: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let joiner = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{joiner}{encoded}")
}

/// PKCE S256: BASE64URL(SHA256(verifier)) == challenge, verifier 43-128 unreserved characters.
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let valid = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    valid && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

/// A client's redirect URIs (registered or in its metadata document): 1 to 10, each
/// acceptable.
fn acceptable_redirects(uris: &[String]) -> bool {
    (1..=10).contains(&uris.len()) && uris.iter().all(|u| acceptable_redirect(u))
}

/// A client's display name from its metadata, at most 100 characters.
fn client_name(metadata: &Value) -> Option<String> {
    metadata
        .get("client_name")
        .and_then(Value::as_str)
        .map(|n| n.chars().take(100).collect())
}

/// Every space-separated scope is one this server knows.
fn known_scopes(scope: &str) -> bool {
    scope.split_whitespace().all(|s| SCOPES.contains(&s))
}

/// A redirect URI a client may register: absolute https, or http to a loopback host
/// (native apps, RFC 8252); never a fragment.
fn acceptable_redirect(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
        // Private-use schemes of native apps (`com.example.app:/callback`).
        scheme => scheme.contains('.'),
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
struct SignInForm<'a> {
    action: &'a str,
    /// The requesting client's name (consent), or `None` for `/mcplogin`.
    name: Option<&'a str>,
    scope: &'a str,
    /// Hidden fields carried through the post.
    fields: &'a [(&'a str, &'a str)],
    /// What the CSRF token is bound to.
    binding: &'a str,
    /// Where the post's answer redirects (the client's redirect URI), if anywhere.
    redirect_uri: Option<&'a str>,
}

/// The parameters of an authorization request, validated.
struct AuthorizeRequest {
    client: OAuthClient,
    redirect_uri: String,
    state: Option<String>,
    scope: String,
    code_challenge: String,
    resource: Option<String>,
}

impl OAuthApi {
    /// `origin` is the issuer; `resource` the MCP endpoint's URL.
    pub fn new(services: OAuthServices, origin: String, resource: String) -> Self {
        let OAuthServices {
            store,
            jwts,
            sealer,
            clock,
            http,
            form_key,
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
        }
    }

    /// A registered client, or (Client ID Metadata Documents) a client whose id is the
    /// https URL of its metadata, fetched through the address guard like every outbound call.
    async fn load_client(&self, client_id: &str) -> Result<Option<OAuthClient>, StoreError> {
        let dev = self.http.guard().policy().allows_insecure_loopback();
        if client_id.starts_with("https://") || (dev && client_id.starts_with("http://")) {
            return Ok(self.client_metadata_document(client_id).await);
        }
        self.store.client(client_id).await
    }

    async fn client_metadata_document(&self, url: &str) -> Option<OAuthClient> {
        let response = self
            .http
            .get(url, CIMD_TIMEOUT, CIMD_MAX_BYTES)
            .await
            .ok()?;
        if !response.status.is_success() {
            return None;
        }
        let doc: Value = serde_json::from_slice(&response.body).ok()?;
        if doc.get("client_id")?.as_str()? != url {
            return None;
        }
        let redirect_uris: Vec<String> = doc
            .get("redirect_uris")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        if !acceptable_redirects(&redirect_uris) {
            return None;
        }
        Some(OAuthClient {
            client_id: url.to_string(),
            secret_hash: None,
            redirect_uris,
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            token_endpoint_auth_method: "none".into(),
            client_name: client_name(&doc),
            created_at: self.clock.now(),
        })
    }

    /// C1: the same bytes at every authorization-server metadata path.
    pub fn server_metadata(&self) -> Response<Bytes> {
        web::json_bytes(StatusCode::OK, self.server_metadata.clone())
    }

    pub fn resource_metadata(&self) -> Response<Bytes> {
        web::json_bytes(StatusCode::OK, self.resource_metadata.clone())
    }

    /// Open dynamic client registration (RFC 7591) with validated redirect URIs.
    pub async fn register(&self, body: &[u8]) -> Response<Bytes> {
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
        if !acceptable_redirects(&redirect_uris) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_redirect_uri",
                "redirect_uris must be 1-10 absolute https URIs (http only for localhost), without fragments",
            );
        }
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
        let known = ["authorization_code", "refresh_token", "client_credentials"];
        if grant_types.is_empty() || grant_types.iter().any(|g| !known.contains(&g.as_str())) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "unsupported grant_types",
            );
        }
        if method == "none" && grant_types.iter().any(|g| g == "client_credentials") {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                "client_credentials needs a confidential client",
            );
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
            "response_types": ["code"],
            "token_endpoint_auth_method": client.token_endpoint_auth_method,
            "client_id_issued_at": client.created_at,
        });
        if let Some(secret) = secret {
            out["client_secret"] = secret.into();
            out["client_secret_expires_at"] = 0.into();
        }
        no_store(web::json(StatusCode::CREATED, &out))
    }

    /// Validates an authorization request. Errors about the client or the redirect
    /// URI are shown on a page (never redirected, RFC 6749 4.1.2.1); others redirect.
    async fn authorize_request(&self, params: &Form) -> Result<AuthorizeRequest, Response<Bytes>> {
        let page_error = |text: &str| {
            html(
                StatusCode::BAD_REQUEST,
                pages::message("Cannot sign in", text),
            )
        };
        let Some(client_id) = field(params, "client_id") else {
            return Err(page_error("client_id is missing"));
        };
        let client = match self.load_client(client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(page_error("this application is not registered")),
            Err(e) => return Err(unavailable(e)),
        };
        let redirect_uri = match field(params, "redirect_uri") {
            Some(uri) if client.redirect_uris.iter().any(|r| r == uri) => uri.to_string(),
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
            _ => return Err(page_error("redirect_uri does not match the registration")),
        };
        let state = field(params, "state").map(String::from);
        let fail = |error: &str, description: &str| {
            let mut pairs = vec![
                ("error", error),
                ("error_description", description),
                ("iss", self.origin.as_str()),
            ];
            if let Some(state) = &state {
                pairs.push(("state", state.as_str()));
            }
            redirect(&with_query(&redirect_uri, &pairs))
        };
        if field(params, "response_type") != Some("code") {
            return Err(fail(
                "unsupported_response_type",
                "response_type must be code",
            ));
        }
        if !client.grant_types.iter().any(|g| g == "authorization_code") {
            return Err(fail(
                "unauthorized_client",
                "this client may not use the authorization code grant",
            ));
        }
        let code_challenge = match (
            field(params, "code_challenge"),
            field(params, "code_challenge_method"),
        ) {
            (Some(challenge), Some("S256")) if challenge.len() == 43 => challenge.to_string(),
            (Some(_), Some("S256")) => {
                return Err(fail(
                    "invalid_request",
                    "code_challenge must be a base64url SHA-256",
                ));
            }
            (Some(_), _) => {
                return Err(fail(
                    "invalid_request",
                    "code_challenge_method must be S256",
                ));
            }
            (None, _) => {
                return Err(fail(
                    "invalid_request",
                    "PKCE is required: send code_challenge with S256",
                ));
            }
        };
        let scope = field(params, "scope").unwrap_or("mcp:tools").to_string();
        if !known_scopes(&scope) {
            return Err(fail("invalid_scope", "unknown scope"));
        }
        let resource = field(params, "resource").map(String::from);
        if resource.as_deref().is_some_and(|r| r != self.resource) {
            return Err(fail(
                "invalid_target",
                "resource must be this server's MCP endpoint",
            ));
        }
        Ok(AuthorizeRequest {
            client,
            redirect_uri,
            state,
            scope,
            code_challenge,
            resource,
        })
    }

    fn csrf(&self, nonce: &str, binding: &str, issued: u64) -> String {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(&self.form_key).expect("HMAC takes any key");
        mac.update(format!("{nonce}|{binding}|{issued}").as_bytes());
        format!(
            "{issued}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        )
    }

    /// Double-submit: the form's token is an HMAC over the cookie's nonce, the
    /// request it was issued for, and its age.
    fn csrf_ok(&self, request: &Request<Bytes>, token: Option<&str>, binding: &str) -> bool {
        let (Some(nonce), Some(token)) = (cookie(request, CSRF_COOKIE), token) else {
            return false;
        };
        let Some(issued) = token
            .split_once('.')
            .and_then(|(t, _)| t.parse::<u64>().ok())
        else {
            return false;
        };
        let fresh = self.clock.now().saturating_sub(issued) <= FORM_SECS;
        fresh && self.csrf(&nonce, binding, issued).as_bytes() == token.as_bytes()
    }

    fn form_page(
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
        } = form;
        let nonce = cookie(request, CSRF_COOKIE)
            .filter(|n| n.len() >= 20)
            .unwrap_or_else(|| random_secret(24));
        let csrf = self.csrf(&nonce, binding, self.clock.now());
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        all.push(("csrf", &csrf));
        let status = if error.is_some() {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::OK
        };
        let mut response = html(
            status,
            pages::sign_in(action, name, scope, &pages::hidden(&all), error),
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

    /// The fields an authorization request carries through the form.
    fn carried(params: &Form) -> Vec<(&str, &str)> {
        [
            "client_id",
            "redirect_uri",
            "response_type",
            "scope",
            "state",
            "code_challenge",
            "code_challenge_method",
            "resource",
        ]
        .into_iter()
        .filter_map(|k| field(params, k).map(|v| (k, v)))
        .collect()
    }

    fn binding(request: &AuthorizeRequest) -> String {
        format!(
            "authorize|{}|{}|{}",
            request.client.client_id, request.redirect_uri, request.code_challenge
        )
    }

    /// `GET /oauth/authorize`: the sign-in and consent page.
    pub async fn authorize_page(&self, request: &Request<Bytes>, action: &str) -> Response<Bytes> {
        let params = query(request);
        let auth = match self.authorize_request(&params).await {
            Ok(auth) => auth,
            Err(response) => return response,
        };
        self.consent_page(request, action, &params, &auth, None)
    }

    /// The sign-in and consent form for a validated authorization request.
    fn consent_page(
        &self,
        request: &Request<Bytes>,
        action: &str,
        params: &Form,
        auth: &AuthorizeRequest,
        error: Option<&str>,
    ) -> Response<Bytes> {
        let name = auth
            .client
            .client_name
            .as_deref()
            .unwrap_or(&auth.client.client_id);
        let form = SignInForm {
            action,
            name: Some(name),
            scope: &auth.scope,
            fields: &Self::carried(params),
            binding: &Self::binding(auth),
            redirect_uri: Some(&auth.redirect_uri),
        };
        self.form_page(request, form, error)
    }

    /// `POST /oauth/authorize`: check the form, the credentials and the decision, then
    /// redirect with a code (or `access_denied`), `state` and `iss`.
    pub async fn authorize_submit(
        &self,
        request: &Request<Bytes>,
        action: &str,
    ) -> Response<Bytes> {
        let params = form(request.body());
        let auth = match self.authorize_request(&params).await {
            Ok(auth) => auth,
            Err(response) => return response,
        };
        if !self.csrf_ok(request, field(&params, "csrf"), &Self::binding(&auth)) {
            return html(
                StatusCode::FORBIDDEN,
                pages::message(
                    "Cannot sign in",
                    "The form expired or did not come from this site. Start again from your application.",
                ),
            );
        }
        let mut pairs: Vec<(&str, &str)> = vec![("iss", self.origin.as_str())];
        if let Some(state) = &auth.state {
            pairs.push(("state", state));
        }
        if field(&params, "decision") != Some("allow") {
            pairs.insert(0, ("error", "access_denied"));
            return redirect(&with_query(&auth.redirect_uri, &pairs));
        }
        let user_id = match self.check_credentials(&params).await {
            Ok(Some(user_id)) => user_id,
            Ok(None) => {
                return self.consent_page(
                    request,
                    action,
                    &params,
                    &auth,
                    Some("Wrong e-mail or password."),
                );
            }
            Err(e) => return unavailable(e),
        };
        let code = random_secret(32);
        let record = AuthCode {
            client_id: auth.client.client_id.clone(),
            user_id,
            scope: auth.scope.clone(),
            redirect_uri: auth.redirect_uri.clone(),
            code_challenge: auth.code_challenge.clone(),
            resource: auth.resource.clone(),
            expires_at: self.clock.now() + CODE_SECS,
        };
        if let Err(e) = self.store.put_code(&secret_hash(&code), &record).await {
            return unavailable(e);
        }
        pairs.insert(0, ("code", &code));
        redirect(&with_query(&auth.redirect_uri, &pairs))
    }

    async fn check_credentials(&self, params: &Form) -> Result<Option<String>, StoreError> {
        match (field(params, "email"), field(params, "password")) {
            (Some(email), Some(password)) => {
                authenticate(self.store.as_ref(), email, password).await
            }
            _ => Ok(None),
        }
    }

    /// The client making a token request: authenticated when confidential.
    async fn client(
        &self,
        request: &Request<Bytes>,
        params: &Form,
    ) -> Result<OAuthClient, Response<Bytes>> {
        let invalid = || {
            oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client authentication failed",
            )
        };
        let basic = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|v| STANDARD.decode(v.trim()).ok())
            .and_then(|v| String::from_utf8(v).ok())
            .and_then(|v| {
                let (id, secret) = v.split_once(':')?;
                let decode = |s: &str| {
                    form_urlencoded::parse(format!("x={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                };
                Some((decode(id)?, decode(secret)?))
            });
        let (client_id, secret) = match (&basic, field(params, "client_id")) {
            (Some((id, secret)), _) => (id.clone(), Some(secret.clone())),
            (None, Some(id)) => (
                id.to_string(),
                field(params, "client_secret").map(String::from),
            ),
            (None, None) => return Err(invalid()),
        };
        let client = match self.load_client(&client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(invalid()),
            Err(e) => return Err(unavailable(e)),
        };
        match (&client.secret_hash, secret) {
            (None, _) => Ok(client),
            (Some(hash), Some(secret)) if secret_hash(&secret) == *hash => Ok(client),
            _ => Err(invalid()),
        }
    }

    /// `POST /oauth/token`.
    pub async fn token(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = form(request.body());
        let client = match self.client(request, &params).await {
            Ok(client) => client,
            Err(response) => return response,
        };
        let grant_type = field(&params, "grant_type").unwrap_or("");
        if !client.grant_types.iter().any(|g| g == grant_type) {
            return match grant_type {
                "authorization_code" | "refresh_token" | "client_credentials" => oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unauthorized_client",
                    "this client may not use that grant",
                ),
                _ => oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unsupported_grant_type",
                    "unsupported grant_type",
                ),
            };
        }
        let now = self.clock.now();
        match grant_type {
            "authorization_code" => self.exchange_code(&client, &params, now).await,
            "refresh_token" => self.refresh(&client, &params, now).await,
            _ => {
                let scope = field(&params, "scope").unwrap_or("mcp:tools");
                if !known_scopes(scope) {
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", "unknown scope");
                }
                let audience = match self.audience(field(&params, "resource")) {
                    Some(audience) => audience,
                    None => return wrong_target(),
                };
                let subject = format!("client:{}", client.client_id);
                let token = self.jwts.issue(&Grant {
                    subject: &subject,
                    audience: Some(&audience),
                    scope: Some(scope),
                    client_id: Some(&client.client_id),
                    lifetime_secs: ACCESS_TOKEN_SECS,
                    now,
                });
                token_response(
                    json!({ "access_token": token, "token_type": "Bearer", "expires_in": ACCESS_TOKEN_SECS, "scope": scope }),
                )
            }
        }
    }

    /// RFC 8707: a requested resource must be this server's MCP endpoint.
    fn audience(&self, resource: Option<&str>) -> Option<String> {
        match resource {
            None => Some(self.resource.clone()),
            Some(r) if r == self.resource => Some(r.to_string()),
            Some(_) => None,
        }
    }

    async fn exchange_code(
        &self,
        client: &OAuthClient,
        params: &Form,
        now: u64,
    ) -> Response<Bytes> {
        let Some(code) = field(params, "code") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "code is missing",
            );
        };
        let record = match self.store.take_code(&secret_hash(code), now).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "the code is invalid, expired or already used",
                );
            }
            Err(e) => return unavailable(e),
        };
        if record.client_id != client.client_id {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the code was issued to another client",
            );
        }
        if field(params, "redirect_uri") != Some(record.redirect_uri.as_str()) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "redirect_uri does not match the authorization request",
            );
        }
        let Some(verifier) = field(params, "code_verifier") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "code_verifier is required (PKCE)",
            );
        };
        if !pkce_matches(verifier, &record.code_challenge) {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "code_verifier does not match the code_challenge",
            );
        }
        let requested = field(params, "resource");
        if requested.is_some()
            && record.resource.is_some()
            && requested != record.resource.as_deref()
        {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource differs from the authorization request",
            );
        }
        let audience = match self.audience(requested.or(record.resource.as_deref())) {
            Some(audience) => audience,
            None => return wrong_target(),
        };
        let refresh = RefreshRecord {
            user_id: record.user_id.clone(),
            client_id: client.client_id.clone(),
            scope: record.scope.clone(),
            resource: Some(audience),
            family_id: random_secret(16),
            expires_at: now + REFRESH_TOKEN_SECS,
        };
        self.issue_pair(&refresh, now).await
    }

    async fn refresh(&self, client: &OAuthClient, params: &Form, now: u64) -> Response<Bytes> {
        let Some(token) = field(params, "refresh_token") else {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "refresh_token is missing",
            );
        };
        match self.store.use_refresh(&secret_hash(token), now).await {
            Ok(RefreshUse::Fresh(record)) if record.client_id == client.client_id => {
                let next = RefreshRecord {
                    expires_at: now + REFRESH_TOKEN_SECS,
                    ..record
                };
                self.issue_pair(&next, now).await
            }
            Ok(RefreshUse::Fresh(_)) => oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the refresh token belongs to another client",
            ),
            Ok(RefreshUse::Reused(record)) => {
                // Reuse detection: a rotated token came back, so its whole family is revoked.
                if let Err(e) = self
                    .store
                    .revoke_refresh_family(&record.family_id, now + REFRESH_TOKEN_SECS)
                    .await
                {
                    return unavailable(e);
                }
                oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "the refresh token was already used; sign in again",
                )
            }
            Ok(RefreshUse::Unknown) => oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "the refresh token is invalid or expired",
            ),
            Err(e) => unavailable(e),
        }
    }

    async fn issue_pair(&self, refresh: &RefreshRecord, now: u64) -> Response<Bytes> {
        let refresh_token = random_secret(32);
        if let Err(e) = self
            .store
            .put_refresh(&secret_hash(&refresh_token), refresh)
            .await
        {
            return unavailable(e);
        }
        let access = self.jwts.issue(&Grant {
            subject: &refresh.user_id,
            audience: refresh.resource.as_deref(),
            scope: Some(&refresh.scope),
            client_id: Some(&refresh.client_id),
            lifetime_secs: ACCESS_TOKEN_SECS,
            now,
        });
        token_response(json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_SECS,
            "refresh_token": refresh_token,
            "scope": refresh.scope
        }))
    }

    /// `POST /oauth/introspect` (RFC 7662).
    pub fn introspect(&self, request: &Request<Bytes>) -> Response<Bytes> {
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

    fn login_binding(state: &str) -> String {
        format!("mcplogin|{state}")
    }

    /// The `/mcplogin` sign-in form, carrying `oauth_params` through the post.
    fn login_form(
        &self,
        request: &Request<Bytes>,
        params: &Form,
        state: &str,
        error: Option<&str>,
    ) -> Response<Bytes> {
        let oauth_params = field(params, "oauth_params").unwrap_or("");
        self.form_page(
            request,
            SignInForm {
                action: "/mcplogin",
                name: None,
                scope: "mcp:tools",
                fields: &[("oauth_params", oauth_params)],
                binding: &Self::login_binding(state),
                redirect_uri: None,
            },
            error,
        )
    }

    /// The `state` inside `/mcplogin?oauth_params=…`.
    fn login_state_of(params: &Form) -> Option<String> {
        let inner = form(field(params, "oauth_params")?.as_bytes());
        field(&inner, "state").map(String::from)
    }

    /// `GET /mcplogin`: the page the login prompt opens.
    pub async fn login_page(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = query(request);
        let Some(state) = Self::login_state_of(&params) else {
            return html(
                StatusCode::BAD_REQUEST,
                pages::message(
                    "Cannot sign in",
                    "This link is incomplete; ask your assistant for a new one.",
                ),
            );
        };
        self.login_form(request, &params, &state, None)
    }

    /// `POST /mcplogin`: sign in, then complete the login state with a sealed token.
    pub async fn login_submit(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let params = form(request.body());
        let Some(state) = Self::login_state_of(&params) else {
            return html(
                StatusCode::BAD_REQUEST,
                pages::message("Cannot sign in", "This form is incomplete."),
            );
        };
        if !self.csrf_ok(
            request,
            field(&params, "csrf"),
            &Self::login_binding(&state),
        ) {
            return html(
                StatusCode::FORBIDDEN,
                pages::message(
                    "Cannot sign in",
                    "The form expired or did not come from this site.",
                ),
            );
        }
        if field(&params, "decision") != Some("allow") {
            return html(
                StatusCode::OK,
                pages::message("Not signed in", "You declined. You can close this window."),
            );
        }
        let user_id = match self.check_credentials(&params).await {
            Ok(Some(user_id)) => user_id,
            Ok(None) => {
                return self.login_form(
                    request,
                    &params,
                    &state,
                    Some("Wrong e-mail or password."),
                );
            }
            Err(e) => return unavailable(e),
        };
        let now = self.clock.now();
        let token = self.jwts.issue(&Grant {
            subject: &user_id,
            audience: Some(&self.resource),
            scope: Some("mcp:tools"),
            client_id: None,
            lifetime_secs: LOGIN_TOKEN_SECS,
            now,
        });
        let sealed = self
            .sealer
            .seal(token.as_bytes(), &format!("login-state:{state}"));
        match self.store.complete_login_state(&state, &sealed, now).await {
            Ok(true) => html(
                StatusCode::OK,
                pages::message(
                    "Signed in",
                    "You are signed in. You can close this window and return to your assistant.",
                ),
            ),
            Ok(false) => html(
                StatusCode::GONE,
                pages::message(
                    "Cannot sign in",
                    "This sign-in link expired or was already used; ask your assistant for a new one.",
                ),
            ),
            Err(e) => unavailable(e),
        }
    }
}

fn wrong_target() -> Response<Bytes> {
    oauth_error(
        StatusCode::BAD_REQUEST,
        "invalid_target",
        "resource must be this server's MCP endpoint",
    )
}

fn token_response(body: Value) -> Response<Bytes> {
    let mut response = no_store(web::json(StatusCode::OK, &body));
    response
        .headers_mut()
        .insert("pragma", HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_a_known_pair() {
        let verifier = "dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA_n4qNhtpHqZ";
        assert!(pkce_matches(
            verifier,
            "NE2XJ59GphBVFt4KUjGdI4VnkWDNnYoWui8kGu3L2Wo"
        ));
        assert!(!pkce_matches(
            verifier,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!pkce_matches(
            "short",
            "NE2XJ59GphBVFt4KUjGdI4VnkWDNnYoWui8kGu3L2Wo"
        ));
    }

    #[test]
    fn redirect_uris_are_validated() {
        assert!(acceptable_redirect("https://app.example.com/callback"));
        assert!(acceptable_redirect("http://127.0.0.1:33418/callback"));
        assert!(acceptable_redirect("http://localhost/cb"));
        assert!(!acceptable_redirect("http://evil.example/cb"));
        assert!(!acceptable_redirect("https://app.example.com/cb#frag"));
        assert!(!acceptable_redirect("javascript:alert(1)"));
        assert!(!acceptable_redirect("not a url"));
    }
}
