//! Who a client is: a registered client from the store, or a client whose id is the
//! https URL of its Client ID Metadata Document, fetched through the address guard; and
//! the rules a client's redirect URIs and display name must meet.
//!
//! Fetched metadata documents are cached per process ([`DocumentCache`]): bounded in
//! entries, each kept for its `Cache-Control: max-age` within a floor and a ceiling, and a
//! failed fetch kept a minute, so a dead or hostile URL is not fetched on every request.
//!
//! Does not authenticate a client (the token endpoint does) and never logs a secret.

use std::collections::HashMap;
use std::sync::Mutex;

use http::HeaderMap;
use http::header::CACHE_CONTROL;
use serde_json::Value;

use super::{IDLE_CLIENT_SECS, OAuthApi};
use crate::domain::OAuthClient;
use crate::identity::shown_name;
use crate::store::StoreError;

/// Fetching a client's metadata document: time and size bounds.
const CIMD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const CIMD_MAX_BYTES: usize = 64 * 1024;

/// How many metadata documents the cache holds; the oldest goes out first.
const CACHE_ENTRIES: usize = 1024;
/// A fetched document is kept at least this long (also for `no-store` or no `max-age`)...
const CACHE_MIN_SECS: u64 = 5 * 60;
/// ...and at most this long, whatever its `max-age`.
const CACHE_MAX_SECS: u64 = 24 * 3600;
/// A failed fetch (unreachable, refused by the guard, not a valid document) is kept this long.
const CACHE_FAILURE_SECS: u64 = 60;

/// How long to keep a fetched document: its `Cache-Control: max-age` within
/// [`CACHE_MIN_SECS`]..=[`CACHE_MAX_SECS`]; `no-store`, `no-cache` or no `max-age` mean
/// the minimum.
fn document_lifetime(headers: &HeaderMap) -> u64 {
    let mut max_age = None;
    for value in headers.get_all(CACHE_CONTROL) {
        let Ok(value) = value.to_str() else {
            return CACHE_MIN_SECS;
        };
        for directive in value.split(',').map(str::trim) {
            let lower = directive.to_ascii_lowercase();
            if lower == "no-store" || lower == "no-cache" {
                return CACHE_MIN_SECS;
            }
            if let Some(seconds) = lower.strip_prefix("max-age=") {
                max_age = seconds.trim_matches('"').parse::<u64>().ok().or(max_age);
            }
        }
    }
    max_age
        .unwrap_or(CACHE_MIN_SECS)
        .clamp(CACHE_MIN_SECS, CACHE_MAX_SECS)
}

struct Cached {
    /// `None`: the fetch failed.
    client: Option<OAuthClient>,
    stored_at: u64,
    expires_at: u64,
}

/// Fetched Client ID Metadata Documents (and failed fetches), by URL, per process.
pub(super) struct DocumentCache {
    entries: Mutex<HashMap<String, Cached>>,
    capacity: usize,
}

impl DocumentCache {
    pub(super) fn new() -> Self {
        Self::with_capacity(CACHE_ENTRIES)
    }

    fn with_capacity(capacity: usize) -> Self {
        DocumentCache {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// The cached outcome for `url` if still fresh at `now`: `Some(None)` is a cached failure.
    fn get(&self, url: &str, now: u64) -> Option<Option<OAuthClient>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(url)
            .filter(|cached| now < cached.expires_at)
            .map(|cached| cached.client.clone())
    }

    /// Keeps `client` (or a failure) for `seconds`; when full, expired entries go out,
    /// then the oldest.
    fn put(&self, url: &str, client: Option<OAuthClient>, now: u64, seconds: u64) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.contains_key(url) && entries.len() >= self.capacity {
            entries.retain(|_, cached| now < cached.expires_at);
            while entries.len() >= self.capacity {
                let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, cached)| cached.stored_at)
                    .map(|(key, _)| key.clone())
                else {
                    break;
                };
                entries.remove(&oldest);
            }
        }
        entries.insert(
            url.to_string(),
            Cached {
                client,
                stored_at: now,
                expires_at: now.saturating_add(seconds),
            },
        );
    }
}

/// A client's redirect URIs (registered or in its metadata document): 1 to 10, each
/// acceptable.
pub(super) fn acceptable_redirects(uris: &[String]) -> bool {
    (1..=10).contains(&uris.len()) && uris.iter().all(|u| acceptable_redirect(u))
}

/// At most this many characters of a client's self-given name are kept and shown.
pub(super) const CLIENT_NAME_CHARS: usize = 100;

