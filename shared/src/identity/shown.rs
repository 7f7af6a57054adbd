//! Text a person reads that someone else chose (an OAuth client's or an MCP client's
//! self-given name): the characters that hide or reorder text are taken out before any
//! page shows it, so one name cannot display as another.
//!
//! Owns the one set of such characters, which e-mail addresses refuse too. Does not
//! escape HTML (`maud` does that where the text is shown).

/// Control characters (C0, DEL, C1) and the format characters that reorder or hide text:
/// the bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the marks
/// (U+200E, U+200F, U+061C), zero-width characters, the word joiner and invisible
/// operators, the Mongolian vowel separator, the soft hyphen and the BOM.
pub(crate) fn hidden_or_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// `raw` without hidden or control characters, at most `max_chars` characters;
/// `None` when nothing visible is left.
pub(crate) fn shown_name(raw: &str, max_chars: usize) -> Option<String> {
    let shown: String = raw
        .chars()
        .filter(|c| !hidden_or_control(*c))
        .take(max_chars)
        .collect();
    (!shown.trim().is_empty()).then_some(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_leave_and_the_rest_is_kept() {
        // "Claude" with a right-to-left override, a zero-width space and a BOM.
        let hostile = "Cl\u{202E}au\u{200B}de\u{FEFF}\n";
        assert_eq!(shown_name(hostile, 64).as_deref(), Some("Claude"));
        assert_eq!(
            shown_name("Ärzte-App 🩺", 64).as_deref(),
            Some("Ärzte-App 🩺")
        );
        assert_eq!(shown_name("abcdef", 3).as_deref(), Some("abc"));
        assert_eq!(shown_name("\u{200B}\u{2066} ", 64), None);
    }
}
