//! [`HealthStore`] on SQLite: the `readings` and `genotypes` tables, and presence as
//! two `EXISTS` probes in one statement.
//!
//! Never logs a reading or a genotype.

use std::collections::HashSet;

use rusqlite::{Connection, Row, TransactionBehavior, params};

use super::EmbeddedStore;
use crate::domain::{DataPresence, Genotype, Reading, ReadingValue};
use crate::store::{HealthStore, ReadingQuery, StoreError, StoreFuture, WriteReport};

pub(super) fn presence_of(conn: &Connection, user: &str) -> rusqlite::Result<DataPresence> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM readings WHERE user = ?1), \
                EXISTS (SELECT 1 FROM genotypes WHERE user = ?1)",
    )?
    .query_row([user], |row| {
        Ok(DataPresence {
            health: row.get(0)?,
            genotype: row.get(1)?,
        })
    })
}

const READING_COLUMNS: &str =
    "indicator, value_number, value_text, unit, time, code_system, code, source";

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
    let number: Option<f64> = row.get(1)?;
    let text: Option<String> = row.get(2)?;
    let value = match (number, text) {
        (Some(n), None) => ReadingValue::Number(n),
        (None, Some(t)) => ReadingValue::Text(t),
        _ => {
            return Err(rusqlite::Error::InvalidColumnType(
                1,
                "value".into(),
                rusqlite::types::Type::Null,
            ));
        }
    };
    Ok(Reading {
        indicator: row.get(0)?,
        value,
        unit: row.get(3)?,
        time: row.get(4)?,
        code_system: row.get(5)?,
        code: row.get(6)?,
        source: row.get(7)?,
    })
}

fn genotype_from_row(row: &Row<'_>) -> rusqlite::Result<Genotype> {
    let position: i64 = row.get(2)?;
    let position = u64::try_from(position).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Integer, Box::new(e))
    })?;
    Ok(Genotype {
        rsid: row.get(0)?,
        chromosome: row.get(1)?,
        position,
        genotype: row.get(3)?,
    })
}

impl HealthStore for EmbeddedStore {
    fn data_presence<'a>(&'a self, user: &'a str) -> StoreFuture<'a, DataPresence> {
        let user = user.to_string();
        Box::pin(self.run("data_presence", move |conn| presence_of(conn, &user)))
    }

    fn put_readings<'a>(
        &'a self,
        user: &'a str,
        readings: &'a [Reading],
    ) -> StoreFuture<'a, WriteReport> {
        let user = user.to_string();
        let readings = readings.to_vec();
        Box::pin(self.run("put_readings", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut identities = HashSet::new();
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO readings (user, indicator_key, time, source, indicator, value_number, \
                                           value_text, unit, code_system, code) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
                     ON CONFLICT (user, indicator_key, time, source) DO UPDATE SET \
                       indicator = excluded.indicator, value_number = excluded.value_number, \
                       value_text = excluded.value_text, unit = excluded.unit, \
                       code_system = excluded.code_system, code = excluded.code",
                )?;
                for r in &readings {
                    let key = Reading::indicator_key(&r.indicator);
                    let (number, text) = value_columns(&r.value);
                    stmt.execute(params![
                        user,
                        key,
                        r.time,
                        r.source,
                        r.indicator,
                        number,
                        text,
                        r.unit,
                        r.code_system,
                        r.code
                    ])?;
                    identities.insert((key, r.time.as_str(), r.source.as_str()));
                }
            }
            tx.commit()?;
            Ok(WriteReport {
                written: identities.len(),
            })
        }))
    }

    fn readings<'a>(
        &'a self,
        user: &'a str,
        query: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>> {
        let user = user.to_string();
        let from = query.from.clone().unwrap_or_default();
        let to = query.time_upper_bound();
        let keys = query.normalized_keys();
        Box::pin(self.run("readings", move |conn| {
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
        }))
    }

    fn put_genotypes<'a>(
        &'a self,
        user: &'a str,
        genotypes: &'a [Genotype],
    ) -> StoreFuture<'a, WriteReport> {
        let user = user.to_string();
        let mut rows = Vec::with_capacity(genotypes.len());
        for g in genotypes {
            // SQLite integers are signed 64-bit; no genome comes near the limit.
            let Ok(position) = i64::try_from(g.position) else {
                return Box::pin(async {
                    Err(StoreError::Unavailable(
                        "put_genotypes: position out of range".into(),
                    ))
                });
            };
            rows.push((
                g.rsid.to_lowercase(),
                g.chromosome.clone(),
                position,
                g.genotype.clone(),
            ));
        }
        Box::pin(self.run("put_genotypes", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO genotypes (user, rsid, chromosome, position, genotype) \
                     VALUES (?1, ?2, ?3, ?4, ?5) \
                     ON CONFLICT (user, rsid) DO UPDATE SET \
                       chromosome = excluded.chromosome, position = excluded.position, \
                       genotype = excluded.genotype",
                )?;
                for (rsid, chromosome, position, genotype) in &rows {
                    stmt.execute(params![user, rsid, chromosome, position, genotype])?;
                }
            }
            tx.commit()?;
            let written = rows
                .iter()
                .map(|r| r.0.as_str())
                .collect::<HashSet<_>>()
                .len();
            Ok(WriteReport { written })
        }))
    }

    fn genotypes_by_rsid<'a>(
        &'a self,
        user: &'a str,
        rsids: &'a [String],
    ) -> StoreFuture<'a, Vec<Genotype>> {
        let user = user.to_string();
        let rsids = Genotype::normalized_rsids(rsids);
        Box::pin(self.run("genotypes_by_rsid", move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT rsid, chromosome, position, genotype FROM genotypes WHERE user = ?1 AND rsid = ?2",
            )?;
            let mut out = Vec::new();
            for rsid in &rsids {
                for row in stmt.query_map(params![user, rsid], genotype_from_row)? {
                    out.push(row?);
                }
            }
            Ok(out)
        }))
    }

    fn genotypes_in_range<'a>(
        &'a self,
        user: &'a str,
        chromosome: &'a str,
        from: u64,
        to: u64,
    ) -> StoreFuture<'a, Vec<Genotype>> {
        let user = user.to_string();
        let chromosome = chromosome.to_string();
        Box::pin(self.run("genotypes_in_range", move |conn| {
            // No stored position exceeds i64::MAX (see put_genotypes).
            let Ok(from) = i64::try_from(from) else {
                return Ok(Vec::new());
            };
            let to = i64::try_from(to).unwrap_or(i64::MAX);
            let mut stmt = conn.prepare_cached(
                "SELECT rsid, chromosome, position, genotype FROM genotypes \
                 WHERE user = ?1 AND chromosome = ?2 AND position >= ?3 AND position <= ?4 \
                 ORDER BY position, rsid",
            )?;
            let rows = stmt.query_map(params![user, chromosome, from, to], genotype_from_row)?;
            rows.collect()
        }))
    }

    fn delete_user_data<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()> {
        let user = user.to_string();
        Box::pin(self.run("delete_user_data", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM readings WHERE user = ?1")?
                .execute([&user])?;
            tx.prepare_cached("DELETE FROM genotypes WHERE user = ?1")?
                .execute([&user])?;
            tx.commit()
        }))
    }
}
