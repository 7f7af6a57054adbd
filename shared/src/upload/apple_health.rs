//! Apple Health exports (E4): `export.xml`, or the `export.zip` the Health app writes
//! around it, stream-parsed in constant memory (never a DOM: exports are hundreds of MB
//! to several GB). `Record` elements of the common quantity types and sleep analysis
//! become readings with units and LOINC codes; anything else is counted and skipped.
//!
//! Sleep (`HKCategoryTypeIdentifierSleepAnalysis`) becomes one set of readings per night
//! and per source (`sourceName`), in minutes: `Sleep asleep` (Asleep, AsleepUnspecified,
//! AsleepCore, AsleepDeep and AsleepREM together), `Sleep core`, `Sleep deep`, `Sleep REM`
//! and `Sleep awake` when that stage occurs that night, `Sleep in bed` when the source
//! recorded InBed. The night of an interval is the local date of its end (the export's own
//! offset), except that an interval ending after 18:00:00 local belongs to the next day's
//! night: a night is dated by the morning it ends, a nap ending at 15:00 is that day's, an
//! evening segment ending at 23:50 is the next morning's. Per source, night and stage the
//! intervals are merged (sorted by start, overlaps united) before they are added up, so a
//! repeated or overlapping interval counts once (`Asleep`, written before iOS 16, and
//! `AsleepUnspecified` are one HealthKit value and one stage). A night's readings are timed
//! at its wake time, the latest end of its intervals, with that end's offset (at midnight
//! of the night's date when that end is after 18:00, the evening before). The intervals are
//! kept until the end of the stream, bounded: at most [`MAX_SLEEP_NIGHTS`] (source, night)
//! pairs, [`MAX_SLEEP_INTERVALS_PER_NIGHT`] intervals in one and [`MAX_SLEEP_INTERVALS`] in
//! all (an interval past a bound is counted as invalid); the sleep readings are handed on
//! after the last record, in (night, source, name) order.
//!
//! Bounds: one tag (or the DTD) at most [`MAX_EVENT_BYTES`], elements at most
//! [`MAX_DEPTH`] deep, at most [`MAX_RECORDS`] records, at most [`MAX_XML_NODES`] nodes of
//! any kind (every element, `Record` or not, every text run and comment: none is free)
//! and [`MAX_XML_BYTES`] bytes; the zip's entries inflate within
//! `bounds::INFLATION`, one budget for the archive; no entity is expanded (only the
//! five predefined ones and character references, in the attributes read). A record of
//! a known type whose value, time, unit or source is unusable is counted as invalid and
//! skipped (a phone's export must not fail on one odd entry); malformed XML is an error
//! naming its line.
//!
//! The zip is read as a stream (no `Seek`: the deployed import streams the S3 object),
//! local header by local header. Apple's archives are written by a streaming zipper: the
//! sizes follow the data in a data descriptor, which the `zip` crate's stream reader
//! refuses ("the file length is not available in the local header"). A deflate stream
//! ends by itself, so `flate2` inflates the entry without knowing its size, and the
//! CRC-32 is checked against the descriptor.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, BufRead, Read};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::UploadError;
use super::bounds::{self, Exceeded, INFLATION, Spent, refusal, size};
use crate::domain::measures::{self, format_offset};
use crate::domain::{Reading, ReadingValue, day_accepted};

/// The most bytes one XML event (a tag with its attributes, a text run, the DTD) may
/// take: the reader's buffer never grows past it.
pub(crate) const MAX_EVENT_BYTES: u64 = 1 << 20;
/// The deepest element nesting accepted (an export nests five deep at most).
pub(crate) const MAX_DEPTH: usize = 32;
/// The most `Record` elements one export may hold (a 2 GB export holds about 8 million).
pub(crate) const MAX_RECORDS: u64 = 100_000_000;
/// The most XML nodes (elements of any name, text runs, comments) one export may hold:
/// a real export has about 4 to 8 per record (the `Record`, its `MetadataEntry`
/// children, the whitespace between them), so this is [`MAX_RECORDS`] records at 10.
pub(crate) const MAX_XML_NODES: u64 = 1_000_000_000;
/// The most bytes one `export.xml` may hold (decompressed): a ten-year export is several
/// GB, and [`MAX_RECORDS`] records of about 250 bytes are 25 GB.
pub(crate) const MAX_XML_BYTES: u64 = 32 << 30;

/// The bounds of one `export.xml` (tests use smaller ones).
#[derive(Debug, Clone, Copy)]
struct XmlLimits {
    bytes: u64,
    nodes: u64,
}

