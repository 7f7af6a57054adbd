//! Contract cases for the whole account: what the export reads
//! ([`AccountStore::account_records`](crate::store::AccountStore::account_records)) and
//! deleting everything of a user
//! ([`AccountStore::delete_account_everything`](crate::store::AccountStore::delete_account_everything),
//! [`UploadStore::delete_uploads`](crate::store::UploadStore::delete_uploads)).

use super::{YEAR, genotype, put_genome, reading, strings};
use crate::domain::{
    Account, DataPresence, McpAuth, McpServerRecord, McpServerWrite, PersonalUrl, UploadKind,
    UploadRecord,
};
use crate::store::{
    AccountRecords, Created, Period, ReadingQuery, Store, TokenChange, UploadStore,
};

/// Everything of one kind each that the store keeps for `user`, with `other` on the
/// receiving end of a share; returns the secret hashes of its personal and delegated URLs.
async fn one_of_everything(store: &dyn Store, user: &str, other: &str, now: u64) -> [String; 2] {
    let account = Account {
        user_id: user.to_string(),
        email: format!("{user}@example.com"),
        password_hash: format!("hash-of-{user}"),
        created_at: 1_700_000_000,
        email_confirmed: false,
    };
    assert_eq!(
        store.create_account(&account).await.unwrap(),
        Created::Created
    );
    store
        .put_readings(
            user,
            &[
                reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0),
                reading("Glucose", "2024-02-01T08:00:00", "lab", 95.0),
            ],
        )
        .await
        .unwrap();
    put_genome(store, user, &[genotype("rs1", "1", 100, "AG")]).await;
    let upload = UploadRecord::waiting(
        format!("{user}-upload"),
        user.to_string(),
        UploadKind::Health,
        "readings.csv".to_string(),
        format!("uploads/{user}-file"),
        now,
        now + 3600,
    );
    store.create_upload(&upload).await.unwrap();
    store
        .put_share(user, other, &strings(&["read:health"]))
        .await
        .unwrap();
    let delegated = PersonalUrl {
        sealed_secret: format!("sealed-share-{user}"),
        secret_hash: format!("hash-share-{user}"),
        expires_at: now + YEAR,
        epoch: 0,
    };
    store
        .claim_share_url(user, other, "read:health", &delegated, now)
        .await
        .unwrap()
        .expect("the share holds the permission");
    let personal = PersonalUrl {
        sealed_secret: format!("sealed-{user}"),
        secret_hash: format!("hash-personal-{user}"),
        expires_at: now + YEAR,
        epoch: 0,
    };
    store
        .claim_personal_url(user, &personal, now)
        .await
        .unwrap();
    store
        .change_tokens(
            user,
            &TokenChange::Grant {
                client_id: format!("{user}-client"),
                client_name: Some("An app".to_string()),
                scope: "mcp:tools".to_string(),
            },
            now,
        )
        .await
        .unwrap();
    let server = McpServerRecord {
        name: "weather".into(),
        url: format!("https://{user}.example/mcp"),
        auth: McpAuth::None,
        sealed_credential: Some("sealed-credential".into()),
        enabled: true,
        order: 0,
        allowed_tools: None,
        controls: Default::default(),
        tools: Vec::new(),
        server_name: None,
        created_at: 1,
        updated_at: 1,
        last_connected_at: None,
        last_connect_error: None,
    };
    assert_eq!(
        store.create_mcp_server(user, &server).await.unwrap(),
        McpServerWrite::Written
    );
    [personal.secret_hash, delegated.secret_hash]
}

