//! `GET` and `POST /mcplogin`: the page the login prompt opens. Signing in there
//! completes the login state named in `oauth_params` with a token sealed to that state,
//! which the polling client then collects.
//!
//! Does not involve an OAuth client, a code or a redirect.

use bytes::Bytes;
use http::{Request, Response, StatusCode};

use super::signin::{self, SignInForm};
use super::{Form, LOGIN_TOKEN_SECS, OAuthApi, field, form, html, pages, query, unavailable};
use crate::identity::{Grant, SignIn, TokenKind, secret_hash};

impl OAuthApi {
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
        self.login_form(request, &params, &state, None)
    }

    /// `POST /mcplogin`: sign in, then complete the login state with a sealed token.
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
        let user_id = match self.check_credentials(request, &params).await {
            Ok(SignIn::Verified(user_id)) => user_id,
            Ok(SignIn::Wrong) => {
                return self.login_form(
                    request,
                    &params,
                    &state,
                    Some("Wrong e-mail or password."),
                );
            }
            Ok(SignIn::Limited(retry_after)) => {
                let page = self.login_form(request, &params, &state, Some(signin::LIMITED));
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