const EXPORT: XmlLimits = XmlLimits {
    bytes: MAX_XML_BYTES,
    nodes: MAX_XML_NODES,
};
/// Distinct skipped types reported by name; the rest are added up under [`OTHER_TYPES`].
const MAX_SKIPPED_TYPES: usize = 100;
const MAX_TYPE_NAME: usize = 100;
pub(crate) const OTHER_TYPES: &str = "(other types)";
/// Blood-pressure fingerprints kept to drop a `Correlation`'s copies of its records.
const MAX_FINGERPRINTS: usize = 1_000_000;
/// Zip entries walked before `export.xml` at most.
const MAX_ZIP_ENTRIES: usize = 100_000;
/// Like the other uploads (upload/health.rs).
const MAX_UNIT: usize = 64;
const MAX_SOURCE: usize = 200;
/// The source of a record without a `sourceName`.
const DEFAULT_SOURCE: &str = "Apple Health";
/// The longest sleep interval accepted, in seconds (a week).
const MAX_SLEEP_SECONDS: i64 = 7 * 24 * 60 * 60;
/// Distinct (source, night) pairs of sleep kept (a person has a few thousand nights).
pub(crate) const MAX_SLEEP_NIGHTS: usize = 200_000;
/// Sleep intervals kept for one source's night (a Watch writes a few dozen).
pub(crate) const MAX_SLEEP_INTERVALS_PER_NIGHT: usize = 2_000;
/// Sleep intervals kept in all (16 bytes each: 32 MB, under 64 MB with the vectors'
/// spare capacity; a decade of nights from a few sources is a few hundred thousand).
pub(crate) const MAX_SLEEP_INTERVALS: usize = 2_000_000;
/// An interval ending after this local time belongs to the next day's night.
const EVENING: chrono::NaiveTime = match chrono::NaiveTime::from_hms_opt(18, 0, 0) {
    Some(time) => time,
    None => panic!("18:00:00 is a time"),
};

/// What an import of one export saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AppleHealthReport {
    /// `Record` elements seen (also those inside a `Correlation`).
    pub records: u64,
    /// Readings handed on.
    pub imported: u64,
    /// Copies of a blood-pressure record already handed on (a `Correlation` repeats them).
    pub duplicates: u64,
    /// Records of a known type left out because a value, time, unit or source was unusable.
    pub invalid: u64,
    /// The first of those: its line and what was wrong (never the value).
    pub first_invalid: Option<UploadError>,
    /// Records of types not imported, per type (at most [`MAX_SKIPPED_TYPES`] names).
    pub skipped: BTreeMap<String, u64>,
}

impl AppleHealthReport {
    fn skip(&mut self, kind: &str) {
        if let Some(count) = self.skipped.get_mut(kind) {
            *count += 1;
            return;
        }
        let name = if self.skipped.len() < MAX_SKIPPED_TYPES
            && kind.len() <= MAX_TYPE_NAME
            && kind
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        {
            kind
        } else {
            OTHER_TYPES
        };
        *self.skipped.entry(name.to_string()).or_default() += 1;
    }

    fn reject(&mut self, line: u64, problem: &str) {
        self.invalid += 1;
        if self.first_invalid.is_none() {
            self.first_invalid = Some(error(line, problem));
        }
    }
}

fn error(line: u64, problem: impl Into<String>) -> UploadError {
    UploadError {
        location: format!("line {line}"),
        problem: problem.into(),
    }
}

fn zip_error(problem: impl Into<String>) -> UploadError {
    UploadError {
        location: "zip".into(),
        problem: problem.into(),
    }
}

/// How a record's unit becomes the reading's.
#[derive(Clone, Copy)]
enum Unit {
    /// Always this unit (Apple's is fixed for the type).
    Fixed(&'static str),
    /// The export's own unit (kg or lb, cm or ft, degC or degF, kcal or kJ).
    Keep,
    /// mg/dL kept; Apple's `mmol<180.15588...>/L` written `mmol/L`.
    Glucose,
}

/// A quantity type imported: its reading's name, LOINC code and unit, and the factor
/// from Apple's value (fractions 0..1 for percentages) to the reading's.
struct QuantityType {
    apple: &'static str,
    indicator: &'static str,
    loinc: Option<&'static str>,
    unit: Unit,
    scale: f64,
    /// Also inside a blood-pressure `Correlation`: copies are dropped.
    deduplicate: bool,
}

const fn quantity(
    apple: &'static str,
    indicator: &'static str,
    loinc: Option<&'static str>,
    unit: Unit,
) -> QuantityType {
    QuantityType {
        apple,
        indicator,
        loinc,
        unit,
        scale: 1.0,
        deduplicate: false,
    }
}

const QUANTITY_TYPES: &[QuantityType] = &[
    quantity(
        "HKQuantityTypeIdentifierHeartRate",
        "Heart rate",
        Some("8867-4"),
        Unit::Fixed("/min"),
    ),
    quantity(
        "HKQuantityTypeIdentifierRestingHeartRate",
        "Resting heart rate",
        Some("40443-4"),
        Unit::Fixed("/min"),
    ),
    quantity(
        "HKQuantityTypeIdentifierWalkingHeartRateAverage",
        "Walking heart rate average",
        None,
        Unit::Fixed("/min"),
    ),
    quantity(
        "HKQuantityTypeIdentifierHeartRateVariabilitySDNN",
        "Heart rate variability SDNN",
        Some("80404-7"),
        Unit::Fixed("ms"),
    ),
    quantity(
        "HKQuantityTypeIdentifierStepCount",
        "Steps",
        Some("55423-8"),
        Unit::Fixed("steps"),
    ),
    quantity(
        "HKQuantityTypeIdentifierBloodGlucose",
        "Blood glucose",
        Some("2339-0"),
        Unit::Glucose,
    ),
    quantity(
        "HKQuantityTypeIdentifierBodyMass",
        "Body weight",
        Some("29463-7"),
        Unit::Keep,
    ),
    QuantityType {
        scale: 100.0,
        ..quantity(
            "HKQuantityTypeIdentifierBodyFatPercentage",
            "Body fat percentage",
            Some("41982-0"),
            Unit::Fixed("%"),
        )
    },
    quantity(
        "HKQuantityTypeIdentifierBodyMassIndex",
        "Body mass index",
        Some("39156-5"),
        Unit::Fixed("kg/m2"),
    ),
    quantity(
        "HKQuantityTypeIdentifierHeight",
        "Body height",
        Some("8302-2"),
        Unit::Keep,
    ),
    QuantityType {
        deduplicate: true,
        ..quantity(
            "HKQuantityTypeIdentifierBloodPressureSystolic",
            "Systolic blood pressure",
            Some("8480-6"),
            Unit::Fixed("mmHg"),
        )
    },
    QuantityType {
        deduplicate: true,
        ..quantity(
            "HKQuantityTypeIdentifierBloodPressureDiastolic",
            "Diastolic blood pressure",
            Some("8462-4"),
            Unit::Fixed("mmHg"),
        )
    },
    QuantityType {
        scale: 100.0,
        ..quantity(
            "HKQuantityTypeIdentifierOxygenSaturation",
            "Oxygen saturation",
            Some("59408-5"),
            Unit::Fixed("%"),
        )
    },
    quantity(
        "HKQuantityTypeIdentifierRespiratoryRate",
        "Respiratory rate",
        Some("9279-1"),
        Unit::Fixed("/min"),
    ),
    quantity(
        "HKQuantityTypeIdentifierBodyTemperature",
        "Body temperature",
        Some("8310-5"),
        Unit::Keep,
    ),
    quantity(
        "HKQuantityTypeIdentifierActiveEnergyBurned",
        "Active energy burned",
        Some("41981-2"),
        Unit::Keep,
    ),
];

const SLEEP_TYPE: &str = "HKCategoryTypeIdentifierSleepAnalysis";

/// A sleep stage: the intervals merged together (the discriminant indexes a night's
/// totals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    InBed,
    /// `Asleep` (before iOS 16) and `AsleepUnspecified`: one HealthKit value.
    Unspecified,
    Core,
    Deep,
    Rem,
    Awake,
}

