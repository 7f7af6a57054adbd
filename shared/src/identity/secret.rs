//! Bearer secrets for URLs: random, URL-safe, stored only as a SHA-256 hash. Also the
//! one source of random bytes (keys, nonces, salts) and of hex text.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

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

/// Lower-case hex.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The storage key of a secret: hex SHA-256. The secret itself is never stored.
pub(crate) fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
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
}
