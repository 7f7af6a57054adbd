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
}
