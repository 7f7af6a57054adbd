//! Health data: readings (lab results, vitals, wearables), genotype calls, and which
//! kinds of them a user holds.
//!
//! Owns what makes two readings or two genotypes the same one (the indicator key, the
//! lower-cased rsid). Knows nothing of how they are parsed, stored or shown.

use serde::{Deserialize, Serialize};

/// One health reading. Its identity is (indicator key, time, source): writing the
/// same reading twice keeps one row (re-uploads never duplicate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The indicator's name as uploaded ("Hemoglobin A1c").
    pub indicator: String,
    /// A number when the value is numeric, else the text as uploaded.
    pub value: ReadingValue,
    pub unit: Option<String>,
    /// Naive local time, `YYYY-MM-DDTHH:MM:SS` (sortable as text).
    pub time: String,
    /// e.g. `LOINC` and `4548-4`.
    pub code_system: Option<String>,
    pub code: Option<String>,
    /// Where it came from (a lab, a device, a file name); part of the identity.
    pub source: String,
    /// The UTC offset `time` was given with (`+08:00`; `Z` is `+00:00`), when it had one.
    /// `time` stays the person's local time, so its date is their local day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// What was sent, when the measures catalogue changed the name, the value or the
    /// unit (a conversion to the canonical unit): nothing uploaded is lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<Original>,
}

/// A reading as it was uploaded, before the catalogue made it canonical.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Original {
    #[serde(rename = "n")]
    pub indicator: String,
    #[serde(rename = "v")]
    pub value: ReadingValue,
    #[serde(rename = "u", default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReadingValue {
    Number(f64),
    Text(String),
}

impl Reading {
    /// The indicator key: the name lower-cased with runs of non-alphanumerics as one
    /// space, so "HbA1c" and "hba1c " are one indicator.
    pub fn indicator_key(name: &str) -> String {
        let mut key = String::with_capacity(name.len());
        Reading::write_indicator_key(name, &mut key);
        key
    }

    /// [`Reading::indicator_key`] appended to `out` (an import works out a key per row,
    /// into one reused buffer).
    pub fn write_indicator_key(name: &str, out: &mut String) {
        if name.is_ascii() {
            let start = out.len();
            for word in name
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|p| !p.is_empty())
            {
                if out.len() > start {
                    out.push(' ');
                }
                out.extend(word.chars().map(|c| c.to_ascii_lowercase()));
            }
            return;
        }
        out.push_str(&Reading::indicator_key_of_any(name));
    }

    /// [`Reading::indicator_key`] by the general rule (any script).
    fn indicator_key_of_any(name: &str) -> String {
        let lowered = name.to_lowercase();
        lowered
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The calendar window accepted from input: dates outside it are refused by the tools
/// (naming the argument) and by uploads (naming the line), so date arithmetic on input
/// can never overflow and no stored reading lies outside it.
pub(crate) const FIRST_DAY: &str = "1900-01-01";
pub(crate) const LAST_DAY: &str = "2200-12-31";

/// Is `day` inside [`FIRST_DAY`]..=[`LAST_DAY`]?
pub(crate) fn day_accepted(day: chrono::NaiveDate) -> bool {
    (1900..=2200).contains(&chrono::Datelike::year(&day))
}

/// One genotype call from a consumer raw file (23andMe, AncestryDNA).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Genotype {
    /// `rs…` or a vendor id (`i…`), lower-cased.
    pub rsid: String,
    /// `1`-`22`, `X`, `Y`, `MT`.
    pub chromosome: String,
    pub position: u64,
    /// e.g. `AG`, `--` for no call.
    pub genotype: String,
}

impl Genotype {
    /// Rsids as stored and looked up: lower-cased, sorted, without repeats.
    pub(crate) fn normalized_rsids(rsids: &[String]) -> Vec<String> {
        let mut rsids: Vec<String> = rsids.iter().map(|r| r.to_lowercase()).collect();
        rsids.sort();
        rsids.dedup();
        rsids
    }
}

/// What kinds of data a user has (availability gating, A5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataPresence {
    pub health: bool,
    pub genotype: bool,
}

#[cfg(test)]
mod tests {
    use super::Reading;

    #[test]
    fn an_ascii_name_keys_as_the_general_rule_keys_it() {
        for name in [
            "HbA1c",
            " hba1c ",
            "Heart rate",
            "Vitamin D (25-OH)",
            "LDL--cholesterol\t(calc.)",
            "a\u{b}b",
            "___",
            "",
            "C-reactive protein",
        ] {
            assert_eq!(
                Reading::indicator_key(name),
                Reading::indicator_key_of_any(name),
                "{name:?}"
            );
        }
        assert_eq!(
            Reading::indicator_key("Vitamin D (25-OH)"),
            "vitamin d 25 oh"
        );
        assert_eq!(Reading::indicator_key("Blutzucker Ä"), "blutzucker ä");
    }
}
