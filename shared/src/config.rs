//! Settings (F3): every knob the product reads, read once at start-up and validated.
//!
//! Owns the names of the environment variables and what a valid value looks like.
//! A bad setting stops start-up with a message that names it. Does not read files
//! other than the optional layered `config.{env}.yaml` of the local server, and never
//! logs a value.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// Where the process runs: decides defaults that must differ (the local server may
/// enable development conveniences; a Lambda function never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Local,
    Lambda,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: Runtime,
    pub host: IpAddr,
    pub port: u16,
    /// `""` or a path like `/api` (leading slash, no trailing one).
    pub uri_prefix: String,
    pub server_name: String,
    /// The public origin (`https://mcp.example.com`, no trailing slash) used in every
    /// absolute URL that leaves the process (C4). `None` until configured.
    pub public_url: Option<String>,
    pub resource_dirs: Vec<PathBuf>,
    /// Agent tool lists (A8), keyed by the upper-cased agent name.
    pub allowed_tools: HashMap<String, Vec<String>>,
    pub disallowed_tools: HashMap<String, Vec<String>>,
    /// The conformance fixture pack (local server only; refused in Lambda).
    pub fixtures: bool,
    /// `/mcp` answers 401 with `WWW-Authenticate` to a caller with neither a token nor a
    /// URL secret, so OAuth clients that sign in only on a 401 do so up front (off by
    /// default: anonymous callers list tools and get the login prompt, A7).
    pub require_auth: bool,
    /// Where the local server keeps its embedded database and dev keys.
    pub data_dir: PathBuf,
    pub store: StoreKind,
    pub data_table: String,
    pub keys_table: String,
    /// A DynamoDB endpoint override (a local emulator); `None` in AWS.
    pub dynamodb_endpoint: Option<String>,
    /// The Secrets Manager secret holding the keys (Lambda); `None` locally, where a
    /// dev key file under `data_dir` stands in.
    pub keys_secret: Option<String>,
    /// Development only (refused in Lambda): outbound calls may use `http` and
    /// loopback addresses, for tests against local servers.
    pub remote_dev_loopback: bool,
    /// `MIROBODY_REMOTE_TIMEOUT_SECS` (1 to 25): a tighter bound on talking to a user's
    /// MCP server than the defaults (20 s per server on `/mcp`, 25 s for a registration
    /// probe). `None` keeps the defaults.
    pub remote_timeout_secs: Option<u64>,
    /// `MIROBODY_IMPORT_STALL_SECS` (10 to 3600, default 300): an import that has not
    /// reported for this long was stopped (its process killed); the next read
    /// of its upload fails it. Longer than any pause between reports (one chunk's write).
    pub import_stall_secs: u64,
    /// `MIROBODY_HASH_PERMITS` (1 to 256, default 2): how many Argon2 password hashes
    /// (19 MiB each) run at once; more sign-ins queue for a permit.
    pub hash_permits: usize,
    pub secretsmanager_endpoint: Option<String>,
    /// `MIROBODY_UPLOAD_BUCKET`: the private S3 bucket uploaded files wait in until they
    /// are imported (deployed); `None` locally, where they wait under `data_dir`.
    pub upload_bucket: Option<String>,
    /// An S3 endpoint override (`AWS_ENDPOINT_URL_S3`, a local emulator addressed
    /// path-style); `None` in AWS.
    pub s3_endpoint: Option<String>,
    /// `AWS_REGION`: where the upload bucket is (the console's upload script PUTs there).
    pub aws_region: Option<String>,
    /// `MCP_REMOTE_RESULT_MAX_BYTES`: a forwarded tool result's content is cut to this
    /// many bytes, with a note; 256 KiB unless set, 1 KiB to 4 MiB.
    pub remote_result_max_bytes: usize,
    /// `MIROBODY_SNAPSHOT_TTL_SECS` (1 to 60): the longest a user's MCP server's tool list
    /// is reused on `/mcp` before it is fetched again, whatever the server's `ttlMs` said
    /// (it is reused for what the server said, at least 2 s; a failed server is left out
    /// for 15 s, or this if shorter). `None` keeps the default, 10 s.
    pub snapshot_ttl_secs: Option<u64>,
    /// `MCP_ALLOWED_ORIGINS`: browser origins beyond loopback and the
    /// public URL that may call the bearer-token routes (`/mcp`, the API), or any origin.
    pub allowed_origins: AllowedOrigins,
    /// `MIROBODY_MAIL_DIR` (local only): where the local server writes each message it
    /// sends; `<data dir>/mail` unless set.
    pub mail_dir: Option<PathBuf>,
    /// `MIROBODY_MAIL_FROM` (deployed): the SES identity (a verified address) mail is sent
    /// from; without it a deployed function sends no mail.
    pub mail_from: Option<String>,
    /// `MIROBODY_SES_CONFIGURATION_SET`: the SES configuration set whose event
    /// destination receives bounces and complaints (README "E-mail").
    pub ses_configuration_set: Option<String>,
}

