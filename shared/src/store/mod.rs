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
}
