//! Short-lived, single-use records of signing in: device-login states (the seed's
//! login prompt) and mailed links (proving an address, resetting a password).
//!
//! Owns the [`LoginStore`] trait. Callers pass the hash of a state or link secret,
//! never the raw secret; every take is atomic (of two racing takes exactly one wins)
//! and checks expiry itself.

use async_trait::async_trait;

use super::StoreError;
use crate::domain::{LoginState, MailPurpose, MailToken};

#[async_trait]
/// Login states and mailed links (DynamoDB: keys table `state#…`, `mail#…`).
pub trait LoginStore: Send + Sync {
    // ----- Device-login states (keys table `state#<hash>`; callers pass the state's
    // `secret_hash`, never the raw state) -----

    async fn put_login_state(&self, state: &str, record: &LoginState) -> Result<(), StoreError>;

    /// The state as stored, even when expired (the poll answers 410 for those).
    async fn login_state(&self, state: &str) -> Result<Option<LoginState>, StoreError>;

    /// Pending and unexpired at `now` → completed with the sealed token; else false.
    async fn complete_login_state(
        &self,
        state: &str,
        sealed_token: &str,
        now: u64,
    ) -> Result<bool, StoreError>;

    /// Completed and unexpired at `now` → collected (the sealed token is dropped from
    /// the store), answering the sealed token; else `None`. Atomic: of two concurrent
    /// takes exactly one gets the token.
    async fn take_login_token(&self, state: &str, now: u64) -> Result<Option<String>, StoreError>;

    // ----- Mailed links (keys table `mail#<hash>`) -----

    /// Stores a mailed link's record under the hash of its secret (keys table
    /// `mail#<hash>`, expiring at `token.expires_at`).
    async fn put_mail_token(&self, secret_hash: &str, token: &MailToken) -> Result<(), StoreError>;

    /// Deletes and answers the link of `secret_hash` when it is for `purpose` and live at
    /// `now`; else `None` (a link for another purpose is left alone). Atomic: of two
    /// racing takes exactly one gets it (single use).
    async fn take_mail_token(
        &self,
        secret_hash: &str,
        purpose: MailPurpose,
        now: u64,
    ) -> Result<Option<MailToken>, StoreError>;
}
