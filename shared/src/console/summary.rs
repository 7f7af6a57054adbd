//! The summary: the console's landing page, one card per measure, grouped the way a
//! person looks for them (activity, heart, sleep, body, metabolic, labs: the measures
//! catalogue's `group`). Each card has the latest figure as `query_health_indicators`
//! reads it (a cumulative measure's latest day total, sleep's latest night, otherwise
//! the latest reading) with its unit and day, a sparkline of the last 7 days that have
//! the measure's day figures, the 7-day average against the person's own baseline (the
//! 30 days before those 7), and the typical reference range when the latest reading is
//! outside it; a CGM's glucose has its consensus time in range over 14 days instead.
//!
//! Reads the catalogue and, per measure, 37 day rollups through `DataApi` (never the
//! store); renders only. Never logs a value.

use maud::{Markup, html};

use super::ConsoleApi;
use super::chart::{self, Values, date_of, day_number, format_value};
use super::data::{
    Latest, chart_point, day_of, kind_of, latest_of, number_text, path_segment, values_of,
};
use crate::api::data::{CatalogueEntry, Period, Rollup};
use crate::domain::ReadingValue;
use crate::domain::measures::{self, Group};
use crate::http::ApiError;
use crate::tools::{cgm_report, format_number, hours_and_minutes, reference_range};

/// The days of the recent window (the sparkline and the 7-day average).
const RECENT_DAYS: i64 = 7;
/// The days of the baseline, just before the recent window.
const BASELINE_DAYS: i64 = 30;
/// The days a card reads: the baseline and the recent window.
pub(super) const WINDOW_DAYS: i64 = RECENT_DAYS + BASELINE_DAYS;
/// The days a CGM's time in range is counted over (the consensus's minimum).
const CGM_DAYS: i64 = 14;
/// Days with a figure needed for a baseline to be shown: in the recent window, in the
/// baseline window.
const RECENT_NEEDED: usize = 3;
const BASELINE_NEEDED: usize = 10;
/// A change smaller than this (in per cent of the baseline) reads "about the same".
const STEADY_PCT: f64 = 2.0;

/// A measure's figures for its card.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Card {
    pub name: String,
    pub group: Group,
    pub latest: Latest,
    /// The last [`RECENT_DAYS`] days to the latest one: (day number, the day's figure).
    pub recent: Vec<(i64, Option<f64>)>,
    /// How the figures read: day totals, nights in hours, day means.
    pub values: Values,
    pub unit: Option<String>,
    pub baseline: Baseline,
    pub flag: Option<Flag>,
    /// A CGM's glucose: time in range, below 70 and below 54 (per cent), over the
    /// [`CGM_DAYS`] days to the latest.
    pub time_in_range: Option<(f64, f64, f64)>,
}

/// The 7-day average against the 30 days before.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Baseline {
    /// Both averages (of the days with a figure).
    Known { recent: f64, baseline: f64 },
    /// Too few days with a figure in one of the windows.
    TooFewDays,
    /// Not a measure with a day-to-day baseline (lab results).
    NotApplicable,
}

/// The latest reading against the typical adult reference range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Flag {
    pub above: bool,
    pub low: f64,
    pub high: f64,
}

/// The mean of the figures present.
fn mean_of(values: impl Iterator<Item = f64>) -> Option<(f64, usize)> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| (sum / n as f64, n))
}

