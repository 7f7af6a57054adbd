//! What `query_health_indicators` answers, by the measure's kind: the catalogue,
//! the latest readings, a period's statistics and day/week/month buckets. Every answer
//! names its unit and its period. Cumulative measures (steps, distance, energy) answer
//! totals: a day's, a week's or a month's, and the mean daily total; several sources are
//! counted once (the rule is [`Rollup`]'s). Discrete measures (heart rate, glucose,
//! weight, labs) answer mean, min, max, SD, median ([`Median`]), first and latest. Sleep answers one value per
//! night, dated by the morning it ends. A CGM glucose series adds the consensus report
//! (`cgm`).
//!
//! Owns only the shape of answers, from rollups and readings the caller read. Never
//! reads the store, never logs a reading.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use serde_json::{Map, Value, json};

use super::cgm;
use super::matching;
use super::profile;
use crate::domain::measures::{self, Kind};
use crate::domain::{Reading, ReadingValue};
use crate::store::{HourValue, Period, Rollup};

/// Catalogue rows shown at most.
pub(super) const MAX_CATALOGUE: usize = 200;

/// The bucket length asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bucket {
    Day,
    Week,
    Month,
}

/// The series' kind, from its key (a measure nobody listed is discrete).
fn kind_of(summary: &Rollup) -> Kind {
    measures::catalogue().kind_of_key(&Reading::indicator_key(&summary.name))
}

fn day(time: &str) -> &str {
    Period::Day.of(time)
}

pub(crate) fn format_number(n: f64) -> String {
    let rounded = round(n);
    if rounded.fract() == 0.0 && rounded.abs() < 1e15 {
        format!("{}", rounded as i64)
    } else {
        format!("{rounded}")
    }
}

fn round(n: f64) -> f64 {
    (n * 10_000.0).round() / 10_000.0
}

/// Minutes as a person reads a night: `7 h 30 min`.
pub(crate) fn hours_and_minutes(minutes: f64) -> String {
    let total = minutes.round().max(0.0) as u64;
    format!("{} h {:02} min", total / 60, total % 60)
}

fn json_value(value: &ReadingValue) -> Value {
    match value {
        ReadingValue::Number(n) => json!(round(*n)),
        ReadingValue::Text(t) => Value::String(t.clone()),
    }
}

fn value_text(reading: &Reading) -> String {
    match &reading.value {
        ReadingValue::Number(n) => format_number(*n),
        ReadingValue::Text(t) => t.replace('|', "/"),
    }
}

/// A reading's time with its UTC offset when it came with one.
fn time_text(reading: &Reading) -> String {
    match &reading.offset {
        Some(offset) => format!("{}{offset}", reading.time),
        None => reading.time.clone(),
    }
}

/// What was sent, when it was another unit or value (`5.5 mmol/L`).
pub(crate) fn as_sent(reading: &Reading) -> Option<String> {
    let original = reading.original.as_ref()?;
    if original.value == reading.value && original.unit == reading.unit {
        return None;
    }
    let value = match &original.value {
        ReadingValue::Number(n) => format_number(*n),
        ReadingValue::Text(t) => t.replace('|', "/"),
    };
    Some(match &original.unit {
        Some(unit) => format!("{value} {}", unit.replace('|', "/")),
        None => value,
    })
}

/// The name, code, unit and kind of a series.
fn header(summary: &Rollup) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("name".into(), summary.name.clone().into());
    if let Some(code) = &summary.code {
        let system = summary.code_system.as_deref().unwrap_or("LOINC");
        out.insert("code".into(), format!("{system} {code}").into());
    }
    match summary.common_unit() {
        Some(unit) => {
            out.insert("unit".into(), unit.map_or(Value::Null, Value::from));
        }
        None => {
            out.insert("unit".into(), "mixed".into());
            out.insert(
                "note".into(),
                "this series holds several units (it is not in the measures catalogue): \
                 numbers are not converted, so statistics mix units"
                    .into(),
            );
        }
    }
    out.insert("kind".into(), kind_of(summary).as_str().into());
    out
}

/// A summed measure's latest day total, or a discrete one's latest value, with its date.
fn latest_cells(summary: &Rollup) -> (String, String) {
    match (kind_of(summary).is_summed(), &summary.last_day) {
        (true, Some(d)) => (format_number(d.total), d.day.clone()),
        _ => (
            match &summary.last.value {
                ReadingValue::Number(n) => format_number(*n),
                ReadingValue::Text(t) => t.replace('|', "/"),
            },
            day(&summary.last.time).to_string(),
        ),
    }
}

