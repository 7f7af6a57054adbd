//! `query_health_indicators` (E1): the caller's own health readings, by keyword or
//! exact indicator, as raw rows, statistics, or day/week/month buckets.
//!
//! Owns the parameters, defaults and bounds the original Python tool had and the compact
//! output (constant columns hoisted, then a `|`-separated table). Reads through the
//! `Store` trait; never logs a reading.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::{Datelike, Duration, NaiveDate};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::matching::{self, Keyword};
use crate::domain::{FIRST_DAY, LAST_DAY, Reading, ReadingValue, day_accepted};
use crate::store::{
    CatalogueEntry, HealthStore, Period, ReadingQuery, Rollup, StoreError, TIME_MAX,
};
use crate::tools::{DataKind, Tool, ToolCall, ToolOutput, ToolSpec};

const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;
const MAX_CATALOGUE: usize = 200;
/// Argument bounds, declared in the schema and enforced by the registry before any work
/// (issue 13, finding 3).
const MAX_KEYWORDS: usize = 50;
const MAX_INDICATORS: usize = 200;
const MAX_NAME: usize = 200;
const MAX_DATE: usize = 32;

pub(crate) struct QueryHealthIndicators {
    pub store: Arc<dyn HealthStore>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    keywords: Option<Vec<String>>,
    indicators: Option<Vec<String>>,
    start_time: Option<String>,
    end_time: Option<String>,
    #[serde(default)]
    aggregate: Aggregate,
    limit: Option<u32>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Aggregate {
    #[default]
    None,
    Stats,
    Day,
    Week,
    Month,
}

impl Tool for QueryHealthIndicators {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "query_health_indicators",
            "Search the user's own health indicators (lab results, vital signs). Without keywords or \
             indicators: the catalogue of what the user has. keywords: fuzzy names in any language or \
             abbreviations (e.g. [\"HbA1c\", \"Hemoglobin A1c\"]). aggregate: none (latest readings per \
             indicator), stats (count, min, max, mean, first, last, change), or day/week/month buckets. \
             Dates are YYYY-MM-DD, inclusive, between 1900-01-01 and 2200-12-31.",
            json!({
                "type": "object",
                "properties": {
                    "keywords": { "type": "array", "maxItems": MAX_KEYWORDS, "items": { "type": "string", "maxLength": MAX_NAME }, "description": "Indicator names to search for, fuzzy (any language, abbreviations)" },
                    "indicators": { "type": "array", "maxItems": MAX_INDICATORS, "items": { "type": "string", "maxLength": MAX_NAME }, "description": "Exact indicator names from the catalogue" },
                    "start_time": { "type": "string", "maxLength": MAX_DATE, "description": "First day, YYYY-MM-DD (inclusive, from 1900-01-01)" },
                    "end_time": { "type": "string", "maxLength": MAX_DATE, "description": "Last day, YYYY-MM-DD (inclusive, up to 2200-12-31)" },
                    "aggregate": { "type": "string", "enum": ["none", "stats", "day", "week", "month"], "default": "none" },
                    "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT, "description": "Readings per indicator (aggregate none)" }
                },
                "additionalProperties": false
            }),
        )
        .read_only()
        .needs_caller()
        .requires(DataKind::Health)
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(caller) = call.caller else {
                return ToolOutput::sign_in_first();
            };
            let params: Params = match serde_json::from_value(Value::Object(call.arguments)) {
                Ok(params) => params,
                Err(e) => return ToolOutput::Error(format!("invalid arguments: {e}")),
            };
            ToolOutput::data(self.run(&caller.user_id, params).await)
        })
    }
}

impl QueryHealthIndicators {
    pub(crate) fn new(store: Arc<dyn HealthStore>) -> Self {
        QueryHealthIndicators { store }
    }

