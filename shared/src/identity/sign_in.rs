//! Checking an e-mail and password against the stored account: the one sign-in check
//! shared by the account API, the OAuth consent page and `/mcplogin`, with its abuse
//! limits and the queue every password hash waits in.
//!
//! Limits: failed sign-ins are counted per e-mail and per source address, each in
//! fixed one-minute windows in the store (keyed by a SHA-256 of `signin-email:<e-mail>`
//! or `signin-ip:<address>`, never the raw value). Once either counter holds
//! [`SIGN_IN_FAILURES`] in this window and the one before together, further attempts
//! are refused with the seconds until that clears (at most two minutes), before the
//! account is read or any Argon2 work is done. A success
//! resets neither counter (an attacker signing in to an account of their own must not
//! clear their source's count; a person who mistyped waits at most the minute out).
//!
//! Hashing: Argon2id takes 19 MiB per hash, so hashes and verifications wait for one
//! of a few permits (`MIROBODY_HASH_PERMITS`) instead of all allocating at once, and
//! each permit's working memory is kept and reused (at most one per permit).

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Semaphore;

use super::password::{Memory, hash_password_with, verify_password_with};
use super::secret::{random_secret, secret_hash};
use crate::clock::Clock;
use crate::store::{AccountStore, StoreError, window};

/// Failed sign-ins per e-mail, and per source address, in one window.
pub(crate) const SIGN_IN_FAILURES: u32 = 10;
/// The window the failures are counted in.
pub(crate) const SIGN_IN_WINDOW_SECS: u64 = 60;

/// An Argon2id hash of a random string, verified against when the e-mail is unknown.
/// Made once per process, on the first unknown e-mail.
static DUMMY_HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// What a sign-in attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SignIn {
    /// The password is the account's: its user id.
    Verified(String),
    /// Unknown e-mail or wrong password (counted).
    Wrong,
    /// Too many failures in this window: nothing was checked. Seconds until it ends.
    Limited(u64),
}

/// The storage key of an abuse counter: hex SHA-256 of `<kind>:<value>`.
pub(crate) fn counter_hash(kind: &str, value: &str) -> String {
    secret_hash(&format!("{kind}:{value}"))
}

/// Passwords: the sign-in check with its limits, and hashing for sign-up, both behind
/// one semaphore. Built once per process.
pub(crate) struct Passwords {
    store: Arc<dyn AccountStore>,
    clock: Arc<dyn Clock>,
    hashing: Semaphore,
    /// Working memory of the hashes not running now (at most one per permit).
    memory: Mutex<Vec<Memory>>,
}

impl Passwords {
    /// `permits`: how many hashes may run at once (at least one).
    pub(crate) fn new(store: Arc<dyn AccountStore>, clock: Arc<dyn Clock>, permits: usize) -> Self {
        Passwords {
            store,
            clock,
            hashing: Semaphore::new(permits.max(1)),
            memory: Mutex::new(Vec::new()),
        }
    }

