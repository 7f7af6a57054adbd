//! Charts as SVG, drawn on the server from the rollups: a line of day points for a
//! year or month points beyond, a range band where there is one, the reference range
//! shaded where the synonym table knows one. What a point stands for follows the
//! measure's kind: a day's mean with its extremes, a day's total, or a
//! night's sleep in hours ([`Values`]). Pure: numbers in, markup out.
//!
//! Every number is checked before it is drawn: non-finite values are dropped, equal
//! values get a made-up span (no division by zero), and the scale is computed on
//! quarter values so even `f64::MAX` never overflows; coordinates are clamped to the
//! plot. Nothing here can panic.

use chrono::{Datelike, NaiveDate};
use maud::{Markup, html};

use crate::tools::hours_and_minutes;

/// The drawing's size in SVG units (it scales to the page's width); the profile and the
/// sleep stages (`agp.rs`, `stages.rs`) draw on the same frame.
pub(crate) const WIDTH: f64 = 720.0;
pub(crate) const HEIGHT: f64 = 300.0;
pub(crate) const LEFT: f64 = 64.0;
pub(crate) const RIGHT: f64 = 16.0;
pub(crate) const TOP: f64 = 14.0;
pub(crate) const BOTTOM: f64 = 34.0;
/// Up to this many points each get a dot (a line alone hides a lone reading).
const DOTS_UP_TO: usize = 60;

/// One point of a chart: a day (days since the common era, see [`day_number`]) and the
/// mean, least and greatest value of the readings it stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ChartPoint {
    pub day: i64,
    /// The point stands for a month (its mean), not a day.
    pub month: bool,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

/// What a chart's points stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Values {
    /// A discrete measure: each point is a period's mean, with its least and greatest.
    Means,
    /// A cumulative measure: each point is a day's total (a month point: its mean daily
    /// total).
    DailyTotals,
    /// Sleep: each point is a night's total in hours (a month point: its mean per night).
    Nights,
}

/// What to draw: the points in time order, and the reference range when known.
pub(crate) struct Chart<'a> {
    /// What the chart shows (the SVG's `<title>`): the indicator's name, for totals and
    /// nights with what a point is (`Steps, daily total`).
    pub title: &'a str,
    pub unit: Option<&'a str>,
    pub points: &'a [ChartPoint],
    /// The reference range (low, high), shaded as `rect.band`.
    pub band: Option<(f64, f64)>,
    /// The person's own 30-day baseline, drawn as a dashed `line.baseline`.
    pub baseline: Option<f64>,
    pub values: Values,
}

/// The day number of `YYYY-MM-DD`, or of the 15th for `YYYY-MM` (a month point sits in
/// the middle of its month); `None` for anything else.
pub(crate) fn day_number(period: &str) -> Option<i64> {
    let date = match period.len() {
        10 => NaiveDate::parse_from_str(period, "%Y-%m-%d").ok()?,
        7 => NaiveDate::parse_from_str(&format!("{period}-15"), "%Y-%m-%d").ok()?,
        _ => return None,
    };
    Some(i64::from(date.num_days_from_ce()))
}

/// The date of a day number, `None` outside the calendar.
pub(crate) fn date_of(day: i64) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(i32::try_from(day).ok()?)
}

/// The first day of the month twelve months before `last` (`YYYY-MM-DD`): from it on, a
/// chart has day points, before it month points.
pub(crate) fn day_points_from(last: &str) -> Option<String> {
    let date = NaiveDate::parse_from_str(last.get(..10)?, "%Y-%m-%d").ok()?;
    let from = NaiveDate::from_ymd_opt(date.year() - 1, date.month(), 1)?;
    Some(from.format("%Y-%m-%d").to_string())
}

/// The points that can be drawn: finite values only, `min <= mean <= max` enforced.
fn drawable(points: &[ChartPoint]) -> Vec<ChartPoint> {
    points
        .iter()
        .filter(|p| p.mean.is_finite() && p.min.is_finite() && p.max.is_finite())
        .map(|p| ChartPoint {
            day: p.day,
            month: p.month,
            mean: p.mean,
            min: p.min.min(p.mean),
            max: p.max.max(p.mean),
        })
        .collect()
}

/// A value axis computed on quarter values (so no sum or difference of two finite
/// values can overflow), never of zero span.
pub(crate) struct Scale {
    low: f64,
    span: f64,
}

