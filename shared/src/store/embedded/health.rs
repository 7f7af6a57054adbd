//! [`HealthStore`] on SQLite: the `readings` table, and presence as two `EXISTS`
//! probes in one statement (readings; the `genomes` pointer).
//!
//! Never logs a reading or a genotype.

use std::collections::HashSet;

use rusqlite::{Connection, Row, TransactionBehavior, params};

use super::EmbeddedStore;
use crate::domain::{DataPresence, Reading, ReadingValue};
use crate::store::{HealthStore, ReadingQuery, StoreFuture, WriteReport};

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

    fn delete_user_data<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()> {
        let user = user.to_string();
        Box::pin(self.run("delete_user_data", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM readings WHERE user = ?1")?
                .execute([&user])?;
            super::genome::delete_genome(&tx, &user)?;
            tx.commit()
        }))
    }
}
