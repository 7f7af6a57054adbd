//! The embedded store: one SQLite file (the local default), safe for several processes
//! at once (`cargo lambda watch` runs one per function).
//!
//! Same model as the DynamoDB store, in typed tables keyed by user:
//! - `readings`: identity (user, indicator key, time, source); a re-upload replaces in place.
//! - `genotypes`: identity (user, rsid), plus the index `genotypes_by_position`
//!   (user, chromosome, position) for range queries.
//! - `accounts`: one row per user; the e-mail is unique (the `email#` lookup of the
//!   DynamoDB keys table).
//! - `shares`: identity (owner, grantee), the permissions as a JSON array.
//! - `keys`: the rest of the DynamoDB keys table, same keys (`url#<hash>`,
//!   `user-url#<user>`, `state#<state>`, `client#<id>`, `code#<hash>`, `refresh#<hash>`,
//!   `family#<id>`), the attributes as a JSON object and `expires_at` as a column (NULL
//!   for clients, which do not expire). Nothing deletes expired rows by itself (as with
//!   DynamoDB's late TTL), so every read checks `expires_at`.
//! - `mcp_servers`: identity (user, name), the url unique per user (the `mcpurl#` claim
//!   of the DynamoDB store), the record's other fields as JSON, and the connection
//!   fields as columns of their own.
//!
//! Check-then-write sequences (a taken e-mail or server name or url, a live personal
//! URL, a pending login, a code's single use, a refresh token's rotation) run inside one `BEGIN IMMEDIATE`
//! transaction, which holds the file's write lock from the start, so they are atomic
//! across processes too; a conditional insert (a new client) is one statement.
//!
//! Presence is two `EXISTS` probes in one statement (one round trip, no summary row
//! to keep in step). Every statement is parameterised and prepared once per connection
//! (cached); batch writes are one transaction. The blocking SQLite calls run on tokio's
//! blocking pool, one connection per store behind a mutex; several processes coordinate
//! through WAL and a busy timeout.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::{
    AccountStore, Created, HealthStore, McpServerBody, McpServerParts, McpServerStore, OAuthStore,
    ReadingQuery, StoreError, StoreFuture, WriteReport,
};
use crate::domain::{
    Account, AuthCode, DataPresence, Genotype, LoginState, LoginStatus, McpServerRecord,
    McpServerWrite, OAuthClient, PersonalUrl, Reading, ReadingValue, RefreshRecord, RefreshUse,
    UrlGrant,
};

/// How long a statement waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection: room for every statement of this file
/// (34), so each is prepared once (rusqlite's default keeps 16, least recently used).
const STATEMENT_CACHE: usize = 64;

/// The schema version this code reads and writes (`PRAGMA user_version`).
/// 1: readings, genotypes. 2: adds accounts, shares, keys. 3: adds mcp_servers.
const SCHEMA_VERSION: i64 = 3;

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
    PRIMARY KEY (user, name),
    UNIQUE (user, url)
) WITHOUT ROWID;
";

const URL_PREFIX: &str = "url#";
const USER_URL_PREFIX: &str = "user-url#";
const STATE_PREFIX: &str = "state#";
const CLIENT_PREFIX: &str = "client#";
const CODE_PREFIX: &str = "code#";
const REFRESH_PREFIX: &str = "refresh#";
const FAMILY_PREFIX: &str = "family#";

/// A `url#` row's value (`expires_at` is the column).
#[derive(Serialize, Deserialize)]
struct GrantValue {
    user_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_name: Option<String>,
}

/// A `user-url#` row's value.
#[derive(Serialize, Deserialize)]
struct PersonalUrlValue {
    sealed_secret: String,
    secret_hash: String,
}

/// A `state#` row's value: `{"status":"pending"}` or
/// `{"status":"completed","sealed_token":…}`, as the DynamoDB attributes.
#[derive(Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
enum StateValue {
    Pending,
    Completed { sealed_token: String },
}

/// A `code#` row's value (`expires_at` is the column).
#[derive(Serialize, Deserialize)]
struct CodeValue {
    client_id: String,
    user_id: String,
    scope: String,
    redirect_uri: String,
    code_challenge: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
}

