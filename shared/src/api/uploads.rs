//! The uploads API: `POST /api/data/uploads` (an upload record and where to
//! PUT the file: for 15 minutes, and of exactly the `size` the request states, if it
//! states one, within its kind's cap), `GET /api/data/uploads/{id}` (its status, owner only),
//! `GET /api/data/uploads` (the caller's recent ones), and the local server's
//! `PUT /api/data/objects/{key}` that stores the file and starts its import.
//!
//! Handlers answer `Success` in the REST envelope (`{"code": 0, "msg": "ok", "data":
//! …}`); the typed cores beside them are the console's too. Never
//! logs a user id, a file name, an object key or a URL.

use std::sync::Arc;

use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clock::Clock;
use crate::domain::{UploadFailure, UploadKind, UploadRecord, UploadStatus};
use crate::http::{ApiError, Success};
use crate::identity::Caller;
use crate::imports::Importer;
use crate::store::{BodyChunks, PutTarget, Received, Store, UploadObjects};

/// How long the PUT URL stays valid (to start the PUT: S3 and the local server check
/// the expiry when the request arrives, so a slow transfer may run on).
/// Short, so a leaked or replayed URL soon lapses.
const PUT_LIFETIME: u64 = 15 * 60;
/// How long an upload record is kept.
const RECORD_LIFETIME: u64 = 30 * 24 * 3600;
/// How many uploads `GET /api/data/uploads` lists.
const LISTED: usize = 20;
/// The longest file name kept, in UTF-8 bytes.
const MAX_FILENAME: usize = 255;

pub(crate) struct UploadsApi {
    pub store: Arc<dyn Store>,
    pub objects: Arc<dyn UploadObjects>,
    pub clock: Arc<dyn Clock>,
    pub importer: Arc<Importer>,
    /// An import silent this long was stopped: see [`UploadsApi::settled`].
    pub stall_secs: u64,
}

#[derive(Deserialize)]
struct NewUploadBody {
    kind: String,
    #[serde(default)]
    filename: Option<String>,
    /// The file's size in bytes, if the client knows it: the PUT then takes exactly
    /// that many bytes.
    #[serde(default)]
    size: Option<u64>,
}

/// A `POST /api/data/uploads` body (also the console's), checked.
pub(crate) struct NewUpload {
    pub kind: UploadKind,
    pub filename: String,
    /// The size the PUT must have, if the client stated one (within [`max_size`]).
    pub size: Option<u64>,
}

/// The largest file a kind's upload may state: what its import
/// reads at most (readings 4 GiB and a genotype file 128 MiB decompressed, so at most
/// that compressed), and for an Apple Health export S3's largest single PUT (5 GiB).
pub(crate) fn max_size(kind: UploadKind) -> u64 {
    match kind {
        UploadKind::Health => 4 << 30,
        UploadKind::Genotype => crate::upload::MAX_GENOTYPE_FILE,
        UploadKind::AppleHealth => 5 << 30,
    }
}

fn refused(status: StatusCode, msg: &'static str) -> ApiError {
    ApiError::refused(status, msg)
}

fn already_sent() -> ApiError {
    refused(
        StatusCode::CONFLICT,
        "this upload already has its file; create a new upload to send another",
    )
}

fn not_found() -> ApiError {
    refused(StatusCode::NOT_FOUND, "no such upload")
}

/// A random, time-ordered id: 10 hex digits of the creation time, 16 random.
fn new_id(now: u64) -> String {
    let random = crate::identity::random_bytes::<8>();
    let random: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("{:010x}{random}", now.min(0xff_ffff_ffff))
}

