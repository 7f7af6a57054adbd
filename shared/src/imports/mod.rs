//! Importing uploaded files: the one runner both places use. Locally the
//! server starts it as a background task once a PUT has stored the file; deployed, the
//! `import` function calls [`Importer::import_object`] for each S3 `ObjectCreated`
//! event.
//!
//! Owns the order of an import: find the upload by its object key, start it exactly
//! once (a duplicate event during the import does nothing; an object no upload owns, or
//! one that arrives after its upload's import ended, is deleted), read the file through
//! [`UploadObjects::open`] (gzip detected by its magic bytes and decompressed as a
//! stream), parse by kind and write, record progress and the outcome, then delete the
//! file. Parsing runs on the blocking pool and hands rows over a bounded channel, so
//! memory stays bounded whatever the file's size. Readings go in two passes: the first
//! validates every row (a bad row fails the upload with its line and nothing is saved),
//! the second writes them in chunks. The REST side (create, poll, list, and the local
//! PUT) is `api/uploads.rs`; this part never imports it. [`Importer::import_object`] answers an [`ImportSummary`] (rows, duration,
//! failed) for the import function's metrics. Never logs a user id, an object key or any
//! content.

mod readers;
mod readings;

use std::sync::Arc;

use crate::clock::Clock;
use crate::domain::{ReadingCounts, UploadFailure, UploadKind, UploadRecord, UploadStatus};
use crate::store::{Store, StoreError, StoredObject, UploadObjects, UploadOutcome};
use crate::upload::{self, UploadError};

/// Why [`Importer::import_object`] could not run an import. A failed import (a bad
/// row, an unsupported format) is not an error: it is recorded on the upload.
#[derive(Debug)]
pub enum ImportError {
    /// No live upload has this object key (never created, or expired).
    UnknownObject,
    /// The upload exists but its file is not there (yet).
    MissingObject,
    /// The store or the object storage failed; retrying the event is safe.
    Store(StoreError),
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::UnknownObject => f.write_str("no upload has this object"),
            ImportError::MissingObject => f.write_str("the upload's file is missing"),
            ImportError::Store(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ImportError {}

impl From<StoreError> for ImportError {
    fn from(error: StoreError) -> Self {
        ImportError::Store(error)
    }
}

/// What one import did, for its metrics: a contract type of `observe`, which writes it.
pub use crate::observe::ImportSummary;

/// The import runner, built once per process from the services.
pub struct Importer {
    store: Arc<dyn Store>,
    objects: Arc<dyn UploadObjects>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Importer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Importer").finish_non_exhaustive()
    }
}

/// The default source of rows that name none (as `POST /api/data/health`).
const DEFAULT_SOURCE: &str = "upload";

/// The largest genotype file read (decompressed), the parser's own bound.
const MAX_GENOTYPE_FILE: u64 = upload::MAX_GENOTYPE_FILE;

impl Importer {
    /// The runner over the store, the upload bucket and the clock (a binary gets one
    /// from `Services::importer`).
    pub(crate) fn new(
        store: Arc<dyn Store>,
        objects: Arc<dyn UploadObjects>,
        clock: Arc<dyn Clock>,
    ) -> Importer {
        Importer {
            store,
            objects,
            clock,
        }
    }

    /// Imports the uploaded file `key`: once per upload (a repeated call for a started
    /// upload returns `Ok(None)` without importing). The outcome, a bad row's line
    /// included, is recorded on the upload; the file is deleted when the import ends.
    /// An object no live upload owns, or one that arrives again after its upload's import
    /// ended, is deleted at once; one whose import is running is left to it.
    /// Answers the import's [`ImportSummary`] when this call ran it.
    pub async fn import_object(&self, key: &str) -> Result<Option<ImportSummary>, ImportError> {
        let Some(record) = self.store.upload_by_object(key, self.clock.now()).await? else {
            // No live upload owns the object (a PUT that completed
            // after its account or data was deleted, an expired upload): nothing will
            // ever read it, so it goes now.
            self.objects.remove(key).await?;
            return Err(ImportError::UnknownObject);
        };
        match record.status {
            UploadStatus::Waiting => {}
            // A repeated event or a replayed PUT after the import ended: the object is
            // a copy nothing reads.
            UploadStatus::Done | UploadStatus::Failed => {
                self.objects.remove(key).await?;
                return Ok(None);
            }
            // A repeated event during the import: the object is the file being read
            // (readings are read twice), so it stays; the import removes it at its end.
            UploadStatus::Importing => return Ok(None),
        }
        let object = self
            .objects
            .open(key)
            .await?
            .ok_or(ImportError::MissingObject)?;
        if !self
            .store
            .start_upload(&record.user, &record.id, object.size, self.clock.now())
            .await?
        {
            return Ok(None);
        }
        let started = std::time::Instant::now();
        let (outcome, rows) = match self.run(&record, object).await {
            Ok((rows, counts)) => (UploadOutcome::Done(counts), rows),
            Err(failure) => (UploadOutcome::Failed(failure), 0),
        };
        if let UploadOutcome::Failed(failure) = &outcome {
            tracing::info!(kind = record.kind.as_str(), line = ?failure.line, "import failed");
        }
        self.store
            .finish_upload(&record.user, &record.id, &outcome, self.clock.now())
            .await?;
        let summary = ImportSummary {
            rows,
            duration: started.elapsed(),
            failed: matches!(outcome, UploadOutcome::Failed(_)),
        };
        self.objects.remove(key).await?;
        Ok(Some(summary))
    }

