//! The embedded store: one SQLite file (the local default), safe for several processes
//! at once (`cargo lambda watch` runs one per function).
//!
//! Same model as the DynamoDB store, in typed tables keyed by user:
//! - `readings`: identity (user, indicator key, time, source); a re-upload replaces in place.
//! - `genotypes`: identity (user, rsid), plus the index `genotypes_by_position`
//!   (user, chromosome, position) for range queries.
//!
//! Presence is two `EXISTS` probes in one statement (one round trip, no summary row
//! to keep in step). Every statement is parameterised; batch writes are one
//! transaction. The blocking SQLite calls run on tokio's blocking pool, one connection
//! per store behind a mutex; several processes coordinate through WAL and a busy timeout.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, Row, TransactionBehavior, params};

use super::{
    DataPresence, Genotype, Reading, ReadingQuery, ReadingValue, Store, StoreError, StoreFuture,
    WriteReport,
};

/// How long a statement waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this code reads and writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS readings (
    user          TEXT NOT NULL,
    indicator_key TEXT NOT NULL,
    time          TEXT NOT NULL,
    source        TEXT NOT NULL,
    indicator     TEXT NOT NULL,
    value_number  REAL,
    value_text    TEXT,
    unit          TEXT,
    code_system   TEXT,
    code          TEXT,
    PRIMARY KEY (user, indicator_key, time, source),
    CHECK ((value_number IS NULL) <> (value_text IS NULL))
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS genotypes (
    user       TEXT NOT NULL,
    rsid       TEXT NOT NULL,
    chromosome TEXT NOT NULL,
    position   INTEGER NOT NULL,
    genotype   TEXT NOT NULL,
    PRIMARY KEY (user, rsid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS genotypes_by_position ON genotypes (user, chromosome, position);
";

/// The upper end of every time range: above any text a time can hold.
const TIME_MAX: &str = "\u{10FFFF}";

const READING_COLUMNS: &str =
    "indicator, value_number, value_text, unit, time, code_system, code, source";

/// The embedded (SQLite) implementation of [`Store`].
#[derive(Clone)]
pub struct EmbeddedStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore").finish_non_exhaustive()
    }
}

impl EmbeddedStore {
    /// Opens (creating if needed) the database file at `path` and its parent
    /// directories, switches it to WAL and brings the schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|_| {
                StoreError::Unavailable("open: cannot create the database directory".into())
            })?;
        }
        let mut conn = Connection::open(path).map_err(|e| sql_error("open", e))?;
        prepare(&mut conn).map_err(|e| sql_error("open", e))?;
        Ok(EmbeddedStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `work` on the blocking pool with the connection.
    async fn run<T, F>(&self, op: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            // A panic elsewhere while holding the lock leaves no open transaction behind
            // (a dropped rusqlite transaction rolls back), so the connection is still good.
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            work(&mut conn)
        })
        .await
        .map_err(|_| StoreError::Unavailable(format!("{op}: worker task failed")))?
    }
}

/// Connection settings and schema. Safe to run from several processes at once.
fn prepare(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers never block the writer, and the setting sticks to the file.
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(journal_mode = %mode, "embedded store: WAL unavailable, concurrent use will be slower");
    }
    // NORMAL is durable across application crashes in WAL mode (a power cut may lose
    // the last transactions, never corrupt the file).
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version > SCHEMA_VERSION {
        // A newer build wrote this file; refusing is safer than guessing.
        return Err(rusqlite::Error::InvalidQuery);
    }
    tx.execute_batch(SCHEMA)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// Maps a SQLite failure to a store error naming the operation only (a SQLite message
/// can quote stored values; it is neither returned nor logged).
fn sql_error(op: &'static str, err: rusqlite::Error) -> StoreError {
    let kind = match &err {
        rusqlite::Error::SqliteFailure(e, _) => match e.code {
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => "busy",
            rusqlite::ErrorCode::DiskFull => "disk full",
            rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::PermissionDenied => "read only",
            rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase => {
                "corrupt file"
            }
            rusqlite::ErrorCode::CannotOpen => "cannot open",
            rusqlite::ErrorCode::ConstraintViolation => "constraint",
            _ => "sqlite failure",
        },
        rusqlite::Error::InvalidQuery => "schema newer than this build",
        rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::InvalidColumnType(..) => {
            tracing::warn!(operation = op, "embedded store: unreadable row");
            return StoreError::Corrupt(op.to_string());
        }
        _ => "sqlite error",
    };
    tracing::warn!(operation = op, kind, "embedded store: operation failed");
    StoreError::Unavailable(format!("{op}: {kind}"))
}

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