    async fn run(&self, user: &str, params: Params) -> Result<Value, String> {
        let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(format!("limit must be between 1 and {MAX_LIMIT}"));
        }
        let start = params
            .start_time
            .as_deref()
            .map(|d| parse_day("start_time", d))
            .transpose()?;
        let end = params
            .end_time
            .as_deref()
            .map(|d| parse_day("end_time", d))
            .transpose()?;
        if let (Some(s), Some(e)) = (start, end)
            && s > e
        {
            return Err("start_time is after end_time".into());
        }
        // The window is inclusive and padded one day each side (naive timestamps); the
        // padded window is whole days, so day and month rollups cover it exactly.
        let window = Window {
            from: start.map(|d| pad(d, -1)),
            to: end.map(|d| pad(d, 1)),
        };
        let keywords = params.keywords.unwrap_or_default();
        let exact = params.indicators.unwrap_or_default();
        let catalogue = self.store.catalogue(user).await.map_err(unreadable)?;
        // Only indicators with readings inside the window (their first and last times
        // say which can have any).
        let catalogue: Vec<CatalogueEntry> = catalogue
            .into_iter()
            .filter(|e| window.overlaps(&e.summary))
            .collect();
        if keywords.is_empty() && exact.is_empty() {
            let summaries = self.window_summaries(user, &window, catalogue).await?;
            return Ok(catalogue_output(&summaries));
        }
        let exact_keys: HashSet<String> = exact.iter().map(|n| Reading::indicator_key(n)).collect();
        let prepared: Vec<Keyword<'_>> = keywords.iter().map(|k| Keyword::new(k)).collect();
        // Keywords are matched once per indicator the user has (the catalogue), never
        // per reading (issue 13, finding 3; issue 14).
        let matched: Vec<CatalogueEntry> = catalogue
            .into_iter()
            .filter(|e| {
                exact_keys.contains(&e.key)
                    || prepared
                        .iter()
                        .any(|k| k.matches(&e.key, e.summary.code.as_deref()))
            })
            .collect();
        let mut indicators = Vec::with_capacity(matched.len());
        for entry in &matched {
            let shown = match params.aggregate {
                Aggregate::None => self.latest(user, entry, &window, limit as usize).await?,
                // The whole history's summary is the catalogue entry itself.
                Aggregate::Stats if window.is_all() => Some(stats(&entry.summary)),
                Aggregate::Stats => self
                    .window_summary(user, &entry.key, &window)
                    .await?
                    .map(|s| stats(&s)),
                Aggregate::Month => {
                    let parts = self.window_parts(user, &entry.key, &window).await?;
                    buckets(&parts, Aggregate::Month)
                }
                bucket => {
                    let (from, to) = window.day_bounds();
                    let days = self
                        .store
                        .rollups(user, &entry.key, Period::Day, &from, &to)
                        .await
                        .map_err(unreadable)?;
                    buckets(&days, bucket)
                }
            };
            indicators.extend(shown);
        }
        if indicators.is_empty() {
            let asked: Vec<&str> = keywords.iter().chain(&exact).map(String::as_str).collect();
            return Ok(json!({
                "indicators": [],
                "message": format!(
                    "No readings match {} in this window. Call without keywords to see the catalogue of your indicators.",
                    asked.join(", ")
                )
            }));
        }
        Ok(
            json!({ "aggregate": format!("{:?}", params.aggregate).to_lowercase(), "indicators": indicators }),
        )
    }

    /// The rollups that cover the window exactly: month rollups for the months inside
    /// it, day rollups for the days of its partial first and last months. At most
    /// three reads, however long the history.
    async fn window_parts(
        &self,
        user: &str,
        key: &str,
        window: &Window,
    ) -> Result<Vec<Rollup>, String> {
        let store = &self.store;
        let month = |d: NaiveDate| d.format("%Y-%m").to_string();
        let (from_month, to_month) = (window.from.map(month), window.to.map(month));
        if let (Some(from), Some(to)) = (window.from, window.to)
            && from_month == to_month
        {
            let (from, to) = (ymd(from), ymd(to));
            return store
                .rollups(user, key, Period::Day, &from, &to)
                .await
                .map_err(unreadable);
        }
        let head = async {
            match (window.from, &from_month) {
                (Some(from), Some(m)) => {
                    store
                        .rollups(user, key, Period::Day, &ymd(from), &format!("{m}-31"))
                        .await
                }
                _ => Ok(Vec::new()),
            }
        };
        let tail = async {
            match (window.to, &to_month) {
                (Some(to), Some(m)) => {
                    store
                        .rollups(user, key, Period::Day, &format!("{m}-01"), &ymd(to))
                        .await
                }
                _ => Ok(Vec::new()),
            }
        };
        // The months strictly between the partial ones ("~" sorts after a month's digits).
        let low = from_month
            .as_ref()
            .map_or(String::new(), |m| format!("{m}~"));
        let high = to_month.clone().unwrap_or_else(|| TIME_MAX.to_string());
        let middle = store.rollups(user, key, Period::Month, &low, &high);
        let (head, middle, tail) = futures_util::future::try_join3(head, middle, tail)
            .await
            .map_err(unreadable)?;
        let middle = middle
            .into_iter()
            .filter(|r| Some(&r.period) != to_month.as_ref());
        Ok(head.into_iter().chain(middle).chain(tail).collect())
    }

    /// The rollup of one indicator's readings in the window.
    async fn window_summary(
        &self,
        user: &str,
        key: &str,
        window: &Window,
    ) -> Result<Option<Rollup>, String> {
        let parts = self.window_parts(user, key, window).await?;
        Ok(Rollup::merge("", &parts))
    }

    /// Each catalogue entry's summary inside the window (the entry itself without one).
    async fn window_summaries(
        &self,
        user: &str,
        window: &Window,
        catalogue: Vec<CatalogueEntry>,
    ) -> Result<Vec<Rollup>, String> {
        if window.is_all() {
            return Ok(catalogue.into_iter().map(|e| e.summary).collect());
        }
        let mut out = Vec::with_capacity(catalogue.len());
        for chunk in catalogue.chunks(8) {
            let parts = chunk
                .iter()
                .map(|e| self.window_summary(user, &e.key, window));
            out.extend(
                futures_util::future::try_join_all(parts)
                    .await?
                    .into_iter()
                    .flatten(),
            );
        }
        Ok(out)
    }

    /// The latest `limit` readings of one indicator, newest first.
    async fn latest(
        &self,
        user: &str,
        entry: &CatalogueEntry,
        window: &Window,
        limit: usize,
    ) -> Result<Option<Value>, String> {
        let query = ReadingQuery {
            indicator_keys: None,
            from: window.from.map(ymd),
            to: window.to.map(|d| format!("{}T23:59:59", ymd(d))),
        };
        let rows = self
            .store
            .latest_readings(user, &entry.key, limit, &query)
            .await
            .map_err(unreadable)?;
        if rows.is_empty() {
            return Ok(None);
        }
        // Counting what is left out costs a read only when the limit was reached.
        let total = if rows.len() < limit {
            rows.len() as u64
        } else if window.is_all() {
            entry.summary.count
        } else {
            self.window_summary(user, &entry.key, window)
                .await?
                .map_or(rows.len() as u64, |s| s.count)
        };
        Ok(Some(latest(&entry.summary, &rows, total)))
    }
}

