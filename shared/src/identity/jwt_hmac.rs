//! The JWT library's cryptography, HS256 only: an HMAC-SHA256 signer and verifier (the
//! `hmac` and `sha2` crates) installed as `jsonwebtoken`'s process provider.
//!
//! Owns nothing but the MAC: header, claims and their validation stay `jsonwebtoken`'s
//! (`jwt.rs` pins the algorithm). Every other algorithm, and every key utility (JWK
//! thumbprints, RSA or EC components), is refused: the product signs and accepts HS256
//! alone, so no RSA or elliptic-curve code is linked for tokens it would refuse anyway.

use std::sync::Once;

use hmac::{Hmac, KeyInit, Mac};
use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| Err(ErrorKind::InvalidAlgorithm.into()),
        rsa_pub_components_from_public_key: |_| Err(ErrorKind::InvalidAlgorithm.into()),
        ec_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidAlgorithm.into()),
        ed_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidAlgorithm.into()),
        compute_digest: |_, _| Err(ErrorKind::InvalidAlgorithm.into()),
    },
};

/// Makes HS256 the JWT library's provider for this process (once; later calls do nothing).
pub(super) fn install() {
    static INSTALLED: Once = Once::new();
    // Another provider installed first would answer instead: none is, as this module is
    // the crate's only user of `jsonwebtoken` and no backend feature is enabled.
    INSTALLED.call_once(|| {
        let _ = PROVIDER.install_default();
    });
}

fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    if *algorithm != Algorithm::HS256 || key.family() != AlgorithmFamily::Hmac {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let mac =
        HmacSha256::new_from_slice(key.as_bytes()).map_err(|_| ErrorKind::InvalidKeyFormat)?;
    Ok(Box::new(Hs256(mac)))
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    if *algorithm != Algorithm::HS256 || key.family() != AlgorithmFamily::Hmac {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let mac = HmacSha256::new_from_slice(key.try_get_as_bytes()?)
        .map_err(|_| ErrorKind::InvalidKeyFormat)?;
    Ok(Box::new(Hs256(mac)))
}

/// HMAC-SHA256 keyed once; each token clones the keyed state.
struct Hs256(HmacSha256);

impl Signer<Vec<u8>> for Hs256 {
    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, signature::Error> {
        let mut mac = self.0.clone();
        mac.update(message);
        Ok(mac.finalize().into_bytes().to_vec())
    }
}

impl JwtSigner for Hs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

impl Verifier<Vec<u8>> for Hs256 {
    /// In constant time (`verify_slice`).
    fn verify(&self, message: &[u8], tag: &Vec<u8>) -> Result<(), signature::Error> {
        let mut mac = self.0.clone();
        mac.update(message);
        mac.verify_slice(tag).map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Hs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 (key "Jefe"): the provider's MAC is HMAC-SHA256 itself.
    #[test]
    fn signs_as_rfc_4231_says() {
        install();
        let key = EncodingKey::from_secret(b"Jefe").unwrap();
        let tag = signer(&Algorithm::HS256, &key)
            .unwrap()
            .try_sign(b"what do ya want for nothing?")
            .unwrap();
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn refuses_every_other_algorithm_and_a_wrong_tag() {
        let key = DecodingKey::from_secret(b"k").unwrap();
        for algorithm in [
            Algorithm::HS384,
            Algorithm::HS512,
            Algorithm::RS256,
            Algorithm::ES256,
        ] {
            assert!(verifier(&algorithm, &key).is_err(), "{algorithm:?}");
        }
        let verify = verifier(&Algorithm::HS256, &key).unwrap();
        let tag = signer(&Algorithm::HS256, &EncodingKey::from_secret(b"k").unwrap())
            .unwrap()
            .try_sign(b"m")
            .unwrap();
        assert!(verify.verify(b"m", &tag).is_ok());
        assert!(verify.verify(b"n", &tag).is_err());
        assert!(verify.verify(b"m", &tag[..31].to_vec()).is_err());
    }
}