/// Everything of the deleted user is gone, on both backends; everything of the other
/// user stays; a retry finishes the job; the e-mail can sign up again.
pub(super) async fn deleting_an_account_leaves_nothing_of_it(
    store: &dyn Store,
    gone: &str,
    kept: &str,
    now: u64,
) {
    let gone_urls = one_of_everything(store, gone, kept, now).await;
    let kept_urls = one_of_everything(store, kept, gone, now).await;
    assert_eq!(
        store.account_records(gone).await.unwrap(),
        AccountRecords {
            shares_granted: vec![(kept.to_string(), strings(&["read:health"]))],
            personal_url_expires_at: Some(now + YEAR),
        }
    );

    store.delete_account_everything(gone, now).await.unwrap();
    // Idempotent: a second run (a retry) finds nothing left and succeeds.
    store.delete_account_everything(gone, now).await.unwrap();

    let all = ReadingQuery::default();
    assert_eq!(store.account(gone).await.unwrap(), None);
    assert_eq!(
        store
            .account_by_email(&format!("{gone}@example.com"))
            .await
            .unwrap(),
        None
    );
    assert!(store.readings(gone, &all).await.unwrap().is_empty());
    assert!(store.catalogue(gone).await.unwrap().is_empty());
    assert!(
        store
            .rollups(gone, "glucose", Period::Day, "2000-01-01", "2100-01-01")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .rollups(gone, "glucose", Period::Month, "2000-01", "2100-01")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.genome_summary(gone).await.unwrap(), None);
    assert!(
        store
            .genotypes_by_rsid(gone, &strings(&["rs1"]))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.data_presence(gone).await.unwrap(),
        DataPresence::default()
    );
    assert!(
        store
            .recent_uploads(gone, 50, now)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .upload_by_object(&format!("uploads/{gone}-file"), now)
            .await
            .unwrap(),
        None
    );
    assert!(store.mcp_servers(gone).await.unwrap().is_empty());
    assert_eq!(store.share(gone, kept).await.unwrap(), None);
    assert_eq!(store.share_url(gone, kept, now).await.unwrap(), None);
    for hash in &gone_urls {
        assert_eq!(store.url_grant(hash, now).await.unwrap(), None);
    }
    assert_eq!(
        store.account_records(gone).await.unwrap(),
        AccountRecords::default()
    );
    // What is left is the tombstone: every token of the account refused, no grants.
    let state = store.token_state(gone).await.unwrap();
    assert!(state.deleted() && state.grants.is_empty());
    // It never changes back (a racing sign-out everywhere cannot revive the account).
    let after = store
        .change_tokens(gone, &TokenChange::EndAll, now)
        .await
        .unwrap();
    assert!(after.deleted());

    // The other user keeps everything.
    assert!(store.account(kept).await.unwrap().is_some());
    assert_eq!(store.readings(kept, &all).await.unwrap().len(), 2);
    assert_eq!(store.catalogue(kept).await.unwrap().len(), 1);
    assert_eq!(
        store
            .genome_summary(kept)
            .await
            .unwrap()
            .map(|g| g.variants),
        Some(1)
    );
    assert_eq!(store.recent_uploads(kept, 50, now).await.unwrap().len(), 1);
    assert_eq!(store.mcp_servers(kept).await.unwrap().len(), 1);
    assert!(store.url_grant(&kept_urls[0], now).await.unwrap().is_some());
    let kept_state = store.token_state(kept).await.unwrap();
    assert!(!kept_state.deleted() && kept_state.grants.len() == 1);
    // (The share `kept` granted `gone` is `kept`'s record: the embedded store deletes
    // it; DynamoDB cannot find it by grantee and leaves it, and the grantee's delegated
    // URL on it is refused through the grantee's tombstone.)
    assert_eq!(
        store
            .account_records(kept)
            .await
            .unwrap()
            .personal_url_expires_at,
        Some(now + YEAR)
    );

    // The e-mail is free for a new account.
    let again = Account {
        user_id: format!("{gone}-again"),
        email: format!("{gone}@example.com"),
        password_hash: "new".to_string(),
        created_at: 1_800_000_000,
        email_confirmed: false,
    };
    assert_eq!(
        store.create_account(&again).await.unwrap(),
        Created::Created
    );
    // A late retry of the old deletion leaves the new account's e-mail alone.
    store.delete_account_everything(gone, now).await.unwrap();
    assert_eq!(
        store
            .account_by_email(&format!("{gone}@example.com"))
            .await
            .unwrap()
            .map(|a| a.user_id),
        Some(again.user_id)
    );
}

/// Deleting a user's uploads removes their records and the way from their files to
/// them; another user's stay.
pub(super) async fn delete_uploads_removes_records_and_pointers(
    store: &dyn Store,
    user: &str,
    other: &str,
    now: u64,
) {
    for (owner, id) in [(user, "a1"), (user, "a2"), (other, "b1")] {
        let record = UploadRecord::waiting(
            format!("{owner}-{id}"),
            owner.to_string(),
            UploadKind::Genotype,
            "genome.txt".to_string(),
            format!("uploads/{owner}-{id}"),
            now,
            now + 3600,
        );
        store.create_upload(&record).await.unwrap();
    }
    UploadStore::delete_uploads(store, user).await.unwrap();
    UploadStore::delete_uploads(store, user).await.unwrap();
    assert!(
        store
            .recent_uploads(user, 50, now)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .upload_by_object(&format!("uploads/{user}-a1"), now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.recent_uploads(other, 50, now).await.unwrap().len(), 1);
    assert!(
        store
            .upload_by_object(&format!("uploads/{other}-b1"), now)
            .await
            .unwrap()
            .is_some()
    );
}
