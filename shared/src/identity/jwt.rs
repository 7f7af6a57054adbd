//! JWTs: HS256 only (pinned), with `exp`, `nbf`, `iss` and `aud` checked.
//! `alg: none` and any other algorithm are refused by construction.
//!
//! Every token says what it is (`kind`: a person's first-party session, an OAuth access
//! token for a client, or a client-credentials token); a token without a kind (minted
//! before kinds existed) does not verify. The issuer and the session audience are the
//! deployment's public origin, so deployments sharing a key refuse each other's tokens.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

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
}

impl Jwts {
    /// The deployment's keys: issuer and session audience are its public `origin`
    /// (`Config::public_origin`).
    pub fn for_origin(key: &[u8; 32], origin: &str) -> Self {
        Self::new(key, origin, origin)
    }

    pub fn new(key: &[u8; 32], issuer: &str, audience: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.validate_nbf = true;
        validation.leeway = 30;
        validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
        Jwts {
            encoding: EncodingKey::from_secret(key).expect("an HMAC key of 32 bytes"),
            decoding: DecodingKey::from_secret(key).expect("an HMAC key of 32 bytes"),
            validation,
            issuer: issuer.into(),
            audience: audience.into(),
            audiences: vec![audience.into()],
        }
    }

    /// Also accepts tokens whose audience is `audience` (the MCP resource URL that
    /// OAuth clients name with `resource`).
    pub fn accepting(mut self, audience: &str) -> Self {
        self.audiences.push(audience.into());
        self.validation.set_audience(&self.audiences);
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
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 signing cannot fail")
    }

    /// A person's first-party session token.
    pub fn mint(&self, user_id: &str, lifetime_secs: u64, now: u64) -> String {
        self.issue(&Grant {
            kind: TokenKind::Session,
            subject: user_id,
            audience: None,
            scope: None,
            client_id: None,
            lifetime_secs,
            now,
        })
    }

    pub fn verify(&self, token: &str) -> Result<Claims, JwtError> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| JwtError(format!("{:?}", e.kind())))
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
        // Client-credentials tokens signed before the grant was withdrawn (issue 12).
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
