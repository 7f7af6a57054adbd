//! JSON readings read as a stream: the `readings` array of
//! `{"readings": [...]}` (or a bare array) visited one element at a time through a
//! serde seed, never as one tree of the whole file. Each element is bounded
//! ([`MAX_ELEMENT`] bytes) before it is parsed, so no single reading can take the
//! memory a whole file would, and the file is bounded ([`MAX_READINGS_FILE`]) once
//! decompressed.

use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::bounds::{Exceeded, refusal, size};
use super::collisions::{Collisions, Position, Repeats};
use super::health::{error, json_reading};
use super::{MAX_READINGS_FILE, UploadError};
use crate::domain::Reading;

/// The most bytes one element of `readings` may take (a reading is a few hundred).
pub(crate) const MAX_ELEMENT: u64 = 64 * 1024;

/// Reads JSON readings from `input` one element at a time, handing each to `row`
/// (which answers `false` to stop early); at most `max_rows`. Returns how many it read.
/// The first bad element ends the reading with its index. Identical repeats as
/// [`for_each_csv_reading`](super::for_each_csv_reading) does them, with `repeats`.
pub(crate) fn for_each_json_reading(
    input: impl Read,
    default_source: &str,
    max_rows: usize,
    repeats: &mut Repeats,
    mut row: impl FnMut(Reading) -> bool,
) -> Result<usize, UploadError> {
    let since = Rc::new(Cell::new(0u64));
    let guarded = Guarded {
        inner: input,
        since: since.clone(),
        total: 0,
    };
    let mut failure = None;
    let mut count = 0usize;
    let mut de = serde_json::Deserializer::from_reader(guarded);
    let top = Top(Rows {
        source: default_source,
        row: &mut row,
        count: &mut count,
        max_rows,
        failure: &mut failure,
        since,
        repeats,
    });
    let parsed = top.deserialize(&mut de).and_then(|()| de.end());
    match (parsed, failure) {
        (_, Some(failure)) => Err(failure),
        (Ok(()), None) => Ok(count),
        (Err(e), None) if e.is_io() => {
            let io = std::io::Error::from(e);
            Err(refusal(&io, || "body".into())
                .unwrap_or_else(|| error("body".into(), "the file could not be read")))
        }
        (Err(e), None) => Err(error(format!("line {}", e.line()), "not valid JSON")),
    }
}

/// The reader under the parser: counts the bytes since the current element began and
/// fails past [`MAX_ELEMENT`] (the visitors reset the count as each element begins), and
/// past [`MAX_READINGS_FILE`] in all.
struct Guarded<R> {
    inner: R,
    since: Rc<Cell<u64>>,
    total: u64,
}

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        let since = self.since.get().saturating_add(read as u64);
        self.since.set(since);
        self.total = self.total.saturating_add(read as u64);
        if since > MAX_ELEMENT {
            return Err(Exceeded::at(
                "body",
                format!("one reading is longer than {}", size(MAX_ELEMENT)),
            ));
        }
        if self.total > MAX_READINGS_FILE {
            return Err(Exceeded::at(
                "file",
                format!(
                    "the readings are larger than {} (decompressed)",
                    size(MAX_READINGS_FILE)
                ),
            ));
        }
        Ok(read)
    }
}

struct Rows<'a, F> {
    source: &'a str,
    row: &'a mut F,
    count: &'a mut usize,
    max_rows: usize,
    failure: &'a mut Option<UploadError>,
    since: Rc<Cell<u64>>,
    repeats: &'a mut Repeats,
}

/// The document: a bare array, or an object whose `readings` is the array (other
/// members are skipped without being kept).
struct Top<'a, F>(Rows<'a, F>);

