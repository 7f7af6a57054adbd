//! The client side of the MCP authorization flow, towards a person's own MCP servers:
//! discovery (the server's 401 and `WWW-Authenticate`, its protected-resource metadata,
//! RFC 9728, then its authorization server's metadata, RFC 8414 or OpenID discovery),
//! dynamic client registration (RFC 7591), and the token endpoint (authorization code
//! with PKCE, refresh).
//!
//! Owns the wire of those exchanges and their bounds: every request goes through the
//! address guard ([`GuardedHttp`]), follows no redirect, reads at most 64 KiB, within the
//! caller's time budget. Does not know accounts, records or sealing (`external::oauth`
//! keeps the tokens); never logs or returns a token in an error.

use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{GuardedHttp, HttpError};

/// The most any document or token answer of the flow may be.
const MAX_DOCUMENT: usize = 64 * 1024;

/// What discovery found: where the person signs in and where tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthorizationServer {
    /// The protected resource's identifier (the `resource` parameter of every request).
    pub resource: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    /// The scope to ask for (the 401's `scope`, else the resource's `scopes_supported`).
    pub scope: Option<String>,
}

/// The tokens a token endpoint issued.
#[derive(Clone, Deserialize)]
pub(crate) struct IssuedTokens {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub expires_in: Option<u64>,
}

impl std::fmt::Debug for IssuedTokens {
    // Never a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedTokens")
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

/// Why a token request did not give tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenFailure {
    /// The authorization server refused the grant (`invalid_grant` and its kin): the
    /// person must sign in again.
    Refused(String),
    /// It could not be asked (unreachable, late, an answer that is not one): try later.
    Unreachable(String),
}

impl std::fmt::Display for TokenFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFailure::Refused(why) | TokenFailure::Unreachable(why) => f.write_str(why),
        }
    }
}

/// The `resource_metadata` and `scope` parameters of a `WWW-Authenticate: Bearer …`
/// challenge (RFC 9728 5.1), each a quoted string or a token.
pub(crate) fn challenge_params(value: &str) -> (Option<String>, Option<String>) {
    let Some(rest) = value
        .trim_start()
        .get(..6)
        .filter(|scheme| scheme.eq_ignore_ascii_case("bearer"))
        .map(|_| &value.trim_start()[6..])
    else {
        return (None, None);
    };
    let mut metadata = None;
    let mut scope = None;
    let mut rest = rest.trim_start();
    while !rest.is_empty() {
        let Some((name, after)) = rest.split_once('=') else {
            break;
        };
        let name = name
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (param, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim(), &after[end..])
        };
        match name.as_str() {
            "resource_metadata" => metadata = Some(param.to_string()),
            "scope" => scope = Some(param.to_string()),
            _ => {}
        }
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    (metadata, scope)
}

/// The well-known places of a URL's metadata document `suffix`, most specific first:
/// `{origin}/.well-known/{suffix}{path}`, then (for OpenID discovery's older form)
/// `{origin}{path}/.well-known/{suffix}` when `path_after` is true, then the origin's own.
fn well_known(url: &str, suffix: &str, path_after: bool) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Vec::new();
    };
    let origin = parsed.origin().ascii_serialization();
    let path = parsed.path().trim_end_matches('/');
    let mut places = Vec::new();
    if !path.is_empty() {
        places.push(format!("{origin}/.well-known/{suffix}{path}"));
        if path_after {
            places.push(format!("{origin}{path}/.well-known/{suffix}"));
        }
    }
    places.push(format!("{origin}/.well-known/{suffix}"));
    places
}

/// Whether the protected resource `resource` is the MCP server at `mcp_url`: the same
/// origin, and a path that is the server's or one of its parent paths.
fn resource_covers(resource: &str, mcp_url: &str) -> bool {
    let (Ok(resource), Ok(server)) = (url::Url::parse(resource), url::Url::parse(mcp_url)) else {
        return false;
    };
    let parent = resource.path().trim_end_matches('/');
    resource.origin() == server.origin()
        && resource.query().is_none()
        && (server.path().trim_end_matches('/') == parent
            || server.path().starts_with(&format!("{parent}/")))
}

/// An absolute http(s) URL without a fragment (the guard judges the address when it is
/// contacted; the authorization endpoint is only ever opened by the person's browser).
fn endpoint(value: Option<&Value>, what: &str) -> Result<String, String> {
    let text = value
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the authorization server's metadata has no {what}"))?;
    match url::Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "https" | "http") && url.fragment().is_none() => {
            Ok(text.to_string())
        }
        _ => Err(format!("the authorization server's {what} is not a URL")),
    }
}