/// `MCP_ALLOWED_ORIGINS`: a comma-separated list of origins (`scheme://host[:port]`,
/// stored normalised: lower-case, default port dropped), or `*`. Never widens the
/// console's pages or the OAuth sign-in and consent forms (`http/origin.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// Unset: loopback and the public URL only, as before the setting existed.
    #[default]
    Listed,
    /// These origins, exactly (normalised), besides loopback and the public URL.
    Origins(Vec<String>),
    /// `*`: any origin, answered `Access-Control-Allow-Origin: *` (never credentials).
    Any,
}

/// The largest `MCP_REMOTE_RESULT_MAX_BYTES`: a result must fit Lambda's 6 MB answer.
const MAX_REMOTE_RESULT_BYTES: usize = 4 * 1024 * 1024;
/// The default of `MCP_REMOTE_RESULT_MAX_BYTES`: 256 KiB of content (what
/// `external::results` cuts a forwarded result to when the setting is absent).
pub(crate) const DEFAULT_REMOTE_RESULT_MAX_BYTES: usize = 256 * 1024;

/// Password hashes running at once unless `MIROBODY_HASH_PERMITS` says otherwise.
const DEFAULT_HASH_PERMITS: usize = 2;

const DEFAULT_IMPORT_STALL_SECS: u64 = 300;

/// Which storage backend to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// One SQLite file under `data_dir` (the local default).
    Embedded,
    /// DynamoDB tables `data_table` and `keys_table` (the Lambda default).
    DynamoDb,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub setting: String,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad setting {}: {}", self.setting, self.problem)
    }
}

impl std::error::Error for ConfigError {}

