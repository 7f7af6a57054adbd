//! Sleep stages stacked per night, as SVG and as a table: for each night with stage data,
//! core, deep, REM and awake in hours, one bar a night (dated by the morning it ends, as
//! every sleep measure is). The minutes are the stage indicators' day rollups' `total`
//! (a night with several sources counts the one that recorded the most, the rule of
//! [`Rollup`]). Pure: rollups or numbers in, markup out.
//!
//! Bounded: at most [`MAX_NIGHTS`] nights are drawn (the latest). Every number is checked
//! before it is drawn: a non-finite or negative total counts as no data, the scale is
//! `chart.rs`'s. Nothing here can panic.

use std::collections::BTreeMap;

use maud::{Markup, html};

use super::chart::{BOTTOM, HEIGHT, LEFT, RIGHT, Scale, TOP, WIDTH, c, format_value};
use crate::api::data::Rollup;
use crate::tools::hours_and_minutes;

/// The nights drawn at most (the latest ones with stage data).
pub(crate) const MAX_NIGHTS: usize = 31;
/// The widest bar, in SVG units.
const MAX_BAR: f64 = 48.0;

/// The stages stacked, bottom to top: (the measure's name, the CSS class, the label).
pub(crate) const STAGES: [(&str, &str, &str); 4] = [
    ("Sleep core", "core", "Core"),
    ("Sleep deep", "deep", "Deep"),
    ("Sleep REM", "rem", "REM"),
    ("Sleep awake", "awake", "Awake"),
];

/// One night's stages in minutes, in [`STAGES`] order (`None`: that stage has no reading
/// that night).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Night {
    pub day: String,
    pub minutes: [Option<f64>; 4],
}

impl Night {
    fn hours(&self, stage: usize) -> f64 {
        self.minutes.get(stage).copied().flatten().unwrap_or(0.0) / 60.0
    }

    fn total_hours(&self) -> f64 {
        (0..STAGES.len()).map(|s| self.hours(s)).sum()
    }
}

/// The nights with stage data from each stage's day rollups (in [`STAGES`] order), in
/// night order, the latest [`MAX_NIGHTS`] of them.
pub(crate) fn nights(per_stage: &[Vec<Rollup>; 4]) -> Vec<Night> {
    let mut by_night: BTreeMap<&str, [Option<f64>; 4]> = BTreeMap::new();
    for (stage, rollups) in per_stage.iter().enumerate() {
        for rollup in rollups {
            let Some(total) = rollup.total.filter(|t| t.is_finite() && *t >= 0.0) else {
                continue;
            };
            by_night.entry(rollup.period.as_str()).or_default()[stage] = Some(total);
        }
    }
    let skip = by_night.len().saturating_sub(MAX_NIGHTS);
    by_night
        .into_iter()
        .skip(skip)
        .map(|(day, minutes)| Night {
            day: day.to_string(),
            minutes,
        })
        .collect()
}

/// Minutes as a cell: `5 h 50 min`, or `–` without a reading.
fn cell(minutes: Option<f64>) -> String {
    minutes.map_or_else(|| "–".to_string(), hours_and_minutes)
}

/// The text a screen reader gets for the chart: how many nights and the last one.
pub(crate) fn describe(nights: &[Night]) -> String {
    let (Some(first), Some(last)) = (nights.first(), nights.last()) else {
        return "Sleep stages per night: no nights with stage data.".to_string();
    };
    let stages: Vec<String> = STAGES
        .iter()
        .zip(&last.minutes)
        .filter_map(|((_, _, label), m)| m.map(|m| format!("{label} {}", hours_and_minutes(m))))
        .collect();
    let count = match nights.len() {
        1 => "1 night".to_string(),
        n => format!("{n} nights"),
    };
    format!(
        "Sleep stages per night, stacked (core, deep, REM, awake): {count} from {} to {}; the \
         last night, ending on the morning of {}: {}.",
        first.day,
        last.day,
        last.day,
        stages.join(", ")
    )
}

