//! Per-source quotas on the doors that create things (client registrations, accounts):
//! N per window per source address, counted in the store so they hold across Lambda
//! instances, keyed by a hash of the address (never the address itself).
//!
//! Owns only the counting rule; the caller decides what a refusal looks like.

use std::net::IpAddr;

use super::{counter_hash, source_key};
use crate::store::{AccountStore, StoreError, window};

/// At most `allowed` events per source in a window of `window_secs`: this window and
/// the one before together, so a burst across the boundary counts whole.
pub(crate) struct Quota {
    /// The counter's kind, part of its key (`register-ip`, `signup-ip`).
    pub kind: &'static str,
    pub allowed: u32,
    pub window_secs: u64,
}

impl Quota {
    /// Counts one event from `source`; `Some(retry_after_secs)` if that went over.
    pub(crate) async fn spend(
        &self,
        store: &dyn AccountStore,
        source: IpAddr,
        now: u64,
    ) -> Result<Option<u64>, StoreError> {
        self.spend_on(store, &source_key(source), now).await
    }

    /// Counts one event for `value` (an address, an account: the mail limits);
    /// `Some(retry_after_secs)` if that went over. The key is a hash of `value`.
    pub(crate) async fn spend_on(
        &self,
        store: &dyn AccountStore,
        value: &str,
        now: u64,
    ) -> Result<Option<u64>, StoreError> {
        let key = counter_hash(self.kind, value);
        let previous = now.saturating_sub(self.window_secs);
        let (count, before) = futures_util::future::try_join(
            store.count_event(&key, self.window_secs, now),
            store.event_count(&key, self.window_secs, previous),
        )
        .await?;
        if count + before <= self.allowed {
            return Ok(None);
        }
        // Clear once the sum of the next two windows is under the quota.
        let (_, mut end) = window(self.window_secs, now);
        if count > self.allowed {
            end += self.window_secs;
        }
        Ok(Some(end.saturating_sub(now).max(1)))
    }
}