fn bad(setting: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        setting: setting.into(),
        problem: problem.into(),
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env(runtime: Runtime) -> Result<Self, ConfigError> {
        Self::from_vars(runtime, std::env::vars())
    }

    /// Reads settings from name/value pairs (the environment, or a test's list).
    pub fn from_vars(
        runtime: Runtime,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let vars: HashMap<String, String> = vars.into_iter().collect();
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let flag = |name: &str| match get(name) {
            None | Some("0" | "false") => Ok(false),
            Some("1" | "true") => Ok(true),
            Some(_) => Err(bad(name, "must be true or false")),
        };

        let host = match get("HTTP_HOST") {
            None => IpAddr::from([127, 0, 0, 1]),
            Some("localhost") => IpAddr::from([127, 0, 0, 1]),
            Some(v) => v
                .parse()
                .map_err(|_| bad("HTTP_HOST", "must be an IP address"))?,
        };
        let port = match get("HTTP_PORT") {
            None => 18060,
            Some(v) => v
                .parse()
                .map_err(|_| bad("HTTP_PORT", "must be a port number (0-65535)"))?,
        };
        let uri_prefix = match get("HTTP_URI_PREFIX") {
            None => String::new(),
            Some(v) => normalise_prefix(v)?,
        };
        let server_name = get("HTTP_SERVER_NAME").unwrap_or("mirobody").to_string();
        let public_url = get("MCP_PUBLIC_URL").map(parse_public_url).transpose()?;
        let resource_dirs: Vec<PathBuf> = get("MCP_RESOURCE_DIRS")
            .map(|v| list(v).into_iter().map(PathBuf::from).collect())
            .unwrap_or_default();
        for dir in &resource_dirs {
            if !dir.is_dir() {
                return Err(bad(
                    "MCP_RESOURCE_DIRS",
                    format!("{} is not a directory", dir.display()),
                ));
            }
        }
        let mut allowed_tools = HashMap::new();
        let mut disallowed_tools = HashMap::new();
        for (name, value) in &vars {
            if let Some(agent) = name.strip_prefix("ALLOWED_TOOLS_") {
                allowed_tools.insert(agent.trim().to_uppercase(), list(value));
            } else if let Some(agent) = name.strip_prefix("DISALLOWED_TOOLS_") {
                disallowed_tools.insert(agent.trim().to_uppercase(), list(value));
            }
        }
        let fixtures = flag("MIROBODY_FIXTURES")?;
        if fixtures && runtime == Runtime::Lambda {
            return Err(bad(
                "MIROBODY_FIXTURES",
                "the test fixture pack is never enabled in Lambda",
            ));
        }
        let require_auth = flag("MIROBODY_REQUIRE_AUTH")?;
        let store = match (get("MIROBODY_STORE"), runtime) {
            (None, Runtime::Local) | (Some("embedded"), _) => StoreKind::Embedded,
            (None, Runtime::Lambda) | (Some("dynamodb"), _) => StoreKind::DynamoDb,
            (Some(_), _) => return Err(bad("MIROBODY_STORE", "must be embedded or dynamodb")),
        };
        if store == StoreKind::Embedded && runtime == Runtime::Lambda {
            return Err(bad("MIROBODY_STORE", "Lambda functions use dynamodb"));
        }
        let table = |name: &str, default: &str| -> Result<String, ConfigError> {
            let value = get(name).unwrap_or(default);
            let valid = (3..=255).contains(&value.len())
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if valid {
                Ok(value.to_string())
            } else {
                Err(bad(name, "must be a DynamoDB table name"))
            }
        };
        Ok(Config {
            data_dir: PathBuf::from(get("MIROBODY_DATA_DIR").unwrap_or(".mirobody")),
            store,
            data_table: table("MIROBODY_DATA_TABLE", "mirobody-data")?,
            keys_table: table("MIROBODY_KEYS_TABLE", "mirobody-keys")?,
            dynamodb_endpoint: get("AWS_ENDPOINT_URL_DYNAMODB").map(String::from),
            keys_secret: get("MIROBODY_KEYS_SECRET").map(String::from),
            remote_dev_loopback: match (flag("MIROBODY_REMOTE_DEV_LOOPBACK")?, runtime) {
                (true, Runtime::Lambda) => {
                    return Err(bad(
                        "MIROBODY_REMOTE_DEV_LOOPBACK",
                        "loopback outbound calls are never allowed in Lambda",
                    ));
                }
                (loopback, _) => loopback,
            },
            remote_timeout_secs: match get("MIROBODY_REMOTE_TIMEOUT_SECS") {
                None => None,
                Some(raw) => match raw.parse::<u64>() {
                    Ok(secs @ 1..=25) => Some(secs),
                    _ => {
                        return Err(bad(
                            "MIROBODY_REMOTE_TIMEOUT_SECS",
                            "must be a whole number of seconds from 1 to 25",
                        ));
                    }
                },
            },
            import_stall_secs: match get("MIROBODY_IMPORT_STALL_SECS") {
                None => DEFAULT_IMPORT_STALL_SECS,
                Some(raw) => match raw.parse::<u64>() {
                    Ok(secs @ 10..=3600) => secs,
                    _ => {
                        return Err(bad(
                            "MIROBODY_IMPORT_STALL_SECS",
                            "must be a whole number of seconds from 10 to 3600",
                        ));
                    }
                },
            },
            hash_permits: match get("MIROBODY_HASH_PERMITS") {
                None => DEFAULT_HASH_PERMITS,
                Some(raw) => match raw.parse::<usize>() {
                    Ok(permits @ 1..=256) => permits,
                    _ => {
                        return Err(bad(
                            "MIROBODY_HASH_PERMITS",
                            "must be a whole number from 1 to 256",
                        ));
                    }
                },
            },
            secretsmanager_endpoint: get("AWS_ENDPOINT_URL_SECRETS_MANAGER").map(String::from),
            upload_bucket: get("MIROBODY_UPLOAD_BUCKET")
                .map(parse_bucket_name)
                .transpose()?,
            s3_endpoint: get("AWS_ENDPOINT_URL_S3").map(String::from),
            aws_region: get("AWS_REGION").map(String::from),
            remote_result_max_bytes: match get("MCP_REMOTE_RESULT_MAX_BYTES") {
                None => DEFAULT_REMOTE_RESULT_MAX_BYTES,
                Some(raw) => match raw.parse::<usize>() {
                    Ok(bytes @ 1024..=MAX_REMOTE_RESULT_BYTES) => bytes,
                    _ => {
                        return Err(bad(
                            "MCP_REMOTE_RESULT_MAX_BYTES",
                            "must be a whole number of bytes from 1024 to 4194304 (4 MiB)",
                        ));
                    }
                },
            },
            snapshot_ttl_secs: match get("MIROBODY_SNAPSHOT_TTL_SECS") {
                None => None,
                Some(raw) => match raw.parse::<u64>() {
                    Ok(secs @ 1..=60) => Some(secs),
                    _ => {
                        return Err(bad(
                            "MIROBODY_SNAPSHOT_TTL_SECS",
                            "must be a whole number of seconds from 1 to 60",
                        ));
                    }
                },
            },
            mail_dir: match (get("MIROBODY_MAIL_DIR"), runtime) {
                (Some(_), Runtime::Lambda) => {
                    return Err(bad(
                        "MIROBODY_MAIL_DIR",
                        "Lambda functions send mail through SES (MIROBODY_MAIL_FROM)",
                    ));
                }
                (dir, _) => dir.map(PathBuf::from),
            },
            mail_from: match get("MIROBODY_MAIL_FROM") {
                None => None,
                Some(from) if from.contains('@') && !from.chars().any(char::is_control) => {
                    Some(from.to_string())
                }
                Some(_) => {
                    return Err(bad(
                        "MIROBODY_MAIL_FROM",
                        "must be the verified SES sender address",
                    ));
                }
            },
            ses_configuration_set: get("MIROBODY_SES_CONFIGURATION_SET").map(String::from),
            allowed_origins: get("MCP_ALLOWED_ORIGINS")
                .map(parse_allowed_origins)
                .transpose()?
                .unwrap_or_default(),
            runtime,
            host,
            port,
            uri_prefix,
            server_name,
            public_url,
            resource_dirs,
            allowed_tools,
            disallowed_tools,
            fixtures,
            require_auth,
        })
    }

    /// Where the local server writes the messages it sends.
    pub fn local_mail_dir(&self) -> PathBuf {
        self.mail_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("mail"))
    }

    /// The origin to put in absolute URLs: the configured public URL, else the
    /// local listening address.
    pub fn public_origin(&self) -> String {
        match &self.public_url {
            Some(url) => url.clone(),
            None => match self.host {
                IpAddr::V6(v6) => format!("http://[{v6}]:{}", self.port),
                IpAddr::V4(v4) => format!("http://{v4}:{}", self.port),
            },
        }
    }
}

