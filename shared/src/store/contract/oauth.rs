//! Contract cases for [`OAuthStore`](crate::store::OAuthStore): clients, single-use
//! codes, refresh token rotation and family revocation.
//!
//! Each case speaks only through the `Store` trait, never a backend's own API, so both
//! backends run it unchanged; its users are its own, so no case sees another's data.

use super::{YEAR, strings};
use crate::domain::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};
use crate::store::Store;

fn oauth_client(client_id: &str, name: &str) -> OAuthClient {
    OAuthClient {
        client_id: client_id.to_string(),
        secret_hash: Some(format!("sha256-of-{name}-secret")),
        redirect_uris: strings(&["https://app.example/callback", "http://127.0.0.1:33418/cb"]),
        grant_types: strings(&["authorization_code", "refresh_token"]),
        token_endpoint_auth_method: "client_secret_post".to_string(),
        client_name: Some(name.to_string()),
        created_at: 1_700_000_000,
        expires_at: None,
    }
}

fn auth_code(user: &str, resource: Option<&str>, expires_at: u64) -> AuthCode {
    AuthCode {
        client_id: format!("{user}-client"),
        user_id: user.to_string(),
        scope: "read:health read:genetics".to_string(),
        redirect_uri: "https://app.example/callback?x=1".to_string(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".to_string(),
        resource: resource.map(String::from),
        expires_at,
        epoch: 3,
        issued_at: expires_at.saturating_sub(600),
    }
}

fn refresh_record(user: &str, family: &str, expires_at: u64) -> RefreshRecord {
    RefreshRecord {
        user_id: user.to_string(),
        client_id: format!("{user}-client"),
        scope: "read:health".to_string(),
        resource: Some("https://mcp.example/mcp".to_string()),
        family_id: family.to_string(),
        expires_at,
        epoch: 2,
        issued_at: 1_700_000_000,
    }
}

pub(super) async fn clients_are_registered_once(store: &dyn Store, run: &str, now: u64) {
    let id = format!("{run}-app");
    assert_eq!(store.client(&id, now).await.unwrap(), None);

    let first = oauth_client(&id, "First App");
    assert!(store.put_client(&first).await.unwrap());
    assert_eq!(
        store.client(&id, now).await.unwrap(),
        Some(first.clone()),
        "every field reads back"
    );

    let second = OAuthClient {
        created_at: 1_800_000_000,
        ..oauth_client(&id, "Second App")
    };
    assert!(
        !store.put_client(&second).await.unwrap(),
        "a taken id is refused"
    );
    assert_eq!(
        store.client(&id, now).await.unwrap(),
        Some(first),
        "the first client is unchanged"
    );

    // A public client: no secret, no name, no grant types listed.
    let public = OAuthClient {
        secret_hash: None,
        client_name: None,
        grant_types: Vec::new(),
        token_endpoint_auth_method: "none".to_string(),
        ..oauth_client(&format!("{run}-public"), "unused")
    };
    assert!(store.put_client(&public).await.unwrap());
    assert_eq!(
        store.client(&public.client_id, now).await.unwrap(),
        Some(public)
    );
    assert_eq!(
        store.client(&format!("{run}-unknown"), now).await.unwrap(),
        None
    );
}

/// An unused registration lapses at its `expires_at`; each use moves it on; a lapsed or
/// deleted client is never brought back by the move.
pub(super) async fn unused_clients_lapse_and_use_extends_them(
    store: &dyn Store,
    run: &str,
    now: u64,
) {
    let id = format!("{run}-app");
    let client = OAuthClient {
        expires_at: Some(now + 60),
        ..oauth_client(&id, "Lapsing App")
    };
    assert!(store.put_client(&client).await.unwrap());
    assert_eq!(store.client(&id, now).await.unwrap(), Some(client.clone()));
    assert_eq!(
        store.client(&id, now + 60).await.unwrap(),
        None,
        "lapsed at its expires_at"
    );

    assert!(store.extend_client(&id, now + 3600).await.unwrap());
    assert_eq!(
        store.client(&id, now + 60).await.unwrap(),
        Some(OAuthClient {
            expires_at: Some(now + 3600),
            ..client
        }),
        "used: it lives on, every other field unchanged"
    );
    assert!(
        !store
            .extend_client(&format!("{run}-never-registered"), now + 3600)
            .await
            .unwrap(),
        "no client is created by extending"
    );
    assert_eq!(
        store
            .client(&format!("{run}-never-registered"), now)
            .await
            .unwrap(),
        None
    );
}

pub(super) async fn codes_are_taken_once(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-code");
    let code = auth_code(run, Some("https://mcp.example/mcp"), now + 600);
    store.put_code(&hash, &code).await.unwrap();
    assert_eq!(
        store.take_code(&hash, now).await.unwrap(),
        Some(code),
        "the first take gets the grant"
    );
    assert_eq!(
        store.take_code(&hash, now).await.unwrap(),
        None,
        "a second take gets nothing"
    );

    let plain_hash = format!("{run}-plain");
    let plain = auth_code(run, None, now + 600);
    store.put_code(&plain_hash, &plain).await.unwrap();
    assert_eq!(
        store.take_code(&plain_hash, now + 599).await.unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .take_code(&format!("{run}-unknown"), now)
            .await
            .unwrap(),
        None
    );
}

pub(super) async fn racing_takes_get_one_code(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-code");
    let code = auth_code(run, None, now + 600);
    store.put_code(&hash, &code).await.unwrap();
    let (a, b) = tokio::join!(store.take_code(&hash, now), store.take_code(&hash, now));
    let got: Vec<AuthCode> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(got, vec![code], "exactly one racing take wins");
}

pub(super) async fn expired_code_is_refused(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-code");
    let code = auth_code(run, None, now + 600);
    store.put_code(&hash, &code).await.unwrap();
    assert_eq!(
        store.take_code(&hash, now + 600).await.unwrap(),
        None,
        "expired at expires_at"
    );
    assert_eq!(
        store.take_code(&hash, now).await.unwrap(),
        None,
        "the expired take deleted it"
    );
}

pub(super) async fn refresh_tokens_are_used_once(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-token");
    let record = refresh_record(run, &format!("{run}-family"), now + 3600);
    store.put_refresh(&hash, &record).await.unwrap();
    assert_eq!(
        store.use_refresh(&hash, now).await.unwrap(),
        RefreshUse::Fresh(record.clone()),
        "first use"
    );
    assert_eq!(
        store.use_refresh(&hash, now + 1).await.unwrap(),
        RefreshUse::Reused(record.clone()),
        "second use is a replay"
    );
    assert_eq!(
        store.use_refresh(&hash, now + 2).await.unwrap(),
        RefreshUse::Reused(record),
        "and stays one"
    );
    assert_eq!(
        store.use_refresh(&hash, now + 3600).await.unwrap(),
        RefreshUse::Unknown,
        "a used token past its expiry is unknown"
    );
    assert_eq!(
        store
            .use_refresh(&format!("{run}-unknown"), now)
            .await
            .unwrap(),
        RefreshUse::Unknown
    );

    // Expired before its first use: unknown, and not marked used.
    let late = format!("{run}-late");
    let no_resource = RefreshRecord {
        resource: None,
        ..refresh_record(run, &format!("{run}-family"), now + 100)
    };
    store.put_refresh(&late, &no_resource).await.unwrap();
    assert_eq!(
        store.use_refresh(&late, now + 100).await.unwrap(),
        RefreshUse::Unknown,
        "expired at expires_at"
    );
    assert_eq!(
        store.use_refresh(&late, now + 99).await.unwrap(),
        RefreshUse::Fresh(no_resource),
        "the expired read wrote nothing"
    );
}

/// One race, not many: moto applies a conditional write as an unlocked read, check and
/// write, so two racing requests can both pass its condition now and then (measured: a
/// few races in a thousand for this update, none for the delete of `take_code`), which
/// DynamoDB itself never allows.
pub(super) async fn racing_refresh_uses_get_one_fresh(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-token");
    let record = refresh_record(run, &format!("{run}-family"), now + 3600);
    store.put_refresh(&hash, &record).await.unwrap();
    let (a, b) = tokio::join!(store.use_refresh(&hash, now), store.use_refresh(&hash, now));
    let mut got = [a.unwrap(), b.unwrap()];
    got.sort_by_key(|u| !matches!(u, RefreshUse::Fresh(_)));
    assert_eq!(
        got,
        [
            RefreshUse::Fresh(record.clone()),
            RefreshUse::Reused(record)
        ],
        "exactly one racing use is fresh"
    );
}

pub(super) async fn revoked_family_reads_as_reused(store: &dyn Store, run: &str, now: u64) {
    let family = format!("{run}-family");
    let bystander_family = format!("{run}-bystander");
    let used = refresh_record(run, &family, now + 3600);
    let unused = refresh_record(run, &family, now + 3600);
    let long_lived = refresh_record(run, &family, now + 3 * YEAR);
    let bystander = refresh_record(run, &bystander_family, now + 3600);
    for (hash, record) in [
        ("used", &used),
        ("unused", &unused),
        ("long", &long_lived),
        ("bystander", &bystander),
    ] {
        store
            .put_refresh(&format!("{run}-{hash}"), record)
            .await
            .unwrap();
    }
    let hash = |name: &str| format!("{run}-{name}");
    assert_eq!(
        store.use_refresh(&hash("used"), now).await.unwrap(),
        RefreshUse::Fresh(used.clone())
    );

    store
        .revoke_refresh_family(&family, now + YEAR)
        .await
        .unwrap();
    // Revoking again with an earlier end does not shorten it.
    store
        .revoke_refresh_family(&family, now + 10)
        .await
        .unwrap();
    assert_eq!(
        store.use_refresh(&hash("unused"), now + 20).await.unwrap(),
        RefreshUse::Reused(unused),
        "an unused token of a revoked family is a replay"
    );
    assert_eq!(
        store.use_refresh(&hash("used"), now + 20).await.unwrap(),
        RefreshUse::Reused(used)
    );
    assert_eq!(
        store
            .use_refresh(&hash("bystander"), now + 20)
            .await
            .unwrap(),
        RefreshUse::Fresh(bystander),
        "another family is unaffected"
    );
    // The revocation ends at its expiry; a token still unused then is usable again
    // (callers revoke until the family's last token expires).
    assert_eq!(
        store.use_refresh(&hash("long"), now + YEAR).await.unwrap(),
        RefreshUse::Fresh(long_lived)
    );
}
