//! `query_health_indicators` (E1): the caller's own health readings, by keyword or
//! exact indicator, as raw rows, statistics, or day/week/month buckets.
//!
//! Owns the parameters, defaults and bounds the original Python tool had and the compact
//! output (constant columns hoisted, then a `|`-separated table). Reads through the
//! `Store` trait; never logs a reading.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chrono::{Datelike, Duration, NaiveDate};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::matching::{self, Keyword};
use crate::domain::{FIRST_DAY, LAST_DAY, Reading, ReadingValue, day_accepted};
use crate::store::{HealthStore, ReadingQuery};
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
        // The window is inclusive and padded one day each side (naive timestamps).
        let query = ReadingQuery {
            indicator_keys: None,
            from: start.map(|d| pad(d, -1).format("%Y-%m-%d").to_string()),
            to: end.map(|d| format!("{}T23:59:59", pad(d, 1).format("%Y-%m-%d"))),
        };
        let readings = self.store.readings(user, &query).await.map_err(|e| {
            tracing::warn!(error = %e, "query_health_indicators: store read failed");
            "your health data could not be read right now; try again shortly".to_string()
        })?;
        let keywords = params.keywords.unwrap_or_default();
        let exact = params.indicators.unwrap_or_default();
        if keywords.is_empty() && exact.is_empty() {
            return Ok(catalogue(&readings));
        }
        let exact_keys: HashSet<String> = exact.iter().map(|n| Reading::indicator_key(n)).collect();
        let prepared: Vec<Keyword<'_>> = keywords.iter().map(|k| Keyword::new(k)).collect();
        // Keywords are matched once per distinct (indicator, code) the user has, not per
        // reading (issue 13, finding 3): readings × keywords became names × keywords.
        let mut matched: HashMap<(String, Option<&str>), bool> = HashMap::new();
        let mut by_indicator: BTreeMap<String, Vec<&Reading>> = BTreeMap::new();
        for reading in &readings {
            let key = Reading::indicator_key(&reading.indicator);
            let code = reading.code.as_deref();
            let wanted = *matched
                .entry((key.clone(), code))
                .or_insert_with_key(|(key, code)| {
                    exact_keys.contains(key) || prepared.iter().any(|k| k.matches(key, *code))
                });
            if wanted {
                by_indicator.entry(key).or_default().push(reading);
            }
        }
        if by_indicator.is_empty() {
            let asked: Vec<&str> = keywords.iter().chain(&exact).map(String::as_str).collect();
            return Ok(json!({
                "indicators": [],
                "message": format!(
                    "No readings match {} in this window. Call without keywords to see the catalogue of your indicators.",
                    asked.join(", ")
                )
            }));
        }
        let indicators: Vec<Value> = by_indicator
            .values()
            .map(|rows| match params.aggregate {
                Aggregate::None => latest(rows, limit as usize),
                Aggregate::Stats => stats(rows),
                bucket => buckets(rows, bucket),
            })
            .collect();
        Ok(
            json!({ "aggregate": format!("{:?}", params.aggregate).to_lowercase(), "indicators": indicators }),
        )
    }
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

fn day(reading: &Reading) -> &str {
    reading.time.get(..10).unwrap_or(&reading.time)
}