impl Config {
    /// The origin a browser PUTs uploaded files to when they go to S3 (the console's
    /// `connect-src`): the endpoint override's, else the bucket's virtual-hosted name.
    /// `None` when uploads stay on this server.
    pub(crate) fn upload_origin(&self) -> Option<String> {
        let bucket = self.upload_bucket.as_ref()?;
        if let Some(endpoint) = &self.s3_endpoint {
            let url = url::Url::parse(endpoint).ok()?;
            return Some(url.origin().ascii_serialization());
        }
        let region = self.aws_region.as_deref().unwrap_or("us-east-1");
        Some(format!("https://{bucket}.s3.{region}.amazonaws.com"))
    }
}

fn list(value: &str) -> Vec<String> {
    value
        .split([',', ';'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn normalise_prefix(value: &str) -> Result<String, ConfigError> {
    let trimmed = value.trim_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    if trimmed.contains(['?', '#', ' ']) || trimmed.contains("//") {
        return Err(bad("HTTP_URI_PREFIX", "must be a plain path such as /api"));
    }
    Ok(format!("/{trimmed}"))
}

/// An S3 bucket name as S3 allows it for virtual-hosted addressing: 3 to 63 lower-case
/// letters, digits, dots and hyphens, starting and ending with a letter or digit.
fn parse_bucket_name(value: &str) -> Result<String, ConfigError> {
    let bytes = value.as_bytes();
    let valid = (3..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && !value.contains("..");
    if valid {
        Ok(value.to_string())
    } else {
        Err(bad("MIROBODY_UPLOAD_BUCKET", "must be an S3 bucket name"))
    }
}

/// `MCP_ALLOWED_ORIGINS`: `*`, or origins separated by commas, each an `http(s)` origin
/// with nothing after the host and port; each stored as the browser sends it in
/// `Origin` (lower-case scheme and host, no default port).
fn parse_allowed_origins(value: &str) -> Result<AllowedOrigins, ConfigError> {
    const NAME: &str = "MCP_ALLOWED_ORIGINS";
    if value == "*" {
        return Ok(AllowedOrigins::Any);
    }
    let mut origins = Vec::new();
    for raw in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if raw == "*" {
            return Err(bad(
                NAME,
                "`*` must be the whole value, not one entry of a list",
            ));
        }
        let origin = normalise_origin(raw).ok_or_else(|| {
            bad(
                NAME,
                format!("{raw:?} is not an origin such as https://app.example.com (scheme, host and an optional port, nothing else)"),
            )
        })?;
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    if origins.is_empty() {
        return Err(bad(NAME, "must be * or a comma-separated list of origins"));
    }
    Ok(AllowedOrigins::Origins(origins))
}

/// An `http(s)` origin as a browser writes it in `Origin` (`https://app.example`,
/// `http://localhost:3000`), or `None` when `raw` is anything more or less than one.
pub(crate) fn normalise_origin(raw: &str) -> Option<String> {
    if raw.len() > 2048 || raw.contains(['@', '?', '#', '\\']) {
        return None;
    }
    let url = url::Url::parse(raw).ok()?;
    let rest = raw.split_once("://")?.1;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none_or(str::is_empty)
        || rest.trim_end_matches('/').contains('/')
    {
        return None;
    }
    Some(url.origin().ascii_serialization())
}

fn parse_public_url(value: &str) -> Result<String, ConfigError> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"))
        .ok_or_else(|| {
            bad(
                "MCP_PUBLIC_URL",
                "must start with https:// (or http:// for local use)",
            )
        })?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() || host.contains(['@', '?', '#']) {
        return Err(bad(
            "MCP_PUBLIC_URL",
            "must be an origin such as https://mcp.example.com",
        ));
    }
    Ok(value.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_need_no_setting() {
        let config = Config::from_vars(Runtime::Local, vars(&[])).unwrap();
        assert_eq!(
            (config.host.to_string(), config.port),
            ("127.0.0.1".into(), 18060)
        );
        assert_eq!(config.uri_prefix, "");
        assert_eq!(config.server_name, "mirobody");
        assert!(
            !config.require_auth,
            "anonymous callers are served by default (A7)"
        );
        assert_eq!(config.remote_result_max_bytes, 256 * 1024);
    }

    /// The result limit is checked at start.
    #[test]
    fn the_remote_result_limit_is_bounded() {
        let with = |value: &str| {
            Config::from_vars(
                Runtime::Local,
                vars(&[("MCP_REMOTE_RESULT_MAX_BYTES", value)]),
            )
        };
        assert_eq!(with("65536").unwrap().remote_result_max_bytes, 65536);
        for bad in ["0", "1023", "4194305", "256KB", "-1"] {
            let err = with(bad).unwrap_err();
            assert_eq!(err.setting, "MCP_REMOTE_RESULT_MAX_BYTES", "{bad}");
        }
    }

    #[test]
    fn a_bad_setting_is_named() {
        let err = Config::from_vars(Runtime::Local, vars(&[("HTTP_PORT", "eighty")])).unwrap_err();
        assert_eq!(err.setting, "HTTP_PORT");
        let err =
            Config::from_vars(Runtime::Local, vars(&[("MCP_PUBLIC_URL", "ftp://x")])).unwrap_err();
        assert_eq!(err.setting, "MCP_PUBLIC_URL");
        let err =
            Config::from_vars(Runtime::Lambda, vars(&[("MIROBODY_FIXTURES", "1")])).unwrap_err();
        assert_eq!(err.setting, "MIROBODY_FIXTURES");
        let err = Config::from_vars(Runtime::Local, vars(&[("MIROBODY_REQUIRE_AUTH", "yes")]))
            .unwrap_err();
        assert_eq!(err.setting, "MIROBODY_REQUIRE_AUTH");
    }

    #[test]
    fn the_upload_bucket_is_an_s3_bucket_name() {
        let config = Config::from_vars(
            Runtime::Lambda,
            vars(&[("MIROBODY_UPLOAD_BUCKET", "mirobody-uploads-123456789012")]),
        )
        .unwrap();
        assert_eq!(
            config.upload_bucket.as_deref(),
            Some("mirobody-uploads-123456789012")
        );
        assert_eq!(
            Config::from_vars(Runtime::Local, vars(&[]))
                .unwrap()
                .upload_bucket,
            None
        );
        for bad in [
            "Uploads",
            "ab",
            "-uploads",
            "uploads-",
            "a..b",
            "up/loads",
            &"a".repeat(64),
        ] {
            let err = Config::from_vars(Runtime::Lambda, vars(&[("MIROBODY_UPLOAD_BUCKET", bad)]))
                .unwrap_err();
            assert_eq!(err.setting, "MIROBODY_UPLOAD_BUCKET", "{bad}");
        }
    }

    #[test]
    fn allowed_origins_are_parsed_and_normalised() {
        let origins = |value: &str| {
            Config::from_vars(Runtime::Local, vars(&[("MCP_ALLOWED_ORIGINS", value)]))
                .map(|c| c.allowed_origins)
        };
        assert_eq!(origins("").unwrap(), AllowedOrigins::Listed);
        assert_eq!(origins(" * ").unwrap(), AllowedOrigins::Any);
        assert_eq!(
            origins("HTTPS://App.Example:443/, http://localhost:3000,https://app.example").unwrap(),
            AllowedOrigins::Origins(vec![
                "https://app.example".into(),
                "http://localhost:3000".into()
            ])
        );
        for bad in [
            "app.example",
            "ftp://app.example",
            "https://app.example/path",
            "https://user@app.example",
            "https://app.example?x=1",
            "https://",
            "https://a.example, *",
            ",",
            "null",
        ] {
            let err = origins(bad).unwrap_err();
            assert_eq!(err.setting, "MCP_ALLOWED_ORIGINS", "{bad}");
        }
    }

    #[test]
    fn prefix_and_agent_lists_are_normalised() {
        let config = Config::from_vars(
            Runtime::Local,
            vars(&[
                ("HTTP_URI_PREFIX", "api/v1/"),
                ("ALLOWED_TOOLS_Claude", "a, b"),
            ]),
        )
        .unwrap();
        assert_eq!(config.uri_prefix, "/api/v1");
        assert_eq!(config.allowed_tools["CLAUDE"], vec!["a", "b"]);
    }
}
