//! Personal, delegated and temporary MCP URLs (B1-B4): bearer secrets in the path.
//!
//! Owns minting (a personal URL is reused until it expires, B1; a grantee's delegated
//! URL on a share is their own, bound to owner, grantee and permission, reused the same
//! way and revoked with the share, B2; a temporary one lives ten minutes and carries a
//! session id and an agent name, B3), revocation, and lookup by hash. The secret is
//! stored only as a hash, plus a sealed copy for re-issue; it never reaches a log line
//! (B4).

use std::sync::Arc;

use super::seal::Sealer;
use super::secret::{PERSONAL_SECRET_BYTES, TEMPORARY_SECRET_BYTES, random_secret, secret_hash};
use crate::domain::{PersonalUrl, UrlGrant};
use crate::store::{AccountStore, StoreError};

/// B1: one year.
pub(crate) const PERSONAL_URL_SECS: u64 = 365 * 24 * 3600;
/// B3: ten minutes.
pub(crate) const TEMPORARY_URL_SECS: u64 = 600;

pub(crate) struct McpUrls {
    pub store: Arc<dyn AccountStore>,
    pub sealer: Arc<Sealer>,
    /// `<public origin><prefix>`; URLs are `<base>/mcp/<secret>`.
    pub base: String,
}

fn binding(user_id: &str) -> String {
    format!("personal-url:{user_id}")
}

/// A delegated URL's seal binding: owner and grantee (the owner's length first, so no
/// pair of ids reads as another).
fn delegated_binding(owner: &str, grantee: &str) -> String {
    format!("share-url:{}:{owner}:{grantee}", owner.len())
}

impl McpUrls {
    fn url(&self, secret: &str) -> String {
        format!("{}/mcp/{secret}", self.base)
    }

    /// A fresh secret and the claim that would store it, sealed under `binding`.
    fn candidate(&self, binding: &str, now: u64) -> (String, PersonalUrl) {
        let secret = random_secret(PERSONAL_SECRET_BYTES);
        let candidate = PersonalUrl {
            sealed_secret: self.sealer.seal(secret.as_bytes(), binding),
            secret_hash: secret_hash(&secret),
            expires_at: now + PERSONAL_URL_SECS,
        };
        (secret, candidate)
    }

    /// The URL of the claim the store kept: the candidate's secret, or the kept one's,
    /// unsealed.
    fn kept_url(
        &self,
        kept: &PersonalUrl,
        candidate: &PersonalUrl,
        secret: &str,
        binding: &str,
    ) -> Result<String, StoreError> {
        if kept.secret_hash == candidate.secret_hash {
            return Ok(self.url(secret));
        }
        let opened = self
            .sealer
            .open(&kept.sealed_secret, binding)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| StoreError::Corrupt("a personal URL that does not unseal".into()))?;
        Ok(self.url(&opened))
    }

    /// The user's personal URL: the live one if there is one, else a new one.
    pub(crate) async fn personal(&self, user_id: &str, now: u64) -> Result<String, StoreError> {
        let binding = binding(user_id);
        let (secret, candidate) = self.candidate(&binding, now);
        let kept = self
            .store
            .claim_personal_url(user_id, &candidate, now)
            .await?;
        self.kept_url(&kept, &candidate, &secret, &binding)
    }

    /// B2: the grantee's own URL on `owner`'s data under their share of `permission`:
    /// the live one if there is one (asking again returns the same URL, as B1 does, so
    /// the grantee's clients keep working; DELETE then POST rotates it), else a new one.
    /// `None` when `owner` does not share `permission` with `grantee`.
    pub(crate) async fn delegated(
        &self,
        owner: &str,
        grantee: &str,
        permission: &str,
        now: u64,
    ) -> Result<Option<String>, StoreError> {
        let binding = delegated_binding(owner, grantee);
        let (secret, candidate) = self.candidate(&binding, now);
        let kept = self
            .store
            .claim_share_url(owner, grantee, permission, &candidate, now)
            .await?;
        kept.map(|kept| self.kept_url(&kept, &candidate, &secret, &binding))
            .transpose()
    }

    /// Revokes the grantee's delegated URL on `owner`'s data (the share stays).
    pub(crate) async fn revoke_delegated(
        &self,
        owner: &str,
        grantee: &str,
    ) -> Result<bool, StoreError> {
        self.store.revoke_share_url(owner, grantee).await
    }

    /// Whether the grantee holds a live delegated URL on `owner`'s data.
    pub(crate) async fn delegated_active(
        &self,
        owner: &str,
        grantee: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        Ok(self.store.share_url(owner, grantee, now).await?.is_some())
    }

    /// Revokes the personal URL; the next request mints a new one.
    pub(crate) async fn revoke(&self, user_id: &str) -> Result<bool, StoreError> {
        self.store.revoke_personal_url(user_id).await
    }

    /// B3: a ten-minute URL for one conversation and one agent. Other code (a chat
    /// backend, an agent runner) calls this to hand an agent its own MCP URL.
    pub(crate) async fn temporary(
        &self,
        user_id: &str,
        session_id: &str,
        agent_name: &str,
        now: u64,
    ) -> Result<String, StoreError> {
        let secret = random_secret(TEMPORARY_SECRET_BYTES);
        let grant = UrlGrant {
            user_id: user_id.into(),
            session_id: Some(session_id.into()),
            agent_name: Some(agent_name.into()),
            delegation: None,
            expires_at: now + TEMPORARY_URL_SECS,
        };
        self.store
            .put_url_grant(&secret_hash(&secret), &grant)
            .await?;
        Ok(self.url(&secret))
    }

    /// The grant behind a URL secret, if it is live.
    pub(crate) async fn grant(
        &self,
        secret: &str,
        now: u64,
    ) -> Result<Option<UrlGrant>, StoreError> {
        let Some(grant) = self.store.url_grant(&secret_hash(secret), now).await? else {
            return Ok(None);
        };
        // A temporary URL and a delegated URL's grantee cannot be found by user when an
        // account is deleted (their items are keyed by the secret's hash): the deleted
        // account's tombstone refuses them here, one more read for these kinds only.
        let holder = match (&grant.delegation, &grant.session_id) {
            (Some(delegation), _) => Some(delegation.grantee.as_str()),
            (None, Some(_)) => Some(grant.user_id.as_str()),
            (None, None) => None,
        };
        if let Some(holder) = holder
            && self.store.token_state(holder).await?.deleted()
        {
            return Ok(None);
        }
        Ok(Some(grant))
    }
}