    /// Parses and writes by kind: the rows written, or the failure recorded on the upload.
    /// Runs the import: the rows written, and for readings what they did to the store.
    async fn run(
        &self,
        record: &UploadRecord,
        object: StoredObject,
    ) -> Result<(u64, Option<ReadingCounts>), UploadFailure> {
        let format = match record.kind {
            UploadKind::Health => readings::Format::Readings,
            UploadKind::AppleHealth => readings::Format::AppleHealth,
            UploadKind::Genotype => {
                let rows = self.import_genotypes(record, object).await?;
                return Ok((rows, None));
            }
        };
        let (rows, counts) = readings::import(self, record, object, format).await?;
        Ok((rows, Some(counts)))
    }

    /// A raw genotype file, streamed into a compact genome (about 16 bytes a variant;
    /// the file itself is never held) and stored as a new version that replaces the
    /// previous genome in one switch: until then the previous genome stays readable, and
    /// a bad row anywhere saves nothing.
    async fn import_genotypes(
        &self,
        record: &UploadRecord,
        object: StoredObject,
    ) -> Result<u64, UploadFailure> {
        let handle = tokio::runtime::Handle::current();
        let genome = tokio::task::spawn_blocking(move || {
            let (reader, _) = readers::open(object.body, handle).map_err(read_failure)?;
            let mut bounded = std::io::Read::take(reader, MAX_GENOTYPE_FILE + 1);
            let genome = upload::read_genome(&mut bounded).map_err(failure_of)?;
            if bounded.limit() == 0 {
                return Err(read_failure(std::io::Error::from(
                    std::io::ErrorKind::FileTooLarge,
                )));
            }
            Ok(genome)
        })
        .await
        .map_err(|_| internal())??;
        let rows = genome.len() as u64;
        self.progress(record, rows, 0, 0.5).await;
        let now = self.clock.now();
        self.store
            .replace_import_genome(&record.user, &record.id, &genome, &record.filename, now)
            .await
            .map_err(store_failure)?;
        self.progress(record, rows, rows, 1.0).await;
        Ok(rows)
    }

