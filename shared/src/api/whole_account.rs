//! The whole account: export everything the product holds about a user as
//! one download, delete all of a user's data, delete the account.
//!
//! Owns the typed cores the console's account page and the JSON API (`GET
//! /api/user/export`, `DELETE /api/user`) both call, and the export's format. The
//! export never holds a secret: no password hash, no sealed credential, no URL secret
//! or its hash, no object key.
//!
//! The export is gzip-compressed JSON (`mirobody-export-<date>.json.gz`). An indicator
//! with one unit, source and code throughout says them once and each reading is
//! `[time, value]`. Three years of five-minute readings are ~630k rows, tens of MB as
//! JSON, more than a Lambda response may carry (6 MB); gzip takes it to a few MB. It is
//! built one indicator at a time straight into the compressor, so memory holds one
//! indicator's readings and the compressed output, never the whole JSON. An export larger
//! than a Lambda response (4 MiB of gzip) waits under `exports/` in the upload bucket and
//! is answered `303` to a presigned GET (`UploadObjects::put_download`).
//!
//! Deleting the account is the store's `delete_account_everything`: a token-state
//! tombstone first, so every credential is refused before anything else goes.

use std::io::Write;
use std::net::IpAddr;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::accounts::AccountApi;
use crate::api::uploads::UploadsApi;
use crate::clock::Clock;
use crate::domain::{McpAuth, UploadStatus, chromosome_name};
use crate::http::{ApiError, Success};
use crate::store::{ReadingQuery, Store, StoreError, UploadObjects};

/// The export's format name and version (the first field of the file).
pub(crate) const EXPORT_FORMAT: &str = "mirobody-export/1";

/// The most upload records looked at for files still waiting (the store keeps fewer).
const UPLOADS_LOOKED_AT: usize = crate::store::MAX_LISTED_UPLOADS;

/// Chromosome codes (1-25: 1-22, X, Y, MT).
const CHROMOSOME_CODES: std::ops::RangeInclusive<u8> = 1..=25;

/// What the account cores need, borrowed from whoever calls (the App or the console).
pub(crate) struct WholeAccount<'a> {
    pub store: &'a dyn Store,
    pub objects: &'a dyn UploadObjects,
    pub accounts: &'a AccountApi,
    pub clock: &'a dyn Clock,
}

impl<'a> WholeAccount<'a> {
    /// Over the uploads API's store and upload bucket.
    pub(crate) fn new(
        uploads: &'a UploadsApi,
        accounts: &'a AccountApi,
        clock: &'a dyn Clock,
    ) -> Self {
        WholeAccount {
            store: uploads.store.as_ref(),
            objects: uploads.objects.as_ref(),
            accounts,
            clock,
        }
    }
}

/// A built export: the file's name and its gzip bytes.
pub(crate) struct Export {
    pub filename: String,
    pub gzip: Vec<u8>,
}

/// The largest export answered in the response itself. A Lambda response carries at most
/// 6 MB, and a binary body goes base64-encoded (4/3 larger): 4 MiB becomes 5.6 MB.
pub(crate) const INLINE_EXPORT_MAX: usize = 4 * 1024 * 1024;
const _: () = assert!(INLINE_EXPORT_MAX.div_ceil(3) * 4 < 6_000_000);

/// How long the download URL of a larger export works.
const DOWNLOAD_SECS: u64 = 15 * 60;

/// The answer to an export request: the file itself when it fits in a response
/// (`inline_max`), else `303 See Other` to a short-lived signed download URL of the
/// file kept in the upload objects (S3 deployed; objects expire with the bucket's
/// one-day rule). Where the objects offer no download URL (the local directory, with no
/// response limit), the file itself.
pub(crate) async fn deliver(
    objects: &dyn UploadObjects,
    export: Export,
    now: u64,
    inline_max: usize,
) -> Result<Response<Bytes>, ApiError> {
    if export.gzip.len() <= inline_max {
        return Ok(export.into_response());
    }
    let key = format!("exports/{}", crate::identity::random_secret(24));
    let gzip = Bytes::from(export.gzip);
    match objects
        .put_download(&key, gzip.clone(), &export.filename, now + DOWNLOAD_SECS)
        .await?
    {
        Some(url) => {
            let mut response = Response::new(Bytes::new());
            *response.status_mut() = StatusCode::SEE_OTHER;
            let location = HeaderValue::from_str(&url).map_err(|_| write_failed(io_error()))?;
            response
                .headers_mut()
                .insert(http::header::LOCATION, location);
            Ok(response)
        }
        None => Ok(Export {
            filename: export.filename,
            gzip: gzip.to_vec(),
        }
        .into_response()),
    }
}

