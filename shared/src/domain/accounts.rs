//! Accounts and what grants access to a user's data: the account itself, URL secrets
//! (personal and temporary), and device-style login states.
//!
//! Plain records: secrets appear here only as hashes or sealed text, never in the
//! clear. Knows nothing of how they are issued, checked or stored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An account: one user, found by id or by e-mail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub user_id: String,
    /// Lower-cased and trimmed by the caller.
    pub email: String,
    /// An Argon2id PHC string; never the password.
    pub password_hash: String,
    pub created_at: u64,
    /// Whether the owner of the address proved it: a confirmation
    /// link from the sign-up mail, or a password reset through a mailed link. Only a
    /// confirmed account may accept a share. Accounts made before address confirmation read as
    /// unconfirmed until they confirm.
    #[serde(default)]
    pub email_confirmed: bool,
}

/// What a mailed link is for. Each is single use and short-lived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailPurpose {
    /// Proves that the account's owner reads mail at its address.
    Confirm,
    /// Sets a new password (and proves the address too).
    Reset,
}

/// A mailed link's record, found by the SHA-256 of the link's secret (never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailToken {
    pub purpose: MailPurpose,
    pub user_id: String,
    /// The address the link was sent to (a confirmation confirms exactly this one).
    pub email: String,
    pub expires_at: u64,
}

/// A share waiting for its grantee: the owner offered `permissions` to
/// whoever proves `email`; no grant exists until a confirmed account with that address
/// accepts. Found by owner and address; `id` (random) names it to the invitee, so that
/// nothing names an account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invitation {
    pub id: String,
    pub owner: String,
    /// Lower-cased and trimmed by the caller.
    pub email: String,
    pub permissions: Vec<String>,
    pub created_at: u64,
}

impl Invitation {
    /// How long an invitation can be accepted: 30 days. Sharing again with the address
    /// makes a new one (a mailbox that changes hands years later finds nothing waiting).
    pub const LIFETIME_SECS: u64 = 30 * 24 * 3600;

    /// Whether the invitation can no longer be accepted at `now`.
    pub fn lapsed(&self, now: u64) -> bool {
        now >= self.created_at.saturating_add(Self::LIFETIME_SECS)
    }
}

/// What a URL secret grants; found by the SHA-256 of the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlGrant {
    pub user_id: String,
    /// Temporary URLs (B3) carry a session id and an agent name.
    pub session_id: Option<String>,
    pub agent_name: Option<String>,
    /// A share's delegated grant (B2) carries who acts on `user_id`'s data, and with
    /// which permission; `None` for the user's own URLs.
    pub delegation: Option<Delegation>,
    /// Epoch seconds; from then on the grant resolves to nothing.
    pub expires_at: u64,
    /// The holder's token epoch when the grant was made: the
    /// grantee's for a delegated URL, the user's for a temporary one. A holder who
    /// signs out everywhere, changes or resets the password moves to a newer epoch, and
    /// the grant resolves to nothing. 0 for grants stored before epochs existed.
    #[serde(default)]
    pub epoch: u64,
}

/// A grantee acting on an owner's data through a grant of their own (B2): the owner is
/// the grant's `user_id`; the grant dies with the share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegation {
    pub grantee: String,
    /// The shared permission the grant was minted for (`chat`).
    pub permission: String,
}

/// A user's personal URL, or a grantee's delegated URL on a share (B2): the secret,
/// sealed so that the same URL can be shown again, and the hash that keys its grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalUrl {
    pub sealed_secret: String,
    pub secret_hash: String,
    pub expires_at: u64,
    /// The holder's token epoch when it was made, as [`UrlGrant::epoch`]: a claim from an
    /// older epoch is dead, and the next request replaces it.
    #[serde(default)]
    pub epoch: u64,
}

impl PersonalUrl {
    /// Whether this kept claim still stands against `candidate`, a new one made at the
    /// holder's current epoch: unexpired at `now` and not from an older epoch.
    pub fn live(&self, candidate: &PersonalUrl, now: u64) -> bool {
        self.expires_at > now && self.epoch >= candidate.epoch
    }
}

/// A device-style login, polled by `/oauth2/check_state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginState {
    pub status: LoginStatus,
    pub expires_at: u64,
    /// When the prompt was made (shown on the sign-in page).
    pub created_at: u64,
    /// Who asked: the MCP client's name as it identified itself, if it did.
    pub client_name: Option<String>,
    /// SHA-256 of the poll secret that only the initiating client holds; a state
    /// without one (empty) can never be polled.
    pub poll_secret_hash: String,
    /// SHA-256 of the state and the user code the initiating client shows; a state
    /// without one (empty) can never be completed.
    pub user_code_hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LoginStatus {
    Pending,
    /// The browser step finished; the token is sealed at rest.
    Completed {
        sealed_token: String,
    },
    /// The poll handed the token out once; it is no longer kept.
    Collected,
}

/// What ends a user's tokens before they expire (revocation), and the OAuth
/// clients the user authorised. One small record per user, read once per request that
/// carries a bearer token; a user without one has never revoked anything (epoch 0).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenState {
    /// A token (or refresh family) stamped with an older epoch is refused; one without
    /// a stamp is epoch 0. Sign-out everywhere and a password change add one.
    pub epoch: u64,
    /// Ended sessions: a token's session id → when the last token of it expires (the
    /// entry is dropped after that).
    #[serde(default)]
    pub revoked_sessions: BTreeMap<String, u64>,
    /// OAuth client id → when the user withdrew its grant: that client's tokens and
    /// refresh families issued at or before then are refused.
    #[serde(default)]
    pub revoked_clients: BTreeMap<String, u64>,
    /// OAuth client id → what the user granted it (the grants list).
    #[serde(default)]
    pub grants: BTreeMap<String, ClientGrant>,
}

impl TokenState {
    /// The epoch of a deleted account's token state: above every epoch a
    /// token can carry, and never moved again, so every token, refresh family and
    /// session of the account is refused, including one minted after the deletion.
    pub const DELETED_EPOCH: u64 = u64::MAX;

    /// The account was deleted: everything stamped for it is refused.
    pub fn deleted(&self) -> bool {
        self.epoch == Self::DELETED_EPOCH
    }
}

/// An OAuth client the user authorised: the scope, when, and the client's name as it
/// identified itself then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientGrant {
    pub scope: String,
    pub granted_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
}
