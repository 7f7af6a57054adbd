//! The ambulatory profile: a window's days overlaid by local hour of day, each
//! hour's 5th, 25th, 50th, 75th and 95th percentile by nearest rank (for CGM glucose, the
//! ambulatory glucose profile, AGP). `aggregate: profile` answers it and the console draws
//! it; both call [`hours`], so they give the same numbers.
//!
//! Owns the window rule (at most [`MAX_DAYS`] days, by default the last [`DEFAULT_DAYS`]
//! days with data) and the percentile arithmetic, on readings the caller read. Never reads
//! the store, never logs a reading.

use std::collections::BTreeMap;

use chrono::NaiveDate;

use crate::store::{HourValue, Period};

/// The longest window a profile overlays (the consensus's AGP spans 14 to 90 days).
pub(crate) const MAX_DAYS: i64 = 90;
/// A profile's window when none is given: the last 14 days with data.
pub(crate) const DEFAULT_DAYS: i64 = 14;

/// One local hour of a profile: its percentiles by nearest rank and how many readings
/// fell in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct HourProfile {
    /// The hour of day, 0 to 23.
    pub hour: u8,
    pub p5: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub p95: f64,
    pub readings: usize,
}

/// The window a profile covers: `from` and `to` as asked, else the [`DEFAULT_DAYS`] days
/// up to `to` (by default the day of the series' last reading, `last_time`). Refused
/// beyond [`MAX_DAYS`] days or without a dated last reading.
pub(crate) fn window(
    last_time: &str,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
) -> Result<(NaiveDate, NaiveDate), String> {
    let last = NaiveDate::parse_from_str(Period::Day.of(last_time), "%Y-%m-%d")
        .map_err(|_| "this series has no dated readings".to_string())?;
    let to = to.unwrap_or(last);
    let span = chrono::Duration::try_days(DEFAULT_DAYS - 1).unwrap_or_default();
    let from = from.unwrap_or_else(|| to.checked_sub_signed(span).unwrap_or(to));
    if (to - from).num_days() >= MAX_DAYS {
        return Err(format!(
            "aggregate profile covers at most {MAX_DAYS} days: narrow start_time and end_time"
        ));
    }
    Ok((from, to))
}

/// The `p`-th percentile (0..=100) of sorted, non-empty values, by nearest rank: the value
/// of rank ⌈p/100 × n⌉ (at least 1).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, sorted.len().max(1)) - 1)
        .copied()
        .unwrap_or(f64::NAN)
}

/// The profile of `values` (from [`HealthStore::hourly_values`](crate::store::HealthStore::hourly_values)): one [`HourProfile`] per local hour that has a finite number,
/// in hour order (an hour without readings is left out).
pub(crate) fn hours(values: &[HourValue]) -> Vec<HourProfile> {
    let mut by_hour: BTreeMap<u8, Vec<f64>> = BTreeMap::new();
    for v in values {
        if v.value.is_finite() && v.hour < 24 {
            by_hour.entry(v.hour).or_default().push(v.value);
        }
    }
    by_hour
        .into_iter()
        .map(|(hour, mut values)| {
            values.sort_by(f64::total_cmp);
            HourProfile {
                hour,
                p5: percentile(&values, 5.0),
                p25: percentile(&values, 25.0),
                median: percentile(&values, 50.0),
                p75: percentile(&values, 75.0),
                p95: percentile(&values, 95.0),
                readings: values.len(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Reading, ReadingValue};

    fn glucose(time: &str, value: f64) -> Reading {
        Reading {
            indicator: "Glucose".into(),
            value: ReadingValue::Number(value),
            unit: Some("mg/dL".into()),
            time: time.into(),
            code_system: None,
            code: None,
            source: "cgm".into(),
            offset: None,
            original: None,
        }
    }

    #[test]
    fn nearest_rank_percentiles_per_hour() {
        // Hour 08 over four days: 90, 100, 110, 200. Nearest rank of n = 4: p5 rank
        // ⌈0.2⌉ = 1 → 90; p25 rank 1 → 90; median rank 2 → 100; p75 rank 3 → 110; p95
        // rank ⌈3.8⌉ = 4 → 200. A text value, a non-finite one and a time without an hour
        // count nowhere.
        let mut readings: Vec<Reading> = [200.0, 90.0, 110.0, 100.0]
            .iter()
            .enumerate()
            .map(|(d, v)| glucose(&format!("2026-01-0{}T08:{:02}:00", d + 1, d * 10), *v))
            .collect();
        readings.push(glucose("2026-01-01T23:55:00", 150.0));
        readings.push(glucose("2026-01-02T09:00:00", f64::NAN));
        readings.push(glucose("2026-01-02", 99.0));
        readings.push(Reading {
            value: ReadingValue::Text("high".into()),
            ..glucose("2026-01-02T10:00:00", 0.0)
        });
        let values: Vec<HourValue> = readings.iter().filter_map(HourValue::of).collect();
        let out = hours(&values);
        assert_eq!(
            out,
            vec![
                HourProfile {
                    hour: 8,
                    p5: 90.0,
                    p25: 90.0,
                    median: 100.0,
                    p75: 110.0,
                    p95: 200.0,
                    readings: 4,
                },
                HourProfile {
                    hour: 23,
                    p5: 150.0,
                    p25: 150.0,
                    median: 150.0,
                    p75: 150.0,
                    p95: 150.0,
                    readings: 1,
                },
            ]
        );
        assert!(hours(&[]).is_empty());
        assert!(percentile(&[], 50.0).is_nan(), "never a panic");
    }

    #[test]
    fn the_default_window_is_the_last_14_days_with_data() {
        let day = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap();
        assert_eq!(
            window("2026-03-21T23:55:00", None, None),
            Ok((day("2026-03-08"), day("2026-03-21")))
        );
        assert_eq!(
            window(
                "2026-03-21",
                Some(day("2026-01-01")),
                Some(day("2026-03-31"))
            ),
            Ok((day("2026-01-01"), day("2026-03-31"))),
            "90 days, both counted"
        );
        assert!(
            window(
                "2026-03-21",
                Some(day("2026-01-01")),
                Some(day("2026-04-01"))
            )
            .is_err()
        );
        assert!(window("junk", None, None).is_err());
    }
}
