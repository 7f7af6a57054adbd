//! Rows of one file that are the same reading (issue 25): same measure, time and source.
//! An identical repeat is counted and kept once; the same reading with two different
//! values refuses the file naming both lines (three glucose values on one date without a
//! time of day would otherwise be stored as one, the other two lost without a word).
//!
//! Owns only the comparison. Memory is bounded: a 64-bit hash of the identity, 32 bits of
//! the value's hash and the position per reading (16 bytes), for at most [`MAX_TRACKED`]
//! readings; past that, later readings are
//! not compared within the file (the store still keeps one reading per identity, and the
//! upload's status counts what replaced a stored value).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

use super::UploadError;
use super::health::error;
use crate::domain::{Reading, ReadingValue};

/// Readings compared per file: ~17 bytes each, ~34 MB at most (a 512 MB import function).
pub(crate) const MAX_TRACKED: usize = 2_000_000;

/// How a position is named in a message: `line 12` or `readings[3]`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Position {
    Line,
    Index,
}

impl Position {
    fn name(self, n: u64) -> String {
        match self {
            Position::Line => format!("line {n}"),
            Position::Index => format!("readings[{n}]"),
        }
    }
}

/// The readings of one file seen so far.
#[derive(Debug)]
pub(crate) struct Collisions {
    position: Position,
    /// Keys the identities' hash afresh for each file, so nobody can choose rows whose
    /// identities pile into one bucket of `seen` (foldhash: a keyed hash several times
    /// faster than SipHash on these short keys, which an import hashes once a row).
    keys: foldhash::fast::SeedableRandomState,
    /// Identity hash → (32 bits of the value's hash, position).
    seen: HashMap<u64, (u32, u32), BuildHasherDefault<Prehashed>>,
    /// Identical repeats of a reading earlier in the file.
    pub(crate) repeats: u64,
}

/// The hasher of `seen`, whose keys are already keyed hashes: hashing them again (as
/// the default hasher would, on every row of every file) buys nothing.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// 32 bits of the value's hash: two different values of one reading pass as the same
/// one time in 4 billion.
fn value_hash(keys: &foldhash::fast::SeedableRandomState, r: &Reading) -> u32 {
    let mut h = keys.build_hasher();
    match &r.value {
        ReadingValue::Number(n) => n.to_bits().hash(&mut h),
        ReadingValue::Text(t) => t.hash(&mut h),
    }
    r.unit.hash(&mut h);
    h.finish() as u32
}

impl Collisions {
    pub(crate) fn new(position: Position) -> Self {
        Collisions {
            position,
            keys: crate::hashing::keyed(),
            seen: HashMap::default(),
            repeats: 0,
        }
    }

    /// Checks the reading at position `n`: `Ok(true)` when it is new in the file,
    /// `Ok(false)` for an identical repeat, an error naming both positions when the same
    /// reading came earlier with another value.
    pub(crate) fn check(&mut self, reading: &Reading, n: u64) -> Result<bool, UploadError> {
        let value = value_hash(&self.keys, reading);
        let tracked = self.seen.len();
        let identity = self.keys.hash_one((
            Reading::indicator_key(&reading.indicator),
            &reading.time,
            &reading.source,
        ));
        match self.seen.entry(identity) {
            Entry::Occupied(earlier) => {
                let (earlier_value, at) = *earlier.get();
                if earlier_value == value {
                    self.repeats += 1;
                    return Ok(false);
                }
                let day_only = reading.time.ends_with("T00:00:00");
                Err(error(
                    self.position.name(n),
                    format!(
                        "{} is the same reading as {} ({} from the same source at the same time) \
                         with another value{}; nothing was saved",
                        self.position.name(n),
                        self.position.name(u64::from(at)),
                        reading.indicator,
                        if day_only {
                            ": give each reading its time of day"
                        } else {
                            ""
                        }
                    ),
                ))
            }
            Entry::Vacant(slot) => {
                // Positions past u32 (no file holds that many rows) are not tracked.
                if tracked < MAX_TRACKED
                    && let Ok(n) = u32::try_from(n)
                {
                    slot.insert((value, n));
                }
                Ok(true)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glucose(time: &str, value: f64) -> Reading {
        Reading {
            indicator: "Glucose".into(),
            value: ReadingValue::Number(value),
            unit: Some("mg/dL".into()),
            time: time.into(),
            code_system: None,
            code: None,
            source: "meter".into(),
            offset: None,
            original: None,
        }
    }

    #[test]
    fn repeats_are_counted_and_conflicts_name_both_lines() {
        let mut c = Collisions::new(Position::Line);
        assert!(c.check(&glucose("2026-01-05T00:00:00", 99.0), 2).unwrap());
        assert!(!c.check(&glucose("2026-01-05T00:00:00", 99.0), 3).unwrap());
        assert!(c.check(&glucose("2026-01-05T08:00:00", 120.0), 4).unwrap());
        let err = c
            .check(&glucose("2026-01-05T00:00:00", 140.0), 5)
            .unwrap_err();
        assert_eq!(err.location, "line 5");
        assert!(err.problem.contains("line 2"), "{}", err.problem);
        assert!(err.problem.contains("time of day"), "{}", err.problem);
        assert_eq!(c.repeats, 1);
    }
}
