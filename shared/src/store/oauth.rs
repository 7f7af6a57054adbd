//! The OAuth authorization server's storage: clients, single-use authorization
//! codes, and rotating refresh tokens with family revocation.
//!
//! Owns the [`OAuthStore`] trait. Codes and tokens arrive as hashes; single use and
//! rotation are conditional writes, never a read followed by a write.

use super::StoreError;
use crate::domain::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};
use async_trait::async_trait;

/// OAuth clients, codes and refresh tokens (DynamoDB: keys table `client#…`,
/// `code#…`, `refresh#…`, `family#…`).
#[async_trait]
pub trait OAuthStore: Send + Sync {
    /// Stores a new client; false (nothing written) if the id exists.
    async fn put_client(&self, client: &OAuthClient) -> Result<bool, StoreError>;

    /// The client, unless it lapsed at or before `now`.
    async fn client(&self, client_id: &str, now: u64) -> Result<Option<OAuthClient>, StoreError>;

    /// Moves a client's lapse time to `expires_at` (it was used); false if the client is
    /// gone. Never recreates a deleted client.
    async fn extend_client(&self, client_id: &str, expires_at: u64) -> Result<bool, StoreError>;

    async fn put_code(&self, code_hash: &str, code: &AuthCode) -> Result<(), StoreError>;

    /// Single use: deletes the code (conditionally) and returns it if it existed and
    /// was unexpired at `now`. A second take of the same code returns `None`.
    async fn take_code(&self, code_hash: &str, now: u64) -> Result<Option<AuthCode>, StoreError>;

    async fn put_refresh(&self, token_hash: &str, record: &RefreshRecord)
    -> Result<(), StoreError>;

    /// Marks the token used (conditionally, so two concurrent uses cannot both be
    /// `Fresh`) and reports what it found; a revoked family reads as `Reused`.
    /// Expiry wins over use: a token past `expires_at` is `Unknown`, used or not.
    async fn use_refresh(&self, token_hash: &str, now: u64) -> Result<RefreshUse, StoreError>;

    /// Revokes every token of the family until `expires_at` (reuse detection). A family
    /// already revoked until later stays revoked until then.
    async fn revoke_refresh_family(
        &self,
        family_id: &str,
        expires_at: u64,
    ) -> Result<(), StoreError>;
}
