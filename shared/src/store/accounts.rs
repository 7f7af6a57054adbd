//! Accounts: the account and its e-mail lookup, its sessions and tokens (the token
//! state: epoch, ended sessions, withdrawn client grants), the password, the export's
//! records and the deletion of everything. Shares and URL grants are `grants.rs`'s,
//! login states and mailed links `logins.rs`'s.
//!
//! Also the abuse counters (failed sign-ins, registrations), fixed windows in the keys
//! table with a TTL, keyed by a hash the caller makes (never a raw e-mail or address).
//!
//! Owns the [`AccountStore`] trait and the outcome of creating an account. Stores
//! secrets only as hashes or sealed text, as it is given them; checks every expiry
//! itself.

use super::StoreError;
use crate::domain::{Account, ClientGrant, TokenState};
use async_trait::async_trait;

/// The outcome of creating an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// The e-mail already belongs to an account (nothing was written).
    EmailTaken,
}

/// At most this many ended sessions are kept per user; one more ends every session
/// instead (the epoch goes up and the list starts again).
pub(crate) const MAX_REVOKED_SESSIONS: usize = 64;
/// At most this many withdrawn client grants are kept per user; one more ends every
/// token instead, as above.
pub(crate) const MAX_REVOKED_CLIENTS: usize = 64;
/// At most this many authorised clients are listed; the oldest grant leaves the list
/// (its tokens still work until they expire or the user signs out everywhere).
pub(crate) const MAX_GRANTS: usize = 64;
/// A client's name is kept in a grant up to this many characters.
const MAX_CLIENT_NAME: usize = 200;

/// A change to a user's [`TokenState`], applied atomically by
/// [`AccountStore::change_tokens`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenChange {
    /// Ends every token and refresh family of the user (sign-out everywhere).
    EndAll,
    /// Ends one session (its tokens name it in `sid`) until its last token expires.
    EndSession { sid: String, expires_at: u64 },
    /// The user authorised `client_id` for `scope`.
    Grant {
        client_id: String,
        client_name: Option<String>,
        scope: String,
    },
    /// The user withdrew `client_id`'s grant: its tokens and refresh families end.
    EndClient { client_id: String },
    /// The account is being deleted: the state becomes the tombstone
    /// ([`TokenState::DELETED_EPOCH`], nothing else), which refuses every token for good.
    Deleted,
}

/// Applies `change` at `now`: the one definition of the record's rules both backends
/// share. Expired session entries are dropped on every write; the lists stay bounded
/// (an overflowing list ends everything instead, which is always safe).
pub(crate) fn apply_token_change(state: &mut TokenState, change: &TokenChange, now: u64) {
    state
        .revoked_sessions
        .retain(|_, expires_at| *expires_at > now);
    if state.deleted() {
        // A deleted account's tombstone never changes back.
        return;
    }
    match change {
        TokenChange::Deleted => {
            *state = TokenState {
                epoch: TokenState::DELETED_EPOCH,
                ..TokenState::default()
            };
        }
        TokenChange::EndAll => end_all(state),
        TokenChange::EndSession { sid, expires_at } => {
            if *expires_at > now {
                state.revoked_sessions.insert(sid.clone(), *expires_at);
            }
            if state.revoked_sessions.len() > MAX_REVOKED_SESSIONS {
                end_all(state);
            }
        }
        TokenChange::Grant {
            client_id,
            client_name,
            scope,
        } => {
            let name = client_name
                .as_deref()
                .map(|n| n.chars().take(MAX_CLIENT_NAME).collect());
            let granted_at = state
                .grants
                .get(client_id)
                .map_or(now, |grant| grant.granted_at);
            state.grants.insert(
                client_id.clone(),
                ClientGrant {
                    scope: scope.clone(),
                    granted_at,
                    client_name: name,
                },
            );
            while state.grants.len() > MAX_GRANTS {
                let oldest = state
                    .grants
                    .iter()
                    .min_by_key(|(_, grant)| grant.granted_at)
                    .map(|(id, _)| id.clone());
                if let Some(oldest) = oldest {
                    state.grants.remove(&oldest);
                }
            }
        }
        TokenChange::EndClient { client_id } => {
            state.grants.remove(client_id);
            state.revoked_clients.insert(client_id.clone(), now);
            if state.revoked_clients.len() > MAX_REVOKED_CLIENTS {
                end_all(state);
            }
        }
    }
}

