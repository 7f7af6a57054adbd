//! Upload records: one per file a user sends, polled by its owner while
//! the import runs.
//!
//! Owns the [`UploadStore`] trait. Starting an import is a conditional change from
//! `waiting` to `importing`, so a duplicate notification (S3 delivers events at least
//! once) never imports a file twice. Records expire: every read checks `expires_at`.
//! Never logs a user id, a file name or an object key.

use super::StoreError;
use crate::domain::ReadingCounts;
use crate::domain::{UploadFailure, UploadRecord};
use async_trait::async_trait;

/// The most records [`UploadStore::recent_uploads`] returns.
pub const MAX_LISTED_UPLOADS: usize = 50;

/// How an import ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadOutcome {
    /// Finished; a readings import says what it did to the store.
    Done(Option<ReadingCounts>),
    Failed(UploadFailure),
}

/// Upload records, kept per user and found by their object key.
#[async_trait]
pub trait UploadStore: Send + Sync {
    /// Stores a new record (a fresh id: never overwrites another's).
    async fn create_upload(&self, record: &UploadRecord) -> Result<(), StoreError>;

    /// The user's upload `id`; `None` when absent, expired or someone else's.
    async fn upload(
        &self,
        user: &str,
        id: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError>;

    /// The upload whose file is `object_key` (what an S3 event names); `None` when
    /// absent or expired.
    async fn upload_by_object(
        &self,
        object_key: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError>;

    /// The user's unexpired uploads, newest first, at most `limit` (capped at
    /// [`MAX_LISTED_UPLOADS`]).
    async fn recent_uploads(
        &self,
        user: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<UploadRecord>, StoreError>;

    /// `waiting` -> `importing` with the file's size, active at `now`: `true` for
    /// exactly one caller; `false` when the upload is absent or already started.
    async fn start_upload(
        &self,
        user: &str,
        id: &str,
        bytes: u64,
        now: u64,
    ) -> Result<bool, StoreError>;

    /// Records how far an import got, and that it was active at `now`.
    async fn upload_progress(
        &self,
        user: &str,
        id: &str,
        rows_read: u64,
        rows_written: u64,
        progress: f64,
        now: u64,
    ) -> Result<(), StoreError>;

    /// `importing` -> `failed` with `failure`, when the import was last active before
    /// `silent_since` (its process was killed). `true` when this call failed
    /// it; `false` when it is not importing or reported since.
    async fn fail_stalled_upload(
        &self,
        user: &str,
        id: &str,
        silent_since: u64,
        failure: &UploadFailure,
        now: u64,
    ) -> Result<bool, StoreError>;

    /// Ends an import still `importing`: `done` (progress 1.0) or `failed` with its
    /// error. An upload already failed as stalled stays as it is.
    async fn finish_upload(
        &self,
        user: &str,
        id: &str,
        outcome: &UploadOutcome,
        finished_at: u64,
    ) -> Result<(), StoreError>;

    /// Deletes every upload record of the user (expired or not) and the pointers from
    /// their files to them (delete all data); the files themselves are the
    /// caller's to delete.
    async fn delete_uploads(&self, user: &str) -> Result<(), StoreError>;
}