/// A `refresh#` row's value: the record and whether it has been used.
#[derive(Serialize, Deserialize)]
struct RefreshValue {
    user_id: String,
    client_id: String,
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
    family_id: String,
    used: bool,
}

impl RefreshValue {
    fn of(record: &RefreshRecord, used: bool) -> RefreshValue {
        RefreshValue {
            user_id: record.user_id.clone(),
            client_id: record.client_id.clone(),
            scope: record.scope.clone(),
            resource: record.resource.clone(),
            family_id: record.family_id.clone(),
            used,
        }
    }
}

/// A `family#` row's value: the family's tokens are revoked until `expires_at`.
#[derive(Serialize, Deserialize)]
struct FamilyValue {
    revoked: bool,
}

/// An `mcp_servers` row's columns after `user`: name, url, record, last_connected_at,
/// last_connect_error.
struct McpRow {
    name: String,
    url: String,
    record: String,
    last_connected_at: Option<i64>,
    last_connect_error: Option<String>,
}

impl McpRow {
    fn of(record: McpServerRecord) -> rusqlite::Result<McpRow> {
        let McpServerParts {
            name,
            url,
            body,
            last_connected_at,
            last_connect_error,
        } = McpServerParts::from(record);
        Ok(McpRow {
            name,
            url,
            record: json_column(&body)?,
            last_connected_at: last_connected_at.map(seconds_column).transpose()?,
            last_connect_error,
        })
    }
}

const MCP_COLUMNS: &str = "name, url, record, last_connected_at, last_connect_error";

fn presence_of(conn: &Connection, user: &str) -> rusqlite::Result<DataPresence> {
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

fn mcp_servers_of(conn: &Connection, user: &str) -> rusqlite::Result<Vec<McpServerRecord>> {
    // BINARY collation: UTF-8 byte order, as DynamoDB orders sort keys.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {MCP_COLUMNS} FROM mcp_servers WHERE user = ?1 ORDER BY name"
    ))?;
    let rows = stmt.query_map([user], mcp_from_row)?;
    rows.collect()
}

fn mcp_from_row(row: &Row<'_>) -> rusqlite::Result<McpServerRecord> {
    let body: McpServerBody = json_from_column(row, 2)?;
    let last_connected_at = match row.get_ref(3)? {
        rusqlite::types::ValueRef::Null => None,
        _ => Some(seconds_from_column(row, 3)?),
    };
    Ok(McpServerRecord::from(McpServerParts {
        name: row.get(0)?,
        url: row.get(1)?,
        body,
        last_connected_at,
        last_connect_error: row.get(4)?,
    }))
}

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

    /// Runs `work` on the blocking pool with the connection; a SQLite failure becomes
    /// the store error for `op` ([`sql_error`]).
    async fn run<T, F>(&self, op: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            // A panic elsewhere while holding the lock leaves no open transaction behind
            // (a dropped rusqlite transaction rolls back), so the connection is still good.
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            work(&mut conn).map_err(|e| sql_error(op, e))
        })
        .await
        .map_err(|_| StoreError::Unavailable(format!("{op}: worker task failed")))?
    }
}

