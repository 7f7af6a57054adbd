//! Who can act for you: the OAuth clients the user authorised (revoking one ends its
//! refresh tokens), the personal URL, active temporary agent URLs, shares granted and
//! received, each revocable, and "sign out everywhere". Reads and revokes through
//! `AccountApi`, the typed core of the JSON API's account endpoints (never the store).

use bytes::Bytes;
use http::{Request, StatusCode};
use maud::{Markup, html};

use super::layout::{self, Notice};
use super::servers::when;
use super::{Answer, ConsoleApi, Session, field, form, html as page, query_param, redirect};
use crate::api::accounts::{CHAT_PERMISSION, ShareView, normalise_email};
use crate::domain::Invitation;
use crate::http::ApiError;

const SECTION: &str = "/console/access";
const TITLE: &str = "Who can act for you";
/// Longest id a revoke form may name (user ids, secret hashes, client ids are shorter).
const MAX_ID: usize = 512;
/// At most this many shares are shown each way.
const MAX_SHARES_SHOWN: usize = 200;

/// The fixed words of a finished action (`?done=…`, never user input on the page).
fn done_words(done: &str) -> Option<&'static str> {
    Some(match done {
        "grant" => "The app's access was withdrawn: its tokens no longer work.",
        "share" => "The share was ended.",
        "invited" => {
            "The invitation is on its way: nothing is shared until they accept it with a confirmed address."
        }
        "accepted" => "You accepted the invitation: you can now reach their data.",
        "confirm-sent" => "We sent you a new confirmation link.",
        "url" => "The temporary URL was revoked.",
        _ => return None,
    })
}