/// The padded query window, in whole days (`None`: unbounded on that side).
struct Window {
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
}

impl Window {
    fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// The window's first and last day as rollup bounds.
    fn day_bounds(&self) -> (String, String) {
        (
            self.from.map(ymd).unwrap_or_default(),
            self.to.map_or_else(|| TIME_MAX.to_string(), ymd),
        )
    }

    /// Can a summary spanning its first to last time have readings in the window?
    fn overlaps(&self, summary: &Rollup) -> bool {
        let (from, to) = self.day_bounds();
        Period::Day.of(&summary.last.time) >= from.as_str()
            && Period::Day.of(&summary.first.time) <= to.as_str()
    }
}

fn ymd(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

fn unreadable(e: StoreError) -> String {
    tracing::warn!(error = %e, "query_health_indicators: store read failed");
    "your health data could not be read right now; try again shortly".to_string()
}

/// A window bound: `YYYY-MM-DD` inside the accepted calendar window (issue 13, finding 1:
/// the padding below must never overflow).
fn parse_day(field: &str, value: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(value.trim(), "%Y-%m-%d")
        .ok()
        .filter(|d| day_accepted(*d))
        .ok_or_else(|| {
            format!("{field} must be a date as YYYY-MM-DD between {FIRST_DAY} and {LAST_DAY}")
        })
}

/// `day` padded by one day (`-1` or `1`); the bounds of `parse_day` keep it in range,
/// and a day that would still overflow stays as it is.
fn pad(day: NaiveDate, days: i64) -> NaiveDate {
    Duration::try_days(days)
        .and_then(|d| day.checked_add_signed(d))
        .unwrap_or(day)
}

fn day(time: &str) -> &str {
    Period::Day.of(time)
}

fn value_text(reading: &Reading) -> String {
    match &reading.value {
        ReadingValue::Number(n) => format_number(*n),
        ReadingValue::Text(t) => t.replace('|', "/"),
    }
}

fn format_number(n: f64) -> String {
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

/// The catalogue of the user's indicators: name, code, count, first and last day.
fn catalogue_output(summaries: &[Rollup]) -> Value {
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
            format!(
                "{}|{code}|{}|{}|{}",
                s.name.replace('|', "/"),
                s.count,
                day(&s.first.time),
                day(&s.last.time)
            )
        })
        .collect();
    let mut out =
        json!({ "columns": "name|code|count|first|last", "rows": rows, "indicator_count": total });
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

/// The name and code of an indicator.
fn header(summary: &Rollup) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("name".into(), summary.name.clone().into());
    if let Some(code) = &summary.code {
        let system = summary.code_system.as_deref().unwrap_or("LOINC");
        out.insert("code".into(), format!("{system} {code}").into());
    }
    out
}

