//! D5 credentials: what a user gives us to reach their server, sealed at rest.
//!
//! Owns the validation of an auth choice (`NONE`, `BEARER` with a token, `HEADER` with a
//! name and a value), sealing the secret part with AES-256-GCM bound to the account and
//! the server's url, and turning a stored record back into request headers. The
//! plaintext exists only here and in the headers of an outbound request: it is never in
//! a response, a log line or an error message.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use serde::Deserialize;

use crate::domain::{McpAuth, McpServerRecord};
use crate::identity::Sealer;

/// The longest token or header value accepted.
const MAX_SECRET: usize = 8 * 1024;

/// Headers a user may not set: they belong to the transport or to MCP itself.
const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "accept",
    "cookie",
    "proxy-authorization",
];

/// The auth part of a registration or an update, as the client sent it.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "UPPERCASE", deny_unknown_fields)]
pub(crate) enum AuthInput {
    None,
    Bearer {
        token: String,
    },
    Header {
        name: String,
        value: String,
    },
    /// Sign in through the server's authorization server (after saving).
    #[serde(rename = "OAUTH")]
    OAuth,
}

impl std::fmt::Debug for AuthInput {
    // Never the token or the value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthInput::None => f.write_str("None"),
            AuthInput::OAuth => f.write_str("OAuth"),
            AuthInput::Bearer { .. } => f.write_str("Bearer(..)"),
            AuthInput::Header { name, .. } => write!(f, "Header({name}: ..)"),
        }
    }
}

/// The associated data of a sealed credential: the account and the server's url
/// (which never changes once set, D6), so a sealed value copied to another record does
/// not open.
fn binding(user: &str, url: &str) -> String {
    format!("mcp-credential:v1:{user}\n{url}")
}

fn secret_ok(secret: &str) -> bool {
    !secret.is_empty()
        && secret.len() <= MAX_SECRET
        && secret
            .bytes()
            .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
        && secret.trim() == secret
}

/// Checks `input` and seals its secret: the stored auth kind and sealed credential.
/// The error names what is wrong, never the secret.
pub(super) fn seal(
    sealer: &Sealer,
    user: &str,
    url: &str,
    input: &AuthInput,
) -> Result<(McpAuth, Option<String>), String> {
    match input {
        AuthInput::None => Ok((McpAuth::None, None)),
        // Nothing to seal yet: the token set comes with the person's sign-in.
        AuthInput::OAuth => Ok((McpAuth::OAuth, None)),
        AuthInput::Bearer { token } => {
            if !secret_ok(token) {
                return Err("auth.token must be 1 to 8192 printable ASCII characters, without surrounding spaces".into());
            }
            Ok((
                McpAuth::Bearer,
                Some(sealer.seal(token.as_bytes(), &binding(user, url))),
            ))
        }
        AuthInput::Header { name, value } => {
            let lower = name.to_ascii_lowercase();
            let valid = HeaderName::from_bytes(name.as_bytes()).is_ok() && name.len() <= 128;
            if !valid || RESERVED.contains(&lower.as_str()) || lower.starts_with("mcp-") {
                return Err("auth.name must be an HTTP header name that is not reserved (Host, Content-*, Accept, Cookie, Mcp-*…)".into());
            }
            if !secret_ok(value) {
                return Err("auth.value must be 1 to 8192 printable ASCII characters, without surrounding spaces".into());
            }
            Ok((
                McpAuth::Header { name: name.clone() },
                Some(sealer.seal(value.as_bytes(), &binding(user, url))),
            ))
        }
    }
}

/// `record`'s sealed credential, bound to its url `from`, sealed again for `to`: only
/// for a server saved without a url getting one (its credential was never sent anywhere).
pub(super) fn rebind(
    sealer: &Sealer,
    user: &str,
    record: &McpServerRecord,
    from: &str,
    to: &str,
) -> Result<Option<String>, String> {
    let Some(sealed) = record.sealed_credential.as_deref() else {
        return Ok(None);
    };
    let plain = sealer
        .open(sealed, &binding(user, from))
        .ok_or("the stored credential cannot be opened; enter the server's credential again")?;
    Ok(Some(sealer.seal(&plain, &binding(user, to))))
}

