//! The ambulatory glucose profile (AGP) of a CGM's glucose, as SVG and as a table: the
//! window's days overlaid by hour of day, the 5th to 95th and the 25th to 75th percentile
//! as bands, the median as a line, the consensus target range 70 to 180 mg/dL shaded.
//! The numbers are the tool's own (`tools::profile_hours`, the arithmetic behind
//! `aggregate: profile`). Pure: numbers in, markup out.
//!
//! Every number is checked before it is drawn: an hour with a non-finite percentile is
//! left out, the scale is `chart.rs`'s (quarter values, never of zero span) and
//! coordinates are clamped to the plot. Nothing here can panic.

use maud::{Markup, html};

use super::chart::{BOTTOM, HEIGHT, LEFT, RIGHT, Scale, TOP, WIDTH, c, format_value, line_path};
use crate::tools::{HourProfile, format_number};

/// The consensus target range in mg/dL (Battelino et al., Diabetes Care 2019).
const TARGET: (f64, f64) = (70.0, 180.0);

/// What to draw: the hours of the profile and the window they overlay.
pub(crate) struct Profile {
    /// One entry per hour of day with readings, in hour order.
    pub hours: Vec<HourProfile>,
    /// The window's first and last day (`YYYY-MM-DD`).
    pub from: String,
    pub to: String,
    /// The days of the window that have readings.
    pub days: usize,
}

/// The hours that can be drawn: every percentile finite.
fn drawable(hours: &[HourProfile]) -> Vec<HourProfile> {
    hours
        .iter()
        .filter(|h| {
            h.hour < 24
                && [h.p5, h.p25, h.median, h.p75, h.p95]
                    .iter()
                    .all(|v| v.is_finite())
        })
        .copied()
        .collect()
}

/// The x of the middle of an hour (readings of hour 8 span 08:00 to 08:59).
fn x_of(hour: f64) -> f64 {
    let plot = WIDTH - LEFT - RIGHT;
    LEFT + plot * (hour / 24.0).clamp(0.0, 1.0)
}

/// An hour of day as shown: `08:00`.
fn clock(hour: u8) -> String {
    format!("{hour:02}:00")
}

/// A value as the tool answers it (`format_number`), or as a chart label where that cannot
/// be (absurd magnitudes).
fn shown(v: f64) -> String {
    if (v * 10_000.0).is_finite() {
        format_number(v)
    } else {
        format_value(v)
    }
}

/// The `d` of a band between two percentiles: `high` left to right, `low` back.
fn band_path(
    hours: &[HourProfile],
    scale: &Scale,
    low: fn(&HourProfile) -> f64,
    high: fn(&HourProfile) -> f64,
) -> String {
    let x = |h: &HourProfile| x_of(f64::from(h.hour) + 0.5);
    let mut outline: Vec<(f64, f64)> = hours.iter().map(|h| (x(h), scale.y(high(h)))).collect();
    outline.extend(hours.iter().rev().map(|h| (x(h), scale.y(low(h)))));
    format!("{}Z", line_path(&outline))
}

/// The text a screen reader gets for the profile.
pub(crate) fn describe(profile: &Profile) -> String {
    let hours = drawable(&profile.hours);
    let days = match profile.days {
        1 => "1 day".to_string(),
        n => format!("{n} days"),
    };
    let head = format!(
        "Glucose profile from {} to {} ({days} with readings), overlaid by hour of day",
        profile.from, profile.to
    );
    // The earliest hour of a tie (`max_by` answers the last, so it runs backwards).
    let lowest = hours.iter().min_by(|a, b| a.median.total_cmp(&b.median));
    let highest = hours
        .iter()
        .rev()
        .max_by(|a, b| a.median.total_cmp(&b.median));
    let (Some(lowest), Some(highest)) = (lowest, highest) else {
        return format!("{head}: no numeric readings.");
    };
    let p5 = hours.iter().map(|h| h.p5).fold(f64::INFINITY, f64::min);
    let p95 = hours
        .iter()
        .map(|h| h.p95)
        .fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{head}: {} of 24 hours {} readings. The median is lowest at {} ({} mg/dL) and \
         highest at {} ({} mg/dL); the 5th to 95th percentile band spans {} to {} mg/dL. \
         The shaded band is the target range, {} to {} mg/dL.",
        hours.len(),
        if hours.len() == 1 { "has" } else { "have" },
        clock(lowest.hour),
        shown(lowest.median),
        clock(highest.hour),
        shown(highest.median),
        shown(p5),
        shown(p95),
        shown(TARGET.0),
        shown(TARGET.1),
    )
}

