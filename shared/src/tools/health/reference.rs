//! Typical adult reference ranges of the synonym table's indicators, per unit, so the
//! console can shade the usual range behind a chart. Only where a range is common and
//! the unit is known: a reading in another unit (or a mixed one) gets no band.
//!
//! Owns only numbers and unit spellings; which indicator a name is comes from `matching`
//! (a LOINC code on the readings wins over the name).

use super::matching::known_code;
use crate::domain::measures;

/// One range: the LOINC code, the unit spellings it holds for (compared normalised,
/// see [`unit_key`]), and the low and high end.
struct Range {
    loinc: &'static str,
    units: &'static [&'static str],
    low: f64,
    high: f64,
}

const MG_DL: &[&str] = &["mg/dl"];
const MMOL_L: &[&str] = &["mmol/l", "meq/l"];
const U_L: &[&str] = &["u/l", "iu/l"];
const PER_MIN: &[&str] = &["/min", "bpm", "count/min", "beats/min", "{beats}/min"];
const COUNT_PER_UL: &[&str] = &["10*3/ul", "10^3/ul", "10^9/l", "x10^9/l", "k/ul", "10*9/l"];

#[rustfmt::skip]
const RANGES: &[Range] = &[
    Range { loinc: "4548-4", units: &["%"], low: 4.0, high: 5.6 },
    Range { loinc: "2345-7", units: MG_DL, low: 70.0, high: 99.0 },
    Range { loinc: "2345-7", units: MMOL_L, low: 3.9, high: 5.5 },
    Range { loinc: "2093-3", units: MG_DL, low: 125.0, high: 200.0 },
    Range { loinc: "2093-3", units: MMOL_L, low: 3.2, high: 5.2 },
    Range { loinc: "13457-7", units: MG_DL, low: 0.0, high: 100.0 },
    Range { loinc: "13457-7", units: MMOL_L, low: 0.0, high: 2.6 },
    Range { loinc: "2085-9", units: MG_DL, low: 40.0, high: 100.0 },
    Range { loinc: "2085-9", units: MMOL_L, low: 1.0, high: 2.6 },
    Range { loinc: "2571-8", units: MG_DL, low: 0.0, high: 150.0 },
    Range { loinc: "2571-8", units: MMOL_L, low: 0.0, high: 1.7 },
    Range { loinc: "2160-0", units: MG_DL, low: 0.6, high: 1.3 },
    Range { loinc: "2160-0", units: &["umol/l"], low: 53.0, high: 115.0 },
    Range { loinc: "3094-0", units: MG_DL, low: 7.0, high: 20.0 },
    Range { loinc: "3084-1", units: MG_DL, low: 3.5, high: 7.2 },
    Range { loinc: "1742-6", units: U_L, low: 7.0, high: 56.0 },
    Range { loinc: "1920-8", units: U_L, low: 10.0, high: 40.0 },
    Range { loinc: "6768-6", units: U_L, low: 44.0, high: 147.0 },
    Range { loinc: "1975-2", units: MG_DL, low: 0.1, high: 1.2 },
    Range { loinc: "1751-7", units: &["g/dl"], low: 3.5, high: 5.0 },
    Range { loinc: "718-7", units: &["g/dl"], low: 12.0, high: 17.5 },
    Range { loinc: "6690-2", units: COUNT_PER_UL, low: 4.5, high: 11.0 },
    Range { loinc: "777-3", units: COUNT_PER_UL, low: 150.0, high: 450.0 },
    Range { loinc: "4544-3", units: &["%"], low: 36.0, high: 50.0 },
    Range { loinc: "3016-3", units: &["miu/l", "uiu/ml"], low: 0.4, high: 4.0 },
    Range { loinc: "1989-3", units: &["ng/ml"], low: 30.0, high: 100.0 },
    Range { loinc: "1989-3", units: &["nmol/l"], low: 75.0, high: 250.0 },
    Range { loinc: "1988-5", units: &["mg/l"], low: 0.0, high: 3.0 },
    Range { loinc: "2951-2", units: MMOL_L, low: 135.0, high: 145.0 },
    Range { loinc: "2823-3", units: MMOL_L, low: 3.5, high: 5.0 },
    Range { loinc: "8480-6", units: &["mmhg", "mm[hg]"], low: 90.0, high: 120.0 },
    Range { loinc: "8462-4", units: &["mmhg", "mm[hg]"], low: 60.0, high: 80.0 },
    Range { loinc: "8867-4", units: PER_MIN, low: 60.0, high: 100.0 },
    Range { loinc: "40443-4", units: PER_MIN, low: 60.0, high: 100.0 },
    Range { loinc: "39156-5", units: &["kg/m2", "kg/m^2", "kg/m²"], low: 18.5, high: 25.0 },
    Range { loinc: "59408-5", units: &["%"], low: 95.0, high: 100.0 },
    Range { loinc: "9279-1", units: PER_MIN, low: 12.0, high: 20.0 },
];

/// A unit compared without case, spaces or the micro sign's spelling.
fn unit_key(unit: &str) -> String {
    unit.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .map(|c| if c == 'µ' || c == 'μ' { 'u' } else { c })
        .collect()
}

/// The LOINC code of a name: one of the synonym table's names, or a group's display name.
fn code_of(name: &str) -> Option<&'static str> {
    known_code(name).or_else(|| measures::catalogue().by_name(name)?.code())
}

/// The typical reference range (low, high) of the indicator named `name` (or with LOINC
/// `code`) in `unit`, when the synonym table knows one.
pub(crate) fn reference_range(
    name: &str,
    code: Option<&str>,
    unit: Option<&str>,
) -> Option<(f64, f64)> {
    let unit = unit_key(unit?);
    let by_code = code.filter(|c| RANGES.iter().any(|r| r.loinc == *c));
    let loinc = by_code.or_else(|| code_of(name))?;
    RANGES
        .iter()
        .find(|r| r.loinc == loinc && r.units.contains(&unit.as_str()))
        .map(|r| (r.low, r.high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_indicators_in_their_units_have_a_range() {
        assert_eq!(reference_range("HbA1c", None, Some("%")), Some((4.0, 5.6)));
        assert_eq!(
            reference_range("Blood sugar", None, Some("mg/dL")),
            Some((70.0, 99.0))
        );
        assert_eq!(
            reference_range("Glucose", None, Some("mmol/L")),
            Some((3.9, 5.5))
        );
        assert_eq!(
            reference_range("whatever", Some("2160-0"), Some("µmol/L")),
            Some((53.0, 115.0))
        );
        assert_eq!(
            reference_range("Vitamin D (25-OH)", None, Some("ng/mL")),
            Some((30.0, 100.0))
        );
        assert_eq!(
            reference_range("Heart rate", None, Some("count/min")),
            Some((60.0, 100.0))
        );
    }

    #[test]
    fn unknown_names_units_or_no_unit_have_none() {
        assert_eq!(reference_range("Steps", None, Some("count")), None);
        assert_eq!(reference_range("HbA1c", None, Some("mmol/mol")), None);
        assert_eq!(reference_range("HbA1c", None, None), None);
        assert_eq!(reference_range("Mystery", None, Some("%")), None);
    }

    #[test]
    fn every_range_is_ordered_and_its_code_is_in_the_synonym_table() {
        for r in RANGES {
            assert!(r.low < r.high, "{}", r.loinc);
            assert!(
                measures::catalogue().by_code(r.loinc).is_some(),
                "{}",
                r.loinc
            );
            for u in r.units {
                assert_eq!(unit_key(u), *u, "units are written normalised");
            }
        }
    }
}