/// The catalogue of the user's measures: name, code, kind, unit, the latest value (a
/// summed measure's latest day total) with its date, count, first and last day.
pub(super) fn catalogue(summaries: &[Rollup]) -> Value {
    let total = summaries.len();
    let rows: Vec<String> = summaries
        .iter()
        .take(MAX_CATALOGUE)
        .map(|s| {
            let code = s
                .code
                .clone()
                .or_else(|| matching::known_code(&s.name).map(String::from));
            let system = s
                .code_system
                .clone()
                .or_else(|| code.as_ref().map(|_| "LOINC".to_string()));
            let code = match (system, code) {
                (Some(s), Some(c)) => format!("{s} {c}"),
                (None, Some(c)) => c,
                _ => String::new(),
            };
            let unit = match s.common_unit() {
                Some(unit) => unit.unwrap_or("").replace('|', "/"),
                None => "mixed".into(),
            };
            let (latest, latest_date) = latest_cells(s);
            format!(
                "{}|{code}|{}|{unit}|{latest}|{latest_date}|{}|{}|{}",
                s.name.replace('|', "/"),
                kind_of(s).as_str(),
                s.count,
                day(&s.first.time),
                day(&s.last.time)
            )
        })
        .collect();
    let mut out = json!({
        "columns": "name|code|kind|unit|latest|latest_date|count|first|last",
        "about": "latest: a cumulative measure's latest daily total, a sleep measure's latest \
                  night, else the latest reading; count: readings",
        "rows": rows,
        "indicator_count": total,
    });
    if total > MAX_CATALOGUE {
        out["truncated"] = (total - MAX_CATALOGUE).into();
    }
    if total == 0 {
        out["message"] =
            "No health data yet. Upload readings through the data API (POST /api/data/health)."
                .into();
    }
    out
}

/// The latest readings (newest first, at least one), of `total` in the window.
pub(super) fn latest(summary: &Rollup, shown: &[Reading], total: u64) -> Value {
    let mut out = header(summary);
    let constant = |f: &dyn Fn(&Reading) -> Option<String>| {
        let first = f(&shown[0]);
        shown.iter().all(|r| f(r) == first).then_some(first)
    };
    let unit = constant(&|r| r.unit.clone());
    let source = constant(&|r| Some(r.source.clone()));
    if let Some(unit) = &unit {
        out.insert(
            "unit".into(),
            unit.clone().map_or(Value::Null, Value::String),
        );
        out.remove("note");
    }
    if let Some(Some(source)) = &source {
        out.insert("source".into(), source.clone().into());
    }
    let (unit_varies, source_varies) = (unit.is_none(), source.is_none());
    let sent = shown.iter().any(|r| as_sent(r).is_some());
    let mut columns = vec!["time", "value"];
    if unit_varies {
        columns.push("unit");
    }
    if source_varies {
        columns.push("source");
    }
    if sent {
        columns.push("as_sent");
    }
    let table: Vec<String> = shown
        .iter()
        .map(|r| {
            let mut cells = vec![time_text(r), value_text(r)];
            if unit_varies {
                cells.push(r.unit.clone().unwrap_or_default());
            }
            if source_varies {
                cells.push(r.source.replace('|', "/"));
            }
            if sent {
                cells.push(as_sent(r).unwrap_or_default());
            }
            cells.join("|")
        })
        .collect();
    out.insert("columns".into(), columns.join("|").into());
    out.insert("rows".into(), table.into());
    let shown = shown.len() as u64;
    if total > shown {
        out.insert("truncated".into(), (total - shown).into());
    }
    match kind_of(summary) {
        Kind::Cumulative => {
            out.insert(
                "hint".into(),
                "these are single readings; this measure adds up: aggregate day, week or month \
                 answers totals"
                    .into(),
            );
        }
        Kind::Sleep => {
            out.insert(
                "hint".into(),
                "one reading per night and source, dated by the morning it ends".into(),
            );
        }
        Kind::Discrete => {}
    }
    Value::Object(out)
}

/// The calendar days from `from` to `to` inclusive.
fn days_between(from: &str, to: &str) -> Option<u64> {
    let parse = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok();
    let (from, to) = (parse(from)?, parse(to)?);
    u64::try_from((to - from).num_days() + 1).ok()
}

