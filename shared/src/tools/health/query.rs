//! `query_health_indicators` (E1): the caller's own health readings, by keyword or
//! exact indicator, as raw rows, statistics, or day/week/month buckets.
//!
//! Owns the parameters, defaults and bounds the original Python tool had and the compact
//! output (constant columns hoisted, then a `|`-separated table). Reads through the
//! `Store` trait; never logs a reading.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::NaiveDate;
use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::answers::{self, Bucket, Median};
use super::matching::Keyword;
use super::profile;
use crate::domain::measures;
use crate::domain::{FIRST_DAY, LAST_DAY, Reading, day_accepted};
use crate::store::{
    CatalogueEntry, HealthStore, Period, ReadingQuery, Rollup, StoreError, TIME_MAX,
};
use crate::tools::{DataKind, Tool, ToolCall, ToolOutput, ToolSpec, input_schema};

const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;
/// Argument bounds, declared in the schema and enforced by the registry before any work.
const MAX_KEYWORDS: usize = 50;
const MAX_INDICATORS: usize = 200;
const MAX_NAME: usize = 200;
const MAX_DATE: usize = 32;

pub(crate) struct QueryHealthIndicators {
    pub store: Arc<dyn HealthStore>,
}

// The tool's arguments: what it reads and, derived from the same declaration, the input
// schema `tools/list` shows and the registry checks (the bounds above). A plain comment:
// a doc comment here would become the schema's `description`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Params {
    /// Indicator names to search for, fuzzy (any language, abbreviations)
    #[schemars(length(max = MAX_KEYWORDS), inner(length(max = MAX_NAME)))]
    keywords: Option<Vec<String>>,
    /// Exact measure names from the catalogue (or a name the measure is known by)
    #[schemars(length(max = MAX_INDICATORS), inner(length(max = MAX_NAME)))]
    indicators: Option<Vec<String>>,
    /// First day, YYYY-MM-DD (inclusive, from 1900-01-01)
    #[schemars(length(max = MAX_DATE))]
    start_time: Option<String>,
    /// Last day, YYYY-MM-DD (inclusive, up to 2200-12-31)
    #[schemars(length(max = MAX_DATE))]
    end_time: Option<String>,
    /// none: latest readings; stats: the period's statistics (totals for cumulative measures, mean/min/max/median/latest for discrete ones, the CGM report for CGM glucose); day/week/month: buckets (totals, or avg/min/max); profile: the days overlaid by hour of day (median and 25-75, 5-95 percentiles: the ambulatory glucose profile), at most 90 days, by default the last 14
    #[serde(default)]
    aggregate: Aggregate,
    /// Readings per indicator (aggregate none)
    #[schemars(range(min = 1, max = MAX_LIMIT), extend("default" = DEFAULT_LIMIT))]
    limit: Option<u32>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Aggregate {
    #[default]
    None,
    Stats,
    Day,
    Week,
    Month,
    // The ambulatory profile: the days of a window overlaid by hour of day. (A plain
    // comment: a doc comment on one variant would turn the schema's `enum` into `oneOf`.)
    Profile,
}

/// The most numeric readings a median is read from: 90 days of 5-minute readings, the
/// profile's own bound, so a median costs no more than the longest profile.
const MAX_MEDIAN_READINGS: u64 = profile::MAX_DAYS as u64 * 288;

