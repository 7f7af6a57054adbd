//! The uploads API (issue 14): `POST /api/data/uploads` (an upload record and where to
//! PUT the file), `GET /api/data/uploads/{id}` (its status, owner only),
//! `GET /api/data/uploads` (the caller's recent ones), and the local server's
//! `PUT /api/data/objects/{key}` that stores the file and starts its import.
//!
//! Answers in the data API's envelope (`{"code": 0, "msg": "ok", "data": …}`). Never
//! logs a user id, a file name, an object key or a URL.

use std::sync::Arc;

use bytes::Bytes;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Importer;
use crate::account_api;
use crate::clock::Clock;
use crate::domain::{UploadKind, UploadRecord, UploadStatus};
use crate::http::ApiError;
use crate::identity::Caller;
use crate::store::{BodyChunks, Received, Store, StoreError, UploadObjects};

/// How long the PUT URL stays valid.
const PUT_LIFETIME: u64 = 3600;
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
}

#[derive(Deserialize)]
struct NewUpload {
    kind: String,
    #[serde(default)]
    filename: Option<String>,
}

fn refused(status: StatusCode, msg: &'static str) -> ApiError {
    ApiError::refused(status, msg)
}

fn store_failed(error: StoreError) -> ApiError {
    tracing::warn!(%error, "uploads API store failure");
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        "storage is unavailable; try again shortly",
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
        "created_at": record.created_at,
        "finished_at": record.finished_at,
    })
}

impl UploadsApi {
    pub(crate) async fn create(
        &self,
        caller: &Caller,
        body: &[u8],
    ) -> Result<http::Response<Bytes>, ApiError> {
        let request: NewUpload = serde_json::from_slice(body).map_err(|_| {
            refused(
                StatusCode::BAD_REQUEST,
                "expected {\"kind\": \"health\" | \"genotype\" | \"apple_health\", \"filename\": …}",
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
        let now = self.clock.now();
        let id = new_id(now);
        let object_key = format!("uploads/{id}");
        let record = UploadRecord::waiting(
            id.clone(),
            caller.user_id.clone(),
            kind,
            filename,
            object_key.clone(),
            now,
            now.saturating_add(RECORD_LIFETIME),
        );
        self.store
            .create_upload(&record)
            .await
            .map_err(store_failed)?;
        let target = self
            .objects
            .put_target(&object_key, now.saturating_add(PUT_LIFETIME))
            .await
            .map_err(store_failed)?;
        let headers: serde_json::Map<String, Value> = target
            .headers
            .into_iter()
            .map(|(name, value)| (name, Value::String(value)))
            .collect();
        Ok(account_api::ok(
            StatusCode::CREATED,
            json!({
                "id": id,
                "upload_url": target.url,
                "method": "PUT",
                "headers": headers,
                "expires_at": target.expires_at,
            }),
        ))
    }

    pub(crate) async fn get(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<http::Response<Bytes>, ApiError> {
        if !plausible_id(id) {
            return Err(not_found());
        }
        let record = self
            .store
            .upload(&caller.user_id, id, self.clock.now())
            .await
            .map_err(store_failed)?
            .ok_or_else(not_found)?;
        Ok(account_api::ok(StatusCode::OK, record_json(&record)))
    }

    pub(crate) async fn list(&self, caller: &Caller) -> Result<http::Response<Bytes>, ApiError> {
        let records = self
            .store
            .recent_uploads(&caller.user_id, LISTED, self.clock.now())
            .await
            .map_err(store_failed)?;
        let uploads: Vec<Value> = records.iter().map(record_json).collect();
        Ok(account_api::ok(
            StatusCode::OK,
            json!({ "uploads": uploads }),
        ))
    }

    /// The local PUT: the URL's capability first (nothing is read before it holds),
    /// then the body streamed to the object, then the import as a background task.
    pub(crate) async fn receive(
        &self,
        key: &str,
        query: &str,
        body: BodyChunks,
        max_bytes: u64,
    ) -> Result<http::Response<Bytes>, ApiError> {
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
            .map_err(store_failed)?
            .ok_or_else(forbidden)?;
        if record.status != UploadStatus::Waiting {
            return Err(refused(
                StatusCode::CONFLICT,
                "this upload already has its file; create a new upload to send another",
            ));
        }
        match self
            .objects
            .receive(key, query, now, body, max_bytes)
            .await
            .map_err(store_failed)?
        {
            Received::Stored { size } => {
                let importer = self.importer.clone();
                let key = key.to_string();
                tokio::spawn(async move {
                    if let Err(error) = importer.import_object(&key).await {
                        tracing::warn!(%error, "background import did not run");
                    }
                });
                Ok(account_api::ok(
                    StatusCode::OK,
                    json!({ "id": record.id, "bytes": size, "status": "importing" }),
                ))
            }
            Received::Refused => Err(forbidden()),
            Received::TooLarge => Err(ApiError::body_too_large(
                usize::try_from(max_bytes).unwrap_or(usize::MAX),
            )),
            Received::Incomplete => Err(refused(
                StatusCode::BAD_REQUEST,
                "the file did not arrive completely; send it again",
            )),
        }
    }
}
