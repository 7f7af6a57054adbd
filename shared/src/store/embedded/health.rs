//! [`HealthStore`] on SQLite: the `readings` table, and presence as two `EXISTS`
//! probes in one statement (readings; the `genomes` pointer).
//!
//! Never logs a reading or a genotype.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::{EmbeddedStore, json_column, json_from_column};
use crate::domain::measures;
use crate::domain::{DataPresence, Reading, ReadingValue};
use crate::store::health::TIME_MAX;
use crate::store::{
    CatalogueEntry, HealthStore, HourValue, Period, ReadingQuery, Rollup, StoreError, WriteReport,
};
use std::sync::PoisonError;

const DAY: &str = "d";
const MONTH: &str = "m";

/// The readings of one day of one indicator, for its rollup: what this write holds of
/// it when the store held nothing of that day before (`Some`), or read back (`None`).
type DayReadings<'r> = Option<Vec<&'r Reading>>;

/// Rebuilds one indicator's rollups of `days` (from the readings given, or else read
/// back), then the months those days fall in from their days, then its catalogue entry
/// from its months (inside the caller's transaction).
fn refresh_rollups(
    tx: &Connection,
    user: &str,
    key: &str,
    days: BTreeMap<&str, DayReadings<'_>>,
) -> rusqlite::Result<()> {
    let mut select_day = tx.prepare_cached(&format!(
        "SELECT {READING_COLUMNS} FROM readings \
         WHERE user = ?1 AND indicator_key = ?2 AND time >= ?3 AND time <= ?4"
    ))?;
    let mut months = BTreeSet::new();
    for (day, given) in days {
        let rollup = match given {
            Some(given) => Rollup::of_refs(day, given),
            None => {
                let rows = select_day
                    .query_map(
                        params![user, key, day, format!("{day}{TIME_MAX}")],
                        reading_from_row,
                    )?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let rows: Vec<&Reading> = rows
                    .iter()
                    .filter(|r| Period::Day.of(&r.time) == day)
                    .collect();
                Rollup::of_refs(day, rows)
            }
        };
        put_rollup(tx, user, key, DAY, day, rollup.as_ref())?;
        months.insert(Period::Month.of(day).to_string());
    }
    for month in &months {
        let parts = rollups_between(tx, user, key, DAY, month, &format!("{month}{TIME_MAX}"))?;
        let parts = parts
            .iter()
            .filter(|r| Period::Month.of(&r.period) == month);
        put_rollup(
            tx,
            user,
            key,
            MONTH,
            month,
            Rollup::merge(month, parts).as_ref(),
        )?;
    }
    let all = rollups_between(tx, user, key, MONTH, "", TIME_MAX)?;
    match Rollup::merge("", &all) {
        Some(summary) => tx
            .prepare_cached(
                "INSERT INTO reading_catalogue (user, indicator_key, summary) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (user, indicator_key) DO UPDATE SET summary = excluded.summary",
            )?
            .execute(params![user, key, json_column(&summary)?])?,
        None => tx
            .prepare_cached("DELETE FROM reading_catalogue WHERE user = ?1 AND indicator_key = ?2")?
            .execute(params![user, key])?,
    };
    Ok(())
}

fn put_rollup(
    tx: &Connection,
    user: &str,
    key: &str,
    kind: &str,
    period: &str,
    rollup: Option<&Rollup>,
) -> rusqlite::Result<()> {
    match rollup {
        Some(rollup) => tx
            .prepare_cached(
                "INSERT INTO reading_rollups (user, indicator_key, kind, period, summary) \
                 VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (user, indicator_key, kind, period) DO UPDATE SET summary = excluded.summary",
            )?
            .execute(params![user, key, kind, period, json_column(rollup)?])?,
        None => tx
            .prepare_cached(
                "DELETE FROM reading_rollups \
                 WHERE user = ?1 AND indicator_key = ?2 AND kind = ?3 AND period = ?4",
            )?
            .execute(params![user, key, kind, period])?,
    };
    Ok(())
}

fn rollups_between(
    conn: &Connection,
    user: &str,
    key: &str,
    kind: &str,
    from: &str,
    to: &str,
) -> rusqlite::Result<Vec<Rollup>> {
    conn.prepare_cached(
        "SELECT summary FROM reading_rollups \
         WHERE user = ?1 AND indicator_key = ?2 AND kind = ?3 AND period >= ?4 AND period <= ?5 \
         ORDER BY period",
    )?
    .query_map(params![user, key, kind, from, to], |row| {
        json_from_column(row, 0)
    })?
    .collect()
}