impl Tool for QueryHealthIndicators {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "query_health_indicators",
            "Search the user's own health measures (lab results, vital signs, activity, sleep, CGM). \
             Without keywords or indicators: the catalogue (each measure's kind, unit and latest \
             value). keywords: fuzzy names in any language or abbreviations (e.g. [\"HbA1c\", \
             \"Hemoglobin A1c\"]). Every value is in the measure's unit, named in the answer. \
             aggregate by kind: cumulative measures (steps, distance, energy) answer totals: day \
             totals (day), week or month totals with days and the mean daily total (week, month), \
             the period's total, mean daily total and largest day (stats); several devices are \
             counted once. Discrete measures (heart rate, glucose, weight, labs) answer avg/min/max \
             per bucket, and stats gives count, mean, min, max, sd, median (from at most 25,920 \
             readings, else a note), first, last (the latest, with its date) and change; a CGM glucose series adds time in range 70-180, below 70/54, \
             above 180/250, GMI and CV (cgm). Sleep answers one value per night, dated by the \
             morning it ends. none: the latest readings with their UTC offset. Dates are \
             YYYY-MM-DD local days, inclusive, between 1900-01-01 and 2200-12-31.",
            input_schema::<Params>(),
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
        // Within 1..=MAX_LIMIT: the registry checked the schema's bounds before the call.
        let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
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
        // The window is inclusive, in whole local days: a reading's day is the date of
        // its local time (kept with its UTC offset), so day and month
        // rollups cover the window exactly.
        let window = Window {
            from: start,
            to: end,
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
            return Ok(answers::catalogue(&summaries));
        }
        // An exact name is the series' own, or a name the catalogue gives its measure.
        let exact_keys: HashSet<String> = exact
            .iter()
            .flat_map(|n| {
                let measure = measures::catalogue().by_name(n).map(|m| m.key.clone());
                std::iter::once(Reading::indicator_key(n)).chain(measure)
            })
            .collect();
        let prepared: Vec<Keyword<'_>> = keywords.iter().map(|k| Keyword::new(k)).collect();
        // Keywords are matched once per indicator the user has (the catalogue), never
        // per reading.
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
                Aggregate::Stats if window.is_all() => {
                    let median = self.median(user, entry, &entry.summary, &window).await?;
                    Some(answers::stats(&entry.summary, None, None, median.as_ref()))
                }
                Aggregate::Stats => {
                    let (from, to) = (window.from.map(ymd), window.to.map(ymd));
                    match self.window_summary(user, &entry.key, &window).await? {
                        Some(s) => {
                            let median = self.median(user, entry, &s, &window).await?;
                            Some(answers::stats(
                                &s,
                                from.as_deref(),
                                to.as_deref(),
                                median.as_ref(),
                            ))
                        }
                        None => None,
                    }
                }
                Aggregate::Profile => self.profile(user, entry, &window).await?,
                Aggregate::Month => {
                    let parts = self.window_parts(user, &entry.key, &window).await?;
                    answers::buckets(&parts, Bucket::Month)
                }
                Aggregate::Day | Aggregate::Week => {
                    let (from, to) = window.day_bounds();
                    let days = self
                        .store
                        .rollups(user, &entry.key, Period::Day, &from, &to)
                        .await
                        .map_err(unreadable)?;
                    let bucket = if params.aggregate == Aggregate::Day {
                        Bucket::Day
                    } else {
                        Bucket::Week
                    };
                    answers::buckets(&days, bucket)
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
        // Built by hand: `json!` would copy every indicator through `to_value`.
        let aggregate = format!("{:?}", params.aggregate).to_lowercase();
        Ok(Value::Object(Map::from_iter([
            ("aggregate".to_string(), Value::String(aggregate)),
            ("indicators".to_string(), Value::Array(indicators)),
        ])))
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

    /// A discrete series' median in the window, read from its readings when the window's
    /// summary counts at most [`MAX_MEDIAN_READINGS`] (known before reading, so the cost
    /// is bounded); `None` for summed kinds and series without numbers.
    async fn median(
        &self,
        user: &str,
        entry: &CatalogueEntry,
        summary: &Rollup,
        window: &Window,
    ) -> Result<Option<Median>, String> {
        let kind = measures::catalogue().kind_of_key(&entry.key);
        if kind.is_summed() || summary.numeric_count == 0 {
            return Ok(None);
        }
        if summary.numeric_count > MAX_MEDIAN_READINGS {
            return Ok(Some(Median::TooMany {
                limit: MAX_MEDIAN_READINGS,
            }));
        }
        let query = ReadingQuery {
            indicator_keys: None,
            from: window.from.map(ymd),
            to: window.to.map(ymd),
        };
        let values = self
            .store
            .hourly_values(user, &entry.key, &query)
            .await
            .map_err(unreadable)?;
        Ok(Median::of(&values))
    }

    /// The ambulatory profile of one series over at most [`profile::MAX_DAYS`] days (by
    /// default the last [`profile::DEFAULT_DAYS`] days with data): its readings read once.
    async fn profile(
        &self,
        user: &str,
        entry: &CatalogueEntry,
        window: &Window,
    ) -> Result<Option<Value>, String> {
        let (from, to) = profile::window(&entry.summary.last.time, window.from, window.to)?;
        let query = ReadingQuery {
            indicator_keys: None,
            from: Some(ymd(from)),
            to: Some(ymd(to)),
        };
        let values = self
            .store
            .hourly_values(user, &entry.key, &query)
            .await
            .map_err(unreadable)?;
        Ok(answers::profile(
            &entry.summary,
            &values,
            &ymd(from),
            &ymd(to),
        ))
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
        Ok(Some(answers::latest(&entry.summary, &rows, total)))
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

/// A window bound: `YYYY-MM-DD` inside the accepted calendar window (the
/// padding below must never overflow).
fn parse_day(field: &str, value: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(value.trim(), "%Y-%m-%d")
        .ok()
        .filter(|d| day_accepted(*d))
        .ok_or_else(|| {
            format!("{field} must be a date as YYYY-MM-DD between {FIRST_DAY} and {LAST_DAY}")
        })
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

    /// The query shapes the readings benchmark measures.
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

    /// On DynamoDB each query shape takes at most 3 requests and 64 KB, and no more on 3
    /// years of history than on 30 days (day buckets: one rollup item a day).
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
            // A discrete series' median reads its readings up to MAX_MEDIAN_READINGS (30
            // days of 5-minute glucose, one more request) and is not computed over 3 years:
            // the long history may cost less, never more.
            assert!(long.requests <= short.requests, "{shape}: requests grow");
            // Day buckets read one rollup a day; the lab's median reads its readings (one
            // in 30 days, twelve in 3 years): both cost what their answer holds.
            if !shape.starts_with("day buckets") && *shape != "lab by synonym" {
                // Readings differ in their digits only: the bytes stay within a few percent.
                let (a, b) = (short.bytes_received as f64, long.bytes_received as f64);
                assert!(b <= a * 1.1 + 200.0, "{shape}: bytes grow ({a} -> {b})");
            }
        }
    }
}