/// A client's display name from its metadata, without hidden or control characters
/// (`shown_name`), at most 100 characters.
pub(super) fn client_name(metadata: &Value) -> Option<String> {
    metadata
        .get("client_name")
        .and_then(Value::as_str)
        .and_then(|n| shown_name(n, CLIENT_NAME_CHARS))
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
        self.store.client(client_id, self.clock.now()).await
    }

    /// A registered client authenticated at the token endpoint is in use: its lapse time
    /// moves to [`IDLE_CLIENT_SECS`] from now, written at most once a day per client.
    pub(super) async fn keep_client(&self, client: &OAuthClient) {
        let now = self.clock.now();
        let Some(expires_at) = client.expires_at else {
            return;
        };
        if expires_at >= (now + IDLE_CLIENT_SECS).saturating_sub(24 * 3600) {
            return;
        }
        if let Err(e) = self
            .store
            .extend_client(&client.client_id, now + IDLE_CLIENT_SECS)
            .await
        {
            // The request goes on: the client stays registered until its old lapse time.
            tracing::warn!(error = %e, "could not extend a client's registration");
        }
    }

    /// The client of the metadata document at `url`, from the cache while fresh.
    async fn client_metadata_document(&self, url: &str) -> Option<OAuthClient> {
        let now = self.clock.now();
        if let Some(cached) = self.documents.get(url, now) {
            return cached;
        }
        let (client, seconds) = match self.fetch_client_metadata_document(url).await {
            Some((client, seconds)) => (Some(client), seconds),
            None => (None, CACHE_FAILURE_SECS),
        };
        self.documents.put(url, client.clone(), now, seconds);
        client
    }

    /// Fetches and checks the document at `url`; with how long it may be kept.
    async fn fetch_client_metadata_document(&self, url: &str) -> Option<(OAuthClient, u64)> {
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
        let client = OAuthClient {
            client_id: url.to_string(),
            secret_hash: None,
            redirect_uris,
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            token_endpoint_auth_method: "none".into(),
            client_name: client_name(&doc),
            created_at: self.clock.now(),
            expires_at: None,
        };
        Some((client, document_lifetime(&response.headers)))
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

    fn cache_control(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CACHE_CONTROL, value.parse().unwrap());
        headers
    }

    #[test]
    fn a_document_is_kept_for_its_max_age_within_the_floor_and_ceiling() {
        assert_eq!(document_lifetime(&HeaderMap::new()), CACHE_MIN_SECS);
        assert_eq!(
            document_lifetime(&cache_control("public, max-age=3600")),
            3600
        );
        assert_eq!(
            document_lifetime(&cache_control("max-age=0")),
            CACHE_MIN_SECS
        );
        assert_eq!(
            document_lifetime(&cache_control("max-age=10")),
            CACHE_MIN_SECS
        );
        assert_eq!(
            document_lifetime(&cache_control("max-age=99999999")),
            CACHE_MAX_SECS
        );
        assert_eq!(
            document_lifetime(&cache_control("no-store, max-age=3600")),
            CACHE_MIN_SECS
        );
        assert_eq!(
            document_lifetime(&cache_control("No-Cache")),
            CACHE_MIN_SECS
        );
        assert_eq!(
            document_lifetime(&cache_control("max-age=junk")),
            CACHE_MIN_SECS
        );
    }

    fn client(id: &str) -> OAuthClient {
        OAuthClient {
            client_id: id.into(),
            secret_hash: None,
            redirect_uris: vec!["https://app.example.com/cb".into()],
            grant_types: vec![],
            token_endpoint_auth_method: "none".into(),
            client_name: None,
            created_at: 0,
            expires_at: None,
        }
    }

    #[test]
    fn entries_and_failures_expire_on_the_clock() {
        use crate::clock::{Clock, FakeClock};
        let clock = FakeClock::at(1_000);
        let cache = DocumentCache::new();
        let a = "https://a.example/client.json";
        let dead = "https://dead.example/client.json";
        assert_eq!(cache.get(a, clock.now()), None, "nothing cached yet");
        cache.put(a, Some(client(a)), clock.now(), CACHE_MIN_SECS);
        cache.put(dead, None, clock.now(), CACHE_FAILURE_SECS);
        assert_eq!(cache.get(a, clock.now()), Some(Some(client(a))));
        assert_eq!(
            cache.get(dead, clock.now()),
            Some(None),
            "a failure is cached"
        );
        clock.advance(CACHE_FAILURE_SECS);
        assert_eq!(
            cache.get(dead, clock.now()),
            None,
            "a failure expires first"
        );
        assert_eq!(cache.get(a, clock.now()), Some(Some(client(a))));
        clock.advance(CACHE_MIN_SECS - CACHE_FAILURE_SECS);
        assert_eq!(cache.get(a, clock.now()), None, "a document expires");
    }

    #[test]
    fn the_cache_is_bounded_and_the_oldest_goes_out() {
        let cache = DocumentCache::with_capacity(2);
        cache.put("https://1", Some(client("https://1")), 10, 3600);
        cache.put("https://2", Some(client("https://2")), 11, 3600);
        cache.put("https://3", None, 12, 60);
        assert_eq!(cache.get("https://1", 12), None, "the oldest went out");
        assert!(cache.get("https://2", 12).is_some());
        assert_eq!(cache.get("https://3", 12), Some(None));
        assert_eq!(cache.entries.lock().unwrap().len(), 2);
        // Refreshing an entry already there evicts nothing.
        cache.put("https://2", Some(client("https://2")), 13, 3600);
        assert!(cache.get("https://3", 13).is_some());
    }
}
