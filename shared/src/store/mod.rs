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

/// One health reading. Its identity is (indicator key, time, source): writing the
/// same reading twice keeps one row (re-uploads never duplicate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The indicator's name as uploaded ("Hemoglobin A1c").
    pub indicator: String,
    /// A number when the value is numeric, else the text as uploaded.
    pub value: ReadingValue,
    pub unit: Option<String>,
    /// Naive local time, `YYYY-MM-DDTHH:MM:SS` (sortable as text).
    pub time: String,
    /// e.g. `LOINC` and `4548-4`.
    pub code_system: Option<String>,
    pub code: Option<String>,
    /// Where it came from (a lab, a device, a file name); part of the identity.
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReadingValue {
    Number(f64),
    Text(String),
}

impl Reading {
    /// The indicator key: the name lower-cased with runs of non-alphanumerics as one
    /// space, so "HbA1c" and "hba1c " are one indicator.
    pub fn indicator_key(name: &str) -> String {
        let lowered = name.to_lowercase();
        lowered
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

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

/// One genotype call from a consumer raw file (23andMe, AncestryDNA).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Genotype {
    /// `rs…` or a vendor id (`i…`), lower-cased.
    pub rsid: String,
    /// `1`-`22`, `X`, `Y`, `MT`.
    pub chromosome: String,
    pub position: u64,
    /// e.g. `AG`, `--` for no call.
    pub genotype: String,
}

impl Genotype {
    /// Rsids as stored and looked up: lower-cased, sorted, without repeats.
    pub(crate) fn normalized_rsids(rsids: &[String]) -> Vec<String> {
        let mut rsids: Vec<String> = rsids.iter().map(|r| r.to_lowercase()).collect();
        rsids.sort();
        rsids.dedup();
        rsids
    }
}

/// What kinds of data a user has (availability gating, A5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataPresence {
    pub health: bool,
    pub genotype: bool,
}

/// What a batch write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Rows written (new or replaced; a re-upload replaces in place).
    pub written: usize,
}

/// An account (data table `<user>/account`; keys table `email#<e-mail>` → user id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub user_id: String,
    /// Lower-cased and trimmed by the caller.
    pub email: String,
    /// An Argon2id PHC string; never the password.
    pub password_hash: String,
    pub created_at: u64,
}

/// The outcome of creating an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// The e-mail already belongs to an account (nothing was written).
    EmailTaken,
}

/// What a URL secret grants (keys table `url#<sha256 of the secret>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlGrant {
    pub user_id: String,
    /// Temporary URLs (B3) carry a session id and an agent name.
    pub session_id: Option<String>,
    pub agent_name: Option<String>,
    /// Epoch seconds (the TTL attribute).
    pub expires_at: u64,
}

/// A user's personal URL (keys table `user-url#<user>`): the secret sealed for
/// re-issue (B1), and the hash that keys its `url#` grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalUrl {
    pub sealed_secret: String,
    pub secret_hash: String,
    pub expires_at: u64,
}

/// A device-style login (keys table `state#<state>`), polled by `/oauth2/check_state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginState {
    pub status: LoginStatus,
    pub expires_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LoginStatus {
    Pending,
    /// The browser step finished; the token is sealed at rest.
    Completed {
        sealed_token: String,
    },
}

/// A registered OAuth client (keys table `client#<client id>`).
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
}

/// An authorization code's grant (keys table `code#<sha256 of the code>`): single
/// use, ten minutes, bound to client, redirect URI, PKCE challenge and resource.
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
}

/// A refresh token's record (keys table `refresh#<sha256 of the token>`). Rotation:
/// each use marks it used and issues a new one in the same family; presenting a used
/// one again revokes the whole family (reuse detection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshRecord {
    pub user_id: String,
    pub client_id: String,
    pub scope: String,
    pub resource: Option<String>,
    pub family_id: String,
    pub expires_at: u64,
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

/// How a user's external MCP server is authenticated (D5). Only the kind and the
/// header name are stored in the clear; the token or header value is sealed
/// separately ([`McpServerRecord::sealed_credential`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "UPPERCASE")]
pub enum McpAuth {
    None,
    Bearer,
    Header { name: String },
}

/// One tool as the registration probe saw it (D6: description cut to 500 characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolSnapshot {
    pub name: String,
    pub description: Option<String>,
}

/// A user's external MCP server (data table `<user>/mcp#<name>`, plus
/// `<user>/mcpurl#<sha256 of the url>` so a url is registered once per account).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerRecord {
    /// The registry key and tool namespace; unique per account.
    pub name: String,
    /// The normalised https URL; unique per account and never changed (D6).
    pub url: String,
    pub auth: McpAuth,
    /// The bearer token or header value, AES-256-GCM sealed and bound to the account
    /// and the url; `None` for [`McpAuth::None`].
    pub sealed_credential: Option<String>,
    pub enabled: bool,
    /// Listing order among the user's servers (the seed's `order`).
    pub order: i64,
    /// `None`: every tool, including ones the server adds later (D7).
    pub allowed_tools: Option<Vec<String>>,
    /// The tools the last probe saw (at most 256).
    pub tools: Vec<McpToolSnapshot>,
    /// The server's self-reported `serverInfo.name`.
    pub server_name: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    /// Epoch seconds of the last successful connection (D8).
    pub last_connected_at: Option<u64>,
    /// Why the last connection failed; cleared by a successful one.
    pub last_connect_error: Option<String>,
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

/// The outcome of writing an external server's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpServerWrite {
    Written,
    /// Create: the account already has a server of that name (nothing written).
    NameTaken,
    /// Create: the account already registered that url (nothing written).
    UrlTaken,
    /// Replace: there is no server of that name (nothing written).
    Missing,
    /// Replace: the stored url differs from the record's (nothing written; D6).
    UrlChanged,
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
