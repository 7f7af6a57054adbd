//! What grants access to a user's data besides their own sign-in: shares between
//! accounts and the invitations that become them, URL secrets (personal, temporary,
//! and a grantee's delegated URL on a share) and their grants.
//!
//! Owns the [`GrantStore`] trait. Stores secrets only as hashes or sealed text, as it
//! is given them; checks every expiry itself. A share ends with its delegated URL, in
//! one transaction.

use async_trait::async_trait;

use super::StoreError;
use crate::domain::{Invitation, PersonalUrl, UrlGrant};

#[async_trait]
/// Shares, invitations and URL grants (DynamoDB: data table `<owner>/share#…`,
/// `invite#…`; keys table `url#…`, `user-url#…`, `share-url#…`).
pub trait GrantStore: Send + Sync {
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

    // ----- Shares as invitations -----

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
}