/// Connection settings and schema. Safe to run from several processes at once.
fn prepare(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
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
    // older one (version 1 or 2) it adds the tables that version lacks.
    tx.execute_batch(SCHEMA)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// Epoch seconds as stored (SQLite integers are signed 64-bit).
fn seconds_column(seconds: u64) -> rusqlite::Result<i64> {
    i64::try_from(seconds).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// `now` for comparisons: past the column's range, everything stored has expired.
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

fn personal_url_row(row: &Row<'_>) -> rusqlite::Result<PersonalUrl> {
    let value: PersonalUrlValue = json_from_column(row, 0)?;
    Ok(PersonalUrl {
        sealed_secret: value.sealed_secret,
        secret_hash: value.secret_hash,
        expires_at: seconds_from_column(row, 1)?,
    })
}

/// The user's personal URL as stored, live or not.
fn personal_url_in(tx: &Transaction<'_>, user_key: &str) -> rusqlite::Result<Option<PersonalUrl>> {
    tx.prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
        .query_row([user_key], personal_url_row)
        .optional()
}

/// A `refresh#` row as stored (live or not): the record and its `used` flag.
fn refresh_in(tx: &Transaction<'_>, key: &str) -> rusqlite::Result<Option<(RefreshRecord, bool)>> {
    tx.prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
        .query_row([key], |row| {
            let value: RefreshValue = json_from_column(row, 0)?;
            let record = RefreshRecord {
                user_id: value.user_id,
                client_id: value.client_id,
                scope: value.scope,
                resource: value.resource,
                family_id: value.family_id,
                expires_at: seconds_from_column(row, 1)?,
            };
            Ok((record, value.used))
        })
        .optional()
}

fn account_from_row(row: &Row<'_>) -> rusqlite::Result<Account> {
    Ok(Account {
        user_id: row.get(0)?,
        email: row.get(1)?,
        password_hash: row.get(2)?,
        created_at: seconds_from_column(row, 3)?,
    })
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

impl AccountStore for EmbeddedStore {
    fn create_account<'a>(&'a self, account: &'a Account) -> StoreFuture<'a, Created> {
        let op = "create_account";
        let account = account.clone();
        Box::pin(async move {
            // `None`: the user id already has an account.
            let created = self
                .run(op, move |conn| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let (email_taken, id_taken): (bool, bool) = tx
                        .prepare_cached(
                            "SELECT EXISTS (SELECT 1 FROM accounts WHERE email = ?1), \
                                    EXISTS (SELECT 1 FROM accounts WHERE user_id = ?2)",
                        )?
                        .query_row(params![account.email, account.user_id], |row| {
                            Ok((row.get(0)?, row.get(1)?))
                        })?;
                    if email_taken {
                        return Ok(Some(Created::EmailTaken));
                    }
                    if id_taken {
                        return Ok(None);
                    }
                    tx.prepare_cached(
                        "INSERT INTO accounts (user_id, email, password_hash, created_at) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![
                        account.user_id,
                        account.email,
                        account.password_hash,
                        seconds_column(account.created_at)?
                    ])?;
                    tx.commit()?;
                    Ok(Some(Created::Created))
                })
                .await?;
            created.ok_or_else(|| {
                tracing::warn!(
                    operation = op,
                    "embedded store: user id already has an account"
                );
                StoreError::Unavailable(format!("{op}: user id already has an account"))
            })
        })
    }

    fn account_by_email<'a>(&'a self, email: &'a str) -> StoreFuture<'a, Option<Account>> {
        let email = email.to_string();
        Box::pin(self.run("account_by_email", move |conn| {
            conn.prepare_cached(
                "SELECT user_id, email, password_hash, created_at FROM accounts WHERE email = ?1",
            )
            .and_then(|mut stmt| stmt.query_row([&email], account_from_row).optional())
        }))
    }

    fn account<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Option<Account>> {
        let user_id = user_id.to_string();
        Box::pin(self.run("account", move |conn| {
            conn.prepare_cached(
                "SELECT user_id, email, password_hash, created_at FROM accounts WHERE user_id = ?1",
            )
            .and_then(|mut stmt| stmt.query_row([&user_id], account_from_row).optional())
        }))
    }

    fn put_share<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
        permissions: &'a [String],
    ) -> StoreFuture<'a, ()> {
        let owner = owner.to_string();
        let grantee = grantee.to_string();
        let permissions = permissions.to_vec();
        Box::pin(self.run("put_share", move |conn| {
            conn.prepare_cached(
                "INSERT INTO shares (owner, grantee, permissions) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (owner, grantee) DO UPDATE SET permissions = excluded.permissions",
            )?
            .execute(params![owner, grantee, json_column(&permissions)?])?;
            Ok(())
        }))
    }

    fn delete_share<'a>(&'a self, owner: &'a str, grantee: &'a str) -> StoreFuture<'a, ()> {
        let owner = owner.to_string();
        let grantee = grantee.to_string();
        Box::pin(self.run("delete_share", move |conn| {
            conn.prepare_cached("DELETE FROM shares WHERE owner = ?1 AND grantee = ?2")
                .and_then(|mut stmt| stmt.execute([&owner, &grantee]))
                .map(drop)
        }))
    }

    fn share<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
    ) -> StoreFuture<'a, Option<Vec<String>>> {
        let owner = owner.to_string();
        let grantee = grantee.to_string();
        Box::pin(self.run("share", move |conn| {
            conn.prepare_cached("SELECT permissions FROM shares WHERE owner = ?1 AND grantee = ?2")
                .and_then(|mut stmt| {
                    stmt.query_row([&owner, &grantee], |row| json_from_column(row, 0))
                        .optional()
                })
        }))
    }

    fn put_url_grant<'a>(
        &'a self,
        secret_hash: &'a str,
        grant: &'a UrlGrant,
    ) -> StoreFuture<'a, ()> {
        let key = format!("{URL_PREFIX}{secret_hash}");
        let grant = grant.clone();
        Box::pin(self.run("put_url_grant", move |conn| {
            let value = json_column(&GrantValue {
                user_id: grant.user_id,
                session_id: grant.session_id,
                agent_name: grant.agent_name,
            })?;
            put_key(conn, &key, &value, grant.expires_at)
        }))
    }

    fn url_grant<'a>(
        &'a self,
        secret_hash: &'a str,
        now: u64,
    ) -> StoreFuture<'a, Option<UrlGrant>> {
        let key = format!("{URL_PREFIX}{secret_hash}");
        Box::pin(self.run("url_grant", move |conn| {
            conn.prepare_cached(
                "SELECT value, expires_at FROM keys WHERE key = ?1 AND expires_at > ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![key, now_column(now)], |row| {
                    let value: GrantValue = json_from_column(row, 0)?;
                    Ok(UrlGrant {
                        user_id: value.user_id,
                        session_id: value.session_id,
                        agent_name: value.agent_name,
                        expires_at: seconds_from_column(row, 1)?,
                    })
                })
                .optional()
            })
        }))
    }

    fn claim_personal_url<'a>(
        &'a self,
        user_id: &'a str,
        candidate: &'a PersonalUrl,
        now: u64,
    ) -> StoreFuture<'a, PersonalUrl> {
        let op = "claim_personal_url";
        let user_id = user_id.to_string();
        let candidate = candidate.clone();
        Box::pin(self.run(op, move |conn| {
            let user_key = format!("{USER_URL_PREFIX}{user_id}");
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let current = personal_url_in(&tx, &user_key)?;
            if let Some(current) = current.as_ref().filter(|c| c.expires_at > now) {
                return Ok(current.clone());
            }
            // Absent or expired: the candidate replaces it, and the old secret's
            // grant goes with it.
            if let Some(old) = current.filter(|old| old.secret_hash != candidate.secret_hash) {
                tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?
                    .execute([format!("{URL_PREFIX}{}", old.secret_hash)])?;
            }
            let value = json_column(&PersonalUrlValue {
                sealed_secret: candidate.sealed_secret.clone(),
                secret_hash: candidate.secret_hash.clone(),
            })?;
            put_key(&tx, &user_key, &value, candidate.expires_at)?;
            let grant = json_column(&GrantValue {
                user_id: user_id.clone(),
                session_id: None,
                agent_name: None,
            })?;
            put_key(
                &tx,
                &format!("{URL_PREFIX}{}", candidate.secret_hash),
                &grant,
                candidate.expires_at,
            )?;
            tx.commit()?;
            Ok(candidate.clone())
        }))
    }

    fn revoke_personal_url<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, bool> {
        let op = "revoke_personal_url";
        let user_key = format!("{USER_URL_PREFIX}{user_id}");
        Box::pin(self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(current) = personal_url_in(&tx, &user_key)? else {
                return Ok(false);
            };
            {
                let mut delete = tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?;
                delete.execute([&user_key])?;
                delete.execute([format!("{URL_PREFIX}{}", current.secret_hash)])?;
            }
            tx.commit()?;
            Ok(true)
        }))
    }

    fn put_login_state<'a>(
        &'a self,
        state: &'a str,
        record: &'a LoginState,
    ) -> StoreFuture<'a, ()> {
        let key = format!("{STATE_PREFIX}{state}");
        let record = record.clone();
        Box::pin(self.run("put_login_state", move |conn| {
            let value = json_column(&match record.status {
                LoginStatus::Pending => StateValue::Pending,
                LoginStatus::Completed { sealed_token } => StateValue::Completed { sealed_token },
            })?;
            put_key(conn, &key, &value, record.expires_at)
        }))
    }

    fn login_state<'a>(&'a self, state: &'a str) -> StoreFuture<'a, Option<LoginState>> {
        let key = format!("{STATE_PREFIX}{state}");
        Box::pin(self.run("login_state", move |conn| {
            conn.prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([&key], |row| {
                        let status = match json_from_column(row, 0)? {
                            StateValue::Pending => LoginStatus::Pending,
                            StateValue::Completed { sealed_token } => {
                                LoginStatus::Completed { sealed_token }
                            }
                        };
                        Ok(LoginState {
                            status,
                            expires_at: seconds_from_column(row, 1)?,
                        })
                    })
                    .optional()
                })
        }))
    }

    fn complete_login_state<'a>(
        &'a self,
        state: &'a str,
        sealed_token: &'a str,
        now: u64,
    ) -> StoreFuture<'a, bool> {
        let op = "complete_login_state";
        let key = format!("{STATE_PREFIX}{state}");
        let sealed_token = sealed_token.to_string();
        Box::pin(self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let pending = tx
                .prepare_cached("SELECT value FROM keys WHERE key = ?1 AND expires_at > ?2")?
                .query_row(params![key, now_column(now)], |row| {
                    json_from_column::<StateValue>(row, 0)
                })
                .optional()?;
            if !matches!(pending, Some(StateValue::Pending)) {
                return Ok(false);
            }
            let value = json_column(&StateValue::Completed { sealed_token })?;
            tx.prepare_cached("UPDATE keys SET value = ?2 WHERE key = ?1")?
                .execute([&key, &value])?;
            tx.commit()?;
            Ok(true)
        }))
    }
}

