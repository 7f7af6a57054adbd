//! The embedded store: one SQLite file (the local default), safe for several processes
//! at once (`cargo lambda watch` runs one per function).
//!
//! `mod.rs` opens the file, holds the connection, the schema and its migrations, and
//! the column conversions every domain uses; each domain's trait is implemented in its
//! own file (`health`, `genome`, `accounts`, `oauth`, `mcp_servers`).
//!
//! Same model as the DynamoDB store, in typed tables keyed by user:
//! - `readings`: identity (user, indicator key, time, source); a re-upload replaces in place.
//! - `genomes`: a user's active genome version (its count, source, import time and
//!   layout); `genome_items`: identity (user, version, key), the version's blocks and
//!   rsid index buckets as DynamoDB stores them (`store::genome_codec`).
//! - `reading_rollups` (kind `d` per day, `m` per month) and `reading_catalogue` (one row
//!   per indicator): a [`Rollup`](crate::store::Rollup) as JSON, rebuilt from the level
//!   below in the transaction that writes the readings, so they are exact.
//! - `accounts`: one row per user; the e-mail is unique (the `email#` lookup of the
//!   DynamoDB keys table).
//! - `shares`: identity (owner, grantee), the permissions as a JSON array.
//! - `keys`: the rest of the DynamoDB keys table, same keys (`url#<hash>`,
//!   `user-url#<user>`, `share-url#<owner>#<grantee>`, `state#<state>`, `client#<id>`, `code#<hash>`, `refresh#<hash>`,
//!   `family#<id>`), the attributes as a JSON object and `expires_at` as a column (NULL
//!   for what does not expire). Every read checks `expires_at`, and expired rows are
//!   purged a day after they expire (as DynamoDB's TTL deletes
//!   late): [`purge_expired_rows`], at most [`PURGE_BATCH`] rows of `keys` and of
//!   `uploads` per call, through an index on `expires_at`; the login prompt calls it
//!   (`AccountStore::purge_expired`), so what anonymous callers store is removed at
//!   the pace they store it, and abuse counters are dropped as they are counted.
//! - `mcp_servers`: identity (user, name), the url unique per user (the `mcpurl#` claim
//!   of the DynamoDB store), the record's other fields as JSON, and the connection
//!   fields as columns of their own.
//!
//! Check-then-write sequences (a taken e-mail or server name or url, a live personal
//! or delegated URL and its share, an unshare with its URL, a pending login, a code's
//! single use, a refresh token's rotation) run inside one `BEGIN IMMEDIATE`
//! transaction, which holds the file's write lock from the start, so they are atomic
//! across processes too; a conditional insert (a new client) is one statement.
//!
//! Presence is two `EXISTS` probes in one statement (one round trip, no summary row
//! to keep in step). Every statement is parameterised and prepared once per connection
//! (cached); batch writes are one transaction. The blocking SQLite calls run on tokio's
//! blocking pool, one connection per store behind a mutex; several processes coordinate
//! through WAL and a busy timeout. Plans never depend on bound values (QPSG); short reads
//! run on the calling thread when the connection is free; a user's catalogue is kept
//! decoded until any write.

mod accounts;
mod genome;
mod health;
mod mcp_servers;
mod oauth;
mod uploads;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, Row, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use crate::observe::{self, Outcome, SpanKind};
use crate::store::StoreError;

/// How long a statement waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection: room for every statement of this backend
/// (34), so each is prepared once (rusqlite's default keeps 16, least recently used).
const STATEMENT_CACHE: usize = 64;

/// Rows expired this long ago are purged (a day: an expired login still answers
/// `expired`, not unknown, for a while, as on DynamoDB, whose TTL deletes within days).
pub(super) const PURGE_GRACE: u64 = 24 * 3600;
/// At most this many rows per table per purge: bounded work for the caller.
pub(super) const PURGE_BATCH: i64 = 200;

/// Indexes made after the migrations, as every table they index exists by then (any
/// schema version: an older build reading the file ignores them).
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS keys_by_expiry ON keys (expires_at);
CREATE INDEX IF NOT EXISTS uploads_by_expiry ON uploads (expires_at);
CREATE INDEX IF NOT EXISTS invitations_by_email ON invitations (email, owner);
";

