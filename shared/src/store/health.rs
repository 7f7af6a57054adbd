//! The health data a user uploads: readings, genotypes, and which kinds they hold.
//!
//! Owns the [`HealthStore`] trait (what both backends promise about readings and
//! genotypes) and the query and outcome types of those operations. Knows nothing of
//! how readings are parsed or shown; never logs a reading or a genotype.

use serde::{Deserialize, Serialize};

use super::StoreFuture;
use crate::domain::{DataPresence, Reading, ReadingValue};

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

    /// The user's indicators, one entry each, ordered by key: kept by `put_readings`, so
    /// reading it never reads readings.
    fn catalogue<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Vec<CatalogueEntry>>;

    /// One indicator's day or month rollups with `from <= period <= to` (`YYYY-MM-DD` or
    /// `YYYY-MM`, compared as text), ordered by period.
    fn rollups<'a>(
        &'a self,
        user: &'a str,
        indicator_key: &'a str,
        period: Period,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, Vec<Rollup>>;

    /// One indicator's newest `limit` readings in the window (bounds as in
    /// [`ReadingQuery`]), newest first (by time, then source, both descending).
    fn latest_readings<'a>(
        &'a self,
        user: &'a str,
        indicator_key: &'a str,
        limit: usize,
        window: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>>;

    /// Moves readings stored in an older layout into the current one (DynamoDB: the
    /// per-reading `h#` items of every user); idempotent and resumable. Returns how
    /// many readings were moved (0 when there is nothing to move).
    fn migrate_legacy_readings(&self) -> StoreFuture<'_, u64>;
}

/// The length of a rollup's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Month,
}

impl Period {
    /// The period a time falls in: its first 10 (day) or 7 (month) characters.
    pub(crate) fn of(self, time: &str) -> &str {
        let len = match self {
            Period::Day => 10,
            Period::Month => 7,
        };
        time.get(..len).unwrap_or(time)
    }
}

/// One catalogue entry: an indicator key and the rollup of all its readings.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueEntry {
    pub key: String,
    pub summary: Rollup,
}

/// One reading's place and value in a rollup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollupPoint {
    #[serde(rename = "t")]
    pub time: String,
    #[serde(rename = "s")]
    pub source: String,
    #[serde(rename = "v")]
    pub value: ReadingValue,
}

/// What the readings of one indicator in one period (a day, a month, or all of them
/// for the catalogue) add up to. Exact: rebuilt from the level below on every write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollup {
    /// `YYYY-MM-DD`, `YYYY-MM`, or empty for a catalogue entry.
    #[serde(rename = "p")]
    pub period: String,
    /// The display name of the first reading.
    #[serde(rename = "n")]
    pub name: String,
    /// The first code system and code present, in time order.
    #[serde(rename = "cs", default, skip_serializing_if = "Option::is_none")]
    pub code_system: Option<String>,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The unit when every reading has the same one (`unit_mixed` false).
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(rename = "um", default)]
    pub unit_mixed: bool,
    /// The source when every reading has the same one (`source_mixed` false).
    #[serde(rename = "src")]
    pub source: String,
    #[serde(rename = "sm", default)]
    pub source_mixed: bool,
    #[serde(rename = "k")]
    pub count: u64,
    /// Readings with a finite number; `sum`, `min` and `max` are over them.
    #[serde(rename = "nk")]
    pub numeric_count: u64,
    #[serde(rename = "sum")]
    pub sum: f64,
    #[serde(rename = "min")]
    pub min: f64,
    #[serde(rename = "max")]
    pub max: f64,
    /// The first and the last reading by (time, source).
    #[serde(rename = "f")]
    pub first: RollupPoint,
    #[serde(rename = "l")]
    pub last: RollupPoint,
}

/// A finite number, or none (a non-finite one counts as text, as both backends keep it).
fn finite(value: &ReadingValue) -> Option<f64> {
    match value {
        ReadingValue::Number(n) if n.is_finite() => Some(*n),
        _ => None,
    }
}

