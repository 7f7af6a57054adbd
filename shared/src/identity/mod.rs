//! Who is calling: JWT signing and checking, and the keys they use.
//!
//! Owns the pinned algorithm and the claims rules (`exp`, `nbf`, `iss`, `aud`).
//! Never logs a token. Accounts, personal URLs and the login prompt come later
//! (issue 4); until then a caller is a user id from a valid JWT.

mod jwt;
mod keys;

pub use jwt::{Claims, JwtError, Jwts};
pub use keys::{KeyError, Keys};