impl Export {
    /// The download: `application/gzip`, an attachment with the file's name.
    pub(crate) fn into_response(self) -> Response<Bytes> {
        let mut response = Response::new(Bytes::from(self.gzip));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/gzip"));
        if let Ok(value) =
            HeaderValue::from_str(&format!("attachment; filename=\"{}\"", self.filename))
        {
            headers.insert(CONTENT_DISPOSITION, value);
        }
        response
    }
}

#[derive(Deserialize)]
struct DeleteBody {
    password: String,
}

fn write_failed(_: std::io::Error) -> ApiError {
    ApiError::from(StoreError::Unavailable("export: compressing".into()))
}

/// One reading in the export: `[time, value, unit, source, code_system, code]`.
#[derive(Serialize)]
struct Row<'r>(
    &'r str,
    &'r crate::domain::ReadingValue,
    Option<&'r str>,
    &'r str,
    Option<&'r str>,
    Option<&'r str>,
);

impl WholeAccount<'_> {
    /// Everything the product holds about the user, as the export file.
    pub(crate) async fn export(&self, user_id: &str) -> Result<Export, ApiError> {
        let now = self.clock.now();
        let store = self.store;
        // A development token's user has no account record: its data still exports.
        let account = store.account(user_id).await?.map(|account| {
            json!({
                "user_id": account.user_id,
                "email": account.email,
                "created_at": account.created_at,
            })
        });
        let mut out = GzEncoder::new(Vec::new(), Compression::default());
        let head = json!({
            "format": EXPORT_FORMAT,
            "exported_at": now,
            "user_id": user_id,
            "account": account,
        });
        // The head's closing brace is replaced by the sections that follow.
        let head = serde_json::to_string(&head).map_err(|_| write_failed(io_error()))?;
        out.write_all(open_object(&head).as_bytes())
            .map_err(write_failed)?;

        // Readings, one indicator at a time.
        out.write_all(b",\"readings\":[").map_err(write_failed)?;
        for (i, entry) in store.catalogue(user_id).await?.iter().enumerate() {
            let query = ReadingQuery {
                indicator_keys: Some(vec![entry.key.clone()]),
                ..ReadingQuery::default()
            };
            let readings = store.readings(user_id, &query).await?;
            // Most indicators have one unit, source and code throughout: then they are
            // said once and each reading is `[time, value]` (a third of the size).
            let shared = readings.first().map(|f| {
                (
                    f.unit.as_deref(),
                    f.source.as_str(),
                    f.code_system.as_deref(),
                    f.code.as_deref(),
                )
            });
            let uniform = readings.iter().all(|r| {
                shared
                    == Some((
                        r.unit.as_deref(),
                        r.source.as_str(),
                        r.code_system.as_deref(),
                        r.code.as_deref(),
                    ))
            });
            // The UTC offset and what was sent (before the catalogue made the
            // reading canonical) travel with each reading when any has them.
            let sent = readings
                .iter()
                .any(|r| r.offset.is_some() || r.original.is_some());
            let head = match (uniform, shared) {
                (true, Some((unit, source, code_system, code))) => json!({
                    "indicator": entry.summary.name,
                    "key": entry.key,
                    "count": readings.len(),
                    "unit": unit,
                    "source": source,
                    "code_system": code_system,
                    "code": code,
                    "columns": if sent {
                        json!(["time", "value", "offset", "as_sent"])
                    } else {
                        json!(["time", "value"])
                    },
                }),
                _ => json!({
                    "indicator": entry.summary.name,
                    "key": entry.key,
                    "count": readings.len(),
                    "columns": if sent {
                        json!(["time", "value", "unit", "source", "code_system", "code", "offset", "as_sent"])
                    } else {
                        json!(["time", "value", "unit", "source", "code_system", "code"])
                    },
                }),
            };
            let head = serde_json::to_string(&head).map_err(|_| write_failed(io_error()))?;
            if i > 0 {
                out.write_all(b",").map_err(write_failed)?;
            }
            out.write_all(open_object(&head).as_bytes())
                .map_err(write_failed)?;
            out.write_all(b",\"readings\":[").map_err(write_failed)?;
            for (j, r) in readings.iter().enumerate() {
                if j > 0 {
                    out.write_all(b",").map_err(write_failed)?;
                }
                let written = if uniform && sent {
                    serde_json::to_writer(&mut out, &(&r.time, &r.value, &r.offset, &r.original))
                } else if uniform {
                    serde_json::to_writer(&mut out, &(&r.time, &r.value))
                } else if sent {
                    let row = (
                        &r.time,
                        &r.value,
                        r.unit.as_deref(),
                        &r.source,
                        r.code_system.as_deref(),
                        r.code.as_deref(),
                        &r.offset,
                        &r.original,
                    );
                    serde_json::to_writer(&mut out, &row)
                } else {
                    let row = Row(
                        &r.time,
                        &r.value,
                        r.unit.as_deref(),
                        &r.source,
                        r.code_system.as_deref(),
                        r.code.as_deref(),
                    );
                    serde_json::to_writer(&mut out, &row)
                };
                written.map_err(|_| write_failed(io_error()))?;
            }
            out.write_all(b"]}").map_err(write_failed)?;
        }
        out.write_all(b"]").map_err(write_failed)?;

        // The genome, chromosome by chromosome.
        let summary = store.genome_summary(user_id).await?;
        out.write_all(b",\"genome\":").map_err(write_failed)?;
        match summary {
            None => out.write_all(b"null").map_err(write_failed)?,
            Some(summary) => {
                let head = json!({
                    "variants": summary.variants,
                    "source": summary.source,
                    "imported_at": summary.imported_at,
                    "columns": ["rsid", "chromosome", "position", "genotype"],
                });
                let head = serde_json::to_string(&head).map_err(|_| write_failed(io_error()))?;
                out.write_all(open_object(&head).as_bytes())
                    .map_err(write_failed)?;
                out.write_all(b",\"genotypes\":[").map_err(write_failed)?;
                let mut first = true;
                for code in CHROMOSOME_CODES {
                    let Some(chromosome) = chromosome_name(code) else {
                        continue;
                    };
                    let genotypes = store
                        .genotypes_in_range(user_id, chromosome, 0, u64::MAX)
                        .await?;
                    for g in &genotypes {
                        if !first {
                            out.write_all(b",").map_err(write_failed)?;
                        }
                        first = false;
                        let row = (&g.rsid, &g.chromosome, g.position, &g.genotype);
                        serde_json::to_writer(&mut out, &row)
                            .map_err(|_| write_failed(io_error()))?;
                    }
                }
                out.write_all(b"]}").map_err(write_failed)?;
            }
        }

        // The records: small, one JSON value.
        let uploads: Vec<Value> = store
            .recent_uploads(user_id, UPLOADS_LOOKED_AT, now)
            .await?
            .into_iter()
            .map(|u| {
                json!({
                    "id": u.id,
                    "kind": u.kind.as_str(),
                    "filename": u.filename,
                    "status": u.status.as_str(),
                    "bytes": u.bytes,
                    "rows_read": u.rows_read,
                    "rows_written": u.rows_written,
                    "error": u.error.map(|e| json!({ "line": e.line, "message": e.message })),
                    "created_at": u.created_at,
                    "finished_at": u.finished_at,
                })
            })
            .collect();
        let servers: Vec<Value> = store
            .mcp_servers(user_id)
            .await?
            .into_iter()
            .map(|s| {
                let (auth_type, header_name) = match &s.auth {
                    McpAuth::None => ("none", None),
                    McpAuth::Bearer => ("bearer", None),
                    McpAuth::Header { name } => ("header", Some(name.clone())),
                    McpAuth::OAuth => ("oauth", None),
                };
                json!({
                    "name": s.name,
                    "url": s.url,
                    "auth_type": auth_type,
                    "header_name": header_name,
                    "has_credential": s.sealed_credential.is_some(),
                    "enabled": s.enabled,
                    "allowed_tools": s.allowed_tools,
                    "denied_tools": s.controls.denied_tools,
                    "read_only": s.controls.read_only,
                    "ask_first": s.controls.ask_first,
                    "tools": s.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
                    "server_name": s.server_name,
                    "created_at": s.created_at,
                    "updated_at": s.updated_at,
                    "last_connected_at": s.last_connected_at,
                    "last_connect_error": s.last_connect_error,
                })
            })
            .collect();
        let grants: Vec<Value> = store
            .token_state(user_id)
            .await?
            .grants
            .into_iter()
            .map(|(client_id, g)| {
                json!({
                    "client_id": client_id,
                    "client_name": g.client_name,
                    "scope": g.scope,
                    "granted_at": g.granted_at,
                })
            })
            .collect();
        let records = store.account_records(user_id).await?;
        // By the address of who accepted, never an account id;
        // then the invitations that wait.
        let mut shares: Vec<Value> = Vec::with_capacity(records.shares_granted.len());
        for (grantee, permissions) in records.shares_granted {
            let email = store.account(&grantee).await?.map(|a| a.email);
            shares.push(
                json!({ "grantee": email, "permissions": permissions, "status": "accepted" }),
            );
        }
        for invitation in store.invitations_sent(user_id).await? {
            let status = if invitation.lapsed(now) {
                "expired"
            } else {
                "pending"
            };
            shares.push(json!({
                "grantee": invitation.email, "permissions": invitation.permissions,
                "status": status, "invited_at": invitation.created_at,
            }));
        }
        let tail = json!({
            "uploads": uploads,
            "mcp_servers": servers,
            "oauth_grants": grants,
            "shares_granted": shares,
            "personal_url": {
                "exists": records.personal_url_expires_at.is_some_and(|at| at > now),
                "expires_at": records.personal_url_expires_at,
            },
        });
        let tail = serde_json::to_string(&tail).map_err(|_| write_failed(io_error()))?;
        out.write_all(b",").map_err(write_failed)?;
        out.write_all(tail.strip_prefix('{').unwrap_or(&tail).as_bytes())
            .map_err(write_failed)?;
        let gzip = out.finish().map_err(write_failed)?;
        let date = chrono::DateTime::from_timestamp(i64::try_from(now).unwrap_or(0), 0)
            .map(|d| d.format("%Y-%m-%d").to_string())
            .unwrap_or_else(|| "today".into());
        Ok(Export {
            filename: format!("mirobody-export-{date}.json.gz"),
            gzip,
        })
    }

    /// Deletes the user's readings, genome and uploads: see [`erase_data`].
    pub(crate) async fn delete_data(&self, user_id: &str) -> Result<(), ApiError> {
        erase_data(self.store, self.objects, self.clock.now(), user_id).await
    }

    /// Deletes the account and everything of it, once `password` is confirmed (403
    /// when wrong, and nothing is deleted).
    pub(crate) async fn delete_account(
        &self,
        user_id: &str,
        password: &str,
        source: Option<IpAddr>,
    ) -> Result<(), ApiError> {
        self.accounts
            .check_password(user_id, password, source)
            .await?;
        delete_waiting_files(self.store, self.objects, self.clock.now(), user_id).await?;
        self.store
            .delete_account_everything(user_id, self.clock.now())
            .await
            .map_err(ApiError::from)
    }

    /// `GET /api/user/export`.
    pub(crate) async fn export_api(&self, user_id: &str) -> Result<Response<Bytes>, ApiError> {
        let export = self.export(user_id).await?;
        deliver(self.objects, export, self.clock.now(), INLINE_EXPORT_MAX).await
    }

    /// `DELETE /api/user` with `{"password": …}`.
    pub(crate) async fn delete_account_api(
        &self,
        user_id: &str,
        body: &[u8],
        source: Option<IpAddr>,
    ) -> Result<Success, ApiError> {
        let body: DeleteBody = serde_json::from_slice(body).map_err(|_| {
            ApiError::refused(
                StatusCode::BAD_REQUEST,
                "send {\"password\": …} to confirm deleting the account",
            )
        })?;
        self.delete_account(user_id, &body.password, source).await?;
        Ok(Success::ok(json!({ "deleted": true })))
    }
}

