//! Uploads of whole files: what kind of file, where it waits, and how its
//! import went. The file itself waits in [`crate::store::UploadObjects`]; the record
//! is what its owner polls.
//!
//! Owns the states an upload passes through (`waiting` until the file arrives,
//! `importing` exactly once, then `done` or `failed`) and their wire names.

use serde::{Deserialize, Serialize};

/// What a file holds, and so how it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadKind {
    /// Readings as CSV or JSON (the formats of `POST /api/data/health`).
    Health,
    /// A 23andMe or AncestryDNA raw file.
    Genotype,
    /// An Apple Health export (`export.xml` or `export.zip`).
    AppleHealth,
}

impl UploadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UploadKind::Health => "health",
            UploadKind::Genotype => "genotype",
            UploadKind::AppleHealth => "apple_health",
        }
    }

    pub fn parse(text: &str) -> Option<UploadKind> {
        [
            UploadKind::Health,
            UploadKind::Genotype,
            UploadKind::AppleHealth,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == text)
    }
}

/// Where an upload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadStatus {
    /// Created; the file has not arrived (or its import has not started).
    Waiting,
    /// The import runs (entered exactly once).
    Importing,
    Done,
    Failed,
}

impl UploadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UploadStatus::Waiting => "waiting",
            UploadStatus::Importing => "importing",
            UploadStatus::Done => "done",
            UploadStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<UploadStatus> {
        [
            UploadStatus::Waiting,
            UploadStatus::Importing,
            UploadStatus::Done,
            UploadStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// Why an import failed: the file's line (CSV and raw files) when one is to blame, and
/// a message that names the field, never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadFailure {
    pub line: Option<u64>,
    pub message: String,
}

/// What a finished readings import did to the store, so "done" never hides
/// a loss: readings that were new, already there with the same value, replaced (the
/// store held another value for the same measure, time and source), and identical
/// repeats inside the file merged into one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadingCounts {
    pub new: u64,
    pub unchanged: u64,
    pub replaced: u64,
    pub merged: u64,
}

/// One upload of one file by its owner.
#[derive(Debug, Clone, PartialEq)]
pub struct UploadRecord {
    /// Random and time-ordered: sorts by creation.
    pub id: String,
    /// The owner: nobody else sees the upload.
    pub user: String,
    pub kind: UploadKind,
    /// As the client named it (bounded, shown back only to the owner).
    pub filename: String,
    /// Where the file waits ([`crate::store::UploadObjects`]).
    pub object_key: String,
    pub status: UploadStatus,
    /// The stored file's size, once it arrived.
    pub bytes: u64,
    pub rows_read: u64,
    pub rows_written: u64,
    /// 0.0 to 1.0.
    pub progress: f64,
    pub error: Option<UploadFailure>,
    /// A finished readings import's counts (`None` before the end, and for genomes).
    pub counts: Option<ReadingCounts>,
    pub created_at: u64,
    /// When the running import last reported (its start, then every progress report);
    /// an import silent for too long was stopped (its process killed) and is failed by
    /// the next read of its record. `None` before the import starts.
    pub active_at: Option<u64>,
    pub finished_at: Option<u64>,
    /// The record is gone (reads answer none) from this time on (epoch seconds).
    pub expires_at: u64,
}

impl UploadRecord {
    /// A new record, waiting for its file.
    pub fn waiting(
        id: String,
        user: String,
        kind: UploadKind,
        filename: String,
        object_key: String,
        created_at: u64,
        expires_at: u64,
    ) -> UploadRecord {
        UploadRecord {
            id,
            user,
            kind,
            filename,
            object_key,
            status: UploadStatus::Waiting,
            bytes: 0,
            rows_read: 0,
            rows_written: 0,
            counts: None,
            progress: 0.0,
            error: None,
            created_at,
            active_at: None,
            finished_at: None,
            expires_at,
        }
    }
}
