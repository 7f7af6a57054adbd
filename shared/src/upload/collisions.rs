//! Rows of one file that are the same reading: same measure, time and source.
//! An identical repeat is counted and kept once; the same reading with two different
//! values refuses the file naming both lines (three glucose values on one date without a
//! time of day would otherwise be stored as one, the other two lost without a word).
//!
//! Owns only the comparison. Memory is bounded: a 64-bit hash of the identity, 32 bits of
//! the value's hash and the position per reading (16 bytes), for at most [`MAX_TRACKED`]
//! readings; past that, later readings are
//! not compared within the file (the store still keeps one reading per identity, and the
//! upload's status counts what replaced a stored value).
//!
//! An import reads a file twice (validate, then write): the first pass's [`Repeats`]
//! (which positions were identical repeats, a bit each) tell the second which rows to
//! drop, so it neither hashes a row nor holds the map again.

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

/// The positions of a file's identical repeats, found by one pass over it and replayed
/// by the next: a bit per position up to the last repeat (at most 2.5 MB for the
/// largest file an import reads, nothing for a file without repeats).
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    words: Vec<u64>,
    /// Whether a whole pass filled these in (a second pass replays them).
    complete: bool,
}

impl Repeats {
    fn insert(&mut self, n: u64) {
        let Ok(word) = usize::try_from(n / 64) else {
            return;
        };
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (n % 64);
    }

    fn contains(&self, n: u64) -> bool {
        usize::try_from(n / 64)
            .ok()
            .and_then(|word| self.words.get(word))
            .is_some_and(|bits| bits & (1 << (n % 64)) != 0)
    }
}

/// The readings of one file seen so far.
#[derive(Debug)]
pub(crate) struct Collisions {
    position: Position,
    /// Replayed from an earlier pass over the same file: no row is hashed or kept.
    replay: Option<Repeats>,
    /// Where this pass found identical repeats.
    found: Repeats,
    /// A reused buffer for each row's indicator key.
    key: String,
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
            replay: None,
            found: Repeats::default(),
            key: String::new(),
            keys: crate::hashing::keyed(),
            seen: HashMap::default(),
            repeats: 0,
        }
    }

    /// For a pass over a file an earlier pass read whole: `repeats` from it are replayed
    /// (complete ones; others are found afresh).
    pub(crate) fn after(position: Position, repeats: Repeats) -> Self {
        let mut collisions = Collisions::new(position);
        if repeats.complete {
            collisions.replay = Some(repeats);
        }
        collisions
    }

    /// The repeats of the whole file, once a pass has read it to its end.
    pub(crate) fn into_repeats(self) -> Repeats {
        match self.replay {
            Some(replayed) => replayed,
            None => Repeats {
                complete: true,
                ..self.found
            },
        }
    }

    /// Checks the reading at position `n`: `Ok(true)` when it is new in the file,
    /// `Ok(false)` for an identical repeat, an error naming both positions when the same
    /// reading came earlier with another value.
    pub(crate) fn check(&mut self, reading: &Reading, n: u64) -> Result<bool, UploadError> {
        if let Some(replay) = &self.replay {
            let repeat = replay.contains(n);
            self.repeats += u64::from(repeat);
            return Ok(!repeat);
        }
        let value = value_hash(&self.keys, reading);
        let tracked = self.seen.len();
        self.key.clear();
        Reading::write_indicator_key(&reading.indicator, &mut self.key);
        let identity = self
            .keys
            .hash_one((self.key.as_str(), &reading.time, &reading.source));
        match self.seen.entry(identity) {
            Entry::Occupied(earlier) => {
                let (earlier_value, at) = *earlier.get();
                if earlier_value == value {
                    self.repeats += 1;
                    self.found.insert(n);
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

    /// A second pass replays the first's repeats without comparing rows: the same rows
    /// are dropped, and only a complete first pass is replayed.
    #[test]
    fn a_second_pass_drops_the_repeats_the_first_found() {
        let rows = [
            glucose("2026-01-05T00:00:00", 99.0),
            glucose("2026-01-05T08:00:00", 120.0),
            glucose("2026-01-05T00:00:00", 99.0),
            glucose("2026-01-05T08:00:00", 120.0),
        ];
        let mut first = Collisions::new(Position::Line);
        let kept: Vec<bool> = (0..)
            .zip(&rows)
            .map(|(n, r)| first.check(r, 1000 + n).unwrap())
            .collect();
        assert_eq!(kept, [true, true, false, false]);
        let repeats = first.into_repeats();
        let mut second = Collisions::after(Position::Line, repeats);
        // Rows the replay is not shown differ: it goes by position alone.
        let other = glucose("2027-01-01T00:00:00", 1.0);
        let replayed: Vec<bool> = (1000..1004)
            .map(|n| second.check(&other, n).unwrap())
            .collect();
        assert_eq!(replayed, kept);
        assert_eq!(second.repeats, 2);
        // Repeats of a pass that did not finish are found afresh.
        let mut afresh = Collisions::after(Position::Line, Repeats::default());
        assert!(afresh.check(&other, 1).unwrap());
        assert!(!afresh.check(&other, 2).unwrap());
    }
}
