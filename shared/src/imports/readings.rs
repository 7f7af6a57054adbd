//! Readings (CSV or JSON, or an Apple Health export: `export.xml` or `export.zip`) in two
//! streaming passes: the first validates every row and
//! counts them (a bad row fails the upload with its line or index, nothing saved), and
//! notes which rows repeat an earlier one (a bit each); the
//! second parses again, drops those repeats without comparing rows again, and writes
//! [`CHUNK`] rows at a time through
//! `HealthStore::put_readings` (which replaces same-identity rows, so a re-upload never
//! duplicates). Parsing runs on the blocking pool; rows cross to the writer over a
//! channel of at most [`IN_FLIGHT`] chunks, so memory is bounded by the chunk size.

use tokio::runtime::Handle;
use tokio::sync::mpsc;

use super::{DEFAULT_SOURCE, Importer, failure_of, internal, read_failure, readers, store_failure};
use crate::domain::{Reading, ReadingCounts, UploadFailure, UploadRecord};
use crate::store::{ObjectBody, StoredObject};
use crate::upload::{self, Repeats, UploadError};

/// Rows per `put_readings` call.
const CHUNK: usize = 5_000;
/// Chunks parsed ahead of the writer.
const IN_FLIGHT: usize = 2;
/// The most rows one file may hold (bounded work; the file's size is bounded too).
const MAX_FILE_ROWS: usize = 20_000_000;
/// How often the first pass reports progress, in rows.
const REPORT_EVERY: usize = 50_000;

enum Message {
    /// Rows validated so far.
    Validated(u64),
    /// Rows to write.
    Rows(Vec<Reading>),
}

/// Which file format holds the readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// CSV or JSON readings (told apart by the first byte).
    Readings,
    /// An Apple Health export: `export.xml`, or `export.zip` (told apart by the zip
    /// signature). Records of unknown types are counted and skipped by the parser.
    AppleHealth,
}

/// The zip local file header signature (`PK\x03\x04`).
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Parses the object's content (plain or gzip), handing every reading to `row` until it
/// answers `false`; `repeats` as the parsers take them.
fn parse(
    body: ObjectBody,
    handle: Handle,
    format: Format,
    repeats: &mut Repeats,
    mut row: impl FnMut(Reading) -> bool,
) -> Result<u64, UploadFailure> {
    let (mut reader, _) = readers::open(body, handle).map_err(read_failure)?;
    let parsed: Result<usize, UploadError> = match format {
        Format::Readings => {
            // A zip chosen as readings is, in practice, an Apple Health export.
            if reader
                .fill_buf()
                .map_err(read_failure)?
                .starts_with(ZIP_MAGIC)
            {
                return Err(UploadFailure {
                    line: None,
                    message: "this is a zip file, not a readings file: if it is the Apple \
                              Health export (export.zip), upload it again as an Apple Health \
                              export"
                        .into(),
                });
            }
            if readers::looks_like_json(&mut reader).map_err(read_failure)? {
                upload::for_each_json_reading(reader, DEFAULT_SOURCE, MAX_FILE_ROWS, repeats, row)
            } else {
                upload::for_each_csv_reading(reader, DEFAULT_SOURCE, MAX_FILE_ROWS, repeats, row)
            }
        }
        Format::AppleHealth => {
            // The writer stopped (a store failure, reported by the caller): end the parse.
            let mut each = |reading: Reading| {
                if row(reading) {
                    Ok(())
                } else {
                    Err(UploadError {
                        location: "import".into(),
                        problem: "stopped".into(),
                    })
                }
            };
            let zipped = reader
                .fill_buf()
                .map_err(read_failure)?
                .starts_with(ZIP_MAGIC);
            let report = if zipped {
                upload::stream_apple_health_zip(reader, &mut each)
            } else {
                upload::stream_apple_health_xml(reader, &mut each)
            };
            report.map(|report| usize::try_from(report.imported).unwrap_or(usize::MAX))
        }
    };
    parsed.map(|rows| rows as u64).map_err(failure_of)
}

/// What a pass read: the rows parsed, the readings handed over, and the file's repeats.
type Pass = (u64, u64, Repeats);

/// Runs `parse` on the blocking pool, feeding `messages`; the second pass replays the
/// first's `repeats`.
fn spawn_pass(
    body: ObjectBody,
    format: Format,
    first: bool,
    mut repeats: Repeats,
    messages: mpsc::Sender<Message>,
) -> tokio::task::JoinHandle<Result<Pass, UploadFailure>> {
    let handle = Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut chunk = Vec::with_capacity(if first { 0 } else { CHUNK });
        let mut count = 0u64;
        let mut open = true;
        let rows = parse(body, handle, format, &mut repeats, |reading| {
            count += 1;
            if first {
                if count.is_multiple_of(REPORT_EVERY as u64) {
                    // Progress is best effort: a full channel skips a report.
                    let _ = messages.try_send(Message::Validated(count));
                }
                return true;
            }
            chunk.push(reading);
            if chunk.len() == CHUNK {
                let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                // The writer stopped (a store failure): stop parsing.
                open = messages.blocking_send(Message::Rows(full)).is_ok();
            }
            open
        })?;
        if !first && !chunk.is_empty() && open {
            let _ = messages.blocking_send(Message::Rows(chunk));
        }
        Ok((rows, count, repeats))
    })
}

pub(super) async fn import(
    importer: &Importer,
    record: &UploadRecord,
    object: StoredObject,
    format: Format,
) -> Result<(u64, ReadingCounts), UploadFailure> {
    // Pass 1: validate every row; nothing is written.
    let (messages, mut inbox) = mpsc::channel(IN_FLIGHT);
    let pass = spawn_pass(object.body, format, true, Repeats::default(), messages);
    while let Some(message) = inbox.recv().await {
        if let Message::Validated(rows) = message {
            importer.progress(record, rows, 0, 0.0).await;
        }
    }
    let (_, total, repeats) = pass.await.map_err(|_| internal())??;
    importer.progress(record, total, 0, 0.1).await;

    // Pass 2: parse again and write in chunks.
    let again = importer
        .objects
        .open(&record.object_key)
        .await
        .map_err(store_failure)?
        .ok_or_else(|| UploadFailure {
            line: None,
            message: "the file disappeared during its import".into(),
        })?;
    let (messages, mut inbox) = mpsc::channel(IN_FLIGHT);
    let pass = spawn_pass(again.body, format, false, repeats, messages);
    let mut written = 0u64;
    let mut counts = ReadingCounts::default();
    let mut failed = None;
    while let Some(message) = inbox.recv().await {
        let Message::Rows(rows) = message else {
            continue;
        };
        let put = importer
            .store
            .put_import_readings(&record.user, &record.id, &rows);
        match put.await {
            Ok(report) => {
                written += report.written as u64;
                counts.new += report.new as u64;
                counts.unchanged += report.unchanged as u64;
                counts.replaced += report.replaced as u64;
                let done = 0.1 + 0.9 * (written as f64 / total.max(1) as f64);
                importer
                    .progress(record, total, written, done.min(1.0))
                    .await;
            }
            Err(error) => {
                failed = Some(store_failure(error));
                break;
            }
        }
    }
    drop(inbox);
    let parsed = pass.await.map_err(|_| internal())?;
    if let Some(failure) = failed {
        return Err(failure);
    }
    let (rows, handed, _) = parsed?;
    // Rows the parser read that it did not hand over: identical repeats in the file.
    counts.merged = rows.saturating_sub(handed);
    Ok((written, counts))
}