const STAGES: usize = 6;

/// Sleep stages (the category value).
const SLEEP_STAGES: &[(&str, Stage)] = &[
    ("HKCategoryValueSleepAnalysisInBed", Stage::InBed),
    ("HKCategoryValueSleepAnalysisAsleep", Stage::Unspecified),
    (
        "HKCategoryValueSleepAnalysisAsleepUnspecified",
        Stage::Unspecified,
    ),
    ("HKCategoryValueSleepAnalysisAsleepCore", Stage::Core),
    ("HKCategoryValueSleepAnalysisAsleepDeep", Stage::Deep),
    ("HKCategoryValueSleepAnalysisAsleepREM", Stage::Rem),
    ("HKCategoryValueSleepAnalysisAwake", Stage::Awake),
];

/// One sleep record, checked: its night, source and stage, and its interval in UTC
/// seconds since 1970 (the end's local time and offset too: it may be the wake time).
struct SleepRecord {
    night: chrono::NaiveDate,
    source: String,
    stage: Stage,
    start: i64,
    seconds: u32,
    end_local: chrono::NaiveDateTime,
    end_offset: i64,
}

/// One interval kept (16 bytes).
#[derive(Clone, Copy)]
struct Interval {
    start: i64,
    seconds: u32,
    stage: Stage,
}

/// One source's night so far.
struct Night {
    intervals: Vec<Interval>,
    /// The latest end (UTC seconds), its local time and offset.
    wake: i64,
    wake_local: chrono::NaiveDateTime,
    wake_offset: i64,
}

/// The sleep intervals of an export, per (night, source), until the end of the stream.
#[derive(Default)]
struct SleepNights {
    /// Sources by id (each source's name once).
    sources: Vec<String>,
    source_ids: HashMap<String, u32>,
    nights: HashMap<(chrono::NaiveDate, u32), Night>,
    intervals: usize,
}