impl Scale {
    pub(crate) fn new(mut low: f64, mut high: f64) -> Scale {
        (low, high) = (low * 0.25, high * 0.25);
        if !(low.is_finite() && high.is_finite()) || low > high {
            (low, high) = (0.0, 0.25);
        }
        let span = high - low;
        let pad = if span > 0.0 {
            span * 0.05
        } else {
            (low.abs() * 0.1).max(0.25)
        };
        let (low, high) = (low - pad, high + pad);
        Scale {
            low,
            span: high - low,
        }
    }

    /// The fraction of the axis where `value` lies (0 at the bottom), clamped to it.
    fn fraction(&self, value: f64) -> f64 {
        let f = (value * 0.25 - self.low) / self.span;
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The value at `fraction` of the axis (saturated to a finite number).
    fn value_at(&self, fraction: f64) -> f64 {
        let v = (self.low + self.span * fraction) * 4.0;
        if v.is_finite() {
            v
        } else {
            f64::MAX.copysign(v)
        }
    }

    /// Round values to label the axis at (steps of 1, 2 or 5 times a power of ten, 4 to
    /// 8 of them); where those cannot be had (absurd magnitudes), five even steps.
    pub(crate) fn ticks(&self) -> Vec<f64> {
        let (low, high) = (self.value_at(0.0), self.value_at(1.0));
        let even = || (0..5).map(|i| self.value_at(f64::from(i) / 4.0)).collect();
        let span = high - low;
        if !(span.is_finite() && span > 0.0) {
            return even();
        }
        let power = 10f64.powf(span.log10().floor());
        for m in [10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05] {
            let step = m * power;
            let first = (low / step).ceil();
            if !(step.is_finite() && step > 0.0 && first.is_finite()) {
                return even();
            }
            let ticks: Vec<f64> = (0..9)
                .map(|i| (first + f64::from(i)) * step)
                .take_while(|v| *v <= high)
                .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
                .collect();
            if (4..=8).contains(&ticks.len()) {
                return ticks;
            }
        }
        even()
    }

    pub(crate) fn y(&self, value: f64) -> f64 {
        let plot = HEIGHT - TOP - BOTTOM;
        TOP + plot * (1.0 - self.fraction(value))
    }
}

/// The day axis: the first and last day of the points.
struct Days {
    first: i64,
    last: i64,
}

impl Days {
    fn x(&self, day: i64) -> f64 {
        let plot = WIDTH - LEFT - RIGHT;
        if self.last <= self.first {
            return LEFT + plot / 2.0;
        }
        let f = (day as f64 - self.first as f64) / (self.last as f64 - self.first as f64);
        LEFT + plot * f.clamp(0.0, 1.0)
    }
}

/// A value as a label: few digits, an exponent for the huge and the tiny.
pub(crate) fn format_value(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "–".to_string()
    } else if a == 0.0 {
        "0".to_string()
    } else if !(1e-3..1e7).contains(&a) {
        format!("{v:.2e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else {
        trim(format!("{v:.2}"))
    }
}

fn trim(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A coordinate with one decimal.
pub(crate) fn c(v: f64) -> String {
    format!("{v:.1}")
}

/// The `d` of a line through `points`.
pub(crate) fn line_path(points: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(points.len() * 13);
    for (i, (x, y)) in points.iter().enumerate() {
        d.push(if i == 0 { 'M' } else { 'L' });
        d.push_str(&c(*x));
        d.push(' ');
        d.push_str(&c(*y));
    }
    d
}

/// A band that can be drawn: finite ends, low not above high.
fn valid_band(band: Option<(f64, f64)>) -> Option<(f64, f64)> {
    band.filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && lo <= hi)
}

/// A night in hours as a person reads it (`7 h 30 min`), the tool's own wording.
fn night_text(hours: f64) -> String {
    if hours.is_finite() {
        hours_and_minutes(hours * 60.0)
    } else {
        "–".to_string()
    }
}

/// The text a screen reader gets for the chart.
pub(crate) fn describe(chart: &Chart<'_>) -> String {
    let points = drawable(chart.points);
    let unit = chart.unit.map(|u| format!(" {u}")).unwrap_or_default();
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return format!("{}: no numeric readings to chart.", chart.title);
    };
    let low = points.iter().map(|p| p.min).fold(f64::INFINITY, f64::min);
    let high = points
        .iter()
        .map(|p| p.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let date = |d: i64| date_of(d).map(|d| d.to_string()).unwrap_or_default();
    let value = |v: f64| match chart.values {
        Values::Nights => night_text(v),
        _ => format!("{}{unit}", format_value(v)),
    };
    let last_is = match chart.values {
        Values::Means => "the last point's mean is",
        Values::DailyTotals => "the last point's total is",
        Values::Nights => "the last night is",
    };
    let mut text = format!(
        "{}: {} points from {} to {}, values from {} to {}; {last_is} {}.",
        chart.title,
        points.len(),
        date(first.day),
        date(last.day),
        value(low),
        value(high),
        value(last.mean),
    );
    if let Some((lo, hi)) = valid_band(chart.band) {
        text.push_str(&format!(
            " The shaded band is the reference range, {} to {}{unit}.",
            format_value(lo),
            format_value(hi)
        ));
    }
    if let Some(baseline) = valid_baseline(chart.baseline) {
        text.push_str(&format!(
            " The dashed line is your 30-day baseline, {}{unit}.",
            format_value(baseline)
        ));
    }
    text
}

/// A baseline that can be drawn: a finite value.
fn valid_baseline(baseline: Option<f64>) -> Option<f64> {
    baseline.filter(|b| b.is_finite())
}

/// The chart as an `svg.chart` (`role="img"`, a `<title>` and a `<desc>`): the
/// reference band, the min–max range, the line of means, axes with a few labels.
pub(crate) fn draw(chart: &Chart<'_>) -> Markup {
    let points = drawable(chart.points);
    let band = valid_band(chart.band);
    let baseline = valid_baseline(chart.baseline);
    let low = points
        .iter()
        .map(|p| p.min)
        .chain(band.map(|b| b.0))
        .chain(baseline)
        .fold(f64::INFINITY, f64::min);
    let high = points
        .iter()
        .map(|p| p.max)
        .chain(band.map(|b| b.1))
        .chain(baseline)
        .fold(f64::NEG_INFINITY, f64::max);
    let scale = Scale::new(low, high);
    let days = Days {
        first: points.first().map_or(0, |p| p.day),
        last: points.last().map_or(0, |p| p.day),
    };
    let xy = |day: i64, v: f64| (days.x(day), scale.y(v));
    let line: Vec<(f64, f64)> = points.iter().map(|p| xy(p.day, p.mean)).collect();
    let ranged = points.iter().any(|p| p.min < p.max);
    let range = ranged.then(|| {
        let mut outline: Vec<(f64, f64)> = points.iter().map(|p| xy(p.day, p.max)).collect();
        outline.extend(points.iter().rev().map(|p| xy(p.day, p.min)));
        format!("{}Z", line_path(&outline))
    });
    let plot_bottom = HEIGHT - BOTTOM;
    let plot_right = WIDTH - RIGHT;
    let value_ticks: Vec<(f64, String)> = scale
        .ticks()
        .into_iter()
        .map(|v| (scale.y(v), format_value(v)))
        .collect();
    let span = days.last.saturating_sub(days.first);
    // (x, anchor, label, minor): the minor ticks give way at phone width (CSS), where
    // the labels are drawn twice as large.
    let day_ticks: Vec<(f64, &str, String, bool)> = if points.is_empty() {
        Vec::new()
    } else if span == 0 {
        vec![(
            days.x(days.first),
            "middle",
            label_of(days.first, false),
            false,
        )]
    } else {
        let ticks: i128 = if span < 4 { 2 } else { 5 };
        (0..ticks)
            .map(|i| {
                let day = i128::from(days.first) + i128::from(span) * i / (ticks - 1);
                let day = i64::try_from(day).unwrap_or(days.last);
                let anchor = match i {
                    0 => "start",
                    i if i == ticks - 1 => "end",
                    _ => "middle",
                };
                (
                    days.x(day),
                    anchor,
                    label_of(day, span < 90),
                    ticks > 2 && i % 2 == 1,
                )
            })
            .collect()
    };
    html! {
        svg.chart role="img" aria-labelledby="chart-title chart-desc"
            viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) xmlns="http://www.w3.org/2000/svg" {
            title id="chart-title" { (chart.title) @if let Some(unit) = chart.unit { " (" (unit) ")" } }
            desc id="chart-desc" { (describe(chart)) }
            @if let Some((lo, hi)) = band {
                @let (top, bottom) = (scale.y(hi), scale.y(lo));
                rect.band x=(c(LEFT)) y=(c(top)) width=(c(plot_right - LEFT))
                    height=(c((bottom - top).max(0.0))) data-low=(lo) data-high=(hi) {}
            }
            @if let Some(baseline) = baseline {
                line.baseline x1=(c(LEFT)) y1=(c(scale.y(baseline))) x2=(c(plot_right))
                    y2=(c(scale.y(baseline))) data-value=(baseline) {}
            }
            line.axis x1=(c(LEFT)) y1=(c(plot_bottom)) x2=(c(plot_right)) y2=(c(plot_bottom)) {}
            line.axis x1=(c(LEFT)) y1=(c(TOP)) x2=(c(LEFT)) y2=(c(plot_bottom)) {}
            @for (y, label) in &value_ticks {
                text.tick x=(c(LEFT - 6.0)) y=(c(y + 4.0)) text-anchor="end" { (label) }
            }
            @for (x, anchor, label, minor) in &day_ticks {
                text.tick.minor[*minor] x=(c(*x)) y=(c(HEIGHT - 12.0)) text-anchor=(anchor) { (label) }
            }
            @if points.is_empty() {
                text.empty x=(c(WIDTH / 2.0)) y=(c(HEIGHT / 2.0)) text-anchor="middle" {
                    "No numeric readings to chart"
                }
            } @else {
                @if let Some(range) = &range {
                    path.range d=(range) {}
                }
                path.line d=(line_path(&line)) data-points=(line.len()) {}
                // Every point carries its words for the script's read-out on hover and
                // tap; up to DOTS_UP_TO they are drawn as dots, beyond that unseen.
                @let class = if line.len() <= DOTS_UP_TO { "point" } else { "hit" };
                @for (p, (x, y)) in points.iter().zip(&line) {
                    circle class=(class) cx=(c(*x)) cy=(c(*y)) r="3"
                        data-label=(point_label(chart, p)) {}
                }
            }
        }
    }
}

