//! Accounts and what they grant (A7, B1, B2): sign-up and sign-in with e-mail and
//! password, sign-out (this session, or everywhere) and password change,
//! sharing the "chat" permission with another account, and the personal MCP URL
//! endpoint (`POST /personal/mcp` to get it, `DELETE` to revoke it; with an owner's
//! `user_id`, a grantee's own delegated URL on that owner's data).
//!
//! Shares are invitations: `offer_share` writes one and mails it, `accept_invitation`
//! makes the share for a confirmed account with that address; share, list and unshare
//! answer alike for every address and never name an account.
//!
//! Owns request validation and the response shapes (`{"code": 0, "msg": "ok",
//! "data": …}`; failures are a non-zero `code` with `msg`). Never logs a password,
//! a token or a URL.

use std::net::IpAddr;
use std::sync::Arc;

use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clock::Clock;
use crate::domain::{Account, ClientGrant, Invitation, PersonalUrl, UrlGrant};
use crate::http::{ApiError, Success};
use crate::identity::{
    Caller, Claims, Jwts, MIN_PASSWORD, McpUrls, Passwords, Quota, SignIn, hidden_or_control,
    random_secret,
};
use crate::mail::{Letter, MailSender};
use crate::store::{Created, Store, TokenChange};

/// Lifetime of a token from sign-in.
pub(crate) const SESSION_TOKEN_SECS: u64 = 24 * 3600;
/// Accounts one source address may create in an hour: each costs an Argon2
/// hash and a row, and nobody signs up twenty times an hour from one address.
pub(crate) const SIGN_UPS_PER_HOUR: u32 = 20;
const SIGN_UPS: Quota = Quota {
    kind: "signup-ip",
    allowed: SIGN_UPS_PER_HOUR,
    window_secs: 3600,
};
/// The permission B2 checks before minting a URL for another account.
pub(crate) const CHAT_PERMISSION: &str = "chat";

/// Invitations one owner may send in a day: each is a mail to an address the
/// owner names.
const INVITATIONS: Quota = Quota {
    kind: "invite-owner",
    allowed: 50,
    window_secs: 24 * 3600,
};

pub(crate) struct AccountApi {
    pub store: Arc<dyn Store>,
    pub jwts: Arc<Jwts>,
    pub urls: Arc<McpUrls>,
    pub clock: Arc<dyn Clock>,
    pub passwords: Arc<Passwords>,
    /// How mail leaves; `None`: no mail is sent.
    pub mail: Option<Arc<dyn MailSender>>,
    /// The public origin the links in mail point at (the console's).
    pub origin: String,
}

#[derive(Deserialize)]
struct Credentials {
    email: String,
    password: String,
}

#[derive(Deserialize)]
struct PasswordChange {
    current_password: String,
    new_password: String,
}

#[derive(Deserialize, Default)]
struct ShareRequest {
    grantee: String,
    #[serde(default)]
    permissions: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
struct PersonalRequest {
    #[serde(default)]
    user_id: Option<String>,
}

/// 400 naming `field` when its (trimmed) value carries a character no e-mail address may.
fn refuse_hidden_characters(field: &'static str, raw: &str) -> Result<(), ApiError> {
    if raw.trim().chars().any(hidden_or_control) {
        return Err(ApiError::refused(
            StatusCode::BAD_REQUEST,
            format!("{field} must not contain control or invisible formatting characters"),
        ));
    }
    Ok(())
}

pub(crate) fn normalise_email(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let valid = !local.is_empty()
        && domain.contains('.')
        && email.len() <= 254
        && !email.contains(char::is_whitespace);
    valid.then_some(email)
}

fn parse<T: for<'de> Deserialize<'de> + Default>(body: &[u8], allow_empty: bool) -> Option<T> {
    if allow_empty && body.iter().all(u8::is_ascii_whitespace) {
        return Some(T::default());
    }
    serde_json::from_slice(body).ok()
}

/// A sign-up or sign-in body that is not `{"email", "password"}`.
fn bad_credentials() -> ApiError {
    ApiError::refused(
        StatusCode::BAD_REQUEST,
        "send {\"email\": …, \"password\": …}",
    )
}

/// Longer than any user id this server makes: refused before it reaches a store key.
const MAX_USER_ID: usize = 128;

/// The owner a `/personal/mcp` request names, when it is not the caller.
fn other_owner<'r>(request: &'r PersonalRequest, caller: &Caller) -> Option<&'r str> {
    request
        .user_id
        .as_deref()
        .map(str::trim)
        .filter(|owner| !owner.is_empty() && *owner != caller.user_id)
}

