//! The login prompt (A7 step 3, C4): what an anonymous call to a tool that needs a
//! user gets instead of an error. Creates a ten-minute device-login state that
//! `/oauth2/check_state/{state}` answers, and a `/mcplogin` link built from the
//! public URL. The poll that answers it is here too.
//!
//! Limits: every prompt stores a state, so a source address may
//! start at most [`LOGIN_STATES_PER_SOURCE`] of them in a fixed ten-minute window (a
//! state's lifetime; counted in the store like failed sign-ins, keyed by a hash of
//! `login-ip:<address>`), so at most twice that many are live per source; past it the
//! call answers a [`PromptRefused::Limited`] with the seconds until the window ends, and
//! nothing is stored. Each prompt also purges expired rows from the store (bounded work;
//! the embedded store's, DynamoDB's TTL does its own).
//!
//! Must not log or show a state's token to anyone but its poller.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::Sealer;
use super::secret::{hashes_match, normalise_user_code, random_secret, secret_hash, user_code};
use super::shown::shown_name;
use super::sign_in::{counter_hash, source_key};
use crate::clock::Clock;
use crate::domain::{LoginState, LoginStatus};
use crate::http::{self as web, ApiError};
use crate::store::{Store, StoreError, window};

/// How long the browser step may take.
pub(crate) const LOGIN_STATE_SECS: u64 = 600;
/// Login states one source address may start in one window of [`LOGIN_STATE_SECS`]:
/// a person retrying, or several behind one address, stays far
/// below it.
pub(crate) const LOGIN_STATES_PER_SOURCE: u32 = 30;

/// Why no prompt was made.
#[derive(Debug)]
pub(crate) enum PromptRefused {
    /// The source started [`LOGIN_STATES_PER_SOURCE`] in this window: seconds until it ends.
    Limited(u64),
    Store(StoreError),
}

impl From<StoreError> for PromptRefused {
    fn from(error: StoreError) -> Self {
        PromptRefused::Store(error)
    }
}
/// How often the client should poll, and for how long (seconds).
pub(super) const POLL_INTERVAL: u64 = 10;
pub(super) const POLL_MAX_WAIT: u64 = 300;

pub(crate) struct LoginPrompts {
    pub store: Arc<dyn Store>,
    /// The public origin (C4): no prefix, no trailing slash.
    pub origin: String,
}

fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The hash a login state keeps of its user code: bound to the state, so a leaked
/// row's hash cannot be matched against the few billion codes without the state.
pub(crate) fn user_code_hash(state: &str, typed: &str) -> String {
    secret_hash(&format!("user-code|{state}|{}", normalise_user_code(typed)))
}

/// At most this many characters of a client's self-given name are kept.
const CLIENT_NAME_CHARS: usize = 64;