/// The unit and the source, when the same on every reading, go into the header.
fn hoist_summary(summary: &Rollup, out: &mut Map<String, Value>) {
    if let Some(unit) = summary.common_unit() {
        out.insert("unit".into(), unit.map_or(Value::Null, Value::from));
    }
    if let Some(source) = summary.common_source() {
        out.insert("source".into(), source.into());
    }
}

/// Columns whose value is the same on every shown row are hoisted into the header.
fn hoist(rows: &[Reading], out: &mut Map<String, Value>) -> (bool, bool) {
    let constant = |f: &dyn Fn(&Reading) -> Option<String>| {
        let first = f(&rows[0]);
        rows.iter().all(|r| f(r) == first).then_some(first)
    };
    let unit = constant(&|r| r.unit.clone());
    let source = constant(&|r| Some(r.source.clone()));
    if let Some(unit) = &unit {
        out.insert(
            "unit".into(),
            unit.clone().map_or(Value::Null, Value::String),
        );
    }
    if let Some(Some(source)) = &source {
        out.insert("source".into(), source.clone().into());
    }
    (unit.is_none(), source.is_none())
}

/// The latest readings (newest first, at least one), of `total` in the window.
fn latest(summary: &Rollup, shown: &[Reading], total: u64) -> Value {
    let mut out = header(summary);
    let (unit_varies, source_varies) = hoist(shown, &mut out);
    let mut columns = vec!["time", "value"];
    if unit_varies {
        columns.push("unit");
    }
    if source_varies {
        columns.push("source");
    }
    let table: Vec<String> = shown
        .iter()
        .map(|r| {
            let mut cells = vec![r.time.clone(), value_text(r)];
            if unit_varies {
                cells.push(r.unit.clone().unwrap_or_default());
            }
            if source_varies {
                cells.push(r.source.replace('|', "/"));
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
    Value::Object(out)
}

fn stats(s: &Rollup) -> Value {
    let mut out = header(s);
    hoist_summary(s, &mut out);
    out.insert("count".into(), s.count.into());
    out.insert("numeric_count".into(), s.numeric_count.into());
    out.insert("first".into(), json_value(&s.first.value));
    out.insert("first_date".into(), day(&s.first.time).into());
    out.insert("last".into(), json_value(&s.last.value));
    out.insert("last_date".into(), day(&s.last.time).into());
    if s.numeric_count > 0 {
        out.insert("min".into(), json!(round(s.min)));
        out.insert("max".into(), json!(round(s.max)));
        out.insert("mean".into(), json!(round(s.sum / s.numeric_count as f64)));
    }
    if let (ReadingValue::Number(a), ReadingValue::Number(b)) = (&s.first.value, &s.last.value) {
        out.insert("change".into(), json!(round(b - a)));
    }
    Value::Object(out)
}

fn json_value(value: &ReadingValue) -> Value {
    match value {
        ReadingValue::Number(n) => json!(round(*n)),
        ReadingValue::Text(t) => Value::String(t.clone()),
    }
}

/// The bucket a day or month rollup falls in.
fn bucket_of(period: &str, aggregate: Aggregate) -> String {
    let date = NaiveDate::parse_from_str(day(period), "%Y-%m-%d").ok();
    match (aggregate, date) {
        (Aggregate::Week, Some(d)) => {
            let week = d.iso_week();
            format!("{}-W{:02}", week.year(), week.week())
        }
        (Aggregate::Month, _) => Period::Month.of(period).to_string(),
        _ => day(period).to_string(),
    }
}

/// Day, week or month buckets from day (or, for months, month) rollups in period order.
fn buckets(parts: &[Rollup], aggregate: Aggregate) -> Option<Value> {
    let summary = Rollup::merge("", parts)?;
    let mut out = header(&summary);
    hoist_summary(&summary, &mut out);
    out.remove("source");
    let mut groups: BTreeMap<String, Vec<&Rollup>> = BTreeMap::new();
    for part in parts.iter().filter(|p| p.numeric_count > 0) {
        groups
            .entry(bucket_of(&part.period, aggregate))
            .or_default()
            .push(part);
    }
    let table: Vec<String> = groups
        .iter()
        .filter_map(|(bucket, parts)| {
            let s = Rollup::merge(bucket, parts.iter().copied())?;
            Some(format!(
                "{bucket}|{}|{}|{}|{}",
                format_number(s.sum / s.numeric_count as f64),
                format_number(s.min),
                format_number(s.max),
                s.numeric_count
            ))
        })
        .collect();
    let label = match aggregate {
        Aggregate::Week => "week",
        Aggregate::Month => "month",
        _ => "day",
    };
    out.insert("columns".into(), format!("{label}|avg|min|max|n").into());
    out.insert("rows".into(), table.into());
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::{Params, QueryHealthIndicators};
    use crate::domain::{Reading, ReadingValue};
    use crate::store::{DynamoStore, HealthStore, IoCounters};

    /// Hourly glucose from 2021-01-01 for `days` days, and a quarterly HbA1c.
    fn history(days: i64) -> Vec<Reading> {
        let start = chrono::NaiveDate::from_ymd_opt(2021, 1, 1).unwrap();
        let mut out = Vec::new();
        for d in 0..days {
            let day = (start + chrono::Duration::days(d)).format("%Y-%m-%d");
            for h in 0..24 {
                out.push(Reading {
                    indicator: "Glucose".into(),
                    value: ReadingValue::Number(80.0 + f64::from((d * 24 + h) as i32 % 40)),
                    unit: Some("mg/dL".into()),
                    time: format!("{day}T{h:02}:00:00"),
                    code_system: Some("LOINC".into()),
                    code: Some("2339-0".into()),
                    source: "CGM".into(),
                    offset: None,
                    original: None,
                });
            }
            if d % 90 == 0 {
                out.push(Reading {
                    indicator: "Hemoglobin A1c".into(),
                    value: ReadingValue::Number(5.5),
                    unit: Some("%".into()),
                    time: format!("{day}T09:00:00"),
                    code_system: None,
                    code: None,
                    source: "Lab".into(),
                    offset: None,
                    original: None,
                });
            }
        }
        out
    }

    /// The query shapes of issue 14, section 3.
    fn shapes() -> Vec<(&'static str, Value)> {
        vec![
            ("catalogue", json!({})),
            (
                "stats",
                json!({ "keywords": ["glucose"], "aggregate": "stats" }),
            ),
            ("latest 50", json!({ "keywords": ["glucose"] })),
            (
                "lab by synonym",
                json!({ "keywords": ["HbA1c"], "aggregate": "stats" }),
            ),
            (
                "day buckets, a year",
                json!({ "keywords": ["glucose"], "aggregate": "day",
                        "start_time": "2021-01-01", "end_time": "2021-12-31" }),
            ),
            (
                "stats, a window",
                json!({ "keywords": ["glucose"], "aggregate": "stats",
                        "start_time": "2021-01-10", "end_time": "2021-01-20" }),
            ),
        ]
    }

    async fn cost(store: &DynamoStore, user: &str, arguments: &Value) -> (IoCounters, Value) {
        let tool = QueryHealthIndicators::new(Arc::new(store.clone()));
        let params: Params = serde_json::from_value(arguments.clone()).unwrap();
        let before = store.io_counters();
        let out = tool.run(user, params).await.unwrap();
        (store.io_counters().since(before), out)
    }

    /// On DynamoDB each query shape takes at most 3 requests and 64 KB, and the same
    /// on 30 days as on 3 years of history (day buckets: one rollup item a day).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn query_cost_does_not_grow_with_history() {
        let mut costs = Vec::new();
        for (label, days) in [("short", 30), ("long", 3 * 365)] {
            let (store, _moto) = crate::store::moto_dynamo_store().await;
            let data = history(days);
            store.put_readings(label, &data).await.unwrap();
            let mut shape_costs = Vec::new();
            for (shape, arguments) in shapes() {
                let (io, out) = cost(&store, label, &arguments).await;
                assert!(out.get("message").is_none(), "{shape}: {out}");
                assert!(io.requests <= 3, "{shape} on {label}: {io:?}");
                if shape != "day buckets, a year" {
                    assert!(io.bytes_received <= 64 * 1024, "{shape} on {label}: {io:?}");
                }
                eprintln!("{label:5} {shape:20} {io:?}");
                shape_costs.push((shape, io));
            }
            costs.push(shape_costs);
        }
        for ((shape, short), (_, long)) in costs[0].iter().zip(&costs[1]) {
            assert_eq!(short.requests, long.requests, "{shape}: requests grow");
            if !shape.starts_with("day buckets") {
                // Readings differ in their digits only: the bytes stay within a few percent.
                let (a, b) = (short.bytes_received as f64, long.bytes_received as f64);
                assert!(b <= a * 1.1 + 200.0, "{shape}: bytes grow ({a} -> {b})");
            }
        }
    }
}