impl OAuthStore for EmbeddedStore {
    fn put_client<'a>(&'a self, client: &'a OAuthClient) -> StoreFuture<'a, bool> {
        let op = "put_client";
        let key = format!("{CLIENT_PREFIX}{}", client.client_id);
        let client = client.clone();
        Box::pin(self.run(op, move |conn| {
            // One statement, so the check and the insert are one atomic step.
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO keys (key, value, expires_at) VALUES (?1, ?2, NULL) \
                     ON CONFLICT (key) DO NOTHING",
                )?
                .execute(params![key, json_column(&client)?])?;
            Ok(inserted == 1)
        }))
    }

    fn client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, Option<OAuthClient>> {
        let op = "client";
        let key = format!("{CLIENT_PREFIX}{client_id}");
        Box::pin(self.run(op, move |conn| {
            conn.prepare_cached("SELECT value FROM keys WHERE key = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([&key], |row| json_from_column(row, 0))
                        .optional()
                })
        }))
    }

    fn put_code<'a>(&'a self, code_hash: &'a str, code: &'a AuthCode) -> StoreFuture<'a, ()> {
        let op = "put_code";
        let key = format!("{CODE_PREFIX}{code_hash}");
        let code = code.clone();
        Box::pin(self.run(op, move |conn| {
            let value = json_column(&CodeValue {
                client_id: code.client_id,
                user_id: code.user_id,
                scope: code.scope,
                redirect_uri: code.redirect_uri,
                code_challenge: code.code_challenge,
                resource: code.resource,
            })?;
            put_key(conn, &key, &value, code.expires_at)
        }))
    }

    fn take_code<'a>(&'a self, code_hash: &'a str, now: u64) -> StoreFuture<'a, Option<AuthCode>> {
        let op = "take_code";
        let key = format!("{CODE_PREFIX}{code_hash}");
        Box::pin(self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(code) = tx
                .prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
                .query_row([&key], |row| {
                    let value: CodeValue = json_from_column(row, 0)?;
                    Ok(AuthCode {
                        client_id: value.client_id,
                        user_id: value.user_id,
                        scope: value.scope,
                        redirect_uri: value.redirect_uri,
                        code_challenge: value.code_challenge,
                        resource: value.resource,
                        expires_at: seconds_from_column(row, 1)?,
                    })
                })
                .optional()?
            else {
                return Ok(None);
            };
            // Deleted whether live or expired: a code is never read twice.
            tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?
                .execute([&key])?;
            tx.commit()?;
            Ok((code.expires_at > now).then_some(code))
        }))
    }

    fn put_refresh<'a>(
        &'a self,
        token_hash: &'a str,
        record: &'a RefreshRecord,
    ) -> StoreFuture<'a, ()> {
        let op = "put_refresh";
        let key = format!("{REFRESH_PREFIX}{token_hash}");
        let value = RefreshValue::of(record, false);
        let expires_at = record.expires_at;
        Box::pin(self.run(op, move |conn| {
            put_key(conn, &key, &json_column(&value)?, expires_at)
        }))
    }

    fn use_refresh<'a>(&'a self, token_hash: &'a str, now: u64) -> StoreFuture<'a, RefreshUse> {
        let op = "use_refresh";
        let key = format!("{REFRESH_PREFIX}{token_hash}");
        Box::pin(self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some((record, used)) = refresh_in(&tx, &key)? else {
                return Ok(RefreshUse::Unknown);
            };
            if record.expires_at <= now {
                return Ok(RefreshUse::Unknown);
            }
            if used {
                return Ok(RefreshUse::Reused(record));
            }
            let revoked = tx
                .prepare_cached("SELECT value FROM keys WHERE key = ?1 AND expires_at > ?2")?
                .query_row(
                    params![
                        format!("{FAMILY_PREFIX}{}", record.family_id),
                        now_column(now)
                    ],
                    |row| json_from_column::<FamilyValue>(row, 0),
                )
                .optional()?
                .is_some_and(|family| family.revoked);
            // Marked used either way (as the DynamoDB store does): a token of a revoked
            // family stays dead even after the revocation marker expires.
            let value = json_column(&RefreshValue::of(&record, true))?;
            tx.prepare_cached("UPDATE keys SET value = ?2 WHERE key = ?1")?
                .execute([&key, &value])?;
            tx.commit()?;
            Ok(if revoked {
                RefreshUse::Reused(record)
            } else {
                RefreshUse::Fresh(record)
            })
        }))
    }

    fn revoke_refresh_family<'a>(
        &'a self,
        family_id: &'a str,
        expires_at: u64,
    ) -> StoreFuture<'a, ()> {
        let op = "revoke_refresh_family";
        let key = format!("{FAMILY_PREFIX}{family_id}");
        Box::pin(self.run(op, move |conn| {
            // A family already revoked until later stays revoked until then.
            conn.prepare_cached(
                "INSERT INTO keys (key, value, expires_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, \
                   expires_at = max(coalesce(expires_at, 0), excluded.expires_at)",
            )?
            .execute(params![
                key,
                json_column(&FamilyValue { revoked: true })?,
                seconds_column(expires_at)?
            ])?;
            Ok(())
        }))
    }
}