async fn document(http: &GuardedHttp, url: &str, budget: Duration) -> Result<Value, String> {
    let response = http
        .get(url, budget, MAX_DOCUMENT)
        .await
        .map_err(|e| e.to_string())?;
    if response.status != StatusCode::OK {
        return Err(format!("HTTP {}", response.status.as_u16()));
    }
    serde_json::from_slice(&response.body).map_err(|_| "not a JSON document".to_string())
}

/// The first of `places` that answers a JSON object.
async fn first_document(
    http: &GuardedHttp,
    places: &[String],
    budget: Duration,
) -> Result<Value, String> {
    let mut last = "no place to look".to_string();
    for place in places {
        match document(http, place, budget).await {
            Ok(doc) if doc.is_object() => return Ok(doc),
            Ok(_) => last = "not a JSON object".into(),
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// Asks the MCP server at `mcp_url`, without credentials, how to sign in: its 401's
/// challenge (else the well-known places of its protected-resource metadata), that
/// metadata's first authorization server, and that server's metadata. PKCE S256 must
/// be supported (the MCP authorization spec: a client refuses to go on otherwise).
pub(crate) async fn discover(
    http: &GuardedHttp,
    mcp_url: &str,
    budget: Duration,
) -> Result<AuthorizationServer, String> {
    let endpoint_of = http
        .endpoint(mcp_url, budget)
        .await
        .map_err(|e| e.to_string())?;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let probe = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mirobody-gateway", "version": env!("CARGO_PKG_VERSION")}}});
    let answer = endpoint_of
        .post_json(&headers, &probe, MAX_DOCUMENT)
        .await
        .map_err(|e: HttpError| e.to_string())?;
    let (metadata_url, challenge_scope) = if answer.status == StatusCode::UNAUTHORIZED {
        answer
            .headers
            .get_all(header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(challenge_params)
            .find(|(metadata, _)| metadata.is_some())
            .unwrap_or((None, None))
    } else {
        return Err(format!(
            "the server does not ask for a sign-in (HTTP {} without credentials)",
            answer.status.as_u16()
        ));
    };
    let places = match metadata_url {
        Some(url) => vec![url],
        None => well_known(mcp_url, "oauth-protected-resource", false),
    };
    let resource_doc = first_document(http, &places, budget)
        .await
        .map_err(|why| format!("its protected-resource metadata could not be read: {why}"))?;
    let resource = resource_doc
        .get("resource")
        .and_then(Value::as_str)
        .unwrap_or(mcp_url)
        .to_string();
    // RFC 9728 3.3: the metadata must be the server's own. Tokens for another resource
    // would be sent to this server by every later request (a confused deputy).
    if !resource_covers(&resource, mcp_url) {
        return Err("its protected-resource metadata names another resource".into());
    }
    let issuer = resource_doc
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|list| list.first())
        .and_then(Value::as_str)
        .ok_or("its protected-resource metadata names no authorization server")?
        .to_string();
    let mut places = well_known(&issuer, "oauth-authorization-server", false);
    places.extend(well_known(&issuer, "openid-configuration", true));
    let server_doc = first_document(http, &places, budget)
        .await
        .map_err(|why| format!("its authorization server's metadata could not be read: {why}"))?;
    if server_doc.get("issuer").and_then(Value::as_str) != Some(issuer.as_str()) {
        return Err("the authorization server's metadata names another issuer".into());
    }
    let s256 = server_doc
        .get("code_challenge_methods_supported")
        .and_then(Value::as_array)
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
    if !s256 {
        return Err("the authorization server does not support PKCE with S256".into());
    }
    let scope = challenge_scope.or_else(|| {
        resource_doc
            .get("scopes_supported")
            .and_then(Value::as_array)
            .map(|scopes| {
                scopes
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|scope| !scope.is_empty())
    });
    let authorization_endpoint = endpoint(
        server_doc.get("authorization_endpoint"),
        "authorization_endpoint",
    )?;
    // The person's browser goes there with a password: https, or the person's own machine.
    let browser_safe = url::Url::parse(&authorization_endpoint).is_ok_and(|u| {
        u.scheme() == "https" || matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
    });
    if !browser_safe {
        return Err("the authorization server's sign-in page is not https".into());
    }
    Ok(AuthorizationServer {
        resource,
        authorization_endpoint,
        token_endpoint: endpoint(server_doc.get("token_endpoint"), "token_endpoint")?,
        registration_endpoint: server_doc
            .get("registration_endpoint")
            .map(|v| endpoint(Some(v), "registration_endpoint"))
            .transpose()?,
        scope,
    })
}

/// Registers this product as a public client (RFC 7591) redirecting to `redirect_uri`:
/// its `client_id`.
pub(crate) async fn register_client(
    http: &GuardedHttp,
    registration_endpoint: &str,
    redirect_uri: &str,
    budget: Duration,
) -> Result<String, String> {
    let body = json!({
        "client_name": "Mirobody gateway",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let answer = http
        .endpoint(registration_endpoint, budget)
        .await
        .map_err(|e| e.to_string())?
        .post_json(&HeaderMap::new(), &body, MAX_DOCUMENT)
        .await
        .map_err(|e| e.to_string())?;
    if !answer.status.is_success() {
        return Err(format!(
            "the authorization server refused to register this gateway (HTTP {})",
            answer.status.as_u16()
        ));
    }
    serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|doc| doc.get("client_id")?.as_str().map(str::to_string))
        .filter(|id| !id.is_empty() && id.len() <= 2048)
        .ok_or_else(|| "the registration answer has no client_id".to_string())
}

/// One request to a token endpoint with `form`: the tokens, or why not.
pub(crate) async fn token_request(
    http: &GuardedHttp,
    token_endpoint: &str,
    form: &[(&str, &str)],
    budget: Duration,
) -> Result<IssuedTokens, TokenFailure> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let answer = http
        .endpoint(token_endpoint, budget)
        .await
        .map_err(|e| TokenFailure::Unreachable(e.to_string()))?
        .post_form(body, MAX_DOCUMENT)
        .await
        .map_err(|e| TokenFailure::Unreachable(e.to_string()))?;
    let doc: Option<Value> = serde_json::from_slice(&answer.body).ok();
    if answer.status.is_success() {
        let tokens = doc
            .and_then(|doc| serde_json::from_value::<IssuedTokens>(doc).ok())
            .filter(|t| !t.access_token.is_empty() && t.access_token.len() <= 16 * 1024)
            .ok_or_else(|| {
                TokenFailure::Unreachable("the token answer has no access_token".into())
            })?;
        return Ok(tokens);
    }
    let code = doc
        .as_ref()
        .and_then(|doc| doc.get("error")?.as_str())
        .map(|code| code.chars().take(64).collect::<String>());
    match (answer.status, code) {
        (StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED, Some(code)) => Err(
            TokenFailure::Refused(format!("the authorization server answered {code}")),
        ),
        (status, _) => Err(TokenFailure::Unreachable(format!(
            "the token endpoint answered HTTP {}",
            status.as_u16()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_gives_its_metadata_url_and_scope() {
        let (metadata, scope) = challenge_params(
            r#"Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="read write""#,
        );
        assert_eq!(
            metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(scope.as_deref(), Some("read write"));
        let (metadata, scope) = challenge_params("bearer resource_metadata=https://a.example/m");
        assert_eq!(metadata.as_deref(), Some("https://a.example/m"));
        assert_eq!(scope, None);
        assert_eq!(challenge_params("Basic realm=\"x\""), (None, None));
        assert_eq!(challenge_params(""), (None, None));
        assert_eq!(challenge_params("Bearer"), (None, None));
    }

    #[test]
    fn only_the_servers_own_resource_is_accepted() {
        let server = "https://mcp.example.com/tenant/mcp";
        assert!(resource_covers(
            "https://mcp.example.com/tenant/mcp",
            server
        ));
        assert!(resource_covers(
            "https://mcp.example.com/tenant/mcp/",
            server
        ));
        assert!(resource_covers("https://mcp.example.com/tenant", server));
        assert!(resource_covers("https://mcp.example.com", server));
        assert!(!resource_covers("https://mcp.example.com/ten", server));
        assert!(!resource_covers(
            "https://mcp.example.com/other/mcp",
            server
        ));
        assert!(!resource_covers(
            "https://api.example.com/tenant/mcp",
            server
        ));
        assert!(!resource_covers(
            "http://mcp.example.com/tenant/mcp",
            server
        ));
        assert!(!resource_covers("not a url", server));
    }

    #[test]
    fn metadata_is_looked_for_at_the_path_then_the_origin() {
        assert_eq!(
            well_known(
                "https://as.example/tenant/1",
                "oauth-authorization-server",
                false
            ),
            vec![
                "https://as.example/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            well_known("https://as.example/t", "openid-configuration", true),
            vec![
                "https://as.example/.well-known/openid-configuration/t",
                "https://as.example/t/.well-known/openid-configuration",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            well_known("https://as.example", "oauth-authorization-server", false),
            vec!["https://as.example/.well-known/oauth-authorization-server"]
        );
    }
}
