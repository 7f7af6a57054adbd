//! Reading a stored object from blocking code: the async body bridged to
//! `std::io::Read` (on the blocking pool, so the runtime keeps serving), counted, and
//! decompressed when it starts with the gzip magic bytes.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::bufread::MultiGzDecoder;
use tokio::io::AsyncReadExt;
use tokio::runtime::Handle;

use crate::store::ObjectBody;

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
    let reader: Box<dyn BufRead + Send> = if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(BufReader::with_capacity(BUFFER, MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    Ok((reader, consumed))
}

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
}
