//! A generated demo account: a year of lab results and a few hundred genotypes,
//! deterministic (seeded), no real person's data. Used by `mirobody-local seed-demo`
//! and by tests that need realistic volumes.

use crate::domain::{Genotype, Reading, ReadingValue};

/// A small deterministic generator (xorshift64*): reproducible demo data without a dependency.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// (name, LOINC, unit, baseline, spread, yearly drift, decimals)
const LABS: &[(&str, &str, &str, f64, f64, f64, i32)] = &[
    ("Hemoglobin A1c", "4548-4", "%", 5.9, 0.2, -0.4, 1),
    ("Glucose", "2345-7", "mg/dL", 104.0, 8.0, -6.0, 0),
    ("LDL Cholesterol", "13457-7", "mg/dL", 132.0, 10.0, -25.0, 0),
    ("HDL Cholesterol", "2085-9", "mg/dL", 48.0, 4.0, 3.0, 0),
    ("Triglycerides", "2571-8", "mg/dL", 160.0, 25.0, -30.0, 0),
    ("Creatinine", "2160-0", "mg/dL", 0.95, 0.08, 0.0, 2),
    ("ALT", "1742-6", "U/L", 34.0, 6.0, -5.0, 0),
    ("TSH", "3016-3", "mIU/L", 2.1, 0.4, 0.0, 2),
    ("Vitamin D (25-OH)", "1989-3", "ng/mL", 22.0, 3.0, 12.0, 0),
    ("Hemoglobin", "718-7", "g/dL", 14.6, 0.5, 0.0, 1),
];

fn rounded(value: f64, decimals: i32) -> f64 {
    let factor = 10f64.powi(decimals);
    (value * factor).round() / factor
}

/// Monthly lab panels for the year starting `first_day` (YYYY-MM-DD), plus daily
/// resting heart rate: about 485 readings.
pub(crate) fn readings(first_day: chrono::NaiveDate) -> Vec<Reading> {
    let mut dice = Dice(0x6d69_726f_626f_6479);
    let mut out = Vec::new();
    for month in 0..12u32 {
        let day =
            first_day + chrono::Duration::days(i64::from(month) * 30 + (dice.next() % 5) as i64);
        let progress = f64::from(month) / 11.0;
        for (name, loinc, unit, base, spread, drift, decimals) in LABS {
            let value = base + drift * progress + spread * dice.unit();
            out.push(Reading {
                indicator: name.to_string(),
                value: ReadingValue::Number(rounded(value, *decimals)),
                unit: Some(unit.to_string()),
                time: format!("{}T08:{:02}:00", day.format("%Y-%m-%d"), dice.next() % 50),
                code_system: Some("LOINC".into()),
                code: Some(loinc.to_string()),
                source: "Demo Lab".into(),
                offset: None,
                original: None,
            });
        }
    }
    for day in 0..365 {
        let date = first_day + chrono::Duration::days(day);
        out.push(Reading {
            indicator: "Resting heart rate".into(),
            value: ReadingValue::Number((62.0 + 4.0 * dice.unit()).round()),
            unit: Some("/min".into()),
            time: format!("{}T07:00:00", date.format("%Y-%m-%d")),
            code_system: Some("LOINC".into()),
            code: Some("8867-4".into()),
            source: "Demo Watch".into(),
            offset: None,
            original: None,
        });
    }
    out
}

/// A few hundred genotypes: well-known variants first, then filler around them.
pub(crate) fn genotypes() -> Vec<Genotype> {
    let known: &[(&str, &str, u64, &str)] = &[
        ("rs429358", "19", 44_908_684, "TC"),
        ("rs7412", "19", 44_908_822, "CC"),
        ("rs1801133", "1", 11_796_321, "AG"),
        ("rs4988235", "2", 135_851_076, "AG"),
        ("rs762551", "15", 74_749_576, "AA"),
        ("rs1815739", "11", 66_560_624, "CT"),
        ("rs9939609", "16", 53_786_615, "AT"),
        ("rs53576", "3", 8_762_685, "AG"),
    ];
    let mut dice = Dice(0x6765_6e6f_7479_7065);
    let bases = ['A', 'C', 'G', 'T'];
    let mut out: Vec<Genotype> = known
        .iter()
        .map(|(r, c, p, g)| Genotype {
            rsid: r.to_string(),
            chromosome: c.to_string(),
            position: *p,
            genotype: g.to_string(),
        })
        .collect();
    let mut next_id = 100_000u64;
    for (_, chromosome, position, _) in known {
        for _ in 0..40 {
            next_id += 1 + dice.next() % 997;
            let offset = (dice.next() % 1_800_000) as i64 - 900_000;
            let a = bases[(dice.next() % 4) as usize];
            let b = if dice.next().is_multiple_of(3) {
                bases[(dice.next() % 4) as usize]
            } else {
                a
            };
            out.push(Genotype {
                rsid: format!("rs{next_id}"),
                chromosome: chromosome.to_string(),
                position: (*position as i64 + offset).max(1) as u64,
                genotype: format!("{a}{b}"),
            });
        }
    }
    out
}
