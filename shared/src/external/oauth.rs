//! Signing in to a person's OAuth-protected MCP server, and keeping the tokens fresh.
//!
//! Owns the flow's state and the token set: [`ExternalServers::begin_sign_in`]
//! discovers the server's authorization server, registers this gateway as a public
//! client, and answers the authorization URL (PKCE S256, `state`, `resource`); the
//! pending sign-in (verifier, client, endpoints, account, server, expiry) travels sealed
//! in `state` itself, so nothing is stored until the callback. [`ExternalServers::finish_sign_in`]
//! opens it, checks it is the same person's, exchanges the code, seals the token set on
//! the server's record (bound to the account and the url, as every credential), and
//! lists the server's tools. [`ExternalServers::auth_headers`] refreshes an access token
//! before it expires (rotating the refresh token); a refused refresh drops the token
//! set, which is what "needs sign-in" is ([`McpServerRecord::awaits_sign_in`]).
//!
//! Every outbound request goes through `remote::oauth_client` (the address guard).
//! Must not: log, return or show a token or the verifier; let one person's state open
//! for another.

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::credentials;
use super::probe;
use super::{ExternalServers, RegistryError};
use crate::domain::{McpAuth, McpServerRecord};
use crate::identity::{Caller, Sealer, random_secret};
use crate::remote::oauth_client::{self, IssuedTokens, TokenFailure};

/// How long a person has between starting a sign-in and coming back with its code.
const PENDING_SECS: u64 = 600;

/// An access token is refreshed when less than this is left of it.
const REFRESH_MARGIN_SECS: u64 = 60;

/// A refresh claim lasts the token request's budget and this much more.
const CLAIM_SLACK_SECS: u64 = 5;

// A claim left to lapse (won after another's refresh) lapses before the token set it
// found is due again: the longest token request and the slack are under the margin.
const _: () = assert!(super::CONNECT_BUDGET.as_secs() + CLAIM_SLACK_SECS < REFRESH_MARGIN_SECS);

/// How often a caller waiting on another's refresh reads the stored sign-in.
const CLAIM_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What the model and the registry are told of a server awaiting its person's sign-in.
pub(crate) const NEEDS_SIGN_IN: &str = "needs sign-in";

/// The sealed token set of an OAuth server (the record's sealed credential).
#[derive(Serialize, Deserialize)]
pub(super) struct Grant {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Epoch seconds the access token stops being used (`None`: the server said nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    pub token_endpoint: String,
    pub client_id: String,
    pub resource: String,
}

impl Grant {
    /// Whether the access token is to be refreshed before its use at `now`.
    fn due(&self, now: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now.saturating_add(REFRESH_MARGIN_SECS))
    }

    /// The request headers of its access token.
    fn headers(&self) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::AUTHORIZATION,
            credentials::bearer(self.access_token.as_bytes())?,
        );
        Ok(headers)
    }
}

/// A sign-in under way, sealed into the `state` parameter.
#[derive(Serialize, Deserialize)]
struct Pending {
    user: String,
    server: String,
    url: String,
    verifier: String,
    client_id: String,
    token_endpoint: String,
    resource: String,
    redirect_uri: String,
    expires_at: u64,
}

fn grant_binding(user: &str, url: &str) -> String {
    format!("mcp-oauth-grant:v1:{user}\n{url}")
}

const PENDING_BINDING: &str = "mcp-oauth-pending:v1";

/// The record's token set, opened. An error says why in words, never a token.
pub(super) fn open_grant(
    sealer: &Sealer,
    user: &str,
    record: &McpServerRecord,
) -> Result<Grant, String> {
    let sealed = record
        .sealed_credential
        .as_deref()
        .ok_or_else(|| NEEDS_SIGN_IN.to_string())?;
    let plain = sealer
        .open(sealed, &grant_binding(user, &record.url))
        .ok_or("the stored sign-in cannot be opened; sign in to the server again")?;
    serde_json::from_slice(&plain).map_err(|_| "the stored sign-in is unreadable".to_string())
}

