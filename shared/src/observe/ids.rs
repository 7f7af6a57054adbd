//! The ids a request is known by: request ids, trace ids and span ids. What they
//! need is to be unique, not secret (they are written into log lines and sent on in
//! `traceparent`), so they come from a fast per-thread generator (wyrand) seeded once per
//! thread from the operating system, and are written as lower-case hex into one allocation.

use std::cell::Cell;

thread_local! {
    /// wyrand's state, seeded from `getrandom` the first time a thread makes an id.
    static STATE: Cell<u64> = Cell::new(seed());
}

/// A thread's seed: random bytes from the system; failing that, the time and the thread's
/// address, which still differ between threads and processes.
fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_ok() {
        return u64::from_le_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    let here = &bytes as *const _ as u64;
    nanos ^ here.rotate_left(32) ^ u64::from(std::process::id())
}

/// The next 64 bits of this thread's wyrand (a full period of 2^64 per thread).
fn next_u64() -> u64 {
    STATE.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s).wrapping_mul(u128::from(s ^ 0xe703_7ed1_a0b4_28db));
        (t >> 64) as u64 ^ t as u64
    })
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lower-case hex, in one allocation: the one way the crate writes ids,
/// digests and keys (`observe` imports nothing, so every part may use it).
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0x0f)];
    }
    // Only ASCII digits and letters were written.
    String::from_utf8(out).unwrap_or_default()
}

/// `N` random bytes (`N` at most 16) as lower-case hex: trace ids and request ids 16
/// bytes, span ids 8; never all zero, which W3C Trace Context forbids.
pub(crate) fn random_hex<const N: usize>() -> String {
    const { assert!(N >= 1 && N <= 16) };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&next_u64().to_le_bytes());
    if N > 8 {
        bytes[8..].copy_from_slice(&next_u64().to_le_bytes());
    }
    let bytes = &mut bytes[..N];
    if bytes.iter().all(|b| *b == 0) {
        bytes[N - 1] = 1;
    }
    hex(bytes)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn hex_is_lower_case_two_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn ids_are_hex_of_their_length_and_unique() {
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let trace = random_hex::<16>();
            assert_eq!(trace.len(), 32);
            assert!(
                trace
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
            assert!(seen.insert(trace));
            assert_eq!(random_hex::<8>().len(), 16);
        }
    }

    #[test]
    fn threads_make_different_ids() {
        let theirs: Vec<String> = (0..4)
            .map(|_| std::thread::spawn(random_hex::<16>))
            .map(|thread| thread.join().unwrap())
            .collect();
        let distinct: HashSet<&String> = theirs.iter().collect();
        assert_eq!(distinct.len(), theirs.len());
    }
}
