//! One indicator's readings as a CSV download (`/console/data/{indicator}/readings.csv`),
//! in the shape the upload page reads back: `indicator,value,unit,time,source`, values
//! as stored (the measure's unit), times with the offset they were sent with, oldest
//! first. Sent gzip-compressed when the browser takes it (a browser saves the CSV
//! itself), so three years of 5-minute readings stay far under Lambda's 6 MB answer.
//! The series' size is known from the catalogue before anything is read: past
//! [`MAX_EXPORT_READINGS`] the answer says to use the whole-account export instead.
//! The readings are read a month at a time and written straight into the (compressed)
//! answer, so memory holds one month of readings and the answer, never the series.

use std::io::Write;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::header::{CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_TYPE, VARY};
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

/// Where the CSV goes: plain, or through gzip.
enum Sink {
    Plain(Vec<u8>),
    Gzip(GzEncoder<Vec<u8>>),
}

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(out) => out.write(bytes),
            Sink::Gzip(out) => out.write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(out) => out.flush(),
            Sink::Gzip(out) => out.flush(),
        }
    }
}

impl Sink {
    fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Sink::Plain(out) => Ok(out),
            Sink::Gzip(out) => out.finish(),
        }
    }
}

/// The CSV's header row.
const HEADER: [&str; 5] = ["indicator", "value", "unit", "time", "source"];

/// `readings` as CSV rows under the series' `name`.
fn write_rows<W: Write>(
    out: &mut csv::Writer<W>,
    name: &str,
    readings: &[Reading],
) -> Result<(), csv::Error> {
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
    Ok(())
}

/// The periods the series is read in, oldest first: its months (`YYYY-MM`, as a
/// reading query's `from` and `to`, which covers every time it prefixes), or its years
/// when it spans more than [`MAX_MONTHS`] (an absurd first date must not cost a query
/// a month).
fn periods(first: &str, last: &str) -> Vec<String> {
    let month = |time: &str| -> Option<(i32, u32)> {
        let year = time.get(..4)?.parse().ok()?;
        let month = time.get(5..7)?.parse().ok()?;
        (1..=12).contains(&month).then_some((year, month))
    };
    let (Some((y0, m0)), Some((y1, m1))) = (month(first), month(last)) else {
        return vec![String::new()];
    };
    let months = (i64::from(y1) - i64::from(y0)) * 12 + i64::from(m1) - i64::from(m0) + 1;
    if months <= 0 {
        return vec![String::new()];
    }
    if months > MAX_MONTHS {
        return (y0..=y1).map(|y| format!("{y:04}")).collect();
    }
    let mut out = Vec::new();
    let (mut y, mut m) = (y0, m0);
    while (y, m) <= (y1, m1) {
        out.push(format!("{y:04}-{m:02}"));
        (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    }
    out
}

/// Past this many months a series is read a year at a time.
const MAX_MONTHS: i64 = 1200;
/// About what a reading takes as a CSV row, to tell before reading whether the plain
/// answer would pass [`MAX_PLAIN_BYTES`].
const ROW_BYTES: u64 = 64;

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
        let asks_gzip = super::accepts_gzip(request);
        let encoded =
            asks_gzip || entry.summary.count.saturating_mul(ROW_BYTES) > MAX_PLAIN_BYTES as u64;
        let sink = if encoded {
            Sink::Gzip(GzEncoder::new(Vec::new(), Compression::fast()))
        } else {
            Sink::Plain(Vec::new())
        };
        let mut out = csv::Writer::from_writer(sink);
        out.write_record(HEADER).map_err(|_| export_failed())?;
        for period in periods(&entry.summary.first.time, &entry.summary.last.time) {
            let query = ReadingQuery {
                indicator_keys: Some(vec![entry.key.clone()]),
                from: (!period.is_empty()).then(|| period.clone()),
                to: (!period.is_empty()).then_some(period),
            };
            let readings = self.data.readings(user, &query).await?;
            write_rows(&mut out, &entry.summary.name, &readings).map_err(|_| export_failed())?;
        }
        let body = out
            .into_inner()
            .map_err(|_| export_failed())?
            .finish()
            .map_err(|_| export_failed())?;
        let name = file_name(&entry.summary.name);
        // Gzip as the browser asked (it saves the CSV), plain, or, too large to send plain
        // to a client that takes no gzip, a .gz file.
        let (kind, file, encoding) = match (encoded, asks_gzip) {
            (true, true) => ("text/csv; charset=utf-8", name, Some("gzip")),
            (true, false) => ("application/gzip", format!("{name}.gz"), None),
            (false, _) => ("text/csv; charset=utf-8", name, None),
        };
        let mut response = Response::new(Bytes::from(body));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
        headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
        if let Some(encoding) = encoding {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static(encoding));
        }
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
    fn a_series_is_read_a_month_at_a_time_or_a_year_at_a_time_when_absurdly_long() {
        assert_eq!(
            periods("2025-11-20T09:00:00", "2026-02-03T07:00:00"),
            ["2025-11", "2025-12", "2026-01", "2026-02"]
        );
        assert_eq!(periods("2026-03-01", "2026-03-31"), ["2026-03"]);
        assert_eq!(periods("0001-01-01", "2026-03-01").len(), 2026);
        assert_eq!(periods("0001-01-01", "2026-03-01")[0], "0001");
        assert_eq!(periods("garbage", "2026-03-01"), [""]);
        assert_eq!(periods("2026-03-01", "2025-01-01"), [""]);
    }

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
        let mut out = csv::Writer::from_writer(Vec::new());
        out.write_record(HEADER).unwrap();
        write_rows(
            &mut out,
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
        let csv = out.into_inner().unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "indicator,value,unit,time,source\n\
             Glucose,99.088,mg/dL,2026-03-01T07:00:00+08:00,\"Lab, \"\"City\"\"\"\n\
             Glucose,high,mg/dL,2026-03-02T07:00:00,meter\n"
        );
    }
}