/// A night's axis label, the first, middle and last night (every night when few).
fn labelled(index: usize, count: usize) -> bool {
    count <= 7 || index == 0 || index + 1 == count || index == count / 2
}

/// One stage of one night as a drawn rectangle.
struct Bar {
    class: &'static str,
    x: f64,
    top: f64,
    height: f64,
    night: String,
    minutes: f64,
}

/// The rectangles of the bars: each night's stages stacked from the bottom in
/// [`STAGES`] order, `width` wide around the night's slot.
fn bars(nights: &[Night], scale: &Scale, slot: f64, width: f64) -> Vec<Bar> {
    let mut out = Vec::with_capacity(nights.len() * STAGES.len());
    for (i, night) in nights.iter().enumerate() {
        let x = LEFT + slot * (i as f64 + 0.5) - width / 2.0;
        let mut below = 0.0;
        for (stage, (_, class, _)) in STAGES.iter().enumerate() {
            let hours = night.hours(stage);
            if hours <= 0.0 {
                continue;
            }
            let (top, bottom) = (scale.y(below + hours), scale.y(below));
            out.push(Bar {
                class,
                x,
                top,
                height: (bottom - top).max(0.0),
                night: night.day.clone(),
                minutes: hours * 60.0,
            });
            below += hours;
        }
    }
    out
}

/// The chart as an `svg.chart.stages` (`role="img"`, a `<title>` and a `<desc>`): one bar a
/// night, a `rect` per stage (`data-night`, `data-minutes`), stacked bottom to top.
pub(crate) fn draw(nights: &[Night]) -> Markup {
    let high = nights.iter().map(Night::total_hours).fold(1.0, f64::max);
    let scale = Scale::new(0.0, high);
    let slot = (WIDTH - LEFT - RIGHT) / nights.len().max(1) as f64;
    let width = (slot * 0.7).min(MAX_BAR);
    let (plot_bottom, plot_right) = (HEIGHT - BOTTOM, WIDTH - RIGHT);
    let value_ticks: Vec<(f64, String)> = scale
        .ticks()
        .into_iter()
        .filter(|v| *v >= 0.0)
        .map(|v| (scale.y(v), format_value(v)))
        .collect();
    let labels: Vec<(f64, &str)> = nights
        .iter()
        .enumerate()
        .filter(|(i, _)| labelled(*i, nights.len()))
        .map(|(i, n)| (LEFT + slot * (i as f64 + 0.5), n.day.as_str()))
        .collect();
    html! {
        svg.chart.stages role="img" aria-labelledby="stages-title stages-desc"
            viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) xmlns="http://www.w3.org/2000/svg" {
            title id="stages-title" { "Sleep stages per night (h)" }
            desc id="stages-desc" { (describe(nights)) }
            line.axis x1=(c(LEFT)) y1=(c(plot_bottom)) x2=(c(plot_right)) y2=(c(plot_bottom)) {}
            line.axis x1=(c(LEFT)) y1=(c(TOP)) x2=(c(LEFT)) y2=(c(plot_bottom)) {}
            @for (y, label) in &value_ticks {
                text.tick x=(c(LEFT - 6.0)) y=(c(y + 4.0)) text-anchor="end" { (label) " h" }
            }
            @for b in bars(nights, &scale, slot, width) {
                rect class=(b.class) x=(c(b.x)) y=(c(b.top)) width=(c(width)) height=(c(b.height))
                    data-night=(b.night) data-minutes=(b.minutes) {}
            }
            @for (x, day) in &labels {
                text.tick x=(c(*x)) y=(c(HEIGHT - 12.0)) text-anchor="middle" { (day) }
            }
        }
    }
}

/// The legend naming the stages.
fn legend() -> Markup {
    html! {
        ul.legend aria-label="Legend" {
            @for (_, class, label) in STAGES {
                li { span class={ "swatch " (class) } {} (label) }
            }
        }
    }
}

