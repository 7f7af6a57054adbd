//! The health data a user uploads: readings, genotypes, and which kinds they hold.
//!
//! Owns the [`HealthStore`] trait (what both backends promise about readings and
//! genotypes) and the query and outcome types of those operations. Knows nothing of
//! how readings are parsed or shown; never logs a reading or a genotype.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::StoreError;
use crate::domain::measures::{self, Kind};
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

/// A numeric value and the local hour of day it was taken in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HourValue {
    pub hour: u8,
    pub value: f64,
}

impl HourValue {
    /// The reading's, when it is a finite number at a time with an hour.
    pub fn of(reading: &Reading) -> Option<HourValue> {
        let ReadingValue::Number(value) = reading.value else {
            return None;
        };
        let hour = reading.time.get(11..13)?.parse::<u8>().ok()?;
        (value.is_finite() && hour < 24).then_some(HourValue { hour, value })
    }
}

/// What a batch write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Distinct readings written (new or replaced; a re-upload replaces in place).
    pub written: usize,
    /// Of them: readings the store did not hold.
    pub new: usize,
    /// Readings the store already held with the same value and unit.
    pub unchanged: usize,
    /// Readings the store held with another value, now replaced by the one written.
    pub replaced: usize,
}

impl WriteReport {
    /// Counts one reading against what the store held for its identity.
    pub(crate) fn count(&mut self, before: Option<(&ReadingValue, Option<&str>)>, after: &Reading) {
        self.written += 1;
        match before {
            None => self.new += 1,
            Some((value, unit))
                if same_value(value, &after.value) && unit == after.unit.as_deref() =>
            {
                self.unchanged += 1
            }
            Some(_) => self.replaced += 1,
        }
    }

    pub(crate) fn add(&mut self, other: WriteReport) {
        self.written += other.written;
        self.new += other.new;
        self.unchanged += other.unchanged;
        self.replaced += other.replaced;
    }
}

/// Equal as stored: numbers by value (a non-finite one is kept as its text).
fn same_value(a: &ReadingValue, b: &ReadingValue) -> bool {
    let text = |v: &ReadingValue| match v {
        ReadingValue::Number(n) if !n.is_finite() => Some(n.to_string()),
        ReadingValue::Text(t) => Some(t.clone()),
        ReadingValue::Number(_) => None,
    };
    match (a, b) {
        (ReadingValue::Number(x), ReadingValue::Number(y)) if x.is_finite() && y.is_finite() => {
            x == y
        }
        _ => text(a) == text(b),
    }
}

/// Health readings, kept per user, and whether a user holds readings or a genome
/// (DynamoDB: the data table's `h#` and `presence` items; genomes are [`super::GenomeStore`]'s).
#[async_trait]
pub trait HealthStore: Send + Sync {
    /// Which kinds of data the user holds: at most one round trip (A5).
    async fn data_presence(&self, user: &str) -> Result<DataPresence, StoreError>;

    /// Writes readings (any number; batched inside), replacing same-identity rows.
    async fn put_readings(
        &self,
        user: &str,
        readings: &[Reading],
    ) -> Result<WriteReport, StoreError>;

    /// As [`HealthStore::put_readings`], for the import of upload `upload_id`: every
    /// write is conditioned, atomically, on that upload of the user still importing, so
    /// a deletion (which removes or ends the user's uploads first) leaves nothing of the
    /// import behind. [`StoreError::ImportStopped`] once it is not; what that call had
    /// not written yet stays unwritten.
    async fn put_import_readings(
        &self,
        user: &str,
        upload_id: &str,
        readings: &[Reading],
    ) -> Result<WriteReport, StoreError>;

    /// Readings matching the query, ordered by indicator key then time.
    async fn readings(&self, user: &str, query: &ReadingQuery) -> Result<Vec<Reading>, StoreError>;

    /// One indicator's numeric values in the window (bounds as in [`ReadingQuery`]), each
    /// with its local hour of day (0-23): what a median or an ambulatory profile needs,
    /// without the rest of each reading. By default from [`HealthStore::readings`].
    async fn hourly_values(
        &self,
        user: &str,
        indicator_key: &str,
        window: &ReadingQuery,
    ) -> Result<Vec<HourValue>, StoreError> {
        let query = ReadingQuery {
            indicator_keys: Some(vec![indicator_key.to_string()]),
            ..window.clone()
        };
        let readings = self.readings(user, &query).await?;
        Ok(readings.iter().filter_map(HourValue::of).collect())
    }

    /// Deletes every health reading and genotype of the user (the account stays).
    async fn delete_user_data(&self, user: &str) -> Result<(), StoreError>;

    /// The user's indicators, one entry each, ordered by key: kept by `put_readings`, so
    /// reading it never reads readings.
    async fn catalogue(&self, user: &str) -> Result<Vec<CatalogueEntry>, StoreError>;