impl SleepNights {
    fn add(&mut self, record: SleepRecord) -> Result<(), &'static str> {
        if self.intervals >= MAX_SLEEP_INTERVALS {
            return Err("more than 2000000 sleep intervals in one export");
        }
        let source = self.source_ids.get(&record.source).copied();
        let night = source.and_then(|id| self.nights.get_mut(&(record.night, id)));
        let end = record.start.saturating_add(i64::from(record.seconds));
        let interval = Interval {
            start: record.start,
            seconds: record.seconds,
            stage: record.stage,
        };
        if let Some(night) = night {
            if night.intervals.len() >= MAX_SLEEP_INTERVALS_PER_NIGHT {
                return Err("more than 2000 sleep intervals in one night of one source");
            }
            night.intervals.push(interval);
            if end > night.wake {
                night.wake = end;
                night.wake_local = record.end_local;
                night.wake_offset = record.end_offset;
            }
        } else {
            if self.nights.len() >= MAX_SLEEP_NIGHTS {
                return Err("more than 200000 nights of sleep (per source) in one export");
            }
            let id = match source {
                Some(id) => id,
                None => {
                    // At most one new source per night kept: fewer than u32::MAX.
                    let id = u32::try_from(self.sources.len())
                        .map_err(|_| "too many sleep sources in one export")?;
                    self.sources.push(record.source.clone());
                    self.source_ids.insert(record.source, id);
                    id
                }
            };
            self.nights.insert(
                (record.night, id),
                Night {
                    intervals: vec![interval],
                    wake: end,
                    wake_local: record.end_local,
                    wake_offset: record.end_offset,
                },
            );
        }
        self.intervals += 1;
        Ok(())
    }

    /// Every night's readings, in (night, source, name) order.
    fn into_readings(self) -> impl Iterator<Item = Reading> {
        let SleepNights {
            sources, nights, ..
        } = self;
        let mut nights: Vec<_> = nights.into_iter().collect();
        nights.sort_unstable_by(|((a_night, a), _), ((b_night, b), _)| {
            let name = |id: &u32| sources.get(*id as usize).map_or("", String::as_str);
            (a_night, name(a)).cmp(&(b_night, name(b)))
        });
        nights.into_iter().flat_map(move |((date, id), night)| {
            let source = sources.get(id as usize).cloned().unwrap_or_default();
            night_readings(date, source, night)
        })
    }
}

/// Seconds per stage, each stage's intervals merged first (`None`: the stage did not occur).
fn stage_seconds(mut intervals: Vec<Interval>) -> [Option<i64>; STAGES] {
    intervals.sort_unstable_by_key(|i| (i.stage, i.start));
    let mut totals = [None; STAGES];
    let mut current: Option<(Stage, i64, i64)> = None;
    fn close(totals: &mut [Option<i64>; STAGES], (stage, start, end): (Stage, i64, i64)) {
        let total = &mut totals[stage as usize];
        *total = Some(total.unwrap_or(0).saturating_add(end.saturating_sub(start)));
    }
    for interval in intervals {
        let end = interval.start.saturating_add(i64::from(interval.seconds));
        current = match current {
            Some((stage, start, current_end))
                if stage == interval.stage && interval.start <= current_end =>
            {
                Some((stage, start, current_end.max(end)))
            }
            Some(done) => {
                close(&mut totals, done);
                Some((interval.stage, interval.start, end))
            }
            None => Some((interval.stage, interval.start, end)),
        };
    }
    if let Some(done) = current {
        close(&mut totals, done);
    }
    totals
}

/// One source's night as readings, in name order.
fn night_readings(date: chrono::NaiveDate, source: String, night: Night) -> Vec<Reading> {
    let time = if night.wake_local.date() == date {
        night.wake_local
    } else {
        date.and_time(chrono::NaiveTime::MIN)
    }
    .format("%Y-%m-%dT%H:%M:%S")
    .to_string();
    let offset = format_offset(night.wake_offset);
    let totals = stage_seconds(night.intervals);
    let asleep = [Stage::Unspecified, Stage::Core, Stage::Deep, Stage::Rem]
        .iter()
        .filter_map(|&stage| totals[stage as usize])
        .reduce(i64::saturating_add);
    let mut named: Vec<(&str, i64)> = [
        ("Sleep asleep", asleep),
        ("Sleep core", totals[Stage::Core as usize]),
        ("Sleep deep", totals[Stage::Deep as usize]),
        ("Sleep REM", totals[Stage::Rem as usize]),
        ("Sleep awake", totals[Stage::Awake as usize]),
        ("Sleep in bed", totals[Stage::InBed as usize]),
    ]
    .into_iter()
    .filter_map(|(name, seconds)| Some((name, seconds?)))
    .collect();
    named.sort_unstable_by_key(|&(name, _)| name);
    named
        .into_iter()
        .map(|(name, seconds)| Reading {
            indicator: name.to_string(),
            value: ReadingValue::Number((seconds as f64 / 60.0 * 100.0).round() / 100.0),
            unit: Some("min".into()),
            time: time.clone(),
            code_system: None,
            code: None,
            source: source.clone(),
            offset: Some(offset.clone()),
            original: None,
        })
        .collect()
}

/// A `BufRead` that counts the lines consumed (for error locations) and refuses to hand
/// out more than [`MAX_EVENT_BYTES`] between two calls of [`Self::next_event`], which
/// bounds quick-xml's event buffer.
struct Counted<R> {
    inner: R,
    newlines: u64,
    event_bytes: u64,
    /// Bytes consumed in all, at most `max_bytes`.
    total: u64,
    max_bytes: u64,
}

/// The marker inside the I/O error an overlong event raises.
#[derive(Debug)]
struct EventTooLong;

impl std::fmt::Display for EventTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "an XML tag is longer than {MAX_EVENT_BYTES} bytes")
    }
}

impl std::error::Error for EventTooLong {}

impl<R> Counted<R> {
    fn line(&self) -> u64 {
        self.newlines + 1
    }