/// A new epoch: everything stamped before it is refused, so the lists are moot.
fn end_all(state: &mut TokenState) {
    state.epoch = state.epoch.saturating_add(1);
    state.revoked_sessions.clear();
    state.revoked_clients.clear();
    state.grants.clear();
}

/// Accounts, their tokens, the abuse counters and the whole account (DynamoDB: keys
/// table `email#…`, `tokens#…`, `limit#…`; data table `<user>/account`).
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Creates the account and its e-mail lookup in one transaction; an e-mail that
    /// is taken writes nothing. A user id that already has an account is an error
    /// (nothing written; ids are generated, so it means a bug).
    async fn create_account(&self, account: &Account) -> Result<Created, StoreError>;

    /// The account whose (lower-cased) e-mail is exactly `email`.
    async fn account_by_email(&self, email: &str) -> Result<Option<Account>, StoreError>;

    async fn account(&self, user_id: &str) -> Result<Option<Account>, StoreError>;

    // ----- Housekeeping -----

    /// Deletes a bounded batch of rows that expired a day or more before `now` (login
    /// states, URL grants, codes, refresh tokens, lapsed clients, counters, upload
    /// records); answers how many. Bounded work, so a request may call it. DynamoDB:
    /// nothing (its TTL on `expires_at` does it).
    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError>;

    // ----- Abuse counters (keys table `limit#<key hash>#<window start>`) -----

    /// Adds one to the counter `key_hash` in the fixed window of `window_secs` seconds
    /// that holds `now` ([`window`]) and returns its new value. The item expires at
    /// the window's end. Atomic: concurrent callers each see a distinct value.
    async fn count_event(
        &self,
        key_hash: &str,
        window_secs: u64,
        now: u64,
    ) -> Result<u32, StoreError>;

    /// The counter's value in the window that holds `now`; 0 when nothing was counted.
    async fn event_count(
        &self,
        key_hash: &str,
        window_secs: u64,
        now: u64,
    ) -> Result<u32, StoreError>;

    // ----- Token revocation (keys table `tokens#<user>`) -----

    /// The user's token state: one read, the default when nothing was ever revoked or
    /// granted (also for a user id without an account).
    async fn token_state(&self, user_id: &str) -> Result<TokenState, StoreError>;

    /// Applies `change` ([`apply_token_change`]) atomically: concurrent changes each
    /// see the other's result (two sign-outs everywhere add two to the epoch). Returns
    /// the new state.
    async fn change_tokens(
        &self,
        user_id: &str,
        change: &TokenChange,
        now: u64,
    ) -> Result<TokenState, StoreError>;

    /// Stores the account's new password hash and ends every token of the user
    /// ([`TokenChange::EndAll`]) in one transaction; the new state, or `None` (nothing
    /// written) when the user has no account.
    async fn change_password(
        &self,
        user_id: &str,
        password_hash: &str,
        now: u64,
    ) -> Result<Option<TokenState>, StoreError>;
    // ----- Proving an address -----

    /// Marks the account confirmed (at `now`) when its e-mail is still exactly `email`; true if it
    /// is confirmed afterwards (already was, or now), false when there is no such account.
    async fn confirm_email(&self, user_id: &str, email: &str, now: u64)
    -> Result<bool, StoreError>;

    // ----- The whole account -----

    /// The shares the user granted and the personal URL's status, for the export.
    async fn account_records(&self, user_id: &str) -> Result<AccountRecords, StoreError>;

    /// Deletes everything the store keeps of the user: first the token state becomes
    /// the tombstone ([`TokenChange::Deleted`]: every token, refresh family and session
    /// refused), then the account and its e-mail lookup, the invitations it sent, readings, rollups, catalogue,
    /// genome, presence, upload records and their object pointers, shares in both
    /// directions with their delegated URLs, the personal URL and its grant, and the
    /// external MCP server records. Idempotent: a retry after a failure finishes the
    /// job. The tombstone stays (a random id and an epoch, nothing personal). Uploaded
    /// files still waiting are the caller's to delete (`UploadObjects`).
    async fn delete_account_everything(&self, user_id: &str, now: u64) -> Result<(), StoreError>;
}

/// What an account's export shows that no other read answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountRecords {
    /// The shares the user granted: grantee and permissions, ordered by grantee.
    pub shares_granted: Vec<(String, Vec<String>)>,
    /// When the user's personal URL expires, if there is one (live or not; never
    /// its secret).
    pub personal_url_expires_at: Option<u64>,
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
    (
        format!("{}{key_hash}#{start}", super::keys::LIMIT_PREFIX),
        end,
    )
}