fn not_shared() -> ApiError {
    ApiError::refused(
        StatusCode::FORBIDDEN,
        "that account has not shared its chat permission with you",
    )
}

fn no_invitation() -> ApiError {
    ApiError::refused(
        StatusCode::NOT_FOUND,
        "there is no such invitation to your address (it may have been withdrawn)",
    )
}

fn unconfirmed() -> ApiError {
    ApiError::refused(
        StatusCode::FORBIDDEN,
        "confirm your e-mail address first: open the link we mailed you",
    )
}

/// A share's grantee: an e-mail address (normalised); anything else, a user id
/// included, is refused with the same words whatever it names (finding 4).
fn grantee_address(who: &str) -> Result<String, ApiError> {
    normalise_email(who).ok_or_else(|| {
        ApiError::refused(StatusCode::BAD_REQUEST, "grantee must be an e-mail address")
    })
}

/// What sharing with an address came to.
pub(crate) enum ShareStatus {
    /// The address has an invitation (whether or not it has an account).
    Invited,
    /// The owner already shares with the account that accepted: its id.
    Accepted(String),
}

impl ShareStatus {
    fn word(&self) -> &'static str {
        match self {
            ShareStatus::Invited => "invited",
            ShareStatus::Accepted(_) => "accepted",
        }
    }
}

fn bad_body() -> ApiError {
    ApiError::refused(
        StatusCode::BAD_REQUEST,
        "the body must be a JSON object with the documented fields",
    )
}

/// A new password's bounds: [`MIN_PASSWORD`] characters, at most 1 KiB.
pub(crate) fn refuse_weak_password(password: &str) -> Result<(), ApiError> {
    if password.chars().count() < MIN_PASSWORD || password.len() > 1024 {
        return Err(ApiError::refused(
            StatusCode::BAD_REQUEST,
            "the password must have at least 10 characters",
        ));
    }
    Ok(())
}

impl AccountApi {
    /// A new session for `user_id` at the user's token `epoch`.
    fn token_response(&self, status: StatusCode, user_id: &str, epoch: u64) -> Success {
        let token = self
            .jwts
            .session(user_id, epoch, SESSION_TOKEN_SECS, self.clock.now());
        Success::with_status(
            status,
            json!({ "user_id": user_id, "token": token, "token_type": "Bearer", "expires_in": SESSION_TOKEN_SECS }),
        )
    }

    /// `source`: where the request came from, for the per-address quota, spent by every
    /// well-formed attempt before its password is hashed.
    pub(crate) async fn sign_up(
        &self,
        body: &[u8],
        source: Option<IpAddr>,
    ) -> Result<Success, ApiError> {
        let request = serde_json::from_slice::<Credentials>(body).map_err(|_| bad_credentials())?;
        let (user_id, confirmation_sent) = self
            .create_account(&request.email, request.password, source)
            .await?;
        let token = self
            .jwts
            .session(&user_id, 0, SESSION_TOKEN_SECS, self.clock.now());
        Ok(Success::created(json!({
            "user_id": user_id, "token": token, "token_type": "Bearer",
            "expires_in": SESSION_TOKEN_SECS,
            // The address is unproven until the mailed link is used.
            "email_confirmed": false, "confirmation_sent": confirmation_sent,
        })))
    }