/// A sum kept finite (so it always serialises); absurd magnitudes saturate.
fn saturate(n: f64) -> f64 {
    if n.is_finite() {
        n
    } else {
        f64::MAX.copysign(n)
    }
}

fn point(r: &Reading) -> RollupPoint {
    let value = match &r.value {
        ReadingValue::Number(n) if !n.is_finite() => ReadingValue::Text(n.to_string()),
        v => v.clone(),
    };
    RollupPoint {
        time: r.time.clone(),
        source: r.source.clone(),
        value,
    }
}

impl Rollup {
    /// The rollup of `readings` (one indicator, any order) under `period`; `None` when empty.
    pub(crate) fn of(period: &str, readings: &[Reading]) -> Option<Rollup> {
        let mut sorted: Vec<&Reading> = readings.iter().collect();
        sorted.sort_by(|a, b| (&a.time, &a.source).cmp(&(&b.time, &b.source)));
        let (first, last) = (*sorted.first()?, *sorted.last()?);
        let mut rollup = Rollup {
            period: period.to_string(),
            name: first.indicator.clone(),
            code_system: sorted.iter().find_map(|r| r.code_system.clone()),
            code: sorted.iter().find_map(|r| r.code.clone()),
            unit: first.unit.clone(),
            unit_mixed: sorted.iter().any(|r| r.unit != first.unit),
            source: first.source.clone(),
            source_mixed: sorted.iter().any(|r| r.source != first.source),
            count: sorted.len() as u64,
            numeric_count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            first: point(first),
            last: point(last),
        };
        for n in sorted.iter().filter_map(|r| finite(&r.value)) {
            rollup.numeric_count += 1;
            rollup.sum = saturate(rollup.sum + n);
            rollup.min = rollup.min.min(n);
            rollup.max = rollup.max.max(n);
        }
        if rollup.numeric_count == 0 {
            (rollup.min, rollup.max) = (0.0, 0.0);
        }
        Some(rollup)
    }

    /// The rollup of several disjoint rollups under `period`; `None` when empty.
    pub(crate) fn merge<'r>(
        period: &str,
        parts: impl IntoIterator<Item = &'r Rollup>,
    ) -> Option<Rollup> {
        let mut parts: Vec<&Rollup> = parts.into_iter().collect();
        parts.sort_by(|a, b| {
            (&a.first.time, &a.first.source).cmp(&(&b.first.time, &b.first.source))
        });
        let head = *parts.first()?;
        let mut out = head.clone();
        out.period = period.to_string();
        for part in &parts[1..] {
            out.code_system = out.code_system.or_else(|| part.code_system.clone());
            out.code = out.code.or_else(|| part.code.clone());
            out.unit_mixed |= part.unit_mixed || part.unit != out.unit;
            out.source_mixed |= part.source_mixed || part.source != out.source;
            out.count += part.count;
            if part.numeric_count > 0 {
                if out.numeric_count == 0 {
                    (out.min, out.max) = (part.min, part.max);
                } else {
                    out.min = out.min.min(part.min);
                    out.max = out.max.max(part.max);
                }
                out.numeric_count += part.numeric_count;
                out.sum = saturate(out.sum + part.sum);
            }
            if (&part.last.time, &part.last.source) > (&out.last.time, &out.last.source) {
                out.last = part.last.clone();
            }
        }
        Some(out)
    }

    /// The unit to show when it is the same on every reading (`Some(None)`: no unit).
    pub(crate) fn common_unit(&self) -> Option<Option<&str>> {
        (!self.unit_mixed).then_some(self.unit.as_deref())
    }

    /// The source to show when it is the same on every reading.
    pub(crate) fn common_source(&self) -> Option<&str> {
        (!self.source_mixed).then_some(self.source.as_str())
    }
}
