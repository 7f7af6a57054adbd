//! Keyword matching of a user's indicator names (E1): exact and whole-word matches
//! on indicator keys, plus the measures catalogue's names (any language, abbreviations,
//! LOINC codes: `shared/measures/measures.csv`).
//! The table's keys are computed once per process, a keyword's once per request.

use std::sync::LazyLock;

use crate::domain::Reading;
use crate::domain::measures;

/// A measure of the catalogue with its names as indicator keys.
struct KeyedIndicator {
    loinc: Vec<String>,
    name: String,
    names: Vec<String>,
}

/// The measures catalogue's names as indicator keys, computed once per process.
static KEYED: LazyLock<Vec<KeyedIndicator>> = LazyLock::new(|| {
    measures::catalogue()
        .measures()
        .iter()
        .map(|m| KeyedIndicator {
            loinc: m.loinc.clone(),
            name: m.key.clone(),
            names: m.names.iter().map(|n| Reading::indicator_key(n)).collect(),
        })
        .collect()
});

/// The measures a keyword (a name or a LOINC code) belongs to.
fn groups_of(keyword: &str) -> impl Iterator<Item = &'static KeyedIndicator> {
    let key = Reading::indicator_key(keyword);
    let trimmed = keyword.trim().to_string();
    KEYED
        .iter()
        .filter(move |g| g.loinc.contains(&trimmed) || g.name == key || g.names.contains(&key))
}

fn contains_words(haystack: &str, needle: &str) -> bool {
    format!(" {haystack} ").contains(&format!(" {needle} "))
}

/// A search keyword, prepared once per request: its key and its synonym groups.
pub(super) struct Keyword<'k> {
    trimmed: &'k str,
    key: String,
    groups: Vec<&'static KeyedIndicator>,
}

impl<'k> Keyword<'k> {
    pub(super) fn new(keyword: &'k str) -> Self {
        Keyword {
            trimmed: keyword.trim(),
            key: Reading::indicator_key(keyword),
            groups: groups_of(keyword).collect(),
        }
    }

    /// Does this keyword name the indicator whose indicator key is `have` (with LOINC
    /// `code`, if known)?
    pub(super) fn matches(&self, have: &str, code: Option<&str>) -> bool {
        let wanted = &self.key;
        if wanted.is_empty() {
            return false;
        }
        if wanted == have || code.is_some_and(|c| c.eq_ignore_ascii_case(self.trimmed)) {
            return true;
        }
        // Whole-word containment, only for keywords long enough not to be noise ("k", "hr").
        if wanted.len() >= 3 && contains_words(have, wanted) {
            return true;
        }
        self.groups.iter().any(|group| {
            code.is_some_and(|c| group.loinc.iter().any(|l| l == c))
                || group.names.iter().any(|n| n == have)
                || group.name == have
        })
    }
}

/// The LOINC code the measures catalogue knows for an indicator name.
pub(super) fn known_code(name: &str) -> Option<&'static str> {
    groups_of(name)
        .next()
        .and_then(|g| g.loinc.first())
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(keyword: &str, name: &str, code: Option<&str>) -> bool {
        Keyword::new(keyword).matches(&Reading::indicator_key(name), code)
    }

    #[test]
    fn hba1c_is_found_by_its_other_names() {
        for keyword in [
            "HbA1c",
            "Hemoglobin A1c",
            "glycated haemoglobin",
            "A1C",
            "糖化血红蛋白",
            "4548-4",
        ] {
            assert!(matches(keyword, "HbA1c", None), "{keyword}");
        }
        assert!(matches("glycated hemoglobin", "Glycohemoglobin", None));
        assert!(!matches("glucose", "HbA1c", None));
        assert!(!matches("k", "Ketones", None));
    }

    #[test]
    fn codes_and_words_match() {
        assert!(matches("ldl", "LDL Cholesterol (calc)", None));
        assert!(matches("cholesterol", "Something odd", Some("2093-3")));
        assert_eq!(known_code("Blood sugar"), Some("2345-7"));
    }

    #[test]
    fn apple_health_readings_are_found_by_their_usual_names() {
        for (keyword, name, code) in [
            ("hrv", "Heart rate variability SDNN", "80404-7"),
            ("spo2", "Oxygen saturation", "59408-5"),
            ("blood oxygen", "Oxygen saturation", "59408-5"),
            ("breathing rate", "Respiratory rate", "9279-1"),
            ("step count", "Steps", "55423-8"),
            ("body fat", "Body fat percentage", "41982-0"),
            ("rhr", "Resting heart rate", "40443-4"),
            ("heart rate", "Resting heart rate", "40443-4"),
            ("blood sugar", "Blood glucose", "2339-0"),
            ("glucose", "Blood glucose", "2339-0"),
            ("weight", "Body weight", "29463-7"),
            ("systolic", "Systolic blood pressure", "8480-6"),
        ] {
            assert!(matches(keyword, name, Some(code)), "{keyword} -> {name}");
        }
        assert!(matches("sleep", "Sleep deep", None));
        assert!(!matches("hrv", "Heart rate", Some("8867-4")));
    }
}
