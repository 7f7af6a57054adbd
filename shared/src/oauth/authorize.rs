//! `GET` and `POST /oauth/authorize`: validates an authorization request (client,
//! redirect URI, PKCE S256, scope, resource), shows the sign-in and consent page, and on
//! the post checks the form, the credentials and the decision, then redirects with a
//! single-use code (stored hashed) or an error, always with `state` and `iss`.
//!
//! A browser already signed in to the console (its session cookie verifies and was not
//! ended) is not asked for the password again: the page names the account, offers
//! another one (`prompt=login`), and its form's CSRF token is bound to that session, so
//! the post is taken as that person only from the page that showed it.
//!
//! Every error found before the user has interacted is shown on a page, never
//! redirected: every client this server knows is dynamically registered or a Client ID
//! Metadata Document, so redirecting an invalid request to its redirect URI would make
//! our origin an open redirector. Only the user's own answer on the form
//! (deny, or a code) is redirected. Does not issue tokens; the token endpoint exchanges
//! the code.

use bytes::Bytes;
use http::header::LOCATION;
use http::{HeaderValue, Request, Response, StatusCode};

use super::clients::CLIENT_NAME_CHARS;
use super::signin::{self, SignInForm};
use super::{
    CODE_SECS, Form, OAuthApi, field, form, html, known_scopes, no_store, pages, query, unavailable,
};
use crate::domain::{AuthCode, OAuthClient};
use crate::http::{self as web, SESSION_COOKIE, cookie};
use crate::identity::{Claims, SERVERS_SCOPE, SignIn, random_secret, secret_hash, shown_name};
use crate::store::StoreError;

/// The console session a consent is given under: its claims and the account's address.
struct Session {
    claims: Claims,
    email: String,
}

/// The redirect URI as the consent page names it: its host (with a port that is not the
/// scheme's own), or `scheme:` for an app's private-use scheme.
fn redirect_shown(redirect_uri: &str) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(url) => match (url.host_str(), url.scheme()) {
            (Some(host), "http" | "https") => match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            },
            (_, scheme) => format!("{scheme}: (an app on your device)"),
        },
        Err(_) => redirect_uri.to_string(),
    }
}

