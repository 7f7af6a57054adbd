//! Links that prove an address: the confirmation link a sign-up
//! mails, and the "forgot password" link that sets a new password.
//!
//! Owns each link's life: a 32-byte random secret in the link, only its SHA-256 stored
//! (`mail#<hash>`, [`MailToken`]), single use (the store's atomic take), short-lived
//! (confirmation [`CONFIRM_SECS`], reset [`RESET_SECS`]); the abuse limits of asking for
//! one; and what using one does. A reset sets the new hash and ends every token in one
//! store write (as a password change), then ends everything sign-out everywhere ends
//! (`AccountApi::end_everything`). Asking for a reset answers the same whether or not
//! the address has an account. Never logs a link, its secret or an address.

use std::net::IpAddr;

use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::api::accounts::{AccountApi, normalise_email, refuse_weak_password};
use crate::domain::{Account, MailPurpose, MailToken};
use crate::http::{ApiError, Success};
use crate::identity::{Caller, Quota, random_secret, secret_hash};
use crate::mail::Letter;

/// A confirmation link lives a day.
pub(crate) const CONFIRM_SECS: u64 = 24 * 3600;
/// A reset link lives half an hour.
pub(crate) const RESET_SECS: u64 = 30 * 60;
/// Reset requests per source address in an hour (past it: 429, before anything is read).
const RESETS_PER_SOURCE: Quota = Quota {
    kind: "reset-ip",
    allowed: 10,
    window_secs: 3600,
};
/// Reset mails per address in an hour (past it: the same answer, and no mail).
const RESETS_PER_ADDRESS: Quota = Quota {
    kind: "reset-email",
    allowed: 3,
    window_secs: 3600,
};
/// Confirmation mails per account in an hour (sign-up's own, and asking again).
const CONFIRMATIONS_PER_ACCOUNT: Quota = Quota {
    kind: "confirm-mail",
    allowed: 5,
    window_secs: 3600,
};

#[derive(Deserialize)]
struct TokenBody {
    token: String,
}

#[derive(Deserialize)]
struct ForgotBody {
    email: String,
}

#[derive(Deserialize)]
struct ResetBody {
    token: String,
    new_password: String,
}

fn invalid_link() -> ApiError {
    ApiError::refused(
        StatusCode::BAD_REQUEST,
        "this link is not valid: it was used already, it expired, or it was mistyped",
    )
}

/// What every reset request answers (an address with or without an account).
pub(crate) const RESET_SENT: &str =
    "if an account has this address, a link to reset its password is on its way";

/// A link secret's bounds before it is hashed (ours are 43 characters).
fn plausible(token: &str) -> bool {
    (16..=128).contains(&token.len())
}

impl AccountApi {
    /// `{origin}{path}?token=<secret>`, with the secret's record stored.
    async fn mint_link(
        &self,
        account: &Account,
        purpose: MailPurpose,
        lifetime: u64,
        path: &str,
    ) -> Result<String, ApiError> {
        let secret = random_secret(32);
        let token = MailToken {
            purpose,
            user_id: account.user_id.clone(),
            email: account.email.clone(),
            expires_at: self.clock.now().saturating_add(lifetime),
        };
        self.store
            .put_mail_token(&secret_hash(&secret), &token)
            .await?;
        Ok(format!("{}{path}?token={secret}", self.origin))
    }

    /// Mails `account` a confirmation link, within its hourly limit; whether one went.
    /// A mail failure is logged (without the address) and answered as not sent.
    pub(crate) async fn send_confirmation(&self, account: &Account) -> Result<bool, ApiError> {
        let Some(mail) = &self.mail else {
            return Ok(false);
        };
        if account.email_confirmed {
            return Ok(false);
        }
        let now = self.clock.now();
        if CONFIRMATIONS_PER_ACCOUNT
            .spend_on(self.store.as_ref(), &account.user_id, now)
            .await?
            .is_some()
        {
            return Ok(false);
        }
        let link = self
            .mint_link(
                account,
                MailPurpose::Confirm,
                CONFIRM_SECS,
                "/console/confirm",
            )
            .await?;
        let letter = Letter::Confirm {
            link: &link,
            hours: CONFIRM_SECS / 3600,
        };
        match mail.send(&letter.to(&account.email)).await {
            Ok(()) => Ok(true),
            Err(error) => {
                tracing::warn!(%error, "confirmation mail not sent");
                Ok(false)
            }
        }
    }

    /// Uses a confirmation link: the account's address is confirmed (if the account
    /// still has it). 400 for a used, expired or unknown link.
    pub(crate) async fn confirm_address(&self, token: &str) -> Result<(), ApiError> {
        if !plausible(token) {
            return Err(invalid_link());
        }
        let now = self.clock.now();
        let Some(link) = self
            .store
            .take_mail_token(&secret_hash(token), MailPurpose::Confirm, now)
            .await?
        else {
            return Err(invalid_link());
        };
        if self
            .store
            .confirm_email(&link.user_id, &link.email, now)
            .await?
        {
            Ok(())
        } else {
            Err(invalid_link())
        }
    }

