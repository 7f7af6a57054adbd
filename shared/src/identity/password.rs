//! Password hashing with Argon2id (the `argon2` crate's defaults: 19 MiB, 2 passes).
//! A password never leaves this module except as a PHC hash string.
//!
//! The 19 MiB of working memory is the caller's ([`Memory`]) and is reused: allocating
//! it per hash let the allocator keep every freed block, so 200 concurrent sign-ins
//! held gigabytes even while only two hashed at a time.

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};

use super::secret::random_bytes;

/// Shortest password accepted at sign-up.
pub(crate) const MIN_PASSWORD: usize = 10;

/// Argon2 working memory, grown to what a hash needs and kept for the next one.
pub(crate) type Memory = Vec<Block>;

/// Runs `argon` into an output of `len` bytes with `memory`.
fn run(
    argon: &Argon2<'_>,
    password: &[u8],
    salt: &[u8],
    len: usize,
    memory: &mut Memory,
) -> Option<Output> {
    let blocks = argon.params().block_count();
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    Output::init_with(len, |out| {
        argon
            .hash_password_into_with_memory(password, salt, out, &mut memory[..blocks])
            .map_err(|_| argon2::password_hash::Error::Password)
    })
    .ok()
}

/// A PHC string of an Argon2id hash of `password` at the default parameters.
pub(crate) fn hash_password_with(password: &str, memory: &mut Memory) -> String {
    let raw_salt = random_bytes::<16>();
    let salt = SaltString::encode_b64(&raw_salt).expect("16 bytes is a valid salt");
    let params = Params::default();
    let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
    let output = run(
        &argon,
        password.as_bytes(),
        &raw_salt,
        Params::DEFAULT_OUTPUT_LEN,
        memory,
    )
    .expect("Argon2id hashing cannot fail");
    PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(&params).expect("default parameters encode"),
        salt: Some(salt.as_salt()),
        hash: Some(output),
    }
    .to_string()
}

/// Whether `password` is the one `hash` (a PHC string) was made from; the comparison
/// is constant-time.
pub(crate) fn verify_password_with(password: &str, hash: &str, memory: &mut Memory) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else {
        return false;
    };
    let (Ok(algorithm), Ok(params)) = (
        Algorithm::try_from(parsed.algorithm),
        Params::try_from(&parsed),
    ) else {
        return false;
    };
    let Ok(version) = parsed.version.map(Version::try_from).transpose() else {
        return false;
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(raw_salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let argon = Argon2::new(algorithm, version.unwrap_or_default(), params);
    run(
        &argon,
        password.as_bytes(),
        raw_salt,
        expected.len(),
        memory,
    )
    .is_some_and(|output| output == expected)
}

#[cfg(test)]
mod tests {
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};

    use super::*;

    #[test]
    fn a_hash_verifies_only_its_password() {
        let mut memory = Memory::new();
        let hash = hash_password_with("correct horse battery", &mut memory);
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(verify_password_with(
            "correct horse battery",
            &hash,
            &mut memory
        ));
        assert!(!verify_password_with(
            "wrong horse battery",
            &hash,
            &mut memory
        ));
        assert!(!verify_password_with("x", "not a hash", &mut memory));
    }

    /// Hashes made before the reused memory (the crate's own `hash_password`) still
    /// verify, and the crate verifies ours.
    #[test]
    fn hashes_agree_with_the_crate() {
        let salt = SaltString::encode_b64(&[7u8; 16]).unwrap();
        let theirs = Argon2::default()
            .hash_password(b"correct horse battery", &salt)
            .unwrap()
            .to_string();
        let mut memory = Memory::new();
        assert!(verify_password_with(
            "correct horse battery",
            &theirs,
            &mut memory
        ));
        let ours = hash_password_with("correct horse battery", &mut memory);
        assert!(
            Argon2::default()
                .verify_password(b"correct horse battery", &PasswordHash::new(&ours).unwrap())
                .is_ok()
        );
    }
}