    /// Records progress; a failure to record it does not stop the import.
    async fn progress(&self, record: &UploadRecord, read: u64, written: u64, progress: f64) {
        if let Err(error) = self
            .store
            .upload_progress(
                &record.user,
                &record.id,
                read,
                written,
                progress,
                self.clock.now(),
            )
            .await
        {
            tracing::warn!(%error, "import progress not recorded");
        }
    }
}

/// A parser's refusal as the upload's error: the line when it names one.
fn failure_of(error: UploadError) -> UploadFailure {
    let line = error
        .location
        .strip_prefix("line ")
        .and_then(|n| n.parse::<u64>().ok());
    let message = match line {
        Some(_) => error.problem,
        None => error.to_string(),
    };
    UploadFailure { line, message }
}

/// A read that failed: the bound it passed (a decompression bomb, a zip inside
/// gzip), else a damaged file.
fn read_failure(error: std::io::Error) -> UploadFailure {
    if let Some(refused) = upload::refusal(&error, || "file".into()) {
        return failure_of(refused);
    }
    UploadFailure {
        line: None,
        message: match error.kind() {
            std::io::ErrorKind::FileTooLarge => "the file is too large for its kind".into(),
            _ => "the file could not be read (a damaged gzip file?)".into(),
        },
    }
}

fn store_failure(error: StoreError) -> UploadFailure {
    if matches!(error, StoreError::ImportStopped) {
        return UploadFailure {
            line: None,
            message: "stopped: the data was deleted during this import, and nothing of the \
                      file was kept"
                .into(),
        };
    }
    tracing::warn!(%error, "import: store failure");
    UploadFailure {
        line: None,
        message: "storage was unavailable; upload the file again (it never duplicates rows)".into(),
    }
}

fn internal() -> UploadFailure {
    UploadFailure {
        line: None,
        message: "internal error while reading the file".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::store::{
        EmbeddedStore, HealthStore, LocalObjects, ReadingQuery, Received, UploadStore,
    };

    const NOW: u64 = 1_800_000_000;

    async fn stored(objects: &LocalObjects, key: &str, body: &str) {
        let target = objects.put_target(key, NOW + 60, None).await.unwrap();
        let query = target.url.split_once('?').unwrap().1.to_string();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.send(Ok(bytes::Bytes::from(body.to_string())))
            .await
            .unwrap();
        drop(tx);
        let received = objects.receive(key, &query, NOW, rx, 1 << 20).await;
        assert!(matches!(received, Ok(Received::Stored { .. })));
    }

    /// An importer over a fresh embedded store and objects directory named `label`:
    /// the directory, the store, the objects and the importer.
    fn fixture(
        label: &str,
    ) -> (
        std::path::PathBuf,
        Arc<EmbeddedStore>,
        Arc<LocalObjects>,
        Importer,
    ) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "mirobody-import-{label}-{}-{nanos}",
            std::process::id()
        ));
        let store = Arc::new(EmbeddedStore::open(dir.join("db.sqlite3")).unwrap());
        let objects =
            Arc::new(LocalObjects::open(dir.join("uploads"), "http://127.0.0.1:1").unwrap());
        let importer = Importer {
            store: store.clone(),
            objects: objects.clone(),
            clock: Arc::new(FakeClock::at(NOW)),
        };
        (dir, store, objects, importer)
    }

    /// A repeated event (S3 delivers at least once) and racing calls import once; an
    /// unknown object is an error, not an import.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_object_is_imported_once_whatever_the_events() {
        let (dir, store, objects, importer) = fixture("once");
        let importer = Arc::new(importer);
        let record = UploadRecord::waiting(
            "01".into(),
            "u1".into(),
            UploadKind::Health,
            "a.csv".into(),
            "uploads/01".into(),
            NOW,
            NOW + 3600,
        );
        store.create_upload(&record).await.unwrap();
        stored(
            &objects,
            "uploads/01",
            "indicator,value,unit,time\nLDL,3,mmol/L,2025-01-01\nLDL,4,mmol/L,2025-01-02\n",
        )
        .await;

        let racing = (0..3).map(|_| {
            let importer = importer.clone();
            tokio::spawn(async move { importer.import_object("uploads/01").await })
        });
        let mut summaries = Vec::new();
        for outcome in futures_util::future::join_all(racing).await {
            match outcome.unwrap() {
                Ok(Some(summary)) => summaries.push(summary),
                Ok(None) | Err(ImportError::MissingObject) => {}
                other => panic!("{other:?}"),
            }
        }
        // The one call that ran the import says what it did.
        assert_eq!(summaries.len(), 1, "{summaries:?}");
        assert_eq!((summaries[0].rows, summaries[0].failed), (2, false));
        let done = store.upload("u1", "01", NOW).await.unwrap().unwrap();
        assert_eq!((done.status, done.rows_written), (UploadStatus::Done, 2));
        let rows = store
            .readings("u1", &ReadingQuery::default())
            .await
            .unwrap();
        assert_eq!(rows.len(), 2);
        assert!(
            objects.open("uploads/01").await.unwrap().is_none(),
            "the file is deleted"
        );
        assert!(matches!(
            importer.import_object("uploads/01").await,
            Ok(None)
        ));
        assert!(matches!(
            importer.import_object("uploads/none").await,
            Err(ImportError::UnknownObject)
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// An object no live upload owns is deleted (a PUT that
    /// completed after its account was deleted), and so is one that arrives again after
    /// its upload's import ended (a replayed PUT, a repeated S3 event); the file of an
    /// upload whose import runs is never touched by another event (the import reads it
    /// again in its second pass).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn objects_no_running_import_reads_are_deleted() {
        let (dir, store, objects, importer) = fixture("orphans");
        let csv = "indicator,value,unit,time\nLDL,3,mmol/L,2025-01-01\n";

        // No upload owns it: deleted.
        stored(&objects, "uploads/orphan", csv).await;
        assert!(matches!(
            importer.import_object("uploads/orphan").await,
            Err(ImportError::UnknownObject)
        ));
        assert!(objects.open("uploads/orphan").await.unwrap().is_none());

        // Imported, then the same file again (a replayed PUT): the copy is deleted and
        // nothing is imported twice.
        let record = |id: &str| {
            UploadRecord::waiting(
                id.into(),
                "u3".into(),
                UploadKind::Health,
                "a.csv".into(),
                format!("uploads/{id}"),
                NOW,
                NOW + 3600,
            )
        };
        store.create_upload(&record("03")).await.unwrap();
        stored(&objects, "uploads/03", csv).await;
        assert!(
            importer
                .import_object("uploads/03")
                .await
                .unwrap()
                .is_some()
        );
        stored(&objects, "uploads/03", csv).await;
        assert!(
            importer
                .import_object("uploads/03")
                .await
                .unwrap()
                .is_none()
        );
        assert!(objects.open("uploads/03").await.unwrap().is_none());
        let done = store.upload("u3", "03", NOW).await.unwrap().unwrap();
        assert_eq!((done.status, done.rows_written), (UploadStatus::Done, 1));

        // Failed, then the file again: deleted too.
        store.create_upload(&record("04")).await.unwrap();
        stored(&objects, "uploads/04", "not,a,readings\nfile").await;
        assert!(
            importer
                .import_object("uploads/04")
                .await
                .unwrap()
                .is_some()
        );
        let failed = store.upload("u3", "04", NOW).await.unwrap().unwrap();
        assert_eq!(failed.status, UploadStatus::Failed, "{failed:?}");
        stored(&objects, "uploads/04", csv).await;
        assert!(
            importer
                .import_object("uploads/04")
                .await
                .unwrap()
                .is_none()
        );
        assert!(objects.open("uploads/04").await.unwrap().is_none());

        // Importing (started elsewhere): a duplicate event leaves its file alone.
        store.create_upload(&record("05")).await.unwrap();
        stored(&objects, "uploads/05", csv).await;
        assert!(store.start_upload("u3", "05", 10, NOW).await.unwrap());
        assert!(
            importer
                .import_object("uploads/05")
                .await
                .unwrap()
                .is_none()
        );
        assert!(objects.open("uploads/05").await.unwrap().is_some());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The counts an upload reports are what was stored, when a
    /// file repeats readings across its 5,000-row write chunks. 12,000 rows: 10,000
    /// distinct readings (one a minute), then the first 2,000 again, identical, in the
    /// third chunk. Stored: 10,000; reported: 10,000 written, 10,000 new, 2,000 merged.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_are_what_was_stored_across_chunks() {
        let (dir, store, objects, importer) = fixture("counts");
        let record = UploadRecord::waiting(
            "02".into(),
            "u2".into(),
            UploadKind::Health,
            "minutes.csv".into(),
            "uploads/02".into(),
            NOW,
            NOW + 3600,
        );
        store.create_upload(&record).await.unwrap();
        let row = |i: usize| {
            format!(
                "Heart rate,{},bpm,2025-01-{:02}T{:02}:{:02}:00,Watch\n",
                60 + i % 30,
                1 + i / 1440,
                i / 60 % 24,
                i % 60
            )
        };
        let mut csv = String::from("indicator,value,unit,time,source\n");
        (0..10_000).chain(0..2_000).for_each(|i| csv += &row(i));
        stored(&objects, "uploads/02", &csv).await;
        let summary = importer.import_object("uploads/02").await.unwrap().unwrap();
        let done = store.upload("u2", "02", NOW).await.unwrap().unwrap();
        assert_eq!(done.status, UploadStatus::Done, "{done:?}");
        let stored_rows = store
            .readings("u2", &ReadingQuery::default())
            .await
            .unwrap()
            .len() as u64;
        assert_eq!(stored_rows, 10_000);
        assert_eq!(
            (summary.rows, done.rows_written),
            (stored_rows, stored_rows)
        );
        let counts = done.counts.unwrap();
        assert_eq!(
            (counts.new, counts.unchanged, counts.replaced),
            (10_000, 0, 0)
        );
        assert_eq!(counts.merged, 2_000);
        let _ = std::fs::remove_dir_all(dir);
    }
}
