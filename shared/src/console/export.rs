//! One indicator's readings as a CSV download (`/console/data/{indicator}/readings.csv`),
//! in the shape the upload page reads back: `indicator,value,unit,time,source`, values
//! as stored (the measure's unit), times with the offset they were sent with, oldest
//! first. Sent gzip-compressed when the browser takes it (a browser saves the CSV
//! itself), so three years of 5-minute readings stay far under Lambda's 6 MB answer.
//! The series' size is known from the catalogue before anything is read: past
//! [`MAX_EXPORT_READINGS`] the answer says to use the whole-account export instead.

use std::io::Write;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::header::{ACCEPT_ENCODING, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use http::{HeaderValue, Request, Response, StatusCode};

use super::{Answer, ConsoleApi, Session};
use crate::api::data::ReadingQuery;
use crate::domain::{Reading, ReadingValue};
use crate::http::ApiError;

/// The most readings one download holds: about four years of 5-minute readings
/// (`365 × 288 × 4 = 420,480`), about 20 MB of CSV, 2 to 3 MB compressed.
pub(crate) const MAX_EXPORT_READINGS: u64 = 420_480;
/// The largest answer sent uncompressed to a client that takes no gzip.
const MAX_PLAIN_BYTES: usize = 4 * 1024 * 1024;

/// The file's name: the indicator's name in letters, digits and dashes.
fn file_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    format!("{}.csv", if out.is_empty() { "readings" } else { out })
}

/// The CSV of `readings` under the series' `name`.
fn csv_of(name: &str, readings: &[Reading]) -> Result<Vec<u8>, csv::Error> {
    let mut out = csv::Writer::from_writer(Vec::with_capacity(readings.len() * 56 + 40));
    out.write_record(["indicator", "value", "unit", "time", "source"])?;
    for r in readings {
        let value = match &r.value {
            ReadingValue::Number(n) => n.to_string(),
            ReadingValue::Text(text) => text.clone(),
        };
        let time = match &r.offset {
            Some(offset) => format!("{}{offset}", r.time),
            None => r.time.clone(),
        };
        out.write_record([
            name,
            &value,
            r.unit.as_deref().unwrap_or_default(),
            &time,
            &r.source,
        ])?;
    }
    out.into_inner().map_err(|e| e.into_error().into())
}

fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = GzEncoder::new(Vec::with_capacity(bytes.len() / 8), Compression::fast());
    out.write_all(bytes)?;
    out.finish()
}

fn takes_gzip(request: &Request<Bytes>) -> bool {
    request
        .headers()
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| coding.split(';').next().is_some_and(|c| c.trim() == "gzip"))
}

fn export_failed() -> ApiError {
    ApiError::refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "The download could not be made. Try again.",
    )
}

impl ConsoleApi {
    /// `GET /console/data/{indicator}/readings.csv`.
    pub(crate) async fn indicator_export(
        &self,
        session: &Session,
        indicator: &str,
        request: &Request<Bytes>,
    ) -> Answer {
        let user = session.user_id.as_str();
        let entry = self.series(user, indicator).await?;
        if entry.summary.count > MAX_EXPORT_READINGS {
            return Err(ApiError::refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                "This series has more readings than one download holds: use “Export \
                 everything” on Your account, which has them all.",
            ));
        }
        let query = ReadingQuery {
            indicator_keys: Some(vec![entry.key.clone()]),
            ..ReadingQuery::default()
        };
        let readings = self.data.readings(user, &query).await?;
        let csv = csv_of(&entry.summary.name, &readings).map_err(|_| export_failed())?;
        let name = file_name(&entry.summary.name);
        let (body, encoded) = if takes_gzip(request) || csv.len() > MAX_PLAIN_BYTES {
            (gzip(&csv).map_err(|_| export_failed())?, true)
        } else {
            (csv, false)
        };
        let mut response = Response::new(Bytes::from(body));
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/csv; charset=utf-8"),
        );
        headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
        match (encoded, takes_gzip(request)) {
            (true, true) => {
                headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
            // Too large to send plain to a client that takes no gzip: a .gz file.
            (true, false) => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/gzip"));
            }
            _ => {}
        }
        let file = if encoded && !takes_gzip(request) {
            format!("{name}.gz")
        } else {
            name
        };
        if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file}\"")) {
            headers.insert(CONTENT_DISPOSITION, value);
        }
        *response.status_mut() = StatusCode::OK;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_for_its_indicator_in_plain_letters() {
        assert_eq!(file_name("Hemoglobin A1c"), "hemoglobin-a1c.csv");
        assert_eq!(file_name("Vitamin D (25-OH)"), "vitamin-d-25-oh.csv");
        assert_eq!(file_name("血糖"), "readings.csv");
        assert_eq!(file_name("\"; rm -rf /"), "rm-rf.csv");
    }

    #[test]
    fn values_keep_every_digit_and_times_their_offset() {
        let reading = |value, time: &str, offset: Option<&str>, source: &str| Reading {
            indicator: "glucose".into(),
            value,
            unit: Some("mg/dL".into()),
            time: time.into(),
            code_system: None,
            code: None,
            source: source.into(),
            offset: offset.map(str::to_string),
            original: None,
        };
        let csv = csv_of(
            "Glucose",
            &[
                reading(
                    ReadingValue::Number(99.088),
                    "2026-03-01T07:00:00",
                    Some("+08:00"),
                    "Lab, \"City\"",
                ),
                reading(
                    ReadingValue::Text("high".into()),
                    "2026-03-02T07:00:00",
                    None,
                    "meter",
                ),
            ],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "indicator,value,unit,time,source\n\
             Glucose,99.088,mg/dL,2026-03-01T07:00:00+08:00,\"Lab, \"\"City\"\"\"\n\
             Glucose,high,mg/dL,2026-03-02T07:00:00,meter\n"
        );
    }
}
