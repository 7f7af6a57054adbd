//! The console's static files, compiled in: the stylesheet, the one script (copy
//! buttons, the upload progress bar, the charts' read-out) and the readings template a
//! person downloads from the upload page. Served with a day's caching; nothing else
//! under `/console/assets/` exists.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};

use super::Answer;
use crate::http::ApiError;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");
/// A readings file in the shape the importer reads, one row per common measure.
pub(crate) const TEMPLATE: &str = include_str!("assets/readings-template.csv");
/// The template's file name (its path under `/console/assets/`).
pub(crate) const TEMPLATE_NAME: &str = "readings-template.csv";

pub(crate) fn serve(file: &str) -> Answer {
    let (body, kind) = match file {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        TEMPLATE_NAME => (TEMPLATE, "text/csv; charset=utf-8"),
        _ => return Err(ApiError::NoRoute),
    };
    let mut response = Response::new(Bytes::from_static(body.as_bytes()));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    if file == TEMPLATE_NAME {
        headers.insert(
            CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment; filename=\"readings-template.csv\""),
        );
    }
    Ok(response)
}
