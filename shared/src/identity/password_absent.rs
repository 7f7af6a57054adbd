//! Password hashing in a build without the `passwords` feature (the mcp, personal, data
//! and import functions, whose routes never take a password): the same interface as
//! `password.rs`, failing closed. Nothing hashes here, and no password is ever accepted,
//! so a route that reached it by mistake could neither store a password nor sign one in.

/// Shortest password accepted at sign-up (as in `password.rs`).
pub(crate) const MIN_PASSWORD: usize = 10;

/// No working memory: nothing is hashed.
pub(crate) type Memory = Vec<u8>;

/// Not a PHC string: no password verifies against it, in this build or in one with Argon2id.
pub(crate) fn hash_password_with(_password: &str, _memory: &mut Memory) -> String {
    "!no-password-hashing-in-this-build".to_string()
}

/// Always false: this build accepts no password.
pub(crate) fn verify_password_with(_password: &str, _hash: &str, _memory: &mut Memory) -> bool {
    false
}