    /// A new account for `email` and `password` (checked, limited per source address,
    /// hashed), unconfirmed, and the confirmation link mailed: its user id and whether
    /// the mail went. The JSON API and the console both sign up here.
    pub(crate) async fn create_account(
        &self,
        email: &str,
        password: String,
        source: Option<IpAddr>,
    ) -> Result<(String, bool), ApiError> {
        refuse_hidden_characters("email", email)?;
        let Some(email) = normalise_email(email) else {
            return Err(ApiError::refused(
                StatusCode::BAD_REQUEST,
                "that is not an e-mail address",
            ));
        };
        refuse_weak_password(&password)?;
        if let Some(source) = source
            && let Some(retry_after) = SIGN_UPS
                .spend(self.store.as_ref(), source, self.clock.now())
                .await?
        {
            return Err(ApiError::TooMany {
                msg: "too many sign-ups from this address; try again later",
                retry_after,
            });
        }
        let password_hash = self.passwords.hash(password).await.ok_or_else(|| {
            ApiError::refused(StatusCode::INTERNAL_SERVER_ERROR, "sign-up failed")
        })?;
        let account = Account {
            user_id: format!("u_{}", random_secret(12)),
            email,
            password_hash,
            created_at: self.clock.now(),
            email_confirmed: false,
        };
        match self.store.create_account(&account).await? {
            Created::Created => {
                let sent = self.send_confirmation(&account).await?;
                Ok((account.user_id, sent))
            }
            Created::EmailTaken => Err(ApiError::refused(
                StatusCode::CONFLICT,
                "an account with this e-mail already exists; sign in instead",
            )),
        }
    }

    pub(crate) async fn sign_in(
        &self,
        body: &[u8],
        source: Option<IpAddr>,
    ) -> Result<Success, ApiError> {
        let request = serde_json::from_slice::<Credentials>(body).map_err(|_| bad_credentials())?;
        let (user_id, epoch) = self
            .verify_sign_in(&request.email, &request.password, source)
            .await?;
        Ok(self.token_response(StatusCode::OK, &user_id, epoch))
    }

    /// The user id and token epoch of a right e-mail and password, within the sign-in
    /// limits: the JSON API and the console both sign in here.
    pub(crate) async fn verify_sign_in(
        &self,
        email: &str,
        password: &str,
        source: Option<IpAddr>,
    ) -> Result<(String, u64), ApiError> {
        let wrong = || ApiError::refused(StatusCode::UNAUTHORIZED, "wrong e-mail or password");
        let email = normalise_email(email).ok_or_else(wrong)?;
        match self.passwords.sign_in(&email, password, source).await? {
            SignIn::Verified(user_id) => {
                let epoch = self.store.token_state(&user_id).await?.epoch;
                Ok((user_id, epoch))
            }
            SignIn::Wrong => Err(wrong()),
            SignIn::Limited(retry_after) => Err(ApiError::TooMany {
                msg: "too many failed sign-ins; try again later",
                retry_after,
            }),
        }
    }

    pub(crate) async fn sign_out(&self, claims: &Claims) -> Result<Success, ApiError> {
        self.end_session(claims).await?;
        Ok(Success::ok(json!({ "signed_out": "this session" })))
    }

    /// Ends the session of `claims` (every token of the user, for a token without one).
    pub(crate) async fn end_session(&self, claims: &Claims) -> Result<(), ApiError> {
        let end = match claims.session_key() {
            Some(sid) => TokenChange::EndSession {
                sid: sid.to_string(),
                expires_at: claims.exp,
            },
            // No session id and no token id (not a token this server issues): only a
            // new epoch can name it.
            None => TokenChange::EndAll,
        };
        self.store
            .change_tokens(&claims.sub, &end, self.clock.now())
            .await?;
        Ok(())
    }

    /// `POST /auth/signout-all`: ends every session, login-prompt token, OAuth access
    /// token and refresh family of the caller (a new token epoch), and revokes the
    /// personal URL (a new one can be made).
    pub(crate) async fn sign_out_all(&self, caller: &Caller) -> Result<Success, ApiError> {
        let url_revoked = self.end_everything(&caller.user_id).await?;
        Ok(Success::ok(
            json!({ "signed_out": "everywhere", "personal_url_revoked": url_revoked }),
        ))
    }

    /// Ends every session, OAuth grant and login-prompt token of `user_id` and revokes
    /// the personal URL: whether there was one.
    pub(crate) async fn end_everything(&self, user_id: &str) -> Result<bool, ApiError> {
        self.store
            .change_tokens(user_id, &TokenChange::EndAll, self.clock.now())
            .await?;
        Ok(self.urls.revoke(user_id).await?)
    }