/// The schema version this code reads and writes (`PRAGMA user_version`).
/// 1: readings, genotypes. 2: adds accounts, shares, keys. 3: adds mcp_servers.
/// 4: adds reading_rollups and reading_catalogue, built from the readings already there.
/// 5: genomes in versions (`genomes`, `genome_items`), `genotypes` moved into them.
/// 6: adds uploads.
/// 7: readings keep their UTC offset and what was sent; rollups rebuilt.
/// 8: uploads record when a running import last reported.
/// 9: accounts record when their address was confirmed; shares wait as invitations.
/// Existing accounts stay unconfirmed until they confirm; existing shares
/// stay accepted grants.
/// 10: an MCP server's OAuth refresh is claimed by one caller at a time.
const SCHEMA_VERSION: i64 = 10;

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
    utc_offset    TEXT,
    original      TEXT,
    PRIMARY KEY (user, indicator_key, time, source),
    CHECK ((value_number IS NULL) <> (value_text IS NULL))
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS genomes (
    user        TEXT NOT NULL PRIMARY KEY,
    version     INTEGER NOT NULL,
    variants    INTEGER NOT NULL,
    source      TEXT NOT NULL,
    imported_at INTEGER NOT NULL,
    buckets     INTEGER NOT NULL,
    blocks      BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS genome_items (
    user    TEXT NOT NULL,
    version INTEGER NOT NULL,
    key     TEXT NOT NULL,
    data    BLOB NOT NULL,
    PRIMARY KEY (user, version, key)
);
CREATE TABLE IF NOT EXISTS accounts (
    user_id       TEXT NOT NULL PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shares (
    owner       TEXT NOT NULL,
    grantee     TEXT NOT NULL,
    permissions TEXT NOT NULL,
    PRIMARY KEY (owner, grantee)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS invitations (
    owner       TEXT NOT NULL,
    email       TEXT NOT NULL,
    id          TEXT NOT NULL UNIQUE,
    permissions TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (owner, email)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS keys (
    key        TEXT NOT NULL PRIMARY KEY,
    value      TEXT NOT NULL,
    expires_at INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mcp_servers (
    user               TEXT NOT NULL,
    name               TEXT NOT NULL,
    url                TEXT NOT NULL,
    record             TEXT NOT NULL,
    last_connected_at  INTEGER,
    last_connect_error TEXT,
    refresh_claimed_until INTEGER,
    PRIMARY KEY (user, name),
    UNIQUE (user, url)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reading_rollups (
    user          TEXT NOT NULL,
    indicator_key TEXT NOT NULL,
    kind          TEXT NOT NULL,
    period        TEXT NOT NULL,
    summary       TEXT NOT NULL,
    PRIMARY KEY (user, indicator_key, kind, period)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS reading_catalogue (
    user          TEXT NOT NULL,
    indicator_key TEXT NOT NULL,
    summary       TEXT NOT NULL,
    PRIMARY KEY (user, indicator_key)
) WITHOUT ROWID;
";

/// The embedded (SQLite) implementation of [`Store`](crate::store::Store).
#[derive(Clone)]
pub struct EmbeddedStore {
    conn: Arc<Mutex<Connection>>,
    /// Locked only while `conn` is.
    catalogues: Arc<Mutex<health::CatalogueCache>>,
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
            catalogues: Arc::default(),
        })
    }

    /// Runs `work` on the blocking pool with the connection; a SQLite failure becomes
    /// the store error for `op` ([`sql_error`]).
    async fn run<T, F>(&self, op: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.call(op, false, work).await
    }

    /// As [`EmbeddedStore::run`], for a read of microseconds (a few indexed rows of one
    /// user: a token's state, the catalogue, a user's servers): run on the calling thread
    /// when the connection is free, without the hop to the blocking pool and back (issue
    /// 32: a `tools/list` with a token made two, a dozen futex calls). While another call
    /// holds the connection (an import writing) it waits on the blocking pool, as `run`.
    async fn read<T, F>(&self, op: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.call(op, true, work).await
    }

    /// `work` done on this thread if the connection is free; else `work` back.
    fn try_here<T, F>(&self, op: &'static str, work: F) -> Result<Result<T, StoreError>, F>
    where
        F: FnOnce(&mut Connection) -> rusqlite::Result<T>,
    {
        let mut conn = match self.conn.try_lock() {
            Ok(conn) => conn,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(work),
        };
        Ok(work(&mut conn).map_err(|e| sql_error(op, e)))
    }

    async fn call<T, F>(&self, op: &'static str, inline: bool, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        // One span per store call, timed from the request's task (which waits for the worker).
        let span = observe::start(format!("SQLite.{op}"), SpanKind::Store);
        let work = match inline {
            true => self.try_here(op, work),
            false => Err(work),
        };
        let result = match work {
            Ok(done) => done,
            Err(work) => {
                let conn = self.conn.clone();
                tokio::task::spawn_blocking(move || {
                    // A panic elsewhere while holding the lock leaves no open transaction
                    // behind (a dropped rusqlite transaction rolls back): the connection
                    // is still good.
                    let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                    work(&mut conn).map_err(|e| sql_error(op, e))
                })
                .await
                .map_err(|_| StoreError::Unavailable(format!("{op}: worker task failed")))
                .and_then(|result| result)
            }
        };
        if let Some(span) = span {
            span.finish(Outcome {
                error: result.is_err(),
                ..Outcome::default()
            });
        }
        result
    }
}

/// Connection settings and schema. Safe to run from several processes at once.
fn prepare(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // The query planner's stability guarantee: a plan never depends on a bound
    // value. Without it (this SQLite is built with STAT4) a statement whose plan looked at
    // a bound `LIMIT ?` or range value expires when rusqlite clears its bindings on
    // returning it to the cache, and is prepared again on its next use, every request.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
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
    // Every statement is `IF NOT EXISTS`: on a fresh file it creates everything, on an
    // older one it adds the tables that version lacks.
    tx.execute_batch(SCHEMA)?;
    // Step 4 (the rollups and the catalogue of the readings an older build wrote) is
    // step 7's rebuild now: it runs for every file older than 7.
    if (1..5).contains(&version) {
        genome::migrate_genotypes_table(&tx)?;
    }
    if version < 6 {
        tx.execute_batch(uploads::SCHEMA_STEP_6)?;
    }
    if (1..7).contains(&version) {
        // Step 7: the offset and the original of a reading; the rollups of
        // what is stored rebuilt, as they now carry what each measure's kind needs.
        // and an upload's counts of what its import did.
        for (table, column) in [
            ("readings", "utc_offset"),
            ("readings", "original"),
            ("uploads", "counts"),
        ] {
            add_column(&tx, table, column, "TEXT")?;
        }
        health::canonicalize_readings(&tx)?;
        health::rebuild_rollups(&tx)?;
    }
    if (1..8).contains(&version) {
        // Step 8: when a running import last reported, so a killed one is
        // failed instead of importing for ever.
        add_column(&tx, "uploads", "active_at", "INTEGER")?;
    }
    if version < 9 {
        // Step 9: when the account's address was confirmed (NULL: not yet;
        // accounts from before stay unconfirmed until they confirm). The `invitations`
        // table is in `SCHEMA`; existing `shares` rows stay accepted grants.
        add_column(&tx, "accounts", "email_confirmed_at", "INTEGER")?;
    }
    if version < 10 {
        // Step 10: until when one caller holds an OAuth server's refresh (NULL: nobody).
        add_column(&tx, "mcp_servers", "refresh_claimed_until", "INTEGER")?;
    }
    tx.execute_batch(INDEXES)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// Deletes at most [`PURGE_BATCH`] `keys` rows and as many `uploads` rows that expired
/// [`PURGE_GRACE`] or longer before `now` (rows without an expiry stay); answers how
/// many went. One short transaction.
fn purge_expired_rows(conn: &mut Connection, now: u64) -> rusqlite::Result<u64> {
    let before = now_column(now.saturating_sub(PURGE_GRACE));
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let keys = tx
        .prepare_cached(
            "DELETE FROM keys WHERE key IN \
             (SELECT key FROM keys WHERE expires_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![before, PURGE_BATCH])?;
    let uploads = tx
        .prepare_cached(
            "DELETE FROM uploads WHERE id IN \
             (SELECT id FROM uploads WHERE expires_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![before, PURGE_BATCH])?;
    tx.commit()?;
    Ok((keys + uploads) as u64)
}

/// Epoch seconds as stored (SQLite integers are signed 64-bit).
fn seconds_column(seconds: u64) -> rusqlite::Result<i64> {
    i64::try_from(seconds).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// `now` for comparisons: past the column's range, everything stored has expired.
/// Adds a column to a table that lacks it (a migration step's part).
fn add_column(tx: &Connection, table: &str, column: &str, kind: &str) -> rusqlite::Result<()> {
    let present: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
        [table, column],
        |row| row.get(0),
    )?;
    if !present {
        tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))?;
    }
    Ok(())
}

fn now_column(now: u64) -> i64 {
    i64::try_from(now).unwrap_or(i64::MAX)
}

fn seconds_from_column(row: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    let value: i64 = row.get(index)?;
    u64::try_from(value).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Integer,
            Box::new(e),
        )
    })
}

/// A JSON column's value; unreadable JSON is a corrupt row.
fn json_from_column<T: for<'de> Deserialize<'de>>(
    row: &Row<'_>,
    index: usize,
) -> rusqlite::Result<T> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn json_column<T: Serialize>(value: &T) -> rusqlite::Result<String> {
    serde_json::to_string(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// Writes (inserts or replaces) one `keys` row.
fn put_key(tx: &Connection, key: &str, value: &str, expires_at: u64) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO keys (key, value, expires_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at",
    )?
    .execute(params![key, value, seconds_column(expires_at)?])?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Account, McpAuth, McpServerRecord, McpServerWrite, Reading, ReadingValue};
    use crate::store::{
        AccountStore, Created, GrantStore, HealthStore, LoginStore, McpServerStore, ReadingQuery,
    };

    fn reading(i: usize, source: &str) -> Reading {
        Reading {
            indicator: format!("Marker {}", i % 7),
            value: ReadingValue::Number(i as f64),
            unit: None,
            time: format!("2024-01-01T00:00:{:02}.{i:05}", i % 60),
            code_system: None,
            code: None,
            source: source.to_string(),
            offset: None,
            original: None,
        }
    }

    fn temp_path(label: &str) -> std::path::PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        std::env::temp_dir()
            .join(format!("mirobody-{label}-{}-{nanos}", std::process::id()))
            .join("db.sqlite3")
    }

    fn user_version(store: &EmbeddedStore) -> i64 {
        store
            .conn
            .lock()
            .unwrap()
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap()
    }

    /// The schema as version 1 wrote it (readings and genotypes only).
    const SCHEMA_V1: &str = "
        CREATE TABLE readings (
            user TEXT NOT NULL, indicator_key TEXT NOT NULL, time TEXT NOT NULL,
            source TEXT NOT NULL, indicator TEXT NOT NULL, value_number REAL, value_text TEXT,
            unit TEXT, code_system TEXT, code TEXT,
            PRIMARY KEY (user, indicator_key, time, source),
            CHECK ((value_number IS NULL) <> (value_text IS NULL))
        ) WITHOUT ROWID;
        CREATE TABLE genotypes (
            user TEXT NOT NULL, rsid TEXT NOT NULL, chromosome TEXT NOT NULL,
            position INTEGER NOT NULL, genotype TEXT NOT NULL, PRIMARY KEY (user, rsid)
        ) WITHOUT ROWID;
        CREATE INDEX genotypes_by_position ON genotypes (user, chromosome, position);
        INSERT INTO readings (user, indicator_key, time, source, indicator, value_number)
            VALUES ('u1', 'glucose', '2024-01-01T08:00:00', 'lab', 'Glucose', 90.0);
        PRAGMA user_version = 1;
    ";

    /// A catalogue kept decoded is dropped by any write, this store's or another
    /// connection's (another process on the same file).
    #[tokio::test]
    async fn a_kept_catalogue_is_dropped_by_any_write() {
        let path = temp_path("catalogue");
        let store = EmbeddedStore::open(&path).unwrap();
        store
            .put_readings("u1", &[reading(1, "lab")])
            .await
            .unwrap();
        let first = store.catalogue("u1").await.unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(store.catalogue("u1").await.unwrap(), first);
        store
            .put_readings("u1", &[reading(2, "lab")])
            .await
            .unwrap();
        let second = store.catalogue("u1").await.unwrap();
        assert_eq!(second.len(), 2);
        let other = EmbeddedStore::open(&path).unwrap();
        other
            .put_readings("u1", &[reading(3, "lab")])
            .await
            .unwrap();
        let third = store.catalogue("u1").await.unwrap();
        assert_eq!(third.len(), 3);
        assert_eq!(third, other.catalogue("u1").await.unwrap());
        assert!(store.catalogue("u2").await.unwrap().is_empty());
        other.delete_user_data("u1").await.unwrap();
        assert!(store.catalogue("u1").await.unwrap().is_empty());
        drop((store, other));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// A cached statement with bound range and `LIMIT` values (as the latest
    /// readings' query) is prepared once, never again when used with other values.
    #[tokio::test]
    async fn a_cached_statement_is_never_prepared_again() {
        let path = temp_path("qpsg");
        let store = EmbeddedStore::open(&path).unwrap();
        let readings: Vec<Reading> = (0..300).map(|i| reading(i, "lab")).collect();
        store.put_readings("u1", &readings).await.unwrap();
        let key = Reading::indicator_key("Marker 1");
        let conn = store.conn.lock().unwrap();
        let sql = "SELECT time FROM readings WHERE user = ?1 AND indicator_key = ?2 \
                   AND time >= ?3 AND time <= ?4 ORDER BY time DESC, source DESC LIMIT ?5";
        for limit in 1..=20_i64 {
            let mut statement = conn.prepare_cached(sql).unwrap();
            let times: Vec<String> = statement
                .query_map(
                    params!["u1", key, "2024", format!("2024-12-{limit:02}"), limit],
                    |row| row.get(0),
                )
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert!(!times.is_empty());
        }
        let statement = conn.prepare_cached(sql).unwrap();
        assert_eq!(
            statement.get_status(rusqlite::StatementStatus::RePrepare),
            0
        );
        drop(statement);
        drop(conn);
        drop(store);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// A file written by version 1 opens: its data stays and the new tables work.
    #[tokio::test]
    async fn version_1_file_is_migrated() {
        let path = temp_path("migrate");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute_batch(SCHEMA_V1)
            .unwrap();

        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(user_version(&store), SCHEMA_VERSION);
        let readings = store
            .readings("u1", &ReadingQuery::default())
            .await
            .unwrap();
        assert_eq!(readings.len(), 1, "version 1 data kept");
        let account = Account {
            user_id: "u1".into(),
            email: "u1@example.com".into(),
            password_hash: "hash".into(),
            created_at: 1,
            email_confirmed: false,
        };
        assert_eq!(
            store.create_account(&account).await.unwrap(),
            Created::Created
        );
        assert_eq!(store.account("u1").await.unwrap(), Some(account));
        drop(store);
        // Opening again (already current) changes nothing.
        let again = EmbeddedStore::open(&path).unwrap();
        assert!(again.account("u1").await.unwrap().is_some());
        drop(again);

        // A file from a newer build is refused rather than guessed at.
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        assert!(EmbeddedStore::open(&path).is_err());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// What version 2 added to version 1's schema (accounts, shares, keys), with a row.
    const SCHEMA_V2_ADDED: &str = "
        CREATE TABLE accounts (
            user_id TEXT NOT NULL PRIMARY KEY, email TEXT NOT NULL UNIQUE,
            password_hash TEXT NOT NULL, created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE shares (
            owner TEXT NOT NULL, grantee TEXT NOT NULL, permissions TEXT NOT NULL,
            PRIMARY KEY (owner, grantee)
        ) WITHOUT ROWID;
        CREATE TABLE keys (
            key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER
        ) WITHOUT ROWID;
        INSERT INTO accounts (user_id, email, password_hash, created_at)
            VALUES ('u1', 'u1@example.com', 'hash', 1);
        PRAGMA user_version = 2;
    ";

    /// Schema step 9 on a file from before it: its accounts start unconfirmed
    /// (they confirm by a mailed link), its shares stay accepted grants, and invitations
    /// work.
    #[tokio::test]
    async fn a_file_from_before_issue_27_keeps_its_shares_and_its_accounts_start_unconfirmed() {
        let path = temp_path("migrate-v9");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_V1).unwrap();
        old.execute_batch(SCHEMA_V2_ADDED).unwrap();
        old.execute_batch(
            "INSERT INTO accounts (user_id, email, password_hash, created_at) \
                 VALUES ('u2', 'u2@example.com', 'hash', 1); \
             INSERT INTO shares (owner, grantee, permissions) VALUES ('u1', 'u2', '[\"chat\"]');",
        )
        .unwrap();
        drop(old);

        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(user_version(&store), SCHEMA_VERSION);
        let account = store.account("u2").await.unwrap().unwrap();
        assert!(!account.email_confirmed, "confirmed only by a mailed link");
        assert_eq!(
            store.share("u1", "u2").await.unwrap(),
            Some(vec!["chat".to_string()]),
            "a share from before stays an accepted grant"
        );
        assert!(
            store
                .confirm_email("u2", "u2@example.com", 5)
                .await
                .unwrap()
        );
        let invitation = crate::domain::Invitation {
            id: "i1".into(),
            owner: "u1".into(),
            email: "x@example.com".into(),
            permissions: vec!["chat".into()],
            created_at: 1,
        };
        store.put_invitation(&invitation).await.unwrap();
        assert_eq!(
            store.invitations_for("x@example.com").await.unwrap(),
            vec![invitation]
        );
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// A file written by version 2 opens: its data stays and external servers work.
    #[tokio::test]
    async fn version_2_file_is_migrated() {
        let path = temp_path("migrate-v2");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_V1).unwrap();
        old.execute_batch(SCHEMA_V2_ADDED).unwrap();
        drop(old);

        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(user_version(&store), SCHEMA_VERSION);
        assert_eq!(
            store
                .readings("u1", &ReadingQuery::default())
                .await
                .unwrap()
                .len(),
            1,
            "version 1 data kept"
        );
        assert!(
            store.account("u1").await.unwrap().is_some(),
            "version 2 data kept"
        );
        let server = McpServerRecord {
            name: "weather".into(),
            url: "https://weather.example/mcp".into(),
            auth: McpAuth::None,
            sealed_credential: None,
            enabled: true,
            order: 0,
            allowed_tools: None,
            controls: Default::default(),
            tools: Vec::new(),
            server_name: None,
            created_at: 1,
            updated_at: 1,
            last_connected_at: None,
            last_connect_error: None,
        };
        assert_eq!(
            store.create_mcp_server("u1", &server).await.unwrap(),
            McpServerWrite::Written
        );
        drop(store);
        let again = EmbeddedStore::open(&path).unwrap();
        assert_eq!(again.mcp_servers("u1").await.unwrap(), vec![server]);
        drop(again);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// Schema step 5 from a version-3 file: each user's `genotypes` rows become their
    /// active genome (version 1, source `migrated`), and the old table goes.
    #[tokio::test]
    async fn version_3_genotypes_become_an_active_genome() {
        use crate::store::{GenomeStore, GenomeSummary};
        let path = temp_path("migrate-v3");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_V1).unwrap();
        old.execute_batch(SCHEMA_V2_ADDED).unwrap();
        old.execute_batch(
            "INSERT INTO genotypes (user, rsid, chromosome, position, genotype) VALUES
                ('u1', 'rs429358', '19', 44908684, 'TC'),
                ('u1', 'rs7412', '19', 44908822, 'CC'),
                ('u2', 'i5000', 'X', 5, '--');
             PRAGMA user_version = 3;",
        )
        .unwrap();
        drop(old);

        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(user_version(&store), SCHEMA_VERSION);
        let near = store
            .genotypes_in_range("u1", "19", 0, u64::MAX)
            .await
            .unwrap();
        let rsids: Vec<&str> = near.iter().map(|g| g.rsid.as_str()).collect();
        assert_eq!(rsids, ["rs429358", "rs7412"]);
        assert_eq!(
            store.genome_summary("u2").await.unwrap(),
            Some(GenomeSummary {
                variants: 1,
                source: "migrated".into(),
                imported_at: 0
            })
        );
        assert!(store.data_presence("u2").await.unwrap().genotype);
        let table: i64 = store
            .conn
            .lock()
            .unwrap()
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'genotypes'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(table, 0, "the old table is gone");
        drop(store);
        // Opening again changes nothing.
        let again = EmbeddedStore::open(&path).unwrap();
        assert_eq!(
            again
                .genotypes_by_rsid("u2", &["i5000".to_string()])
                .await
                .unwrap()
                .len(),
            1
        );
        drop(again);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// Schema step 7: a version 6 file's readings become canonical when it
    /// opens: `Weight` in lb is `Body weight` in kg with what was sent kept, glucose in
    /// mmol/L is mg/dL, and a value the catalogue refuses stays as it was.
    #[tokio::test]
    async fn version_6_readings_become_canonical_measures() {
        let path = temp_path("migrate-v6");
        drop(EmbeddedStore::open(&path).unwrap());
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "INSERT INTO readings (user, indicator_key, time, source, indicator, value_number, unit)
                 VALUES ('u1', 'weight', '2024-01-01T08:00:00', 'scale', 'Weight', 150.0, 'lb'),
                        ('u1', 'blood sugar', '2024-01-01T08:00:00', 'meter', 'Blood sugar', 5.5, 'mmol/L');
             INSERT INTO readings (user, indicator_key, time, source, indicator, value_text, unit)
                 VALUES ('u1', 'glucose', '2024-01-02T08:00:00', 'lab', 'Glucose', '1O4', 'mg/dL');
             PRAGMA user_version = 6;",
        )
        .unwrap();
        drop(old);
        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(user_version(&store), SCHEMA_VERSION);
        let all = store
            .readings("u1", &ReadingQuery::default())
            .await
            .unwrap();
        let keys: Vec<(&str, &str)> = all
            .iter()
            .map(|r| (r.indicator.as_str(), r.time.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("Body weight", "2024-01-01T08:00:00"),
                ("Glucose", "2024-01-01T08:00:00"),
                ("Glucose", "2024-01-02T08:00:00"),
            ]
        );
        // 150 lb × 0.45359237 = 68.0388555 kg; 5.5 mmol/L × 18.016 = 99.088 mg/dL.
        let ReadingValue::Number(kg) = all[0].value else {
            panic!("a number")
        };
        assert!((kg - 68.0388555).abs() < 1e-9);
        assert_eq!(
            all[0].original.as_ref().unwrap().unit.as_deref(),
            Some("lb")
        );
        let ReadingValue::Number(mg) = all[1].value else {
            panic!("a number")
        };
        assert!((mg - 99.088).abs() < 1e-9);
        assert_eq!(
            all[2].value,
            ReadingValue::Text("1O4".into()),
            "left as it was"
        );
        let catalogue = store.catalogue("u1").await.unwrap();
        let names: Vec<&str> = catalogue.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(
            names,
            ["body weight", "glucose"],
            "no entry left under an old key"
        );
        drop(store);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// A file written by version 3 (readings, no rollups) opens with the rollups and
    /// the catalogue of its readings built (schema step 4).
    #[tokio::test]
    async fn version_3_file_gets_rollups_and_catalogue() {
        use crate::store::Period;
        let path = temp_path("migrate-v3");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_V1).unwrap();
        old.execute_batch(SCHEMA_V2_ADDED).unwrap();
        old.execute_batch(
            "INSERT INTO readings (user, indicator_key, time, source, indicator, value_number)
                 VALUES ('u1', 'glucose', '2024-01-01T20:00:00', 'lab', 'Glucose', 110.0),
                        ('u1', 'glucose', '2024-02-03T08:00:00', 'lab', 'Glucose', 100.0);
             PRAGMA user_version = 3;",
        )
        .unwrap();
        drop(old);

        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(user_version(&store), SCHEMA_VERSION);
        let catalogue = store.catalogue("u1").await.unwrap();
        assert_eq!(catalogue.len(), 1);
        assert_eq!(catalogue[0].key, "glucose");
        assert_eq!(catalogue[0].summary.count, 3);
        assert_eq!(catalogue[0].summary.sum, 300.0);
        let days = store
            .rollups("u1", "glucose", Period::Day, "2024-01-01", "2024-01-01")
            .await
            .unwrap();
        assert_eq!((days.len(), days[0].count, days[0].sum), (1, 2, 200.0));
        let months = store
            .rollups("u1", "glucose", Period::Month, "2024-01", "2024-12")
            .await
            .unwrap();
        assert_eq!(months.len(), 2);
        drop(store);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// Two handles on one file (as two processes hold it) writing and reading at once:
    /// writers queue on the lock (busy timeout, immediate transactions), nobody fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_handles_on_one_file_wait_for_each_other() {
        let path = temp_path("embedded");
        let dir = path.parent().unwrap().to_path_buf();
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

    /// Expired rows of every kind are purged a day after they
    /// expire (3,000 anonymous calls once grew the file by 3.1 MB for good), at most
    /// `PURGE_BATCH` rows a table per call; live rows, rows without an expiry and rows
    /// expired less than a day ago stay.
    #[tokio::test]
    async fn expired_rows_are_purged_in_bounded_batches() {
        use crate::domain::{LoginState, LoginStatus, UploadKind, UploadRecord};
        use crate::store::UploadStore;

        let path = temp_path("purge");
        let store = EmbeddedStore::open(&path).unwrap();
        let now: u64 = 1_000_000_000;
        let state = |expires_at: u64| LoginState {
            status: LoginStatus::Pending,
            expires_at,
            created_at: expires_at - 600,
            client_name: None,
            poll_secret_hash: "p".into(),
            user_code_hash: "u".into(),
        };
        for i in 0..450 {
            store
                .put_login_state(&format!("old{i}"), &state(now - PURGE_GRACE - i))
                .await
                .unwrap();
        }
        store
            .put_login_state("live", &state(now + 600))
            .await
            .unwrap();
        store
            .put_login_state("recent", &state(now - 60))
            .await
            .unwrap();
        {
            let conn = store.conn.lock().unwrap();
            for (key, expires_at) in [
                ("url#old", Some(now - PURGE_GRACE)),
                ("code#old", Some(now - 2 * PURGE_GRACE)),
                ("client#lapsed", Some(now - 3 * PURGE_GRACE)),
                ("client#kept", None),
                ("refresh#old", Some(1)),
            ] {
                conn.execute(
                    "INSERT INTO keys (key, value, expires_at) VALUES (?1, '{}', ?2)",
                    params![key, expires_at.map(|at| at as i64)],
                )
                .unwrap();
            }
        }
        let upload = |id: &str, expires_at: u64| {
            UploadRecord::waiting(
                id.into(),
                "u".into(),
                UploadKind::Health,
                "a.csv".into(),
                format!("uploads/{id}"),
                expires_at - 3600,
                expires_at,
            )
        };
        store
            .create_upload(&upload("gone", now - PURGE_GRACE))
            .await
            .unwrap();
        store
            .create_upload(&upload("kept", now + 60))
            .await
            .unwrap();

        let mut purged = Vec::new();
        loop {
            let n = store.purge_expired(now).await.unwrap();
            if n == 0 {
                break;
            }
            purged.push(n);
        }
        // 454 expired keys rows and one upload: three bounded batches.
        assert_eq!(purged, [201, 200, 54]);
        let left: Vec<String> = {
            let conn = store.conn.lock().unwrap();
            let mut statement = conn.prepare("SELECT key FROM keys ORDER BY key").unwrap();
            statement
                .query_map([], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(left, ["client#kept", "state#live", "state#recent"]);
        // A state expired a minute ago still reads as expired, not unknown.
        assert!(store.login_state("recent").await.unwrap().is_some());
        let uploads: i64 = store
            .conn
            .lock()
            .unwrap()
            .query_row("SELECT COUNT(*) FROM uploads", [], |row| row.get(0))
            .unwrap();
        assert_eq!(uploads, 1);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
