//! Personal and temporary MCP URLs (B1-B4): bearer secrets in the path.
//!
//! Owns minting (a personal URL is reused until it expires, B1; a temporary one
//! lives ten minutes and carries a session id and an agent name, B3), revocation,
//! and lookup by hash. The secret is stored only as a hash, plus a sealed copy for
//! re-issue; it never reaches a log line (B4).

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

impl McpUrls {
    fn url(&self, secret: &str) -> String {
        format!("{}/mcp/{secret}", self.base)
    }

    /// The user's personal URL: the live one if there is one, else a new one.
    pub(crate) async fn personal(&self, user_id: &str, now: u64) -> Result<String, StoreError> {
        let secret = random_secret(PERSONAL_SECRET_BYTES);
        let candidate = PersonalUrl {
            sealed_secret: self.sealer.seal(secret.as_bytes(), &binding(user_id)),
            secret_hash: secret_hash(&secret),
            expires_at: now + PERSONAL_URL_SECS,
        };
        let kept = self
            .store
            .claim_personal_url(user_id, &candidate, now)
            .await?;
        if kept.secret_hash == candidate.secret_hash {
            return Ok(self.url(&secret));
        }
        let opened = self
            .sealer
            .open(&kept.sealed_secret, &binding(user_id))
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| StoreError::Corrupt("a personal URL that does not unseal".into()))?;
        Ok(self.url(&opened))
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
        self.store.url_grant(&secret_hash(secret), now).await
    }
}