    /// One indicator's day or month rollups with `from <= period <= to` (`YYYY-MM-DD` or
    /// `YYYY-MM`, compared as text), ordered by period.
    async fn rollups(
        &self,
        user: &str,
        indicator_key: &str,
        period: Period,
        from: &str,
        to: &str,
    ) -> Result<Vec<Rollup>, StoreError>;

    /// One indicator's newest `limit` readings in the window (bounds as in
    /// [`ReadingQuery`]), newest first (by time, then source, both descending).
    async fn latest_readings(
        &self,
        user: &str,
        indicator_key: &str,
        limit: usize,
        window: &ReadingQuery,
    ) -> Result<Vec<Reading>, StoreError>;

    /// Moves readings stored in an older layout into the current one (DynamoDB: the
    /// per-reading `h#` items of every user); idempotent and resumable. Returns how
    /// many readings were moved (0 when there is nothing to move).
    async fn migrate_legacy_readings(&self) -> Result<u64, StoreError>;

    /// Makes every stored reading canonical by the measures catalogue and rebuilds every
    /// rollup (the embedded store does it when it opens a file, schema step 7);
    /// idempotent and resumable. Returns how many readings changed.
    async fn migrate_measures(&self) -> Result<u64, StoreError>;
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

/// A day's total of a summed measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DayTotal {
    #[serde(rename = "p")]
    pub day: String,
    #[serde(rename = "v")]
    pub total: f64,
}

/// The glucose bands of the International Consensus on Time in Range (Battelino et al.,
/// Diabetes Care 2019), in mg/dL: below 54, 54 to under 70, 70 to 180, over 180 to 250,
/// over 250. Counts of readings.
pub type GlucoseBands = [u64; 5];

/// The band of a glucose value in mg/dL.
fn glucose_band(mg_dl: f64) -> usize {
    if mg_dl < 54.0 {
        0
    } else if mg_dl < 70.0 {
        1
    } else if mg_dl <= 180.0 {
        2
    } else if mg_dl <= 250.0 {
        3
    } else {
        4
    }
}

/// What the readings of one indicator in one period (a day, a month, or all of them
/// for the catalogue) add up to. Exact: rebuilt from the level below on every write.
///
/// For a summed measure (cumulative, sleep: [`Kind::is_summed`]) a day's `total` counts
/// what several sources saw once: a cumulative measure's readings are summed per source
/// and per hour of the local day, each hour counts the source that counted most in it,
/// and the day is the sum of its hours (so a walk the phone and the watch both counted
/// counts once, and a morning only the phone saw still counts); a night of sleep counts
/// the source that recorded the most. Months and the catalogue add their days' totals.
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
    /// The sum of the squares of the numbers (a standard deviation, a CV).
    #[serde(rename = "sq", default)]
    pub sum_squares: f64,
    /// Days with readings (1 for a day).
    #[serde(rename = "d", default)]
    pub days: u64,
    /// Summed measures: the total counted once across sources (see above); `None` for
    /// other measures, and on rollups an older build wrote (`migrate` rebuilds them).
    #[serde(rename = "tot", default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// The one source every counted hour (or night) came from; `None` when several did.
    #[serde(rename = "ts", default, skip_serializing_if = "Option::is_none")]
    pub total_source: Option<String>,
    /// Summed measures: the day with the largest total, and the latest day.
    #[serde(rename = "dmax", default, skip_serializing_if = "Option::is_none")]
    pub max_day: Option<DayTotal>,
    #[serde(rename = "dlast", default, skip_serializing_if = "Option::is_none")]
    pub last_day: Option<DayTotal>,
    /// Glucose in mg/dL: readings per consensus band ([`GlucoseBands`]).
    #[serde(rename = "gb", default, skip_serializing_if = "Option::is_none")]
    pub glucose_bands: Option<GlucoseBands>,
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

/// Is this series glucose in mg/dL (the catalogue's canonical unit), so its bands count?
fn is_glucose_mg_dl(key: &str, unit: Option<&str>) -> bool {
    key == GLUCOSE_KEY && unit == Some("mg/dL")
}

/// The catalogue's glucose series key.
const GLUCOSE_KEY: &str = "glucose";

/// A summed measure's day total counted once across sources, and the one source it came
/// from (`None`: several). `by_hour`: cumulative measures compare sources hour by hour;
/// sleep compares whole nights.
fn day_total(readings: &[&Reading], by_hour: bool) -> Option<(f64, Option<String>)> {
    let mut cells: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for r in readings {
        let Some(n) = finite(&r.value) else { continue };
        let hour = if by_hour {
            r.time.get(11..13).unwrap_or("")
        } else {
            ""
        };
        let cell = cells.entry((hour, r.source.as_str())).or_insert(0.0);
        *cell = saturate(*cell + n);
    }
    let mut best: BTreeMap<&str, (&str, f64)> = BTreeMap::new();
    for ((hour, source), sum) in cells {
        let slot = best.entry(hour).or_insert((source, sum));
        if sum > slot.1 {
            *slot = (source, sum);
        }
    }
    if best.is_empty() {
        return None;
    }
    let total = best.values().fold(0.0, |acc, (_, n)| saturate(acc + n));
    let first = best.values().next().map(|(s, _)| *s);
    let single = best.values().all(|(s, _)| Some(*s) == first);
    Some((total, first.filter(|_| single).map(String::from)))
}