    /// `POST /auth/password` `{"current_password", "new_password"}`: checks the current
    /// password through the one sign-in check (its failure limits and hashing queue),
    /// stores the new hash and ends every token (as sign-out everywhere, personal URL
    /// included) in one step, and answers with a new session for the caller.
    pub(crate) async fn change_password(
        &self,
        caller: &Caller,
        body: &[u8],
        source: Option<IpAddr>,
    ) -> Result<Success, ApiError> {
        let request = serde_json::from_slice::<PasswordChange>(body).map_err(|_| {
            ApiError::refused(
                StatusCode::BAD_REQUEST,
                "send {\"current_password\": …, \"new_password\": …}",
            )
        })?;
        let epoch = self
            .set_password(
                &caller.user_id,
                &request.current_password,
                request.new_password,
                source,
            )
            .await?;
        Ok(self.token_response(StatusCode::OK, &caller.user_id, epoch))
    }

    /// Checks the current password and the new one, replaces the hash (ending every
    /// token issued before) and revokes the personal URL: the new token epoch.
    pub(crate) async fn set_password(
        &self,
        user_id: &str,
        current_password: &str,
        new_password: String,
        source: Option<IpAddr>,
    ) -> Result<u64, ApiError> {
        refuse_weak_password(&new_password)?;
        self.check_password(user_id, current_password, source)
            .await?;
        let wrong = || ApiError::refused(StatusCode::FORBIDDEN, "the current password is wrong");
        let password_hash = self.passwords.hash(new_password).await.ok_or_else(|| {
            ApiError::refused(StatusCode::INTERNAL_SERVER_ERROR, "password change failed")
        })?;
        let state = self
            .store
            .change_password(user_id, &password_hash, self.clock.now())
            .await?
            .ok_or_else(wrong)?;
        self.urls.revoke(user_id).await?;
        Ok(state.epoch)
    }

    /// Whether `password` is the account's own (403 when not, 429 past the sign-in
    /// limits): what a password change and deleting the account confirm with.
    pub(crate) async fn check_password(
        &self,
        user_id: &str,
        password: &str,
        source: Option<IpAddr>,
    ) -> Result<(), ApiError> {
        let wrong = || ApiError::refused(StatusCode::FORBIDDEN, "the current password is wrong");
        let account = self.store.account(user_id).await?.ok_or_else(wrong)?;
        match self
            .passwords
            .sign_in(&account.email, password, source)
            .await?
        {
            SignIn::Verified(verified) if verified == user_id => Ok(()),
            SignIn::Verified(_) | SignIn::Wrong => Err(wrong()),
            SignIn::Limited(retry_after) => Err(ApiError::TooMany {
                msg: "too many failed sign-ins; try again later",
                retry_after,
            }),
        }
    }

    /// `POST /api/shares` `{"grantee": <e-mail>}`: no grant
    /// is made here. The address gets an invitation (a mail with a link to the console)
    /// that a confirmed account with exactly that address accepts; only then is there a
    /// share. Answers the same whether or not the address has an account
    /// (`"status": "invited"`); `"accepted"` only when the owner already shares with the
    /// account that accepted an invitation to that address (the owner's list shows it
    /// anyway), whose permissions are then replaced. A grantee that is not an e-mail
    /// address (a user id) is refused alike for every value.
    pub(crate) async fn share(&self, caller: &Caller, body: &[u8]) -> Result<Success, ApiError> {
        let request = parse::<ShareRequest>(body, false).ok_or_else(bad_body)?;
        refuse_hidden_characters("grantee", &request.grantee)?;
        let permissions = request
            .permissions
            .unwrap_or_else(|| vec![CHAT_PERMISSION.to_string()]);
        if permissions.is_empty() || permissions.iter().any(|p| p != CHAT_PERMISSION) {
            return Err(ApiError::refused(
                StatusCode::BAD_REQUEST,
                "the only permission that can be shared is \"chat\"",
            ));
        }
        let email = grantee_address(&request.grantee)?;
        let status = self
            .offer_share(&caller.user_id, &email, &permissions)
            .await?;
        let grant_url_active = match &status {
            ShareStatus::Accepted(grantee) => {
                self.urls
                    .delegated_active(&caller.user_id, grantee, self.clock.now())
                    .await?
            }
            ShareStatus::Invited => false,
        };
        Ok(Success::ok(json!({
            "grantee": email, "permissions": permissions, "status": status.word(),
            "grant_url_active": grant_url_active,
        })))
    }