impl Store for EmbeddedStore {
    fn data_presence<'a>(&'a self, user: &'a str) -> StoreFuture<'a, DataPresence> {
        let user = user.to_string();
        Box::pin(self.run("data_presence", move |conn| {
            conn.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM readings WHERE user = ?1), \
                        EXISTS (SELECT 1 FROM genotypes WHERE user = ?1)",
            )
            .and_then(|mut stmt| {
                stmt.query_row([&user], |row| {
                    Ok(DataPresence {
                        health: row.get(0)?,
                        genotype: row.get(1)?,
                    })
                })
            })
            .map_err(|e| sql_error("data_presence", e))
        }))
    }

    fn put_readings<'a>(
        &'a self,
        user: &'a str,
        readings: &'a [Reading],
    ) -> StoreFuture<'a, WriteReport> {
        let user = user.to_string();
        let readings = readings.to_vec();
        Box::pin(self.run("put_readings", move |conn| {
            let write = |conn: &mut Connection| -> rusqlite::Result<usize> {
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
                Ok(identities.len())
            };
            let written = write(conn).map_err(|e| sql_error("put_readings", e))?;
            Ok(WriteReport { written })
        }))
    }

    fn readings<'a>(
        &'a self,
        user: &'a str,
        query: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>> {
        let user = user.to_string();
        let from = query.from.clone().unwrap_or_default();
        // `to` is inclusive and also covers every time it is a prefix of.
        let to = format!("{}{TIME_MAX}", query.to.as_deref().unwrap_or(TIME_MAX));
        let keys: Option<Vec<String>> = query.indicator_keys.as_ref().map(|keys| {
            let mut keys: Vec<String> = keys.iter().map(|k| Reading::indicator_key(k)).collect();
            keys.sort();
            keys.dedup();
            keys
        });
        Box::pin(self.run("readings", move |conn| {
            let read = |conn: &mut Connection| -> rusqlite::Result<Vec<Reading>> {
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
                            for row in
                                stmt.query_map(params![user, key, from, to], reading_from_row)?
                            {
                                out.push(row?);
                            }
                        }
                    }
                }
                Ok(out)
            };
            read(conn).map_err(|e| sql_error("readings", e))
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
            let write = |conn: &mut Connection| -> rusqlite::Result<usize> {
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
                Ok(rows
                    .iter()
                    .map(|r| r.0.as_str())
                    .collect::<HashSet<_>>()
                    .len())
            };
            let written = write(conn).map_err(|e| sql_error("put_genotypes", e))?;
            Ok(WriteReport { written })
        }))
    }

    fn genotypes_by_rsid<'a>(
        &'a self,
        user: &'a str,
        rsids: &'a [String],
    ) -> StoreFuture<'a, Vec<Genotype>> {
        let user = user.to_string();
        let mut rsids: Vec<String> = rsids.iter().map(|r| r.to_lowercase()).collect();
        rsids.sort();
        rsids.dedup();
        Box::pin(self.run("genotypes_by_rsid", move |conn| {
            let read = |conn: &mut Connection| -> rusqlite::Result<Vec<Genotype>> {
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
            };
            read(conn).map_err(|e| sql_error("genotypes_by_rsid", e))
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
            let read = |conn: &mut Connection| -> rusqlite::Result<Vec<Genotype>> {
                let mut stmt = conn.prepare_cached(
                    "SELECT rsid, chromosome, position, genotype FROM genotypes \
                     WHERE user = ?1 AND chromosome = ?2 AND position >= ?3 AND position <= ?4 \
                     ORDER BY position, rsid",
                )?;
                let rows =
                    stmt.query_map(params![user, chromosome, from, to], genotype_from_row)?;
                rows.collect()
            };
            read(conn).map_err(|e| sql_error("genotypes_in_range", e))
        }))
    }

    fn delete_user_data<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()> {
        let user = user.to_string();
        Box::pin(self.run("delete_user_data", move |conn| {
            let delete = |conn: &mut Connection| -> rusqlite::Result<()> {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.execute("DELETE FROM readings WHERE user = ?1", [&user])?;
                tx.execute("DELETE FROM genotypes WHERE user = ?1", [&user])?;
                tx.commit()
            };
            delete(conn).map_err(|e| sql_error("delete_user_data", e))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(i: usize, source: &str) -> Reading {
        Reading {
            indicator: format!("Marker {}", i % 7),
            value: ReadingValue::Number(i as f64),
            unit: None,
            time: format!("2024-01-01T00:00:{:02}.{i:05}", i % 60),
            code_system: None,
            code: None,
            source: source.to_string(),
        }
    }

    /// Two handles on one file (as two processes hold it) writing and reading at once:
    /// writers queue on the lock (busy timeout, immediate transactions), nobody fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_handles_on_one_file_wait_for_each_other() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mirobody-embedded-{}-{nanos}", std::process::id()));
        let path = dir.join("db.sqlite3");
        let stores = [
            EmbeddedStore::open(&path).unwrap(),
            EmbeddedStore::open(&path).unwrap(),
        ];
        let mut tasks = tokio::task::JoinSet::new();
        for (n, store) in stores.iter().enumerate() {
            let store = store.clone();
            tasks.spawn(async move {
                let source = format!("writer-{n}");
                for batch in 0..20 {
                    let rows: Vec<Reading> = (batch * 50..batch * 50 + 50)
                        .map(|i| reading(i, &source))
                        .collect();
                    store.put_readings("shared-user", &rows).await.unwrap();
                    store
                        .readings("shared-user", &ReadingQuery::default())
                        .await
                        .unwrap();
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        assert_eq!(
            stores[0]
                .readings("shared-user", &ReadingQuery::default())
                .await
                .unwrap()
                .len(),
            2000
        );
        drop(stores);
        let _ = std::fs::remove_dir_all(dir);
    }
}
