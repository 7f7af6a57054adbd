//! The keyed hash of the per-row maps of an import: foldhash, several times
//! faster than the standard library's SipHash on short keys, with a per-map seed from the
//! operating system's random source, so nobody can choose rows that pile into one bucket.
//!
//! Owns only the choice of hasher; it must not be used where a hash is stored or
//! compared across processes (the seed differs each time).

/// A hasher builder with a fresh random seed (a fixed one if the random source fails,
/// which costs only the flooding resistance of that one map).
pub(crate) fn keyed() -> foldhash::fast::SeedableRandomState {
    let seed = getrandom::u64().unwrap_or(0x9e37_79b9_7f4a_7c15);
    foldhash::fast::SeedableRandomState::with_seed(seed, foldhash::SharedSeed::global_random())
}