impl LoginPrompts {
    /// The prompt, shaped as the original Python server's: `authorization_url`,
    /// `auto_open_browser` and an `auto_polling` block (docs/REQUIREMENTS.md, A7).
    ///
    /// Phishing-resistant: the link carries only the state; the
    /// poll also needs `auto_polling.poll_secret`, which only this answer (to the
    /// initiating client) holds; and the page completes the login only with the
    /// `user_code` this client shows its user. Only hashes of both are stored.
    /// `client_name`: what the client called itself (`clientInfo.name`), shown on the
    /// page. `source`: the request's address, whose prompts are limited (see the module).
    pub(crate) async fn prompt(
        &self,
        now: u64,
        client_name: Option<&str>,
        source: Option<IpAddr>,
    ) -> Result<Value, PromptRefused> {
        if let Some(source) = source {
            let key = counter_hash("login-ip", &source_key(source));
            let started = self.store.count_event(&key, LOGIN_STATE_SECS, now).await?;
            if started > LOGIN_STATES_PER_SOURCE {
                let (_, end) = window(LOGIN_STATE_SECS, now);
                return Err(PromptRefused::Limited(end.saturating_sub(now).max(1)));
            }
        }
        // Bounded, and a failure costs nothing but the purge.
        if let Err(error) = self.store.purge_expired(now).await {
            tracing::warn!(%error, "expired rows not purged");
        }
        let state = random_secret(24);
        let poll_secret = random_secret(32);
        let user_code = user_code();
        let client_name = client_name.and_then(|name| shown_name(name, CLIENT_NAME_CHARS));
        let record = LoginState {
            status: LoginStatus::Pending,
            expires_at: now + LOGIN_STATE_SECS,
            created_at: now,
            client_name,
            poll_secret_hash: secret_hash(&poll_secret),
            user_code_hash: user_code_hash(&state, &user_code),
        };
        // Stored under its hash: a leaked store row or key list
        // cannot be polled or completed.
        self.store
            .put_login_state(&secret_hash(&state), &record)
            .await?;
        let oauth_params = format!(
            "response_type=code&client_id=mcp-login&redirect_uri={}&scope={}&state={state}",
            encode("urn:ietf:wg:oauth:2.0:oob"),
            encode("openid profile mcp:tools"),
        );
        let url = format!(
            "{}/mcplogin?oauth_params={}",
            self.origin,
            encode(&oauth_params)
        );
        let poll_url = format!(
            "{}/oauth2/check_state/{state}?poll_secret={poll_secret}",
            self.origin
        );
        Ok(json!({
            "success": true,
            "message": format!("Sign in to let this tool read your data. Open the link, sign in, and enter the code {user_code} when the page asks for it; then repeat the request. If you are asked to sign in again after you did, your app cannot collect this sign-in: connect it with your personal MCP URL instead, from Connect your AI at {}/console/connect (it needs no sign-in).", self.origin),
            "authorization_url": url,
            "user_code": user_code,
            "auto_open_browser": true,
            "client_instructions": [
                format!("Show the user the code {user_code}: the sign-in page asks for it."),
                "Open authorization_url in a browser and sign in.",
                format!("Poll auto_polling.poll_url every {POLL_INTERVAL} seconds until status is completed (the token is handed out once). Keep poll_url and poll_secret to yourself; never put them in a link."),
                "Send the returned token as Authorization: Bearer <token> and repeat the tool call."
            ],
            "auto_polling": {
                "enabled": true,
                "state": state,
                "poll_secret": poll_secret,
                "poll_url": poll_url,
                "check_interval": POLL_INTERVAL,
                "max_wait_time": POLL_MAX_WAIT
            }
        }))
    }
}

/// The device-style login poll, `GET /oauth2/check_state/{state}`: 404 for an unknown
/// state, 410 `expired` once expired, 410 `collected` once its token was handed out,
/// 200 pending, 200 completed with the token (once), 400 without a state. Built once per process; without keys a
/// completed login cannot be read back.
pub(crate) struct LoginPoll {
    pub store: Arc<dyn Store>,
    pub sealer: Option<Arc<Sealer>>,
    pub clock: Arc<dyn Clock>,
}

impl LoginPoll {
    /// `poll_secret`: the `poll_secret` query parameter or `X-Poll-Secret` header.
    /// Without it the poll is refused (400) before the store is read; with a wrong one
    /// the state reads as unknown (404) and nothing is consumed.
    pub(crate) async fn check(
        &self,
        state: &str,
        poll_secret: Option<&str>,
    ) -> Result<Response<Bytes>, ApiError> {
        if state.trim().is_empty() {
            return Err(ApiError::LoginPoll(
                StatusCode::BAD_REQUEST,
                "error",
                "state is required",
            ));
        }
        let Some(poll_secret) = poll_secret.filter(|s| !s.is_empty()) else {
            return Err(ApiError::LoginPoll(
                StatusCode::BAD_REQUEST,
                "error",
                "poll_secret is required: poll auto_polling.poll_url from the login prompt",
            ));
        };
        let unknown = || ApiError::LoginPoll(StatusCode::NOT_FOUND, "not_found", "no such login");
        match self.store.login_state(&secret_hash(state)).await? {
            None => Err(unknown()),
            Some(r) if !hashes_match(&r.poll_secret_hash, &secret_hash(poll_secret)) => {
                Err(unknown())
            }
            Some(r) if r.expires_at <= self.clock.now() => Err(ApiError::LoginPoll(
                StatusCode::GONE,
                "expired",
                "the login expired; start again",
            )),
            Some(r) => match r.status {
                LoginStatus::Pending => Ok(web::json(
                    StatusCode::OK,
                    &json!({"status": "pending", "message": "waiting for the browser sign-in"}),
                )),
                // Handed out once: a later poll, or the loser of
                // two racing polls, is told the token was already collected.
                LoginStatus::Collected => Err(collected()),
                LoginStatus::Completed { .. } => {
                    let sealed_token = self
                        .store
                        .take_login_token(&secret_hash(state), self.clock.now())
                        .await?
                        .ok_or_else(collected)?;
                    let token = self
                        .sealer
                        .as_ref()
                        .and_then(|s| s.open(&sealed_token, &format!("login-state:{state}")))
                        .and_then(|t| String::from_utf8(t).ok())
                        .ok_or_else(|| {
                            ApiError::refused(
                                StatusCode::INTERNAL_SERVER_ERROR,
                                "the login could not be read back",
                            )
                        })?;
                    Ok(web::json(
                        StatusCode::OK,
                        &json!({"status": "completed", "token": token, "token_type": "Bearer"}),
                    ))
                }
            },
        }
    }
}

