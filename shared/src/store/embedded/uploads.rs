//! [`UploadStore`] on SQLite: the `uploads` table (schema step 6), one row per upload,
//! the mutable fields as columns of their own so that starting an import is one
//! conditional `UPDATE`.
//!
//! Never logs a user id, a file name or an object key.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Row, params};

use super::{EmbeddedStore, now_column, seconds_column, seconds_from_column};
use crate::domain::{UploadFailure, UploadKind, UploadRecord, UploadStatus};
use crate::store::{MAX_LISTED_UPLOADS, StoreError, UploadOutcome, UploadStore};

/// Schema step 6: what this file adds (run on files below version 6).
pub(super) const SCHEMA_STEP_6: &str = "
CREATE TABLE IF NOT EXISTS uploads (
    id            TEXT NOT NULL PRIMARY KEY,
    user          TEXT NOT NULL,
    object_key    TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    filename      TEXT NOT NULL,
    status        TEXT NOT NULL,
    bytes         INTEGER NOT NULL,
    rows_read     INTEGER NOT NULL,
    rows_written  INTEGER NOT NULL,
    progress      REAL NOT NULL,
    error_line    INTEGER,
    error_message TEXT,
    counts        TEXT,
    created_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    expires_at    INTEGER NOT NULL,
    active_at     INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS uploads_by_user ON uploads (user, id);
";

const COLUMNS: &str = "id, user, object_key, kind, filename, status, bytes, rows_read, \
     rows_written, progress, error_line, error_message, created_at, finished_at, expires_at, counts, \
     active_at";

fn unreadable(index: usize) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(index, "upload".into(), rusqlite::types::Type::Text)
}

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<UploadRecord> {
    let kind: String = row.get(3)?;
    let status: String = row.get(5)?;
    let error_line: Option<i64> = row.get(10)?;
    let error_message: Option<String> = row.get(11)?;
    let finished_at: Option<i64> = row.get(13)?;
    Ok(UploadRecord {
        id: row.get(0)?,
        user: row.get(1)?,
        object_key: row.get(2)?,
        kind: UploadKind::parse(&kind).ok_or_else(|| unreadable(3))?,
        filename: row.get(4)?,
        status: UploadStatus::parse(&status).ok_or_else(|| unreadable(5))?,
        bytes: seconds_from_column(row, 6)?,
        rows_read: seconds_from_column(row, 7)?,
        rows_written: seconds_from_column(row, 8)?,
        progress: row.get(9)?,
        error: error_message.map(|message| UploadFailure {
            line: error_line.and_then(|line| u64::try_from(line).ok()),
            message,
        }),
        created_at: seconds_from_column(row, 12)?,
        finished_at: finished_at.and_then(|at| u64::try_from(at).ok()),
        expires_at: seconds_from_column(row, 14)?,
        counts: row
            .get::<_, Option<String>>(15)?
            .and_then(|text| serde_json::from_str(&text).ok()),
        active_at: row
            .get::<_, Option<i64>>(16)?
            .and_then(|at| u64::try_from(at).ok()),
    })
}

#[async_trait]
impl UploadStore for EmbeddedStore {
    async fn create_upload(&self, record: &UploadRecord) -> Result<(), StoreError> {
        let record = record.clone();
        self.run("create_upload", move |conn| {
            conn.prepare_cached(&format!(
                "INSERT INTO uploads ({COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
            ))?
            .execute(params![
                record.id,
                record.user,
                record.object_key,
                record.kind.as_str(),
                record.filename,
                record.status.as_str(),
                seconds_column(record.bytes)?,
                seconds_column(record.rows_read)?,
                seconds_column(record.rows_written)?,
                record.progress,
                record
                    .error
                    .as_ref()
                    .and_then(|e| e.line)
                    .map(seconds_column)
                    .transpose()?,
                record.error.as_ref().map(|e| e.message.clone()),
                seconds_column(record.created_at)?,
                record.finished_at.map(seconds_column).transpose()?,
                seconds_column(record.expires_at)?,
                record.counts.and_then(|c| serde_json::to_string(&c).ok()),
                record.active_at.map(seconds_column).transpose()?,
            ])?;
            Ok(())
        }).await
    }

