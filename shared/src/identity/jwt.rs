//! JWTs: HS256 only (pinned), with `exp`, `nbf`, `iss` and `aud` checked.
//! `alg: none` and any other algorithm are refused by construction.
//!
//! Every token says what it is (`kind`: a person's first-party session, an OAuth access
//! token for a client, or a client-credentials token); a token without a kind (minted
//! before kinds existed) does not verify. The issuer and the session audience are the
//! deployment's public origin, so deployments sharing a key refuse each other's tokens.

use std::collections::HashMap;
use std::sync::Mutex;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::domain::TokenState;
use crate::store::{AccountStore, StoreError};

/// What a token is. Which kinds a route accepts is the route table's `accepts` column.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// A person's first-party session: sign-up, sign-in, the development mint.
    Session,
    /// An OAuth access token for a client, acting for a person within its `scope`
    /// (authorization code and refresh grants, the login prompt's poll).
    Access,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    pub sub: String,
    pub kind: TokenKind,
    pub iss: String,
    pub aud: String,
    pub iat: u64,
    pub nbf: u64,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The OAuth client the token was issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The user's token epoch when the token was issued; a token without one is epoch
    /// 0. Refused once the user's epoch is higher (sign-out everywhere, password change).
    #[serde(default)]
    pub epoch: u64,
    /// The session the token belongs to: one sign-in, one login prompt, or one OAuth
    /// refresh family (its access tokens share it). Sign-out ends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
}

impl Claims {
    /// The id that sign-out records for this token: its session, else (a token from
    /// before sessions were named) the token's own id.
    pub fn session_key(&self) -> Option<&str> {
        self.sid.as_deref().or(self.jti.as_deref())
    }

    /// Whether the user ended this token: signed out everywhere or changed the password
    /// since it was issued (an older epoch), signed out its session, or withdrew the
    /// grant of the client it was issued to at or after it was issued.
    pub(crate) fn ended_by(&self, state: &TokenState) -> bool {
        self.epoch < state.epoch
            || state.deleted()
            || self
                .session_key()
                .is_some_and(|sid| state.revoked_sessions.contains_key(sid))
            || self
                .client_id
                .as_ref()
                .and_then(|client| state.revoked_clients.get(client))
                .is_some_and(|&at| at >= self.iat)
    }
}

/// An access token to issue.
pub struct Grant<'a> {
    pub kind: TokenKind,
    pub subject: &'a str,
    /// The audience: the protected resource (RFC 8707), or the default one.
    pub audience: Option<&'a str>,
    pub scope: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub lifetime_secs: u64,
    pub now: u64,
    /// The user's token epoch now ([`Claims::epoch`]).
    pub epoch: u64,
    /// The session it belongs to; `None` starts a new one.
    pub sid: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtError(pub String);

impl std::fmt::Display for JwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid token: {}", self.0)
    }
}

/// Mints and checks the product's JWTs. Built once per process.
pub struct Jwts {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    issuer: String,
    audience: String,
    audiences: Vec<String>,
    verified: Verified,
}

/// Seconds of clock skew allowed on `exp` and `nbf`.
const LEEWAY_SECS: u64 = 30;

/// Tokens whose signature, issuer and audience this process has checked, with their
/// claims: a client sends the same bearer token on every request, and checking it again
/// (an HMAC and two JSON decodes) was a third of a signed-in `tools/list`. Keyed by the
/// whole token, so a hit is the very bytes that verified; only the time checks are
/// repeated on a hit (a token that expired is dropped and checked again, which refuses
/// it). Whether its user ended it is never cached: the caller reads the token state on
/// every request. Bounded: emptied when full. The lookup hashes with a per-process
/// random key, so its string comparison tells an attacker nothing about cached tokens.
#[derive(Default)]
struct Verified(Mutex<HashMap<Box<str>, Claims>>);

/// At most this many verified tokens are kept (a few hundred bytes each).
const VERIFIED_CAP: usize = 1024;
/// A token longer than this is checked every time, never kept.
const VERIFIED_TOKEN_MAX: usize = 2048;

