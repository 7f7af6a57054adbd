//! Health readings from JSON (`{"readings": [...]}` or a bare array) or CSV with a
//! header row (`indicator,value,unit,time[,code_system,code,source]`).
//!
//! CSV is bounded before the parser buffers it: one row at most [`MAX_ROW`]
//! bytes, the file at most [`MAX_READINGS_FILE`], and every row, blank ones included,
//! counted against the row cap, so no line and no run of empty rows is free.

use std::io::{self, Read};

use serde_json::Value;

use super::bounds::{Exceeded, refusal, size};
use super::collisions::{Collisions, Position, Repeats};
use super::{MAX_READINGS_FILE, MAX_ROWS, UploadError};
use crate::domain::measures::{self, format_offset};
use crate::domain::{FIRST_DAY, LAST_DAY, Reading, ReadingValue, day_accepted};

pub(super) fn error(location: String, problem: impl Into<String>) -> UploadError {
    UploadError {
        location,
        problem: problem.into(),
    }
}

/// Every uploaded string is bounded, in UTF-8 bytes, so a reading
/// can never reach the store's limits (DynamoDB: a 1,024-byte sort key made of the
/// indicator key, the time and the source; a 400 KB item): at most 2 + 300 (a lower-cased
/// 200-byte indicator) + 21 + 200 bytes of key and a few KB of item.
const MAX_INDICATOR: usize = 200;
const MAX_UNIT: usize = 64;
const MAX_CODE: usize = 64;
const MAX_SOURCE: usize = 200;
const MAX_TEXT_VALUE: usize = 1000;

fn too_long(location: String, field: &str, max: usize) -> UploadError {
    error(
        location,
        format!("{field} is longer than {max} bytes (UTF-8)"),
    )
}

/// Accepts `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS[.fff]]` and `YYYY-MM-DDTHH:MM[:SS[.fff]]`,
/// optionally followed by `Z` or a UTC offset (`+08:00`, `-0500`, `+08`). Answers the local
/// time as written (its date is the person's local day) and the offset as `±HH:MM`.
fn normalise_time(raw: &str) -> Option<(String, Option<String>)> {
    let raw = raw.trim();
    if let Some(canonical) = already_canonical(raw) {
        return Some((canonical.to_string(), None));
    }
    let (date, time) = match raw.find(['T', ' ']) {
        Some(i) => (&raw[..i], raw[i + 1..].trim()),
        None => (raw, "00:00:00"),
    };
    let date = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .ok()
        .filter(|d| day_accepted(*d))?;
    let (clock, offset) = split_offset(time)?;
    let clock = clock.split('.').next().unwrap_or(clock);
    let parsed = chrono::NaiveTime::parse_from_str(clock, "%H:%M:%S")
        .or_else(|_| chrono::NaiveTime::parse_from_str(clock, "%H:%M"))
        .ok()?;
    use chrono::{Datelike, Timelike};
    // Written out by hand: chrono's strftime formatting was a tenth of an import's time.
    let time = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        date.year(),
        date.month(),
        date.day(),
        parsed.hour(),
        parsed.minute(),
        parsed.second()
    );
    Some((time, offset))
}

/// The common case, checked without chrono's general parser (a tenth of an import's
/// time): `YYYY-MM-DDTHH:MM:SS` of a real day and time, in the accepted years, which is
/// already the stored form.
fn already_canonical(raw: &str) -> Option<&str> {
    let b = raw.as_bytes();
    let shape = b.len() == 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    if !shape {
        return None;
    }
    let number = |from: usize, to: usize| raw[from..to].parse::<u32>().ok();
    let year = i32::try_from(number(0, 4)?).ok()?;
    let date = chrono::NaiveDate::from_ymd_opt(year, number(5, 7)?, number(8, 10)?)?;
    chrono::NaiveTime::from_hms_opt(number(11, 13)?, number(14, 16)?, number(17, 19)?)?;
    day_accepted(date).then_some(raw)
}

