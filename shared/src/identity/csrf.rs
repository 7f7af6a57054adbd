//! CSRF tokens for forms: `{issued}.{base64url HMAC(nonce|binding|issued)}`, bound to a
//! nonce (a double-submit cookie, or a session's key) and to what the form is for, checked
//! for age and with the MAC compared in constant time. The OAuth sign-in forms and the web
//! console both use them; each keeps its own key and lifetime.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

fn csrf_mac(key: &[u8], nonce: &str, binding: &str, issued: u64) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(format!("{nonce}|{binding}|{issued}").as_bytes());
    mac
}

/// A form's CSRF token: `{issued}.{base64url HMAC(nonce|binding|issued)}`.
pub(crate) fn csrf_token(key: &[u8], nonce: &str, binding: &str, issued: u64) -> String {
    let tag = csrf_mac(key, nonce, binding, issued)
        .finalize()
        .into_bytes();
    format!("{issued}.{}", URL_SAFE_NO_PAD.encode(tag))
}

/// Whether `token` is a CSRF token for this nonce and binding at most `max_age_secs` old. The MAC is compared
/// in constant time (`verify_slice`), so how long a refusal takes says nothing about how
/// much of a forged tag was right.
pub(crate) fn csrf_valid(
    key: &[u8],
    nonce: &str,
    binding: &str,
    token: &str,
    now: u64,
    max_age_secs: u64,
) -> bool {
    let Some((issued, tag)) = token
        .split_once('.')
        .and_then(|(issued, tag)| Some((issued.parse::<u64>().ok()?, tag)))
    else {
        return false;
    };
    let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else {
        return false;
    };
    let fresh = now.saturating_sub(issued) <= max_age_secs;
    fresh
        && csrf_mac(key, nonce, binding, issued)
            .verify_slice(&tag)
            .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sign-in form's lifetime (oauth/signin.rs).
    const FORM_SECS: u64 = 600;

    const KEY: &[u8] = b"a form key of thirty-two bytes!!";

    #[test]
    fn csrf_tokens_are_checked_with_the_mac_in_constant_time() {
        let token = csrf_token(KEY, "nonce", "authorize|c|r|x", 1_000);
        assert!(csrf_valid(
            KEY,
            "nonce",
            "authorize|c|r|x",
            &token,
            1_100,
            FORM_SECS
        ));
        // Another nonce, binding or key: refused.
        assert!(!csrf_valid(
            KEY,
            "other",
            "authorize|c|r|x",
            &token,
            1_100,
            FORM_SECS
        ));
        assert!(!csrf_valid(
            KEY,
            "nonce",
            "authorize|c|r|y",
            &token,
            1_100,
            FORM_SECS
        ));
        assert!(!csrf_valid(
            b"another key",
            "nonce",
            "authorize|c|r|x",
            &token,
            1_100,
            FORM_SECS
        ));
        // Expired.
        assert!(!csrf_valid(
            KEY,
            "nonce",
            "authorize|c|r|x",
            &token,
            1_000 + FORM_SECS + 1,
            FORM_SECS
        ));
        // A tag with one bit flipped, a truncated tag, an empty tag, a tag that is not
        // base64url, a missing or rewritten issue time: refused.
        let (issued, tag) = token.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(tag).unwrap();
        bytes[31] ^= 1;
        let flipped = format!("{issued}.{}", URL_SAFE_NO_PAD.encode(&bytes));
        let truncated = format!("{issued}.{}", URL_SAFE_NO_PAD.encode(&bytes[..16]));
        for forged in [
            flipped.as_str(),
            truncated.as_str(),
            &format!("{issued}."),
            &format!("{issued}.!!!"),
            tag,
            &format!("1001.{tag}"),
        ] {
            assert!(
                !csrf_valid(KEY, "nonce", "authorize|c|r|x", forged, 1_100, FORM_SECS),
                "{forged}"
            );
        }
    }
}