    /// Shares `permissions` with whoever proves `email`: replaces an accepted share's
    /// permissions, else writes the invitation and mails it (within the owner's daily
    /// limit). The console and the JSON API both share here.
    pub(crate) async fn offer_share(
        &self,
        owner: &str,
        email: &str,
        permissions: &[String],
    ) -> Result<ShareStatus, ApiError> {
        let owner_account = self.store.account(owner).await?;
        if owner_account.as_ref().is_some_and(|a| a.email == email) {
            return Err(ApiError::refused(
                StatusCode::BAD_REQUEST,
                "that is your own address",
            ));
        }
        if let Some(grantee) = self.accepted_grantee(owner, email).await? {
            self.store.put_share(owner, &grantee, permissions).await?;
            return Ok(ShareStatus::Accepted(grantee));
        }
        let now = self.clock.now();
        if let Some(retry_after) = INVITATIONS
            .spend_on(self.store.as_ref(), owner, now)
            .await?
        {
            return Err(ApiError::TooMany {
                msg: "too many invitations today; try again tomorrow",
                retry_after,
            });
        }
        let invitation = Invitation {
            id: random_secret(12),
            owner: owner.to_string(),
            email: email.to_string(),
            permissions: permissions.to_vec(),
            created_at: now,
        };
        self.store.put_invitation(&invitation).await?;
        if let (Some(mail), Some(owner_account)) = (&self.mail, owner_account) {
            let link = format!("{}/console/access#invitations", self.origin);
            let letter = Letter::Invitation {
                owner_email: &owner_account.email,
                owner_confirmed: owner_account.email_confirmed,
                link: &link,
            };
            if let Err(error) = mail.send(&letter.to(email)).await {
                tracing::warn!(%error, "invitation mail not sent");
            }
        }
        Ok(ShareStatus::Invited)
    }

    /// The account `owner` already shares with under `email`: the account with that
    /// address, if the owner's shares name it.
    async fn accepted_grantee(&self, owner: &str, email: &str) -> Result<Option<String>, ApiError> {
        let Some(account) = self.store.account_by_email(email).await? else {
            return Ok(None);
        };
        Ok(self
            .store
            .share(owner, &account.user_id)
            .await?
            .map(|_| account.user_id))
    }

    /// `DELETE /api/shares` `{"grantee": <e-mail>}`: withdraws the invitation to that
    /// address and ends the share with the account that accepted it (with the grantee's
    /// delegated URL, in one store transaction, B2); answers the same whatever the
    /// address.
    pub(crate) async fn unshare(&self, caller: &Caller, body: &[u8]) -> Result<Success, ApiError> {
        let request = parse::<ShareRequest>(body, false).ok_or_else(bad_body)?;
        refuse_hidden_characters("grantee", &request.grantee)?;
        let email = grantee_address(&request.grantee)?;
        self.end_share(&caller.user_id, &email).await?;
        Ok(Success::ok(
            json!({ "grantee": email, "permissions": [], "status": "ended", "grant_url_active": false }),
        ))
    }

    /// Ends what `owner` offered `email`: the invitation and the accepted share.
    pub(crate) async fn end_share(&self, owner: &str, email: &str) -> Result<(), ApiError> {
        self.store.delete_invitation(owner, email).await?;
        if let Some(grantee) = self.accepted_grantee(owner, email).await? {
            self.store.delete_share(owner, &grantee).await?;
        }
        Ok(())
    }