/// Deletes the user's readings, genome and uploads; the account and everything else
/// stays (`DELETE /api/data` and the console). The uploads go first (the files still
/// waiting, then every record): a running import's writes are conditioned on its upload
/// (`put_import_readings`, `replace_import_genome`), so from then on none lands, and the
/// data deleted after it is all there is. The import, stopped, removes its own file.
pub(crate) async fn erase_data(
    store: &dyn Store,
    objects: &dyn UploadObjects,
    now: u64,
    user_id: &str,
) -> Result<(), ApiError> {
    delete_waiting_files(store, objects, now, user_id).await?;
    store.delete_uploads(user_id).await?;
    store.delete_user_data(user_id).await?;
    Ok(())
}

/// Removes the files of the user's uploads that have not been imported yet (an
/// imported file is deleted by its import already, a running import's by the import
/// when it stops).
async fn delete_waiting_files(
    store: &dyn Store,
    objects: &dyn UploadObjects,
    now: u64,
    user_id: &str,
) -> Result<(), ApiError> {
    for upload in store
        .recent_uploads(user_id, UPLOADS_LOOKED_AT, now)
        .await?
    {
        if upload.status == UploadStatus::Waiting {
            objects.remove(&upload.object_key).await?;
        }
    }
    Ok(())
}