/// A point in words, as the read-out shows it: `2026-03-02: 9,600 steps`,
/// `2026-01-01: mean 95 mg/dL (85 to 105)`, `Night ending 2026-03-02: 7 h 30 min`, a
/// month point named as its month's mean.
pub(crate) fn point_label(chart: &Chart<'_>, point: &ChartPoint) -> String {
    let when = match date_of(point.day) {
        Some(date) if point.month => date.format("%Y-%m").to_string(),
        Some(date) => date.format("%Y-%m-%d").to_string(),
        None => String::new(),
    };
    let unit = chart.unit.map(|u| format!(" {u}")).unwrap_or_default();
    let number = super::data::number_text;
    match (chart.values, point.month) {
        (Values::Means, false) if point.min < point.max => format!(
            "{when}: mean {}{unit} ({} to {})",
            number(point.mean),
            number(point.min),
            number(point.max)
        ),
        (Values::Means, false) => format!("{when}: {}{unit}", number(point.mean)),
        (Values::Means, true) => format!("{when}: month mean {}{unit}", number(point.mean)),
        (Values::DailyTotals, false) => format!("{when}: {}{unit}", number(point.mean)),
        (Values::DailyTotals, true) => {
            format!("{when}: {}{unit} a day on average", number(point.mean))
        }
        (Values::Nights, false) => format!("Night ending {when}: {}", night_text(point.mean)),
        (Values::Nights, true) => format!("{when}: {} a night on average", night_text(point.mean)),
    }
}