impl<'de, F: FnMut(Reading) -> bool> DeserializeSeed<'de> for Top<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(Reading) -> bool> Visitor<'de> for Top<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{\"readings\": [...]} or an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.0.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut rows = Some(self.0);
        while let Some(key) = map.next_key::<String>()? {
            match (key.as_str(), rows.take()) {
                ("readings", Some(r)) => map.next_value_seed(r)?,
                (_, r) => {
                    rows = r;
                    if let Some(r) = &rows {
                        r.since.set(0);
                    }
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match rows {
            None => Ok(()),
            Some(r) => {
                *r.failure = Some(error(
                    "body".into(),
                    "expected {\"readings\": [...]} or an array",
                ));
                Err(serde::de::Error::custom("no readings"))
            }
        }
    }
}

impl<'de, F: FnMut(Reading) -> bool> DeserializeSeed<'de> for Rows<'_, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(Reading) -> bool> Visitor<'de> for Rows<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of readings")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        let mut collisions = Collisions::after(Position::Index, std::mem::take(self.repeats));
        loop {
            self.since.set(0);
            let Some(element) = seq.next_element::<Value>()? else {
                *self.repeats = collisions.into_repeats();
                return Ok(());
            };
            if *self.count == self.max_rows {
                *self.failure = Some(error(
                    format!("readings[{index}]"),
                    format!("more than {} readings in one upload", self.max_rows),
                ));
                return Err(serde::de::Error::custom("too many"));
            }
            let checked = json_reading(index, &element, self.source).and_then(|reading| {
                collisions
                    .check(&reading, index as u64)
                    .map(|new| new.then_some(reading))
            });
            match checked {
                Ok(None) => *self.count += 1,
                Ok(Some(reading)) => {
                    *self.count += 1;
                    if !(self.row)(reading) {
                        // Stopped by the caller: the rest is not read.
                        *self.failure = Some(error("body".into(), "stopped"));
                        return Err(serde::de::Error::custom("stopped"));
                    }
                }
                Err(e) => {
                    *self.failure = Some(e);
                    return Err(serde::de::Error::custom("bad row"));
                }
            }
            index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(json: &str) -> Result<Vec<Reading>, UploadError> {
        let mut rows = Vec::new();
        for_each_json_reading(
            json.as_bytes(),
            "upload",
            10,
            &mut Repeats::default(),
            |r| {
                rows.push(r);
                true
            },
        )?;
        Ok(rows)
    }

    #[test]
    fn both_shapes_stream_and_a_bad_element_is_named_by_index() {
        let row = r#"{"indicator":"LDL","value":3,"unit":"mmol/L","time":"2026-02-01"}"#;
        let other = r#"{"indicator":"LDL","value":3,"unit":"mmol/L","time":"2026-02-02"}"#;
        assert_eq!(all(&format!("[{row},{other}]")).unwrap().len(), 2);
        // An identical repeat is kept once.
        assert_eq!(all(&format!("[{row},{row}]")).unwrap().len(), 1);
        let doc = format!(r#"{{"note":{{"x":[1,2]}},"readings":[{row}],"after":"x"}}"#);
        assert_eq!(all(&doc).unwrap()[0].indicator, "LDL cholesterol");
        let bad =
            format!(r#"{{"readings":[{row},{row},{{"indicator":"LDL","time":"2026-02-01"}}]}}"#);
        let err = all(&bad).unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            ("readings[2]", "value is missing")
        );
        assert_eq!(all(r#"{"other":[]}"#).unwrap_err().location, "body");
        assert_eq!(all("[{\"a\":").unwrap_err().problem, "not valid JSON");
        let eleven = format!(
            "[{}]",
            (1..=11)
                .map(|d| format!(
                    r#"{{"indicator":"LDL","value":3,"unit":"mmol/L","time":"2026-02-{d:02}"}}"#
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(
            all(&eleven)
                .unwrap_err()
                .problem
                .starts_with("more than 10")
        );
    }

    #[test]
    fn an_oversized_element_is_refused_before_it_is_kept() {
        let huge = format!(
            r#"[{{"indicator":"LDL","value":"{}","time":"2026-02-01"}}]"#,
            "x".repeat(MAX_ELEMENT as usize + 10)
        );
        assert_eq!(
            all(&huge).unwrap_err().problem,
            "one reading is longer than 64 KiB"
        );
    }
}