/// Schema step 7: every stored reading made canonical by the measures
/// catalogue (its measure's name and key, the canonical unit, what was sent kept as its
/// original). A reading the catalogue refuses (a text value of a numeric measure, a unit
/// it does not take) stays as it was. When the canonical reading's identity is already
/// taken (`Weight` and `Body weight` at the same time from the same source), the reading
/// stored under the canonical name wins. Returns how many readings changed.
pub(super) fn canonicalize_readings(tx: &Connection) -> rusqlite::Result<u64> {
    let mut stored: Vec<(String, String, Reading)> = Vec::new();
    {
        let mut stmt = tx.prepare(&format!(
            "SELECT user, indicator_key, {READING_COLUMNS} FROM readings"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let reading = reading_at(row, 2)?;
            stored.push((row.get(0)?, row.get(1)?, reading));
        }
    }
    let (mut changed, mut refused) = (0u64, 0u64);
    for (user, key, reading) in stored {
        let Ok(canonical) = measures::catalogue().canonical(reading.clone()) else {
            refused += 1;
            continue;
        };
        if canonical == reading {
            continue;
        }
        tx.prepare_cached(
            "DELETE FROM readings WHERE user = ?1 AND indicator_key = ?2 AND time = ?3 AND source = ?4",
        )?
        .execute(params![user, key, reading.time, reading.source])?;
        let (number, text) = value_columns(&canonical.value);
        tx.prepare_cached(
            "INSERT INTO readings (user, indicator_key, time, source, indicator, value_number, \
                                   value_text, unit, code_system, code, utc_offset, original) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT (user, indicator_key, time, source) DO NOTHING",
        )?
        .execute(params![
            user,
            Reading::indicator_key(&canonical.indicator),
            canonical.time,
            canonical.source,
            canonical.indicator,
            number,
            text,
            canonical.unit,
            canonical.code_system,
            canonical.code,
            canonical.offset,
            canonical.original.as_ref().map(json_column).transpose()?
        ])?;
        changed += 1;
    }
    if changed + refused > 0 {
        // Counts only: never a value or a user.
        tracing::info!(changed, refused, "embedded store: readings made canonical");
    }
    Ok(changed)
}

/// Every rollup and catalogue entry rebuilt from the readings stored (schema steps 4, 7).
pub(super) fn rebuild_rollups(tx: &Connection) -> rusqlite::Result<()> {
    tx.execute_batch("DELETE FROM reading_rollups; DELETE FROM reading_catalogue;")?;
    let mut days: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    {
        let mut stmt = tx.prepare("SELECT DISTINCT user, indicator_key, time FROM readings")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let time: String = row.get(2)?;
            days.entry((row.get(0)?, row.get(1)?))
                .or_default()
                .insert(Period::Day.of(&time).to_string());
        }
    }
    for ((user, key), days) in &days {
        let days = days.iter().map(|day| (day.as_str(), None)).collect();
        refresh_rollups(tx, user, key, days)?;
    }
    Ok(())
}

pub(super) fn presence_of(conn: &Connection, user: &str) -> rusqlite::Result<DataPresence> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM readings WHERE user = ?1), \
                EXISTS (SELECT 1 FROM genomes WHERE user = ?1)",
    )?
    .query_row([user], |row| {
        Ok(DataPresence {
            health: row.get(0)?,
            genotype: row.get(1)?,
        })
    })
}

