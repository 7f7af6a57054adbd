//! Storage: a small domain-level `Store` trait and its two implementations,
//! DynamoDB (`dynamo`) and embedded SQLite (`embedded`), which one contract test
//! suite (`contract`) runs against unchanged.
//!
//! Owns the storage model of DESIGN ("Storage"): the data table keyed by user, with
//! kind-prefixed sort keys. Only this module talks to a database; it never sees an
//! HTTP type and never logs user data (health readings and genotypes are health data).

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::domain::{
    Account, AuthCode, DataPresence, Genotype, LoginState, McpAuth, McpServerRecord,
    McpServerWrite, McpToolSnapshot, OAuthClient, PersonalUrl, Reading, RefreshRecord, RefreshUse,
    UrlGrant,
};

#[cfg(test)]
mod contract;
mod dynamo;
mod embedded;
mod select;

pub use dynamo::{DynamoStore, DynamoTables};
pub use embedded::EmbeddedStore;
pub use select::{EMBEDDED_FILE, open_store};

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A failure of the storage backend. Messages name the operation, never user data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The backend could not be reached or answered with an error.
    Unavailable(String),
    /// Stored data could not be read back (a bug or a manual edit).
    Corrupt(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(f, "store unavailable: {why}"),
            StoreError::Corrupt(why) => write!(f, "stored data unreadable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Which readings to return.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadingQuery {
    /// Indicator keys (see [`Reading::indicator_key`]); `None` means all.
    pub indicator_keys: Option<Vec<String>>,
    /// Inclusive bounds on `time`, compared as text (`YYYY-MM-DD` or full timestamps).
    /// `to` also covers every time it is a prefix of, so `to = 2024-01-31` includes
    /// the whole of that day (plain text order would stop at its first second).
    pub from: Option<String>,
    pub to: Option<String>,
}

/// The upper end of every time range: above any text a time can hold.
pub(crate) const TIME_MAX: &str = "\u{10FFFF}";

impl ReadingQuery {
    /// The asked indicator keys normalised ([`Reading::indicator_key`]), sorted and
    /// without repeats; `None` means all.
    pub(crate) fn normalized_keys(&self) -> Option<Vec<String>> {
        self.indicator_keys.as_ref().map(|keys| {
            let mut keys: Vec<String> = keys.iter().map(|k| Reading::indicator_key(k)).collect();
            keys.sort();
            keys.dedup();
            keys
        })
    }

    /// The inclusive upper bound on `time` as text: `to` followed by [`TIME_MAX`], so it
    /// also covers every time `to` is a prefix of (no `to`: above every time).
    pub(crate) fn time_upper_bound(&self) -> String {
        format!("{}{TIME_MAX}", self.to.as_deref().unwrap_or(TIME_MAX))
    }
}

/// What a batch write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Rows written (new or replaced; a re-upload replaces in place).
    pub written: usize,
}

/// The outcome of creating an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// The e-mail already belongs to an account (nothing was written).
    EmailTaken,
}

/// How both backends keep a server record: the key (`name`), the `url` and the
/// connection fields are columns (attributes) of their own, so that uniqueness and
/// `record_mcp_connection` touch them alone; the rest is this JSON body.
#[derive(Serialize, Deserialize)]
pub(crate) struct McpServerBody {
    auth: McpAuth,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed_credential: Option<String>,
    enabled: bool,
    order: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowed_tools: Option<Vec<String>>,
    tools: Vec<McpToolSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_name: Option<String>,
    created_at: u64,
    updated_at: u64,
}

/// A record split the way the backends store it.
pub(crate) struct McpServerParts {
    pub name: String,
    pub url: String,
    pub body: McpServerBody,
    pub last_connected_at: Option<u64>,
    pub last_connect_error: Option<String>,
}

impl McpServerRecord {
    pub(crate) fn into_parts(self) -> McpServerParts {
        McpServerParts {
            name: self.name,
            url: self.url,
            body: McpServerBody {
                auth: self.auth,
                sealed_credential: self.sealed_credential,
                enabled: self.enabled,
                order: self.order,
                allowed_tools: self.allowed_tools,
                tools: self.tools,
                server_name: self.server_name,
                created_at: self.created_at,
                updated_at: self.updated_at,
            },
            last_connected_at: self.last_connected_at,
            last_connect_error: self.last_connect_error,
        }
    }