/// A time of day and its offset: `Z`, `±HH:MM`, `±HHMM` or `±HH` after the clock.
fn split_offset(time: &str) -> Option<(&str, Option<String>)> {
    if let Some(clock) = time.strip_suffix('Z').or_else(|| time.strip_suffix('z')) {
        return Some((clock.trim_end(), Some("+00:00".into())));
    }
    let Some(at) = time.rfind(['+', '-']) else {
        return Some((time, None));
    };
    let (clock, zone) = (time[..at].trim_end(), &time[at..]);
    let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) || !matches!(digits.len(), 2 | 4) {
        return None;
    }
    let hours: i64 = digits[..2].parse().ok()?;
    let minutes: i64 = digits.get(2..).map_or(Some(0), |m| m.parse().ok())?;
    if hours > 14 || minutes > 59 {
        return None;
    }
    let seconds = (hours * 60 + minutes) * 60 * if zone.starts_with('-') { -1 } else { 1 };
    Some((clock, Some(format_offset(seconds))))
}

fn value_of(raw: &str) -> Option<ReadingValue> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    Some(match raw.parse::<f64>() {
        Ok(n) if n.is_finite() => ReadingValue::Number(n),
        _ => ReadingValue::Text(raw.to_string()),
    })
}

fn non_empty(s: Option<&str>) -> Option<String> {
    s.map(str::trim).filter(|s| !s.is_empty()).map(String::from)
}

struct Fields<'a> {
    indicator: Option<&'a str>,
    value: Option<ReadingValue>,
    unit: Option<&'a str>,
    time: Option<&'a str>,
    code_system: Option<&'a str>,
    code: Option<&'a str>,
    source: Option<&'a str>,
}

fn reading(
    fields: Fields<'_>,
    default_source: &str,
    location: impl Fn() -> String,
) -> Result<Reading, UploadError> {
    let indicator =
        non_empty(fields.indicator).ok_or_else(|| error(location(), "indicator is missing"))?;
    if indicator.len() > MAX_INDICATOR {
        return Err(error(location(), "indicator is longer than 200 characters"));
    }
    let value = fields
        .value
        .ok_or_else(|| error(location(), "value is missing"))?;
    if let ReadingValue::Text(text) = &value
        && text.len() > MAX_TEXT_VALUE
    {
        return Err(too_long(location(), "value", MAX_TEXT_VALUE));
    }
    for (field, raw, max) in [
        ("unit", fields.unit, MAX_UNIT),
        ("code_system", fields.code_system, MAX_CODE),
        ("code", fields.code, MAX_CODE),
        ("source", fields.source, MAX_SOURCE),
    ] {
        if raw.is_some_and(|raw| raw.trim().len() > max) {
            return Err(too_long(location(), field, max));
        }
    }
    let time = fields
        .time
        .ok_or_else(|| error(location(), "time is missing"))?;
    let (time, offset) = normalise_time(time).ok_or_else(|| {
        error(
            location(),
            format!(
                "time must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS (optionally with Z or an offset \
                 such as +08:00) between {FIRST_DAY} and {LAST_DAY}"
            ),
        )
    })?;
    let sent = Reading {
        indicator,
        value,
        unit: non_empty(fields.unit),
        time,
        code_system: non_empty(fields.code_system),
        code: non_empty(fields.code),
        source: non_empty(fields.source).unwrap_or_else(|| default_source.to_string()),
        offset,
        original: None,
    };
    measures::catalogue()
        .canonical(sent)
        .map_err(|refusal| error(location(), refusal.0))
}

/// The distinct readings of a JSON body, and how many rows it held (identical repeats
/// are kept once).
pub(crate) fn parse_health_json(
    body: &[u8],
    default_source: &str,
) -> Result<(Vec<Reading>, usize), UploadError> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| error(format!("line {}", e.line()), "not valid JSON"))?;
    let rows = match &doc {
        Value::Array(rows) => rows,
        Value::Object(o) => o
            .get("readings")
            .and_then(Value::as_array)
            .ok_or_else(|| error("body".into(), "expected {\"readings\": [...]} or an array"))?,
        _ => {
            return Err(error(
                "body".into(),
                "expected {\"readings\": [...]} or an array",
            ));
        }
    };
    if rows.len() > MAX_ROWS {
        return Err(error(
            "body".into(),
            format!("more than {MAX_ROWS} readings in one upload"),
        ));
    }
    let mut collisions = Collisions::new(Position::Index);
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let reading = json_reading(i, row, default_source)?;
        if collisions.check(&reading, i as u64)? {
            out.push(reading);
        }
    }
    Ok((out, rows.len()))
}

