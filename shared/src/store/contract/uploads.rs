//! Contract cases for [`UploadStore`](crate::store::UploadStore): upload records,
//! found by owner and by object key, listed newest first, started exactly once,
//! finished with their outcome, and gone once expired.

use crate::domain::{ReadingCounts, UploadFailure, UploadKind, UploadRecord, UploadStatus};
use crate::store::{Store, UploadOutcome};

fn record(user: &str, id: &str, created_at: u64, expires_at: u64) -> UploadRecord {
    UploadRecord::waiting(
        id.to_string(),
        user.to_string(),
        UploadKind::Health,
        "glucose 2024.csv".to_string(),
        format!("uploads/{user}-{id}"),
        created_at,
        expires_at,
    )
}

pub(super) async fn upload_records_follow_an_import(
    store: &dyn Store,
    user: &str,
    other: &str,
    now: u64,
) {
    let first = record(user, "0000000001aa", now - 20, now + 3600);
    let second = record(user, "0000000002bb", now - 10, now + 3600);
    let expired = record(user, "0000000000ff", now - 30, now - 1);
    for r in [&first, &second, &expired] {
        store.create_upload(r).await.unwrap();
    }

    // Found by its owner and by its object key; nobody else sees it; expired is gone.
    assert_eq!(
        store.upload(user, &first.id, now).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(store.upload(other, &first.id, now).await.unwrap(), None);
    assert_eq!(store.upload(user, &expired.id, now).await.unwrap(), None);
    assert_eq!(
        store
            .upload_by_object(&second.object_key, now)
            .await
            .unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        store
            .upload_by_object(&expired.object_key, now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.upload_by_object("uploads/none", now).await.unwrap(),
        None
    );

    // Listed newest first, bounded, without the expired one.
    let listed = store.recent_uploads(user, 10, now).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [second.id.as_str(), first.id.as_str()]);
    assert_eq!(store.recent_uploads(user, 1, now).await.unwrap().len(), 1);
    assert!(
        store
            .recent_uploads(other, 10, now)
            .await
            .unwrap()
            .is_empty()
    );

    // Started exactly once (a duplicate event must not import twice).
    assert!(
        store
            .start_upload(user, &first.id, 1234, now)
            .await
            .unwrap()
    );
    assert!(
        !store
            .start_upload(user, &first.id, 1234, now)
            .await
            .unwrap()
    );
    assert!(!store.start_upload(other, &second.id, 1, now).await.unwrap());
    assert!(
        !store
            .start_upload(user, "0000000009zz", 1, now)
            .await
            .unwrap()
    );

    store
        .upload_progress(user, &first.id, 500, 250, 0.75, now + 2)
        .await
        .unwrap();
    let importing = store.upload(user, &first.id, now).await.unwrap().unwrap();
    assert_eq!(importing.status, UploadStatus::Importing);
    assert_eq!(
        (importing.bytes, importing.rows_read, importing.rows_written),
        (1234, 500, 250)
    );
    assert!((importing.progress - 0.75).abs() < 1e-9);
    assert_eq!(
        importing.active_at,
        Some(now + 2),
        "the last report is kept"
    );

    let counts = ReadingCounts {
        new: 200,
        unchanged: 40,
        replaced: 10,
        merged: 3,
    };
    store
        .finish_upload(user, &first.id, &UploadOutcome::Done(Some(counts)), now + 5)
        .await
        .unwrap();
    let done = store.upload(user, &first.id, now).await.unwrap().unwrap();
    assert_eq!(done.status, UploadStatus::Done);
    assert_eq!(done.counts, Some(counts), "what the import did is kept");
    assert_eq!(done.finished_at, Some(now + 5));
    assert_eq!(done.progress, 1.0);
    assert_eq!(done.error, None);

    // A failure keeps its line and message; the record stays the owner's.
    assert!(store.start_upload(user, &second.id, 99, now).await.unwrap());
    let failure = UploadFailure {
        line: Some(400_002),
        message: "value is missing".to_string(),
    };
    store
        .finish_upload(
            user,
            &second.id,
            &UploadOutcome::Failed(failure.clone()),
            now + 6,
        )
        .await
        .unwrap();
    let failed = store
        .upload_by_object(&second.object_key, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failed.status, UploadStatus::Failed);
    assert_eq!(failed.error, Some(failure));
    assert_eq!(failed.user, user);
    // A finished upload is never started again.
    assert!(!store.start_upload(user, &second.id, 99, now).await.unwrap());
}

/// An import whose process was killed reports no more. It is
/// failed once silent since a time after its last report, and only then: a finished
/// upload, or one that reported since, is left alone. Once failed it stays failed (the
/// import's own end, if it was only slow, changes nothing) and its guarded writes are
/// refused.
pub(super) async fn a_silent_import_is_failed_and_stays_failed(store: &dyn Store, user: &str) {
    use crate::store::StoreError;
    let stalled = UploadFailure {
        line: None,
        message: "the import stopped".to_string(),
    };
    store
        .create_upload(&record(user, "01", 100, 10_000))
        .await
        .unwrap();
    // Waiting is not importing: nothing to fail.
    assert!(
        !store
            .fail_stalled_upload(user, "01", 1_000, &stalled, 1_000)
            .await
            .unwrap()
    );
    assert!(store.start_upload(user, "01", 10, 100).await.unwrap());
    store
        .upload_progress(user, "01", 50, 20, 0.5, 160)
        .await
        .unwrap();
    // Silent since 160: not failed when asked about silence since 160 or before.
    assert!(
        !store
            .fail_stalled_upload(user, "01", 160, &stalled, 400)
            .await
            .unwrap()
    );
    assert!(
        !store
            .fail_stalled_upload(user, "01", 100, &stalled, 400)
            .await
            .unwrap()
    );
    assert!(
        !store
            .fail_stalled_upload(other_user(user).as_str(), "01", 500, &stalled, 500)
            .await
            .unwrap()
    );
    assert!(
        store
            .fail_stalled_upload(user, "01", 161, &stalled, 470)
            .await
            .unwrap()
    );
    assert!(
        !store
            .fail_stalled_upload(user, "01", 161, &stalled, 480)
            .await
            .unwrap()
    );
    let failed = store.upload(user, "01", 500).await.unwrap().unwrap();
    assert_eq!(failed.status, UploadStatus::Failed);
    assert_eq!(failed.error, Some(stalled.clone()));
    assert_eq!(failed.finished_at, Some(470));
    store
        .finish_upload(user, "01", &UploadOutcome::Done(None), 490)
        .await
        .unwrap();
    let still = store.upload(user, "01", 500).await.unwrap().unwrap();
    assert_eq!(
        (still.status, still.error),
        (UploadStatus::Failed, Some(stalled))
    );
    let late = store
        .put_import_readings(
            user,
            "01",
            &[super::reading(
                "Heart rate",
                "2024-03-01T08:00:00",
                "watch",
                60.0,
            )],
        )
        .await;
    assert!(matches!(late, Err(StoreError::ImportStopped)), "{late:?}");
}

fn other_user(user: &str) -> String {
    format!("{user}-other")
}

/// An import's guarded writes: they land while its upload is importing, and
/// once the user's uploads are deleted (what a deletion does first) they are refused
/// with `ImportStopped` and write nothing: no reading, no presence, no genome.
pub(super) async fn import_writes_stop_once_the_upload_is_gone(store: &dyn Store, user: &str) {
    use crate::domain::{Genome, Genotype};
    use crate::store::{ReadingQuery, StoreError};
    let reading = |time: &str, value: f64| super::reading("Heart rate", time, "watch", value);
    store
        .create_upload(&record(user, "01", 100, 10_000))
        .await
        .unwrap();
    // Waiting is not importing: nothing lands before the import started.
    let early = store
        .put_import_readings(user, "01", &[reading("2024-03-01T08:00:00", 60.0)])
        .await;
    assert!(matches!(early, Err(StoreError::ImportStopped)), "{early:?}");
    assert!(store.start_upload(user, "01", 10, 100).await.unwrap());
    let written = store
        .put_import_readings(user, "01", &[reading("2024-03-01T08:00:00", 60.0)])
        .await
        .unwrap();
    assert_eq!(written.new, 1);
    store.delete_uploads(user).await.unwrap();
    store.delete_user_data(user).await.unwrap();
    let late = store
        .put_import_readings(user, "01", &[reading("2024-03-02T08:00:00", 61.0)])
        .await;
    assert!(matches!(late, Err(StoreError::ImportStopped)), "{late:?}");
    let genome = Genome::from_genotypes(&[Genotype {
        rsid: "rs1".into(),
        chromosome: "1".into(),
        position: 1,
        genotype: "AG".into(),
    }])
    .unwrap();
    let late = store
        .replace_import_genome(user, "01", &genome, "late.txt", 200)
        .await;
    assert!(matches!(late, Err(StoreError::ImportStopped)), "{late:?}");
    assert!(
        store
            .readings(user, &ReadingQuery::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.catalogue(user).await.unwrap().is_empty());
    let presence = store.data_presence(user).await.unwrap();
    assert!(!presence.health && !presence.genotype, "{presence:?}");
    assert!(store.genome_summary(user).await.unwrap().is_none());
}