/// A discrete series' median over a period, from its readings (rollups cannot merge one).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Median {
    /// The median of this many numeric readings.
    Of { median: f64, readings: u64 },
    /// Not computed: the period holds more numeric readings than a median is read from.
    TooMany { limit: u64 },
}

impl Median {
    /// The median of the values (the mean of the middle two when their number is even);
    /// `None` without one.
    pub(super) fn of(values: &[HourValue]) -> Option<Median> {
        let mut values: Vec<f64> = values.iter().map(|v| v.value).collect();
        let n = values.len();
        if n == 0 {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Some(Median::Of {
            median,
            readings: n as u64,
        })
    }

    /// `count`: the period's readings, numeric or not.
    fn insert_into(&self, out: &mut Map<String, Value>, count: u64) {
        match self {
            Median::Of { median, readings } => {
                out.insert("median".into(), json!(round(*median)));
                if *readings < count {
                    let left_out = count - readings;
                    out.insert(
                        "median_note".into(),
                        format!(
                            "median of the {readings} numeric readings; {left_out} not a \
                             number (such as a censored `<50`) left out"
                        )
                        .into(),
                    );
                }
            }
            Median::TooMany { limit } => {
                out.insert(
                    "median_note".into(),
                    format!(
                        "no median: it is computed from the readings themselves, at most {limit}                          (90 days of 5-minute readings); narrow start_time and end_time, or ask                          aggregate profile for percentiles by hour"
                    )
                    .into(),
                );
            }
        }
    }
}

/// A period's statistics. `from` and `to` are the period asked (`None`: open, then the
/// data's own first and last day); `median`, when the caller read one, for discrete
/// series.
pub(super) fn stats(
    s: &Rollup,
    from: Option<&str>,
    to: Option<&str>,
    median: Option<&Median>,
) -> Value {
    let mut out = header(s);
    if let Some(source) = s.common_source() {
        out.insert("source".into(), source.into());
    }
    let from = from.unwrap_or_else(|| day(&s.first.time)).to_string();
    let to = to.unwrap_or_else(|| day(&s.last.time)).to_string();
    let period_days = days_between(&from, &to).unwrap_or(s.days.max(1));
    out.insert("from".into(), from.into());
    out.insert("to".into(), to.into());
    out.insert("count".into(), s.count.into());
    let kind = kind_of(s);
    if kind.is_summed() && s.numeric_count > 0 {
        summed_stats(s, kind, s.total.unwrap_or(s.sum), &mut out);
        if s.total.is_none() {
            out.insert("note".into(), OLD_ROLLUPS.into());
        }
        return Value::Object(out);
    }
    out.insert("numeric_count".into(), s.numeric_count.into());
    out.insert("first".into(), json_value(&s.first.value));
    out.insert("first_date".into(), day(&s.first.time).into());
    out.insert("last".into(), json_value(&s.last.value));
    out.insert("last_date".into(), day(&s.last.time).into());
    if let Some(mean) = s.mean() {
        out.insert("min".into(), json!(round(s.min)));
        out.insert("max".into(), json!(round(s.max)));
        out.insert("mean".into(), json!(round(mean)));
        if let Some(median) = median {
            median.insert_into(&mut out, s.count);
        }
    }
    if let Some(sd) = s.standard_deviation().filter(|_| s.sum_squares > 0.0) {
        out.insert("sd".into(), json!(round(sd)));
    }
    if let (ReadingValue::Number(a), ReadingValue::Number(b)) = (&s.first.value, &s.last.value) {
        out.insert("change".into(), json!(round(b - a)));
    }
    if let Some(report) = cgm::report(s, period_days) {
        out.insert("cgm".into(), report);
    }
    Value::Object(out)
}

/// Said when a summed measure's rollups were written before totals were kept.
const OLD_ROLLUPS: &str = "these totals add every reading, several sources included: the \
                           rollups were written before totals were kept (the operator's `migrate` rebuilds them)";

fn summed_stats(s: &Rollup, kind: Kind, total: f64, out: &mut Map<String, Value>) {
    let days = s.days.max(1);
    let mean = total / days as f64;
    let source = match &s.total_source {
        Some(source) => source.clone(),
        None => {
            "several sources, each hour counted once from the source that counted most".to_string()
        }
    };
    if kind == Kind::Sleep {
        out.insert("nights".into(), s.days.into());
        out.insert("mean_per_night".into(), json!(round(mean)));
        out.insert("mean_per_night_text".into(), hours_and_minutes(mean).into());
        if let Some(longest) = &s.max_day {
            out.insert("longest_night".into(), json!(round(longest.total)));
            out.insert("longest_night_date".into(), longest.day.clone().into());
        }
        if let Some(last) = &s.last_day {
            out.insert("latest_night".into(), json!(round(last.total)));
            out.insert("latest_night_date".into(), last.day.clone().into());
        }
        out.insert(
            "about".into(),
            "one value per night, dated by the morning it ends; with several sources a night \
             counts the one that recorded the most"
                .into(),
        );
    } else {
        out.insert("total".into(), json!(round(total)));
        out.insert("days_with_readings".into(), s.days.into());
        out.insert("mean_daily_total".into(), json!(round(mean)));
        if let Some(max) = &s.max_day {
            out.insert("max_daily_total".into(), json!(round(max.total)));
            out.insert("max_day".into(), max.day.clone().into());
        }
        if let Some(last) = &s.last_day {
            out.insert("latest_daily_total".into(), json!(round(last.total)));
            out.insert("latest_day".into(), last.day.clone().into());
        }
        out.insert("total_source".into(), source.into());
        out.insert(
            "about".into(),
            "totals per local day; the mean daily total is over days with readings".into(),
        );
    }
}

/// The ambulatory profile: the window's days overlaid by local hour of day, each hour's
/// 5th, 25th, 50th, 75th and 95th percentile of the readings in it (nearest rank: the
/// arithmetic is [`profile::hours`], which the console draws too).
pub(super) fn profile(
    summary: &Rollup,
    values: &[HourValue],
    from: &str,
    to: &str,
) -> Option<Value> {
    let hours = profile::hours(values);
    if hours.is_empty() {
        return None;
    }
    let mut out = header(summary);
    let rows: Vec<String> = hours
        .iter()
        .map(|h| {
            let cells: Vec<String> = [h.p5, h.p25, h.median, h.p75, h.p95]
                .into_iter()
                .map(format_number)
                .collect();
            format!("{:02}|{}|{}", h.hour, cells.join("|"), h.readings)
        })
        .collect();
    out.insert("from".into(), from.into());
    out.insert("to".into(), to.into());
    out.insert("columns".into(), "hour|p5|p25|median|p75|p95|n".into());
    out.insert(
        "about".into(),
        "the days of the window overlaid by local hour of day (the ambulatory glucose profile \
         for CGM glucose); percentiles by nearest rank; n: readings in that hour"
            .into(),
    );
    out.insert("rows".into(), rows.into());
    Some(Value::Object(out))
}

/// The bucket a day or month rollup falls in.
fn bucket_of(period: &str, bucket: Bucket) -> String {
    let date = NaiveDate::parse_from_str(day(period), "%Y-%m-%d").ok();
    match (bucket, date) {
        (Bucket::Week, Some(d)) => {
            let week = d.iso_week();
            format!("{}-W{:02}", week.year(), week.week())
        }
        (Bucket::Month, _) => Period::Month.of(period).to_string(),
        _ => day(period).to_string(),
    }
}

/// Day, week or month buckets from day (or, for months, month) rollups in period order.
pub(super) fn buckets(parts: &[Rollup], bucket: Bucket) -> Option<Value> {
    let summary = Rollup::merge("", parts)?;
    let mut out = header(&summary);
    let kind = kind_of(&summary);
    let summed = kind.is_summed();
    if summed && parts.iter().any(|p| p.total.is_none()) {
        out.insert("note".into(), OLD_ROLLUPS.into());
    }
    let label = match (bucket, kind) {
        (Bucket::Week, _) => "week",
        (Bucket::Month, _) => "month",
        (Bucket::Day, Kind::Sleep) => "night",
        (Bucket::Day, _) => "day",
    };
    let mut groups: BTreeMap<String, Vec<&Rollup>> = BTreeMap::new();
    for part in parts.iter().filter(|p| p.numeric_count > 0) {
        groups
            .entry(bucket_of(&part.period, bucket))
            .or_default()
            .push(part);
    }
    // Time in range per bucket for a CGM's series only (a lab's glucose is not "in range").
    let bands = cgm::is_cgm(&summary);
    let columns = match (summed, bucket, bands) {
        (true, Bucket::Day, _) => format!("{label}|total|source"),
        (true, _, _) if kind == Kind::Sleep => format!("{label}|nights|mean_per_night"),
        (true, _, _) => format!("{label}|total|days|mean_daily_total"),
        (false, _, true) => format!("{label}|avg|min|max|n|in_range_70_180_pct"),
        (false, _, false) => format!("{label}|avg|min|max|n"),
    };
    let table: Vec<String> = groups
        .iter()
        .filter_map(|(name, parts)| {
            let s = Rollup::merge(name, parts.iter().copied())?;
            if summed {
                let total = s.total.unwrap_or(s.sum);
                // Day rollups an older build wrote carry no day count: one each.
                let days = if s.days > 0 {
                    s.days
                } else {
                    parts.len() as u64
                };
                return Some(match bucket {
                    Bucket::Day => format!(
                        "{name}|{}|{}",
                        format_number(total),
                        s.total_source
                            .as_deref()
                            .unwrap_or("several")
                            .replace('|', "/")
                    ),
                    _ if kind == Kind::Sleep => {
                        format!("{name}|{days}|{}", format_number(total / days as f64))
                    }
                    _ => format!(
                        "{name}|{}|{days}|{}",
                        format_number(total),
                        format_number(total / days as f64)
                    ),
                });
            }
            let mut row = format!(
                "{name}|{}|{}|{}|{}",
                format_number(s.mean()?),
                format_number(s.min),
                format_number(s.max),
                s.numeric_count
            );
            if bands {
                let in_range = s.glucose_bands.map_or(String::new(), |b| {
                    let all: u64 = b.iter().sum();
                    format_number(if all == 0 {
                        0.0
                    } else {
                        (b[2] as f64 * 1000.0 / all as f64).round() / 10.0
                    })
                });
                row.push('|');
                row.push_str(&in_range);
            }
            Some(row)
        })
        .collect();
    if let (Some(first), Some(last)) = (groups.keys().next(), groups.keys().last()) {
        out.insert("from".into(), first.clone().into());
        out.insert("to".into(), last.clone().into());
    }
    out.insert("columns".into(), columns.into());
    let about = match (summed, kind) {
        (true, Kind::Sleep) => {
            "a night is dated by the morning it ends; with several sources it counts the one \
             that recorded the most"
        }
        (true, _) => {
            "totals per local day (the reading's own UTC offset); several sources are counted \
             once: each hour counts the source that counted most"
        }
        _ => "avg, min and max of the readings in each bucket; n: readings",
    };
    out.insert("about".into(), about.into());
    out.insert("rows".into(), table.into());
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(time: &str, source: &str, value: f64) -> Reading {
        Reading {
            indicator: "Steps".into(),
            value: ReadingValue::Number(value),
            unit: Some("steps".into()),
            time: time.into(),
            code_system: None,
            code: None,
            source: source.into(),
            offset: None,
            original: None,
        }
    }

    #[test]
    fn a_profile_overlays_the_days_by_hour_with_nearest_rank_percentiles() {
        let glucose = |time: &str, v: f64| Reading {
            indicator: "Glucose".into(),
            unit: Some("mg/dL".into()),
            ..steps(time, "cgm", v)
        };
        // Hour 08: 100, 110, ..., 190 (ten readings over ten days). Nearest rank: p5 is
        // rank ceil(0.5) = 1 → 100; p25 rank 3 → 120; median rank 5 → 140; p75 rank
        // ceil(7.5) = 8 → 170; p95 rank 10 → 190. Hour 09: one reading of 95.
        let mut readings: Vec<Reading> = (0..10)
            .map(|d| {
                glucose(
                    &format!("2026-01-{:02}T08:30:00", d + 1),
                    100.0 + 10.0 * d as f64,
                )
            })
            .collect();
        readings.push(glucose("2026-01-03T09:00:00", 95.0));
        let summary = Rollup::of("2026-01", &readings).unwrap();
        let values: Vec<HourValue> = readings.iter().filter_map(HourValue::of).collect();
        let out = profile(&summary, &values, "2026-01-01", "2026-01-10").unwrap();
        assert_eq!(out["columns"], "hour|p5|p25|median|p75|p95|n");
        assert_eq!(
            out["rows"],
            json!(["08|100|120|140|170|190|10", "09|95|95|95|95|95|1"])
        );
        assert_eq!(out["unit"], "mg/dL");
    }

    #[test]
    fn a_median_is_the_middle_reading_or_the_mean_of_the_middle_two() {
        let weight = |time: &str, value: ReadingValue| Reading {
            indicator: "Body weight".into(),
            unit: Some("kg".into()),
            value,
            ..steps(time, "Scale", 0.0)
        };
        let n = |v: f64| ReadingValue::Number(v);
        // 70, 71, 90 sorted: the middle of three is 71 (the mean is 77).
        let three = [
            weight("2026-01-01T08:00:00", n(90.0)),
            weight("2026-01-02T08:00:00", n(70.0)),
            weight("2026-01-03T08:00:00", n(71.0)),
        ];
        let numbers = |readings: &[Reading]| -> Vec<HourValue> {
            readings.iter().filter_map(HourValue::of).collect()
        };
        let of_three = Median::of(&numbers(&three)).unwrap();
        assert_eq!(
            of_three,
            Median::Of {
                median: 71.0,
                readings: 3
            }
        );
        // Add 80 and a censored `<50`: four numbers, (71 + 80) / 2 = 75.5; the text
        // reading is left out and the answer says so.
        let mut five = three.to_vec();
        five.push(weight("2026-01-04T08:00:00", n(80.0)));
        five.push(weight(
            "2026-01-05T08:00:00",
            ReadingValue::Text("<50".into()),
        ));
        let median = Median::of(&numbers(&five)).unwrap();
        assert_eq!(
            median,
            Median::Of {
                median: 75.5,
                readings: 4
            }
        );
        let summary = Rollup::of("2026-01", &five).unwrap();
        let out = stats(&summary, None, None, Some(&median));
        assert_eq!(out["median"], json!(75.5));
        assert_eq!(
            out["median_note"],
            "median of the 4 numeric readings; 1 not a number (such as a censored `<50`) left out"
        );
        let text = [weight(
            "2026-01-01T08:00:00",
            ReadingValue::Text("x".into()),
        )];
        assert_eq!(Median::of(&numbers(&text)), None);
        // Too many readings: no median, and the answer says why and what to ask instead.
        let out = stats(
            &summary,
            None,
            None,
            Some(&Median::TooMany { limit: 25_920 }),
        );
        assert!(out.get("median").is_none(), "{out}");
        let note = out["median_note"].as_str().unwrap();
        assert!(
            note.contains("at most 25920") && note.contains("profile"),
            "{note}"
        );
    }

    #[test]
    fn a_day_of_steps_is_a_total_and_two_devices_count_once() {
        // Hourly 800 from 08:00 to 19:00 on the phone: 12 × 800 = 9,600.
        let mut day_one: Vec<Reading> = (8..20)
            .map(|h| steps(&format!("2026-01-05T{h:02}:00:00"), "iPhone", 800.0))
            .collect();
        // The watch saw the 09:00 walk too (850, more than the phone's 800), and the phone
        // alone saw the rest: 11 × 800 + 850 = 9,650, never 9,600 + 850.
        day_one.push(steps("2026-01-05T09:10:00", "Watch", 850.0));
        let rollup = Rollup::of("2026-01-05", &day_one).unwrap();
        assert_eq!(rollup.total, Some(9650.0));
        assert_eq!(rollup.total_source, None, "two sources");
        let day_two: Vec<Reading> = (8..20)
            .map(|h| steps(&format!("2026-01-06T{h:02}:00:00"), "iPhone", 800.0))
            .collect();
        let second = Rollup::of("2026-01-06", &day_two).unwrap();
        let out = buckets(&[rollup.clone(), second.clone()], Bucket::Day).unwrap();
        assert_eq!(out["columns"], "day|total|source");
        assert_eq!(
            out["rows"],
            json!(["2026-01-05|9650|several", "2026-01-06|9600|iPhone"])
        );
        assert_eq!(out["unit"], "steps");
        let both = Rollup::merge("", [&rollup, &second]).unwrap();
        let s = stats(&both, None, None, None);
        // (9,650 + 9,600) / 2 days = 9,625.
        assert_eq!(s["total"], json!(19250.0));
        assert_eq!(s["mean_daily_total"], json!(9625.0));
        assert_eq!(s["max_day"], "2026-01-05");
        assert_eq!(s["latest_daily_total"], json!(9600.0));
        assert!(s.get("mean").is_none(), "no per-sample mean for steps");
    }
}
