//! Keyword matching of a user's indicator names (E1): exact and whole-word matches
//! on indicator keys, plus the synonym table (any language, abbreviations, LOINC codes).

use super::synonyms::{LAB_INDICATORS, LabIndicator};
use crate::store::Reading;

/// The synonym groups a keyword (a name or a LOINC code) belongs to.
fn groups_of(keyword: &str) -> Vec<&'static LabIndicator> {
    let key = Reading::indicator_key(keyword);
    LAB_INDICATORS
        .iter()
        .filter(|g| {
            g.loinc == keyword.trim() || g.names.iter().any(|n| Reading::indicator_key(n) == key)
        })
        .collect()
}

fn contains_words(haystack: &str, needle: &str) -> bool {
    format!(" {haystack} ").contains(&format!(" {needle} "))
}

/// Does `keyword` name the indicator called `name` (with LOINC `code`, if known)?
pub fn matches(keyword: &str, name: &str, code: Option<&str>) -> bool {
    let wanted = Reading::indicator_key(keyword);
    let have = Reading::indicator_key(name);
    if wanted.is_empty() {
        return false;
    }
    if wanted == have || code.is_some_and(|c| c.eq_ignore_ascii_case(keyword.trim())) {
        return true;
    }
    // Whole-word containment, only for keywords long enough not to be noise ("k", "hr").
    if wanted.len() >= 3 && contains_words(&have, &wanted) {
        return true;
    }
    groups_of(keyword).iter().any(|group| {
        code.is_some_and(|c| c == group.loinc)
            || group
                .names
                .iter()
                .any(|n| Reading::indicator_key(n) == have)
            || Reading::indicator_key(group.name) == have
    })
}

/// The LOINC code the synonym table knows for an indicator name.
pub fn known_code(name: &str) -> Option<&'static str> {
    groups_of(name).first().map(|g| g.loinc)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
