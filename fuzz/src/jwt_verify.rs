//! The JWT check (`Jwts::verify`). The first byte picks the variant:
//! - even: the rest, as text, is the token;
//! - odd: the rest is the claims part of a token that carries a valid signature (an
//!   HS256 header, the bytes base64url-encoded, signed with the key), so the fuzzer
//!   reaches the claims rules behind the signature check.

use std::sync::OnceLock;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use mirobody::identity::Jwts;
use sha2::Sha256;

const KEY: [u8; 32] = [1; 32];
const ORIGIN: &str = "http://127.0.0.1:8080";

fn jwts() -> &'static Jwts {
    static JWTS: OnceLock<Jwts> = OnceLock::new();
    JWTS.get_or_init(|| Jwts::for_origin(&KEY, ORIGIN).accepting("http://127.0.0.1:8080/mcp"))
}

/// The body of the `jwt_verify` fuzz target: one input.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let _ = jwts().verify(&String::from_utf8_lossy(rest));
        return;
    }
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let signed = format!("{header}.{}", URL_SAFE_NO_PAD.encode(rest));
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&KEY).expect("HMAC takes any key");
    mac.update(signed.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    let _ = jwts().verify(&format!("{signed}.{signature}"));
}
