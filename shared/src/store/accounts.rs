//! Accounts and what grants access to a user's data: shares between accounts, URL
//! secrets (personal, temporary, and a grantee's delegated URL on a share), and
//! device-login states.
//!
//! Also the abuse counters (failed sign-ins, registrations), fixed windows in the keys
//! table with a TTL, keyed by a hash the caller makes (never a raw e-mail or address).
//!
//! Owns the [`AccountStore`] trait and the outcome of creating an account. Stores
//! secrets only as hashes or sealed text, as it is given them; checks every expiry
//! itself.

use super::StoreFuture;
use crate::domain::{Account, LoginState, PersonalUrl, UrlGrant};

/// The outcome of creating an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// The e-mail already belongs to an account (nothing was written).
    EmailTaken,
}

/// Accounts (DynamoDB: keys table `email#…`, data table `<user>/account`), shares,
/// URL grants, personal URL claims and login states.
pub trait AccountStore: Send + Sync {
    /// Creates the account and its e-mail lookup in one transaction; an e-mail that
    /// is taken writes nothing. A user id that already has an account is an error
    /// (nothing written; ids are generated, so it means a bug).
    fn create_account<'a>(&'a self, account: &'a Account) -> StoreFuture<'a, Created>;

    /// The account whose (lower-cased) e-mail is exactly `email`.
    fn account_by_email<'a>(&'a self, email: &'a str) -> StoreFuture<'a, Option<Account>>;

    fn account<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Option<Account>>;

    // ----- Shares between accounts (data table `<owner>/share#<grantee>`) -----

    /// Grants (replaces) `grantee`'s permissions on `owner`'s data.
    fn put_share<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
        permissions: &'a [String],
    ) -> StoreFuture<'a, ()>;

    /// Ends the share and the grantee's delegated URL on it (its `share-url#` claim and
    /// its `url#` grant) in one transaction: from then on that secret resolves to
    /// nothing, and a later share starts without a URL.
    fn delete_share<'a>(&'a self, owner: &'a str, grantee: &'a str) -> StoreFuture<'a, ()>;

    /// The permissions `owner` granted `grantee`, if any.
    fn share<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
    ) -> StoreFuture<'a, Option<Vec<String>>>;

    // ----- URL secrets (keys table `url#<hash>`, `user-url#<user>`) -----

    fn put_url_grant<'a>(
        &'a self,
        secret_hash: &'a str,
        grant: &'a UrlGrant,
    ) -> StoreFuture<'a, ()>;

    /// The grant for a secret hash; `None` when absent or expired at `now`.
    fn url_grant<'a>(&'a self, secret_hash: &'a str, now: u64)
    -> StoreFuture<'a, Option<UrlGrant>>;

    /// The user's live personal URL if there is one (unchanged); otherwise stores
    /// `candidate` and its `url#` grant in one conditional transaction and returns it.
    /// Two racing callers get the same URL.
    fn claim_personal_url<'a>(
        &'a self,
        user_id: &'a str,
        candidate: &'a PersonalUrl,
        now: u64,
    ) -> StoreFuture<'a, PersonalUrl>;

    /// Deletes the personal URL and its grant; true if there was one (expired or not:
    /// the store is not told the time here).
    fn revoke_personal_url<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, bool>;

    // ----- Device-login states (keys table `state#<hash>`; callers pass the state's
    // `secret_hash`, never the raw state) -----

    fn put_login_state<'a>(&'a self, state: &'a str, record: &'a LoginState)
    -> StoreFuture<'a, ()>;

    /// The state as stored, even when expired (the poll answers 410 for those).
    fn login_state<'a>(&'a self, state: &'a str) -> StoreFuture<'a, Option<LoginState>>;

    /// Pending and unexpired at `now` → completed with the sealed token; else false.
    fn complete_login_state<'a>(
        &'a self,
        state: &'a str,
        sealed_token: &'a str,
        now: u64,
    ) -> StoreFuture<'a, bool>;

    /// Completed and unexpired at `now` → collected (the sealed token is dropped from
    /// the store), answering the sealed token; else `None`. Atomic: of two concurrent
    /// takes exactly one gets the token (issue 12, finding 3).
    fn take_login_token<'a>(&'a self, state: &'a str, now: u64) -> StoreFuture<'a, Option<String>>;

    // ----- Abuse counters (keys table `limit#<key hash>#<window start>`) -----

    /// Adds one to the counter `key_hash` in the fixed window of `window_secs` seconds
    /// that holds `now` ([`window`]) and returns its new value. The item expires at
    /// the window's end. Atomic: concurrent callers each see a distinct value.
    fn count_event<'a>(
        &'a self,
        key_hash: &'a str,
        window_secs: u64,
        now: u64,
    ) -> StoreFuture<'a, u32>;

    /// The counter's value in the window that holds `now`; 0 when nothing was counted.
    fn event_count<'a>(
        &'a self,
        key_hash: &'a str,
        window_secs: u64,
        now: u64,
    ) -> StoreFuture<'a, u32>;

    // ----- Delegated share URLs (B2; keys table `share-url#<owner>#<grantee>`, and the
    // `url#<hash>` grant of its secret with the delegation; user ids never hold `#`) -----

    /// The grantee's live delegated URL on `owner`'s data if there is one (unchanged);
    /// otherwise, if `owner` shares `permission` with `grantee`, stores `candidate` and
    /// its `url#` grant (owner, grantee, permission) in one conditional transaction that
    /// also checks the share, and returns it. `None` when there is no such share
    /// (nothing written). A live URL is returned without reading the share again: it was
    /// checked by the claim, and the URL dies with the share. Two racing callers get the
    /// same URL.
    fn claim_share_url<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
        permission: &'a str,
        candidate: &'a PersonalUrl,
        now: u64,
    ) -> StoreFuture<'a, Option<PersonalUrl>>;

    /// Deletes the grantee's delegated URL on `owner`'s data and its grant, leaving the
    /// share; true if there was one.
    fn revoke_share_url<'a>(&'a self, owner: &'a str, grantee: &'a str) -> StoreFuture<'a, bool>;

    /// The grantee's delegated URL on `owner`'s data, if one is live at `now`.
    fn share_url<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
        now: u64,
    ) -> StoreFuture<'a, Option<PersonalUrl>>;
}

/// The fixed window of `window_secs` (at least 1) that holds `now`: its start and end.
pub(crate) fn window(window_secs: u64, now: u64) -> (u64, u64) {
    let secs = window_secs.max(1);
    let start = now - now % secs;
    (start, start.saturating_add(secs))
}

/// The keys-table key of a counter's window.
pub(crate) fn counter_key(key_hash: &str, window_secs: u64, now: u64) -> (String, u64) {
    let (start, end) = window(window_secs, now);
    (format!("limit#{key_hash}#{start}"), end)
}
