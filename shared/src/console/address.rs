//! Proving an address: "check your e-mail" after sign-up, the landing page of
//! a confirmation link, "forgot password" and the landing page of a reset link. The
//! checks and their limits are the account API's (`api/mailed_links.rs`). A link's page shows
//! a form and changes nothing until it is posted (a mail scanner that fetches the link
//! uses nothing). Every form carries the signed-out CSRF token of its own name.

use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::auth::{refused, sentence};
use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, field, form, html as page, query_param, redirect};
use crate::api::mailed_links::{RESET_SECS, RESET_SENT};
use crate::http::{ApiError, source_of};
use crate::identity::MIN_PASSWORD;

/// The link's token as the form or query carries it (bounded; checked by the store).
fn token_of(value: Option<&str>) -> String {
    value.unwrap_or_default().chars().take(256).collect()
}

fn expired_form() -> ApiError {
    ApiError::refused(
        StatusCode::FORBIDDEN,
        "The form expired. Open the link from the e-mail again.",
    )
}

impl ConsoleApi {
    /// `GET /console/confirm`: with `?token=`, the button that uses the link; without,
    /// "check your e-mail" (where sign-up lands).
    pub(crate) fn confirm_form(&self, request: &Request<Bytes>, problem: Option<&str>) -> Answer {
        let fields = form(request);
        let token = token_of(
            field(&fields, "token")
                .map(str::to_string)
                .or_else(|| query_param(request, "token"))
                .as_deref(),
        );
        if token.is_empty() {
            return Ok(page(
                StatusCode::OK,
                layout::bare(
                    "Check your e-mail",
                    None,
                    html! {
                        p id="check-email" {
                            "We sent a link to your address. Open it to confirm that the address is yours."
                        }
                        p {
                            "Until you confirm it, nobody can share their data with you: invitations to "
                            "your address wait, and you can accept them once it is confirmed."
                        }
                        p { a href="/console/upload" { "Continue to your console" } }
                    },
                ),
            ));
        }
        Ok(self.signed_out_form(
            request,
            "confirm",
            "Confirm your e-mail address",
            problem.map(Notice::Problem),
            |csrf| {
                html! {
                    form method="post" action="/console/confirm" {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="token" value=(token);
                        p { "Confirm that this e-mail address is yours." }
                        button id="confirm" type="submit" { "Confirm my address" }
                    }
                }
            },
        ))
    }

    /// `POST /console/confirm`: uses the link.
    pub(crate) async fn confirm(&self, request: &Request<Bytes>) -> Answer {
        if !self.signed_out_csrf_ok(request, "confirm") {
            let error = expired_form();
            return Ok(refused(
                self.confirm_form(request, Some(&error.message()))?,
                &error,
            ));
        }
        let fields = form(request);
        let token = token_of(field(&fields, "token"));
        match self.accounts.confirm_address(&token).await {
            Ok(()) => Ok(page(
                StatusCode::OK,
                layout::bare(
                    "Your address is confirmed",
                    Some(&Notice::Done("Your e-mail address is confirmed.")),
                    html! {
                        p { "Invitations to share data with you can now be accepted." }
                        p { a id="to-access" href="/console/access" { "See who shares with you" } }
                    },
                ),
            )),
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error) => Ok(page(
                error.status(),
                layout::message_page("This link does not work", &sentence(&error.message())),
            )),
        }
    }

    /// `POST /console/confirm/resend` (signed in): a new confirmation link.
    pub(crate) async fn confirm_resend(&self, session: &Session) -> Answer {
        self.accounts
            .resend_confirmation_to(&session.user_id)
            .await?;
        Ok(redirect("/console/access?done=confirm-sent"))
    }

    pub(crate) fn forgot_form(&self, request: &Request<Bytes>, problem: Option<&str>) -> Answer {
        let fields = form(request);
        let email = field(&fields, "email").unwrap_or_default().to_string();
        Ok(self.signed_out_form(request, "forgot", "Forgot your password?", problem.map(Notice::Problem), |csrf| {
            html! {
                form method="post" action="/console/forgot" {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="email" { "E-mail" }
                    input id="email" name="email" type="email" autocomplete="username" required value=(email);
                    button id="send-reset" type="submit" { "Send me a reset link" }
                }
                p { a href="/console/signin" { "Back to sign in" } }
            }
        }))
    }

    /// `POST /console/forgot`: the same page whatever the address.
    pub(crate) async fn forgot(&self, request: &Request<Bytes>) -> Answer {
        if !self.signed_out_csrf_ok(request, "forgot") {
            let error =
                ApiError::refused(StatusCode::FORBIDDEN, "The form expired. Please try again.");
            return Ok(refused(
                self.forgot_form(request, Some(&error.message()))?,
                &error,
            ));
        }
        let fields = form(request);
        let email = field(&fields, "email").unwrap_or_default();
        match self.accounts.request_reset(email, source_of(request)).await {
            Ok(()) => Ok(page(
                StatusCode::OK,
                layout::bare(
                    "Check your e-mail",
                    Some(&Notice::Done(&sentence(RESET_SENT))),
                    html! {
                        p id="reset-sent" {
                            "The link works once, for " (RESET_SECS / 60) " minutes."
                        }
                        p { a href="/console/signin" { "Back to sign in" } }
                    },
                ),
            )),
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error) => {
                let words = sentence(&error.message());
                Ok(refused(self.forgot_form(request, Some(&words))?, &error))
            }
        }
    }

    /// `GET /console/reset?token=…`: the new password form.
    pub(crate) fn reset_form(&self, request: &Request<Bytes>, problem: Option<&str>) -> Answer {
        let fields = form(request);
        let token = token_of(
            field(&fields, "token")
                .map(str::to_string)
                .or_else(|| query_param(request, "token"))
                .as_deref(),
        );
        Ok(self.signed_out_form(request, "reset", "Choose a new password", problem.map(Notice::Problem), |csrf| {
            html! {
                form method="post" action="/console/reset" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="token" value=(token);
                    label for="new_password" { "New password" }
                    input id="new_password" name="new_password" type="password" autocomplete="new-password"
                        minlength=(MIN_PASSWORD) required aria-describedby="password-rule";
                    p.muted id="password-rule" {
                        "At least " (MIN_PASSWORD) " characters. Setting it signs you out everywhere and ends every app's access."
                    }
                    button id="reset" type="submit" { "Set the new password" }
                }
            }
        }))
    }

    /// `POST /console/reset`: sets the password; this browser's session (if any) ends too.
    pub(crate) async fn reset(&self, request: &Request<Bytes>) -> Answer {
        if !self.signed_out_csrf_ok(request, "reset") {
            let error = expired_form();
            return Ok(refused(
                self.reset_form(request, Some(&error.message()))?,
                &error,
            ));
        }
        let fields = form(request);
        let token = token_of(field(&fields, "token"));
        let new = field(&fields, "new_password")
            .unwrap_or_default()
            .to_string();
        match self.accounts.reset_password(&token, new).await {
            Ok(()) => {
                let mut response = page(
                    StatusCode::OK,
                    layout::bare(
                        "Your password was changed",
                        Some(&Notice::Done(
                            "Your password was changed: every session and every app's access ended.",
                        )),
                        html! {
                            p { a id="to-signin" href="/console/signin" { "Sign in with the new password" } }
                        },
                    ),
                );
                self.end_session_cookie(&mut response);
                Ok(response)
            }
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error) => {
                let words = sentence(&error.message());
                Ok(refused(self.reset_form(request, Some(&words))?, &error))
            }
        }
    }
}
