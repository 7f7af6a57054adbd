//! The console's two static files, compiled in: the stylesheet and the one script
//! (copy buttons, the upload progress bar). Served with a day's caching; nothing else
//! under `/console/assets/` exists.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};

use super::Answer;
use crate::http::ApiError;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

pub(crate) fn serve(file: &str) -> Answer {
    let (body, kind) = match file {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
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
    Ok(response)
}