    fn next_event(&mut self) {
        self.event_bytes = 0;
    }
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let allowance = MAX_EVENT_BYTES.saturating_sub(self.event_bytes);
        if allowance == 0 {
            return Err(io::Error::other(EventTooLong));
        }
        let left = self.max_bytes.saturating_sub(self.total);
        let available = self.inner.fill_buf()?;
        if left == 0 && !available.is_empty() {
            return Err(Exceeded::here(format!(
                "the export is larger than {} (decompressed)",
                size(self.max_bytes)
            )));
        }
        let n = available
            .len()
            .min(usize::try_from(allowance.min(left)).unwrap_or(usize::MAX));
        Ok(&available[..n])
    }

    fn consume(&mut self, amount: usize) {
        // The bytes consumed are still in the inner buffer: fill_buf does no I/O here.
        if let Ok(available) = self.inner.fill_buf() {
            let end = amount.min(available.len());
            self.newlines += available[..end].iter().filter(|&&b| b == b'\n').count() as u64;
        }
        self.event_bytes = self.event_bytes.saturating_add(amount as u64);
        self.total = self.total.saturating_add(amount as u64);
        self.inner.consume(amount);
    }
}

/// A quick-xml error as an upload error: the line and the kind, never the text.
fn xml_error(err: &quick_xml::Error, line: u64) -> UploadError {
    if let quick_xml::Error::Io(io) = err
        && let Some(refused) = refusal(io, || format!("line {line}"))
    {
        return refused;
    }
    let problem = match err {
        quick_xml::Error::Io(io) => {
            if io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<EventTooLong>().is_some())
            {
                EventTooLong.to_string()
            } else {
                format!("the file could not be read ({})", io.kind())
            }
        }
        quick_xml::Error::Syntax(_) => "malformed XML (syntax)".into(),
        quick_xml::Error::IllFormed(_) => "malformed XML (mismatched or missing tags)".into(),
        quick_xml::Error::InvalidAttr(_) => "malformed XML (an attribute)".into(),
        quick_xml::Error::Encoding(_) => "the file is not UTF-8".into(),
        quick_xml::Error::Escape(_) => {
            "malformed XML (an undefined entity or a bad character reference)".into()
        }
        quick_xml::Error::Namespace(_) => "malformed XML (a namespace)".into(),
    };
    error(line, problem)
}

/// The attributes of a `Record` that matter, unescaped.
#[derive(Default)]
struct RecordAttributes {
    kind: Option<String>,
    source: Option<String>,
    unit: Option<String>,
    value: Option<String>,
    start: Option<String>,
    end: Option<String>,
}

fn record_attributes(tag: &BytesStart<'_>, line: u64) -> Result<RecordAttributes, UploadError> {
    let mut out = RecordAttributes::default();
    for attribute in tag.attributes() {
        let attribute = attribute.map_err(|e| xml_error(&e.into(), line))?;
        let slot = match attribute.key.as_ref() {
            "type" => &mut out.kind,
            "sourceName" => &mut out.source,
            "unit" => &mut out.unit,
            "value" => &mut out.value,
            "startDate" => &mut out.start,
            "endDate" => &mut out.end,
            _ => continue,
        };
        let value = attribute
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| xml_error(&e, line))?;
        *slot = Some(value.into_owned());
    }
    Ok(out)
}

fn two_digits(b: &[u8]) -> Option<u32> {
    match b {
        [t, u] if t.is_ascii_digit() && u.is_ascii_digit() => {
            Some(u32::from(t - b'0') * 10 + u32::from(u - b'0'))
        }
        _ => None,
    }
}

/// Apple's `YYYY-MM-DD HH:MM:SS +HHMM` as the naive local time and the offset in
/// seconds (0 when absent).
fn apple_time(raw: &str) -> Option<(chrono::NaiveDateTime, i64)> {
    let raw = raw.trim();
    let b = raw.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year: i32 = raw.get(..4)?.parse().ok()?;
    let date =
        chrono::NaiveDate::from_ymd_opt(year, two_digits(&b[5..7])?, two_digits(&b[8..10])?)?;
    let time = chrono::NaiveTime::from_hms_opt(
        two_digits(&b[11..13])?,
        two_digits(&b[14..16])?,
        two_digits(&b[17..19])?,
    )?;
    let rest = raw[19..].trim();
    let offset = match rest.as_bytes() {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, m1, m2] => {
            let minutes =
                i64::from(two_digits(&[*h1, *h2])?) * 60 + i64::from(two_digits(&[*m1, *m2])?);
            if *sign == b'-' {
                -minutes * 60
            } else {
                minutes * 60
            }
        }
        _ => return None,
    };
    Some((date.and_time(time), offset))
}

fn finite(raw: &str) -> Option<f64> {
    raw.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// What one record becomes (one at a time, on the stack: not boxed, no allocation per
/// record).
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Reading(Reading, bool),
    Sleep(SleepRecord),
    Skip,
    Invalid(&'static str),
}

fn bounded_source(source: Option<String>) -> Result<String, &'static str> {
    let source = source.map(|s| s.trim().to_string()).unwrap_or_default();
    if source.len() > MAX_SOURCE {
        return Err("sourceName is longer than 200 bytes (UTF-8)");
    }
    Ok(if source.is_empty() {
        DEFAULT_SOURCE.to_string()
    } else {
        source
    })
}