/// The profile as an `svg.chart.agp` (`role="img"`, a `<title>` and a `<desc>`).
pub(crate) fn draw(profile: &Profile) -> Markup {
    let hours = drawable(&profile.hours);
    let low = hours.iter().map(|h| h.p5).fold(TARGET.0, f64::min);
    let high = hours.iter().map(|h| h.p95).fold(TARGET.1, f64::max);
    let scale = Scale::new(low, high);
    let (plot_bottom, plot_right) = (HEIGHT - BOTTOM, WIDTH - RIGHT);
    let (target_top, target_bottom) = (scale.y(TARGET.1), scale.y(TARGET.0));
    let median: Vec<(f64, f64)> = hours
        .iter()
        .map(|h| (x_of(f64::from(h.hour) + 0.5), scale.y(h.median)))
        .collect();
    let value_ticks: Vec<(f64, String)> = scale
        .ticks()
        .into_iter()
        .map(|v| (scale.y(v), format_value(v)))
        .collect();
    html! {
        svg.chart.agp role="img" aria-labelledby="agp-title agp-desc"
            viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) xmlns="http://www.w3.org/2000/svg" {
            title id="agp-title" { "Glucose profile by hour of day (mg/dL)" }
            desc id="agp-desc" { (describe(profile)) }
            rect.target x=(c(LEFT)) y=(c(target_top)) width=(c(plot_right - LEFT))
                height=(c((target_bottom - target_top).max(0.0)))
                data-low=(TARGET.0) data-high=(TARGET.1) {}
            @for y in [target_top, target_bottom] {
                line.target-edge x1=(c(LEFT)) y1=(c(y)) x2=(c(plot_right)) y2=(c(y)) {}
            }
            line.axis x1=(c(LEFT)) y1=(c(plot_bottom)) x2=(c(plot_right)) y2=(c(plot_bottom)) {}
            line.axis x1=(c(LEFT)) y1=(c(TOP)) x2=(c(LEFT)) y2=(c(plot_bottom)) {}
            @for (y, label) in &value_ticks {
                text.tick x=(c(LEFT - 6.0)) y=(c(y + 4.0)) text-anchor="end" { (label) }
            }
            @for hour in [0u8, 6, 12, 18, 24] {
                text.tick x=(c(x_of(f64::from(hour)))) y=(c(HEIGHT - 12.0))
                    text-anchor=(match hour { 0 => "start", 24 => "end", _ => "middle" }) {
                    (clock(hour))
                }
            }
            @if hours.is_empty() {
                text.empty x=(c(WIDTH / 2.0)) y=(c(HEIGHT / 2.0)) text-anchor="middle" {
                    "No numeric readings to chart"
                }
            } @else {
                path.outer d=(band_path(&hours, &scale, |h| h.p5, |h| h.p95)) {}
                path.inner d=(band_path(&hours, &scale, |h| h.p25, |h| h.p75)) {}
                path.median d=(line_path(&median)) data-points=(median.len()) {}
                @for (x, y) in &median {
                    circle.median-dot cx=(c(*x)) cy=(c(*y)) r="2.5" {}
                }
            }
        }
    }
}