/// What the chart's marks stand for, under it: the line, the day's spread, the
/// reference band with its ends.
pub(crate) fn legend(chart: &Chart<'_>) -> Markup {
    let points = drawable(chart.points);
    let ranged = points.iter().any(|p| p.min < p.max);
    let band = valid_band(chart.band);
    let unit = chart.unit.map(|u| format!(" {u}")).unwrap_or_default();
    let line = match chart.values {
        Values::Means => "Mean of the day (or month)",
        Values::DailyTotals => "Total of the day (a month: its mean daily total)",
        Values::Nights => "Sleep of the night (a month: its mean per night)",
    };
    html! {
        @if !points.is_empty() {
            ul.legend aria-label="Legend" {
                li { span.swatch.line-mark aria-hidden="true" {} (line) }
                @if ranged {
                    li { span.swatch.range-mark aria-hidden="true" {} "Lowest to highest reading of the day" }
                }
                @if let Some((lo, hi)) = band {
                    li {
                        span.swatch.band-mark aria-hidden="true" {}
                        "Typical adult range, " (format_value(lo)) " to " (format_value(hi)) (unit)
                    }
                }
                @if let Some(baseline) = valid_baseline(chart.baseline) {
                    li.baseline-legend {
                        span.swatch.baseline-mark aria-hidden="true" {}
                        "Your 30-day baseline, " (super::data::number_text(baseline)) (unit)
                        " (the mean of the 30 days before the last 7)"
                    }
                }
            }
        }
    }
}