fn number(reading: &Reading) -> Option<f64> {
    match reading.value {
        ReadingValue::Number(n) => Some(n),
        ReadingValue::Text(_) => None,
    }
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

/// One catalogue line: name, code system, code, count, first day, last day.
type CatalogueEntry = (
    String,
    Option<String>,
    Option<String>,
    usize,
    String,
    String,
);

/// The catalogue of the user's indicators: name, code, count, first and last day.
fn catalogue(readings: &[Reading]) -> Value {
    let mut entries: BTreeMap<String, CatalogueEntry> = BTreeMap::new();
    for r in readings {
        let key = Reading::indicator_key(&r.indicator);
        let entry = entries.entry(key).or_insert_with(|| {
            let code = r
                .code
                .clone()
                .or_else(|| matching::known_code(&r.indicator).map(String::from));
            let system = r
                .code_system
                .clone()
                .or_else(|| code.as_ref().map(|_| "LOINC".to_string()));
            (
                r.indicator.clone(),
                system,
                code,
                0,
                day(r).to_string(),
                day(r).to_string(),
            )
        });
        entry.3 += 1;
        if day(r) < entry.4.as_str() {
            entry.4 = day(r).to_string();
        }
        if day(r) > entry.5.as_str() {
            entry.5 = day(r).to_string();
        }
    }
    let total = entries.len();
    let rows: Vec<String> = entries
        .values()
        .take(MAX_CATALOGUE)
        .map(|(name, system, code, count, first, last)| {
            let code = match (system, code) {
                (Some(s), Some(c)) => format!("{s} {c}"),
                (None, Some(c)) => c.clone(),
                _ => String::new(),
            };
            format!("{}|{code}|{count}|{first}|{last}", name.replace('|', "/"))
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

/// Columns whose value is the same on every row are hoisted into the header.
fn hoist(rows: &[&Reading], out: &mut Map<String, Value>) -> (bool, bool) {
    let constant = |f: &dyn Fn(&Reading) -> Option<String>| {
        let first = f(rows[0]);
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

fn header(rows: &[&Reading]) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("name".into(), rows[0].indicator.clone().into());
    if let Some(code) = rows.iter().find_map(|r| r.code.clone()) {
        let system = rows
            .iter()
            .find_map(|r| r.code_system.clone())
            .unwrap_or_else(|| "LOINC".into());
        out.insert("code".into(), format!("{system} {code}").into());
    }
    out
}

/// The latest `limit` readings, newest first.
fn latest(rows: &[&Reading], limit: usize) -> Value {
    let mut out = header(rows);
    let shown: Vec<&Reading> = rows.iter().rev().take(limit).copied().collect();
    let (unit_varies, source_varies) = hoist(&shown, &mut out);
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
    if rows.len() > limit {
        out.insert("truncated".into(), (rows.len() - limit).into());
    }
    Value::Object(out)
}

fn stats(rows: &[&Reading]) -> Value {
    let mut out = header(rows);
    hoist(rows, &mut out);
    let numeric: Vec<(&Reading, f64)> = rows
        .iter()
        .filter_map(|r| number(r).map(|n| (*r, n)))
        .collect();
    out.insert("count".into(), rows.len().into());
    out.insert("numeric_count".into(), numeric.len().into());
    let first = rows[0];
    let last = rows[rows.len() - 1];
    out.insert("first".into(), json_value(first));
    out.insert("first_date".into(), day(first).into());
    out.insert("last".into(), json_value(last));
    out.insert("last_date".into(), day(last).into());
    if !numeric.is_empty() {
        let values: Vec<f64> = numeric.iter().map(|(_, n)| *n).collect();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        out.insert("min".into(), json!(round(min)));
        out.insert("max".into(), json!(round(max)));
        out.insert("mean".into(), json!(round(mean)));
    }
    if let (Some(a), Some(b)) = (number(first), number(last)) {
        out.insert("change".into(), json!(round(b - a)));
    }
    Value::Object(out)
}

fn json_value(reading: &Reading) -> Value {
    match &reading.value {
        ReadingValue::Number(n) => json!(round(*n)),
        ReadingValue::Text(t) => Value::String(t.clone()),
    }
}

fn bucket_of(reading: &Reading, aggregate: Aggregate) -> String {
    let date = NaiveDate::parse_from_str(day(reading), "%Y-%m-%d").ok();
    match (aggregate, date) {
        (Aggregate::Week, Some(d)) => {
            let week = d.iso_week();
            format!("{}-W{:02}", week.year(), week.week())
        }
        (Aggregate::Month, _) => reading.time.get(..7).unwrap_or(&reading.time).to_string(),
        _ => day(reading).to_string(),
    }
}

fn buckets(rows: &[&Reading], aggregate: Aggregate) -> Value {
    let mut out = header(rows);
    hoist(rows, &mut out);
    out.remove("source");
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let Some(n) = number(r) {
            groups.entry(bucket_of(r, aggregate)).or_default().push(n);
        }
    }
    let table: Vec<String> = groups
        .iter()
        .map(|(bucket, values)| {
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let avg = values.iter().sum::<f64>() / values.len() as f64;
            format!(
                "{bucket}|{}|{}|{}|{}",
                format_number(avg),
                format_number(min),
                format_number(max),
                values.len()
            )
        })
        .collect();
    let label = match aggregate {
        Aggregate::Week => "week",
        Aggregate::Month => "month",
        _ => "day",
    };
    out.insert("columns".into(), format!("{label}|avg|min|max|n").into());
    out.insert("rows".into(), table.into());
    Value::Object(out)
}