    /// Accepts invitation `id` for the caller: only a confirmed account, and
    /// only an invitation to its own address. The owner's id and address (the grantee
    /// needs the id for `POST /personal/mcp`).
    pub(crate) async fn accept_invitation(
        &self,
        user_id: &str,
        id: &str,
    ) -> Result<(String, Option<String>), ApiError> {
        let account = self
            .store
            .account(user_id)
            .await?
            .ok_or_else(no_invitation)?;
        if !account.email_confirmed {
            return Err(unconfirmed());
        }
        if id.is_empty() || id.len() > MAX_USER_ID {
            return Err(no_invitation());
        }
        // A lapsed invitation is never accepted (the owner shares again to renew it). Its
        // id and age never change, so this read and the store's single-use take agree.
        let now = self.clock.now();
        let waiting = self.store.invitations_for(&account.email).await?;
        if !waiting.iter().any(|i| i.id == id && !i.lapsed(now)) {
            return Err(no_invitation());
        }
        let invitation = self
            .store
            .accept_invitation(&account.email, id, user_id)
            .await?
            .ok_or_else(no_invitation)?;
        let owner_email = self
            .store
            .account(&invitation.owner)
            .await?
            .map(|a| a.email);
        Ok((invitation.owner, owner_email))
    }

    /// `POST /api/shares/accept` `{"id"}`.
    pub(crate) async fn accept_api(
        &self,
        caller: &Caller,
        body: &[u8],
    ) -> Result<Success, ApiError> {
        #[derive(Deserialize)]
        struct Accept {
            id: String,
        }
        let request = serde_json::from_slice::<Accept>(body)
            .map_err(|_| ApiError::refused(StatusCode::BAD_REQUEST, "send {\"id\": …}"))?;
        let (owner, email) = self
            .accept_invitation(&caller.user_id, request.id.trim())
            .await?;
        Ok(Success::ok(
            json!({ "accepted": true, "owner": { "user_id": owner, "email": email } }),
        ))
    }

    /// B1/B2: the caller's personal URL; with `{"user_id": <owner>}` for an owner who
    /// shared "chat" with the caller, the caller's own delegated URL on the owner's data
    /// (never the owner's URL).
    pub(crate) async fn personal_url(
        &self,
        caller: &Caller,
        body: &[u8],
    ) -> Result<Success, ApiError> {
        let request = parse::<PersonalRequest>(body, true).ok_or_else(bad_body)?;
        let now = self.clock.now();
        let url = match other_owner(&request, caller) {
            None => self.own_personal_url(&caller.user_id).await?,
            Some(owner) if owner.len() > MAX_USER_ID => return Err(not_shared()),
            Some(owner) => self
                .urls
                .delegated(owner, &caller.user_id, CHAT_PERMISSION, now)
                .await?
                .ok_or_else(not_shared)?,
        };
        Ok(Success::ok(json!({ "url": url })))
    }

    /// Revokes the caller's personal URL; with `{"user_id": <owner>}`, the caller's
    /// delegated URL on that owner's data (the owner's own URL is never touched).
    pub(crate) async fn revoke_personal_url(
        &self,
        caller: &Caller,
        body: &[u8],
    ) -> Result<Success, ApiError> {
        let request = parse::<PersonalRequest>(body, true).ok_or_else(bad_body)?;
        let revoked = match other_owner(&request, caller) {
            None => self.revoke_own_personal_url(&caller.user_id).await?,
            Some(owner) if owner.len() > MAX_USER_ID => false,
            Some(owner) => self.urls.revoke_delegated(owner, &caller.user_id).await?,
        };
        Ok(Success::ok(json!({ "revoked": revoked })))
    }
}

/// Longest temporary URL id (a secret's hex SHA-256 is 64) a revoke may name.
const MAX_URL_ID: usize = 128;

/// One share as the caller sees it: the other person and the permissions.
pub(crate) struct ShareView {
    pub user_id: String,
    /// The other person's e-mail, when their account still exists.
    pub email: Option<String>,
    pub permissions: Vec<String>,
}

/// What `shares_of` answers: the console's access page and `GET /api/shares`.
pub(crate) struct SharesOverview {
    /// Accepted shares the user granted (the grantee who accepted, by e-mail).
    pub granted: Vec<ShareView>,
    /// Invitations the user sent that nobody accepted yet.
    pub pending: Vec<Invitation>,
    /// Invitations the user offered that lapsed unaccepted ([`Invitation::LIFETIME_SECS`]).
    pub lapsed: Vec<Invitation>,
    /// Shares the user received.
    pub received: Vec<ShareView>,
    /// Invitations to the user's confirmed address, each with the owner's address.
    pub invitations: Vec<(Invitation, Option<String>)>,
    pub email_confirmed: bool,
}

