//! The keys table's layout, which both backends share: the prefix of each kind of
//! record found by an opaque key (`<prefix><hash or id>`), in DynamoDB's `keys` table
//! and the embedded store's `keys` rows alike. A record moved from one backend to the
//! other keeps its key.
//!
//! Owns the prefixes only; what each record holds is its backend's. Must not: hold a
//! key of the data table (user-partitioned, per backend), or a raw secret (the keys
//! hold hashes).

/// A URL secret's grant: `url#<sha256(secret)>`.
pub(crate) const URL_PREFIX: &str = "url#";

/// A user's personal URL claim: `user-url#<user>`.
pub(crate) const USER_URL_PREFIX: &str = "user-url#";

/// A grantee's delegated URL on a share: `share-url#<owner>#<grantee>`.
pub(crate) const SHARE_URL_PREFIX: &str = "share-url#";

/// A device-login state: `state#<sha256(state)>`.
pub(crate) const STATE_PREFIX: &str = "state#";

/// A mailed link: `mail#<sha256(secret)>`, purpose, user, address.
pub(crate) const MAIL_PREFIX: &str = "mail#";

/// A user's token state (revocation epoch, ended sessions, client grants): `tokens#<user>`.
pub(crate) const TOKENS_PREFIX: &str = "tokens#";

/// An OAuth client: `client#<client id>`.
pub(crate) const CLIENT_PREFIX: &str = "client#";

/// An authorization code: `code#<sha256(code)>`.
pub(crate) const CODE_PREFIX: &str = "code#";

/// A refresh token: `refresh#<sha256(token)>`.
pub(crate) const REFRESH_PREFIX: &str = "refresh#";

/// A revoked refresh-token family: `family#<family id>`.
pub(crate) const FAMILY_PREFIX: &str = "family#";

/// An abuse counter's window: `limit#<key hash>#<window start>`.
pub(crate) const LIMIT_PREFIX: &str = "limit#";