fn seal_grant(sealer: &Sealer, user: &str, url: &str, grant: &Grant) -> String {
    let plain = serde_json::to_vec(grant).unwrap_or_default();
    sealer.seal(&plain, &grant_binding(user, url))
}

fn expiry(tokens: &IssuedTokens, now: u64) -> Option<u64> {
    tokens.expires_in.map(|secs| now.saturating_add(secs))
}

fn pkce_challenge(verifier: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl ExternalServers {
    /// Starts the person's sign-in to their server `name` (an OAuth one, with a url):
    /// the authorization server's URL to send their browser to. `redirect_uri` is the
    /// console's callback.
    pub(crate) async fn begin_sign_in(
        &self,
        caller: &Caller,
        name: &str,
        redirect_uri: &str,
    ) -> Result<String, RegistryError> {
        let record = self.load(caller, name).await?;
        if !matches!(record.auth, McpAuth::OAuth) {
            return Err(RegistryError::bad_request(
                "this server is not set to sign in with OAuth (auth type OAUTH)",
            ));
        }
        if record.url.is_empty() {
            return Err(RegistryError::bad_request(
                "give the server its url before signing in",
            ));
        }
        let budget = self.probe_budget;
        let found = oauth_client::discover(&self.http, &record.url, budget)
            .await
            .map_err(|why| RegistryError::sign_in_failed(&why))?;
        let registration = found.registration_endpoint.as_deref().ok_or_else(|| {
            RegistryError::sign_in_failed("its authorization server offers no client registration")
        })?;
        let client_id =
            oauth_client::register_client(&self.http, registration, redirect_uri, budget)
                .await
                .map_err(|why| RegistryError::sign_in_failed(&why))?;
        let verifier = random_secret(32);
        let pending = Pending {
            user: caller.user_id.clone(),
            server: record.name.clone(),
            url: record.url.clone(),
            verifier: verifier.clone(),
            client_id: client_id.clone(),
            token_endpoint: found.token_endpoint.clone(),
            resource: found.resource.clone(),
            redirect_uri: redirect_uri.to_string(),
            expires_at: self.clock.now() + PENDING_SECS,
        };
        let plain = serde_json::to_vec(&pending).unwrap_or_default();
        let state = self.sealer.seal(&plain, PENDING_BINDING);
        let mut url = url::Url::parse(&found.authorization_endpoint).map_err(|_| {
            RegistryError::sign_in_failed("its authorization endpoint is not a URL")
        })?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce_challenge(&verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &found.resource);
            if let Some(scope) = &found.scope {
                query.append_pair("scope", scope);
            }
        }
        Ok(url.into())
    }

    /// Ends a sign-in the authorization server sent the person back from: the code
    /// exchanged (with the verifier of `state`, which must be this person's and fresh),
    /// the token set sealed on the record, its tools listed. The record as saved.
    pub(crate) async fn finish_sign_in(
        &self,
        caller: &Caller,
        code: &str,
        state: &str,
    ) -> Result<McpServerRecord, RegistryError> {
        let expired = || {
            RegistryError::bad_request(
                "this sign-in is not valid (it expired, or was started by someone else); \
                 start it again from the server's page",
            )
        };
        let pending: Pending = self
            .sealer
            .open(state, PENDING_BINDING)
            .and_then(|plain| serde_json::from_slice(&plain).ok())
            .ok_or_else(expired)?;
        let now = self.clock.now();
        if pending.user != caller.user_id || pending.expires_at < now {
            return Err(expired());
        }
        let mut record = self.load(caller, &pending.server).await?;
        if record.url != pending.url || !matches!(record.auth, McpAuth::OAuth) {
            return Err(expired());
        }
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", pending.redirect_uri.as_str()),
            ("client_id", pending.client_id.as_str()),
            ("code_verifier", pending.verifier.as_str()),
            ("resource", pending.resource.as_str()),
        ];
        let tokens = oauth_client::token_request(
            &self.http,
            &pending.token_endpoint,
            &form,
            self.probe_budget,
        )
        .await
        .map_err(|failure| RegistryError::sign_in_failed(&failure.to_string()))?;
        let grant = Grant {
            expires_at: expiry(&tokens, now),
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            token_endpoint: pending.token_endpoint,
            client_id: pending.client_id,
            resource: pending.resource,
        };
        record.sealed_credential = Some(seal_grant(
            &self.sealer,
            &caller.user_id,
            &record.url,
            &grant,
        ));
        if record.enabled {
            let headers = credentials::headers(&self.sealer, &caller.user_id, &record)
                .map_err(|why| RegistryError::sign_in_failed(&why))?;
            let seen = probe::probe(&self.http, &record.url, &headers, self.probe_budget).await?;
            self.apply_probe(&mut record, &seen, now);
        }
        record.last_connect_error = None;
        record.updated_at = now;
        self.replace(caller, &record).await?;
        Ok(record)
    }

    /// The headers that authenticate a request to `record`'s server; for an OAuth
    /// server, its access token, refreshed first when it is about to expire. A refused
    /// refresh drops the token set (the server then awaits sign-in) and says so.
    pub(super) async fn auth_headers(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<HeaderMap, String> {
        if !matches!(record.auth, McpAuth::OAuth) {
            return credentials::headers(&self.sealer, user, record);
        }
        let grant = open_grant(&self.sealer, user, record)?;
        let now = self.clock.now();
        if !grant.due(now) {
            return grant.headers();
        }
        // One refresh at a time in this process: a rotated refresh token used twice
        // would end the whole grant at most authorization servers.
        let _turn = self.refreshing.lock().await;
        // Across instances too (Lambda gives each request its own): one claimant spends
        // the refresh token, the others wait for the token set it keeps. The claim comes
        // before the read: keeping a refreshed token set releases the claim, so a claim
        // won after another request's refresh must read the set that refresh kept (read
        // first, the read could predate that refresh and spend its refresh token again).
        let claim_secs = self.connect_budget.as_secs() + CLAIM_SLACK_SECS;
        match self
            .store
            .claim_mcp_refresh(user, &record.name, now, now + claim_secs)
            .await
        {
            Ok(true) => {}
            Ok(false) => return self.refreshed_elsewhere(user, record, claim_secs).await,
            Err(error) => return Err(format!("its sign-in could not be renewed: {error}")),
        }
        let current = match self.store.mcp_server(user, &record.name).await {
            Ok(Some(current)) if current.url == record.url => current,
            Ok(_) => return Err("the server was removed".into()),
            Err(error) => return Err(format!("the stored sign-in could not be read: {error}")),
        };
        // Another request may have refreshed it before this one's claim. The claim is
        // then left to lapse: it lasts less than the refresh margin, so it has lapsed
        // before this token set is due.
        let grant = open_grant(&self.sealer, user, &current)?;
        if !grant.due(now) {
            return grant.headers();
        }
        let Some(refresh_token) = grant.refresh_token.as_deref() else {
            return self
                .needs_sign_in(user, current, "the access token expired")
                .await;
        };
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", grant.client_id.as_str()),
            ("resource", grant.resource.as_str()),
        ];
        match oauth_client::token_request(
            &self.http,
            &grant.token_endpoint,
            &form,
            self.connect_budget,
        )
        .await
        {
            Ok(tokens) => {
                let renewed = Grant {
                    expires_at: expiry(&tokens, now),
                    access_token: tokens.access_token,
                    // A server that does not rotate keeps the refresh token it gave.
                    refresh_token: tokens.refresh_token.or(grant.refresh_token),
                    token_endpoint: grant.token_endpoint,
                    client_id: grant.client_id,
                    resource: grant.resource,
                };
                let mut saved = current;
                saved.sealed_credential =
                    Some(seal_grant(&self.sealer, user, &saved.url, &renewed));
                // `updated_at` is kept: the tool listing cached for the server stays valid.
                if let Err(error) = self.store.replace_mcp_server(user, &saved).await {
                    tracing::warn!(%error, "could not keep a refreshed MCP sign-in");
                }
                renewed.headers()
            }
            Err(TokenFailure::Refused(why)) => {
                self.needs_sign_in(user, current, &format!("the refresh was refused ({why})"))
                    .await
            }
            Err(TokenFailure::Unreachable(why)) => {
                Err(format!("its sign-in could not be renewed: {why}"))
            }
        }
    }

    /// The token set another caller's refresh keeps (it holds the claim), waited for up
    /// to `secs` seconds: its headers, or why there are none.
    async fn refreshed_elsewhere(
        &self,
        user: &str,
        read: &McpServerRecord,
        secs: u64,
    ) -> Result<HeaderMap, String> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(CLAIM_POLL).await;
            let latest = match self.store.mcp_server(user, &read.name).await {
                Ok(Some(latest)) if latest.url == read.url => latest,
                Ok(_) => return Err("the server was removed".into()),
                Err(error) => return Err(format!("the stored sign-in could not be read: {error}")),
            };
            if latest.sealed_credential == read.sealed_credential {
                continue;
            }
            // Kept renewed, or dropped (the refresh was refused: it needs sign-in).
            let grant = open_grant(&self.sealer, user, &latest)?;
            return grant.headers();
        }
        Err("its sign-in is being renewed by another request; try again in a moment".into())
    }

    /// Drops a token set that no longer works: the server awaits its person's sign-in.
    async fn needs_sign_in(
        &self,
        user: &str,
        mut record: McpServerRecord,
        why: &str,
    ) -> Result<HeaderMap, String> {
        record.sealed_credential = None;
        record.last_connect_error = Some(format!("{NEEDS_SIGN_IN}: {why}"));
        record.updated_at = self.clock.now();
        if let Err(error) = self.store.replace_mcp_server(user, &record).await {
            tracing::warn!(%error, "could not mark an MCP server as needing sign-in");
        }
        self.cache.forget(user, &record.name);
        tracing::info!("an external MCP server's sign-in ended; it needs its person again");
        Err(format!("{NEEDS_SIGN_IN}: {why}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_s256_of_the_verifier() {
        // Worked out with Python: base64url(sha256(verifier)) without padding.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mJ0kDqCBj8V9X7QlJuA"),
            "zFGSNkraMmvkR4pBvLJDLRX4NreADvQs6Hv4qMV8Fjc"
        );
    }

    #[test]
    fn a_pending_sign_in_opens_only_as_what_it_was_sealed_for() {
        let sealer = Sealer::new(&[9; 32]);
        let mut record = credentials::tests::record(McpAuth::OAuth, None);
        assert!(record.awaits_sign_in());
        assert_eq!(
            open_grant(&sealer, "alice", &record).err().as_deref(),
            Some(NEEDS_SIGN_IN)
        );
        let grant = Grant {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(100),
            token_endpoint: "https://as.example.com/token".into(),
            client_id: "c".into(),
            resource: record.url.clone(),
        };
        let sealed = seal_grant(&sealer, "alice", &record.url, &grant);
        assert!(!sealed.contains("secret"));
        record.sealed_credential = Some(sealed);
        assert!(!record.awaits_sign_in());
        assert_eq!(
            open_grant(&sealer, "alice", &record).unwrap().access_token,
            "at-secret"
        );
        let headers = credentials::headers(&sealer, "alice", &record).unwrap();
        assert_eq!(headers[http::header::AUTHORIZATION], "Bearer at-secret");
        assert!(open_grant(&sealer, "mallory", &record).is_err());
        // A pending state is not a token set, nor the reverse.
        assert!(
            sealer
                .open(
                    record.sealed_credential.as_deref().unwrap(),
                    PENDING_BINDING
                )
                .is_none()
        );
    }
}
