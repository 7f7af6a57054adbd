//! Your data: the catalogue (every indicator with its latest figure as its kind reads,
//! its unit and date, its count and first and last date), one indicator's chart and
//! latest readings, and the genome summary with the rsid look-up. Reads the catalogue,
//! rollups and genome through `DataApi` (the data API's typed core, never the store); renders with `chart.rs`, `agp.rs` and `stages.rs`.
//!
//! Shows what `query_health_indicators` answers, with the tool's own rules
//! and arithmetic: a cumulative measure (steps) by its day totals, counted once across
//! sources ([`Rollup::total`]); sleep by the night, dated by the morning it ends; a
//! discrete measure by its readings (a day's mean, least and greatest); a CGM's glucose
//! with the consensus time-in-range figures (`tools::cgm_report`) instead of the fasting
//! reference band, and its daily profile over the last 14 days with data (the tool's
//! `aggregate: profile`, `tools::profile_hours`: that window's readings read once); a
//! sleep measure with the stages stacked per night (one read of day rollups per stage).
//!
//! Bounds what comes from the request before the store sees it: an indicator name of at
//! most [`MAX_INDICATOR`] bytes, at most [`MAX_RSIDS`] rsids each of the form
//! `rs` and 1 to 12 digits. Never logs a reading or a genotype.

use bytes::Bytes;
use http::{Request, StatusCode};
use maud::{Markup, html};

use serde_json::Value;

use super::agp::{self, Profile};
use super::chart::{self, Chart, ChartPoint, Values};
use super::layout::{self, Notice};
use super::range::{self, Span};
use super::stages::{self, Night};
use super::summary;
use super::{Answer, ConsoleApi, Session, html as page, query_param};
use crate::api::data::{
    CatalogueEntry, GenomeSummary, HourValue, Period, ReadingQuery, Rollup, TIME_MAX,
};
use crate::domain::measures::{self, Kind};
use crate::domain::{Genotype, Reading, ReadingValue};
use crate::http::ApiError;
use crate::tools::{
    as_sent, cgm_report, format_number, hours_and_minutes, profile_hours, profile_window,
    reference_range,
};

/// The longest indicator name a page is asked for (longer: no such indicator).
const MAX_INDICATOR: usize = 300;
/// How many rsids one look-up takes.
pub(crate) const MAX_RSIDS: usize = 50;
/// The longest look-up text read (50 rsids of 14 characters with separators fit).
const MAX_LOOKUP: usize = 1000;
/// The measures whose chart shows the person's own baseline (what Oura and Whoop read
/// them against).
const BASELINE_MEASURES: [&str; 2] = ["Resting heart rate", "Heart rate variability SDNN"];
/// How many of the newest readings the indicator page lists.
const LATEST: usize = 20;

/// A path segment percent-encoded (every byte but the unreserved ones), so a name
/// with spaces, slashes or anything else comes back whole through [`super::decode`].
pub(crate) fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The date part of a stored time (`YYYY-MM-DD`), or the time as it is.
pub(super) fn day_of(time: &str) -> &str {
    time.get(..10).unwrap_or(time)
}

/// A time as shown: `YYYY-MM-DD HH:MM` (seconds dropped), or as it is.
fn when(time: &str) -> String {
    match (time.get(..10), time.get(11..16)) {
        (Some(day), Some(clock)) => format!("{day} {clock}"),
        _ => time.to_string(),
    }
}

/// A number as the tool answers it (at most four decimals), with thousands separators
/// (`9,600`, `-1,234.5`).
pub(super) fn number_text(n: f64) -> String {
    let text = format_number(n);
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (digits, None),
    };
    match whole.parse::<u64>() {
        Ok(whole) => match fraction {
            Some(fraction) => format!("{sign}{}.{fraction}", grouped(whole)),
            None => format!("{sign}{}", grouped(whole)),
        },
        Err(_) => text,
    }
}

fn value_text(value: &ReadingValue) -> String {
    match value {
        ReadingValue::Number(n) => number_text(*n),
        ReadingValue::Text(t) => t.clone(),
    }
}

/// The kind of a stored series, from its key (a measure nobody listed is discrete).
pub(super) fn kind_of(key: &str) -> Kind {
    measures::catalogue().kind_of_key(key)
}

/// A measure's latest figure: what it is (`9,600 steps`, `7 h 30 min`), what it stands
/// for, and its day.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Latest {
    pub(crate) text: String,
    pub(crate) basis: &'static str,
    pub(crate) day: String,
}