/// A login whose token was already collected: 410 like an expired
/// login, so a poller stops, with its own status so it knows why.
fn collected() -> ApiError {
    ApiError::LoginPoll(
        StatusCode::GONE,
        "collected",
        "the token of this login was already collected; stop polling (start a new login for another token)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::store::EmbeddedStore;

    /// The state is stored under its hash, never its raw value,
    /// and the poll still answers the raw state the client holds.
    #[tokio::test]
    async fn login_state_is_stored_under_its_hash_not_the_raw_value() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = std::env::temp_dir()
            .join(format!("mirobody-login-{}-{nanos}", std::process::id()))
            .join("db.sqlite3");
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&path).unwrap());
        let now = 1_800_000_000;
        let prompts = LoginPrompts {
            store: store.clone(),
            origin: "https://example.test".into(),
        };
        let prompt = prompts
            .prompt(now, Some("Evil\u{202e}Client\n"), None)
            .await
            .unwrap();
        let text = |key: &str| prompt["auto_polling"][key].as_str().unwrap().to_string();
        let (state, poll_secret) = (text("state"), text("poll_secret"));
        let code = prompt["user_code"].as_str().unwrap();
        // A person whose app cannot collect the sign-in is told what to do instead.
        assert!(
            prompt["message"].as_str().unwrap().ends_with(
                "If you are asked to sign in again after you did, your app cannot collect this \
                 sign-in: connect it with your personal MCP URL instead, from Connect your AI at \
                 https://example.test/console/connect (it needs no sign-in)."
            ),
            "{prompt}"
        );

        assert_eq!(store.login_state(&state).await.unwrap(), None);
        let stored = store
            .login_state(&secret_hash(&state))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.status, LoginStatus::Pending);
        // Only hashes of the poll secret and the user code are kept; the client's name
        // without control characters.
        assert_eq!(stored.poll_secret_hash, secret_hash(&poll_secret));
        assert_eq!(stored.user_code_hash, user_code_hash(&state, code));
        assert_eq!(
            stored.user_code_hash,
            user_code_hash(&state, &code.to_lowercase().replace('-', ""))
        );
        assert_eq!(stored.client_name.as_deref(), Some("EvilClient"));
        assert_eq!(stored.created_at, now);
        assert!(
            !prompt["authorization_url"]
                .to_string()
                .contains(&poll_secret)
        );

        let poll = LoginPoll {
            store,
            sealer: None,
            clock: Arc::new(FakeClock::at(now)),
        };
        let answer = poll.check(&state, Some(&poll_secret)).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let body: Value = serde_json::from_slice(answer.body()).unwrap();
        assert_eq!(body["status"], "pending");
        // Polling by the hash (what a leaked row shows) finds nothing.
        assert!(
            poll.check(&secret_hash(&state), Some(&poll_secret))
                .await
                .is_err()
        );
        // Nor does polling without the poll secret, or with another.
        assert!(poll.check(&state, None).await.is_err());
        assert!(poll.check(&state, Some("guess")).await.is_err());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