/// Writes readings in one transaction: replaces same-identity rows and refreshes the
/// rollups of every day touched. With `guard`, only while that upload of the user is
/// still importing, checked inside the transaction (a deletion removes or ends the upload
/// first, so nothing of an import lands after it): `None` when it is not.
fn write_readings(
    conn: &mut Connection,
    user: &str,
    readings: &[Reading],
    guard: Option<&str>,
) -> rusqlite::Result<Option<WriteReport>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(upload) = guard
        && !super::uploads::still_importing(&tx, user, upload)?
    {
        return Ok(None);
    }
    let mut report = WriteReport::default();
    // Each reading's measure key, worked out once per measure of the chunk.
    let mut key_of: HashMap<&str, String, _> = HashMap::with_hasher(crate::hashing::keyed());
    for r in readings {
        if !key_of.contains_key(r.indicator.as_str()) {
            key_of.insert(&r.indicator, Reading::indicator_key(&r.indicator));
        }
    }
    let keys: Vec<&str> = readings
        .iter()
        .map(|r| key_of.get(r.indicator.as_str()).map_or("", String::as_str))
        .collect();
    let held = days_held(&tx, user, readings, &keys)?;
    let held_on = |key: &str, time: &str| {
        held.get(key)
            .is_some_and(|days| days.contains(Period::Day.of(time)))
    };
    // Identity → the last reading written under it (a later one replaces an earlier).
    let mut last: HashMap<(&str, &str, &str), &Reading, _> =
        HashMap::with_capacity_and_hasher(readings.len(), crate::hashing::keyed());
    {
        let mut before = tx.prepare_cached(
            "SELECT value_number, value_text, unit FROM readings \
             WHERE user = ?1 AND indicator_key = ?2 AND time = ?3 AND source = ?4",
        )?;
        // What the store held is read before anything of the chunk is written: a
        // reading is looked up only at its identity's first row in the chunk, which no
        // earlier row of the chunk wrote.
        for (r, key) in readings.iter().zip(&keys) {
            match last.entry((*key, r.time.as_str(), r.source.as_str())) {
                Entry::Occupied(mut slot) => {
                    slot.insert(r);
                }
                Entry::Vacant(slot) => {
                    // What the store held: looked up only on a day of a measure of which
                    // it holds a reading; any other reading is new.
                    let prior: Option<(ReadingValue, Option<String>)> = if held_on(key, &r.time) {
                        before
                            .query_row(params![user, key, r.time, r.source], |row| {
                                let value = match row.get::<_, Option<f64>>(0)? {
                                    Some(n) => ReadingValue::Number(n),
                                    None => ReadingValue::Text(row.get(1)?),
                                };
                                Ok((value, row.get(2)?))
                            })
                            .optional()?
                    } else {
                        None
                    };
                    report.count(prior.as_ref().map(|(v, u)| (v, u.as_deref())), r);
                    slot.insert(r);
                }
            }
        }
    }
    insert_readings(&tx, user, readings, &keys)?;
    // Per measure and day: the readings now stored, when the store held none of that
    // day before (the usual import of new data), else read back.
    let mut days: BTreeMap<&str, BTreeMap<&str, DayReadings<'_>>> = BTreeMap::new();
    for (&(key, time, _), &reading) in &last {
        let day = Period::Day.of(time);
        let slot = days
            .entry(key)
            .or_default()
            .entry(day)
            .or_insert_with(|| (!held_on(key, time)).then(Vec::new));
        if let Some(given) = slot {
            given.push(reading);
        }
    }
    for (key, days) in days {
        refresh_rollups(&tx, user, key, days)?;
    }
    tx.commit()?;
    Ok(Some(report))
}

/// Rows per `INSERT` of many rows (12 values each, far below SQLite's bound of 32,766
/// values a statement): one statement per [`INSERT_BATCH`] rows costs a fraction of one a row.
const INSERT_BATCH: usize = 32;

