//! Reading a stored object from blocking code: the async body bridged to
//! `std::io::Read` (on the blocking pool, so the runtime keeps serving), counted, and
//! decompressed when it starts with the gzip magic bytes, within
//! [`upload::INFLATION`] (a ratio and a size, so a decompression bomb fails
//! after a few hundred KiB). A zip inside gzip is refused: its own inflation would multiply
//! the bound.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncReadExt;
use tokio::runtime::Handle;

use crate::store::ObjectBody;
use crate::upload::{self, Exceeded};

/// The buffer between the object and the parser.
const BUFFER: usize = 256 * 1024;

/// The object's bytes, read synchronously. Must run off the runtime's workers.
struct Blocking {
    body: ObjectBody,
    handle: Handle,
    /// Bytes read from the object so far (compressed, for progress).
    consumed: Arc<AtomicU64>,
}

impl Read for Blocking {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.handle.block_on(self.body.read(buf))?;
        self.consumed.fetch_add(read as u64, Ordering::Relaxed);
        Ok(read)
    }
}

/// The object's content as a buffered reader (decompressed if it is gzip), and the
/// counter of object bytes consumed.
pub(super) fn open(
    body: ObjectBody,
    handle: Handle,
) -> std::io::Result<(Box<dyn BufRead + Send>, Arc<AtomicU64>)> {
    let consumed = Arc::new(AtomicU64::new(0));
    let mut raw = BufReader::with_capacity(
        BUFFER,
        Blocking {
            body,
            handle,
            consumed: consumed.clone(),
        },
    );
    let head = raw.fill_buf()?;
    if !head.starts_with(GZIP_MAGIC) {
        return Ok((Box::new(raw), consumed));
    }
    let mut inflated = BufReader::with_capacity(BUFFER, upload::gunzip(raw, upload::INFLATION));
    if inflated.fill_buf()?.starts_with(ZIP_MAGIC) {
        return Err(Exceeded::at(
            "gzip",
            "a zip inside gzip is not read (its size could not be bounded): upload the zip as it is",
        ));
    }
    Ok((Box::new(inflated), consumed))
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
/// A zip's local file header signature (`PK\x03\x04`).
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Whether the content (after any decompression) starts like JSON.
pub(super) fn looks_like_json(reader: &mut dyn BufRead) -> std::io::Result<bool> {
    loop {
        let head = reader.fill_buf()?;
        let Some(first) = head.iter().position(|b| !b.is_ascii_whitespace()) else {
            if head.is_empty() {
                return Ok(false);
            }
            let all = head.len();
            reader.consume(all);
            continue;
        };
        // A UTF-8 byte order mark is not JSON's, but CSV's would not start with `[`/`{`.
        return Ok(matches!(head[first], b'[' | b'{'));
    }
}

/// The whole content, refused past `max` bytes (tests read an object whole with it).
#[cfg(test)]
fn read_bounded(reader: impl Read, max: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn body(bytes: Vec<u8>) -> ObjectBody {
        Box::pin(std::io::Cursor::new(bytes))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn gzip_is_detected_by_its_magic_bytes() {
        let text = b"  [{\"a\":1}]".to_vec();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let handle = Handle::current();
        let (plain, zipped) = tokio::task::spawn_blocking(move || {
            let read = |bytes: Vec<u8>| {
                let (mut reader, consumed) = open(body(bytes), handle.clone()).unwrap();
                let json = looks_like_json(&mut reader).unwrap();
                let all = read_bounded(reader, 100).unwrap();
                (json, all, consumed.load(Ordering::Relaxed))
            };
            (read(text.clone()), read(gz.clone()))
        })
        .await
        .unwrap();
        assert_eq!(plain.1, b"  [{\"a\":1}]");
        assert_eq!(zipped.1, plain.1);
        assert!(plain.0 && zipped.0);
        assert!(zipped.2 > 0);
        assert!(read_bounded(&b"0123456789"[..], 9).is_err());
    }

    fn gzip_best(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    /// A gzip bomb fails once it passes the ratio, before the parser sees more
    /// than about a MiB; a zip inside gzip is refused as it opens.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_gzip_bomb_and_a_zip_inside_gzip_are_refused() {
        let bomb = gzip_best(&b",,\n".repeat(8 << 20));
        let zipped_zip = gzip_best(b"PK\x03\x04 and the rest of an archive");
        let handle = Handle::current();
        let (bomb, zip) = tokio::task::spawn_blocking(move || {
            let (reader, _) = open(body(bomb), handle.clone()).unwrap();
            let mut handed = 0u64;
            let mut reader = reader;
            let error = loop {
                let n = reader.fill_buf().map(<[u8]>::len);
                match n {
                    Ok(0) => panic!("the bomb was read to its end"),
                    Ok(n) => {
                        handed += n as u64;
                        reader.consume(n);
                    }
                    Err(error) => break error,
                }
            };
            let zip = open(body(zipped_zip), handle).err().expect("refused");
            ((handed, error), zip)
        })
        .await
        .unwrap();
        let refused = upload::refusal(&bomb.1, || "?".into()).expect("a bound");
        assert_eq!(refused.location, "gzip");
        assert!(bomb.0 <= 1 << 20, "{} bytes handed out", bomb.0);
        let refused = upload::refusal(&zip, || "?".into()).expect("a bound");
        assert!(
            refused.problem.starts_with("a zip inside gzip"),
            "{refused}"
        );
    }
}
