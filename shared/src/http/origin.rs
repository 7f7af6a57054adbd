//! `Origin` and `Host` checks against DNS rebinding (MCP transport security).
//!
//! Owns which origins and hosts may reach the MCP endpoint: the configured public
//! URL plus the loopback names. A present, foreign `Origin` is refused with 403; a
//! foreign `Host` is refused too whenever the set of expected hosts is known.

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

use crate::config::{Config, Runtime};

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

#[derive(Debug, Clone)]
pub(crate) struct OriginPolicy {
    /// The public origin, exactly (`https://mcp.example.com`).
    public_origin: Option<String>,
    /// The public host (with port if any), for the `Host` check.
    public_host: Option<String>,
    /// Whether a `Host` outside loopback and the public host is refused. Off only in
    /// Lambda without a configured public URL, where the gateway's own name is unknown.
    check_host: bool,
}

impl OriginPolicy {
    pub(crate) fn new(config: &Config) -> Self {
        let public_origin = config
            .public_url
            .as_ref()
            .map(|url| origin_of(url).to_ascii_lowercase());
        let public_host = public_origin
            .as_ref()
            .and_then(|o| o.split_once("://").map(|(_, host)| host.to_string()));
        let check_host = public_origin.is_some() || config.runtime == Runtime::Local;
        OriginPolicy {
            public_origin,
            public_host,
            check_host,
        }
    }

    /// The origin to echo in CORS headers, if the request's `Origin` is allowed.
    pub(crate) fn allowed_origin<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        let origin = headers.get(ORIGIN)?.to_str().ok()?;
        self.origin_allowed(origin).then_some(origin)
    }

    /// False when the request must be refused with 403.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        if let Some(origin) = headers.get(ORIGIN) {
            let Ok(origin) = origin.to_str() else {
                return false;
            };
            if !self.origin_allowed(origin) {
                return false;
            }
        }
        if self.check_host
            && let Some(host) = headers.get(HOST)
        {
            let Ok(host) = host.to_str() else {
                return false;
            };
            let host = host.to_ascii_lowercase();
            let loopback = LOOPBACK_HOSTS.contains(&strip_port(&host));
            if !loopback && self.public_host.as_deref() != Some(host.as_str()) {
                return false;
            }
        }
        true
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        if self.public_origin.as_deref() == Some(origin.as_str()) {
            return true;
        }
        let Some((scheme, host)) = origin.split_once("://") else {
            return false;
        };
        matches!(scheme, "http" | "https") && LOOPBACK_HOSTS.contains(&strip_port(host))
    }
}

fn origin_of(url: &str) -> &str {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = scheme.len() + 3 + rest.find('/').unwrap_or(rest.len());
            &url[..end]
        }
        None => url,
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.split(':').next().unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn policy(public: Option<&str>) -> OriginPolicy {
        let mut vars = vec![];
        if let Some(p) = public {
            vars.push(("MCP_PUBLIC_URL".to_string(), p.to_string()));
        }
        OriginPolicy::new(&Config::from_vars(Runtime::Local, vars).unwrap())
    }

    fn headers(pairs: &[(http::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_and_public_origins_pass_foreign_ones_do_not() {
        let p = policy(Some("https://mcp.example.com/base"));
        assert!(p.allows(&headers(&[(ORIGIN, "http://localhost:3000")])));
        assert!(p.allows(&headers(&[(ORIGIN, "https://mcp.example.com")])));
        assert!(!p.allows(&headers(&[(ORIGIN, "https://evil.example")])));
        assert!(!p.allows(&headers(&[(ORIGIN, "http://localhost.evil.example")])));
        assert!(p.allows(&headers(&[])));
    }

    #[test]
    fn a_foreign_host_is_refused() {
        let p = policy(None);
        assert!(p.allows(&headers(&[(HOST, "127.0.0.1:18060")])));
        assert!(p.allows(&headers(&[(HOST, "[::1]:18060")])));
        assert!(!p.allows(&headers(&[(HOST, "evil.example:18060")])));
    }
}
