//! Bearer secrets for URLs: random, URL-safe, stored only as a SHA-256 hash. Also the
//! one source of random bytes (keys, nonces, salts); hex text is `observe::hex`'s.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::observe::hex;

/// A personal URL secret: 96 random bytes (B1), 128 URL-safe characters.
pub(super) const PERSONAL_SECRET_BYTES: usize = 96;
/// A temporary URL secret: 32 random bytes (B3).
pub(super) const TEMPORARY_SECRET_BYTES: usize = 32;

fn fill(buffer: &mut [u8]) {
    getrandom::fill(buffer).expect("the operating system provides random bytes");
}

/// `N` bytes from the operating system's generator (keys, nonces, salts).
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    fill(&mut bytes);
    bytes
}

pub(crate) fn random_secret(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    fill(&mut buffer);
    URL_SAFE_NO_PAD.encode(buffer)
}

/// The storage key of a secret: hex SHA-256. The secret itself is never stored.
pub(crate) fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Whether a stored hash and a candidate's hash are the same, compared without an
/// early exit, so how long a refusal takes says nothing about how much of a guess was
/// right. An empty hash (nothing stored) never matches.
pub(crate) fn hashes_match(stored: &str, candidate: &str) -> bool {
    let difference = stored
        .bytes()
        .zip(candidate.bytes())
        .fold(0u8, |acc, (a, b)| std::hint::black_box(acc | (a ^ b)));
    !stored.is_empty() && stored.len() == candidate.len() && difference == 0
}

/// The alphabet of user codes (RFC 8628 §6.1): consonants only, no look-alikes.
const USER_CODE_ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";

/// A user code as shown, `XXXX-XXXX`: eight characters from [`USER_CODE_ALPHABET`]
/// (about 34 bits), drawn without modulo bias.
pub(crate) fn user_code() -> String {
    let mut code = String::with_capacity(9);
    while code.len() < 9 {
        let [byte] = random_bytes::<1>();
        // 240 = 12 × 20: bytes at or above it would favour the first letters.
        if byte < 240 {
            if code.len() == 4 {
                code.push('-');
            }
            code.push(USER_CODE_ALPHABET[usize::from(byte % 20)] as char);
        }
    }
    code
}

/// A user code as typed, normalised: case and dashes and spaces do not matter.
pub(crate) fn normalise_user_code(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .flat_map(char::to_uppercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personal_secrets_are_128_url_safe_characters() {
        let secret = random_secret(PERSONAL_SECRET_BYTES);
        assert_eq!(secret.len(), 128);
        assert!(
            secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_ne!(secret, random_secret(PERSONAL_SECRET_BYTES));
        assert_eq!(secret_hash("abc").len(), 64);
    }

    #[test]
    fn user_codes_are_two_groups_of_four_unambiguous_letters() {
        let code = user_code();
        assert_eq!(code.len(), 9);
        assert_eq!(&code[4..5], "-");
        assert!(
            code.bytes()
                .filter(|b| *b != b'-')
                .all(|b| USER_CODE_ALPHABET.contains(&b))
        );
        assert_eq!(normalise_user_code(" bcdf-ghjk "), "BCDFGHJK");
        assert_eq!(normalise_user_code("BCDFghjk"), "BCDFGHJK");
    }

    #[test]
    fn hashes_match_only_when_equal_and_never_when_empty() {
        let stored = secret_hash("a");
        assert!(hashes_match(&stored, &secret_hash("a")));
        assert!(!hashes_match(&stored, &secret_hash("b")));
        assert!(!hashes_match(&stored, ""));
        assert!(!hashes_match("", ""));
    }
}
