//! The CGM report a clinic reads, from a glucose series' rollup over a period:
//! the International Consensus on Time in Range (Battelino et al., Diabetes Care
//! 2019;42:1593): time in range 70-180 mg/dL, below 70 and below 54, above 180 and above
//! 250; mean glucose; GMI (%) = 3.31 + 0.02392 × mean mg/dL (Bergenstal 2018); the
//! coefficient of variation; and the share of expected readings present (the consensus
//! asks for 14 days and 70 % for a reliable report).
//!
//! Owns only this arithmetic, on counts the rollups already carry, so a period's report
//! costs what the rollups of the period cost. Never logs a value.

use serde_json::{Value, json};

use crate::store::Rollup;

/// A series is a CGM's when it averages at least this many readings a day (a sensor
/// reading every 15 minutes gives 96; finger-stick meters give a handful).
const CGM_READINGS_PER_DAY: f64 = 72.0;

/// One decimal, as the reports show percentages.
fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 * 1000.0 / whole as f64).round() / 10.0
}

fn one_decimal(n: f64) -> f64 {
    (n * 10.0).round() / 10.0
}

/// Is this a CGM's series: glucose bands counted and, on average, a sensor's readings a day?
pub(crate) fn is_cgm(summary: &Rollup) -> bool {
    let Some(bands) = summary.glucose_bands else {
        return false;
    };
    let readings: u64 = bands.iter().sum();
    readings > 0 && readings as f64 / summary.days.max(1) as f64 >= CGM_READINGS_PER_DAY
}

/// The consensus report of `summary` (glucose in mg/dL, bands counted) over a period of
/// `period_days` calendar days; `None` when the series is not a CGM's.
pub(crate) fn report(summary: &Rollup, period_days: u64) -> Option<Value> {
    let bands = summary.glucose_bands.filter(|_| is_cgm(summary))?;
    let readings: u64 = bands.iter().sum();
    let days = summary.days.max(1);
    let mean = summary.mean()?;
    let sd = summary.standard_deviation().unwrap_or(0.0);
    // A 5-minute sensor gives 288 readings a day, a 15-minute one 96.
    let per_day: u64 = if readings as f64 / days as f64 > 100.0 {
        288
    } else {
        96
    };
    let period_days = period_days.max(days);
    let expected = period_days.saturating_mul(per_day);
    let present = pct(readings.min(expected), expected);
    let mut out = json!({
        "period_days": period_days,
        "days_with_readings": summary.days,
        "readings": readings,
        "expected_per_day": per_day,
        "readings_present_pct": present,
        "time_in_range_70_180_pct": pct(bands[2], readings),
        "time_below_70_pct": pct(bands[0] + bands[1], readings),
        "time_below_54_pct": pct(bands[0], readings),
        "time_above_180_pct": pct(bands[3] + bands[4], readings),
        "time_above_250_pct": pct(bands[4], readings),
        "mean_mg_dl": one_decimal(mean),
        "gmi_pct": one_decimal(3.31 + 0.02392 * mean),
        "cv_pct": one_decimal(100.0 * sd / mean),
        "targets": "time in range > 70 %, below 70 < 4 %, below 54 < 1 %, above 180 < 25 %, \
                    above 250 < 5 %, CV <= 36 % (International Consensus on Time in Range, 2019)",
    });
    if period_days < 14 || present < 70.0 {
        out["note"] = "fewer than 14 days or under 70 % of expected readings: the consensus \
                       does not consider such a report reliable"
            .into();
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Reading, ReadingValue};

    fn day(values: &[f64]) -> Rollup {
        let readings: Vec<Reading> = values
            .iter()
            .enumerate()
            .map(|(i, v)| Reading {
                indicator: "Glucose".into(),
                value: ReadingValue::Number(*v),
                unit: Some("mg/dL".into()),
                time: format!("2026-03-01T{:02}:{:02}:00", i / 12, (i % 12) * 5),
                code_system: None,
                code: None,
                source: "cgm".into(),
                offset: None,
                original: None,
            })
            .collect();
        Rollup::of("2026-03-01", &readings).unwrap()
    }

    #[test]
    fn a_day_of_five_minute_readings_gives_the_consensus_numbers() {
        // 288 readings: 200 at 120, 40 at 200, 20 at 260, 20 at 60, 8 at 50 mg/dL.
        let mut values = vec![120.0; 200];
        values.extend([200.0; 40]);
        values.extend([260.0; 20]);
        values.extend([60.0; 20]);
        values.extend([50.0; 8]);
        let r = report(&day(&values), 1).unwrap();
        // In range 200/288 = 69.44 %; below 70 (28)/288 = 9.72 %; below 54 8/288 = 2.78 %;
        // above 180 (60)/288 = 20.83 %; above 250 20/288 = 6.94 %.
        assert_eq!(r["time_in_range_70_180_pct"], 69.4);
        assert_eq!(r["time_below_70_pct"], 9.7);
        assert_eq!(r["time_below_54_pct"], 2.8);
        assert_eq!(r["time_above_180_pct"], 20.8);
        assert_eq!(r["time_above_250_pct"], 6.9);
        // Mean = (200×120 + 40×200 + 20×260 + 20×60 + 8×50) / 288 = 38800/288 = 134.72.
        assert_eq!(r["mean_mg_dl"], 134.7);
        // GMI = 3.31 + 0.02392 × 134.722 = 6.53 %.
        assert_eq!(r["gmi_pct"], 6.5);
        // SD: E[x²] = (200×14400 + 40×40000 + 20×67600 + 20×3600 + 8×2500)/288
        //           = 5924000/288 = 20569.44; SD = √(20569.44 − 134.722²) = √2419.36 = 49.19;
        // CV = 49.19 / 134.72 = 36.5 % (just above the 36 % target).
        assert_eq!(r["cv_pct"], 36.5);
        assert_eq!(r["readings_present_pct"], 100.0);
        assert!(r["note"].as_str().unwrap().contains("14 days"));
    }

    #[test]
    fn a_meter_a_few_times_a_day_is_not_a_cgm() {
        assert!(report(&day(&[95.0, 140.0, 110.0, 101.0]), 1).is_none());
    }
}
