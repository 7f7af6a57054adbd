//! The process's secret keys: the JWT signing key and the data-sealing key.
//! Locally they come from a generated dev key file (`<data dir>/dev-keys.json`,
//! created once, mode 0600); in Lambda from Secrets Manager (a later issue).

use std::path::Path;

use aws_config::SdkConfig;
use serde::{Deserialize, Serialize};

use super::secret::random_bytes;
use crate::observe::hex;

#[derive(Clone)]
pub struct Keys {
    pub jwt: [u8; 32],
    pub seal: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

#[derive(Debug)]
pub struct KeyError(pub String);

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "keys: {}", self.0)
    }
}

impl std::error::Error for KeyError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_json_derives_two_distinct_keys() {
        let keys =
            Keys::from_secret_json(r#"{"master":"0123456789abcdef0123456789abcdef"}"#).unwrap();
        assert_ne!(keys.jwt, keys.seal);
        let again =
            Keys::from_secret_json(r#"{"master":"0123456789abcdef0123456789abcdef"}"#).unwrap();
        assert_eq!(again.jwt, keys.jwt);
        assert!(Keys::from_secret_json(r#"{"master":"short"}"#).is_err());
        assert!(Keys::from_secret_json("nope").is_err());
    }
}

#[derive(Serialize, Deserialize)]
struct KeyFile {
    jwt: String,
    seal: String,
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let bytes: Vec<u8> = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<_>>()?;
    bytes.try_into().ok()
}

/// Derives a purpose-bound 32-byte key from the secret's master value.
fn derive(master: &[u8], purpose: &str) -> [u8; 32] {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac =
        <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(master).expect("HMAC takes any key length");
    mac.update(purpose.as_bytes());
    mac.finalize().into_bytes().into()
}

impl Keys {
    /// Keys from the Secrets Manager secret's JSON: `{"master": "<at least 32
    /// characters>"}` (what the SAM template generates). The JWT and sealing keys are
    /// derived from it with HMAC-SHA256 under distinct labels, so one rotation rotates both.
    pub fn from_secret_json(text: &str) -> Result<Keys, KeyError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|_| KeyError("the keys secret is not JSON".into()))?;
        let master = value
            .get("master")
            .and_then(|m| m.as_str())
            .filter(|m| m.len() >= 32)
            .ok_or_else(|| {
                KeyError(
                    "the keys secret needs a \"master\" string of at least 32 characters".into(),
                )
            })?;
        Ok(Keys {
            jwt: derive(master.as_bytes(), "mirobody jwt v1"),
            seal: derive(master.as_bytes(), "mirobody seal v1"),
        })
    }

    /// Reads the keys secret once (per cold start). `endpoint` overrides the service
    /// address (a local emulator in tests). Bounded: a Secrets Manager that does not
    /// answer fails the cold start within the operation timeout, never hangs it.
    pub async fn from_secrets_manager(
        shared: &SdkConfig,
        secret_id: &str,
        endpoint: Option<&str>,
    ) -> Result<Keys, KeyError> {
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(std::time::Duration::from_secs(3))
            .operation_attempt_timeout(std::time::Duration::from_secs(4))
            .operation_timeout(std::time::Duration::from_secs(10))
            .build();
        let mut config =
            aws_sdk_secretsmanager::config::Builder::from(shared).timeout_config(timeouts);
        if let Some(endpoint) = endpoint {
            config = config.endpoint_url(endpoint);
        }
        let client = aws_sdk_secretsmanager::Client::from_conf(config.build());
        Keys::from_secrets_manager_client(&client, secret_id).await
    }

    /// Reads the keys secret with a ready client.
    pub async fn from_secrets_manager_client(
        client: &aws_sdk_secretsmanager::Client,
        secret_id: &str,
    ) -> Result<Keys, KeyError> {
        let output = client
            .get_secret_value()
            .secret_id(secret_id)
            .send()
            .await
            .map_err(|e| {
                KeyError(format!(
                    "reading the keys secret failed: {}",
                    aws_sdk_secretsmanager::error::DisplayErrorContext(&e)
                ))
            })?;
        let text = output
            .secret_string()
            .ok_or_else(|| KeyError("the keys secret has no string value".into()))?;
        Keys::from_secret_json(text)
    }

    /// Reads the dev key file in `dir`, creating it with fresh keys the first time.
    pub fn dev(dir: &Path) -> Result<Keys, KeyError> {
        let path = dir.join("dev-keys.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let file: KeyFile = serde_json::from_str(&text)
                    .map_err(|e| KeyError(format!("{} is not a key file: {e}", path.display())))?;
                match (unhex(&file.jwt), unhex(&file.seal)) {
                    (Some(jwt), Some(seal)) => Ok(Keys { jwt, seal }),
                    _ => Err(KeyError(format!("{} holds malformed keys", path.display()))),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| KeyError(format!("{}: {e}", dir.display())))?;
                let keys = Keys {
                    jwt: random_bytes(),
                    seal: random_bytes(),
                };
                let text = serde_json::to_string_pretty(&KeyFile {
                    jwt: hex(&keys.jwt),
                    seal: hex(&keys.seal),
                })
                .expect("a key file serialises");
                write_private(&path, &text)?;
                // Another process may have won the race: read back what is on disk.
                Keys::dev(dir).or(Ok(keys))
            }
            Err(e) => Err(KeyError(format!("{}: {e}", path.display()))),
        }
    }
}

fn write_private(path: &Path, text: &str) -> Result<(), KeyError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut file) => file
            .write_all(text.as_bytes())
            .map_err(|e| KeyError(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(KeyError(format!("{}: {e}", path.display()))),
    }
}
