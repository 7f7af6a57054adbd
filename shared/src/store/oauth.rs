//! The OAuth authorization server's storage: clients, single-use authorization
//! codes, and rotating refresh tokens with family revocation.
//!
//! Owns the [`OAuthStore`] trait. Codes and tokens arrive as hashes; single use and
//! rotation are conditional writes, never a read followed by a write.

use super::StoreFuture;
use crate::domain::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};

/// OAuth clients, codes and refresh tokens (DynamoDB: keys table `client#…`,
/// `code#…`, `refresh#…`, `family#…`).
pub trait OAuthStore: Send + Sync {
    /// Stores a new client; false (nothing written) if the id exists.
    fn put_client<'a>(&'a self, client: &'a OAuthClient) -> StoreFuture<'a, bool>;

    /// The client, unless it lapsed at or before `now`.
    fn client<'a>(&'a self, client_id: &'a str, now: u64) -> StoreFuture<'a, Option<OAuthClient>>;

    /// Moves a client's lapse time to `expires_at` (it was used); false if the client is
    /// gone. Never recreates a deleted client.
    fn extend_client<'a>(&'a self, client_id: &'a str, expires_at: u64) -> StoreFuture<'a, bool>;

    fn put_code<'a>(&'a self, code_hash: &'a str, code: &'a AuthCode) -> StoreFuture<'a, ()>;

    /// Single use: deletes the code (conditionally) and returns it if it existed and
    /// was unexpired at `now`. A second take of the same code returns `None`.
    fn take_code<'a>(&'a self, code_hash: &'a str, now: u64) -> StoreFuture<'a, Option<AuthCode>>;

    fn put_refresh<'a>(
        &'a self,
        token_hash: &'a str,
        record: &'a RefreshRecord,
    ) -> StoreFuture<'a, ()>;

    /// Marks the token used (conditionally, so two concurrent uses cannot both be
    /// `Fresh`) and reports what it found; a revoked family reads as `Reused`.
    /// Expiry wins over use: a token past `expires_at` is `Unknown`, used or not.
    fn use_refresh<'a>(&'a self, token_hash: &'a str, now: u64) -> StoreFuture<'a, RefreshUse>;

    /// Revokes every token of the family until `expires_at` (reuse detection). A family
    /// already revoked until later stays revoked until then.
    fn revoke_refresh_family<'a>(
        &'a self,
        family_id: &'a str,
        expires_at: u64,
    ) -> StoreFuture<'a, ()>;
}
