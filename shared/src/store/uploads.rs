//! Upload records: one per file a user sends, polled by its owner while
//! the import runs.
//!
//! Owns the [`UploadStore`] trait. Starting an import is a conditional change from
//! `waiting` to `importing`, so a duplicate notification (S3 delivers events at least
//! once) never imports a file twice. Records expire: every read checks `expires_at`.
//! Never logs a user id, a file name or an object key.

use super::StoreFuture;
use crate::domain::ReadingCounts;
use crate::domain::{UploadFailure, UploadRecord};

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
pub trait UploadStore: Send + Sync {
    /// Stores a new record (a fresh id: never overwrites another's).
    fn create_upload<'a>(&'a self, record: &'a UploadRecord) -> StoreFuture<'a, ()>;

    /// The user's upload `id`; `None` when absent, expired or someone else's.
    fn upload<'a>(
        &'a self,
        user: &'a str,
        id: &'a str,
        now: u64,
    ) -> StoreFuture<'a, Option<UploadRecord>>;

    /// The upload whose file is `object_key` (what an S3 event names); `None` when
    /// absent or expired.
    fn upload_by_object<'a>(
        &'a self,
        object_key: &'a str,
        now: u64,
    ) -> StoreFuture<'a, Option<UploadRecord>>;

    /// The user's unexpired uploads, newest first, at most `limit` (capped at
    /// [`MAX_LISTED_UPLOADS`]).
    fn recent_uploads<'a>(
        &'a self,
        user: &'a str,
        limit: usize,
        now: u64,
    ) -> StoreFuture<'a, Vec<UploadRecord>>;

    /// `waiting` -> `importing` with the file's size, active at `now`: `true` for
    /// exactly one caller; `false` when the upload is absent or already started.
    fn start_upload<'a>(
        &'a self,
        user: &'a str,
        id: &'a str,
        bytes: u64,
        now: u64,
    ) -> StoreFuture<'a, bool>;

    /// Records how far an import got, and that it was active at `now`.
    fn upload_progress<'a>(
        &'a self,
        user: &'a str,
        id: &'a str,
        rows_read: u64,
        rows_written: u64,
        progress: f64,
        now: u64,
    ) -> StoreFuture<'a, ()>;

    /// `importing` -> `failed` with `failure`, when the import was last active before
    /// `silent_since` (its process was killed). `true` when this call failed
    /// it; `false` when it is not importing or reported since.
    fn fail_stalled_upload<'a>(
        &'a self,
        user: &'a str,
        id: &'a str,
        silent_since: u64,
        failure: &'a UploadFailure,
        now: u64,
    ) -> StoreFuture<'a, bool>;

    /// Ends an import still `importing`: `done` (progress 1.0) or `failed` with its
    /// error. An upload already failed as stalled stays as it is.
    fn finish_upload<'a>(
        &'a self,
        user: &'a str,
        id: &'a str,
        outcome: &'a UploadOutcome,
        finished_at: u64,
    ) -> StoreFuture<'a, ()>;

    /// Deletes every upload record of the user (expired or not) and the pointers from
    /// their files to them (delete all data); the files themselves are the
    /// caller's to delete.
    fn delete_uploads<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()>;
}
