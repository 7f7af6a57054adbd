//! Sealing secrets at rest (AES-256-GCM with a random 96-bit nonce). The associated
//! data binds each sealed value to its purpose and owner (for example
//! `personal-url:<user>`), so a sealed value copied to another record does not open.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use super::secret::random_bytes;

pub(crate) struct Sealer {
    key: LessSafeKey,
}

impl Sealer {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        Sealer {
            key: LessSafeKey::new(
                UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte AES-256 key"),
            ),
        }
    }

    /// `nonce || ciphertext || tag`, base64url.
    pub(crate) fn seal(&self, plaintext: &[u8], associated: &str) -> String {
        let nonce: [u8; NONCE_LEN] = random_bytes();
        let mut data = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(associated.as_bytes()),
                &mut data,
            )
            .expect("AES-GCM sealing of a small value cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The plaintext, if `sealed` was sealed with this key and the same associated data.
    pub(crate) fn open(&self, sealed: &str, associated: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < NONCE_LEN + 16 {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut data = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(associated.as_bytes()), &mut data)
            .ok()?;
        Some(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_binding() {
        let sealer = Sealer::new(&[1; 32]);
        let sealed = sealer.seal(b"secret", "personal-url:alice");
        assert_eq!(
            sealer.open(&sealed, "personal-url:alice").as_deref(),
            Some(&b"secret"[..])
        );
        assert_eq!(sealer.open(&sealed, "personal-url:mallory"), None);
        assert_eq!(
            Sealer::new(&[2; 32]).open(&sealed, "personal-url:alice"),
            None
        );
        assert_ne!(
            sealer.seal(b"secret", "x"),
            sealer.seal(b"secret", "x"),
            "fresh nonce each time"
        );
    }
}
