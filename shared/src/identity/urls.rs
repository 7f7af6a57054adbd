//! Personal, delegated and temporary MCP URLs (B1-B4): bearer secrets in the path.
//!
//! Owns minting (a personal URL is reused until it expires, B1; a grantee's delegated
//! URL on a share is their own, bound to owner, grantee and permission, reused the same
//! way and revoked with the share, B2; a temporary one lives ten minutes and carries a
//! session id and an agent name, B3), revocation, and lookup by hash. The secret is
//! stored only as a hash, plus a sealed copy for re-issue; it never reaches a log line
//! (B4).
//!
//! Delegated and temporary URLs carry their holder's token epoch:
//! the grantee's, or the temporary URL's user's. Lookup reads the holder's token state
//! and refuses a grant from an older epoch, so the holder's sign-out everywhere, password
//! change or reset, and account deletion end them with everything else. (The personal
//! URL is deleted outright by those remedies.)

use std::sync::Arc;

use super::seal::Sealer;
use super::secret::{PERSONAL_SECRET_BYTES, TEMPORARY_SECRET_BYTES, random_secret, secret_hash};
use crate::domain::{PersonalUrl, TokenState, UrlGrant};
use crate::store::{Store, StoreError};

/// B1: one year.
pub(crate) const PERSONAL_URL_SECS: u64 = 365 * 24 * 3600;
/// B3: ten minutes.
pub(crate) const TEMPORARY_URL_SECS: u64 = 600;

pub(crate) struct McpUrls {
    pub store: Arc<dyn Store>,
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

    /// A fresh secret and the claim that would store it, sealed under `binding`, at the
    /// holder's token `epoch`.
    fn candidate(&self, binding: &str, epoch: u64, now: u64) -> (String, PersonalUrl) {
        let secret = random_secret(PERSONAL_SECRET_BYTES);
        let candidate = PersonalUrl {
            sealed_secret: self.sealer.seal(secret.as_bytes(), binding),
            secret_hash: secret_hash(&secret),
            expires_at: now + PERSONAL_URL_SECS,
            epoch,
        };
        (secret, candidate)
    }

    /// The holder's current token epoch (what a new grant is stamped with).
    async fn epoch_of(&self, holder: &str) -> Result<u64, StoreError> {
        Ok(self.store.token_state(holder).await?.epoch)
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
        // The personal URL is deleted by every remedy, so its epoch is not checked.
        let (secret, candidate) = self.candidate(&binding, 0, now);
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
        let epoch = self.epoch_of(grantee).await?;
        let (secret, candidate) = self.candidate(&binding, epoch, now);
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

    /// Whether the grantee holds a live delegated URL on `owner`'s data (one from
    /// before the grantee's last sign-out everywhere is not).
    pub(crate) async fn delegated_active(
        &self,
        owner: &str,
        grantee: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let Some(url) = self.store.share_url(owner, grantee, now).await? else {
            return Ok(false);
        };
        let state = self.store.token_state(grantee).await?;
        Ok(!ended(&state, url.epoch))
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
            epoch: self.epoch_of(user_id).await?,
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
        // A temporary URL and a delegated URL's grantee cannot be found by user when the
        // holder ends everything (their items are keyed by the secret's hash): the
        // holder's token state refuses them here (a newer epoch, or the deleted account's
        // tombstone), one more read for these kinds only.
        let holder = match (&grant.delegation, &grant.session_id) {
            (Some(delegation), _) => Some(delegation.grantee.as_str()),
            (None, Some(_)) => Some(grant.user_id.as_str()),
            (None, None) => None,
        };
        if let Some(holder) = holder
            && ended(&self.store.token_state(holder).await?, grant.epoch)
        {
            return Ok(None);
        }
        Ok(Some(grant))
    }

    /// The user's temporary URLs that still resolve (`grants` as the store lists them,
    /// live at their expiry): those from before the user's current epoch are dropped.
    pub(crate) async fn still_valid(
        &self,
        user_id: &str,
        grants: Vec<(String, UrlGrant)>,
    ) -> Result<Vec<(String, UrlGrant)>, StoreError> {
        if grants.is_empty() {
            return Ok(grants);
        }
        let state = self.store.token_state(user_id).await?;
        Ok(grants
            .into_iter()
            .filter(|(_, grant)| !ended(&state, grant.epoch))
            .collect())
    }
}

/// Whether a grant stamped with `epoch` is ended by its holder's token `state`: a newer
/// epoch (sign-out everywhere, a password change or reset), or the account deleted.
fn ended(state: &TokenState, epoch: u64) -> bool {
    state.deleted() || state.epoch > epoch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_ends_when_its_holder_moves_to_a_newer_epoch_or_is_deleted() {
        let at = |epoch| TokenState {
            epoch,
            ..TokenState::default()
        };
        assert!(!ended(&at(0), 0), "never revoked");
        assert!(!ended(&at(2), 2), "made at the current epoch");
        assert!(ended(&at(3), 2), "made before a sign-out everywhere");
        assert!(
            !ended(&at(2), 3),
            "a later epoch than the state read (a race) stands"
        );
        let deleted = at(TokenState::DELETED_EPOCH);
        assert!(
            ended(&deleted, TokenState::DELETED_EPOCH),
            "deleted account"
        );
    }
}