impl McpServerStore for EmbeddedStore {
    fn mcp_servers<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Vec<McpServerRecord>> {
        let user = user.to_string();
        Box::pin(self.run("mcp_servers", move |conn| mcp_servers_of(conn, &user)))
    }

    fn presence_and_mcp_servers<'a>(
        &'a self,
        user: &'a str,
    ) -> StoreFuture<'a, (DataPresence, Vec<McpServerRecord>)> {
        let user = user.to_string();
        Box::pin(self.run("presence_and_mcp_servers", move |conn| {
            Ok((presence_of(conn, &user)?, mcp_servers_of(conn, &user)?))
        }))
    }

    fn mcp_server<'a>(
        &'a self,
        user: &'a str,
        name: &'a str,
    ) -> StoreFuture<'a, Option<McpServerRecord>> {
        let op = "mcp_server";
        let user = user.to_string();
        let name = name.to_string();
        Box::pin(self.run(op, move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {MCP_COLUMNS} FROM mcp_servers WHERE user = ?1 AND name = ?2"
            ))
            .and_then(|mut stmt| stmt.query_row([&user, &name], mcp_from_row).optional())
        }))
    }

    fn create_mcp_server<'a>(
        &'a self,
        user: &'a str,
        record: &'a McpServerRecord,
    ) -> StoreFuture<'a, McpServerWrite> {
        let op = "create_mcp_server";
        let user = user.to_string();
        let record = record.clone();
        Box::pin(self.run(op, move |conn| {
            let row = McpRow::of(record)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let (name_taken, url_taken): (bool, bool) = tx
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM mcp_servers WHERE user = ?1 AND name = ?2), \
                            EXISTS (SELECT 1 FROM mcp_servers WHERE user = ?1 AND url = ?3)",
                )?
                .query_row(params![user, row.name, row.url], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            // Both taken (the same server again) reads as the name, as in DynamoDB.
            if name_taken {
                return Ok(McpServerWrite::NameTaken);
            }
            if url_taken {
                return Ok(McpServerWrite::UrlTaken);
            }
            tx.prepare_cached(&format!(
                "INSERT INTO mcp_servers (user, {MCP_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            ))?
            .execute(params![
                user,
                row.name,
                row.url,
                row.record,
                row.last_connected_at,
                row.last_connect_error
            ])?;
            tx.commit()?;
            Ok(McpServerWrite::Written)
        }))
    }

    fn replace_mcp_server<'a>(
        &'a self,
        user: &'a str,
        record: &'a McpServerRecord,
    ) -> StoreFuture<'a, McpServerWrite> {
        let op = "replace_mcp_server";
        let user = user.to_string();
        let record = record.clone();
        Box::pin(self.run(op, move |conn| {
            let row = McpRow::of(record)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let stored: Option<String> = tx
                .prepare_cached("SELECT url FROM mcp_servers WHERE user = ?1 AND name = ?2")?
                .query_row([&user, &row.name], |r| r.get(0))
                .optional()?;
            match stored {
                None => return Ok(McpServerWrite::Missing),
                Some(url) if url != row.url => return Ok(McpServerWrite::UrlChanged),
                Some(_) => {}
            }
            tx.prepare_cached(
                "UPDATE mcp_servers SET record = ?3, last_connected_at = ?4, \
                   last_connect_error = ?5 WHERE user = ?1 AND name = ?2",
            )?
            .execute(params![
                user,
                row.name,
                row.record,
                row.last_connected_at,
                row.last_connect_error
            ])?;
            tx.commit()?;
            Ok(McpServerWrite::Written)
        }))
    }

    fn record_mcp_connection<'a>(
        &'a self,
        user: &'a str,
        name: &'a str,
        at: u64,
        error: Option<&'a str>,
    ) -> StoreFuture<'a, ()> {
        let op = "record_mcp_connection";
        let user = user.to_string();
        let name = name.to_string();
        let error = error.map(str::to_string);
        Box::pin(self.run(op, move |conn| {
            // One UPDATE: it touches only these columns, and an absent row stays absent.
            match error {
                None => conn
                    .prepare_cached(
                        "UPDATE mcp_servers SET last_connected_at = ?3, \
                           last_connect_error = NULL WHERE user = ?1 AND name = ?2",
                    )?
                    .execute(params![user, name, seconds_column(at)?])?,
                Some(error) => conn
                    .prepare_cached(
                        "UPDATE mcp_servers SET last_connect_error = ?3 \
                         WHERE user = ?1 AND name = ?2",
                    )?
                    .execute(params![user, name, error])?,
            };
            Ok(())
        }))
    }

    fn delete_mcp_server<'a>(&'a self, user: &'a str, name: &'a str) -> StoreFuture<'a, bool> {
        let op = "delete_mcp_server";
        let user = user.to_string();
        let name = name.to_string();
        Box::pin(self.run(op, move |conn| {
            // The url's uniqueness is the row's own: deleting the row frees it.
            conn.prepare_cached("DELETE FROM mcp_servers WHERE user = ?1 AND name = ?2")
                .and_then(|mut stmt| stmt.execute([&user, &name]))
                .map(|deleted| deleted == 1)
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
            auth: crate::domain::McpAuth::None,
            sealed_credential: None,
            enabled: true,
            order: 0,
            allowed_tools: None,
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
}