fn encoded(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

fn unnamed() -> ApiError {
    ApiError::refused(
        StatusCode::BAD_REQUEST,
        "the form does not name what to revoke",
    )
}

fn bounded(value: Option<&str>) -> Result<&str, ApiError> {
    value.filter(|v| v.len() <= MAX_ID).ok_or_else(unnamed)
}

/// A share as the page shows it: the other person, the value the revoke form sends
/// (the address for shares granted, the owner's id for shares received), the
/// permissions and where it stands.
struct ShareRow {
    who: String,
    key: String,
    permissions: String,
    status: &'static str,
}

fn shares_table(session: &Session, id: &str, direction: &str, rows: &[ShareRow]) -> Markup {
    let (person, empty, field) = if direction == "granted" {
        ("Shared with", "You share your data with no one.", "email")
    } else {
        ("Shared by", "No one shares their data with you.", "user")
    };
    html! {
        @if rows.is_empty() { p.muted { (empty) } }
        div.table-wrap {
            table.stack id=(id) {
                thead { tr { th { (person) } th { "Permissions" } th { "Status" } th { "Actions" } } }
                tbody {
                    @for row in rows {
                        tr data-who=(row.who) data-status=(row.status) {
                            td.who data-label=(person) { (row.who) }
                            td.permissions data-label="Permissions" { (row.permissions) }
                            td.status data-label="Status" { (status_words(row.status)) }
                            td.actions {
                                form method="post" action="/console/access/shares/revoke"
                                    data-confirm={ "End the share with " (row.who) "?" } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="direction" value=(direction);
                                    input type="hidden" name=(field) value=(row.key);
                                    button.share-revoke.danger type="submit" {
                                        @if row.status == "accepted" { "End share" } @else { "Withdraw" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn status_words(status: &str) -> &'static str {
    match status {
        "pending" => "Invited: waiting for them to accept",
        "expired" => "Invitation expired after 30 days unaccepted: share again to invite anew",
        _ => "Accepted",
    }
}

/// The rows of shares granted: accepted ones (by the address of who accepted), then the
/// invitations that wait.
fn granted_rows(
    views: Vec<ShareView>,
    pending: Vec<Invitation>,
    lapsed: Vec<Invitation>,
) -> Vec<ShareRow> {
    let accepted = views.into_iter().filter_map(|view| {
        let email = view.email?;
        Some(ShareRow {
            who: email.clone(),
            key: email,
            permissions: view.permissions.join(", "),
            status: "accepted",
        })
    });
    let waiting = pending.into_iter().map(|i| (i, "pending"));
    let expired = lapsed.into_iter().map(|i| (i, "expired"));
    let invited = waiting.chain(expired).map(|(invitation, status)| ShareRow {
        who: invitation.email.clone(),
        key: invitation.email,
        permissions: invitation.permissions.join(", "),
        status,
    });
    accepted.chain(invited).take(MAX_SHARES_SHOWN).collect()
}

/// The rows of shares received (the owner's e-mail when the account exists, else the id).
fn received_rows(views: Vec<ShareView>) -> Vec<ShareRow> {
    views
        .into_iter()
        .take(MAX_SHARES_SHOWN)
        .map(|view| ShareRow {
            who: view.email.unwrap_or_else(|| view.user_id.clone()),
            key: view.user_id,
            permissions: view.permissions.join(", "),
            status: "accepted",
        })
        .collect()
}

fn invitations_table(session: &Session, invitations: &[(Invitation, Option<String>)]) -> Markup {
    html! {
        @if invitations.is_empty() { p.muted { "No invitation waits for you." } }
        div.table-wrap {
            table.stack id="invitations-received" {
                thead { tr { th { "From" } th { "Permissions" } th { "Invited" } th { "Actions" } } }
                tbody {
                    @for (invitation, from) in invitations.iter().take(MAX_SHARES_SHOWN) {
                        tr data-invitation=(invitation.id) {
                            td.who data-label="From" { (from.as_deref().unwrap_or("an account that no longer exists")) }
                            td.permissions data-label="Permissions" { (invitation.permissions.join(", ")) }
                            td.since data-label="Invited" { (when(Some(invitation.created_at))) }
                            td.actions {
                                form method="post" action="/console/access/invitations/accept" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="id" value=(invitation.id);
                                    button.invitation-accept type="submit" { "Accept" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

impl ConsoleApi {
    pub(crate) async fn access_page(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let user = &session.user_id;
        let grants = self.accounts.oauth_grants(user).await?;
        let personal = self.accounts.live_personal_url(user).await?;
        let temporary = self.accounts.temporary_urls(user).await?;
        let overview = self.accounts.shares_of(user).await?;
        let granted = granted_rows(overview.granted, overview.pending, overview.lapsed);
        let received = received_rows(overview.received);
        let invitations = overview.invitations;
        let confirmed = overview.email_confirmed;
        let done = query_param(request, "done");
        let notice = done.as_deref().and_then(done_words).map(Notice::Done);
        let csrf = &session.csrf;
        let content = html! {
            section id="oauth-apps" {
                h2 { "Apps you authorised" }
                @if grants.is_empty() { p.muted { "You have not authorised any app." } }
                div.table-wrap {
                    table.stack id="oauth-grants" {
                        thead { tr { th { "App" } th { "Access" } th { "Since" } th { "Actions" } } }
                        tbody {
                            @for (client_id, grant) in &grants {
                                tr data-client-id=(client_id) {
                                    td.app data-label="App" {
                                        (grant.client_name.as_deref().unwrap_or("Unnamed app"))
                                        br;
                                        code.muted { (client_id) }
                                    }
                                    td.scopes data-label="Access" { (grant.scope) }
                                    td.since data-label="Since" { (when(Some(grant.granted_at))) }
                                    td.actions {
                                        form method="post"
                                            action={ "/console/access/grants/" (encoded(client_id)) "/revoke" }
                                            data-confirm="Withdraw this app's access?" {
                                            input type="hidden" name="csrf" value=(csrf);
                                            button.grant-revoke.danger type="submit" { "Withdraw" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section id="personal-url-status" {
                h2 { "Your personal MCP URL" }
                @match &personal {
                    Some(url) => {
                        p.status data-state="active" {
                            "Active until " (when(Some(url.expires_at))) ". Anyone holding it can read your data through MCP."
                        }
                        p { a href="/console/connect" { "See it and connect your AI" } }
                        form method="post" action="/console/connect/url/revoke"
                            data-confirm="Revoke your personal MCP URL? Apps using it stop working." {
                            input type="hidden" name="csrf" value=(csrf);
                            button.url-revoke.danger type="submit" { "Revoke" }
                        }
                    }
                    None => {
                        p.status data-state="none" { "You have no personal MCP URL." }
                        p { a href="/console/connect" { "Make one to connect your AI" } }
                    }
                }
            }
            section id="temporary-urls-section" {
                h2 { "Temporary agent URLs" }
                @if temporary.is_empty() { p.muted { "No temporary URLs are active." } }
                div.table-wrap {
                    table.stack id="temporary-urls" {
                        thead { tr { th { "Agent" } th { "Session" } th { "Expires" } th { "Actions" } } }
                        tbody {
                            @for (id, grant) in &temporary {
                                tr data-url-id=(id) {
                                    td.agent data-label="Agent" { (grant.agent_name.as_deref().unwrap_or("")) }
                                    td.session data-label="Session" { code { (grant.session_id.as_deref().unwrap_or("")) } }
                                    td.expires data-label="Expires" { (when(Some(grant.expires_at))) }
                                    td.actions {
                                        form method="post" action="/console/access/urls/revoke" {
                                            input type="hidden" name="csrf" value=(csrf);
                                            input type="hidden" name="id" value=(id);
                                            button.url-revoke.danger type="submit" { "Revoke" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section id="shares" {
                h2 { "People you share with" }
                form id="share-offer" method="post" action="/console/access/shares" {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="grantee" { "Share your data with (e-mail address)" }
                    input id="grantee" name="grantee" type="email" required aria-describedby="share-rule";
                    p.muted id="share-rule" {
                        "They get an invitation by e-mail. Nothing is shared until they accept it, "
                        "signed in with that address, confirmed."
                    }
                    p.muted id="chat-explained" {
                        "What they get is called “chat”: they can ask an AI of theirs about your "
                        "health readings and genome, through an MCP URL of their own. They cannot "
                        "change or delete anything, they never reach the MCP servers you added, "
                        "and you can end the share here at any time."
                    }
                    button id="share" type="submit" { "Invite" }
                }
                (shares_table(session, "shares-granted", "granted", &granted))
                h2 id="invitations" { "Invitations for you" }
                @if confirmed {
                    (invitations_table(session, &invitations))
                } @else {
                    p.notice.problem id="unconfirmed" role="status" {
                        "Your e-mail address is not confirmed yet, so nobody can share their data with you: "
                        "invitations to your address wait until you confirm it with the link we mailed you."
                    }
                    form method="post" action="/console/confirm/resend" {
                        input type="hidden" name="csrf" value=(csrf);
                        button id="confirm-resend" type="submit" { "Send the link again" }
                    }
                }
                h2 { "People who share with you" }
                (shares_table(session, "shares-received", "received", &received))
            }
            section id="everywhere" {
                h2 { "Sign out everywhere" }
                p { "Ends every session, every app's access and your personal MCP URL, this browser included." }
                form id="signout-all" method="post" action="/console/access/signout-all"
                    data-confirm="Sign out everywhere, this browser included?" {
                    input type="hidden" name="csrf" value=(csrf);
                    button.danger type="submit" { "Sign out everywhere" }
                }
            }
        };
        Ok(page(
            StatusCode::OK,
            layout::page(session, SECTION, TITLE, notice.as_ref(), content),
        ))
    }

    /// Withdraws an OAuth client's grant, as `DELETE /api/user/oauth-grants/{id}` does:
    /// its tokens and refresh families end.
    pub(crate) async fn grant_revoke(&self, session: &Session, client_id: &str) -> Answer {
        let client_id = bounded(Some(client_id).filter(|id| !id.is_empty()))?;
        self.accounts
            .end_client_grant(&session.user_id, client_id)
            .await?;
        Ok(redirect("/console/access?done=grant"))
    }

    /// Ends a share: one the user offered (`direction=granted`, `email` the address: the
    /// invitation and the accepted share) or received (`direction=received`, `user` the
    /// owner), with its delegated URL.
    pub(crate) async fn share_revoke(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let fields = form(request);
        let me = session.user_id.as_str();
        match field(&fields, "direction") {
            Some("granted") => {
                let email =
                    normalise_email(bounded(field(&fields, "email"))?).ok_or_else(unnamed)?;
                self.accounts.end_share(me, &email).await?;
            }
            Some("received") => {
                let owner = bounded(field(&fields, "user"))?;
                self.accounts.leave_share(me, owner).await?;
            }
            _ => return Err(unnamed()),
        }
        Ok(redirect("/console/access?done=share"))
    }

    /// Shares with an address: an invitation, as `POST /api/shares`.
    pub(crate) async fn share_offer(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let fields = form(request);
        let Some(email) = field(&fields, "grantee").and_then(normalise_email) else {
            return Err(ApiError::refused(
                StatusCode::BAD_REQUEST,
                "give the e-mail address of the person to share with",
            ));
        };
        let chat = [CHAT_PERMISSION.to_string()];
        self.accounts
            .offer_share(&session.user_id, &email, &chat)
            .await?;
        Ok(redirect("/console/access?done=invited"))
    }

    /// Accepts an invitation to the signed-in person's confirmed address.
    pub(crate) async fn invitation_accept(
        &self,
        session: &Session,
        request: &Request<Bytes>,
    ) -> Answer {
        let fields = form(request);
        let id = bounded(field(&fields, "id"))?;
        self.accounts
            .accept_invitation(&session.user_id, id)
            .await?;
        Ok(redirect("/console/access?done=accepted#shares-received"))
    }

    pub(crate) async fn temporary_url_revoke(
        &self,
        session: &Session,
        request: &Request<Bytes>,
    ) -> Answer {
        let fields = form(request);
        let id = field(&fields, "id").unwrap_or_default();
        self.accounts
            .revoke_temporary_url(&session.user_id, id)
            .await?;
        Ok(redirect("/console/access?done=url"))
    }

    /// Sign out everywhere (`AccountApi::end_everything`): this cookie's session ends
    /// too, so the browser goes to sign in.
    pub(crate) async fn sign_out_all(&self, session: &Session) -> Answer {
        self.accounts.end_everything(&session.user_id).await?;
        let mut response = redirect("/console/signin?signed_out=everywhere");
        self.end_session_cookie(&mut response);
        Ok(response)
    }
}
