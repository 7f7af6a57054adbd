//! Who is calling: keys, JWTs, passwords, URL secrets, caller resolution (A7), the
//! login prompt and its poll, and personal and temporary MCP URLs (B1-B4).
//!
//! Owns the pinned JWT algorithm and claims rules, the order of caller resolution,
//! and every bearer secret's lifecycle. Never logs a token, a URL secret or a password.

mod caller;
mod jwt;
mod keys;
mod login;
mod password;
mod seal;
mod secret;
mod sign_in;
mod urls;

pub use caller::Caller;
pub(crate) use caller::CallerResolver;
pub use jwt::{Claims, Grant, JwtError, Jwts};
pub use keys::{KeyError, Keys};
pub(crate) use login::LoginPoll;
pub use login::{LOGIN_STATE_SECS, LoginPrompts};
pub use password::{MIN_PASSWORD, hash_password, verify_password};
pub use seal::Sealer;
pub use secret::{random_bytes, random_secret, secret_hash};
pub use sign_in::authenticate;
pub use urls::{McpUrls, PERSONAL_URL_SECS, TEMPORARY_URL_SECS};
