//! What `mirobody-local` says when it starts: where it listens, the
//! public URL it hands out (`MCP_PUBLIC_URL`, or the one derived from the listening
//! address), the MCP endpoint and the console; and, when it listens on every interface
//! without a public URL, a warning that says what goes wrong and what to set.
//!
//! The first line (`mirobody-local listening on http://…`) is printed by `main` and read
//! by tests to learn the port; these lines follow it.

use std::net::SocketAddr;

use mirobody::Config;

/// The lines after the first: the public URL, the MCP endpoint, the console, the mail
/// directory.
pub(crate) fn lines(config: &Config) -> Vec<String> {
    let origin = config.public_origin();
    let source = match config.public_url {
        Some(_) => "MCP_PUBLIC_URL",
        None => "from the listening address; set MCP_PUBLIC_URL to change it",
    };
    vec![
        format!("  public URL:   {origin}   ({source})"),
        format!("  MCP endpoint: {origin}{}/mcp", config.uri_prefix),
        format!("  web console:  {origin}/"),
        // Confirmation, reset and invitation mails land here, one file each.
        format!(
            "  mail:         {}   (every message this server sends, one file each)",
            config.local_mail_dir().display()
        ),
    ]
}

/// The warning for `HTTP_HOST=0.0.0.0` (or `::`) without `MCP_PUBLIC_URL`, else `None`.
pub(crate) fn warning(config: &Config, local: SocketAddr) -> Option<String> {
    if !local.ip().is_unspecified() || config.public_url.is_some() {
        return None;
    }
    let origin = config.public_origin();
    let port = local.port();
    Some(format!(
        "mirobody-local: warning: HTTP_HOST={} listens on every interface, but without \
         MCP_PUBLIC_URL the URLs this server hands out read {origin}/... (personal URLs, OAuth \
         metadata, login links), which no other machine can use, and requests that name this \
         machine by its LAN address or host name are refused with 403 (only loopback names and \
         the public URL's host pass the Host check). Set MCP_PUBLIC_URL=http://<your-lan-ip>:{port} \
         (the address other machines use to reach this one).",
        local.ip()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirobody::Runtime;

    fn config(pairs: &[(&str, &str)]) -> Config {
        let vars = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        Config::from_vars(Runtime::Local, vars).unwrap()
    }

    #[test]
    fn all_interfaces_without_a_public_url_warn_and_say_what_to_set() {
        let c = config(&[("HTTP_HOST", "0.0.0.0")]);
        let warning = warning(&c, "0.0.0.0:18060".parse().unwrap()).unwrap();
        assert!(warning.contains("http://0.0.0.0:18060/..."), "{warning}");
        assert!(warning.contains("403"), "{warning}");
        assert!(warning.contains("MCP_PUBLIC_URL=http://<your-lan-ip>:18060"));
        let v6 = config(&[("HTTP_HOST", "::")]);
        assert!(super::warning(&v6, "[::]:18060".parse().unwrap()).is_some());
    }

    #[test]
    fn loopback_or_a_public_url_do_not_warn_and_the_banner_shows_the_public_url() {
        let loopback = config(&[]);
        assert!(warning(&loopback, "127.0.0.1:18060".parse().unwrap()).is_none());
        let lan = config(&[
            ("HTTP_HOST", "0.0.0.0"),
            ("MCP_PUBLIC_URL", "http://192.168.1.50:18060"),
        ]);
        assert!(warning(&lan, "0.0.0.0:18060".parse().unwrap()).is_none());
        let banner = lines(&lan).join("\n");
        assert!(banner.contains("public URL:   http://192.168.1.50:18060   (MCP_PUBLIC_URL)"));
        assert!(banner.contains("MCP endpoint: http://192.168.1.50:18060/mcp"));
        assert!(banner.contains("web console:  http://192.168.1.50:18060/"));
    }
}