    async fn upload(
        &self,
        user: &str,
        id: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError> {
        let (user, id) = (user.to_string(), id.to_string());
        self.run("upload", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM uploads WHERE id = ?1 AND user = ?2 AND expires_at > ?3"
            ))?
            .query_row(params![id, user, now_column(now)], record_from_row)
            .optional()
        })
        .await
    }

    async fn upload_by_object(
        &self,
        object_key: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError> {
        let key = object_key.to_string();
        self.run("upload_by_object", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM uploads WHERE object_key = ?1 AND expires_at > ?2"
            ))?
            .query_row(params![key, now_column(now)], record_from_row)
            .optional()
        })
        .await
    }

    async fn recent_uploads(
        &self,
        user: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<UploadRecord>, StoreError> {
        let user = user.to_string();
        let limit = limit.min(MAX_LISTED_UPLOADS) as i64;
        self.run("recent_uploads", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM uploads WHERE user = ?1 AND expires_at > ?2 \
                 ORDER BY id DESC LIMIT ?3"
            ))?
            .query_map(params![user, now_column(now), limit], record_from_row)?
            .collect()
        })
        .await
    }

    async fn start_upload(
        &self,
        user: &str,
        id: &str,
        bytes: u64,
        now: u64,
    ) -> Result<bool, StoreError> {
        let (user, id) = (user.to_string(), id.to_string());
        self.run("start_upload", move |conn| {
            // One statement: of two racing starts exactly one changes the row.
            let changed = conn
                .prepare_cached(
                    "UPDATE uploads SET status = 'importing', bytes = ?3, active_at = ?4 \
                     WHERE id = ?1 AND user = ?2 AND status = 'waiting'",
                )?
                .execute(params![id, user, seconds_column(bytes)?, now_column(now)])?;
            Ok(changed == 1)
        })
        .await
    }

    async fn upload_progress(
        &self,
        user: &str,
        id: &str,
        rows_read: u64,
        rows_written: u64,
        progress: f64,
        now: u64,
    ) -> Result<(), StoreError> {
        let (user, id) = (user.to_string(), id.to_string());
        self.run("upload_progress", move |conn| {
            conn.prepare_cached(
                "UPDATE uploads SET rows_read = ?3, rows_written = ?4, progress = ?5, \
                 active_at = ?6 WHERE id = ?1 AND user = ?2",
            )?
            .execute(params![
                id,
                user,
                seconds_column(rows_read)?,
                seconds_column(rows_written)?,
                progress.clamp(0.0, 1.0),
                now_column(now)
            ])?;
            Ok(())
        })
        .await
    }

    async fn fail_stalled_upload(
        &self,
        user: &str,
        id: &str,
        silent_since: u64,
        failure: &UploadFailure,
        now: u64,
    ) -> Result<bool, StoreError> {
        let (user, id, message) = (user.to_string(), id.to_string(), failure.message.clone());
        self.run("fail_stalled_upload", move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE uploads SET status = 'failed', error_line = NULL, error_message = ?3, \
                     finished_at = ?4 WHERE id = ?1 AND user = ?2 AND status = 'importing' \
                     AND (active_at IS NULL OR active_at < ?5)",
                )?
                .execute(params![
                    id,
                    user,
                    message,
                    now_column(now),
                    now_column(silent_since)
                ])?;
            Ok(changed == 1)
        })
        .await
    }

    async fn finish_upload(
        &self,
        user: &str,
        id: &str,
        outcome: &UploadOutcome,
        finished_at: u64,
    ) -> Result<(), StoreError> {
        let (user, id) = (user.to_string(), id.to_string());
        let (status, line, message, counts) = match outcome {
            UploadOutcome::Done(counts) => (
                UploadStatus::Done,
                None,
                None,
                counts.and_then(|c| serde_json::to_string(&c).ok()),
            ),
            UploadOutcome::Failed(failure) => (
                UploadStatus::Failed,
                failure.line,
                Some(failure.message.clone()),
                None,
            ),
        };
        self.run("finish_upload", move |conn| {
            conn.prepare_cached(
                "UPDATE uploads SET status = ?3, error_line = ?4, error_message = ?5, \
                 finished_at = ?6, progress = CASE WHEN ?3 = 'done' THEN 1.0 ELSE progress END, \
                 counts = ?7 WHERE id = ?1 AND user = ?2 AND status = 'importing'",
            )?
            .execute(params![
                id,
                user,
                status.as_str(),
                line.map(seconds_column).transpose()?,
                message,
                seconds_column(finished_at)?,
                counts,
            ])?;
            Ok(())
        })
        .await
    }

    async fn delete_uploads(&self, user: &str) -> Result<(), StoreError> {
        let user = user.to_string();
        self.run("delete_uploads", move |conn| {
            conn.prepare_cached("DELETE FROM uploads WHERE user = ?1")?
                .execute([user])?;
            Ok(())
        })
        .await
    }
}

/// Whether upload `upload` of `user` is still importing (read inside the caller's
/// transaction).
pub(super) fn still_importing(
    tx: &rusqlite::Connection,
    user: &str,
    upload: &str,
) -> rusqlite::Result<bool> {
    Ok(tx
        .prepare_cached(
            "SELECT 1 FROM uploads WHERE id = ?1 AND user = ?2 AND status = 'importing'",
        )?
        .query_row(params![upload, user], |_| Ok(()))
        .optional()?
        .is_some())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;

    /// A file at version 3 (before uploads) opens: schema step 6 adds the table, and
    /// what the file held stays.
    #[tokio::test]
    async fn a_version_3_file_gains_uploads() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!("mirobody-v3-{}-{nanos}", std::process::id()));
        let path = dir.join("db.sqlite3");
        drop(EmbeddedStore::open(&path).unwrap());
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "DROP TABLE uploads; PRAGMA user_version = 3; \
             INSERT INTO accounts (user_id, email, password_hash, created_at) \
             VALUES ('u1', 'u1@example.com', 'hash', 1);",
        )
        .unwrap();
        drop(old);

        let store = EmbeddedStore::open(&path).unwrap();
        let version: i64 = store
            .conn
            .lock()
            .unwrap()
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, super::super::SCHEMA_VERSION);
        let record = UploadRecord::waiting(
            "01".into(),
            "u1".into(),
            UploadKind::Genotype,
            "genome.txt".into(),
            "uploads/01".into(),
            10,
            100,
        );
        store.create_upload(&record).await.unwrap();
        assert_eq!(store.upload("u1", "01", 50).await.unwrap(), Some(record));
        let accounts: i64 = store
            .conn
            .lock()
            .unwrap()
            .query_row("SELECT COUNT(*) FROM accounts", [], |row| row.get(0))
            .unwrap();
        assert_eq!(accounts, 1, "version 3 data kept");
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }
}
