//! The health data a user uploads: readings, genotypes, and which kinds they hold.
//!
//! Owns the [`HealthStore`] trait (what both backends promise about readings and
//! genotypes) and the query and outcome types of those operations. Knows nothing of
//! how readings are parsed or shown; never logs a reading or a genotype.

use super::StoreFuture;
use crate::domain::{DataPresence, Reading};

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

/// Health readings, kept per user, and whether a user holds readings or a genome
/// (DynamoDB: the data table's `h#` and `presence` items; genomes are [`super::GenomeStore`]'s).
pub trait HealthStore: Send + Sync {
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

    /// Deletes every health reading and genotype of the user (the account stays).
    fn delete_user_data<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()>;
}