/// The upsert of `rows` readings in one statement; a later row of the same identity
/// replaces an earlier one, as separate statements would.
fn insert_sql(rows: usize) -> String {
    let values = (0..rows)
        .map(|row| {
            let marks: Vec<String> = (1..=12).map(|c| format!("?{}", row * 12 + c)).collect();
            format!("({})", marks.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO readings (user, indicator_key, time, source, indicator, value_number, \
                               value_text, unit, code_system, code, utc_offset, original) \
         VALUES {values} \
         ON CONFLICT (user, indicator_key, time, source) DO UPDATE SET \
           indicator = excluded.indicator, value_number = excluded.value_number, \
           value_text = excluded.value_text, unit = excluded.unit, \
           code_system = excluded.code_system, code = excluded.code, \
           utc_offset = excluded.utc_offset, original = excluded.original"
    )
}

/// Writes `readings` (each with its measure key) in order, [`INSERT_BATCH`] to a statement.
fn insert_readings(
    tx: &Connection,
    user: &str,
    readings: &[Reading],
    keys: &[&str],
) -> rusqlite::Result<()> {
    let mut batch = tx.prepare_cached(&insert_sql(INSERT_BATCH))?;
    let mut single = tx.prepare_cached(&insert_sql(1))?;
    let mut rows = readings.chunks_exact(INSERT_BATCH);
    let mut at = 0;
    for chunk in rows.by_ref() {
        for (i, r) in chunk.iter().enumerate() {
            bind_reading(&mut batch, i * 12, user, keys[at + i], r)?;
        }
        batch.raw_execute()?;
        at += INSERT_BATCH;
    }
    for (i, r) in rows.remainder().iter().enumerate() {
        bind_reading(&mut single, 0, user, keys[at + i], r)?;
        single.raw_execute()?;
    }
    Ok(())
}

/// Binds one reading's 12 values after the first `from` parameters.
fn bind_reading(
    stmt: &mut rusqlite::Statement<'_>,
    from: usize,
    user: &str,
    key: &str,
    r: &Reading,
) -> rusqlite::Result<()> {
    let (number, text) = value_columns(&r.value);
    let original = r.original.as_ref().map(json_column).transpose()?;
    stmt.raw_bind_parameter(from + 1, user)?;
    stmt.raw_bind_parameter(from + 2, key)?;
    stmt.raw_bind_parameter(from + 3, &r.time)?;
    stmt.raw_bind_parameter(from + 4, &r.source)?;
    stmt.raw_bind_parameter(from + 5, &r.indicator)?;
    stmt.raw_bind_parameter(from + 6, number)?;
    stmt.raw_bind_parameter(from + 7, text)?;
    stmt.raw_bind_parameter(from + 8, &r.unit)?;
    stmt.raw_bind_parameter(from + 9, &r.code_system)?;
    stmt.raw_bind_parameter(from + 10, &r.code)?;
    stmt.raw_bind_parameter(from + 11, &r.offset)?;
    stmt.raw_bind_parameter(from + 12, original)
}

/// Per measure of `readings`, the days of their span on which the store holds a reading
/// of it: only those need a look-up per reading to be counted, and their rollups read
/// back (an import of new data, the usual case, makes one query a measure per chunk
/// instead of one a row).
fn days_held(
    tx: &Connection,
    user: &str,
    readings: &[Reading],
    keys: &[&str],
) -> rusqlite::Result<HashMap<String, BTreeSet<String>>> {
    let mut spans: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for (r, key) in readings.iter().zip(keys) {
        let day = Period::Day.of(&r.time);
        let span = spans.entry(*key).or_insert((day, day));
        span.0 = span.0.min(day);
        span.1 = span.1.max(day);
    }
    let mut held_days = tx.prepare_cached(
        "SELECT DISTINCT substr(time, 1, 10) FROM readings \
         WHERE user = ?1 AND indicator_key = ?2 AND time >= ?3 AND time <= ?4",
    )?;
    let mut held = HashMap::new();
    for (key, (first, last)) in spans {
        let days = held_days
            .query_map(
                params![user, key, first, format!("{last}{TIME_MAX}")],
                |row| row.get::<_, String>(0),
            )?
            .collect::<rusqlite::Result<BTreeSet<String>>>()?;
        if !days.is_empty() {
            held.insert(key.to_string(), days);
        }
    }
    Ok(held)
}

const READING_COLUMNS: &str = "indicator, value_number, value_text, unit, time, code_system, code, source, utc_offset, original";

/// The value as stored: a finite number, or text. Non-finite numbers (which neither
/// backend can store as a number) are kept as their text form.
fn value_columns(value: &ReadingValue) -> (Option<f64>, Option<String>) {
    match value {
        ReadingValue::Number(n) if n.is_finite() => (Some(*n), None),
        ReadingValue::Number(n) => (None, Some(n.to_string())),
        ReadingValue::Text(t) => (None, Some(t.clone())),
    }
}

fn reading_from_row(row: &Row<'_>) -> rusqlite::Result<Reading> {
    reading_at(row, 0)
}

/// The reading whose [`READING_COLUMNS`] start at column `at`.
fn reading_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Reading> {
    let number: Option<f64> = row.get(at + 1)?;
    let text: Option<String> = row.get(at + 2)?;
    let value = match (number, text) {
        (Some(n), None) => ReadingValue::Number(n),
        (None, Some(t)) => ReadingValue::Text(t),
        _ => {
            return Err(rusqlite::Error::InvalidColumnType(
                at + 1,
                "value".into(),
                rusqlite::types::Type::Null,
            ));
        }
    };
    let original = row
        .get::<_, Option<String>>(at + 9)?
        .map(|text| serde_json::from_str(&text))
        .transpose()
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                at + 9,
                rusqlite::types::Type::Text,
                Box::new(e),
            )
        })?;
    Ok(Reading {
        indicator: row.get(at)?,
        value,
        unit: row.get(at + 3)?,
        time: row.get(at + 4)?,
        code_system: row.get(at + 5)?,
        code: row.get(at + 6)?,
        source: row.get(at + 7)?,
        offset: row.get(at + 8)?,
        original,
    })
}

