//! `GET` and `POST /mcplogin`: the page the login prompt opens. It says who asked (the
//! MCP client's self-given name) and when, and asks for the user code that client
//! shows; signing in with the right code completes the login state named in
//! `oauth_params` with a token sealed to that state, which the initiating client then
//! collects once with its poll secret.
//!
//! Does not involve an OAuth client, a code or a redirect.

use bytes::Bytes;
use http::{Request, Response, StatusCode};

use super::signin::{self, SignInForm};
use super::{Form, LOGIN_TOKEN_SECS, OAuthApi, field, form, html, pages, query, unavailable};
use crate::domain::{LoginState, LoginStatus};
use crate::http::source_of;
use crate::identity::{Grant, SignIn, TokenKind, hashes_match, secret_hash, user_code_hash};

/// What the page says when the typed code is not the one the state was made with.
const WRONG_CODE: &str = "That code does not match the one your assistant shows. \
Nothing was signed in; check the code and try again.";

/// A time as the page shows it.
fn shown_time(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

impl OAuthApi {
    fn login_binding(state: &str) -> String {
        format!("mcplogin|{state}")
    }

    /// The `/mcplogin` sign-in form, carrying `oauth_params` through the post, saying
    /// who asked and when, and asking for the user code.
    fn login_form(
        &self,
        request: &Request<Bytes>,
        params: &Form,
        (state, login): (&str, &LoginState),
        error: Option<&str>,
    ) -> Response<Bytes> {
        let oauth_params = field(params, "oauth_params").unwrap_or("");
        let at = shown_time(login.created_at);
        self.form_page(
            request,
            SignInForm {
                action: "/mcplogin",
                consent: None,
                fields: &[("oauth_params", oauth_params)],
                binding: &Self::login_binding(state),
                redirect_uri: None,
                asked: Some(pages::Asked {
                    client: login.client_name.as_deref(),
                    at: &at,
                }),
                signed_in: None,
            },
            error,
        )
    }

    /// The `state` inside `/mcplogin?oauth_params=…`.
    fn login_state_of(params: &Form) -> Option<String> {
        let inner = form(field(params, "oauth_params")?.as_bytes());
        field(&inner, "state").map(String::from)
    }

    /// The pending, unexpired login the link names; else the page to answer with.
    async fn pending_login(&self, state: &str) -> Result<LoginState, Response<Bytes>> {
        match self.store.login_state(&secret_hash(state)).await {
            Ok(Some(login))
                if login.status == LoginStatus::Pending && login.expires_at > self.clock.now() =>
            {
                Ok(login)
            }
            Ok(_) => Err(html(
                StatusCode::GONE,
                pages::message(
                    "Cannot sign in",
                    "This sign-in link expired or was already used; ask your assistant for a new one.",
                ),
            )),
            Err(e) => Err(unavailable(e)),
        }
    }

    /// `GET /mcplogin`: the page the login prompt opens.
    pub(crate) async fn login_page(&self, request: &Request<Bytes>) -> Response<Bytes> {
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
        match self.pending_login(&state).await {
            Ok(login) => self.login_form(request, &params, (&state, &login), None),
            Err(page) => page,
        }
    }

    /// `POST /mcplogin`: check the user code, sign in, then complete the login state
    /// with a sealed token.
    pub(crate) async fn login_submit(&self, request: &Request<Bytes>) -> Response<Bytes> {
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
        let login = match self.pending_login(&state).await {
            Ok(login) => login,
            Err(page) => return page,
        };
        let form = (state.as_str(), &login);
        // The user code first, before any password work: a wrong one counts as a failed
        // sign-in for the e-mail and the source, and completes nothing.
        let typed = field(&params, "user_code").unwrap_or("");
        let checked = if hashes_match(&login.user_code_hash, &user_code_hash(&state, typed)) {
            self.check_credentials(request, &params).await
        } else {
            let email = field(&params, "email").unwrap_or("");
            match self.passwords.refuse(email, source_of(request)).await {
                Ok(SignIn::Wrong) => {
                    return self.login_form(request, &params, form, Some(WRONG_CODE));
                }
                other => other,
            }
        };
        let user_id = match checked {
            Ok(SignIn::Verified(user_id)) => user_id,
            Ok(SignIn::Wrong) => {
                return self.login_form(request, &params, form, Some("Wrong e-mail or password."));
            }
            Ok(SignIn::Limited(retry_after)) => {
                let page = self.login_form(request, &params, form, Some(signin::LIMITED));
                return signin::limited(page, retry_after);
            }
            Err(e) => return unavailable(e),
        };
        let now = self.clock.now();
        // At the user's current epoch, so signing out everywhere ends it too.
        let epoch = match self.store.token_state(&user_id).await {
            Ok(state) => state.epoch,
            Err(e) => return unavailable(e),
        };
        // An access token for the MCP endpoint only, never a first-party session: whoever
        // collects it from the poll can call tools, not manage the account.
        let token = self.jwts.issue(&Grant {
            kind: TokenKind::Access,
            subject: &user_id,
            audience: Some(&self.resource),
            scope: Some("mcp:tools"),
            client_id: None,
            lifetime_secs: LOGIN_TOKEN_SECS,
            now,
            epoch,
            sid: None,
        });
        let sealed = self
            .sealer
            .seal(token.as_bytes(), &format!("login-state:{state}"));
        match self
            .store
            .complete_login_state(&secret_hash(&state), &sealed, now)
            .await
        {
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
