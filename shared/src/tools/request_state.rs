//! Sealed `requestState` for multi-round (MRTR) tools: the server hands the client
//! an opaque state and must be able to tell, on the retry, that the client did not
//! change it. Owns the HMAC-SHA256 seal; knows nothing about what the state means.
// Part of the protocol surface that only the fixture pack exercises today (the product's own tools
// and catalogues do not use it yet); kept, not compiled away, so the protocol stays complete.
#![cfg_attr(not(feature = "fixtures"), allow(dead_code))]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

/// Seals and opens request states with one key.
#[derive(Clone)]
pub(crate) struct StateSeal {
    key: [u8; 32],
}

impl StateSeal {
    /// A seal with a fresh random key: states survive only as long as the process,
    /// which suits round trips that last seconds.
    pub(crate) fn random() -> Self {
        StateSeal {
            key: crate::identity::random_bytes(),
        }
    }

    pub(crate) fn seal(&self, state: &Value) -> String {
        let payload = URL_SAFE_NO_PAD.encode(state.to_string());
        let tag = URL_SAFE_NO_PAD.encode(self.mac(payload.as_bytes()).finalize().into_bytes());
        format!("{payload}.{tag}")
    }

    /// The state, if `sealed` is exactly what [`seal`](Self::seal) produced.
    pub(crate) fn open(&self, sealed: &str) -> Option<Value> {
        let (payload, tag) = sealed.split_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        self.mac(payload.as_bytes()).verify_slice(&tag).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
    }

    fn mac(&self, data: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes any key length");
        mac.update(data);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tampered_state_does_not_open() {
        let seal = StateSeal::random();
        let sealed = seal.seal(&json!({"round": 1}));
        assert_eq!(seal.open(&sealed), Some(json!({"round": 1})));
        assert_eq!(seal.open(&format!("{sealed}-TAMPERED")), None);
        assert_eq!(StateSeal::random().open(&sealed), None);
    }
}