/// At most this many users' catalogues are kept decoded (more, and all are dropped).
const CACHED_CATALOGUES: usize = 64;

/// Users' catalogues as decoded: `query_health_indicators` reads the whole
/// catalogue on every call, and decoding each entry's JSON was a seventh of its cost.
/// Kept only while nothing at all was written to the database since they were read: the
/// stamp is `PRAGMA data_version` (it moves when another connection, in this process or
/// another, commits) and this connection's `total_changes` (it moves when this one writes:
/// an import, an upload, a deletion). Any write drops every entry, so none can be stale.
#[derive(Default)]
pub(super) struct CatalogueCache {
    stamp: Option<(i64, u64)>,
    by_user: HashMap<String, Vec<CatalogueEntry>>,
}

impl CatalogueCache {
    /// `user`'s catalogue, if read at this stamp; a new stamp empties the cache.
    fn get(&mut self, stamp: (i64, u64), user: &str) -> Option<Vec<CatalogueEntry>> {
        if self.stamp != Some(stamp) {
            self.by_user.clear();
            self.stamp = Some(stamp);
            return None;
        }
        self.by_user.get(user).cloned()
    }

    fn put(&mut self, stamp: (i64, u64), user: String, entries: &[CatalogueEntry]) {
        if self.stamp != Some(stamp) {
            return;
        }
        if self.by_user.len() >= CACHED_CATALOGUES {
            self.by_user.clear();
        }
        self.by_user.insert(user, entries.to_vec());
    }
}

#[async_trait]
impl HealthStore for EmbeddedStore {
    async fn data_presence(&self, user: &str) -> Result<DataPresence, StoreError> {
        let user = user.to_string();
        self.read("data_presence", move |conn| presence_of(conn, &user))
            .await
    }

    async fn put_readings(
        &self,
        user: &str,
        readings: &[Reading],
    ) -> Result<WriteReport, StoreError> {
        let user = user.to_string();
        let readings = readings.to_vec();
        {
            self.run("put_readings", move |conn| {
                write_readings(conn, &user, &readings, None)
            })
            .await?
            .ok_or_else(|| StoreError::Corrupt("put_readings: unguarded write stopped".into()))
        }
    }

    async fn put_import_readings(
        &self,
        user: &str,
        upload_id: &str,
        readings: &[Reading],
    ) -> Result<WriteReport, StoreError> {
        let (user, upload_id) = (user.to_string(), upload_id.to_string());
        let readings = readings.to_vec();
        {
            self.run("put_import_readings", move |conn| {
                write_readings(conn, &user, &readings, Some(&upload_id))
            })
            .await?
            .ok_or(StoreError::ImportStopped)
        }
    }