/// The legend naming the bands (under the picture, readable at phone width).
fn legend() -> Markup {
    html! {
        ul.legend aria-label="Legend" {
            li { span.swatch.median {} "Median" }
            li { span.swatch.inner {} "25th to 75th percentile" }
            li { span.swatch.outer {} "5th to 95th percentile" }
            li { span.swatch.target {} "Target range 70 to 180 mg/dL" }
        }
    }
}

/// The numbers hour by hour (`table#agp-table`, one `tr[data-hour]` per hour with readings).
fn table(profile: &Profile) -> Markup {
    html! {
        div.table-wrap {
            table.compact id="agp-table" aria-labelledby="agp-heading" {
                thead { tr {
                    th scope="col" { "Hour" } th scope="col" { "5th" } th scope="col" { "25th" }
                    th scope="col" { "Median" } th scope="col" { "75th" } th scope="col" { "95th" }
                    th scope="col" { "Readings" }
                } }
                tbody {
                    @for h in &profile.hours {
                        tr data-hour=(format!("{:02}", h.hour)) {
                            th scope="row" { (clock(h.hour)) }
                            td.p5 { (shown(h.p5)) }
                            td.p25 { (shown(h.p25)) }
                            td.median { (shown(h.median)) }
                            td.p75 { (shown(h.p75)) }
                            td.p95 { (shown(h.p95)) }
                            td.n { (h.readings) }
                        }
                    }
                }
            }
        }
    }
}

