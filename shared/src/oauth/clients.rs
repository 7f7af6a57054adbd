//! Who a client is: a registered client from the store, or a client whose id is the
//! https URL of its Client ID Metadata Document, fetched through the address guard; and
//! the rules a client's redirect URIs and display name must meet.
//!
//! Does not authenticate a client (the token endpoint does) and never logs a secret.

use serde_json::Value;

use super::OAuthApi;
use crate::domain::OAuthClient;
use crate::store::StoreError;

/// Fetching a client's metadata document: time and size bounds.
const CIMD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const CIMD_MAX_BYTES: usize = 64 * 1024;

/// A client's redirect URIs (registered or in its metadata document): 1 to 10, each
/// acceptable.
pub(super) fn acceptable_redirects(uris: &[String]) -> bool {
    (1..=10).contains(&uris.len()) && uris.iter().all(|u| acceptable_redirect(u))
}

/// A client's display name from its metadata, at most 100 characters.
pub(super) fn client_name(metadata: &Value) -> Option<String> {
    metadata
        .get("client_name")
        .and_then(Value::as_str)
        .map(|n| n.chars().take(100).collect())
}

/// The longest redirect URI a client may register, in bytes.
pub(super) const MAX_REDIRECT_URI: usize = 2000;

/// A redirect URI a client may register: absolute https, or http to a loopback host
/// (native apps, RFC 8252); never a fragment; at most [`MAX_REDIRECT_URI`] bytes.
fn acceptable_redirect(uri: &str) -> bool {
    if uri.len() > MAX_REDIRECT_URI {
        return false;
    }
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return false;
    }
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
        // Private-use schemes of native apps (`com.example.app:/callback`).
        scheme => scheme.contains('.'),
    }
}

impl OAuthApi {
    /// A registered client, or (Client ID Metadata Documents) a client whose id is the
    /// https URL of its metadata, fetched through the address guard like every outbound call.
    pub(super) async fn load_client(
        &self,
        client_id: &str,
    ) -> Result<Option<OAuthClient>, StoreError> {
        let dev = self.http.guard().policy().allows_insecure_loopback();
        if client_id.starts_with("https://") || (dev && client_id.starts_with("http://")) {
            return Ok(self.client_metadata_document(client_id).await);
        }
        self.store.client(client_id).await
    }

    async fn client_metadata_document(&self, url: &str) -> Option<OAuthClient> {
        let response = self
            .http
            .get(url, CIMD_TIMEOUT, CIMD_MAX_BYTES)
            .await
            .ok()?;
        if !response.status.is_success() {
            return None;
        }
        let doc: Value = serde_json::from_slice(&response.body).ok()?;
        if doc.get("client_id")?.as_str()? != url {
            return None;
        }
        let redirect_uris: Vec<String> = doc
            .get("redirect_uris")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        if !acceptable_redirects(&redirect_uris) {
            return None;
        }
        Some(OAuthClient {
            client_id: url.to_string(),
            secret_hash: None,
            redirect_uris,
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            token_endpoint_auth_method: "none".into(),
            client_name: client_name(&doc),
            created_at: self.clock.now(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_validated() {
        assert!(acceptable_redirect("https://app.example.com/callback"));
        assert!(acceptable_redirect("http://127.0.0.1:33418/callback"));
        assert!(acceptable_redirect("http://localhost/cb"));
        assert!(!acceptable_redirect("http://evil.example/cb"));
        assert!(!acceptable_redirect("https://app.example.com/cb#frag"));
        assert!(!acceptable_redirect("javascript:alert(1)"));
        assert!(!acceptable_redirect("not a url"));
    }
}
