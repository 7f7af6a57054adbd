//! The OAuth authorization server's records: registered clients, authorization codes
//! and refresh tokens, and what presenting a refresh token found.
//!
//! Plain records: secrets appear here only as hashes. Knows nothing of the endpoints
//! that issue and check them, or of how they are stored.

use serde::{Deserialize, Serialize};

/// A registered OAuth client, found by its client id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthClient {
    pub client_id: String,
    /// SHA-256 (hex) of the client secret; `None` for public clients.
    pub secret_hash: Option<String>,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    pub token_endpoint_auth_method: String,
    pub client_name: Option<String>,
    pub created_at: u64,
    /// When an unused registration lapses (epoch seconds; each use pushes it on). `None`
    /// for a client that never expires: one registered before expiry existed, or a
    /// metadata-document client, which is never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// An authorization code's grant, found by the SHA-256 of the code: single use, ten
/// minutes, bound to client, redirect URI, PKCE challenge and resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthCode {
    pub client_id: String,
    pub user_id: String,
    pub scope: String,
    pub redirect_uri: String,
    /// The S256 `code_challenge`.
    pub code_challenge: String,
    /// RFC 8707 `resource`, bound into the token audience.
    pub resource: Option<String>,
    pub expires_at: u64,
    /// The user's token epoch when the code was made: a code from
    /// an older epoch (the user signed out everywhere, changed or reset the password
    /// since) is refused at the exchange. 0 for codes stored before epochs existed.
    #[serde(default)]
    pub epoch: u64,
    /// When the code was made: a client whose grant the user withdrew at or after this
    /// time may not exchange it.
    #[serde(default)]
    pub issued_at: u64,
}

/// A refresh token's record, found by the SHA-256 of the token. Rotation: each use
/// marks it used and issues a new one in the same family; presenting a used one again
/// revokes the whole family (reuse detection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshRecord {
    pub user_id: String,
    pub client_id: String,
    pub scope: String,
    pub resource: Option<String>,
    pub family_id: String,
    pub expires_at: u64,
    /// The user's token epoch when the family began (a family from an older epoch is
    /// refused at its next use); 0 for families stored before epochs existed.
    pub epoch: u64,
    /// When the family began (the authorization code's exchange): a client whose grant
    /// the user withdrew at or after this time may not refresh it.
    pub issued_at: u64,
}

/// What presenting a refresh token found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshUse {
    /// First use, unexpired, family not revoked: now marked used.
    Fresh(RefreshRecord),
    /// Already used (or its family revoked): a replay. The caller revokes the family.
    Reused(RefreshRecord),
    /// Unknown or expired.
    Unknown,
}