    /// Runs `work` (Argon2) off the async workers once a permit is free, with working
    /// memory left by an earlier hash.
    async fn hashing<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Memory) -> T + Send + 'static,
    ) -> Option<T> {
        let _permit = self.hashing.acquire().await.ok()?;
        // Counted by the abuse tests (a refused attempt must not get here); no detail.
        tracing::debug!("argon2 run");
        let mut memory = self.pool().pop().unwrap_or_default();
        let (out, memory) = tokio::task::spawn_blocking(move || (work(&mut memory), memory))
            .await
            .ok()?;
        self.pool().push(memory);
        Some(out)
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Vec<Memory>> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A PHC hash of a new password; `None` if the hashing task failed.
    pub(crate) async fn hash(&self, password: String) -> Option<String> {
        self.hashing(move |memory| hash_password_with(&password, memory))
            .await
    }

    /// Checks `password` for the account of `email` (any case, surrounding spaces
    /// ignored), unless `email` or `source` is over its limit. An unknown e-mail costs
    /// one password verification too, so timing does not reveal which e-mails have
    /// accounts.
    pub(crate) async fn sign_in(
        &self,
        email: &str,
        password: &str,
        source: Option<IpAddr>,
    ) -> Result<SignIn, StoreError> {
        let email = email.trim().to_lowercase();
        let now = self.clock.now();
        let counters = counters(&email, source);
        if let Some(retry_after) = self.limited(&counters, now).await? {
            return Ok(SignIn::Limited(retry_after));
        }
        let account = self.store.account_by_email(&email).await?;
        let stored = account.as_ref().map(|a| a.password_hash.clone());
        let password = password.to_string();
        let verified = self
            .hashing(move |memory| {
                let hash = match &stored {
                    Some(hash) => hash,
                    None => DUMMY_HASH
                        .get_or_init(|| hash_password_with(&random_secret(16), &mut Memory::new())),
                };
                verify_password_with(&password, hash, memory)
            })
            .await
            .unwrap_or(false);
        match account.filter(|_| verified) {
            Some(account) => Ok(SignIn::Verified(account.user_id)),
            None => {
                self.count_failure(&counters, now).await?;
                Ok(SignIn::Wrong)
            }
        }
    }

    /// A sign-in that failed before the password was checked (a wrong `/mcplogin`
    /// user code): counted like a wrong password for `email` and `source`, unless they
    /// are over the limit already. Never [`SignIn::Verified`].
    pub(crate) async fn refuse(
        &self,
        email: &str,
        source: Option<IpAddr>,
    ) -> Result<SignIn, StoreError> {
        let email = email.trim().to_lowercase();
        let now = self.clock.now();
        let counters = counters(&email, source);
        if let Some(retry_after) = self.limited(&counters, now).await? {
            return Ok(SignIn::Limited(retry_after));
        }
        self.count_failure(&counters, now).await?;
        Ok(SignIn::Wrong)
    }

    /// Seconds until the first of `counters` over the limit clears, if any is.
    async fn limited(&self, counters: &[String], now: u64) -> Result<Option<u64>, StoreError> {
        // This window and the one before: any ten failures within a minute fall in two
        // adjacent windows, so their sum catches a burst that straddles a boundary.
        let (_, end) = window(SIGN_IN_WINDOW_SECS, now);
        let previous = now.saturating_sub(SIGN_IN_WINDOW_SECS);
        let counts = futures_util::future::try_join_all(counters.iter().flat_map(|key| {
            [
                self.store.event_count(key, SIGN_IN_WINDOW_SECS, now),
                self.store.event_count(key, SIGN_IN_WINDOW_SECS, previous),
            ]
        }))
        .await?;
        let mut until = None;
        for pair in counts.chunks(2) {
            let (current, before) = (pair[0], pair[1]);
            if current + before >= SIGN_IN_FAILURES {
                // Clear once the sum of the next two windows is under the limit.
                let clears = if current >= SIGN_IN_FAILURES {
                    end + SIGN_IN_WINDOW_SECS
                } else {
                    end
                };
                until = until.max(Some(clears));
            }
        }
        Ok(until.map(|clears| clears.saturating_sub(now).max(1)))
    }

    async fn count_failure(&self, counters: &[String], now: u64) -> Result<(), StoreError> {
        futures_util::future::try_join_all(
            counters
                .iter()
                .map(|key| self.store.count_event(key, SIGN_IN_WINDOW_SECS, now)),
        )
        .await?;
        Ok(())
    }
}

/// The counters a sign-in for `email` (normalised) from `source` counts in.
fn counters(email: &str, source: Option<IpAddr>) -> Vec<String> {
    let mut counters = vec![counter_hash("signin-email", email)];
    if let Some(source) = source {
        counters.push(counter_hash("signin-ip", &source.to_string()));
    }
    counters
}