/// One element of a JSON upload's `readings` (index `i`) as a reading.
pub(super) fn json_reading(
    i: usize,
    row: &Value,
    default_source: &str,
) -> Result<Reading, UploadError> {
    let location = || format!("readings[{i}]");
    let row = row
        .as_object()
        .ok_or_else(|| error(location(), "each reading must be an object"))?;
    let text = |k: &str| row.get(k).and_then(Value::as_str);
    let value = match row.get("value") {
        Some(Value::Number(n)) => n.as_f64().map(ReadingValue::Number),
        Some(Value::String(s)) => value_of(s),
        Some(Value::Null) | None => None,
        Some(_) => return Err(error(location(), "value must be a number or a string")),
    };
    reading(
        Fields {
            indicator: text("indicator"),
            value,
            unit: text("unit"),
            time: text("time"),
            code_system: text("code_system"),
            code: text("code"),
            source: text("source"),
        },
        default_source,
        location,
    )
}

/// The distinct readings of a CSV body, and how many rows it held (identical repeats
/// are kept once).
pub(crate) fn parse_health_csv(
    body: &[u8],
    default_source: &str,
) -> Result<(Vec<Reading>, usize), UploadError> {
    let mut readings = Vec::new();
    let mut repeats = Repeats::default();
    let rows = for_each_csv_reading(body, default_source, MAX_ROWS, &mut repeats, |reading| {
        readings.push(reading);
        true
    })?;
    Ok((readings, rows))
}

/// The longest CSV row read, in bytes. A row of the columns read is at most about
/// 1.7 KB (the field bounds above) and a real export's rows are a few dozen to a few
/// hundred bytes; 64 KiB leaves room for columns this parser ignores. A longer row is
/// refused with its line once the parser holds [`MAX_ROW`] + [`CSV_BUFFER`] bytes of it.
pub(super) const MAX_ROW: u64 = 64 * 1024;
/// The CSV parser's own read buffer (the `csv` crate's default).
const CSV_BUFFER: usize = 8 * 1024;

/// The reader under the CSV parser: hands it at most [`MAX_ROW`] bytes (and its buffer)
/// past the end of the last row it parsed, and at most [`MAX_READINGS_FILE`] in all, so
/// a row never holds more memory than that whatever the file (the parser buffers a whole
/// row, a quoted field's line breaks included).
struct RowBound<R> {
    inner: R,
    handed: u64,
    row_end: u64,
}

impl<R> RowBound<R> {
    /// The parser finished a row at byte `at` of the file.
    fn row_ended(&mut self, at: u64) {
        self.row_end = at;
    }
}

impl<R: Read> Read for RowBound<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let row_limit = self.row_end.saturating_add(MAX_ROW + CSV_BUFFER as u64);
        let limit = row_limit.min(MAX_READINGS_FILE);
        let room = limit.saturating_sub(self.handed);
        if room == 0 {
            // At the bound: still fine if the file ends here.
            if self.inner.read(&mut [0u8; 1])? == 0 {
                return Ok(0);
            }
            return Err(if row_limit >= MAX_READINGS_FILE {
                Exceeded::at(
                    "file",
                    format!(
                        "the readings are larger than {} (decompressed)",
                        size(MAX_READINGS_FILE)
                    ),
                )
            } else {
                Exceeded::here(format!("the row is longer than {}", size(MAX_ROW)))
            });
        }
        let n = out.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut out[..n])?;
        self.handed = self.handed.saturating_add(read as u64);
        Ok(read)
    }
}

/// A CSV error as the upload's: a bound passed (the row's length, the file's size, a
/// decompression bomb), an unreadable file, else `invalid` at `location`.
fn csv_failure(failed: &csv::Error, location: String, invalid: &str) -> UploadError {
    match failed.kind() {
        csv::ErrorKind::Io(io) => refusal(io, || location.clone())
            .unwrap_or_else(|| error(location, "the file could not be read")),
        _ => error(location, invalid),
    }
}

