//! The local server's connection hygiene: how long a client may
//! take to send its headers and its body, how many connections are served at once, and
//! how large and how idle an upload's streamed PUT may be.
//! Read from the same layered settings as everything else; Lambda has none of this
//! (API Gateway holds the connections).

use std::time::Duration;

use mirobody::ConfigError;

pub struct ServerLimits {
    /// `MIROBODY_HEADER_TIMEOUT_SECS` (1 to 300, default 10): the request line and
    /// headers must arrive within this, also on a kept-alive connection.
    pub header_timeout: Duration,
    /// `MIROBODY_BODY_TIMEOUT_SECS` (1 to 600, default 30): the whole body must arrive
    /// within this once the headers are in (408 otherwise).
    pub body_timeout: Duration,
    /// `MIROBODY_MAX_CONNECTIONS` (1 to 65,536, default 512): connections served at
    /// once; further ones wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// `MIROBODY_UPLOAD_MAX_BYTES` (1 to 64 GiB, default 4 GiB): the largest file one
    /// upload PUT stores; streamed to disk, never held in memory.
    pub upload_max_bytes: u64,
    /// `MIROBODY_UPLOAD_IDLE_SECS` (1 to 600, default 30): an upload PUT whose client
    /// sends nothing for this long is cut (instead of the whole-body timeout).
    pub upload_idle_timeout: Duration,
}

impl ServerLimits {
    pub fn from_vars(vars: &[(String, String)]) -> Result<ServerLimits, ConfigError> {
        let get = |name: &str| vars.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v);
        let number = |name: &str, default: u64, max: u64| match get(name) {
            None => Ok(default),
            Some(raw) => match raw.trim().parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(ConfigError {
                    setting: name.to_string(),
                    problem: format!("must be a whole number from 1 to {max}"),
                }),
            },
        };
        Ok(ServerLimits {
            header_timeout: Duration::from_secs(number("MIROBODY_HEADER_TIMEOUT_SECS", 10, 300)?),
            body_timeout: Duration::from_secs(number("MIROBODY_BODY_TIMEOUT_SECS", 30, 600)?),
            max_connections: number("MIROBODY_MAX_CONNECTIONS", 512, 65_536)? as usize,
            upload_max_bytes: number("MIROBODY_UPLOAD_MAX_BYTES", 4 << 30, 64 << 30)?,
            upload_idle_timeout: Duration::from_secs(number("MIROBODY_UPLOAD_IDLE_SECS", 30, 600)?),
        })
    }
}
