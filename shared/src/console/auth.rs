//! Sign up, sign in, sign out and change password: the forms, and the session cookie
//! they start or end. The checks are the account API's own (`AccountApi`: the e-mail
//! rules, the password length, the sign-up and sign-in limits); a refusal re-shows the
//! form with what was wrong, the e-mail kept and the password never echoed.

use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderValue, Request, Response, StatusCode};
use maud::{Markup, html};

use super::layout::{self, FieldProblem, Notice};
use super::{
    Answer, ConsoleApi, Session, field, form, html as page_response, query_param, redirect,
};
use crate::http::{ApiError, source_of};
use crate::identity::MIN_PASSWORD;

/// Where a sign-in goes next: a console path from `next`, else the data page.
fn next_path(next: Option<&str>) -> &str {
    match next {
        Some(path)
            if path.starts_with("/console/")
                && path.len() <= 512
                && !path.chars().any(|c| c.is_control() || c == '\\') =>
        {
            path
        }
        _ => "/console/data",
    }
}

/// A refusal shown on a form: its status, its words, and `Retry-After` after a limit.
pub(crate) fn refused(mut response: Response<Bytes>, error: &ApiError) -> Response<Bytes> {
    *response.status_mut() = error.status();
    if let ApiError::TooMany { retry_after, .. } = error {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(*retry_after));
    }
    response
}

impl ConsoleApi {
    /// A signed-out form page with its CSRF token (and nonce cookie when new).
    pub(crate) fn signed_out_form(
        &self,
        request: &Request<Bytes>,
        form_name: &str,
        title: &str,
        notice: Option<Notice<'_>>,
        body: impl FnOnce(&str) -> Markup,
    ) -> Response<Bytes> {
        let (csrf, new_nonce) = self.signed_out_csrf(request, form_name);
        let mut response = page_response(
            StatusCode::OK,
            layout::bare(title, notice.as_ref(), body(&csrf)),
        );
        if let Some(nonce) = new_nonce {
            self.set_nonce_cookie(&mut response, &nonce);
        }
        response
    }