impl Rollup {
    /// The rollup of `readings` (one indicator, any order) under `period`; `None` when empty.
    pub(crate) fn of(period: &str, readings: &[Reading]) -> Option<Rollup> {
        Rollup::of_refs(period, readings.iter().collect())
    }

    /// [`Rollup::of`] of borrowed readings (an import's chunk, without copies).
    pub(crate) fn of_refs(period: &str, mut sorted: Vec<&Reading>) -> Option<Rollup> {
        sorted.sort_by(|a, b| (&a.time, &a.source).cmp(&(&b.time, &b.source)));
        let (first, last) = (*sorted.first()?, *sorted.last()?);
        let key = Reading::indicator_key(&first.indicator);
        let kind = measures::catalogue().kind_of_key(&key);
        let unit_mixed = sorted.iter().any(|r| r.unit != first.unit);
        let mut rollup = Rollup {
            period: period.to_string(),
            name: first.indicator.clone(),
            code_system: sorted.iter().find_map(|r| r.code_system.clone()),
            code: sorted.iter().find_map(|r| r.code.clone()),
            unit: first.unit.clone(),
            unit_mixed,
            source: first.source.clone(),
            source_mixed: sorted.iter().any(|r| r.source != first.source),
            count: sorted.len() as u64,
            numeric_count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            sum_squares: 0.0,
            days: 1,
            total: None,
            total_source: None,
            max_day: None,
            last_day: None,
            glucose_bands: (!unit_mixed && is_glucose_mg_dl(&key, first.unit.as_deref()))
                .then_some([0; 5]),
            first: point(first),
            last: point(last),
        };
        for n in sorted.iter().filter_map(|r| finite(&r.value)) {
            rollup.numeric_count += 1;
            rollup.sum = saturate(rollup.sum + n);
            rollup.sum_squares = saturate(rollup.sum_squares + n * n);
            rollup.min = rollup.min.min(n);
            rollup.max = rollup.max.max(n);
            if let Some(bands) = &mut rollup.glucose_bands {
                bands[glucose_band(n)] += 1;
            }
        }
        if rollup.numeric_count == 0 {
            (rollup.min, rollup.max) = (0.0, 0.0);
        }
        if kind.is_summed()
            && !unit_mixed
            && let Some((total, source)) = day_total(&sorted, kind == Kind::Cumulative)
        {
            rollup.total = Some(total);
            rollup.total_source = source;
            let day = DayTotal {
                day: Period::Day.of(period).to_string(),
                total,
            };
            rollup.max_day = Some(day.clone());
            rollup.last_day = Some(day);
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
            out.days += part.days;
            if part.numeric_count > 0 {
                if out.numeric_count == 0 {
                    (out.min, out.max) = (part.min, part.max);
                } else {
                    out.min = out.min.min(part.min);
                    out.max = out.max.max(part.max);
                }
                out.numeric_count += part.numeric_count;
                out.sum = saturate(out.sum + part.sum);
                out.sum_squares = saturate(out.sum_squares + part.sum_squares);
            }
            out.total = match (out.total, part.total) {
                (Some(a), Some(b)) => Some(saturate(a + b)),
                (a, b) => a.or(b),
            };
            if out.total_source != part.total_source {
                out.total_source = None;
            }
            if part.max_day.as_ref().map(|d| d.total) > out.max_day.as_ref().map(|d| d.total) {
                out.max_day = part.max_day.clone();
            }
            if part.last_day.as_ref().map(|d| &d.day) > out.last_day.as_ref().map(|d| &d.day) {
                out.last_day = part.last_day.clone();
            }
            out.glucose_bands = match (out.glucose_bands, part.glucose_bands) {
                (Some(a), Some(b)) => Some(std::array::from_fn(|i| a[i] + b[i])),
                // A part in another unit (or written by an older build): no bands.
                _ => None,
            };
            if (&part.last.time, &part.last.source) > (&out.last.time, &out.last.source) {
                out.last = part.last.clone();
            }
        }
        if out.unit_mixed {
            out.glucose_bands = None;
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

    /// The mean of the numbers, when there are any.
    pub(crate) fn mean(&self) -> Option<f64> {
        (self.numeric_count > 0).then(|| self.sum / self.numeric_count as f64)
    }

    /// The population standard deviation of the numbers, when there are two or more.
    pub(crate) fn standard_deviation(&self) -> Option<f64> {
        let n = self.numeric_count as f64;
        let mean = self.mean()?;
        (self.numeric_count > 1).then(|| (self.sum_squares / n - mean * mean).max(0.0).sqrt())
    }
}