    pub(crate) fn from_parts(parts: McpServerParts) -> Self {
        let McpServerParts {
            name,
            url,
            body,
            last_connected_at,
            last_connect_error,
        } = parts;
        McpServerRecord {
            name,
            url,
            auth: body.auth,
            sealed_credential: body.sealed_credential,
            enabled: body.enabled,
            order: body.order,
            allowed_tools: body.allowed_tools,
            tools: body.tools,
            server_name: body.server_name,
            created_at: body.created_at,
            updated_at: body.updated_at,
            last_connected_at,
            last_connect_error,
        }
    }
}

pub trait Store: Send + Sync {
    /// Which kinds of data the user holds: at most one round trip (A5).
    fn data_presence<'a>(&'a self, user: &'a str) -> StoreFuture<'a, DataPresence>;

    /// Writes readings (any number; batched inside), replacing same-identity rows.
    fn put_readings<'a>(
        &'a self,
        user: &'a str,
        readings: &'a [Reading],
    ) -> StoreFuture<'a, WriteReport>;

    /// Readings matching the query, ordered by indicator key then time.
    fn readings<'a>(
        &'a self,
        user: &'a str,
        query: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>>;

    /// Writes genotypes (any number), replacing same-rsid rows.
    fn put_genotypes<'a>(
        &'a self,
        user: &'a str,
        genotypes: &'a [Genotype],
    ) -> StoreFuture<'a, WriteReport>;

    /// Genotypes for these rsids (lower-cased), in any order; unknown ones are absent.
    fn genotypes_by_rsid<'a>(
        &'a self,
        user: &'a str,
        rsids: &'a [String],
    ) -> StoreFuture<'a, Vec<Genotype>>;

    /// Genotypes on `chromosome` with `from <= position <= to`, ordered by position.
    fn genotypes_in_range<'a>(
        &'a self,
        user: &'a str,
        chromosome: &'a str,
        from: u64,
        to: u64,
    ) -> StoreFuture<'a, Vec<Genotype>>;

    /// Deletes every health reading and genotype of the user (the account stays).
    fn delete_user_data<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()>;

    // ----- Accounts (keys table `email#…`, data table `<user>/account`) -----

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

    // ----- Device-login states (keys table `state#<state>`) -----

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

    // ----- OAuth (keys table `client#…`, `code#…`, `refresh#…`, `family#…`) -----

    /// Stores a new client; false (nothing written) if the id exists.
    fn put_client<'a>(&'a self, client: &'a OAuthClient) -> StoreFuture<'a, bool>;

    fn client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, Option<OAuthClient>>;

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

    // ----- External MCP servers (data table `<user>/mcp#<name>`, `<user>/mcpurl#<hash>`) -----

    /// Every server of the user, ordered by name.
    fn mcp_servers<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Vec<McpServerRecord>>;

    /// [`Store::data_presence`] and [`Store::mcp_servers`] in one round trip: what every
    /// signed-in `tools/list` needs (A5 gating, D8).
    fn presence_and_mcp_servers<'a>(
        &'a self,
        user: &'a str,
    ) -> StoreFuture<'a, (DataPresence, Vec<McpServerRecord>)>;

    fn mcp_server<'a>(
        &'a self,
        user: &'a str,
        name: &'a str,
    ) -> StoreFuture<'a, Option<McpServerRecord>>;

    /// Creates the record and claims its url in one transaction: `Written`,
    /// `NameTaken` or `UrlTaken` (then nothing was written).
    fn create_mcp_server<'a>(
        &'a self,
        user: &'a str,
        record: &'a McpServerRecord,
    ) -> StoreFuture<'a, McpServerWrite>;

    /// Replaces the record of `record.name`, conditionally on it existing with the
    /// same url: `Written`, `Missing` or `UrlChanged`.
    fn replace_mcp_server<'a>(
        &'a self,
        user: &'a str,
        record: &'a McpServerRecord,
    ) -> StoreFuture<'a, McpServerWrite>;

    /// Records one connection (D8): success (`error` is `None`) sets
    /// `last_connected_at = at` and clears `last_connect_error`; failure sets
    /// `last_connect_error` and keeps `last_connected_at`. Touches nothing else, and
    /// writes nothing when the server no longer exists.
    fn record_mcp_connection<'a>(
        &'a self,
        user: &'a str,
        name: &'a str,
        at: u64,
        error: Option<&'a str>,
    ) -> StoreFuture<'a, ()>;

    /// Deletes the record and its url claim in one transaction; true if it existed.
    fn delete_mcp_server<'a>(&'a self, user: &'a str, name: &'a str) -> StoreFuture<'a, bool>;
}