fn convert(attributes: RecordAttributes) -> Outcome {
    let Some(kind) = attributes.kind.as_deref() else {
        return Outcome::Skip;
    };
    let Some(start) = attributes.start.as_deref().and_then(apple_time) else {
        return Outcome::Invalid("startDate is not YYYY-MM-DD HH:MM:SS");
    };
    if !day_accepted(start.0.date()) {
        return Outcome::Invalid("startDate is outside 1900-01-01..2200-12-31");
    }
    if kind == SLEEP_TYPE {
        return sleep_record(attributes, start);
    }
    let time = start.0.format("%Y-%m-%dT%H:%M:%S").to_string();
    let Some(spec) = QUANTITY_TYPES.iter().find(|q| q.apple == kind) else {
        return Outcome::Skip;
    };
    let Some(value) = attributes.value.as_deref().and_then(finite) else {
        return Outcome::Invalid("value is not a number");
    };
    let value = if spec.scale == 1.0 {
        value
    } else {
        (value * spec.scale * 1e9).round() / 1e9
    };
    let unit = match spec.unit {
        Unit::Fixed(unit) => Some(unit.to_string()),
        Unit::Glucose
            if attributes
                .unit
                .as_deref()
                .is_some_and(|u| u.starts_with("mmol")) =>
        {
            Some("mmol/L".to_string())
        }
        Unit::Keep | Unit::Glucose => attributes
            .unit
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty()),
    };
    if unit.as_ref().is_some_and(|u| u.len() > MAX_UNIT) {
        return Outcome::Invalid("unit is longer than 64 bytes (UTF-8)");
    }
    let source = match bounded_source(attributes.source) {
        Ok(source) => source,
        Err(problem) => return Outcome::Invalid(problem),
    };
    let sent = Reading {
        indicator: spec.indicator.to_string(),
        value: ReadingValue::Number(value),
        unit,
        time,
        code_system: spec.loinc.map(|_| "LOINC".to_string()),
        code: spec.loinc.map(str::to_string),
        source,
        offset: Some(format_offset(start.1)),
        original: None,
    };
    // The catalogue's name and canonical unit (kg for lb, °C for degF, mg/dL for mmol/L).
    match measures::catalogue().canonical(sent) {
        Ok(reading) => Outcome::Reading(reading, spec.deduplicate),
        Err(_) => Outcome::Invalid("the unit is not one this measure takes"),
    }
}

/// A sleep record checked: its stage, interval (at most a week) and night.
fn sleep_record(attributes: RecordAttributes, start: (chrono::NaiveDateTime, i64)) -> Outcome {
    let stage = attributes.value.as_deref().map(str::trim);
    let Some(&(_, stage)) = SLEEP_STAGES.iter().find(|(v, _)| Some(*v) == stage) else {
        return Outcome::Skip;
    };
    let Some(end) = attributes.end.as_deref().and_then(apple_time) else {
        return Outcome::Invalid("endDate is not YYYY-MM-DD HH:MM:SS");
    };
    // Four-digit years and offsets under 100 hours: no overflow.
    let start_utc = start.0.and_utc().timestamp() - start.1;
    let end_utc = end.0.and_utc().timestamp() - end.1;
    let seconds = end_utc - start_utc;
    let Some(seconds) = u32::try_from(seconds)
        .ok()
        .filter(|&s| i64::from(s) <= MAX_SLEEP_SECONDS)
    else {
        return Outcome::Invalid("the sleep interval is negative or longer than a week");
    };
    let night = if end.0.time() > EVENING {
        end.0.date().succ_opt()
    } else {
        Some(end.0.date())
    };
    let Some(night) = night.filter(|&night| day_accepted(night)) else {
        return Outcome::Invalid("the night of endDate is outside 1900-01-01..2200-12-31");
    };
    let source = match bounded_source(attributes.source) {
        Ok(source) => source,
        Err(problem) => return Outcome::Invalid(problem),
    };
    Outcome::Sleep(SleepRecord {
        night,
        source,
        stage,
        start: start_utc,
        seconds,
        end_local: end.0,
        end_offset: end.1,
    })
}