impl Verified {
    /// The claims of `token` if it verified before and is within its times at `now`.
    fn get(&self, token: &str, now: u64) -> Option<Claims> {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let claims = cache.get(token)?;
        if claims.exp.saturating_add(LEEWAY_SECS) < now {
            cache.remove(token);
            return None;
        }
        (claims.nbf <= now.saturating_add(LEEWAY_SECS)).then(|| claims.clone())
    }

    fn put(&self, token: &str, claims: &Claims) {
        if token.len() > VERIFIED_TOKEN_MAX {
            return;
        }
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if cache.len() >= VERIFIED_CAP {
            cache.clear();
        }
        cache.insert(token.into(), claims.clone());
    }
}

/// Seconds since the epoch, the clock `jsonwebtoken` checks `exp` and `nbf` against.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

impl Jwts {
    /// The deployment's keys: issuer and session audience are its public `origin`
    /// (`Config::public_origin`).
    pub fn for_origin(key: &[u8; 32], origin: &str) -> Self {
        Self::new(key, origin, origin)
    }

    pub fn new(key: &[u8; 32], issuer: &str, audience: &str) -> Self {
        super::jwt_hmac::install();
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
        Jwts {
            encoding: EncodingKey::from_secret(key).expect("an HMAC key of 32 bytes"),
            decoding: DecodingKey::from_secret(key).expect("an HMAC key of 32 bytes"),
            validation,
            issuer: issuer.into(),
            audience: audience.into(),
            audiences: vec![audience.into()],
            verified: Verified::default(),
        }
    }

    /// Also accepts tokens whose audience is `audience` (the MCP resource URL that
    /// OAuth clients name with `resource`).
    pub fn accepting(mut self, audience: &str) -> Self {
        self.audiences.push(audience.into());
        self.validation.set_audience(&self.audiences);
        self.verified = Verified::default();
        self
    }