/// An id as [`new_id`] makes them (anything else cannot exist, so is 404 unread).
fn plausible_id(id: &str) -> bool {
    id.len() == 26 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn record_json(record: &UploadRecord) -> Value {
    json!({
        "id": record.id,
        "kind": record.kind.as_str(),
        "filename": record.filename,
        "status": record.status.as_str(),
        "bytes": record.bytes,
        "rows_read": record.rows_read,
        "rows_written": record.rows_written,
        "progress": record.progress,
        "error": record.error.as_ref().map(|e| json!({ "line": e.line, "message": e.message })),
        // What the import did to the store: new readings, ones already there
        // with the same value, ones that replaced another value, repeats merged in the file.
        "readings": record.counts.map(|c| json!({
            "new": c.new,
            "already_there": c.unchanged,
            "replaced": c.replaced,
            "merged_in_file": c.merged,
        })),
        "created_at": record.created_at,
        "finished_at": record.finished_at,
    })
}

/// A new upload: its id and where its file goes.
pub(crate) struct CreatedUpload {
    pub id: String,
    pub target: PutTarget,
}

/// The kind, file name and size of a `POST /api/data/uploads` body (also the console's).
pub(crate) fn parse_new_upload(body: &[u8]) -> Result<NewUpload, ApiError> {
    let request: NewUploadBody = serde_json::from_slice(body).map_err(|_| {
        refused(
            StatusCode::BAD_REQUEST,
            "expected {\"kind\": \"health\" | \"genotype\" | \"apple_health\", \"filename\": …, \"size\": bytes (optional)}",
        )
    })?;
    let kind = UploadKind::parse(&request.kind).ok_or_else(|| {
        refused(
            StatusCode::BAD_REQUEST,
            "kind must be health, genotype or apple_health",
        )
    })?;
    let filename = request.filename.unwrap_or_default();
    if filename.len() > MAX_FILENAME || filename.chars().any(char::is_control) {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            "filename must be at most 255 bytes without control characters",
        ));
    }
    if let Some(size) = request.size {
        if size == 0 {
            return Err(refused(
                StatusCode::BAD_REQUEST,
                "size must be at least 1 byte",
            ));
        }
        if size > max_size(kind) {
            return Err(refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                match kind {
                    UploadKind::Health => "a readings file may be at most 4 GiB",
                    UploadKind::Genotype => "a genotype file may be at most 128 MiB",
                    UploadKind::AppleHealth => "an Apple Health export may be at most 5 GiB",
                },
            ));
        }
    }
    Ok(NewUpload {
        kind,
        filename,
        size: request.size,
    })
}

/// The answer to a created upload (`201`, the REST envelope).
pub(crate) fn created_response(created: CreatedUpload) -> Success {
    let headers: serde_json::Map<String, Value> = created
        .target
        .headers
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
    Success::created(json!({
        "id": created.id,
        "upload_url": created.target.url,
        "method": "PUT",
        "headers": headers,
        "expires_at": created.target.expires_at,
    }))
}

/// The answer to an upload's status (`200`, the REST envelope).
pub(crate) fn record_response(record: &UploadRecord) -> Success {
    Success::ok(record_json(record))
}

impl UploadsApi {
    /// `POST /api/data/uploads`.
    pub(crate) async fn create(&self, caller: &Caller, body: &[u8]) -> Result<Success, ApiError> {
        let upload = parse_new_upload(body)?;
        let created = self.new_upload(&caller.user_id, upload).await?;
        Ok(created_response(created))
    }

    /// The typed core of creating an upload (the JSON API and the console): the
    /// record, waiting for its file, and where to PUT it (of the stated size, if any).
    pub(crate) async fn new_upload(
        &self,
        user_id: &str,
        upload: NewUpload,
    ) -> Result<CreatedUpload, ApiError> {
        let NewUpload {
            kind,
            filename,
            size,
        } = upload;
        let now = self.clock.now();
        let id = new_id(now);
        let object_key = format!("uploads/{id}");
        let record = UploadRecord::waiting(
            id.clone(),
            user_id.to_string(),
            kind,
            filename,
            object_key.clone(),
            now,
            now.saturating_add(RECORD_LIFETIME),
        );
        self.store
            .create_upload(&record)
            .await
            .map_err(ApiError::from)?;
        let target = self
            .objects
            .put_target(&object_key, now.saturating_add(PUT_LIFETIME), size)
            .await
            .map_err(ApiError::from)?;
        Ok(CreatedUpload { id, target })
    }

    /// `GET /api/data/uploads/{id}`.
    pub(crate) async fn get(&self, caller: &Caller, id: &str) -> Result<Success, ApiError> {
        let record = self.upload_record(&caller.user_id, id).await?;
        Ok(record_response(&record))
    }

    /// The typed core of reading one upload: the owner's record, else 404 (another
    /// user's id reads exactly as one that never existed).
    pub(crate) async fn upload_record(
        &self,
        user_id: &str,
        id: &str,
    ) -> Result<UploadRecord, ApiError> {
        if !plausible_id(id) {
            return Err(not_found());
        }
        let record = self
            .store
            .upload(user_id, id, self.clock.now())
            .await
            .map_err(ApiError::from)?
            .ok_or_else(not_found)?;
        self.settled(record).await
    }