    pub(crate) fn sign_in_form(&self, request: &Request<Bytes>, problem: Option<&str>) -> Answer {
        let fields = form(request);
        let email = field(&fields, "email").unwrap_or_default().to_string();
        let next = field(&fields, "next")
            .map(str::to_string)
            .or_else(|| query_param(request, "next"));
        let next = next_path(next.as_deref()).to_string();
        // After signing out, the page says what ended (`?signed_out=here|everywhere`).
        let notice = match (problem, query_param(request, "signed_out").as_deref()) {
            (Some(problem), _) => Some(Notice::Problem(problem)),
            (None, Some("here")) => Some(Notice::Done("You are signed out.")),
            (None, Some("everywhere")) => Some(Notice::Done(
                "You are signed out everywhere: every session, every app's access and your \
                 personal MCP URL have ended. Apps you use again will ask you to sign in.",
            )),
            _ => None,
        };
        Ok(self.signed_out_form(request, "signin", "Sign in", notice, |csrf| {
            html! {
                p.lede id="about" {
                    "Mirobody keeps your own health readings and genome in one place, stored in "
                    "this service's database for your account only, and lets the AI you connect "
                    "read them through MCP. Nobody else sees them unless you share them."
                }
                form method="post" action="/console/signin" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="next" value=(next);
                    label for="email" { "E-mail" }
                    input id="email" name="email" type="email" autocomplete="username" required value=(email);
                    label for="password" { "Password" }
                    input id="password" name="password" type="password" autocomplete="current-password" required;
                    button id="signin" type="submit" { "Sign in" }
                }
                p { a id="forgot" href="/console/forgot" { "Forgot your password?" } }
                p { "New here? " a href="/console/signup" { "Create an account" } }
            }
        }))
    }

    pub(crate) async fn sign_in(&self, request: &Request<Bytes>) -> Answer {
        if !self.signed_out_csrf_ok(request, "signin") {
            let problem = "The form expired. Please sign in again.";
            return Ok(refused(
                self.sign_in_form(request, Some(problem))?,
                &ApiError::refused(StatusCode::FORBIDDEN, problem),
            ));
        }
        let fields = form(request);
        let email = field(&fields, "email").unwrap_or_default();
        let password = field(&fields, "password").unwrap_or_default();
        match self
            .accounts
            .verify_sign_in(email, password, source_of(request))
            .await
        {
            Ok((user_id, epoch)) => {
                let mut response = redirect(next_path(field(&fields, "next")));
                self.start_session(&mut response, &user_id, epoch);
                Ok(response)
            }
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error) => {
                let words = match &error {
                    ApiError::TooMany { .. } => {
                        "Too many failed sign-ins. Wait a minute, then try again."
                    }
                    _ => "Wrong e-mail or password.",
                };
                Ok(refused(self.sign_in_form(request, Some(words))?, &error))
            }
        }
    }

    pub(crate) fn sign_up_form(&self, request: &Request<Bytes>, problem: Option<&str>) -> Answer {
        let fields = form(request);
        let email = field(&fields, "email").unwrap_or_default().to_string();
        // A problem with the address or the password goes under its field.
        let at = problem.and_then(|text| {
            FieldProblem::of(
                text,
                &[
                    ("password", &["password"]),
                    ("email", &["e-mail", "email", "address", "account"]),
                ],
            )
        });
        let notice = problem.filter(|_| at.is_none()).map(Notice::Problem);
        Ok(self.signed_out_form(request, "signup", "Create your account", notice, |csrf| {
            html! {
                form method="post" action="/console/signup" {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="email" { "E-mail" }
                    input id="email" name="email" type="email" autocomplete="username" required value=(email)
                        aria-invalid=[FieldProblem::on(at, "email").then_some("true")]
                        aria-describedby=[FieldProblem::on(at, "email").then_some("email-error")];
                    (layout::field_error(at, "email"))
                    label for="password" { "Password" }
                    input id="password" name="password" type="password" autocomplete="new-password"
                        minlength=(MIN_PASSWORD) required
                        aria-invalid=[FieldProblem::on(at, "password").then_some("true")]
                        aria-describedby=(layout::described_by(at, "password", "password-rule"));
                    (layout::field_error(at, "password"))
                    p.muted id="password-rule" { "At least " (MIN_PASSWORD) " characters." }
                    button id="signup" type="submit" { "Create account" }
                }
                p { "Already have an account? " a href="/console/signin" { "Sign in" } }
            }
        }))
    }

    pub(crate) async fn sign_up(&self, request: &Request<Bytes>) -> Answer {
        if !self.signed_out_csrf_ok(request, "signup") {
            let problem = "The form expired. Please try again.";
            return Ok(refused(
                self.sign_up_form(request, Some(problem))?,
                &ApiError::refused(StatusCode::FORBIDDEN, problem),
            ));
        }
        let fields = form(request);
        let email = field(&fields, "email").unwrap_or_default();
        let password = field(&fields, "password").unwrap_or_default().to_string();
        match self
            .accounts
            .create_account(email, password, source_of(request))
            .await
        {
            Ok((user_id, _sent)) => {
                // The address is unproven until the mailed link is used.
                let mut response = redirect("/console/confirm");
                self.start_session(&mut response, &user_id, 0);
                Ok(response)
            }
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error) => {
                let words = sentence(&error.message());
                Ok(refused(self.sign_up_form(request, Some(&words))?, &error))
            }
        }
    }

    pub(crate) async fn sign_out(&self, session: &Session) -> Answer {
        self.accounts.end_session(&session.claims).await?;
        let mut response = redirect("/console/signin?signed_out=here");
        self.end_session_cookie(&mut response);
        Ok(response)
    }

    pub(crate) fn password_form(&self, session: &Session, notice: Option<&Notice<'_>>) -> Answer {
        // A wrong current password or a too-short new one goes under its field.
        let at = match notice {
            Some(Notice::Problem(text)) => FieldProblem::of(
                text,
                &[
                    ("current_password", &["current password"]),
                    ("new_password", &["password must"]),
                ],
            ),
            _ => None,
        };
        let notice = notice.filter(|_| at.is_none());
        let content = html! {
            form method="post" action="/console/password" {
                input type="hidden" name="csrf" value=(session.csrf);
                label for="current_password" { "Current password" }
                input id="current_password" name="current_password" type="password" autocomplete="current-password" required
                    aria-invalid=[FieldProblem::on(at, "current_password").then_some("true")]
                    aria-describedby=[FieldProblem::on(at, "current_password").then_some("current_password-error")];
                (layout::field_error(at, "current_password"))
                label for="new_password" { "New password" }
                input id="new_password" name="new_password" type="password" autocomplete="new-password"
                    minlength=(MIN_PASSWORD) required
                    aria-invalid=[FieldProblem::on(at, "new_password").then_some("true")]
                    aria-describedby=(layout::described_by(at, "new_password", "password-rule"));
                (layout::field_error(at, "new_password"))
                p.muted id="password-rule" {
                    "At least " (MIN_PASSWORD) " characters. Changing it signs you out everywhere else and revokes your personal MCP URL."
                }
                button id="change-password" type="submit" { "Change password" }
            }
        };
        let status = match notice {
            Some(Notice::Problem(_)) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        };
        Ok(page_response(
            status,
            layout::page(
                session,
                "/console/account",
                "Change password",
                notice,
                content,
            ),
        ))
    }

    pub(crate) async fn password(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let fields = form(request);
        let current = field(&fields, "current_password").unwrap_or_default();
        let new = field(&fields, "new_password")
            .unwrap_or_default()
            .to_string();
        match self
            .accounts
            .set_password(&session.user_id, current, new, source_of(request))
            .await
        {
            Ok(epoch) => {
                // Every older token ended with the change, this cookie's too: a new one.
                let mut response = redirect("/console/account?changed=password");
                self.start_session(&mut response, &session.user_id, epoch);
                Ok(response)
            }
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error) => {
                let words = sentence(&error.message());
                let page = self.password_form(session, Some(&Notice::Problem(&words)))?;
                Ok(refused(page, &error))
            }
        }
    }
}

/// An API message as a sentence: capitalised, with a full stop.
pub(crate) fn sentence(message: &str) -> String {
    let mut chars = message.chars();
    let mut text = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
        None => String::new(),
    };
    if !text.ends_with('.') {
        text.push('.');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_only_ever_goes_on_to_a_console_path_it_can_put_in_a_header() {
        assert_eq!(next_path(Some("/console/servers")), "/console/servers");
        for hostile in [
            "https://evil.example/console/",
            "//evil.example/console/",
            "/console/\r\nSet-Cookie: x=y",
            "/console/\\evil",
            "/console-not/",
            "",
        ] {
            assert_eq!(next_path(Some(hostile)), "/console/data", "{hostile:?}");
        }
        assert_eq!(
            next_path(Some(&format!("/console/{}", "a".repeat(600)))),
            "/console/data"
        );
        assert_eq!(next_path(None), "/console/data");
    }

    #[test]
    fn api_messages_become_sentences() {
        assert_eq!(
            sentence("wrong e-mail or password"),
            "Wrong e-mail or password."
        );
        assert_eq!(sentence("Done."), "Done.");
    }
}