/// Why a first row without `indicator`, `value` and `time` is not a readings file, in
/// words a person can act on: an empty file, a PDF, a raw genome, or another app's CSV
/// (its first column names, each cut at 30 characters, at most four).
fn header_problem(headers: &csv::StringRecord) -> String {
    const NEEDED: &str = "the header row must name indicator, value and time";
    let first = headers.get(0).unwrap_or_default().trim();
    let genome = first.starts_with('#')
        || first.eq_ignore_ascii_case("rsid")
        || first
            .strip_prefix("rs")
            .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()));
    if headers.iter().all(|h| h.trim().is_empty()) {
        "the file is empty: it has no header row and no readings".into()
    } else if first.starts_with("%PDF") {
        "this is a PDF, not a readings file: upload readings as CSV or JSON, or an Apple \
         Health export (export.zip or export.xml)"
            .into()
    } else if first.starts_with("<?xml") || first.starts_with("<HealthData") {
        "this looks like an Apple Health export (export.xml), not a CSV of readings: \
         upload it again as an Apple Health export, as it is"
            .into()
    } else if genome {
        "this looks like a raw genome file (rsid, chromosome, position, genotype): upload \
         it as your genome, not as readings"
            .into()
    } else {
        let names: Vec<String> = headers
            .iter()
            .take(4)
            .map(|h| format!("\"{}\"", h.trim().chars().take(30).collect::<String>()))
            .collect();
        let more = if headers.len() > 4 { ", …" } else { "" };
        format!(
            "{NEEDED} (a column each; this file's first row has {}{more}): export readings \
             in that shape, or upload an Apple Health export as it is",
            names.join(", ")
        )
    }
}