    /// The record as it stands: an import that stopped reporting (its process was
    /// killed: the local server stopped, or the import function ran out of time or
    /// memory) is failed now, so nobody waits on it for ever. What it wrote
    /// stays, consistent; uploading the file again completes it without duplicates.
    async fn settled(&self, mut record: UploadRecord) -> Result<UploadRecord, ApiError> {
        let now = self.clock.now();
        let silent_since = now.saturating_sub(self.stall_secs);
        let active = record.active_at.unwrap_or(record.created_at);
        if record.status != UploadStatus::Importing || active >= silent_since {
            return Ok(record);
        }
        let failure = UploadFailure {
            line: None,
            message: format!(
                "the import stopped: nothing was heard from it for {} seconds (the server \
                 was stopped or ran out of time); what it wrote is kept and upload the file \
                 again to complete it (rows are never duplicated)",
                self.stall_secs
            ),
        };
        let failed = self
            .store
            .fail_stalled_upload(&record.user, &record.id, silent_since, &failure, now)
            .await
            .map_err(ApiError::from)?;
        if failed {
            tracing::info!(kind = record.kind.as_str(), "import stalled: failed");
            // Its file is nobody's now (best effort: an object left expires anyway).
            if let Err(error) = self.objects.remove(&record.object_key).await {
                tracing::warn!(%error, "stalled import: file not removed");
            }
            record.status = UploadStatus::Failed;
            record.error = Some(failure);
            record.finished_at = Some(now);
            return Ok(record);
        }
        // It reported, or ended, meanwhile: as it is now.
        self.store
            .upload(&record.user, &record.id, now)
            .await
            .map_err(ApiError::from)?
            .ok_or_else(not_found)
    }

    /// `GET /api/data/uploads`.
    pub(crate) async fn list(&self, caller: &Caller) -> Result<Success, ApiError> {
        let records = self.recent(&caller.user_id).await?;
        let uploads: Vec<Value> = records.iter().map(record_json).collect();
        Ok(Success::ok(json!({ "uploads": uploads })))
    }

    /// The typed core of listing: the user's recent uploads, newest first.
    pub(crate) async fn recent(&self, user_id: &str) -> Result<Vec<UploadRecord>, ApiError> {
        let records = self
            .store
            .recent_uploads(user_id, LISTED, self.clock.now())
            .await
            .map_err(ApiError::from)?;
        let mut settled = Vec::with_capacity(records.len());
        for record in records {
            settled.push(self.settled(record).await?);
        }
        Ok(settled)
    }

    /// The local PUT: the URL's capability first (nothing is read before it holds),
    /// then the body streamed to the object, then the import as a background task.
    pub(crate) async fn receive(
        &self,
        key: &str,
        query: &str,
        body: BodyChunks,
        max_bytes: u64,
    ) -> Result<Success, ApiError> {
        let now = self.clock.now();
        let forbidden = || {
            refused(
                StatusCode::FORBIDDEN,
                "the upload URL is invalid or has expired",
            )
        };
        let record = self
            .store
            .upload_by_object(key, now)
            .await
            .map_err(ApiError::from)?
            .ok_or_else(forbidden)?;
        if record.status != UploadStatus::Waiting {
            return Err(already_sent());
        }
        match self
            .objects
            .receive(key, query, now, body, max_bytes)
            .await
            .map_err(ApiError::from)?
        {
            Received::Stored { size } => {
                let importer = self.importer.clone();
                let key = key.to_string();
                tokio::spawn(async move {
                    if let Err(error) = importer.import_object(&key).await {
                        tracing::warn!(%error, "background import did not run");
                    }
                });
                Ok(Success::ok(
                    json!({ "id": record.id, "bytes": size, "status": "importing" }),
                ))
            }
            Received::Refused => Err(forbidden()),
            Received::TooLarge { limit } => Err(ApiError::body_too_large(
                usize::try_from(limit).unwrap_or(usize::MAX),
            )),
            Received::Incomplete => Err(refused(
                StatusCode::BAD_REQUEST,
                "the file did not arrive completely (or not at the size stated); send it again",
            )),
            Received::Exists => Err(already_sent()),
        }
    }
}