/// The latest figure as the tool's catalogue answers it: a cumulative measure's latest
/// daily total, sleep's latest night, otherwise the latest reading. Every catalogue
/// measure has one unit; a series nobody listed may hold several (then none is named).
pub(super) fn latest_of(kind: Kind, summary: &Rollup) -> Latest {
    let unit = summary.common_unit().flatten();
    let with_unit = |value: String| match unit {
        Some(unit) => format!("{value} {unit}"),
        None => value,
    };
    match (kind, &summary.last_day) {
        (Kind::Sleep, Some(night)) => Latest {
            text: hours_and_minutes(night.total),
            basis: "night",
            day: night.day.clone(),
        },
        (Kind::Cumulative, Some(day)) => Latest {
            text: with_unit(number_text(day.total)),
            basis: "daily total",
            day: day.day.clone(),
        },
        _ => Latest {
            text: with_unit(value_text(&summary.last.value)),
            basis: if summary.common_unit().is_none() {
                "reading; units vary"
            } else {
                "reading"
            },
            day: day_of(&summary.last.time).to_string(),
        },
    }
}

/// Epoch seconds as a UTC date and time.
fn utc(epoch: u64) -> String {
    i64::try_from(epoch)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// How a series' rollups read: totals when every rollup has one (as the tool's buckets
/// answer), by the night for sleep, else means.
pub(super) fn values_of<'r>(kind: Kind, mut rollups: impl Iterator<Item = &'r Rollup>) -> Values {
    let summed = kind.is_summed() && rollups.all(|r| r.total.is_some() || r.numeric_count == 0);
    match (summed, kind) {
        (true, Kind::Sleep) => Values::Nights,
        (true, _) => Values::DailyTotals,
        _ => Values::Means,
    }
}

/// A rollup as a chart point: a discrete measure's mean, min and max; a summed one's
/// day total (a month's mean daily total), sleep in hours. `None` without numbers.
pub(super) fn chart_point(rollup: &Rollup, values: Values) -> Option<ChartPoint> {
    let day = chart::day_number(&rollup.period)?;
    let month = rollup.period.len() == 7;
    let value = match values {
        Values::Means => {
            return Some(ChartPoint {
                day,
                month,
                mean: rollup.mean()?,
                min: rollup.min,
                max: rollup.max,
            });
        }
        // A day is one day; a month is the mean of its days, as the tool's month
        // buckets answer it.
        Values::DailyTotals => rollup.total? / rollup.days.max(1) as f64,
        Values::Nights => rollup.total? / rollup.days.max(1) as f64 / 60.0,
    };
    Some(ChartPoint {
        day,
        month,
        mean: value,
        min: value,
        max: value,
    })
}

/// The first day of a span of `days` that ends on `last` (`YYYY-MM-DD`), that day
/// counted in; `last` itself when it is not a date.
fn span_start(last: &str, days: i64) -> String {
    chart::day_number(last)
        .and_then(|day| chart::date_of(day - (days - 1)))
        .map_or_else(
            || last.to_string(),
            |date| date.format("%Y-%m-%d").to_string(),
        )
}

/// The calendar days from the first to the last reading, both counted (the period the
/// tool's statistics over the whole history cover).
fn period_days(summary: &Rollup) -> u64 {
    let day = |time: &str| chart::day_number(day_of(time));
    match (day(&summary.first.time), day(&summary.last.time)) {
        (Some(first), Some(last)) => u64::try_from(last - first + 1).unwrap_or(1),
        _ => summary.days.max(1),
    }
}

/// The days that have a numeric reading.
fn days_with_numbers(readings: &[Reading]) -> usize {
    let mut days: Vec<&str> = readings
        .iter()
        .filter(|r| matches!(r.value, ReadingValue::Number(n) if n.is_finite()))
        .map(|r| day_of(&r.time))
        .collect();
    days.sort_unstable();
    days.dedup();
    days.len()
}

/// A percentage or a number of the CGM report as shown.
fn report_number(report: &Value, field: &str) -> String {
    report[field]
        .as_f64()
        .map_or_else(|| "–".to_string(), number_text)
}

/// The consensus time-in-range figures of a CGM's glucose over the chart's period.
fn time_in_range_markup(report: &Value, from: &str, to: &str) -> Markup {
    let figures = [
        (
            "tir-in-range",
            "Time in range, 70 to 180 mg/dL",
            "time_in_range_70_180_pct",
            "%",
        ),
        ("tir-below", "Below 70 mg/dL", "time_below_70_pct", "%"),
        ("tir-above", "Above 180 mg/dL", "time_above_180_pct", "%"),
        ("tir-mean", "Mean glucose", "mean_mg_dl", "mg/dL"),
        (
            "tir-gmi",
            "GMI (glucose management indicator)",
            "gmi_pct",
            "%",
        ),
    ];
    html! {
        section id="time-in-range" aria-labelledby="tir-heading" {
            h2 id="tir-heading" { "Time in range" }
            p {
                "From " span.from { (from) } " to " span.to { (to) } ": "
                (report_number(report, "readings")) " sensor readings over "
                (report_number(report, "period_days"))
                @if report["period_days"] == 1 { " day (" } @else { " days (" }
                (report_number(report, "readings_present_pct")) " % of those expected)."
            }
            div.table-wrap {
                table id="tir" aria-labelledby="tir-heading" {
                    tbody {
                        @for (class, label, field, unit) in figures {
                            tr {
                                th scope="row" { (label) }
                                td class=(class) { (report_number(report, field)) " " (unit) }
                            }
                        }
                    }
                }
            }
            @if let (Some(below_70), Some(below_54)) =
                (report["time_below_70_pct"].as_f64(), report["time_below_54_pct"].as_f64())
            {
                (summary::lows_note(below_70, below_54))
            }
            @if let Some(note) = report["note"].as_str() {
                p.muted.tir-note { "Note: " (note) "." }
            }
            @if let Some(targets) = report["targets"].as_str() {
                p.muted { "Targets: " (targets) "." }
            }
        }
    }
}

