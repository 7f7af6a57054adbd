//! Your account: export everything the product holds about the user (one download),
//! delete all data, delete the account (everything, confirmed by password).
//!
//! Renders and answers; the work is `whole_account`'s typed cores, which the JSON API
//! (`GET /api/user/export`, `DELETE /api/user`) calls too.
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::auth::sentence;
use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, field, form, html as page, query_param, redirect};
use crate::api::whole_account::WholeAccount;
use crate::http::{ApiError, source_of};

const DELETE_DATA_QUESTION: &str =
    "Delete all your readings, your genome and your uploads? This cannot be undone.";

const DELETE_ACCOUNT_QUESTION: &str = "Delete your account and everything in it? Every app, \
     URL and sign-in of it stops working. This cannot be undone.";

/// The notice a redirect back to the account page asks for (`?changed=password`,
/// `?deleted=data`).
fn redirect_notice(request: &Request<Bytes>) -> Option<Notice<'static>> {
    if query_param(request, "changed").as_deref() == Some("password") {
        return Some(Notice::Done(
            "Password changed. Every other session and app signed in with the old one was \
             signed out, and your personal MCP URL was revoked: make a new one on Connect your AI.",
        ));
    }
    if query_param(request, "deleted").as_deref() == Some("data") {
        return Some(Notice::Done(
            "All your data was deleted: readings, genome and uploads.",
        ));
    }
    None
}

fn date(seconds: u64) -> String {
    chrono::DateTime::from_timestamp(i64::try_from(seconds).unwrap_or(0), 0)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

impl ConsoleApi {
    fn whole_account(&self) -> WholeAccount<'_> {
        WholeAccount::new(&self.uploads, &self.accounts, self.clock.as_ref())
    }

    pub(crate) async fn account_page(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let notice = redirect_notice(request);
        self.account_page_with(session, notice.as_ref(), StatusCode::OK)
            .await
    }

    async fn account_page_with(
        &self,
        session: &Session,
        notice: Option<&Notice<'_>>,
        status: StatusCode,
    ) -> Answer {
        let account = self
            .accounts
            .account_of(&session.user_id)
            .await?
            .ok_or_else(|| ApiError::refused(StatusCode::NOT_FOUND, "no such account"))?;
        let content = html! {
            dl.account {
                dt { "E-mail" }
                dd id="account-email" { (account.email) }
                dt { "Created" }
                dd id="account-created" { (date(account.created_at)) }
            }
            section id="export-section" aria-labelledby="export-heading" {
                h2 id="export-heading" { "Export everything" }
                p {
                    "One file with everything Mirobody holds about you: your account, "
                    "readings, genome, uploads, MCP servers (without their credentials), "
                    "the apps you authorised, your shares and your personal URL's status "
                    "(never a secret). JSON, compressed with gzip."
                }
                a.button id="export" href="/console/account/export" download { "Download the export" }
            }
            section id="password-section" aria-labelledby="password-heading" {
                h2 id="password-heading" { "Password" }
                p {
                    a id="change-password" href="/console/password" { "Change your password" }
                    " (signs out every other device and app)."
                }
            }
            section id="delete-data-section" aria-labelledby="delete-data-heading" {
                h2 id="delete-data-heading" { "Delete all data" }
                p { "Deletes your readings, your genome and your uploads. Your account, "
                    "your MCP servers and the apps you authorised stay." }
                form id="delete-data" method="post" action="/console/account/delete-data"
                    data-confirm=(DELETE_DATA_QUESTION) {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.danger type="submit" id="delete-data-button" { "Delete all data" }
                }
            }
            section id="delete-account-section" aria-labelledby="delete-account-heading" {
                h2 id="delete-account-heading" { "Delete the account" }
                p { "Deletes everything: your data, MCP servers, shares, personal URL, the "
                    "apps you authorised and every sign-in. Your e-mail can sign up again "
                    "as a new account." }
                form id="delete-account" method="post" action="/console/account/delete"
                    data-confirm=(DELETE_ACCOUNT_QUESTION) {
                    input type="hidden" name="csrf" value=(session.csrf);
                    label for="delete-password" { "Your password, to confirm" }
                    input id="delete-password" type="password" name="password" required
                        autocomplete="current-password";
                    button.danger type="submit" id="delete-account-button" { "Delete the account" }
                }
            }
        };
        Ok(page(
            status,
            layout::page(session, "/console/account", "Your account", notice, content),
        ))
    }

    pub(crate) async fn export(&self, session: &Session) -> Answer {
        self.whole_account().export_api(&session.user_id).await
    }

    pub(crate) async fn delete_data(&self, session: &Session, _request: &Request<Bytes>) -> Answer {
        self.whole_account().delete_data(&session.user_id).await?;
        Ok(redirect("/console/account?deleted=data"))
    }

    pub(crate) async fn delete_account(
        &self,
        session: &Session,
        request: &Request<Bytes>,
    ) -> Answer {
        let fields = form(request);
        let password = field(&fields, "password").unwrap_or_default();
        match self
            .whole_account()
            .delete_account(&session.user_id, password, source_of(request))
            .await
        {
            Ok(()) => {
                let mut response = page(
                    StatusCode::OK,
                    layout::bare(
                        "Account deleted",
                        Some(&Notice::Done(
                            "Your account and everything in it were deleted.",
                        )),
                        html! {
                            p id="goodbye" {
                                "Goodbye. Every sign-in, app and URL of the account has stopped working."
                            }
                            p { a href="/console/signup" { "Sign up again" } }
                        },
                    ),
                );
                self.end_session_cookie(&mut response);
                Ok(response)
            }
            Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
            Err(error @ (ApiError::Refused(..) | ApiError::TooMany { .. })) => {
                let words = format!("{} Nothing was deleted.", sentence(&error.message()));
                self.account_page_with(session, Some(&Notice::Problem(&words)), error.status())
                    .await
            }
            Err(error) => Err(error),
        }
    }
}