/// The numbers night by night (`table#stages-table`, one `tr[data-night]` a night).
fn table(nights: &[Night]) -> Markup {
    html! {
        div.table-wrap {
            table.compact id="stages-table" aria-labelledby="stages-heading" {
                thead { tr {
                    th scope="col" { "Night (morning)" }
                    @for (_, _, label) in STAGES { th scope="col" { (label) } }
                } }
                tbody {
                    @for night in nights.iter().rev() {
                        tr data-night=(night.day) {
                            th scope="row" { (night.day) }
                            @for ((_, class, _), minutes) in STAGES.iter().zip(&night.minutes) {
                                td class=(class) { (cell(*minutes)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The stages' section of a sleep indicator page; nothing when no night has stage data
/// (a person with only `Sleep asleep` sees the page as before).
pub(crate) fn section(nights: &[Night]) -> Markup {
    if nights.is_empty() {
        return html! {};
    }
    html! {
        section id="stages" aria-labelledby="stages-heading" {
            h2 id="stages-heading" { "Sleep stages per night" }
            figure.chart {
                (draw(nights))
                (legend())
                figcaption.chart-summary { (describe(nights)) }
            }
            (table(nights))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::measures;
    use crate::domain::{Reading, ReadingValue};

    /// The day rollup of one night's reading of `stage` (minutes, timed at the morning).
    fn night(stage: &str, day: &str, minutes: f64) -> Rollup {
        let reading = measures::catalogue()
            .canonical(Reading {
                indicator: stage.into(),
                value: ReadingValue::Number(minutes),
                unit: Some("min".into()),
                time: format!("{day}T07:00:00"),
                code_system: None,
                code: None,
                source: "Watch".into(),
                offset: None,
                original: None,
            })
            .unwrap();
        Rollup::of(day, &[reading]).unwrap()
    }

    /// Two nights: the one ending 2026-03-21 (core 350 = 5 h 50 min, deep 50, REM 50,
    /// awake 10) and the one ending 2026-03-22 (core 270 = 4 h 30 min, deep 60, REM 75,
    /// awake 15); a third night (2026-03-23) has only `Sleep asleep`, so no stage row.
    fn two_nights() -> Vec<Night> {
        let stage = |name: &str, values: [f64; 2]| -> Vec<Rollup> {
            ["2026-03-21", "2026-03-22"]
                .iter()
                .zip(values)
                .map(|(d, v)| night(name, d, v))
                .collect()
        };
        nights(&[
            stage("Sleep core", [350.0, 270.0]),
            stage("Sleep deep", [50.0, 60.0]),
            stage("Sleep REM", [50.0, 75.0]),
            stage("Sleep awake", [10.0, 15.0]),
        ])
    }

    #[test]
    fn nights_gather_each_stage_total_by_the_morning() {
        let got = two_nights();
        assert_eq!(
            got,
            vec![
                Night {
                    day: "2026-03-21".into(),
                    minutes: [Some(350.0), Some(50.0), Some(50.0), Some(10.0)],
                },
                Night {
                    day: "2026-03-22".into(),
                    minutes: [Some(270.0), Some(60.0), Some(75.0), Some(15.0)],
                },
            ]
        );
        // The first night's stages add up to 350 + 50 + 50 + 10 = 460 min = 7.6667 h.
        assert!((got[0].total_hours() - 460.0 / 60.0).abs() < 1e-9);
        // Only the latest MAX_NIGHTS are kept; a night without stages is no night.
        let many: Vec<Rollup> = (1..=40)
            .map(|d| {
                let day = format!("2026-{:02}-{:02}", 1 + d / 29, 1 + d % 29);
                night("Sleep deep", &day, 60.0)
            })
            .collect();
        let kept = nights(&[Vec::new(), many, Vec::new(), Vec::new()]);
        assert_eq!(kept.len(), MAX_NIGHTS);
        // 2026-01-02 to 01-29 and 02-01 to 02-12: skipping the first 9 starts at 01-11.
        assert_eq!(kept[0].day, "2026-01-11", "the 40 nights' latest 31");
        assert!(nights(&[Vec::new(), Vec::new(), Vec::new(), Vec::new()]).is_empty());
    }

    #[test]
    fn the_bars_stack_core_deep_rem_awake_in_hours() {
        let nights = two_nights();
        let out = draw(&nights).into_string();
        // The scale spans 0 to the longest night: the first, 350 + 50 + 50 + 10 = 460 min
        // (the second is 270 + 60 + 75 + 15 = 420 min = 7 h).
        let scale = Scale::new(0.0, 460.0 / 60.0);
        let rect = |class: &str, day: &str| -> (f64, f64) {
            let tag = out
                .split("<rect ")
                .skip(1)
                .find(|t| {
                    t.starts_with(&format!("class=\"{class}\""))
                        && t.contains(&format!("data-night=\"{day}\""))
                })
                .expect("a rect");
            let num = |name: &str| -> f64 {
                let i = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                tag[i..i + tag[i..].find('"').unwrap()].parse().unwrap()
            };
            (num("y"), num("height"))
        };
        // Night 2026-03-22: core 0 to 4.5 h, deep 4.5 to 5.5 h, REM 5.5 to 6.75 h, awake
        // 6.75 to 7 h.
        let (core_top, core_height) = rect("core", "2026-03-22");
        assert!((core_top - scale.y(4.5)).abs() < 0.06);
        assert!((core_top + core_height - scale.y(0.0)).abs() < 0.11);
        let (deep_top, _) = rect("deep", "2026-03-22");
        assert!((deep_top - scale.y(5.5)).abs() < 0.06);
        let (rem_top, _) = rect("rem", "2026-03-22");
        assert!((rem_top - scale.y(6.75)).abs() < 0.06);
        let (awake_top, awake_height) = rect("awake", "2026-03-22");
        assert!((awake_top - scale.y(7.0)).abs() < 0.06);
        assert!((awake_top + awake_height - scale.y(6.75)).abs() < 0.11);
        assert_eq!(out.matches("<rect").count(), 8, "four stages on two nights");
        assert!(out.contains("aria-labelledby=\"stages-title stages-desc\""));
    }

    #[test]
    fn the_table_legend_and_description_carry_the_hours() {
        let nights = two_nights();
        let out = section(&nights).into_string();
        assert!(
            out.contains(
                "<tr data-night=\"2026-03-21\"><th scope=\"row\">2026-03-21</th>\
             <td class=\"core\">5 h 50 min</td><td class=\"deep\">0 h 50 min</td>\
             <td class=\"rem\">0 h 50 min</td><td class=\"awake\">0 h 10 min</td></tr>"
            ),
            "{out}"
        );
        for label in ["Core", "Deep", "REM", "Awake"] {
            assert!(
                out.contains(&format!("{label}</li>")),
                "legend names {label}"
            );
        }
        assert_eq!(
            describe(&nights),
            "Sleep stages per night, stacked (core, deep, REM, awake): 2 nights from 2026-03-21 \
             to 2026-03-22; the last night, ending on the morning of 2026-03-22: Core 4 h 30 min, \
             Deep 1 h 00 min, REM 1 h 15 min, Awake 0 h 15 min."
        );
        assert_eq!(
            section(&[]).into_string(),
            "",
            "no stage data: no empty chart"
        );
    }

    #[test]
    fn odd_totals_count_as_no_data() {
        let mut core = night("Sleep core", "2026-03-21", 300.0);
        core.total = Some(f64::NAN);
        let mut deep = night("Sleep deep", "2026-03-21", 60.0);
        deep.total = Some(-5.0);
        let rem = night("Sleep REM", "2026-03-21", 90.0);
        let got = nights(&[vec![core], vec![deep], vec![rem], Vec::new()]);
        assert_eq!(got[0].minutes, [None, None, Some(90.0), None]);
        let out = draw(&got).into_string();
        assert!(!out.contains("NaN"));
        assert_eq!(out.matches("<rect").count(), 1);
    }
}