/// A JSON object's text without its closing brace, so more fields can follow.
fn open_object(text: &str) -> &str {
    text.strip_suffix('}').unwrap_or(text)
}

fn io_error() -> std::io::Error {
    std::io::Error::other("serialise")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::store::{PutTarget, StoreError, StoredObject};

    /// Objects that keep what `put_download` got and answer a fixed URL (or none).
    struct Downloads {
        url: Option<&'static str>,
        kept: Mutex<Vec<(String, usize, String)>>,
    }

    #[async_trait::async_trait]
    impl UploadObjects for Downloads {
        async fn put_target(
            &self,
            _: &str,
            _: u64,
            _: Option<u64>,
        ) -> Result<PutTarget, StoreError> {
            unreachable!("an export never asks for a PUT")
        }
        async fn open(&self, _: &str) -> Result<Option<StoredObject>, StoreError> {
            Ok(None)
        }
        async fn remove(&self, _: &str) -> Result<(), StoreError> {
            Ok(())
        }
        async fn put_download(
            &self,
            key: &str,
            bytes: Bytes,
            filename: &str,
            _: u64,
        ) -> Result<Option<String>, StoreError> {
            self.kept
                .lock()
                .unwrap()
                .push((key.to_string(), bytes.len(), filename.to_string()));
            let url = self.url.map(str::to_string);
            Ok(url)
        }
    }

    fn export(size: usize) -> Export {
        Export {
            filename: "mirobody-export-2026-12-01.json.gz".into(),
            gzip: vec![7; size],
        }
    }

    #[tokio::test]
    async fn an_export_too_large_for_a_response_is_a_redirect_to_a_signed_download() {
        let s3 = Downloads {
            url: Some("https://bucket.example/exports/x?X-Amz-Signature=abc"),
            kept: Mutex::default(),
        };
        // Small enough: the file itself, nothing kept.
        let small = deliver(&s3, export(100), 0, 1000).await.unwrap();
        assert_eq!(small.status(), StatusCode::OK);
        assert_eq!(small.body().len(), 100);
        assert!(s3.kept.lock().unwrap().is_empty());
        // Too large: kept under exports/ (a random key, never the user) and 303 to its URL.
        let large = deliver(&s3, export(1001), 0, 1000).await.unwrap();
        assert_eq!(large.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            large.headers()[http::header::LOCATION],
            "https://bucket.example/exports/x?X-Amz-Signature=abc"
        );
        assert!(large.body().is_empty());
        let kept = s3.kept.lock().unwrap();
        assert_eq!(kept.len(), 1);
        assert!(
            kept[0].0.starts_with("exports/") && kept[0].0.len() > 20,
            "{kept:?}"
        );
        assert_eq!(
            (kept[0].1, kept[0].2.as_str()),
            (1001, "mirobody-export-2026-12-01.json.gz")
        );
    }

    #[tokio::test]
    async fn where_no_download_url_is_offered_the_file_itself_is_the_answer() {
        let local = Downloads {
            url: None,
            kept: Mutex::default(),
        };
        let answer = deliver(&local, export(5000), 0, 1000).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.body().len(), 5000);
        assert_eq!(answer.headers()[CONTENT_TYPE], "application/gzip");
    }
}