/// The rsids of a look-up: split on commas and white space, lower-cased; the invalid
/// ones named in words.
pub(crate) fn parse_rsids(text: &str) -> Result<Vec<String>, String> {
    if text.len() > MAX_LOOKUP {
        return Err(format!(
            "That is too long: look up at most {MAX_RSIDS} rsids at a time."
        ));
    }
    let mut rsids: Vec<String> = Vec::new();
    let mut invalid: Vec<&str> = Vec::new();
    for part in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        let rsid = part.to_ascii_lowercase();
        let digits = rsid.strip_prefix("rs").unwrap_or_default();
        if (1..=12).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
            if !rsids.contains(&rsid) {
                rsids.push(rsid);
            }
        } else {
            invalid.push(part);
        }
    }
    if !invalid.is_empty() {
        let shown: Vec<&str> = invalid.iter().take(5).copied().collect();
        return Err(format!(
            "Not an rsid: {}. An rsid is \"rs\" followed by 1 to 12 digits, like rs429358.",
            shown.join(", ")
        ));
    }
    if rsids.len() > MAX_RSIDS {
        return Err(format!(
            "That is {} rsids: look up at most {MAX_RSIDS} at a time.",
            rsids.len()
        ));
    }
    Ok(rsids)
}

/// A count with thousands separators (`230,400`).
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The genome summary: on the data page under "Your genome" with a link to the look-up,
/// on the genome page (already titled so) under "Summary".
fn genome_summary_markup(summary: Option<&GenomeSummary>, on_genome_page: bool) -> Markup {
    html! {
        section id="genome-summary" aria-labelledby="genome-heading" {
            h2 id="genome-heading" { @if on_genome_page { "Summary" } @else { "Your genome" } }
            @match summary {
                Some(s) => p {
                    span.variants { (grouped(s.variants)) } " variants from "
                    span.file { (s.source) } ", imported "
                    span.when { (utc(s.imported_at)) } "."
                },
                None => p.muted {
                    "No genome yet. "
                    a href="/console/upload" { "Upload a 23andMe or AncestryDNA file" } "."
                },
            }
            @if !on_genome_page {
                p { a href="/console/genome" { "Look up your genotypes by rsid" } }
            }
        }
    }
}