/// `Authorization: Bearer <token>`, marked sensitive (kept out of debug output).
pub(super) fn bearer(token: &[u8]) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_bytes(&[b"Bearer ", token].concat())
        .map_err(|_| "the stored credential is not a valid header value")?;
    value.set_sensitive(true);
    Ok(value)
}

/// The headers that authenticate requests to the record's server. An error means the
/// sealed credential does not open (another key, or a record copied across accounts).
pub(super) fn headers(
    sealer: &Sealer,
    user: &str,
    record: &McpServerRecord,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    let open = || -> Result<HeaderValue, String> {
        let sealed = record
            .sealed_credential
            .as_deref()
            .ok_or("the stored credential is missing")?;
        let plain = sealer.open(sealed, &binding(user, &record.url)).ok_or(
            "the stored credential cannot be opened; register the server's credential again",
        )?;
        let mut value = HeaderValue::from_bytes(&plain)
            .map_err(|_| "the stored credential is not a valid header value")?;
        value.set_sensitive(true);
        Ok(value)
    };
    match &record.auth {
        McpAuth::None => {}
        McpAuth::OAuth => {
            let grant = super::oauth::open_grant(sealer, user, record)?;
            headers.insert(
                header::AUTHORIZATION,
                bearer(grant.access_token.as_bytes())?,
            );
        }
        McpAuth::Bearer => {
            headers.insert(header::AUTHORIZATION, bearer(open()?.as_bytes())?);
        }
        McpAuth::Header { name } => {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| "the stored header name is invalid")?;
            headers.insert(name, open()?);
        }
    }
    Ok(headers)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A record of `https://mcp.example.com/mcp` named `shop` (the `oauth` tests too).
    pub(in crate::external) fn record(auth: McpAuth, sealed: Option<String>) -> McpServerRecord {
        McpServerRecord {
            name: "shop".into(),
            url: "https://mcp.example.com/mcp".into(),
            auth,
            sealed_credential: sealed,
            enabled: true,
            order: 0,
            allowed_tools: None,
            controls: Default::default(),
            tools: vec![],
            server_name: None,
            created_at: 0,
            updated_at: 0,
            last_connected_at: None,
            last_connect_error: None,
        }
    }

    #[test]
    fn sealed_credentials_open_only_for_their_account_and_url() {
        let sealer = Sealer::new(&[7; 32]);
        let url = "https://mcp.example.com/mcp";
        let input = AuthInput::Bearer {
            token: "t0ken".into(),
        };
        let (auth, sealed) = seal(&sealer, "alice", url, &input).unwrap();
        assert!(!sealed.as_deref().unwrap().contains("t0ken"));
        let stored = record(auth, sealed);
        let headers = headers(&sealer, "alice", &stored).unwrap();
        assert_eq!(headers[header::AUTHORIZATION], "Bearer t0ken");
        assert!(headers[header::AUTHORIZATION].is_sensitive());
        assert!(super::headers(&sealer, "mallory", &stored).is_err());
        let mut moved = stored.clone();
        moved.url = "https://other.example.com/mcp".into();
        assert!(super::headers(&sealer, "alice", &moved).is_err());
        assert!(format!("{input:?}").find("t0ken").is_none());
    }

    #[test]
    fn header_auth_refuses_reserved_names_and_bad_values() {
        let sealer = Sealer::new(&[7; 32]);
        let url = "https://mcp.example.com/mcp";
        let header = |name: &str, value: &str| AuthInput::Header {
            name: name.into(),
            value: value.into(),
        };
        let (auth, sealed) = seal(&sealer, "u", url, &header("X-Api-Key", "k3y")).unwrap();
        assert_eq!(
            auth,
            McpAuth::Header {
                name: "X-Api-Key".into()
            }
        );
        let stored = record(auth, sealed);
        assert_eq!(headers(&sealer, "u", &stored).unwrap()["x-api-key"], "k3y");
        for (name, value) in [
            ("Host", "x"),
            ("Mcp-Session-Id", "x"),
            ("bad name", "x"),
            ("X-Key", ""),
            ("X-Key", "line\nbreak"),
            ("X-Key", " padded"),
        ] {
            let err = seal(&sealer, "u", url, &header(name, value)).unwrap_err();
            assert!(!err.contains("break") && !err.contains("padded"), "{err}");
        }
    }
}