/// Reads CSV readings from `input` one row at a time, handing each to `row` (which
/// answers `false` to stop early); at most `max_rows` rows, blank ones included. Returns
/// how many readings it read. The first bad row ends the reading with its line; so does
/// a row longer than [`MAX_ROW`], refused before it is buffered. Identical repeats are
/// found (or, when `repeats` is complete from an earlier pass, replayed) and not handed
/// over; a pass that reads the file to its end leaves its repeats in `repeats`.
pub(crate) fn for_each_csv_reading(
    input: impl std::io::Read,
    default_source: &str,
    max_rows: usize,
    repeats: &mut Repeats,
    mut row: impl FnMut(Reading) -> bool,
) -> Result<usize, UploadError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .buffer_capacity(CSV_BUFFER)
        .from_reader(RowBound {
            inner: input,
            handed: 0,
            row_end: 0,
        });
    let headers = match reader.headers() {
        Ok(headers) => headers.clone(),
        Err(e) => {
            return Err(csv_failure(
                &e,
                "line 1".into(),
                "the header row is unreadable",
            ));
        }
    };
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim().eq_ignore_ascii_case(name))
    };
    let (Some(indicator), Some(value), Some(time)) =
        (column("indicator"), column("value"), column("time"))
    else {
        return Err(error("line 1".into(), header_problem(&headers)));
    };
    let (unit, system, code, source) = (
        column("unit"),
        column("code_system"),
        column("code"),
        column("source"),
    );
    let mut count = 0usize;
    let mut rows = 0usize;
    let mut record = csv::StringRecord::new();
    let mut collisions = Collisions::after(Position::Line, std::mem::take(repeats));
    loop {
        let end = reader.position().byte();
        reader.get_mut().row_ended(end);
        let line = rows + 2;
        let location = || format!("line {line}");
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => {
                // Read to its end: a later pass over the same file replays the repeats.
                *repeats = collisions.into_repeats();
                break;
            }
            Err(e) => return Err(csv_failure(&e, location(), "the row is not valid CSV")),
        }
        // Every row counts against the cap, a blank one too: none is free.
        if rows == max_rows {
            return Err(error(
                location(),
                format!("more than {max_rows} rows in one upload"),
            ));
        }
        rows += 1;
        // Fields are trimmed here, not by the parser (which would copy every row).
        if record.iter().all(|field| field.trim().is_empty()) {
            continue;
        }
        let get = |c: Option<usize>| c.and_then(|c| record.get(c)).map(str::trim);
        let reading = reading(
            Fields {
                indicator: get(Some(indicator)),
                value: get(Some(value)).and_then(value_of),
                unit: get(unit),
                time: get(Some(time)),
                code_system: get(system),
                code: get(code),
                source: get(source),
            },
            default_source,
            location,
        )?;
        count += 1;
        if !collisions.check(&reading, line as u64)? {
            continue;
        }
        if !row(reading) {
            break;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path for already canonical times answers what the general parser does,
    /// and refuses what it refuses.
    #[test]
    fn times_are_canonical_whichever_path_reads_them() {
        let same = normalise_time;
        for (raw, want) in [
            ("2025-01-01T08:00:00", Some("2025-01-01T08:00:00")),
            (" 2024-02-29T23:59:59 ", Some("2024-02-29T23:59:59")),
            ("2025-01-01T08:00", Some("2025-01-01T08:00:00")),
            ("2025-01-01 08:00:00", Some("2025-01-01T08:00:00")),
            ("2025-01-01", Some("2025-01-01T00:00:00")),
            ("2025-02-29T08:00:00", None),
            ("2025-13-01T08:00:00", None),
            ("2025-01-01T24:00:00", None),
            ("2025-01-01T08:60:00", None),
            ("1899-12-31T08:00:00", None),
            ("2201-01-01T08:00:00", None),
            ("2025-01-0aT08:00:00", None),
        ] {
            assert_eq!(
                same(raw).map(|(time, _)| time),
                want.map(String::from),
                "{raw}"
            );
        }
        assert_eq!(
            same("2025-01-01T08:00:00+08:00"),
            Some(("2025-01-01T08:00:00".into(), Some("+08:00".into())))
        );
    }

    /// Issue 29: a file that is not a readings CSV says what it is instead.
    #[test]
    fn a_file_that_is_not_readings_says_what_it_is() {
        let problem = |body: &str| {
            parse_health_csv(body.as_bytes(), "upload")
                .unwrap_err()
                .to_string()
        };
        assert!(problem("").contains("the file is empty"), "{}", problem(""));
        assert!(problem("\n\n").contains("the file is empty"));
        let pdf = "%PDF-1.7\n%\u{e2}\u{e3}\n1 0 obj\n";
        assert!(problem(pdf).contains("this is a PDF"), "{}", problem(pdf));
        for genome in [
            "# This data file generated by 23andMe\n# rsid\tchromosome\tposition\tgenotype\nrs4680\t22\t19951271\tAG\n",
            "rsid,chromosome,position,allele1,allele2\nrs4680,22,19951271,A,G\n",
            "rs4680\t22\t19951271\tAG\n",
        ] {
            assert!(
                problem(genome).contains("raw genome file"),
                "{}",
                problem(genome)
            );
        }
        let other = "Date,Steps,Distance (km),Calories,Floors,Minutes active\n2026-03-01,9600,7.1,2300,12,45\n";
        let text = problem(other);
        assert!(
            text.contains("must name indicator, value and time")
                && text.contains("\"Date\", \"Steps\", \"Distance (km)\", \"Calories\", …"),
            "{text}"
        );
    }

    #[test]
    fn csv_rows_parse_and_a_bad_row_is_named_by_line() {
        let csv = "indicator,value,unit,time,source\nHbA1c,5.4,%,2026-01-03,Lab\n\"Glucose, fasting\",92,mg/dL,2026-01-03 08:30,Lab\n";
        let (rows, _) = parse_health_csv(csv.as_bytes(), "upload").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].time, "2026-01-03T08:30:00");
        assert_eq!(rows[0].value, ReadingValue::Number(5.4));
        let bad = "indicator,value,time\nHbA1c,5.4,2026-01-03\nHbA1c,,2026-01-04\n";
        let err = parse_health_csv(bad.as_bytes(), "upload").unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            ("line 3", "value is missing")
        );
    }

    #[test]
    fn json_rows_parse_and_a_bad_row_is_named_by_index() {
        let json = br#"{"readings":[{"indicator":"LDL","value":"<50","unit":"mg/dL","time":"2026-02-01T07:00:00Z"},{"indicator":"LDL","value":3,"unit":"mmol/L","time":"yesterday"}]}"#;
        let err = parse_health_json(json, "upload").unwrap_err();
        assert_eq!(err.location, "readings[1]");
        let (ok, _) = parse_health_json(
            br#"[{"indicator":"LDL","value":"<50","unit":"mg/dL","time":"2026-02-01T07:00:00Z"}]"#,
            "x",
        )
        .unwrap();
        assert_eq!(ok[0].value, ReadingValue::Text("<50".into()));
        assert_eq!(ok[0].time, "2026-02-01T07:00:00");
        assert_eq!(ok[0].offset.as_deref(), Some("+00:00"));
    }

    #[test]
    fn every_field_is_bounded_and_named() {
        let long = "x".repeat(1001);
        for (column, field) in [
            (2, "value"),
            (3, "unit"),
            (4, "code_system"),
            (5, "code"),
            (6, "source"),
        ] {
            let mut cells = ["HbA1c", "5.4", "%", "LOINC", "4548-4", "Lab", "2026-01-03"];
            cells[column - 1] = &long;
            let csv = format!(
                "indicator,value,unit,code_system,code,source,time\nLDL,3,mg/dL,LOINC,1-1,Lab,2026-01-01\n{}\n",
                cells.join(",")
            );
            let err = parse_health_csv(csv.as_bytes(), "upload").unwrap_err();
            assert_eq!(err.location, "line 3", "{field}");
            assert!(err.problem.starts_with(field), "{field}: {}", err.problem);
        }
        let at_limit = format!(
            "indicator,value,unit,time\n{},{},{},2200-12-31\n",
            "i".repeat(MAX_INDICATOR),
            "v".repeat(MAX_TEXT_VALUE),
            "u".repeat(MAX_UNIT)
        );
        assert!(parse_health_csv(at_limit.as_bytes(), "upload").is_ok());
    }

    /// A reader that counts the bytes taken from it.
    struct Counting<R> {
        inner: R,
        taken: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(out)?;
            self.taken.set(self.taken.get() + n as u64);
            Ok(n)
        }
    }

    fn csv_rows(input: impl Read, max_rows: usize) -> Result<usize, UploadError> {
        for_each_csv_reading(input, "upload", max_rows, &mut Repeats::default(), |_| true)
    }

    /// An endless row (one line, or a quoted field of endless short lines) is
    /// refused with its line once the parser holds the bound, never the whole of it.
    #[test]
    fn a_row_over_the_limit_is_refused_by_line_before_it_is_buffered() {
        let head = "indicator,value,unit,time\nLDL,3,mg/dL,2026-01-01\nLDL,4,mg/dL,2026-01-02\n";
        for (open, endless) in [(&b""[..], &b"x"[..]), (&b"\""[..], &b"x\n"[..])] {
            let taken = std::rc::Rc::new(std::cell::Cell::new(0));
            let input = Counting {
                inner: head.as_bytes().chain(open).chain(Endless(endless, 0)),
                taken: taken.clone(),
            };
            let err = csv_rows(input, 10).unwrap_err();
            assert_eq!(
                (err.location.as_str(), err.problem.as_str()),
                ("line 4", "the row is longer than 64 KiB"),
                "{endless:?}"
            );
            let most = head.len() as u64 + MAX_ROW + CSV_BUFFER as u64 + 1;
            assert!(taken.get() <= most, "{} bytes read", taken.get());
        }
        // A row just under the bound, last in the file, is fine.
        let long = format!(
            "indicator,value,unit,time,note\nLDL,3,mg/dL,2026-01-01,{}",
            "n".repeat(60_000)
        );
        assert_eq!(csv_rows(long.as_bytes(), 10), Ok(1));
    }

    /// `pattern` repeated without end (the next byte's index in it).
    struct Endless(&'static [u8], usize);

    impl Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            for byte in out.iter_mut() {
                *byte = self.0[self.1 % self.0.len()];
                self.1 += 1;
            }
            Ok(out.len())
        }
    }

    #[test]
    fn blank_rows_count_against_the_row_cap() {
        let blank = format!("indicator,value,time\n{}", ",,\n".repeat(10));
        let err = csv_rows(blank.as_bytes(), 5).unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            ("line 7", "more than 5 rows in one upload")
        );
        let mixed = "indicator,value,unit,time\n,,,\nLDL,3,mg/dL,2026-01-01\n,,,\n";
        assert_eq!(
            csv_rows(mixed.as_bytes(), 3),
            Ok(1),
            "readings are counted apart"
        );
    }
}