impl ConsoleApi {
    fn signed_in_page(
        &self,
        session: &Session,
        title: &str,
        notice: Option<&Notice<'_>>,
        content: Markup,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(session, "/console/data", title, notice, content),
        ))
    }

    /// Your data: the summary's cards (`?view=table`: the catalogue as a table), then
    /// the genome summary.
    pub(crate) async fn data_page(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let user = session.user_id.as_str();
        let as_table = query_param(request, "view").as_deref() == Some("table");
        let (catalogue, genome) =
            tokio::join!(self.data.catalogue(user), self.data.genome_summary(user));
        let (catalogue, genome) = (catalogue?, genome?);
        let cards = if as_table {
            Vec::new()
        } else {
            self.summary_cards(user, &catalogue).await?
        };
        let content = html! {
            p.lede {
                "Your own health readings and genome, stored in this service's database for "
                "your account only. Your AI reads them through the MCP tools you connect; "
                "nobody else sees them unless you share them."
            }
            section aria-labelledby="readings-heading" {
                h2 id="readings-heading" { "Your readings" }
                @if catalogue.is_empty() {
                    p id="no-readings" {
                        "You have no readings yet. "
                        a href="/console/upload" { "Upload a file" }
                        " (CSV or JSON readings, or an Apple Health export) to see them here."
                    }
                } @else if !as_table {
                    p.view-switch {
                        (catalogue.len()) @if catalogue.len() == 1 { " measure. " } @else { " measures. " }
                        a href="/console/data?view=table" { "See them all as a table" }
                    }
                    div id="summary" { (summary::cards_markup(&cards)) }
                } @else {
                    p.view-switch { a href="/console/data" { "Back to the summary" } }
                    div.table-wrap {
                        table.stack id="catalogue" {
                            caption.muted {
                                (catalogue.len()) " indicators. Latest: a cumulative measure's latest "
                                "daily total (every source counted once), sleep's latest night, "
                                "otherwise the latest reading."
                            }
                            thead { tr {
                                th scope="col" { "Indicator" } th scope="col" { "Latest" }
                                th scope="col" { "On" } th scope="col" { "Readings" }
                                th scope="col" { "First" } th scope="col" { "Last" }
                            } }
                            tbody {
                                @for entry in &catalogue {
                                    @let s = &entry.summary;
                                    @let latest = latest_of(kind_of(&entry.key), s);
                                    tr data-indicator=(s.name) {
                                        th scope="row" {
                                            a href={ "/console/data/" (path_segment(&s.name)) } { (s.name) }
                                        }
                                        td.latest data-label="Latest" {
                                            span.value { (latest.text) } " "
                                            span.basis.muted { "(" (latest.basis) ")" }
                                        }
                                        td.date data-label="On" { (latest.day) }
                                        td.count data-label="Readings" { (grouped(s.count)) }
                                        td.first data-label="First" { (day_of(&s.first.time)) }
                                        td.last data-label="Last" { (day_of(&s.last.time)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (genome_summary_markup(genome.as_ref(), false))
        };
        self.signed_in_page(session, "Your data", None, content)
    }

    /// The person's series of `indicator`: the name as asked, else the measure it is
    /// another name of (`HbA1c`); 404 when they have none.
    pub(super) async fn series(
        &self,
        user: &str,
        indicator: &str,
    ) -> Result<CatalogueEntry, ApiError> {
        let not_found = || {
            ApiError::refused(
                StatusCode::NOT_FOUND,
                "You have no readings of that indicator.",
            )
        };
        if indicator.is_empty() || indicator.len() > MAX_INDICATOR {
            return Err(not_found());
        }
        let catalogue = self.data.catalogue(user).await?;
        let asked = Reading::indicator_key(indicator);
        let measure = measures::catalogue()
            .by_name(indicator)
            .map(|m| m.key.clone());
        catalogue
            .iter()
            .find(|e| e.key == asked)
            .or_else(|| catalogue.iter().find(|e| Some(&e.key) == measure.as_ref()))
            .cloned()
            .ok_or_else(not_found)
    }

    /// The person's own 30-day baseline of a measure read against one (resting heart
    /// rate, heart rate variability), as the summary's card computes it (the mean of the
    /// days with a figure in the 30 days before the last 7, with enough of them) and
    /// shows it (rounded); `None` for other measures and without enough days. `read`:
    /// the day rollups the page read for its chart and their first day; when they cover
    /// the card's window they are used, else the window is read.
    async fn personal_baseline(
        &self,
        user: &str,
        entry: &CatalogueEntry,
        read: (&str, &[Rollup]),
    ) -> Result<Option<f64>, ApiError> {
        if !BASELINE_MEASURES.iter().any(|name| {
            measures::catalogue()
                .by_name(name)
                .is_some_and(|m| m.key == entry.key)
        }) {
            return Ok(None);
        }
        let last = day_of(&entry.summary.last.time);
        let from = span_start(last, summary::WINDOW_DAYS);
        let days: Vec<Rollup> = match read {
            (first, days) if first <= from.as_str() => days
                .iter()
                .filter(|d| d.period.as_str() >= from.as_str())
                .cloned()
                .collect(),
            _ => {
                self.data
                    .rollups(user, &entry.key, Period::Day, &from, TIME_MAX)
                    .await?
            }
        };
        Ok(
            summary::card(entry, &days).and_then(|card| match card.baseline {
                summary::Baseline::Known { baseline, .. } => Some(summary::rounded(baseline)),
                _ => None,
            }),
        )
    }

    /// An indicator's page: its chart over the span asked for (`?range=`, [`Span`]), a
    /// CGM's time in range and profile, sleep stages, the latest readings.
    pub(crate) async fn indicator_page(
        &self,
        session: &Session,
        indicator: &str,
        request: &Request<Bytes>,
    ) -> Answer {
        let user = session.user_id.as_str();
        let entry = self.series(user, indicator).await?;
        let (key, summary) = (entry.key.as_str(), &entry.summary);
        let kind = kind_of(key);
        let span = Span::parse(query_param(request, "range").as_deref());
        let last_day = day_of(&summary.last.time);
        // A span's day points from its first day; the whole history has day points for
        // the last twelve months or so and month points before them.
        let (cutoff, cutoff_month) = match span.days() {
            Some(days) => (span_start(last_day, days), String::new()),
            None => {
                let cutoff = chart::day_points_from(last_day).unwrap_or_default();
                let month = cutoff.get(..7).unwrap_or_default().to_string();
                (cutoff, month)
            }
        };
        let all = ReadingQuery::default();
        let months = async {
            match cutoff_month.as_str() {
                "" => Ok(Vec::new()),
                before => {
                    self.data
                        .rollups(user, key, Period::Month, "", before)
                        .await
                }
            }
        };
        let (months, days, latest) = tokio::join!(
            months,
            self.data.rollups(user, key, Period::Day, &cutoff, TIME_MAX),
            self.data.latest_readings(user, key, LATEST, &all),
        );
        let (months, days, latest) = (months?, days?, latest?);
        let baseline = self
            .personal_baseline(user, &entry, (&cutoff, &days))
            .await?;
        let months: Vec<&Rollup> = months.iter().filter(|m| m.period < cutoff_month).collect();
        let values = values_of(kind, months.iter().copied().chain(&days));
        let points: Vec<ChartPoint> = months
            .iter()
            .copied()
            .chain(&days)
            .filter_map(|r| chart_point(r, values))
            .collect();
        let month_count = months.len();
        let unit = summary.common_unit().flatten();
        // A CGM's glucose (the tool's rule: enough readings a day, bands counted) shows
        // the consensus figures over the chart's period: the span's days, or the whole
        // history.
        let whole = match values {
            Values::Means => cgm_report(summary, period_days(summary)),
            _ => None,
        };
        let is_cgm = whole.is_some();
        let cgm = match span.days() {
            None => whole,
            Some(span_days) => Rollup::merge("", days.iter())
                .filter(|_| is_cgm)
                .and_then(|window| cgm_report(&window, span_days.unsigned_abs())),
        };
        let (tir_from, tir_to) = match span.days() {
            Some(_) => (cutoff.as_str(), last_day),
            None => (day_of(&summary.first.time), last_day),
        };
        let band = match (values, is_cgm) {
            (Values::Means, false) => reference_range(&summary.name, summary.code.as_deref(), unit),
            _ => None,
        };
        let title = match values {
            Values::Means => summary.name.clone(),
            Values::DailyTotals => format!("{}, daily total", summary.name),
            Values::Nights => format!("{}, per night", summary.name),
        };
        let chart = Chart {
            title: &title,
            unit: if values == Values::Nights {
                Some("h")
            } else {
                unit
            },
            points: &points,
            band,
            baseline,
            values,
        };
        let profile = match is_cgm {
            true => self.glucose_profile(user, key, summary).await?,
            false => None,
        };
        let nights = match kind {
            Kind::Sleep => self.sleep_stages(user, &cutoff, (key, &days)).await?,
            _ => Vec::new(),
        };
        let headline = latest_of(kind, summary);
        let sent = latest.iter().any(|r| as_sent(r).is_some());
        let content = html! {
            p.facts {
                span.count { (grouped(summary.count)) }
                @if summary.count == 1 { " reading from " } @else { " readings from " }
                span.first { (day_of(&summary.first.time)) } " to "
                span.last { (day_of(&summary.last.time)) }
                @if let Some(unit) = unit { ", in " span.unit { (unit) } }
                ". Latest " (headline.basis) ": "
                span.latest { (headline.text) } " on " span.date { (headline.day) } "."
            }
            (range::control(&format!("/console/data/{}", path_segment(indicator)), span))
            figure.chart {
                (chart::draw(&chart))
                (chart::legend(&chart))
                p.readout aria-live="polite" {}
                figcaption.chart-summary {
                    (chart::describe(&chart))
                    @match (values, month_count > 0) {
                        (Values::Means, true) => {
                            " Points before " (cutoff) " are month means; from then on, day means."
                        },
                        (Values::Means, false) => {
                            " Each point is one day's mean; the lighter area spans each day's lowest to highest reading."
                        },
                        (Values::DailyTotals, true) => {
                            " Points before " (cutoff) " are a month's mean daily total; from then on, "
                            "each point is one day's total, every source counted once."
                        },
                        (Values::DailyTotals, false) => {
                            " Each point is one day's total, every source counted once."
                        },
                        (Values::Nights, true) => {
                            " Points before " (cutoff) " are a month's mean per night; from then on, "
                            "each point is one night, dated by the morning it ends."
                        },
                        (Values::Nights, false) => {
                            " Each point is one night, dated by the morning it ends."
                        },
                    }
                    @if band.is_some() {
                        " The reference range is a typical adult range, a guide and not a diagnosis."
                    }
                }
            }
            @if let Some(report) = &cgm {
                (time_in_range_markup(report, tir_from, tir_to))
            }
            @if let Some(profile) = &profile {
                (agp::section(profile))
            }
            (stages::section(&nights))
            h2 id="latest-heading" { "Latest readings" }
            div.table-wrap {
                table.compact id="latest" aria-labelledby="latest-heading" {
                    thead { tr {
                        th scope="col" { "When" } th scope="col" { "Value" }
                        th scope="col" { "Unit" } th scope="col" { "Source" }
                        @if sent { th scope="col" { "As sent" } }
                    } }
                    tbody {
                        @for r in &latest {
                            tr {
                                td.when data-label="When" { (when(&r.time)) }
                                td.value data-label="Value" { (value_text(&r.value)) }
                                td.unit data-label="Unit" { (r.unit.as_deref().unwrap_or_default()) }
                                td.source data-label="Source" { (r.source) }
                                @if sent { td.sent data-label="As sent" { (as_sent(r).unwrap_or_default()) } }
                            }
                        }
                    }
                }
            }
            p {
                a id="export-csv" href={ "/console/data/" (path_segment(indicator)) "/readings.csv" } download {
                    "Download every reading as CSV"
                }
                " (the shape the upload page reads back)."
            }
            p { a href="/console/data" { "Back to all your data" } }
        };
        self.signed_in_page(session, &summary.name, None, content)
    }

    /// A CGM's glucose profile over the last [`crate::tools::profile_window`] days with
    /// data (14), as `aggregate: profile` answers it: the window's readings read once.
    async fn glucose_profile(
        &self,
        user: &str,
        key: &str,
        summary: &Rollup,
    ) -> Result<Option<Profile>, ApiError> {
        let Ok((from, to)) = profile_window(&summary.last.time, None, None) else {
            return Ok(None);
        };
        let (from, to) = (from.to_string(), to.to_string());
        let query = ReadingQuery {
            indicator_keys: Some(vec![key.to_string()]),
            from: Some(from.clone()),
            to: Some(to.clone()),
        };
        let readings = self.data.readings(user, &query).await?;
        let values: Vec<HourValue> = readings.iter().filter_map(HourValue::of).collect();
        let hours = profile_hours(&values);
        if hours.is_empty() {
            return Ok(None);
        }
        Ok(Some(Profile {
            hours,
            days: days_with_numbers(&readings),
            from,
            to,
        }))
    }

    /// The sleep stages of the nights from `from` on (the chart's day points): one read of
    /// day rollups per stage, however many nights, except the page's own measure, whose
    /// day rollups (`shown`: its key and days from `from` on) were read for its chart.
    async fn sleep_stages(
        &self,
        user: &str,
        from: &str,
        shown: (&str, &[Rollup]),
    ) -> Result<Vec<Night>, ApiError> {
        let keys = stages::STAGES.map(|(name, _, _)| {
            measures::catalogue()
                .by_name(name)
                .map_or_else(|| Reading::indicator_key(name), |m| m.key.clone())
        });
        let reads = keys.iter().map(|key| async move {
            if key == shown.0 {
                return Ok(shown.1.to_vec());
            }
            self.data
                .rollups(user, key, Period::Day, from, TIME_MAX)
                .await
        });
        let [core, deep, rem, awake]: [Vec<Rollup>; 4] = futures_util::future::try_join_all(reads)
            .await?
            .try_into()
            .unwrap_or_default();
        Ok(stages::nights(&[core, deep, rem, awake]))
    }

    pub(crate) async fn genome_page(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let user = session.user_id.as_str();
        let asked = query_param(request, "rsid").unwrap_or_default();
        let asked = asked.trim();
        let parsed = (!asked.is_empty()).then(|| parse_rsids(asked));
        let summary = self.data.genome_summary(user).await?;
        let found: Option<Vec<String>> = match &parsed {
            Some(Ok(rsids)) if !rsids.is_empty() => Some(rsids.clone()),
            _ => None,
        };
        let genotypes: Vec<Genotype> = match (&found, &summary) {
            (Some(rsids), Some(_)) => self.data.genotypes_by_rsid(user, rsids).await?,
            _ => Vec::new(),
        };
        let problem = match &parsed {
            Some(Err(words)) => Some(words.clone()),
            _ => None,
        };
        let notice = problem.as_deref().map(Notice::Problem);
        // The form keeps what was typed, cut to the bound so a long query is not echoed whole.
        let typed: String = asked.chars().take(MAX_LOOKUP).collect();
        let content = html! {
            (genome_summary_markup(summary.as_ref(), true))
            form.lookup method="get" action="/console/genome" role="search" {
                label for="rsid" { "rsids (up to " (MAX_RSIDS) ", separated by commas or spaces)" }
                input id="rsid" name="rsid" type="search" value=(typed)
                    placeholder="rs429358, rs7412" autocomplete="off" spellcheck="false";
                button id="lookup" type="submit" { "Look up" }
            }
            @if let Some(rsids) = &found {
                @if summary.is_none() {
                    p.muted { "You have no genome to look these up in yet." }
                } @else {
                    h2 id="genotypes-heading" { "Your genotypes" }
                    div.table-wrap {
                        table.compact id="genotypes" aria-labelledby="genotypes-heading" {
                            thead { tr {
                                th scope="col" { "rsid" } th scope="col" { "Chromosome" }
                                th scope="col" { "Position" } th scope="col" { "Genotype" }
                            } }
                            tbody {
                                @for rsid in rsids {
                                    tr data-rsid=(rsid) {
                                        th scope="row" { (rsid) }
                                        @match genotypes.iter().find(|g| &g.rsid == rsid) {
                                            Some(g) => {
                                                td.chromosome { (g.chromosome) }
                                                td.position { (g.position) }
                                                td.genotype { (g.genotype) }
                                            },
                                            None => td.missing colspan="3" { "not in your genome" },
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p { a href="/console/data" { "Back to all your data" } }
        };
        let mut response = self.signed_in_page(session, "Your genome", notice.as_ref(), content)?;
        if problem.is_some() {
            *response.status_mut() = StatusCode::BAD_REQUEST;
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_round_trip_through_decode() {
        for name in [
            "Glucose",
            "Vitamin D (25-OH)",
            "a/b c+d%e",
            "糖化血红蛋白",
            "x?y#z",
        ] {
            let encoded = path_segment(name);
            assert!(!encoded.contains(['/', ' ', '?', '#', '+']), "{encoded}");
            assert_eq!(super::super::decode(&encoded), name);
        }
    }

    #[test]
    fn rsids_are_checked_before_the_store() {
        assert_eq!(
            parse_rsids("rs429358, RS7412  rs429358").unwrap(),
            vec!["rs429358", "rs7412"]
        );
        let words = parse_rsids("rs1, i3000, rs, rs1234567890123").unwrap_err();
        assert!(
            words.contains("Not an rsid: i3000, rs, rs1234567890123"),
            "{words}"
        );
        let many: Vec<String> = (1..=51).map(|n| format!("rs{n}")).collect();
        assert!(
            parse_rsids(&many.join(","))
                .unwrap_err()
                .contains("at most 50")
        );
        assert!(
            parse_rsids(&"rs1,".repeat(400))
                .unwrap_err()
                .contains("too long")
        );
        assert_eq!(parse_rsids(" , ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn times_and_values_are_shown_plainly() {
        assert_eq!(when("2026-01-02T08:30:00"), "2026-01-02 08:30");
        assert_eq!(when("2026-01-02"), "2026-01-02");
        assert_eq!(value_text(&ReadingValue::Number(118.0)), "118");
        assert_eq!(value_text(&ReadingValue::Number(5.6)), "5.6");
        // 5.5 mmol/L × 18.016 = 99.088 mg/dL, without float noise; totals grouped.
        assert_eq!(value_text(&ReadingValue::Number(5.5 * 18.016)), "99.088");
        assert_eq!(number_text(9600.0), "9,600");
        assert_eq!(number_text(-1234.5), "-1,234.5");
        assert_eq!(number_text(0.1 + 0.2), "0.3");
        assert_eq!(number_text(1e300), format_number(1e300));
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(230_400), "230,400");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(utc(u64::MAX), "");
    }

    fn reading(indicator: &str, value: f64, unit: &str, time: &str, source: &str) -> Reading {
        measures::catalogue()
            .canonical(Reading {
                indicator: indicator.into(),
                value: ReadingValue::Number(value),
                unit: Some(unit.into()),
                time: time.into(),
                code_system: None,
                code: None,
                source: source.into(),
                offset: None,
                original: None,
            })
            .unwrap()
    }

    /// Day rollups of `readings` (one series), in day order, and their merge (what the
    /// catalogue entry holds).
    fn rollups(readings: &[Reading]) -> (Vec<Rollup>, Rollup) {
        let mut days: Vec<&str> = readings.iter().map(|r| day_of(&r.time)).collect();
        days.sort();
        days.dedup();
        let parts: Vec<Rollup> = days
            .iter()
            .map(|d| {
                let of_day: Vec<Reading> = readings
                    .iter()
                    .filter(|r| day_of(&r.time) == *d)
                    .cloned()
                    .collect();
                Rollup::of(d, &of_day).unwrap()
            })
            .collect();
        let all = Rollup::merge("", &parts).unwrap();
        (parts, all)
    }

    #[test]
    fn steps_are_shown_as_daily_totals() {
        // 2026-03-01: 10 hourly readings of 500 = 5,000; 2026-03-02: 12 hourly readings
        // of 800 (08:00 to 19:00) = 9,600, and a watch that saw the 09:00 hour too
        // (700, less than the phone's 800) adds nothing: that hour counts once.
        let mut steps: Vec<Reading> = (8..18)
            .map(|h| {
                reading(
                    "Steps",
                    500.0,
                    "steps",
                    &format!("2026-03-01T{h:02}:00:00"),
                    "iPhone",
                )
            })
            .collect();
        steps.extend((8..20).map(|h| {
            reading(
                "Steps",
                800.0,
                "steps",
                &format!("2026-03-02T{h:02}:00:00"),
                "iPhone",
            )
        }));
        steps.push(reading(
            "Steps",
            700.0,
            "steps",
            "2026-03-02T09:30:00",
            "Watch",
        ));
        let (days, all) = rollups(&steps);
        let latest = latest_of(Kind::Cumulative, &all);
        assert_eq!(
            latest,
            Latest {
                text: "9,600 steps".into(),
                basis: "daily total",
                day: "2026-03-02".into(),
            }
        );
        let points: Vec<f64> = days
            .iter()
            .filter_map(|d| chart_point(d, Values::DailyTotals))
            .map(|p| p.mean)
            .collect();
        assert_eq!(points, vec![5000.0, 9600.0], "one point per day, its total");
        // A month point is the month's mean daily total: (5,000 + 9,600) / 2 = 7,300.
        let mut month = Rollup::merge("2026-03", &days).unwrap();
        assert_eq!(
            chart_point(&month, Values::DailyTotals).unwrap().mean,
            7300.0
        );
        month.total = None;
        assert_eq!(chart_point(&month, Values::DailyTotals), None);
        // Read as a discrete measure it would be the per-reading mean: never shown.
        assert_ne!(chart_point(&days[1], Values::Means).unwrap().mean, 9600.0);
    }

    #[test]
    fn sleep_is_shown_by_the_night_in_hours() {
        // Two nights dated by the morning: 420 min, then 7.5 h = 450 min.
        let nights = [
            reading("Sleep asleep", 420.0, "min", "2026-03-01T07:00:00", "Watch"),
            reading("Sleep asleep", 7.5, "h", "2026-03-02T07:00:00", "Watch"),
        ];
        let (days, all) = rollups(&nights);
        assert_eq!(
            latest_of(Kind::Sleep, &all),
            Latest {
                text: "7 h 30 min".into(),
                basis: "night",
                day: "2026-03-02".into(),
            }
        );
        let hours: Vec<f64> = days
            .iter()
            .filter_map(|d| chart_point(d, Values::Nights))
            .map(|p| p.mean)
            .collect();
        // 420 / 60 = 7 h, 450 / 60 = 7.5 h.
        assert_eq!(hours, vec![7.0, 7.5]);
    }

    #[test]
    fn a_profile_counts_the_days_that_have_numbers() {
        // Two readings on 2026-03-26, one on 2026-03-27 and a text value on 2026-03-28.
        let mut readings = vec![
            reading("Glucose", 100.0, "mg/dL", "2026-03-27T08:00:00", "Sensor"),
            reading("Glucose", 110.0, "mg/dL", "2026-03-26T08:05:00", "Sensor"),
            reading("Glucose", 120.0, "mg/dL", "2026-03-26T09:00:00", "Sensor"),
        ];
        readings.push(Reading {
            value: ReadingValue::Text("HI".into()),
            ..reading("Glucose", 0.0, "mg/dL", "2026-03-28T08:00:00", "Sensor")
        });
        assert_eq!(days_with_numbers(&readings), 2);
        assert_eq!(days_with_numbers(&[]), 0);
    }

    #[test]
    fn glucose_is_one_series_in_mg_dl_and_a_cgm_day_has_time_in_range() {
        // 5.5 mmol/L × 18.016 = 99.088 mg/dL and 99 mg/dL: one unit, no "mixed".
        let lab = [
            reading("Glucose", 5.5, "mmol/L", "2026-01-02T08:00:00", "Lab"),
            reading("Glucose", 99.0, "mg/dL", "2026-01-03T08:00:00", "Lab"),
        ];
        let (_, all) = rollups(&lab);
        assert_eq!(all.common_unit(), Some(Some("mg/dL")));
        assert_eq!(
            latest_of(Kind::Discrete, &all),
            Latest {
                text: "99 mg/dL".into(),
                basis: "reading",
                day: "2026-01-03".into(),
            }
        );
        assert_eq!(period_days(&all), 2);
        assert!(
            cgm_report(&all, period_days(&all)).is_none(),
            "a lab's few readings"
        );
        // A sensor every 15 minutes for a day: 96 readings, 72 at 120, 12 at 200, 12 at 60.
        let cgm: Vec<Reading> = (0..96)
            .map(|i| {
                let value = match i % 8 {
                    0 => 200.0,
                    1 => 60.0,
                    _ => 120.0,
                };
                let time = format!("2026-03-01T{:02}:{:02}:00", i / 4, (i % 4) * 15);
                reading("Glucose", value, "mg/dL", &time, "Sensor")
            })
            .collect();
        let (_, all) = rollups(&cgm);
        let report = cgm_report(&all, period_days(&all)).expect("a CGM day");
        let page = time_in_range_markup(&report, "2026-03-01", "2026-03-01").into_string();
        // In range 72/96 = 75 %; below 70 12/96 = 12.5 %; above 180 12/96 = 12.5 %.
        assert!(
            page.contains("<td class=\"tir-in-range\">75 %</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td class=\"tir-below\">12.5 %</td>"),
            "{page}"
        );
        assert!(
            page.contains("<td class=\"tir-above\">12.5 %</td>"),
            "{page}"
        );
        // Mean (72×120 + 12×200 + 12×60)/96 = 11,760/96 = 122.5 mg/dL;
        // GMI 3.31 + 0.02392 × 122.5 = 6.2402 → 6.2 %.
        assert!(
            page.contains("<td class=\"tir-mean\">122.5 mg/dL</td>"),
            "{page}"
        );
        assert!(page.contains("<td class=\"tir-gmi\">6.2 %</td>"), "{page}");
        assert!(
            page.contains("96 sensor readings over 1 day (100 % of those expected)"),
            "{page}"
        );
        assert!(
            page.contains("fewer than 14 days"),
            "one day is not a reliable report"
        );
    }
}
