//! The process's secret keys: the JWT signing key and the data-sealing key.
//! Locally they come from a generated dev key file (`<data dir>/dev-keys.json`,
//! created once, mode 0600); in Lambda from Secrets Manager (a later issue).

use std::path::Path;

use serde::{Deserialize, Serialize};

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

#[derive(Serialize, Deserialize)]
struct KeyFile {
    jwt: String,
    seal: String,
}

fn random() -> [u8; 32] {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).expect("the operating system provides random bytes");
    key
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

impl Keys {
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
                    jwt: random(),
                    seal: random(),
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