/// The profile's section of the indicator page: heading, picture, legend, description,
/// and the hour-by-hour table (folded, one click away).
pub(crate) fn section(profile: &Profile) -> Markup {
    html! {
        section id="agp" aria-labelledby="agp-heading" {
            h2 id="agp-heading" { "Daily glucose profile" }
            figure.chart {
                (draw(profile))
                (legend())
                figcaption.chart-summary {
                    (describe(profile))
                    " Each hour's percentiles are by nearest rank over the readings in that hour, "
                    "as query_health_indicators answers them (aggregate profile)."
                }
            }
            details {
                summary { "The profile hour by hour (mg/dL)" }
                (table(profile))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hour(hour: u8, p: [f64; 5], readings: usize) -> HourProfile {
        HourProfile {
            hour,
            p5: p[0],
            p25: p[1],
            median: p[2],
            p75: p[3],
            p95: p[4],
            readings,
        }
    }

    /// The `d` of the first element with this opening, e.g. `<path class="median"`.
    fn attr<'s>(svg: &'s str, element: &str, name: &str) -> &'s str {
        let rest = &svg[svg.find(element).expect(element)..];
        let tag = &rest[..rest.find('>').unwrap()];
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        &tag[at..at + tag[at..].find('"').unwrap()]
    }

    fn points(d: &str) -> Vec<(f64, f64)> {
        d.trim_end_matches('Z')
            .split(['M', 'L'])
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (x, y) = s.split_once(' ').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    fn two_hours() -> Vec<HourProfile> {
        // Hour 03: 40 to 92 mg/dL (a low night); hour 08: 102, 110, 122, 140, 150.
        vec![
            hour(3, [42.0, 50.0, 62.0, 80.0, 90.0], 24),
            hour(8, [102.0, 110.0, 122.0, 140.0, 150.0], 24),
        ]
    }

    fn profile(hours: &[HourProfile]) -> Profile {
        Profile {
            hours: hours.to_vec(),
            from: "2026-03-08".into(),
            to: "2026-03-21".into(),
            days: 2,
        }
    }

    #[test]
    fn the_median_line_sits_at_the_middle_of_each_hour_and_between_the_bands() {
        let hours = two_hours();
        let out = draw(&profile(&hours)).into_string();
        let median = points(attr(&out, "<path class=\"median\"", "d"));
        let plot = WIDTH - LEFT - RIGHT;
        // Hour 3's middle is 3.5 / 24 of the plot, hour 8's 8.5 / 24.
        assert_eq!(median.len(), 2);
        assert!((median[0].0 - (LEFT + plot * 3.5 / 24.0)).abs() < 0.06);
        assert!((median[1].0 - (LEFT + plot * 8.5 / 24.0)).abs() < 0.06);
        // The scale spans 42 (the lowest p5) to 180 (the target's top).
        let scale = Scale::new(42.0, 180.0);
        assert!((median[1].1 - scale.y(122.0)).abs() < 0.06);
        let inner = points(attr(&out, "<path class=\"inner\"", "d"));
        let outer = points(attr(&out, "<path class=\"outer\"", "d"));
        // Outlines: p75 then p25 back (inner), p95 then p5 back (outer); y grows downward.
        assert_eq!((inner.len(), outer.len()), (4, 4));
        assert!((inner[1].1 - scale.y(140.0)).abs() < 0.06);
        assert!((outer[1].1 - scale.y(150.0)).abs() < 0.06);
        assert!(outer[1].1 < inner[1].1 && inner[1].1 < median[1].1);
        // The target band's edges are at 180 and 70 mg/dL.
        let top: f64 = attr(&out, "<rect class=\"target\"", "y").parse().unwrap();
        let height: f64 = attr(&out, "<rect class=\"target\"", "height")
            .parse()
            .unwrap();
        assert!((top - scale.y(180.0)).abs() < 0.06);
        assert!((top + height - scale.y(70.0)).abs() < 0.11);
        assert!(
            out.contains("role=\"img\"") && out.contains("aria-labelledby=\"agp-title agp-desc\"")
        );
        assert!(out.contains(">00:00<") && out.contains(">24:00<"));
    }

    #[test]
    fn the_description_names_the_extremes_of_the_median_and_the_band() {
        let hours = two_hours();
        assert_eq!(
            describe(&profile(&hours)),
            "Glucose profile from 2026-03-08 to 2026-03-21 (2 days with readings), overlaid by \
             hour of day: 2 of 24 hours have readings. The median is lowest at 03:00 (62 mg/dL) \
             and highest at 08:00 (122 mg/dL); the 5th to 95th percentile band spans 42 to 150 \
             mg/dL. The shaded band is the target range, 70 to 180 mg/dL."
        );
        assert!(describe(&profile(&[])).ends_with(": no numeric readings."));
        // Hours 12 and 13 share the highest median: the earlier one is named.
        let tie = [hour(12, [200.0; 5], 1), hour(13, [200.0; 5], 1)];
        assert!(describe(&profile(&tie)).contains("highest at 12:00 (200 mg/dL)"));
    }

    #[test]
    fn the_table_and_legend_carry_the_numbers_without_the_picture() {
        let hours = two_hours();
        let out = section(&profile(&hours)).into_string();
        assert!(
            out.contains(
                "<tr data-hour=\"08\"><th scope=\"row\">08:00</th><td class=\"p5\">102</td>\
             <td class=\"p25\">110</td><td class=\"median\">122</td><td class=\"p75\">140</td>\
             <td class=\"p95\">150</td><td class=\"n\">24</td></tr>"
            ),
            "{out}"
        );
        for name in [
            "Median",
            "25th to 75th percentile",
            "5th to 95th percentile",
            "Target range 70 to 180 mg/dL",
        ] {
            assert!(out.contains(name), "legend names {name}");
        }
    }

    #[test]
    fn odd_numbers_never_break_the_drawing() {
        let hours = [
            hour(1, [f64::NAN, 1.0, 2.0, 3.0, 4.0], 1),
            hour(30, [1.0; 5], 1),
            hour(5, [-f64::MAX, 0.0, 0.0, 0.0, f64::MAX], 2),
        ];
        let out = draw(&profile(&hours)).into_string();
        assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
        assert_eq!(attr(&out, "<path class=\"median\"", "data-points"), "1");
        assert!(describe(&profile(&hours)).contains("1 of 24 hours has readings"));
        let empty = draw(&profile(&[])).into_string();
        assert!(empty.contains("No numeric readings to chart"));
        assert!(!empty.contains("class=\"median\""));
    }
}