fn fingerprint(reading: &Reading) -> u64 {
    let mut hasher = DefaultHasher::new();
    reading.indicator.hash(&mut hasher);
    reading.time.hash(&mut hasher);
    reading.source.hash(&mut hasher);
    if let ReadingValue::Number(n) = reading.value {
        n.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}

/// Streams `export.xml`, handing each reading to `each` (whose error ends the import);
/// the sleep readings, one set per night and source, come after the last record.
pub(crate) fn stream_apple_health_xml<R: BufRead>(
    reader: R,
    each: &mut dyn FnMut(Reading) -> Result<(), UploadError>,
) -> Result<AppleHealthReport, UploadError> {
    stream_xml(reader, each, EXPORT)
}

/// [`stream_apple_health_xml`] within `limits`.
fn stream_xml<R: BufRead>(
    reader: R,
    each: &mut dyn FnMut(Reading) -> Result<(), UploadError>,
    limits: XmlLimits,
) -> Result<AppleHealthReport, UploadError> {
    let mut xml = Reader::from_reader(Counted {
        inner: reader,
        newlines: 0,
        event_bytes: 0,
        total: 0,
        max_bytes: limits.bytes,
    });
    let mut nodes = 0u64;
    let mut report = AppleHealthReport::default();
    let mut seen = HashSet::new();
    let mut sleep = SleepNights::default();
    let mut buf = Vec::new();
    let mut depth = 0usize;
    let mut root_seen = false;
    loop {
        buf.clear();
        xml.get_mut().next_event();
        let event = match xml.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(e) => return Err(xml_error(&e, xml.get_ref().line())),
        };
        let line = xml.get_ref().line();
        // Every node counts, whatever its name or kind: none is free.
        nodes += 1;
        if nodes > limits.nodes && !matches!(event, Event::Eof) {
            return Err(error(
                line,
                format!("more than {} XML nodes in one export", limits.nodes),
            ));
        }
        let (tag, empty) = match event {
            Event::Start(tag) => (tag, false),
            Event::Empty(tag) => (tag, true),
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        if depth == 0 {
            if root_seen || tag.name().as_ref() != "HealthData" {
                return Err(error(
                    line,
                    "not an Apple Health export (the root element is not HealthData)",
                ));
            }
            root_seen = true;
        }
        if depth + 1 > MAX_DEPTH {
            return Err(error(
                line,
                format!("elements are nested deeper than {MAX_DEPTH}"),
            ));
        }
        if !empty {
            depth += 1;
        }
        if tag.name().as_ref() != "Record" {
            continue;
        }
        report.records += 1;
        if report.records > MAX_RECORDS {
            return Err(error(
                line,
                format!("more than {MAX_RECORDS} records in one export"),
            ));
        }
        let attributes = record_attributes(&tag, line)?;
        let kind = attributes.kind.clone();
        match convert(attributes) {
            Outcome::Skip => report.skip(kind.as_deref().unwrap_or(OTHER_TYPES)),
            Outcome::Invalid(problem) => report.reject(line, problem),
            Outcome::Sleep(record) => {
                if let Err(problem) = sleep.add(record) {
                    report.reject(line, problem);
                }
            }
            Outcome::Reading(reading, deduplicate) => {
                if deduplicate {
                    let print = fingerprint(&reading);
                    if seen.contains(&print) {
                        report.duplicates += 1;
                        continue;
                    }
                    if seen.len() < MAX_FINGERPRINTS {
                        seen.insert(print);
                    }
                }
                each(reading)?;
                report.imported += 1;
            }
        }
    }
    if !root_seen {
        return Err(error(
            xml.get_ref().line(),
            "not an Apple Health export (no HealthData element)",
        ));
    }
    if depth > 0 {
        return Err(error(
            xml.get_ref().line(),
            "the file ends inside an element (truncated?)",
        ));
    }
    for reading in sleep.into_readings() {
        each(reading)?;
        report.imported += 1;
    }
    Ok(report)
}

/// A reader that computes the CRC-32 and length of what passes through it.
struct Checksummed<R> {
    inner: R,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<R: Read> Read for Checksummed<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.crc.update(&out[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

fn read_array<const N: usize>(input: &mut impl Read, what: &str) -> Result<[u8; N], UploadError> {
    let mut out = [0u8; N];
    input
        .read_exact(&mut out)
        .map_err(|_| zip_error(format!("the archive ends inside {what} (truncated?)")))?;
    Ok(out)
}

fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// One local file header of a zip.
struct LocalEntry {
    flags: u16,
    method: u16,
    crc: u32,
    compressed: u64,
    uncompressed: u64,
    zip64: bool,
    name: Vec<u8>,
}

impl LocalEntry {
    fn descriptor(&self) -> bool {
        self.flags & 0x08 != 0
    }

    /// `export.xml` at any depth, in any case (some locales write `Export.xml`).
    fn is_export(&self) -> bool {
        let file = self.name.rsplit(|&b| b == b'/').next().unwrap_or(&[]);
        file.eq_ignore_ascii_case(b"export.xml")
    }
}

fn local_entry(input: &mut impl Read) -> Result<LocalEntry, UploadError> {
    let h: [u8; 26] = read_array(input, "a file header")?;
    let mut name = vec![0u8; usize::from(le16(&h[22..24]))];
    input
        .read_exact(&mut name)
        .map_err(|_| zip_error("the archive ends inside a file header (truncated?)"))?;
    let mut extra = vec![0u8; usize::from(le16(&h[24..26]))];
    input
        .read_exact(&mut extra)
        .map_err(|_| zip_error("the archive ends inside a file header (truncated?)"))?;
    let mut entry = LocalEntry {
        flags: le16(&h[2..4]),
        method: le16(&h[4..6]),
        crc: le32(&h[10..14]),
        compressed: u64::from(le32(&h[14..18])),
        uncompressed: u64::from(le32(&h[18..22])),
        zip64: false,
        name,
    };
    // The zip64 extra field: the sizes that did not fit (uncompressed first).
    let mut rest = extra.as_slice();
    while rest.len() >= 4 {
        let (id, size) = (le16(&rest[..2]), usize::from(le16(&rest[2..4])));
        let body = rest.get(4..4 + size).unwrap_or(&[]);
        if id == 0x0001 {
            entry.zip64 = true;
            let mut fields = body.chunks_exact(8).map(le64);
            if entry.uncompressed == u64::from(u32::MAX) {
                entry.uncompressed = fields.next().unwrap_or(entry.uncompressed);
            }
            if entry.compressed == u64::from(u32::MAX) {
                entry.compressed = fields.next().unwrap_or(entry.compressed);
            }
        }
        rest = rest.get(4 + size..).unwrap_or(&[]);
    }
    if entry.flags & 0x01 != 0 {
        return Err(zip_error("encrypted archives are not supported"));
    }
    Ok(entry)
}

/// The data descriptor after an entry's data: its CRC-32 (the sizes are not needed:
/// the deflate stream ended by itself).
fn data_descriptor(input: &mut impl Read, zip64: bool) -> Result<u32, UploadError> {
    let first: [u8; 4] = read_array(input, "a data descriptor")?;
    let crc = if le32(&first) == 0x0807_4b50 {
        le32(&read_array::<4>(input, "a data descriptor")?)
    } else {
        le32(&first)
    };
    if zip64 {
        read_array::<16>(input, "a data descriptor")?;
    } else {
        read_array::<8>(input, "a data descriptor")?;
    }
    Ok(crc)
}

/// Skips `count` bytes of `input`.
fn skip(input: &mut impl Read, count: u64) -> Result<(), UploadError> {
    let copied = io::copy(&mut input.take(count), &mut io::sink())
        .map_err(|_| zip_error("the archive could not be read"))?;
    if copied < count {
        return Err(zip_error("the archive ends inside a file (truncated?)"));
    }
    Ok(())
}

/// Streams the `export.xml` inside an `export.zip` (`apple_health_export/export.xml`, or
/// any `*/export.xml`, in any case): no `Seek`, entries before it are skipped, nothing after
/// it is read.
pub(crate) fn stream_apple_health_zip<R: Read>(
    reader: R,
    each: &mut dyn FnMut(Reading) -> Result<(), UploadError>,
) -> Result<AppleHealthReport, UploadError> {
    let mut input = io::BufReader::with_capacity(64 * 1024, reader);
    // One inflation budget for the whole archive.
    let mut spent = Spent::default();
    for _ in 0..MAX_ZIP_ENTRIES {
        match le32(&read_array::<4>(&mut input, "a file header")?) {
            0x0403_4b50 => {}
            0x0201_4b50 | 0x0605_4b50 | 0x0606_4b50 => {
                return Err(zip_error("the archive holds no export.xml"));
            }
            _ => return Err(zip_error("not a zip archive (or a damaged one)")),
        }
        let entry = local_entry(&mut input)?;
        match (entry.is_export(), entry.method, entry.descriptor()) {
            (true, 8, _) => {
                let inflated = bounds::inflate(&mut input, INFLATION, spent);
                let mut checked = Checksummed {
                    inner: inflated,
                    crc: crc32fast::Hasher::new(),
                    bytes: 0,
                };
                let report = parse_entry(&mut checked, each)?;
                let (crc, bytes) = (checked.crc.finalize(), checked.bytes);
                let expected = if entry.descriptor() {
                    data_descriptor(&mut input, entry.zip64)?
                } else {
                    entry.crc
                };
                if crc != expected || (!entry.descriptor() && bytes != entry.uncompressed) {
                    return Err(zip_error(
                        "export.xml is damaged in the archive (checksum mismatch)",
                    ));
                }
                return Ok(report);
            }
            (true, 0, false) => {
                let mut checked = Checksummed {
                    inner: (&mut input).take(entry.compressed),
                    crc: crc32fast::Hasher::new(),
                    bytes: 0,
                };
                let report = parse_entry(&mut checked, each)?;
                if checked.crc.clone().finalize() != entry.crc
                    || checked.bytes != entry.uncompressed
                {
                    return Err(zip_error(
                        "export.xml is damaged in the archive (checksum mismatch)",
                    ));
                }
                return Ok(report);
            }
            (true, _, _) => {
                return Err(zip_error(
                    "export.xml is compressed with a method other than deflate",
                ));
            }
            (false, _, false) => skip(&mut input, entry.compressed)?,
            (false, 8, true) => {
                let mut inflated = bounds::inflate(&mut input, INFLATION, spent);
                io::copy(&mut inflated, &mut io::sink()).map_err(|e| {
                    refusal(&e, || "zip".into())
                        .unwrap_or_else(|| zip_error("a file in the archive is damaged"))
                })?;
                spent = inflated.spent();
                data_descriptor(&mut input, entry.zip64)?;
            }
            (false, _, true) => {
                return Err(zip_error(
                    "a file before export.xml cannot be skipped in a stream (stored with a data descriptor)",
                ));
            }
        }
    }
    Err(zip_error(format!(
        "more than {MAX_ZIP_ENTRIES} files before export.xml"
    )))
}

/// Parses one entry's inflated bytes, then reads what follows the XML to the entry's end
/// (whitespace, normally) so the checksum covers every byte.
fn parse_entry(
    entry: &mut impl Read,
    each: &mut dyn FnMut(Reading) -> Result<(), UploadError>,
) -> Result<AppleHealthReport, UploadError> {
    let mut buffered = io::BufReader::with_capacity(64 * 1024, entry);
    let report = stream_apple_health_xml(&mut buffered, each).map_err(|e| {
        if e.problem.starts_with("the file could not be read") {
            zip_error("export.xml is damaged in the archive")
        } else {
            e
        }
    })?;
    io::copy(&mut buffered, &mut io::sink())
        .map_err(|_| zip_error("export.xml is damaged in the archive"))?;
    Ok(report)
}

#[cfg(test)]
#[path = "apple_health_tests.rs"]
mod tests;