/// A day's axis label: `YYYY-MM`, or `YYYY-MM-DD` on a short span.
fn label_of(day: i64, short_span: bool) -> String {
    match date_of(day) {
        Some(date) if short_span => date.format("%Y-%m-%d").to_string(),
        Some(date) => date.format("%Y-%m").to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(day: i64, mean: f64, min: f64, max: f64) -> ChartPoint {
        ChartPoint {
            day,
            month: false,
            mean,
            min,
            max,
        }
    }

    fn svg(points: &[ChartPoint], band: Option<(f64, f64)>) -> String {
        draw(&Chart {
            title: "Glucose",
            unit: Some("mg/dL"),
            points,
            band,
            baseline: None,
            values: Values::Means,
        })
        .into_string()
    }

    /// The `d` of the element with this class, e.g. `path class="line"`.
    fn attr<'s>(svg: &'s str, element: &str, name: &str) -> Option<&'s str> {
        let start = svg.find(element)?;
        let rest = &svg[start..];
        let end = rest.find('>')?;
        let tag = &rest[..end];
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let value = &tag[at..];
        Some(&value[..value.find('"')?])
    }

    fn line_points(svg: &str) -> Vec<(f64, f64)> {
        let d = attr(svg, "<path class=\"line\"", "d").expect("a line");
        d.split(['M', 'L'])
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (x, y) = s.split_once(' ').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    fn number(svg: &str, element: &str, name: &str) -> f64 {
        attr(svg, element, name).unwrap().parse().unwrap()
    }

    #[test]
    fn draws_one_line_point_per_point_in_time_order() {
        let points: Vec<ChartPoint> = (0..365)
            .map(|d| point(738_000 + d, 100.0 + (d % 7) as f64, 90.0, 120.0))
            .collect();
        let out = svg(&points, None);
        let line = line_points(&out);
        assert_eq!(line.len(), 365);
        assert!(line.windows(2).all(|w| w[0].0 < w[1].0), "x grows");
        assert_eq!(line[0].0, LEFT);
        assert_eq!(line[364].0, WIDTH - RIGHT);
        assert!(out.contains("<path class=\"range\""), "min–max band drawn");
        assert!(out.contains("role=\"img\""));
        assert!(out.contains("<title id=\"chart-title\">Glucose (mg/dL)</title>"));
        assert!(
            !out.contains("<circle class=\"point\""),
            "no dots on a dense chart"
        );
        // Each point still carries its words for the read-out, unseen.
        assert_eq!(out.matches("<circle class=\"hit\"").count(), 365);
        assert!(out.contains("data-label=\"2021-07-29: mean 100 mg/dL (90 to 120)\""));
        assert!(out.len() < 60_000, "{} bytes", out.len());
    }

    #[test]
    fn month_points_then_day_points_share_one_time_axis() {
        // Nine years of months, then a year of days: the months take the left part.
        let mut points: Vec<ChartPoint> = Vec::new();
        for year in 2016..2025 {
            for month in 1..=12 {
                let day = day_number(&format!("{year}-{month:02}")).unwrap();
                points.push(point(day, 5.0, 4.0, 6.0));
            }
        }
        let first_day = day_number("2025-01-01").unwrap();
        for d in 0..365 {
            points.push(point(first_day + d, 5.0, 5.0, 5.0));
        }
        let out = svg(&points, None);
        let line = line_points(&out);
        assert_eq!(line.len(), 108 + 365);
        let months_end = line[107].0;
        let width = WIDTH - LEFT - RIGHT;
        // 9 of the 10 years are months: about 90 % of the width.
        assert!((months_end - LEFT) / width > 0.85, "{months_end}");
        assert!(line.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!(day_number("2024-02"), day_number("2024-02-15"));
        assert_eq!(
            day_points_from("2026-11-15T08:00:00").unwrap(),
            "2025-11-01"
        );
        assert_eq!(day_points_from("2024-02-29").unwrap(), "2023-02-01");
        assert_eq!(day_points_from("junk"), None);
    }

    #[test]
    fn the_reference_band_sits_where_its_values_are() {
        // Values 60..=140 and a band 70..=99: the band's edges are at those values.
        let points = [point(1, 60.0, 60.0, 60.0), point(2, 140.0, 140.0, 140.0)];
        let out = svg(&points, Some((70.0, 99.0)));
        let top = number(&out, "<rect class=\"band\"", "y");
        let height = number(&out, "<rect class=\"band\"", "height");
        let scale = Scale::new(60.0, 140.0);
        assert!((top - scale.y(99.0)).abs() < 0.06, "{top}");
        assert!((top + height - scale.y(70.0)).abs() < 0.11, "{height}");
        let line = line_points(&out);
        // The band lies between the line's lowest and highest point.
        assert!(line[1].1 < top && top + height < line[0].1);
        assert_eq!(
            number(&out, "<rect class=\"band\"", "width"),
            WIDTH - LEFT - RIGHT
        );
        assert!(out.contains("reference range, 70 to 99 mg/dL"));
    }

    #[test]
    fn a_band_outside_the_values_widens_the_axis() {
        let points = [point(1, 5.0, 5.0, 5.0), point(2, 6.0, 6.0, 6.0)];
        let out = svg(&points, Some((4.0, 5.6)));
        let top = number(&out, "<rect class=\"band\"", "y");
        let bottom = top + number(&out, "<rect class=\"band\"", "height");
        assert!(bottom <= HEIGHT - BOTTOM && top >= TOP);
        // An absurd band (low above high) is not drawn.
        assert!(!svg(&points, Some((9.0, 1.0))).contains("band"));
        assert!(!svg(&points, Some((f64::NAN, 1.0))).contains("class=\"band\""));
    }

    #[test]
    fn one_point_is_a_dot_in_the_middle() {
        let out = svg(&[point(738_000, 42.0, 42.0, 42.0)], None);
        let line = line_points(&out);
        assert_eq!(line.len(), 1);
        assert_eq!(line[0].0, LEFT + (WIDTH - LEFT - RIGHT) / 2.0);
        assert!(out.contains("<circle class=\"point\""));
        assert!(!out.contains("class=\"range\""));
        assert!(out.contains("1 points"));
    }

    #[test]
    fn no_points_draw_an_empty_chart_that_says_so() {
        let out = svg(&[], None);
        assert!(out.contains("svg class=\"chart\""));
        assert!(!out.contains("class=\"line\""));
        assert!(out.contains("No numeric readings to chart"));
        let out = svg(&[point(1, f64::NAN, 1.0, 2.0)], Some((1.0, 2.0)));
        assert!(
            !out.contains("class=\"line\""),
            "non-finite points are dropped"
        );
    }

    #[test]
    fn equal_values_get_a_span_and_a_flat_line() {
        let points: Vec<ChartPoint> = (0..10).map(|d| point(d, 7.0, 7.0, 7.0)).collect();
        let out = svg(&points, None);
        let line = line_points(&out);
        assert!(line.iter().all(|p| p.1 == line[0].1 && p.1.is_finite()));
        assert!(line[0].1 > TOP && line[0].1 < HEIGHT - BOTTOM);
        assert!(!out.contains("NaN") && !out.contains("inf"));
    }

    #[test]
    fn negative_values_are_drawn_below_positive_ones() {
        let points = [point(1, -40.0, -50.0, -30.0), point(2, 20.0, 10.0, 30.0)];
        let out = svg(&points, None);
        let line = line_points(&out);
        assert!(line[0].1 > line[1].1, "lower values lower on the page");
        assert!(out.contains(">-"), "negative labels: {out}");
    }

    #[test]
    fn huge_values_never_overflow() {
        for (a, b) in [
            (f64::MAX, f64::MAX),
            (-f64::MAX, f64::MAX),
            (f64::MIN_POSITIVE, f64::MAX),
            (1e300, 1e301),
        ] {
            let points = [point(i64::MIN, a, a, a), point(i64::MAX, b, b, b)];
            let out = svg(&points, Some((-f64::MAX, f64::MAX)));
            let line = line_points(&out);
            assert_eq!(line.len(), 2);
            assert!(line.iter().all(|p| p.0.is_finite() && p.1.is_finite()));
            assert!(!out.contains("NaN"), "{out}");
            assert!(line[0].1 >= line[1].1);
        }
    }

    #[test]
    fn value_labels_are_round_numbers() {
        assert_eq!(
            Scale::new(65.0, 165.0).ticks(),
            vec![60.0, 80.0, 100.0, 120.0, 140.0, 160.0]
        );
        let small = Scale::new(5.1, 5.9).ticks();
        assert!(
            small.len() >= 3
                && small
                    .iter()
                    .all(|v| (v * 10.0 - (v * 10.0).round()).abs() < 1e-9),
            "{small:?}"
        );
        let negative = Scale::new(-50.0, 30.0).ticks();
        assert!(
            negative.contains(&0.0) && negative.contains(&-40.0),
            "{negative:?}"
        );
        // Absurd magnitudes fall back to five even steps, all finite.
        let huge = Scale::new(-f64::MAX, f64::MAX).ticks();
        assert_eq!(huge.len(), 5);
        assert!(huge.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn labels_are_short() {
        assert_eq!(format_value(5.6), "5.6");
        assert_eq!(format_value(118.4), "118");
        assert_eq!(format_value(0.95), "0.95");
        assert_eq!(format_value(-12.25), "-12.2");
        assert_eq!(format_value(0.0), "0");
        assert_eq!(format_value(f64::MAX), "1.80e308");
        assert_eq!(format_value(f64::NAN), "–");
        assert_eq!(
            label_of(day_number("2024-03-05").unwrap(), false),
            "2024-03"
        );
        assert_eq!(label_of(i64::MAX, false), "");
    }

    #[test]
    fn the_title_is_escaped() {
        let out = draw(&Chart {
            title: "<script>x</script>",
            unit: None,
            points: &[],
            band: None,
            baseline: None,
            values: Values::Means,
        })
        .into_string();
        assert!(!out.contains("<script>"));
    }

    #[test]
    fn totals_and_nights_are_described_as_such() {
        // Two days of steps: 5,000 then 9,600 (12 hourly readings of 800).
        let days = [
            point(day_number("2026-03-01").unwrap(), 5000.0, 5000.0, 5000.0),
            point(day_number("2026-03-02").unwrap(), 9600.0, 9600.0, 9600.0),
        ];
        let chart = Chart {
            title: "Steps, daily total",
            unit: Some("steps"),
            points: &days,
            band: None,
            baseline: None,
            values: Values::DailyTotals,
        };
        let text = describe(&chart);
        assert_eq!(
            text,
            "Steps, daily total: 2 points from 2026-03-01 to 2026-03-02, values from 5000 steps \
             to 9600 steps; the last point's total is 9600 steps."
        );
        let out = draw(&chart).into_string();
        assert!(out.contains("<title id=\"chart-title\">Steps, daily total (steps)</title>"));
        assert!(
            !out.contains("class=\"range\""),
            "a total has no min–max range"
        );
        // Two nights: 420 min = 7 h 00 min, 450 min = 7.5 h = 7 h 30 min.
        let nights = [
            point(day_number("2026-03-01").unwrap(), 7.0, 7.0, 7.0),
            point(day_number("2026-03-02").unwrap(), 7.5, 7.5, 7.5),
        ];
        let text = describe(&Chart {
            title: "Sleep asleep, per night",
            unit: Some("h"),
            points: &nights,
            band: None,
            baseline: None,
            values: Values::Nights,
        });
        assert!(
            text.ends_with("values from 7 h 00 min to 7 h 30 min; the last night is 7 h 30 min."),
            "{text}"
        );
        assert_eq!(night_text(f64::NAN), "–");
    }
}
