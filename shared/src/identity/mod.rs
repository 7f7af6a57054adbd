//! Who is calling: keys, JWTs, passwords, URL secrets, caller resolution (A7), the
//! login prompt and its poll, and personal and temporary MCP URLs (B1-B4).
//!
//! Owns the pinned JWT algorithm and claims rules, the order of caller resolution,
//! and every bearer secret's lifecycle. Never logs a token, a URL secret or a password.

mod caller;
mod csrf;
mod jwt;
mod jwt_hmac;
mod keys;
mod login;
#[cfg(feature = "passwords")]
mod password;
// The same interface, failing closed, where no route takes a password.
#[cfg(not(feature = "passwords"))]
#[path = "password_absent.rs"]
mod password;
mod quota;
mod seal;
mod secret;
mod shown;
mod sign_in;
mod urls;

pub(crate) use caller::CallerResolver;
pub(crate) use caller::{Caller, SERVERS_SCOPE};
pub(crate) use csrf::{csrf_token, csrf_valid};
pub use jwt::Jwts;
pub(crate) use jwt::TokenKind;
pub(crate) use jwt::{Claims, Grant};
pub use keys::{KeyError, Keys};
pub(crate) use login::LoginPoll;
pub(crate) use login::{LoginPrompts, PromptRefused, user_code_hash};
pub(crate) use password::MIN_PASSWORD;
pub(crate) use quota::Quota;
pub(crate) use seal::Sealer;
pub(crate) use secret::{hashes_match, random_bytes, random_secret, secret_hash};
pub(crate) use shown::{hidden_or_control, shown_name};
pub(crate) use sign_in::{Passwords, SignIn, counter_hash, source_key};
pub(crate) use urls::McpUrls;