/// The card of one catalogue entry from its day rollups of the 37 days to its latest day.
pub(crate) fn card(entry: &CatalogueEntry, days: &[Rollup]) -> Option<Card> {
    let summary = &entry.summary;
    let kind = kind_of(&entry.key);
    let group = measures::catalogue()
        .by_key(&entry.key)
        .map_or(Group::Other, |m| m.group);
    let last = day_number(day_of(&summary.last.time))?;
    let values = values_of(kind, days.iter());
    // Each day's figure, once: (day number, figure).
    let figures: Vec<(i64, f64)> = days
        .iter()
        .filter_map(|d| chart_point(d, values))
        .map(|p| (p.day, p.mean))
        .collect();
    let figure = |day: i64| figures.iter().find(|(d, _)| *d == day).map(|(_, v)| *v);
    let recent: Vec<(i64, Option<f64>)> = (last - RECENT_DAYS + 1..=last)
        .map(|day| (day, figure(day)))
        .collect();
    let recent_mean = mean_of(recent.iter().filter_map(|(_, v)| *v));
    let baseline_mean =
        mean_of((last - RECENT_DAYS - BASELINE_DAYS + 1..=last - RECENT_DAYS).filter_map(figure));
    let days_with = |mean: Option<(f64, usize)>| mean.map_or(0, |(_, n)| n);
    // A measure read now and then (a lab value, a weight every few weeks) has no day to
    // day trend to speak of: neither a baseline nor the note that one is missing.
    let occasional = days_with(recent_mean) < 2 && days_with(baseline_mean) < 2;
    let baseline = match (recent_mean, baseline_mean) {
        _ if group == Group::Labs || occasional => Baseline::NotApplicable,
        (Some((recent, r)), Some((baseline, b))) if r >= RECENT_NEEDED && b >= BASELINE_NEEDED => {
            Baseline::Known { recent, baseline }
        }
        _ => Baseline::TooFewDays,
    };
    let unit = summary.common_unit().flatten().map(str::to_string);
    let in_window = days
        .iter()
        .filter(|d| day_number(&d.period).is_some_and(|day| day > last - CGM_DAYS));
    let time_in_range = match values {
        Values::Means => Rollup::merge("", in_window)
            .and_then(|window| cgm_report(&window, CGM_DAYS as u64))
            .and_then(|report| {
                let pct = |field: &str| report[field].as_f64();
                Some((
                    pct("time_in_range_70_180_pct")?,
                    pct("time_below_70_pct")?,
                    pct("time_below_54_pct")?,
                ))
            }),
        _ => None,
    };
    let flag = match (&summary.last.value, values, time_in_range) {
        (ReadingValue::Number(value), Values::Means, None) => {
            reference_range(&summary.name, summary.code.as_deref(), unit.as_deref())
                .filter(|(low, high)| value < low || value > high)
                .map(|(low, high)| Flag {
                    above: *value > high,
                    low,
                    high,
                })
        }
        _ => None,
    };
    Some(Card {
        name: summary.name.clone(),
        group,
        latest: latest_of(kind, summary),
        recent,
        values,
        unit,
        baseline,
        flag,
        time_in_range,
    })
}

/// A figure with its unit as the card shows it (nights in hours and minutes).
fn figure_text(card: &Card, value: f64) -> String {
    match (card.values, &card.unit) {
        (Values::Nights, _) => hours_and_minutes(value * 60.0),
        (_, Some(unit)) => format!("{} {unit}", number_text(rounded(value))),
        (_, None) => number_text(rounded(value)),
    }
}

/// A CGM's lows in words when they pass the consensus targets (below 70 mg/dL 4 % of
/// readings or more, below 54 1 % or more); nothing otherwise. The card and the
/// indicator page say it the same way.
pub(super) fn lows_note(below_70: f64, below_54: f64) -> Markup {
    html! {
        @if below_70 >= 4.0 || below_54 >= 1.0 {
            p.flag.low role="note" {
                "Lows: " (format_number(below_70)) " % of readings below 70 mg/dL and "
                (format_number(below_54)) " % below 54 (the consensus targets are under 4 % "
                "and under 1 %)."
            }
        }
    }
}

/// An average as shown: whole numbers from 100 up, one decimal below.
pub(super) fn rounded(value: f64) -> f64 {
    if value.abs() >= 100.0 {
        value.round()
    } else {
        (value * 10.0).round() / 10.0
    }
}

/// `Mar 4` for a day number.
fn short_day(day: i64) -> String {
    date_of(day).map_or_else(String::new, |d| d.format("%b %-d").to_string())
}

/// The last 7 days as a line: a point per day with a figure, gaps where none; the
/// latest day marked. Its words (each day and figure) are its accessible name.
fn sparkline(card: &Card) -> Markup {
    const W: f64 = 120.0;
    const H: f64 = 36.0;
    const PAD: f64 = 4.0;
    let present: Vec<f64> = card.recent.iter().filter_map(|(_, v)| *v).collect();
    let low = present.iter().copied().fold(f64::INFINITY, f64::min);
    let high = present.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let y = |v: f64| {
        if high > low {
            H - PAD - (v - low) / (high - low) * (H - 2.0 * PAD)
        } else {
            H / 2.0
        }
    };
    let step = (W - 2.0 * PAD) / (RECENT_DAYS - 1) as f64;
    let points: Vec<(f64, f64, bool)> = card
        .recent
        .iter()
        .enumerate()
        .filter_map(|(i, (_, v))| {
            v.map(|v| (PAD + i as f64 * step, y(v), i + 1 == card.recent.len()))
        })
        .collect();
    let mut path = String::new();
    let mut previous: Option<usize> = None;
    for (i, (_, v)) in card.recent.iter().enumerate() {
        let Some(v) = v else {
            previous = None;
            continue;
        };
        let command = if previous.is_some() { 'L' } else { 'M' };
        path.push_str(&format!(
            "{command}{} {} ",
            chart::c(PAD + i as f64 * step),
            chart::c(y(*v))
        ));
        previous = Some(i);
    }
    let words: Vec<String> = card
        .recent
        .iter()
        .map(|(day, v)| match v {
            Some(v) => format!("{} {}", short_day(*day), figure_text(card, *v)),
            None => format!("{} none", short_day(*day)),
        })
        .collect();
    let label = format!("Last 7 days: {}", words.join(", "));
    html! {
        svg.spark role="img" aria-label=(label) viewBox={ "0 0 " (W) " " (H) }
            {
            path d=(path.trim_end()) {}
            @for (x, y, latest) in &points {
                circle class=[latest.then_some("latest")] cx=(chart::c(*x)) cy=(chart::c(*y))
                    r=(if *latest { "3.5" } else { "2.5" }) {}
            }
        }
    }
}