    /// Issues an access token for a grant.
    pub fn issue(&self, grant: &Grant<'_>) -> String {
        let claims = Claims {
            sub: grant.subject.into(),
            kind: grant.kind,
            iss: self.issuer.clone(),
            aud: grant.audience.unwrap_or(&self.audience).into(),
            iat: grant.now,
            nbf: grant.now,
            exp: grant.now + grant.lifetime_secs,
            scope: grant.scope.map(String::from),
            client_id: grant.client_id.map(String::from),
            jti: Some(super::secret::random_secret(12)),
            epoch: grant.epoch,
            sid: Some(
                grant
                    .sid
                    .map_or_else(|| super::secret::random_secret(12), String::from),
            ),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 signing cannot fail")
    }

    /// A person's first-party session token, a new session, at epoch 0 (the
    /// development mint; it is refused once the user has signed out everywhere).
    pub fn mint(&self, user_id: &str, lifetime_secs: u64, now: u64) -> String {
        self.session(user_id, 0, lifetime_secs, now)
    }

    /// A person's first-party session token, a new session at the user's `epoch`.
    pub(crate) fn session(
        &self,
        user_id: &str,
        epoch: u64,
        lifetime_secs: u64,
        now: u64,
    ) -> String {
        self.issue(&Grant {
            kind: TokenKind::Session,
            subject: user_id,
            audience: None,
            scope: None,
            client_id: None,
            lifetime_secs,
            now,
            epoch,
            sid: None,
        })
    }

    /// Whether `token` is signed with this server's key but issued for another origin
    /// (a dev token minted with another port's settings): its signature verifies, its
    /// issuer is not ours. Only then may a refusal say so.
    pub(crate) fn for_another_origin(&self, token: &str) -> bool {
        matches!(
            jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation),
            Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidIssuer)
        )
    }

    /// The claims of a person's session token that verifies and that its user did not
    /// end (signed out, signed out everywhere, changed the password, deleted the
    /// account): one token-state read. Any other kind of token, or none, is `None`. The
    /// console's cookie and the OAuth consent page both take a session this way.
    pub(crate) async fn live_session<S: AccountStore + ?Sized>(
        &self,
        tokens: &S,
        token: &str,
    ) -> Result<Option<Claims>, StoreError> {
        let Some(claims) = self
            .verify(token)
            .ok()
            .filter(|c| c.kind == TokenKind::Session)
        else {
            return Ok(None);
        };
        let state = tokens.token_state(&claims.sub).await?;
        Ok((!claims.ended_by(&state)).then_some(claims))
    }

    /// The claims of `token` if its signature, issuer, audience and times check out
    /// (checked once per process, then its times only: [`Verified`]).
    pub fn verify(&self, token: &str) -> Result<Claims, JwtError> {
        if let Some(claims) = self.verified.get(token, unix_now()) {
            return Ok(claims);
        }
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| JwtError(format!("{:?}", e.kind())))?;
        self.verified.put(token, &claims);
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn a_token_for_another_origin_is_told_apart_only_with_our_key() {
        let here = Jwts::for_origin(&[7; 32], "http://127.0.0.1:18060");
        let there = Jwts::for_origin(&[7; 32], "http://127.0.0.1:18777");
        let token = there.mint("user-1", 3600, now());
        assert!(here.verify(&token).is_err());
        assert!(here.for_another_origin(&token));
        assert!(!here.for_another_origin(&here.mint("user-1", 3600, now())));
        let forged =
            Jwts::for_origin(&[8; 32], "http://127.0.0.1:18777").mint("user-1", 3600, now());
        assert!(
            !here.for_another_origin(&forged),
            "another key says nothing"
        );
        assert!(!here.for_another_origin("not a token"));
    }

    /// A token checked once is served from the cache only as those very bytes and only
    /// within its times; a changed byte is checked (and refused) again.
    #[test]
    fn a_verified_token_is_kept_only_for_its_bytes_and_its_lifetime() {
        let jwts = Jwts::new(&[7; 32], "http://issuer", "mirobody");
        let now = now();
        let token = jwts.mint("user-1", 60, now);
        let claims = jwts.verify(&token).unwrap();
        assert_eq!(jwts.verified.get(&token, now), Some(claims.clone()));
        assert_eq!(
            jwts.verify(&token).unwrap(),
            claims,
            "the same claims again"
        );
        let mut tampered = token.clone().into_bytes();
        let last = tampered.len() - 2;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(jwts.verify(&tampered).is_err(), "another signature");
        // Past exp and the leeway, the kept entry is dropped, not served.
        let later = now + 60 + LEEWAY_SECS + 1;
        assert_eq!(jwts.verified.get(&token, later), None);
        assert_eq!(jwts.verified.get(&token, now), None, "it was dropped");
        // Not before nbf (minus the leeway) either.
        jwts.verified.put(&token, &claims);
        assert_eq!(jwts.verified.get(&token, now - LEEWAY_SECS - 1), None);
        // Bounded: never more than the cap, however many tokens come.
        for i in 0..VERIFIED_CAP * 3 {
            jwts.verified.put(&format!("t{i}"), &claims);
            assert!(jwts.verified.0.lock().unwrap().len() <= VERIFIED_CAP);
        }
        jwts.verified.put(&token, &claims);
        assert!(jwts.verified.get(&token, now).is_some());
        // A token too long to keep is checked every time.
        let long = "x".repeat(VERIFIED_TOKEN_MAX + 1);
        jwts.verified.put(&long, &claims);
        assert_eq!(jwts.verified.get(&long, now), None);
    }

    #[test]
    fn a_minted_token_verifies_and_forgeries_do_not() {
        let jwts = Jwts::new(&[7; 32], "http://issuer", "mirobody");
        let token = jwts.mint("user-1", 3600, now());
        assert_eq!(jwts.verify(&token).unwrap().sub, "user-1");
        assert!(
            Jwts::new(&[8; 32], "http://issuer", "mirobody")
                .verify(&token)
                .is_err(),
            "wrong key"
        );
        assert!(
            Jwts::new(&[7; 32], "http://issuer", "other")
                .verify(&token)
                .is_err(),
            "wrong audience"
        );
        assert!(
            jwts.verify(&jwts.mint("user-1", 1, now() - 3600)).is_err(),
            "expired"
        );
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = token.split('.').nth(1).unwrap();
        let none = format!("{}.{payload}.", b64.encode(r#"{"alg":"none","typ":"JWT"}"#));
        assert!(jwts.verify(&none).is_err(), "alg none");
    }

    #[test]
    fn a_token_is_ended_by_a_newer_epoch_its_session_or_its_clients_withdrawal() {
        let jwts = Jwts::for_origin(&[7; 32], "https://a.example");
        let t = now();
        let mut claims = jwts.verify(&jwts.session("user-1", 2, 60, t)).unwrap();
        assert_eq!(claims.epoch, 2);
        let mut state = TokenState {
            epoch: 2,
            ..TokenState::default()
        };
        assert!(!claims.ended_by(&state), "same epoch");
        state.epoch = 3;
        assert!(claims.ended_by(&state), "older epoch");
        state.epoch = 2;
        let sid = claims.session_key().unwrap().to_string();
        state.revoked_sessions.insert(sid, t + 60);
        assert!(claims.ended_by(&state), "session signed out");
        state.revoked_sessions.clear();
        claims.client_id = Some("app".into());
        state.revoked_clients.insert("app".into(), t - 1);
        assert!(!claims.ended_by(&state), "withdrawn before it was issued");
        state.revoked_clients.insert("app".into(), t);
        assert!(
            claims.ended_by(&state),
            "withdrawn when or after it was issued"
        );
        // A token without an epoch (from before epochs) is epoch 0.
        let legacy = serde_json::json!({ "sub": "user-1", "kind": "session",
            "iss": "https://a.example", "aud": "https://a.example",
            "iat": t, "nbf": t, "exp": t + 60 });
        let legacy =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &legacy, &jwts.encoding).unwrap();
        let legacy = jwts.verify(&legacy).unwrap();
        assert_eq!((legacy.epoch, legacy.session_key()), (0, None));
        assert!(legacy.ended_by(&TokenState {
            epoch: 1,
            ..TokenState::default()
        }));
    }

    /// A deleted account's tombstone ends every token of it, even one stamped with the
    /// tombstone's own epoch (minted after the deletion from a code issued before it).
    #[test]
    fn a_deleted_accounts_tokens_are_all_ended() {
        let jwts = Jwts::for_origin(&[7; 32], "https://a.example");
        let t = now();
        let tombstone = TokenState {
            epoch: TokenState::DELETED_EPOCH,
            ..TokenState::default()
        };
        for epoch in [0, 5, TokenState::DELETED_EPOCH] {
            let claims = jwts.verify(&jwts.session("user-1", epoch, 60, t)).unwrap();
            assert!(claims.ended_by(&tombstone), "epoch {epoch}");
        }
    }

    #[test]
    fn a_token_says_its_kind_and_one_without_a_known_kind_does_not_verify() {
        let jwts = Jwts::for_origin(&[7; 32], "https://a.example");
        assert_eq!(
            jwts.verify(&jwts.mint("user-1", 60, now())).unwrap().kind,
            TokenKind::Session
        );
        let legacy = serde_json::json!({ "sub": "user-1", "iss": "https://a.example",
            "aud": "https://a.example", "iat": now(), "nbf": now(), "exp": now() + 60 });
        let legacy =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &legacy, &jwts.encoding).unwrap();
        assert!(jwts.verify(&legacy).is_err(), "no kind");
        // Client-credentials tokens signed before the grant was withdrawn.
        let app = serde_json::json!({ "sub": "client:c1", "kind": "client",
            "iss": "https://a.example", "aud": "https://a.example/mcp",
            "iat": now(), "nbf": now(), "exp": now() + 60 });
        let app =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &app, &jwts.encoding).unwrap();
        assert!(jwts.verify(&app).is_err(), "an app's token");
        let other = Jwts::for_origin(&[7; 32], "https://b.example");
        assert!(
            other.verify(&jwts.mint("user-1", 60, now())).is_err(),
            "another origin"
        );
    }
}
