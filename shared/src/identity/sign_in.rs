//! Checking an e-mail and password against the stored account: the one sign-in check
//! shared by the account API, the OAuth consent page and `/mcplogin`, with its abuse
//! limits and the queue every password hash waits in.
//!
//! Limits: failed sign-ins are counted in fixed one-minute windows
//! in the store, per source (an IPv4 address, or the /64 an IPv6 address is in:
//! [`source_key`]), per e-mail, and per e-mail and source together; each counter is keyed
//! by a SHA-256 of its kind and value, never the raw value. Counted over this window and
//! the one before, an attempt is refused, with the seconds until that clears (at most two
//! minutes) and before the account is read or any Argon2 work is done, when
//! - its source has failed [`SIGN_IN_FAILURES`] times, for any addresses; or
//! - its e-mail has failed [`SIGN_IN_FAILURES`] times, from any sources, *and* this source
//!   has failed [`PAIR_FAILURES`] times for that e-mail.
//!
//! So a flood of wrong passwords for someone's address refuses the sources it comes
//! from, never the person: a source that has not failed for the address still signs in,
//! and so does the person's own signed-in session confirming its password (a password
//! change, deleting the account), from where they are. What this costs: a guesser with
//! many sources gets [`PAIR_FAILURES`] guesses per source per two minutes for one
//! address, each an Argon2id verification of a password of at least
//! [`MIN_PASSWORD`](super::MIN_PASSWORD) characters. A request without a source address
//! (none is known) falls back to the e-mail counter alone. A success resets no counter
//! (an attacker signing in to an account of their own must not clear their source's
//! count; a person who mistyped waits at most the two minutes out).
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

/// Failed sign-ins per e-mail, and per source, in this window and the one before.
pub(crate) const SIGN_IN_FAILURES: u32 = 10;
/// Failed sign-ins for one e-mail from one source that, once the e-mail is over
/// [`SIGN_IN_FAILURES`], refuse that source for it.
pub(crate) const PAIR_FAILURES: u32 = 3;
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

    /// Seconds until the attempt may be made, if the counters refuse it now (the rule
    /// in the module doc).
    async fn limited(&self, counters: &Counters, now: u64) -> Result<Option<u64>, StoreError> {
        let keys = counters.keys();
        let counts = futures_util::future::try_join_all(
            keys.iter().map(|key| self.recent_failures(key, now)),
        )
        .await?;
        // When each refusing counter falls back under its limit.
        let over = |index: usize, limit: u32| counts.get(index).and_then(|c| c.over(limit));
        let refused_until = match counts.len() {
            // [email, source, pair]: the source alone, or the e-mail with the pair (until
            // the first of those two clears).
            3 => {
                let by_email = over(0, SIGN_IN_FAILURES)
                    .zip(over(2, PAIR_FAILURES))
                    .map(|(email, pair)| email.min(pair));
                over(1, SIGN_IN_FAILURES).max(by_email)
            }
            // No source known: the e-mail alone.
            _ => over(0, SIGN_IN_FAILURES),
        };
        Ok(refused_until.map(|clears| clears.saturating_sub(now).max(1)))
    }

    /// The failures counted under `key` in the window that holds `now` and the one
    /// before.
    async fn recent_failures(&self, key: &str, now: u64) -> Result<Recent, StoreError> {
        // This window and the one before: any burst within a minute falls in two
        // adjacent windows, so their sum catches one that straddles a boundary.
        let (_, end) = window(SIGN_IN_WINDOW_SECS, now);
        let previous = now.saturating_sub(SIGN_IN_WINDOW_SECS);
        let (current, before) = futures_util::future::try_join(
            self.store.event_count(key, SIGN_IN_WINDOW_SECS, now),
            self.store.event_count(key, SIGN_IN_WINDOW_SECS, previous),
        )
        .await?;
        Ok(Recent {
            current,
            before,
            end,
        })
    }

    async fn count_failure(&self, counters: &Counters, now: u64) -> Result<(), StoreError> {
        futures_util::future::try_join_all(
            counters
                .keys()
                .iter()
                .map(|key| self.store.count_event(key, SIGN_IN_WINDOW_SECS, now)),
        )
        .await?;
        Ok(())
    }
}

/// A counter's failures in this window and the one before, and when this window ends.
struct Recent {
    current: u32,
    before: u32,
    end: u64,
}

impl Recent {
    /// When the counter falls back under `limit`, if it is at or over it now: the end of
    /// this window, or of the next one when this window alone reaches it.
    fn over(&self, limit: u32) -> Option<u64> {
        if self.current + self.before < limit {
            return None;
        }
        Some(match self.current >= limit {
            true => self.end + SIGN_IN_WINDOW_SECS,
            false => self.end,
        })
    }
}

/// The counters a sign-in for `email` (normalised) from `source` counts in: the e-mail,
/// and when the source is known, the source and the pair.
struct Counters {
    email: String,
    source: Option<(String, String)>,
}

impl Counters {
    /// `[email]`, or `[email, source, pair]`.
    fn keys(&self) -> Vec<&str> {
        let mut keys = vec![self.email.as_str()];
        if let Some((source, pair)) = &self.source {
            keys.extend([source.as_str(), pair.as_str()]);
        }
        keys
    }
}

fn counters(email: &str, source: Option<IpAddr>) -> Counters {
    Counters {
        email: counter_hash("signin-email", email),
        source: source.map(|source| {
            let source = source_key(source);
            (
                counter_hash("signin-ip", &source),
                // The e-mail's length first, so no e-mail and source read as another pair.
                counter_hash("signin-pair", &format!("{}:{email}|{source}", email.len())),
            )
        }),
    }
}

/// What a per-source counter is keyed by: an IPv4 address as it
/// is (an IPv4-mapped IPv6 address as its IPv4 address), an IPv6 address by the /64 it
/// is in, which one subscriber is given whole.
pub(crate) fn source_key(source: IpAddr) -> String {
    match source {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_source_counts_per_64_and_a_mapped_ipv4_as_itself() {
        let key = |s: &str| source_key(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
    }
}