    /// Asks for a reset link for `email`: the same `Ok` whether or not it has an
    /// account; 429 past the per-source limit (counted before anything is read); past
    /// the per-address limit, the same answer and no mail.
    pub(crate) async fn request_reset(
        &self,
        email: &str,
        source: Option<IpAddr>,
    ) -> Result<(), ApiError> {
        let now = self.clock.now();
        if let Some(source) = source
            && let Some(retry_after) = RESETS_PER_SOURCE
                .spend(self.store.as_ref(), source, now)
                .await?
        {
            return Err(ApiError::TooMany {
                msg: "too many password reset requests from this address; try again later",
                retry_after,
            });
        }
        let Some(email) = normalise_email(email) else {
            return Ok(());
        };
        if RESETS_PER_ADDRESS
            .spend_on(self.store.as_ref(), &email, now)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let (Some(mail), Some(account)) = (&self.mail, self.store.account_by_email(&email).await?)
        else {
            return Ok(());
        };
        let link = self
            .mint_link(&account, MailPurpose::Reset, RESET_SECS, "/console/reset")
            .await?;
        let letter = Letter::Reset {
            link: &link,
            minutes: RESET_SECS / 60,
        };
        if let Err(error) = mail.send(&letter.to(&account.email)).await {
            tracing::warn!(%error, "reset mail not sent");
        }
        Ok(())
    }

    /// Uses a reset link: the new password is set and every token of the account ends
    /// (one store write, as a password change), then everything sign-out everywhere
    /// ends; the address counts as confirmed (the link reached it). 400 for a used,
    /// expired or unknown link (checked before the password is hashed).
    pub(crate) async fn reset_password(
        &self,
        token: &str,
        new_password: String,
    ) -> Result<(), ApiError> {
        refuse_weak_password(&new_password)?;
        if !plausible(token) {
            return Err(invalid_link());
        }
        let now = self.clock.now();
        let Some(link) = self
            .store
            .take_mail_token(&secret_hash(token), MailPurpose::Reset, now)
            .await?
        else {
            return Err(invalid_link());
        };
        let password_hash = self.passwords.hash(new_password).await.ok_or_else(|| {
            ApiError::refused(StatusCode::INTERNAL_SERVER_ERROR, "password reset failed")
        })?;
        self.store
            .change_password(&link.user_id, &password_hash, now)
            .await?
            .ok_or_else(invalid_link)?;
        self.end_everything(&link.user_id).await?;
        self.store
            .confirm_email(&link.user_id, &link.email, now)
            .await?;
        Ok(())
    }

    /// `POST /auth/confirm` `{"token"}`.
    pub(crate) async fn confirm_api(&self, body: &[u8]) -> Result<Success, ApiError> {
        let request = serde_json::from_slice::<TokenBody>(body)
            .map_err(|_| ApiError::refused(StatusCode::BAD_REQUEST, "send {\"token\": …}"))?;
        self.confirm_address(&request.token).await?;
        Ok(Success::ok(json!({ "email_confirmed": true })))
    }

    /// `POST /auth/confirm/resend`: a new confirmation link to the caller's address.
    pub(crate) async fn resend_confirmation_api(
        &self,
        caller: &Caller,
    ) -> Result<Success, ApiError> {
        let account = self
            .store
            .account(&caller.user_id)
            .await?
            .ok_or(ApiError::NoRoute)?;
        let sent = self.send_confirmation(&account).await?;
        Ok(Success::accepted(
            json!({ "email_confirmed": account.email_confirmed, "confirmation_sent": sent }),
        ))
    }

    /// `POST /auth/forgot` `{"email"}`: 202 with the same words for every address.
    pub(crate) async fn forgot_api(
        &self,
        body: &[u8],
        source: Option<IpAddr>,
    ) -> Result<Success, ApiError> {
        let request = serde_json::from_slice::<ForgotBody>(body)
            .map_err(|_| ApiError::refused(StatusCode::BAD_REQUEST, "send {\"email\": …}"))?;
        self.request_reset(&request.email, source).await?;
        Ok(Success::accepted(json!({ "sent": RESET_SENT })))
    }

    /// `POST /auth/reset` `{"token", "new_password"}`.
    pub(crate) async fn reset_api(&self, body: &[u8]) -> Result<Success, ApiError> {
        let request = serde_json::from_slice::<ResetBody>(body).map_err(|_| {
            ApiError::refused(
                StatusCode::BAD_REQUEST,
                "send {\"token\": …, \"new_password\": …}",
            )
        })?;
        self.reset_password(&request.token, request.new_password)
            .await?;
        Ok(Success::ok(
            json!({ "password_reset": true, "signed_out": "everywhere" }),
        ))
    }
}