/// Who can act for a user: the typed cores the console's access page and
/// `GET /api/shares`, `GET /api/user/urls`, `DELETE /api/user/urls/{id}` share.
impl AccountApi {
    async fn share_views(
        &self,
        shares: Vec<(String, Vec<String>)>,
    ) -> Result<Vec<ShareView>, ApiError> {
        let mut views = Vec::with_capacity(shares.len());
        for (user_id, permissions) in shares {
            let email = self.store.account(&user_id).await?.map(|a| a.email);
            views.push(ShareView {
                user_id,
                email,
                permissions,
            });
        }
        Ok(views)
    }

    /// Everything shared by and with `user_id`: accepted shares both ways,
    /// the invitations the user sent that wait, and the invitations waiting for the
    /// user's address (only once it is confirmed: an unconfirmed account receives none).
    pub(crate) async fn shares_of(&self, user_id: &str) -> Result<SharesOverview, ApiError> {
        let account = self.store.account(user_id).await?;
        let granted = self.store.shares_granted(user_id).await?;
        let received = self.store.shares_received(user_id).await?;
        let now = self.clock.now();
        let (lapsed, pending): (Vec<Invitation>, Vec<Invitation>) = self
            .store
            .invitations_sent(user_id)
            .await?
            .into_iter()
            .partition(|invitation| invitation.lapsed(now));
        let email_confirmed = account.as_ref().is_some_and(|a| a.email_confirmed);
        let mut invitations = Vec::new();
        if let Some(account) = account.filter(|a| a.email_confirmed) {
            for invitation in self.store.invitations_for(&account.email).await? {
                if invitation.owner == user_id || invitation.lapsed(now) {
                    continue;
                }
                let from = self
                    .store
                    .account(&invitation.owner)
                    .await?
                    .map(|a| a.email);
                invitations.push((invitation, from));
            }
        }
        Ok(SharesOverview {
            granted: self.share_views(granted).await?,
            pending,
            lapsed,
            received: self.share_views(received).await?,
            invitations,
            email_confirmed,
        })
    }

    /// The user's live temporary URLs: (id, grant), soonest expiry first. The id is the
    /// secret's hash, which names the URL without opening it.
    pub(crate) async fn temporary_urls(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, UrlGrant)>, ApiError> {
        let listed = self.store.temporary_urls(user_id, self.clock.now()).await?;
        Ok(self.urls.still_valid(user_id, listed).await?)
    }

    /// The OAuth clients the user authorised, oldest grant first (what the console's
    /// access page lists, as `GET /api/user/oauth-grants` does).
    pub(crate) async fn oauth_grants(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, ClientGrant)>, ApiError> {
        let state = self.store.token_state(user_id).await?;
        let mut grants: Vec<_> = state.grants.into_iter().collect();
        grants.sort_by_key(|(id, grant)| (grant.granted_at, id.clone()));
        Ok(grants)
    }

    /// Ends one OAuth client's tokens and refresh families for the user.
    pub(crate) async fn end_client_grant(
        &self,
        user_id: &str,
        client_id: &str,
    ) -> Result<(), ApiError> {
        let end = TokenChange::EndClient {
            client_id: client_id.to_string(),
        };
        self.store
            .change_tokens(user_id, &end, self.clock.now())
            .await?;
        Ok(())
    }

    /// The user's personal URL: the live one, else a new one (B1: asking again gives the
    /// same URL). What `POST /personal/mcp` answers the owner, and the console's connect page.
    pub(crate) async fn own_personal_url(&self, user_id: &str) -> Result<String, ApiError> {
        Ok(self.urls.personal(user_id, self.clock.now()).await?)
    }

    /// Revokes the user's own personal URL: whether there was one.
    pub(crate) async fn revoke_own_personal_url(&self, user_id: &str) -> Result<bool, ApiError> {
        Ok(self.urls.revoke(user_id).await?)
    }

    /// The user's personal URL if one is live now (read only: nothing is minted).
    pub(crate) async fn live_personal_url(
        &self,
        user_id: &str,
    ) -> Result<Option<PersonalUrl>, ApiError> {
        Ok(self.store.personal_url(user_id, self.clock.now()).await?)
    }

