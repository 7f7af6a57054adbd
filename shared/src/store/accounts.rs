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

use super::StoreError;
use crate::domain::{
    Account, ClientGrant, Invitation, LoginState, MailPurpose, MailToken, PersonalUrl, TokenState,
    UrlGrant,
};
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

/// Accounts (DynamoDB: keys table `email#…`, data table `<user>/account`), shares,
/// URL grants, personal URL claims and login states.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Creates the account and its e-mail lookup in one transaction; an e-mail that
    /// is taken writes nothing. A user id that already has an account is an error
    /// (nothing written; ids are generated, so it means a bug).
    async fn create_account(&self, account: &Account) -> Result<Created, StoreError>;

    /// The account whose (lower-cased) e-mail is exactly `email`.
    async fn account_by_email(&self, email: &str) -> Result<Option<Account>, StoreError>;

    async fn account(&self, user_id: &str) -> Result<Option<Account>, StoreError>;

    // ----- Shares between accounts (data table `<owner>/share#<grantee>`) -----

    /// Grants (replaces) `grantee`'s permissions on `owner`'s data.
    async fn put_share(
        &self,
        owner: &str,
        grantee: &str,
        permissions: &[String],
    ) -> Result<(), StoreError>;

    /// Ends the share and the grantee's delegated URL on it (its `share-url#` claim and
    /// its `url#` grant) in one transaction: from then on that secret resolves to
    /// nothing, and a later share starts without a URL.
    async fn delete_share(&self, owner: &str, grantee: &str) -> Result<(), StoreError>;

    /// The permissions `owner` granted `grantee`, if any.
    async fn share(&self, owner: &str, grantee: &str) -> Result<Option<Vec<String>>, StoreError>;

    // ----- URL secrets (keys table `url#<hash>`, `user-url#<user>`) -----

    async fn put_url_grant(&self, secret_hash: &str, grant: &UrlGrant) -> Result<(), StoreError>;

    /// The grant for a secret hash; `None` when absent or expired at `now`.
    async fn url_grant(&self, secret_hash: &str, now: u64) -> Result<Option<UrlGrant>, StoreError>;

    /// The user's live personal URL if there is one (unchanged); otherwise stores
    /// `candidate` and its `url#` grant in one conditional transaction and returns it.
    /// Two racing callers get the same URL.
    async fn claim_personal_url(
        &self,
        user_id: &str,
        candidate: &PersonalUrl,
        now: u64,
    ) -> Result<PersonalUrl, StoreError>;

    /// Deletes the personal URL and its grant; true if there was one (expired or not:
    /// the store is not told the time here).
    async fn revoke_personal_url(&self, user_id: &str) -> Result<bool, StoreError>;

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

    // ----- Delegated share URLs (B2; keys table `share-url#<owner>#<grantee>`, and the
    // `url#<hash>` grant of its secret with the delegation; user ids never hold `#`) -----

    /// The grantee's live delegated URL on `owner`'s data if there is one (unchanged);
    /// otherwise, if `owner` shares `permission` with `grantee`, stores `candidate` and
    /// its `url#` grant (owner, grantee, permission) in one conditional transaction that
    /// also checks the share, and returns it. `None` when there is no such share
    /// (nothing written). A live URL is returned without reading the share again: it was
    /// checked by the claim, and the URL dies with the share. Two racing callers get the
    /// same URL.
    async fn claim_share_url(
        &self,
        owner: &str,
        grantee: &str,
        permission: &str,
        candidate: &PersonalUrl,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError>;

    /// Deletes the grantee's delegated URL on `owner`'s data and its grant, leaving the
    /// share; true if there was one.
    async fn revoke_share_url(&self, owner: &str, grantee: &str) -> Result<bool, StoreError>;

    /// The grantee's delegated URL on `owner`'s data, if one is live at `now`.
    async fn share_url(
        &self,
        owner: &str,
        grantee: &str,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError>;

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

    // ----- Who can act for a user (the console's access page, `/api/shares`,
    // `/api/user/urls`) -----

    /// The shares `user_id` granted: (grantee, permissions), ordered by grantee.
    async fn shares_granted(&self, user_id: &str)
    -> Result<Vec<(String, Vec<String>)>, StoreError>;

    /// The shares granted to `user_id`: (owner, permissions), ordered by owner.
    /// (DynamoDB: the `<grantee>/shared-by#<owner>` item written and deleted with the
    /// share.)
    async fn shares_received(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError>;

    /// The user's temporary URL grants (a session and an agent, no delegation) live at
    /// `now`: (secret hash, grant), soonest expiry first.
    async fn temporary_urls(
        &self,
        user_id: &str,
        now: u64,
    ) -> Result<Vec<(String, UrlGrant)>, StoreError>;

    /// Deletes the user's temporary URL grant of `secret_hash`: true if there was one of
    /// theirs (another user's grant, a personal or a delegated URL is never touched).
    async fn revoke_temporary_url(
        &self,
        user_id: &str,
        secret_hash: &str,
    ) -> Result<bool, StoreError>;

    /// The user's personal URL if one is live at `now` (read only: nothing is minted).
    async fn personal_url(
        &self,
        user_id: &str,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError>;
    // ----- Proving an address, and shares as invitations -----

    /// Marks the account confirmed (at `now`) when its e-mail is still exactly `email`; true if it
    /// is confirmed afterwards (already was, or now), false when there is no such account.
    async fn confirm_email(&self, user_id: &str, email: &str, now: u64)
    -> Result<bool, StoreError>;

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

    /// Writes (replaces) the owner's invitation to `invitation.email` (DynamoDB: the
    /// owner's `invite#<email>` item and the address's `invitee#<email>`/`invite#<owner>`
    /// item, together).
    async fn put_invitation(&self, invitation: &Invitation) -> Result<(), StoreError>;

    /// Withdraws the owner's invitation to `email`; true if there was one.
    async fn delete_invitation(&self, owner: &str, email: &str) -> Result<bool, StoreError>;

    /// The invitations `owner` sent that wait, ordered by address.
    async fn invitations_sent(&self, owner: &str) -> Result<Vec<Invitation>, StoreError>;

    /// The invitations waiting for `email`, ordered by owner.
    async fn invitations_for(&self, email: &str) -> Result<Vec<Invitation>, StoreError>;

    /// Accepts the invitation `id` to `email` for `grantee`: in one transaction the
    /// invitation goes and the share (owner to grantee, the invitation's permissions)
    /// is written. The accepted invitation, or `None` (nothing written) when there is no
    /// such invitation to that address, or the owner is the grantee. The caller checks
    /// that `grantee` is a confirmed account with exactly that address.
    async fn accept_invitation(
        &self,
        email: &str,
        id: &str,
        grantee: &str,
    ) -> Result<Option<Invitation>, StoreError>;

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
    (format!("limit#{key_hash}#{start}"), end)
}