/// The 7-day average against the baseline, in words.
fn baseline_markup(card: &Card) -> Markup {
    match card.baseline {
        Baseline::Known { recent, baseline } => {
            let change = if baseline != 0.0 {
                (recent - baseline) / baseline.abs() * 100.0
            } else {
                0.0
            };
            let (arrow, words) = if change.abs() < STEADY_PCT {
                ("→", "about the same as".to_string())
            } else if change > 0.0 {
                (
                    "↑",
                    format!("{} % above", format_number(change.abs().round())),
                )
            } else {
                (
                    "↓",
                    format!("{} % below", format_number(change.abs().round())),
                )
            };
            let per = match card.values {
                Values::Nights => "a night",
                Values::DailyTotals => "a day",
                Values::Means => "",
            };
            html! {
                p.baseline {
                    span.change aria-hidden="true" { (arrow) } " "
                    "7-day average " span.recent { (figure_text(card, recent)) }
                    @if !per.is_empty() { " " (per) }
                    ", " span.direction { (words) } " your 30-day baseline of "
                    span.usual { (figure_text(card, baseline)) } "."
                }
            }
        }
        Baseline::TooFewDays => html! {
            p.baseline.muted {
                "No baseline yet: it needs " (RECENT_NEEDED) " of the last 7 days and "
                (BASELINE_NEEDED) " of the 30 before."
            }
        },
        Baseline::NotApplicable => html! {},
    }
}

/// One card.
fn card_markup(card: &Card) -> Markup {
    // A line needs two days; one reading in a week is the latest figure already shown.
    let has_recent = card.recent.iter().filter(|(_, v)| v.is_some()).count() >= 2;
    html! {
        article.card data-measure=(card.name) {
            h4 { a href={ "/console/data/" (path_segment(&card.name)) } { (card.name) } }
            p.latest {
                span.value { (card.latest.text) } " "
                span.basis.muted { (card.latest.basis) ", " span.date { (card.latest.day) } }
            }
            @if has_recent && card.group != Group::Labs { (sparkline(card)) }
            (baseline_markup(card))
            @if let Some((in_range, below_70, below_54)) = card.time_in_range {
                p.tir {
                    "Time in range (70 to 180 mg/dL): " span.tir-in-range { (format_number(in_range)) " %" }
                    " over the 14 days to " (card.latest.day) "."
                }
                (lows_note(below_70, below_54))
            }
            @if let Some(flag) = &card.flag {
                @let unit = card.unit.as_deref().unwrap_or("");
                p.flag.out-of-range role="note" {
                    @if flag.above { "Above" } @else { "Below" }
                    " the typical range of " (format_value(flag.low)) " to " (format_value(flag.high))
                    " " (unit) " (a guide, not a diagnosis)."
                }
            }
        }
    }
}

/// The summary's sections: the cards grouped, sections in [`Group`] order.
pub(crate) fn cards_markup(cards: &[Card]) -> Markup {
    let mut groups: Vec<Group> = cards.iter().map(|c| c.group).collect();
    groups.sort_unstable();
    groups.dedup();
    html! {
        @for group in groups {
            section.group aria-labelledby={ "group-" (group.id()) } {
                h3 id={ "group-" (group.id()) } { (group.title()) }
                div.cards {
                    @for card in cards.iter().filter(|c| c.group == group) {
                        (card_markup(card))
                    }
                }
            }
        }
    }
}

impl ConsoleApi {
    /// Every measure's card: one catalogue read, then each measure's last 37 days of day
    /// rollups (read concurrently).
    pub(crate) async fn summary_cards(
        &self,
        user: &str,
        catalogue: &[CatalogueEntry],
    ) -> Result<Vec<Card>, ApiError> {
        let reads = catalogue.iter().map(|entry| async move {
            let to = day_of(&entry.summary.last.time);
            let from = day_number(to)
                .and_then(|last| date_of(last - RECENT_DAYS - BASELINE_DAYS + 1))
                .map(|from| from.format("%Y-%m-%d").to_string());
            let days = match from {
                Some(from) => {
                    self.data
                        .rollups(user, &entry.key, Period::Day, &from, to)
                        .await?
                }
                None => Vec::new(),
            };
            Ok::<_, ApiError>(card(entry, &days))
        });
        let cards = futures_util::future::try_join_all(reads).await?;
        Ok(cards.into_iter().flatten().collect())
    }
}
