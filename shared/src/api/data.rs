//! The data API (E4): a signed-in user uploads, inspects and deletes their own
//! health readings and genotypes. The same data the tools read and gating probes.
//!
//! Owns the request and response shapes (handlers answer `Success` in the REST envelope
//! `{"code": 0, "msg": "ok", "data": …}`, failures a non-zero `code` with `msg`; a store
//! failure says what failed, `ApiError::unavailable_while`). Every row is
//! validated before anything is written; a failed write reports how far it got. Never
//! logs bodies or values.

use std::sync::Arc;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{Request, StatusCode};
use serde_json::json;

use crate::clock::Clock;
use crate::domain::{Genotype, Reading};
use crate::http::{ApiError, Success};
use crate::identity::Caller;
use crate::store::Store;
/// The vocabulary of the typed reads (the console's data pages speak it).
pub(crate) use crate::store::{
    CatalogueEntry, GenomeSummary, HourValue, Period, ReadingQuery, Rollup, TIME_MAX,
};
use crate::upload::{self, UploadError};

pub(crate) struct DataApi {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
}

fn bad_upload(error: UploadError) -> ApiError {
    ApiError::refused(
        StatusCode::BAD_REQUEST,
        format!("nothing was saved: {error}"),
    )
}

/// Where an upload came from: the `x-source` header (first 100 characters) or `upload`.
fn source_of(request: &Request<Bytes>) -> String {
    request
        .headers()
        .get("x-source")
        .and_then(|v| v.to_str().ok())
        .map(|s| s.chars().take(100).collect::<String>())
        .unwrap_or_else(|| "upload".into())
}

impl DataApi {
    pub(crate) async fn health(
        &self,
        caller: &Caller,
        request: &Request<Bytes>,
    ) -> Result<Success, ApiError> {
        let content_type = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let source = source_of(request);
        let parsed = if content_type.starts_with("text/csv") {
            upload::parse_health_csv(request.body(), &source)
        } else {
            upload::parse_health_json(request.body(), &source)
        };
        let (readings, rows) = parsed.map_err(bad_upload)?;
        let report = self
            .store
            .put_readings(&caller.user_id, &readings)
            .await
            .map_err(ApiError::unavailable_while("saving readings"))?;
        // What happened to every row: nothing is lost without a word.
        Ok(Success::ok(json!({
            "received": rows,
            "written": report.written,
            "new": report.new,
            "already_there": report.unchanged,
            "replaced": report.replaced,
            "merged_in_file": rows.saturating_sub(readings.len()),
        })))
    }

    pub(crate) async fn genotype(
        &self,
        caller: &Caller,
        request: &Request<Bytes>,
    ) -> Result<Success, ApiError> {
        // The file replaces the user's genome as a whole (a new version, then
        // one switch); a repeated rsid counts once.
        let genome = upload::parse_genotype_file(request.body()).map_err(bad_upload)?;
        self.store
            .replace_genome(
                &caller.user_id,
                &genome,
                &source_of(request),
                self.clock.now(),
            )
            .await
            .map_err(ApiError::unavailable_while("saving genotypes"))?;
        Ok(Success::ok(
            json!({ "received": genome.len(), "written": genome.len() }),
        ))
    }

    // The reads the console's data pages draw from (typed: the page renders them).

    /// The user's indicators, one entry each, ordered by key.
    pub(crate) async fn catalogue(&self, user: &str) -> Result<Vec<CatalogueEntry>, ApiError> {
        Ok(self.store.catalogue(user).await?)
    }

    /// The active genome's summary; `None` without one.
    pub(crate) async fn genome_summary(
        &self,
        user: &str,
    ) -> Result<Option<GenomeSummary>, ApiError> {
        Ok(self.store.genome_summary(user).await?)
    }

    /// Genotypes for these rsids (lower-cased); unknown ones are absent.
    pub(crate) async fn genotypes_by_rsid(
        &self,
        user: &str,
        rsids: &[String],
    ) -> Result<Vec<Genotype>, ApiError> {
        Ok(self.store.genotypes_by_rsid(user, rsids).await?)
    }

    /// One indicator's day or month rollups with `from <= period <= to`.
    pub(crate) async fn rollups(
        &self,
        user: &str,
        indicator_key: &str,
        period: Period,
        from: &str,
        to: &str,
    ) -> Result<Vec<Rollup>, ApiError> {
        Ok(self
            .store
            .rollups(user, indicator_key, period, from, to)
            .await?)
    }

    /// Readings matching the query, ordered by indicator key then time.
    pub(crate) async fn readings(
        &self,
        user: &str,
        query: &ReadingQuery,
    ) -> Result<Vec<Reading>, ApiError> {
        Ok(self.store.readings(user, query).await?)
    }

    /// One indicator's newest `limit` readings in the window, newest first.
    pub(crate) async fn latest_readings(
        &self,
        user: &str,
        indicator_key: &str,
        limit: usize,
        window: &ReadingQuery,
    ) -> Result<Vec<Reading>, ApiError> {
        Ok(self
            .store
            .latest_readings(user, indicator_key, limit, window)
            .await?)
    }

    pub(crate) async fn summary(&self, caller: &Caller) -> Result<Success, ApiError> {
        let p = self
            .store
            .data_presence(&caller.user_id)
            .await
            .map_err(ApiError::unavailable_while("reading the summary"))?;
        Ok(Success::ok(
            json!({ "health": p.health, "genotype": p.genotype }),
        ))
    }
}
