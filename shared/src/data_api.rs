//! The data API (E4): a signed-in user uploads, inspects and deletes their own
//! health readings and genotypes. The same data the tools read and gating probes.
//!
//! Owns the request and response shapes (the account API's envelope: `{"code": 0,
//! "msg": "ok", "data": …}`, failures as a non-zero `code` with `msg`). Every row is
//! validated before anything is written; a failed write reports how far it got. Never
//! logs bodies or values.

use std::sync::Arc;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{Request, Response, StatusCode};
use serde_json::{Value, json};

use crate::account_api::{self, refused};
use crate::store::{Store, StoreError};
use crate::tools::Caller;
use crate::upload::{self, UploadError};

pub struct DataApi {
    pub store: Arc<dyn Store>,
}

fn ok(data: Value) -> Response<Bytes> {
    account_api::ok(StatusCode::OK, data)
}

fn bad_upload(error: UploadError) -> Response<Bytes> {
    refused(
        StatusCode::BAD_REQUEST,
        &format!("nothing was saved: {error}"),
    )
}

fn store_failed(error: StoreError, what: &str) -> Response<Bytes> {
    tracing::warn!(%error, what, "data API store failure");
    refused(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "{what} failed: storage is unavailable; retry the same upload (it never duplicates rows)"
        ),
    )
}

impl DataApi {
    pub async fn health(&self, caller: &Caller, request: &Request<Bytes>) -> Response<Bytes> {
        let content_type = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let source = request
            .headers()
            .get("x-source")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(100).collect::<String>())
            .unwrap_or_else(|| "upload".into());
        let parsed = if content_type.starts_with("text/csv") {
            upload::parse_health_csv(request.body(), &source)
        } else {
            upload::parse_health_json(request.body(), &source)
        };
        let readings = match parsed {
            Ok(readings) => readings,
            Err(error) => return bad_upload(error),
        };
        match self.store.put_readings(&caller.user_id, &readings).await {
            Ok(report) => ok(json!({ "received": readings.len(), "written": report.written })),
            Err(error) => store_failed(error, "saving readings"),
        }
    }

    pub async fn genotype(&self, caller: &Caller, request: &Request<Bytes>) -> Response<Bytes> {
        let genotypes = match upload::parse_genotype_file(request.body()) {
            Ok(genotypes) => genotypes,
            Err(error) => return bad_upload(error),
        };
        match self.store.put_genotypes(&caller.user_id, &genotypes).await {
            Ok(report) => ok(json!({ "received": genotypes.len(), "written": report.written })),
            Err(error) => store_failed(error, "saving genotypes"),
        }
    }

    pub async fn summary(&self, caller: &Caller) -> Response<Bytes> {
        match self.store.data_presence(&caller.user_id).await {
            Ok(p) => ok(json!({ "health": p.health, "genotype": p.genotype })),
            Err(error) => store_failed(error, "reading the summary"),
        }
    }

    pub async fn delete(&self, caller: &Caller) -> Response<Bytes> {
        match self.store.delete_user_data(&caller.user_id).await {
            Ok(()) => ok(json!({ "deleted": true })),
            Err(error) => store_failed(error, "deleting data"),
        }
    }
}