    /// Ends a share the user received from `owner` (and its delegated URL).
    pub(crate) async fn leave_share(&self, grantee: &str, owner: &str) -> Result<(), ApiError> {
        Ok(self.store.delete_share(owner, grantee).await?)
    }

    /// The user's account, if there is one.
    pub(crate) async fn account_of(&self, user_id: &str) -> Result<Option<Account>, ApiError> {
        Ok(self.store.account(user_id).await?)
    }

    /// Mails a new confirmation link to the user's address, if the account exists.
    pub(crate) async fn resend_confirmation_to(&self, user_id: &str) -> Result<(), ApiError> {
        if let Some(account) = self.store.account(user_id).await? {
            self.send_confirmation(&account).await?;
        }
        Ok(())
    }

    /// Revokes one of the user's temporary URLs: 404 when it is not a live one of theirs.
    pub(crate) async fn revoke_temporary_url(
        &self,
        user_id: &str,
        id: &str,
    ) -> Result<(), ApiError> {
        let not_found = || {
            ApiError::refused(
                StatusCode::NOT_FOUND,
                "that temporary URL is not active (it may have expired)",
            )
        };
        if id.is_empty() || id.len() > MAX_URL_ID {
            return Err(not_found());
        }
        if self.store.revoke_temporary_url(user_id, id).await? {
            Ok(())
        } else {
            Err(not_found())
        }
    }

    /// `GET /api/shares`: `granted` (what the caller offers: `{email,
    /// permissions, status: "accepted" | "pending" | "expired", invited_at?}`, by address and never
    /// an account id, finding 4), `received` (`{user_id, email, permissions}` of the
    /// owners who share with the caller: the id is what `POST /personal/mcp` takes),
    /// `invitations` waiting for the caller's confirmed address (`{id, from,
    /// permissions, invited_at}`) and `email_confirmed`.
    pub(crate) async fn list_shares(&self, caller: &Caller) -> Result<Success, ApiError> {
        let overview = self.shares_of(&caller.user_id).await?;
        let mut granted: Vec<Value> = overview
            .granted
            .into_iter()
            .map(|v| json!({"email": v.email, "permissions": v.permissions, "status": "accepted"}))
            .collect();
        let waiting = overview.pending.into_iter().map(|i| (i, "pending"));
        let lapsed = overview.lapsed.into_iter().map(|i| (i, "expired"));
        granted.extend(waiting.chain(lapsed).map(|(i, status)| {
            json!({"email": i.email, "permissions": i.permissions, "status": status, "invited_at": i.created_at})
        }));
        let received: Vec<Value> = overview
            .received
            .into_iter()
            .map(|v| json!({"user_id": v.user_id, "email": v.email, "permissions": v.permissions}))
            .collect();
        let invitations: Vec<Value> = overview
            .invitations
            .into_iter()
            .map(|(i, from)| {
                json!({"id": i.id, "from": from, "permissions": i.permissions, "invited_at": i.created_at})
            })
            .collect();
        Ok(Success::ok(json!({
            "granted": granted, "received": received, "invitations": invitations,
            "email_confirmed": overview.email_confirmed,
        })))
    }

    /// `GET /api/user/urls`: the caller's live temporary URLs, `{urls: [{id, agent,
    /// session_id, expires_at}]}` (never a secret).
    pub(crate) async fn list_temporary_urls(&self, caller: &Caller) -> Result<Success, ApiError> {
        let urls: Vec<Value> = self
            .temporary_urls(&caller.user_id)
            .await?
            .into_iter()
            .map(|(id, grant)| {
                json!({
                    "id": id,
                    "agent": grant.agent_name,
                    "session_id": grant.session_id,
                    "expires_at": grant.expires_at,
                })
            })
            .collect();
        Ok(Success::ok(json!({ "urls": urls })))
    }

    /// `DELETE /api/user/urls/{id}`.
    pub(crate) async fn delete_temporary_url(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Success, ApiError> {
        self.revoke_temporary_url(&caller.user_id, id).await?;
        Ok(Success::ok(json!({ "id": id, "revoked": true })))
    }
}