    async fn readings(&self, user: &str, query: &ReadingQuery) -> Result<Vec<Reading>, StoreError> {
        let user = user.to_string();
        let from = query.from.clone().unwrap_or_default();
        let to = query.time_upper_bound();
        let keys = query.normalized_keys();
        self.run("readings", move |conn| {
            let mut out = Vec::new();
            match keys {
                None => {
                    let mut stmt = conn.prepare_cached(&format!(
                        "SELECT {READING_COLUMNS} FROM readings \
                         WHERE user = ?1 AND time >= ?2 AND time <= ?3 \
                         ORDER BY indicator_key, time, source"
                    ))?;
                    for row in stmt.query_map(params![user, from, to], reading_from_row)? {
                        out.push(row?);
                    }
                }
                Some(keys) => {
                    // Keys are sorted, so concatenating per-key results keeps the order.
                    let mut stmt = conn.prepare_cached(&format!(
                        "SELECT {READING_COLUMNS} FROM readings \
                         WHERE user = ?1 AND indicator_key = ?2 AND time >= ?3 AND time <= ?4 \
                         ORDER BY time, source"
                    ))?;
                    for key in &keys {
                        for row in stmt.query_map(params![user, key, from, to], reading_from_row)? {
                            out.push(row?);
                        }
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    async fn hourly_values(
        &self,
        user: &str,
        indicator_key: &str,
        window: &ReadingQuery,
    ) -> Result<Vec<HourValue>, StoreError> {
        let user = user.to_string();
        let key = Reading::indicator_key(indicator_key);
        let from = window.from.clone().unwrap_or_default();
        let to = window.time_upper_bound();
        self.run("hourly_values", move |conn| {
            // Two columns, no strings: the primary key's range, as `readings` reads it.
            let mut stmt = conn.prepare_cached(
                "SELECT CAST(substr(time, 12, 2) AS INTEGER), value_number FROM readings \
                 WHERE user = ?1 AND indicator_key = ?2 AND time >= ?3 AND time <= ?4 \
                 AND value_number IS NOT NULL",
            )?;
            let mut out = Vec::new();
            let mut rows = stmt.query(params![user, key, from, to])?;
            while let Some(row) = rows.next()? {
                let (hour, value): (i64, f64) = (row.get(0)?, row.get(1)?);
                if let Ok(hour @ 0..24) = u8::try_from(hour) {
                    out.push(HourValue { hour, value });
                }
            }
            Ok(out)
        })
        .await
    }

    async fn delete_user_data(&self, user: &str) -> Result<(), StoreError> {
        let user = user.to_string();
        self.run("delete_user_data", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM readings WHERE user = ?1")?
                .execute([&user])?;
            super::genome::delete_genome(&tx, &user)?;
            tx.prepare_cached("DELETE FROM reading_rollups WHERE user = ?1")?
                .execute([&user])?;
            tx.prepare_cached("DELETE FROM reading_catalogue WHERE user = ?1")?
                .execute([&user])?;
            tx.commit()
        })
        .await
    }

    async fn catalogue(&self, user: &str) -> Result<Vec<CatalogueEntry>, StoreError> {
        let user = user.to_string();
        let cache = self.catalogues.clone();
        self.read("catalogue", move |conn| {
            // One read transaction: the stamp and the rows are of the same snapshot.
            let tx = conn.transaction()?;
            let version: i64 = tx
                .prepare_cached("PRAGMA data_version")?
                .query_row([], |row| row.get(0))?;
            let stamp = (version, tx.total_changes());
            let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(entries) = cache.get(stamp, &user) {
                return Ok(entries);
            }
            let entries: Vec<CatalogueEntry> = tx
                .prepare_cached(
                    "SELECT indicator_key, summary FROM reading_catalogue WHERE user = ?1 \
                     ORDER BY indicator_key",
                )?
                .query_map([&user], |row| {
                    Ok(CatalogueEntry {
                        key: row.get(0)?,
                        summary: json_from_column(row, 1)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            cache.put(stamp, user, &entries);
            Ok(entries)
        })
        .await
    }

    async fn rollups(
        &self,
        user: &str,
        indicator_key: &str,
        period: Period,
        from: &str,
        to: &str,
    ) -> Result<Vec<Rollup>, StoreError> {
        let (user, key, from, to) = (
            user.to_string(),
            Reading::indicator_key(indicator_key),
            from.to_string(),
            to.to_string(),
        );
        let kind = match period {
            Period::Day => DAY,
            Period::Month => MONTH,
        };
        self.run("rollups", move |conn| {
            rollups_between(conn, &user, &key, kind, &from, &to)
        })
        .await
    }

    async fn latest_readings(
        &self,
        user: &str,
        indicator_key: &str,
        limit: usize,
        window: &ReadingQuery,
    ) -> Result<Vec<Reading>, StoreError> {
        let (user, key) = (user.to_string(), Reading::indicator_key(indicator_key));
        let from = window.from.clone().unwrap_or_default();
        let to = window.time_upper_bound();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.run("latest_readings", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {READING_COLUMNS} FROM readings \
                 WHERE user = ?1 AND indicator_key = ?2 AND time >= ?3 AND time <= ?4 \
                 ORDER BY time DESC, source DESC LIMIT ?5"
            ))?
            .query_map(params![user, key, from, to, limit], reading_from_row)?
            .collect()
        })
        .await
    }

    async fn migrate_measures(&self) -> Result<u64, StoreError> {
        // Schema step 7 did it when the file opened.
        Ok(0)
    }

    async fn migrate_legacy_readings(&self) -> Result<u64, StoreError> {
        // The SQLite layout of readings did not change: nothing to move.
        Ok(0)
    }
}