/// The scope the person granted: what the client asked for, less [`SERVERS_SCOPE`]
/// unless the consent form's box for it was left ticked.
fn granted_scope(requested: &str, form: &Form) -> String {
    if field(form, "servers") == Some("yes") {
        return requested.to_string();
    }
    requested
        .split_whitespace()
        .filter(|scope| *scope != SERVERS_SCOPE)
        .collect::<Vec<_>>()
        .join(" ")
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
    /// Validates an authorization request. Every error is shown on a page, never
    /// redirected: RFC 6749 4.1.2.1 allows the redirect, but for a client anyone can
    /// register it would make this origin an open redirector, and no user has
    /// interacted yet. The page names the RFC 6749 error code.
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
        let fail = |error: &str, description: &str| page_error(&format!("{description} ({error})"));
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
            "prompt",
        ]
        .into_iter()
        .filter_map(|k| field(params, k).map(|v| (k, v)))
        .collect()
    }

    /// What the form's CSRF token is bound to: the request, and the console session
    /// when the consent is given under one.
    fn binding(request: &AuthorizeRequest, session: Option<&Session>) -> String {
        let session = session.map_or("", |s| s.claims.session_key().unwrap_or_default());
        format!(
            "authorize|{}|{}|{}|{session}",
            request.client.client_id, request.redirect_uri, request.code_challenge
        )
    }

    /// The person this browser is signed in to the console as, unless the request asks
    /// for a sign-in (`prompt=login`): a session token that verifies, was not ended, and
    /// whose account exists.
    async fn console_session(
        &self,
        request: &Request<Bytes>,
        params: &Form,
    ) -> Result<Option<Session>, StoreError> {
        if field(params, "prompt") == Some("login") {
            return Ok(None);
        }
        let Some(token) = cookie(request.headers(), SESSION_COOKIE) else {
            return Ok(None);
        };
        let Some(claims) = self.jwts.live_session(&*self.store, &token).await? else {
            return Ok(None);
        };
        Ok(self
            .store
            .account(&claims.sub)
            .await?
            .map(|account| Session {
                claims,
                email: account.email,
            }))
    }

    /// `GET /oauth/authorize`: the sign-in and consent page.
    pub(crate) async fn authorize_page(
        &self,
        request: &Request<Bytes>,
        action: &str,
    ) -> Response<Bytes> {
        let params = query(request);
        let auth = match self.authorize_request(&params).await {
            Ok(auth) => auth,
            Err(response) => return response,
        };
        let session = match self.console_session(request, &params).await {
            Ok(session) => session,
            Err(e) => return unavailable(e),
        };
        self.consent_page(request, action, &params, &auth, session.as_ref(), None)
    }

    /// The sign-in and consent form for a validated authorization request.
    fn consent_page(
        &self,
        request: &Request<Bytes>,
        action: &str,
        params: &Form,
        auth: &AuthorizeRequest,
        session: Option<&Session>,
        error: Option<&str>,
    ) -> Response<Bytes> {
        // Cleaned as the login prompt's names are: no control, bidi or zero-width
        // characters, so one name cannot display as another.
        let name = auth
            .client
            .client_name
            .as_deref()
            .and_then(|name| shown_name(name, CLIENT_NAME_CHARS))
            .unwrap_or_else(|| auth.client.client_id.clone());
        let redirect_to = redirect_shown(&auth.redirect_uri);
        let carried = Self::carried(params);
        // The same request asking for a sign-in, for "Use another account".
        let other_account = {
            let mut query = form_urlencoded::Serializer::new(String::new());
            for (name, value) in carried.iter().filter(|(name, _)| *name != "prompt") {
                query.append_pair(name, value);
            }
            query.append_pair("prompt", "login");
            format!("{action}?{}", query.finish())
        };
        let form = SignInForm {
            action,
            consent: Some(pages::Consent {
                client: &name,
                redirect_to: &redirect_to,
                scope: &auth.scope,
            }),
            fields: &carried,
            binding: &Self::binding(auth, session),
            redirect_uri: Some(&auth.redirect_uri),
            asked: None,
            signed_in: session.map(|s| pages::SignedIn {
                email: &s.email,
                other_account: &other_account,
            }),
        };
        self.form_page(request, form, error)
    }

    /// `POST /oauth/authorize`: check the form, the credentials and the decision, then
    /// redirect with a code (or `access_denied`), `state` and `iss`.
    pub(crate) async fn authorize_submit(
        &self,
        request: &Request<Bytes>,
        action: &str,
    ) -> Response<Bytes> {
        let params = form(request.body());
        let auth = match self.authorize_request(&params).await {
            Ok(auth) => auth,
            Err(response) => return response,
        };
        // A form with an e-mail field signs in; one without is the signed-in page's.
        let session = match field(&params, "email") {
            Some(_) => None,
            None => match self.console_session(request, &params).await {
                Ok(session) => session,
                Err(e) => return unavailable(e),
            },
        };
        let binding = Self::binding(&auth, session.as_ref());
        if !self.csrf_ok(request, field(&params, "csrf"), &binding) {
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
        let signed_in = match session {
            Some(session) => Ok(SignIn::Verified(session.claims.sub)),
            None => self.check_credentials(request, &params).await,
        };
        let user_id = match signed_in {
            Ok(SignIn::Verified(user_id)) => user_id,
            Ok(SignIn::Wrong) => {
                return self.consent_page(
                    request,
                    action,
                    &params,
                    &auth,
                    None,
                    Some("Wrong e-mail or password."),
                );
            }
            Ok(SignIn::Limited(retry_after)) => {
                let page =
                    self.consent_page(request, action, &params, &auth, None, Some(signin::LIMITED));
                return signin::limited(page, retry_after);
            }
            Err(e) => return unavailable(e),
        };
        // Stamped with the user's epoch: a sign-out everywhere or a
        // password change before the exchange ends the code too.
        let epoch = match self.store.token_state(&user_id).await {
            Ok(state) => state.epoch,
            Err(e) => return unavailable(e),
        };
        let now = self.clock.now();
        let code = random_secret(32);
        let record = AuthCode {
            client_id: auth.client.client_id.clone(),
            user_id,
            scope: granted_scope(&auth.scope, &params),
            redirect_uri: auth.redirect_uri.clone(),
            code_challenge: auth.code_challenge.clone(),
            resource: auth.resource.clone(),
            expires_at: now + CODE_SECS,
            epoch,
            issued_at: now,
        };
        if let Err(e) = self.store.put_code(&secret_hash(&code), &record).await {
            return unavailable(e);
        }
        pairs.insert(0, ("code", &code));
        redirect(&with_query(&auth.redirect_uri, &pairs))
    }
}
