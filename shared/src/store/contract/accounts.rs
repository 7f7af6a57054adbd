//! Contract cases for [`AccountStore`](crate::store::AccountStore): accounts, shares,
//! URL grants, personal URLs, delegated share URLs, login states and abuse counters.
//!
//! Each case speaks only through the `Store` trait, never a backend's own API, so both
//! backends run it unchanged; its users are its own, so no case sees another's data.

use super::{YEAR, strings};
use crate::domain::{
    Account, Delegation, LoginState, LoginStatus, PersonalUrl, TokenState, UrlGrant,
};
use crate::store::{Created, MAX_REVOKED_SESSIONS, Store, TokenChange};

fn account(user_id: &str, email: &str, password_hash: &str) -> Account {
    Account {
        user_id: user_id.to_string(),
        email: email.to_string(),
        password_hash: password_hash.to_string(),
        created_at: 1_700_000_000,
        email_confirmed: false,
    }
}

/// A personal URL; `tag` makes its secret and hash distinct.
fn personal(user: &str, tag: &str, expires_at: u64) -> PersonalUrl {
    PersonalUrl {
        sealed_secret: format!("sealed-{user}-{tag}"),
        secret_hash: format!("hash-{user}-{tag}"),
        expires_at,
        epoch: 0,
    }
}

/// The grant a personal URL's secret resolves to.
fn personal_grant(user: &str, url: &PersonalUrl) -> UrlGrant {
    UrlGrant {
        user_id: user.to_string(),
        session_id: None,
        agent_name: None,
        delegation: None,
        expires_at: url.expires_at,
        epoch: url.epoch,
    }
}

fn pending(expires_at: u64) -> LoginState {
    LoginState {
        status: LoginStatus::Pending,
        expires_at,
        created_at: expires_at - 600,
        client_name: Some("Claude <Desktop>".to_string()),
        poll_secret_hash: "poll-secret-hash".to_string(),
        user_code_hash: "user-code-hash".to_string(),
    }
}

pub(super) async fn accounts_found_by_email_and_id(store: &dyn Store, user: &str) {
    let email = format!("{user}@example.com");
    assert_eq!(store.account_by_email(&email).await.unwrap(), None);
    assert_eq!(store.account(user).await.unwrap(), None);

    let ada = account(user, &email, "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA");
    assert_eq!(store.create_account(&ada).await.unwrap(), Created::Created);
    assert_eq!(
        store.account_by_email(&email).await.unwrap(),
        Some(ada.clone()),
        "found by e-mail"
    );
    assert_eq!(
        store.account(user).await.unwrap(),
        Some(ada.clone()),
        "found by id"
    );
    assert_eq!(
        store
            .account_by_email(&format!("other-{email}"))
            .await
            .unwrap(),
        None
    );

    // Deleting the user's data leaves the account.
    store.delete_user_data(user).await.unwrap();
    assert_eq!(store.account(user).await.unwrap(), Some(ada));
}

pub(super) async fn taken_email_writes_nothing(store: &dyn Store, first: &str, second: &str) {
    let email = format!("{first}@example.com");
    let original = account(first, &email, "hash-of-first");
    assert_eq!(
        store.create_account(&original).await.unwrap(),
        Created::Created
    );

    let intruder = Account {
        created_at: 1_800_000_000,
        ..account(second, &email, "hash-of-second")
    };
    assert_eq!(
        store.create_account(&intruder).await.unwrap(),
        Created::EmailTaken
    );
    assert_eq!(
        store.create_account(&original).await.unwrap(),
        Created::EmailTaken,
        "creating the same account again"
    );
    assert_eq!(
        store.account_by_email(&email).await.unwrap(),
        Some(original.clone()),
        "the first account is unchanged"
    );
    assert_eq!(store.account(first).await.unwrap(), Some(original));
    assert_eq!(
        store.account(second).await.unwrap(),
        None,
        "the refused account was not written"
    );

    // The refused user id is free for another e-mail.
    let retry = account(second, &format!("{second}@example.com"), "hash-of-second");
    assert_eq!(
        store.create_account(&retry).await.unwrap(),
        Created::Created
    );
    assert_eq!(store.account(second).await.unwrap(), Some(retry));
}

pub(super) async fn shares_follow_owner_and_grantee(
    store: &dyn Store,
    owner: &str,
    grantee: &str,
    third: &str,
) {
    assert_eq!(store.share(owner, grantee).await.unwrap(), None);

    let read = strings(&["read:health"]);
    store.put_share(owner, grantee, &read).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), Some(read));
    assert_eq!(
        store.share(grantee, owner).await.unwrap(),
        None,
        "a share goes one way"
    );
    assert_eq!(store.share(owner, third).await.unwrap(), None);
    assert_eq!(store.share(third, grantee).await.unwrap(), None);

    let wider = strings(&["read:health", "read:genetics"]);
    store.put_share(owner, grantee, &wider).await.unwrap();
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        Some(wider.clone()),
        "put replaces"
    );

    let back = strings(&["read:genetics"]);
    store.put_share(grantee, owner, &back).await.unwrap();
    store.put_share(owner, third, &back).await.unwrap();
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        Some(wider.clone()),
        "other pairs are separate"
    );

    // Deleting the user's health data leaves shares.
    store.delete_user_data(owner).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), Some(wider));

    store.delete_share(owner, grantee).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), None);
    assert_eq!(
        store.share(grantee, owner).await.unwrap(),
        Some(back.clone()),
        "the reverse share stays"
    );
    assert_eq!(store.share(owner, third).await.unwrap(), Some(back));
    store.delete_share(owner, grantee).await.unwrap();
}

/// Purging expired rows (the embedded store's; DynamoDB's TTL
/// does its own) never removes a live row, nor one expired less than a day ago (an
/// expired login still answers `expired`); what it removes reads as it did (expired).
pub(super) async fn purging_keeps_what_is_live(store: &dyn Store, user: &str, now: u64) {
    let live = format!("{user}-live");
    let recent = format!("{user}-recent");
    let old = format!("{user}-old");
    store
        .put_login_state(&live, &pending(now + 600))
        .await
        .unwrap();
    store
        .put_login_state(&recent, &pending(now - 60))
        .await
        .unwrap();
    store
        .put_login_state(&old, &pending(now - 2 * 24 * 3600))
        .await
        .unwrap();
    let grant = UrlGrant {
        user_id: user.to_string(),
        session_id: None,
        agent_name: None,
        delegation: None,
        expires_at: now + 600,
        epoch: 0,
    };
    let hash = format!("{user}-grant");
    store.put_url_grant(&hash, &grant).await.unwrap();
    for _ in 0..100 {
        if store.purge_expired(now).await.unwrap() == 0 {
            break;
        }
    }
    assert_eq!(
        store.login_state(&live).await.unwrap(),
        Some(pending(now + 600))
    );
    assert_eq!(
        store.login_state(&recent).await.unwrap(),
        Some(pending(now - 60))
    );
    assert!(
        store
            .login_state(&old)
            .await
            .unwrap()
            .is_none_or(|state| state.expires_at <= now),
        "purged, or still there and expired"
    );
    assert_eq!(store.url_grant(&hash, now).await.unwrap(), Some(grant));
    assert!(!store.complete_login_state(&old, "t", now).await.unwrap());
}

pub(super) async fn url_grants_expire(store: &dyn Store, user: &str, now: u64) {
    let temporary = UrlGrant {
        user_id: user.to_string(),
        session_id: Some("session-1".to_string()),
        agent_name: Some("Claude".to_string()),
        delegation: None,
        expires_at: now + 600,
        // Kept as it is given (the holder's epoch when it was made).
        epoch: 4,
    };
    let hash = format!("{user}-temporary");
    store.put_url_grant(&hash, &temporary).await.unwrap();
    assert_eq!(
        store.url_grant(&hash, now).await.unwrap(),
        Some(temporary.clone())
    );
    assert_eq!(
        store.url_grant(&hash, now + 599).await.unwrap(),
        Some(temporary.clone())
    );
    assert_eq!(
        store.url_grant(&hash, now + 600).await.unwrap(),
        None,
        "expired at expires_at"
    );
    assert_eq!(store.url_grant(&hash, now + 10 * YEAR).await.unwrap(), None);
    assert_eq!(
        store.url_grant(&hash, now).await.unwrap(),
        Some(temporary),
        "expired reads hide the grant without deleting it"
    );

    let plain = UrlGrant {
        user_id: user.to_string(),
        session_id: None,
        agent_name: None,
        delegation: None,
        expires_at: now + YEAR,
        epoch: 0,
    };
    let plain_hash = format!("{user}-plain");
    store.put_url_grant(&plain_hash, &plain).await.unwrap();
    assert_eq!(
        store.url_grant(&plain_hash, now).await.unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .url_grant(&format!("{user}-unknown"), now)
            .await
            .unwrap(),
        None
    );
}

pub(super) async fn personal_url_is_claimed_once(store: &dyn Store, user: &str, now: u64) {
    let first = personal(user, "first", now + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &first, now).await.unwrap(),
        first
    );
    let second = personal(user, "second", now + YEAR + 60);
    assert_eq!(
        store
            .claim_personal_url(user, &second, now + 60)
            .await
            .unwrap(),
        first,
        "a live URL is returned unchanged"
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        Some(personal_grant(user, &first)),
        "the claimed secret resolves to the user"
    );
    assert_eq!(
        store.url_grant(&second.secret_hash, now).await.unwrap(),
        None,
        "the losing candidate wrote nothing"
    );
}

pub(super) async fn racing_claims_get_one_url(store: &dyn Store, user: &str, now: u64) {
    let a = personal(user, "a", now + YEAR);
    let b = personal(user, "b", now + YEAR);
    let (got_a, got_b) = tokio::join!(
        store.claim_personal_url(user, &a, now),
        store.claim_personal_url(user, &b, now)
    );
    let (got_a, got_b) = (got_a.unwrap(), got_b.unwrap());
    assert_eq!(got_a, got_b, "both callers get the same URL");
    assert!(got_a == a || got_a == b);
    let loser = if got_a == a { &b } else { &a };
    assert_eq!(
        store.url_grant(&got_a.secret_hash, now).await.unwrap(),
        Some(personal_grant(user, &got_a))
    );
    assert_eq!(
        store.url_grant(&loser.secret_hash, now).await.unwrap(),
        None,
        "only the winner's secret resolves"
    );
}

pub(super) async fn expired_personal_url_is_replaced(store: &dyn Store, user: &str, now: u64) {
    let old = personal(user, "old", now + 100);
    assert_eq!(
        store.claim_personal_url(user, &old, now).await.unwrap(),
        old
    );

    let later = now + 100; // expires_at <= now: expired
    let new = personal(user, "new", later + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &new, later).await.unwrap(),
        new,
        "an expired URL is replaced"
    );
    assert_eq!(
        store.url_grant(&old.secret_hash, now).await.unwrap(),
        None,
        "the old secret's grant is gone, not just expired"
    );
    assert_eq!(
        store.url_grant(&new.secret_hash, later).await.unwrap(),
        Some(personal_grant(user, &new))
    );
    let another = personal(user, "another", later + YEAR + 1);
    assert_eq!(
        store
            .claim_personal_url(user, &another, later + 1)
            .await
            .unwrap(),
        new,
        "the replacement is the live one now"
    );
}

pub(super) async fn revoked_personal_url_stops_resolving(store: &dyn Store, user: &str, now: u64) {
    assert!(
        !store.revoke_personal_url(user).await.unwrap(),
        "nothing to revoke"
    );
    let first = personal(user, "first", now + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &first, now).await.unwrap(),
        first
    );
    assert!(store.revoke_personal_url(user).await.unwrap());
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None,
        "a revoked secret resolves to nothing"
    );
    assert!(!store.revoke_personal_url(user).await.unwrap());

    let second = personal(user, "second", now + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &second, now).await.unwrap(),
        second,
        "after revoking, a claim gives a new URL"
    );
    assert_eq!(
        store.url_grant(&second.secret_hash, now).await.unwrap(),
        Some(personal_grant(user, &second))
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );
}

pub(super) async fn login_state_completes_once(store: &dyn Store, run: &str, now: u64) {
    let state = format!("{run}-state");
    assert_eq!(store.login_state(&state).await.unwrap(), None);
    store
        .put_login_state(&state, &pending(now + 600))
        .await
        .unwrap();
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(pending(now + 600))
    );

    assert!(
        store
            .complete_login_state(&state, "sealed-token-1", now + 10)
            .await
            .unwrap()
    );
    let completed = LoginState {
        status: LoginStatus::Completed {
            sealed_token: "sealed-token-1".to_string(),
        },
        ..pending(now + 600)
    };
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(completed.clone())
    );
    assert!(
        !store
            .complete_login_state(&state, "sealed-token-2", now + 20)
            .await
            .unwrap(),
        "completing twice"
    );
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(completed),
        "the first token stays"
    );

    // Expired while pending: it cannot complete, and still reads back (a 410, not a 404).
    let late = format!("{run}-late");
    store
        .put_login_state(&late, &pending(now + 600))
        .await
        .unwrap();
    assert!(
        !store
            .complete_login_state(&late, "sealed-token", now + 600)
            .await
            .unwrap(),
        "completing at expires_at"
    );
    assert_eq!(
        store.login_state(&late).await.unwrap(),
        Some(pending(now + 600)),
        "an expired state is still returned, with its expiry"
    );

    // An unknown state cannot be completed (and completing does not create it).
    let unknown = format!("{run}-unknown");
    assert!(
        !store
            .complete_login_state(&unknown, "sealed-token", now)
            .await
            .unwrap()
    );
    assert_eq!(store.login_state(&unknown).await.unwrap(), None);
}

/// A completed login's token is handed out once, also to two
/// racing polls; nothing else can be taken.
pub(super) async fn login_token_is_taken_once(store: &dyn Store, run: &str, now: u64) {
    let state = format!("{run}-state");
    store
        .put_login_state(&state, &pending(now + 600))
        .await
        .unwrap();
    assert_eq!(
        store.take_login_token(&state, now).await.unwrap(),
        None,
        "a pending state has no token to take"
    );
    assert!(
        store
            .complete_login_state(&state, "sealed-token", now)
            .await
            .unwrap()
    );
    let (a, b) = tokio::join!(
        store.take_login_token(&state, now + 1),
        store.take_login_token(&state, now + 1)
    );
    let got: Vec<String> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(
        got,
        ["sealed-token"],
        "exactly one racing take gets the token"
    );
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(LoginState {
            status: LoginStatus::Collected,
            ..pending(now + 600)
        }),
        "collected, the token no longer stored, the rest kept"
    );
    assert_eq!(store.take_login_token(&state, now + 2).await.unwrap(), None);
    assert!(
        !store
            .complete_login_state(&state, "sealed-token-2", now + 2)
            .await
            .unwrap(),
        "a collected state cannot be completed again"
    );

    // Completed but expired: nothing to take.
    let late = format!("{run}-late");
    store
        .put_login_state(&late, &pending(now + 600))
        .await
        .unwrap();
    assert!(
        store
            .complete_login_state(&late, "sealed-token", now)
            .await
            .unwrap()
    );
    assert_eq!(
        store.take_login_token(&late, now + 600).await.unwrap(),
        None
    );
    // Unknown: nothing, and nothing created.
    let unknown = format!("{run}-unknown");
    assert_eq!(store.take_login_token(&unknown, now).await.unwrap(), None);
    assert_eq!(store.login_state(&unknown).await.unwrap(), None);
}

pub(super) async fn counters_count_per_window(store: &dyn Store, run: &str, now: u64) {
    let key = format!("{run}-counter");
    let other = format!("{run}-other");
    // A window that started just now, so `now + 59` is still in it.
    let start = crate::store::window(60, now).0;
    assert_eq!(store.event_count(&key, 60, start).await.unwrap(), 0);
    for expected in 1..=3 {
        assert_eq!(
            store.count_event(&key, 60, start + expected).await.unwrap(),
            u32::try_from(expected).unwrap()
        );
    }
    assert_eq!(store.event_count(&key, 60, start + 59).await.unwrap(), 3);
    // Counters are separate, and the next window starts from zero.
    assert_eq!(store.event_count(&other, 60, start).await.unwrap(), 0);
    assert_eq!(store.event_count(&key, 60, start + 60).await.unwrap(), 0);
    assert_eq!(store.count_event(&key, 60, start + 61).await.unwrap(), 1);
    assert_eq!(store.event_count(&key, 60, start + 61).await.unwrap(), 1);
    // The window before stays readable after the next one counted: the limits sum both.
    assert_eq!(store.event_count(&key, 60, start + 1).await.unwrap(), 3);

    // Concurrent counts each see a distinct value.
    let racing = format!("{run}-race");
    let counts =
        futures_util::future::join_all((0..8).map(|_| store.count_event(&racing, 3600, start)))
            .await;
    let mut counts: Vec<u32> = counts.into_iter().map(Result::unwrap).collect();
    counts.sort_unstable();
    assert_eq!(counts, (1..=8).collect::<Vec<u32>>());
}

/// The grant a share's delegated URL resolves to: the owner's data, for the grantee.
fn delegated_grant(owner: &str, grantee: &str, url: &PersonalUrl) -> UrlGrant {
    UrlGrant {
        user_id: owner.to_string(),
        session_id: None,
        agent_name: None,
        delegation: Some(Delegation {
            grantee: grantee.to_string(),
            permission: "chat".to_string(),
        }),
        expires_at: url.expires_at,
        epoch: url.epoch,
    }
}

pub(super) async fn share_url_is_the_grantees_own_and_needs_the_share(
    store: &dyn Store,
    owner: &str,
    grantee: &str,
    third: &str,
    now: u64,
) {
    let first = personal(grantee, "first", now + YEAR);
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &first, now)
            .await
            .unwrap(),
        None,
        "no share, no URL"
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );
    assert_eq!(store.share_url(owner, grantee, now).await.unwrap(), None);

    store
        .put_share(owner, grantee, &strings(&["read:health"]))
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &first, now)
            .await
            .unwrap(),
        None,
        "a share without the permission mints nothing"
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );

    store
        .put_share(owner, grantee, &strings(&["chat"]))
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &first, now)
            .await
            .unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        Some(delegated_grant(owner, grantee, &first)),
        "the secret resolves to the owner's data, delegated to the grantee"
    );
    assert_eq!(
        store.share_url(owner, grantee, now).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store
            .share_url(owner, grantee, first.expires_at)
            .await
            .unwrap(),
        None,
        "an expired URL is not active"
    );

    let second = personal(grantee, "second", now + YEAR + 60);
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &second, now + 60)
            .await
            .unwrap(),
        Some(first.clone()),
        "a live URL is returned unchanged"
    );
    assert_eq!(
        store.url_grant(&second.secret_hash, now).await.unwrap(),
        None
    );

    // A claim from an older epoch (the grantee signed out everywhere
    // since) is dead: a candidate at the newer epoch replaces it, in the same write as
    // the old secret's grant goes, and the new grant carries its epoch.
    let newer = PersonalUrl {
        epoch: 1,
        ..personal(grantee, "newer", now + YEAR + 60)
    };
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &newer, now + 60)
            .await
            .unwrap(),
        Some(newer.clone()),
        "a claim from an older epoch is replaced"
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None,
        "the replaced secret resolves to nothing"
    );
    assert_eq!(
        store.url_grant(&newer.secret_hash, now).await.unwrap(),
        Some(delegated_grant(owner, grantee, &newer))
    );
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &second, now + 60)
            .await
            .unwrap(),
        Some(newer.clone()),
        "a candidate from an older epoch than the kept claim changes nothing"
    );

    // Neither the owner's own URL nor another pair is touched by it.
    let own = personal(owner, "own", now + YEAR);
    assert_eq!(
        store.claim_personal_url(owner, &own, now).await.unwrap(),
        own
    );
    assert_ne!(own.secret_hash, first.secret_hash);
    assert_eq!(
        store.url_grant(&own.secret_hash, now).await.unwrap(),
        Some(personal_grant(owner, &own))
    );
    assert_eq!(store.share_url(owner, third, now).await.unwrap(), None);
    assert_eq!(store.share_url(grantee, owner, now).await.unwrap(), None);
    let other = personal(third, "other", now + YEAR);
    assert_eq!(
        store
            .claim_share_url(owner, third, "chat", &other, now)
            .await
            .unwrap(),
        None,
        "a share goes to its grantee only"
    );
}

pub(super) async fn revoked_share_url_stops_resolving(
    store: &dyn Store,
    owner: &str,
    grantee: &str,
    now: u64,
) {
    assert!(!store.revoke_share_url(owner, grantee).await.unwrap());
    store
        .put_share(owner, grantee, &strings(&["chat"]))
        .await
        .unwrap();
    let first = personal(grantee, "first", now + YEAR);
    let own = personal(owner, "own", now + YEAR);
    store.claim_personal_url(owner, &own, now).await.unwrap();
    store
        .claim_share_url(owner, grantee, "chat", &first, now)
        .await
        .unwrap();
    assert!(store.revoke_share_url(owner, grantee).await.unwrap());
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );
    assert_eq!(store.share_url(owner, grantee, now).await.unwrap(), None);
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        Some(strings(&["chat"])),
        "the share stays"
    );
    assert_eq!(
        store.url_grant(&own.secret_hash, now).await.unwrap(),
        Some(personal_grant(owner, &own)),
        "the owner's own URL stays"
    );
    assert!(!store.revoke_share_url(owner, grantee).await.unwrap());

    let second = personal(grantee, "second", now + YEAR);
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &second, now)
            .await
            .unwrap(),
        Some(second.clone()),
        "after revoking, a claim gives a new URL"
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );
}

pub(super) async fn delete_share_removes_the_grant_in_the_same_write(
    store: &dyn Store,
    owner: &str,
    grantee: &str,
    now: u64,
) {
    let chat = strings(&["chat"]);
    store.put_share(owner, grantee, &chat).await.unwrap();
    let first = personal(grantee, "first", now + YEAR);
    let own = personal(owner, "own", now + YEAR);
    store.claim_personal_url(owner, &own, now).await.unwrap();
    store
        .claim_share_url(owner, grantee, "chat", &first, now)
        .await
        .unwrap();

    store.delete_share(owner, grantee).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), None);
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None,
        "the delegated URL went with the share"
    );
    assert_eq!(store.share_url(owner, grantee, now).await.unwrap(), None);
    assert_eq!(
        store.url_grant(&own.secret_hash, now).await.unwrap(),
        Some(personal_grant(owner, &own)),
        "the owner's own URL stays"
    );

    // Sharing again does not revive the old URL; a claim mints a new one.
    store.put_share(owner, grantee, &chat).await.unwrap();
    assert_eq!(store.share_url(owner, grantee, now).await.unwrap(), None);
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );
    let second = personal(grantee, "second", now + YEAR);
    assert_eq!(
        store
            .claim_share_url(owner, grantee, "chat", &second, now)
            .await
            .unwrap(),
        Some(second.clone())
    );

    // A claim racing an unshare never leaves a URL behind the share.
    for round in 0..4 {
        store.put_share(owner, grantee, &chat).await.unwrap();
        let racer = personal(grantee, &format!("race-{round}"), now + YEAR);
        store.revoke_share_url(owner, grantee).await.unwrap();
        let (claimed, deleted) = tokio::join!(
            store.claim_share_url(owner, grantee, "chat", &racer, now),
            store.delete_share(owner, grantee)
        );
        deleted.unwrap();
        if let Some(url) = claimed.unwrap() {
            assert_eq!(
                store.url_grant(&url.secret_hash, now).await.unwrap(),
                None,
                "round {round}: a URL outlived its share"
            );
        }
        assert_eq!(store.share(owner, grantee).await.unwrap(), None);
        assert_eq!(store.share_url(owner, grantee, now).await.unwrap(), None);
    }
}

pub(super) async fn racing_epoch_bumps_all_count(store: &dyn Store, user: &str, now: u64) {
    assert_eq!(
        store.token_state(user).await.unwrap(),
        TokenState::default(),
        "nothing revoked yet: epoch 0"
    );
    let end_all = TokenChange::EndAll;
    let bumps = (0..5).map(|_| store.change_tokens(user, &end_all, now));
    let states = futures_util::future::try_join_all(bumps).await.unwrap();
    let mut epochs: Vec<u64> = states.iter().map(|s| s.epoch).collect();
    epochs.sort_unstable();
    assert_eq!(epochs, [1, 2, 3, 4, 5], "each bump saw the others");
    assert_eq!(store.token_state(user).await.unwrap().epoch, 5);
}

pub(super) async fn ended_sessions_are_pruned_and_bounded(store: &dyn Store, user: &str, now: u64) {
    let end = |sid: &str, expires_at: u64| TokenChange::EndSession {
        sid: sid.to_string(),
        expires_at,
    };
    store
        .change_tokens(user, &end("short", now + 10), now)
        .await
        .unwrap();
    let state = store
        .change_tokens(user, &end("long", now + 3600), now)
        .await
        .unwrap();
    assert_eq!(state.revoked_sessions.len(), 2);
    assert_eq!(state.epoch, 0);
    // Written after "short" expired: it is dropped, "long" stays.
    let state = store
        .change_tokens(user, &end("later", now + 3600), now + 20)
        .await
        .unwrap();
    let mut sids: Vec<&str> = state.revoked_sessions.keys().map(String::as_str).collect();
    sids.sort_unstable();
    assert_eq!(sids, ["later", "long"]);
    assert_eq!(store.token_state(user).await.unwrap(), state, "as stored");
    // One more than the bound ends every session instead.
    for i in 0..MAX_REVOKED_SESSIONS {
        store
            .change_tokens(user, &end(&format!("s{i}"), now + 3600), now + 20)
            .await
            .unwrap();
    }
    let state = store.token_state(user).await.unwrap();
    assert_eq!(state.epoch, 1, "overflow bumps the epoch");
    assert!(state.revoked_sessions.len() <= MAX_REVOKED_SESSIONS);
}

pub(super) async fn client_grants_are_listed_and_withdrawn(
    store: &dyn Store,
    user: &str,
    now: u64,
) {
    let grant = |client: &str, scope: &str| TokenChange::Grant {
        client_id: client.to_string(),
        client_name: Some(format!("{client} app")),
        scope: scope.to_string(),
    };
    store
        .change_tokens(user, &grant("a", "mcp:tools"), now)
        .await
        .unwrap();
    store
        .change_tokens(user, &grant("b", "openid"), now + 5)
        .await
        .unwrap();
    // Authorised again: the scope follows, the first grant's time stays.
    store
        .change_tokens(user, &grant("a", "mcp:tools openid"), now + 9)
        .await
        .unwrap();
    let state = store.token_state(user).await.unwrap();
    let a = &state.grants["a"];
    assert_eq!(
        (a.scope.as_str(), a.granted_at, a.client_name.as_deref()),
        ("mcp:tools openid", now, Some("a app"))
    );
    assert_eq!(state.grants["b"].granted_at, now + 5);
    let state = store
        .change_tokens(
            user,
            &TokenChange::EndClient {
                client_id: "a".to_string(),
            },
            now + 10,
        )
        .await
        .unwrap();
    assert!(!state.grants.contains_key("a"));
    assert!(state.grants.contains_key("b"));
    assert_eq!(state.revoked_clients.get("a"), Some(&(now + 10)));
    assert_eq!(state.epoch, 0, "one client's grant ends nothing else");
    assert_eq!(store.token_state(user).await.unwrap(), state);
}

pub(super) async fn password_change_ends_every_token(store: &dyn Store, user: &str, now: u64) {
    assert_eq!(
        store.change_password(user, "new-hash", now).await.unwrap(),
        None,
        "no account: nothing written"
    );
    assert_eq!(store.token_state(user).await.unwrap().epoch, 0);
    let email = format!("{user}@example.com");
    store
        .create_account(&account(user, &email, "old-hash"))
        .await
        .unwrap();
    store
        .change_tokens(
            user,
            &TokenChange::EndSession {
                sid: "s".to_string(),
                expires_at: now + 60,
            },
            now,
        )
        .await
        .unwrap();
    let state = store
        .change_password(user, "new-hash", now)
        .await
        .unwrap()
        .expect("the account exists");
    assert_eq!(state.epoch, 1);
    assert!(
        state.revoked_sessions.is_empty(),
        "moot under the new epoch"
    );
    assert_eq!(store.token_state(user).await.unwrap(), state);
    let stored = store.account(user).await.unwrap().unwrap();
    assert_eq!(stored.password_hash, "new-hash");
    let by_email = store.account_by_email(&email).await.unwrap().unwrap();
    assert_eq!(by_email.password_hash, "new-hash");
}

/// The shares a user granted and received, each listed by the other user,
/// and gone from both lists with the share.
pub(super) async fn shares_are_listed_both_ways(store: &dyn Store, a: &str, b: &str, c: &str) {
    assert!(store.shares_granted(a).await.unwrap().is_empty());
    assert!(store.shares_received(a).await.unwrap().is_empty());
    let chat = strings(&["chat"]);
    store.put_share(a, b, &chat).await.unwrap();
    store.put_share(a, c, &chat).await.unwrap();
    store.put_share(c, a, &chat).await.unwrap();
    let mut others = [b.to_string(), c.to_string()];
    others.sort();
    assert_eq!(
        store.shares_granted(a).await.unwrap(),
        others
            .iter()
            .map(|o| (o.clone(), chat.clone()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        store.shares_received(a).await.unwrap(),
        vec![(c.to_string(), chat.clone())]
    );
    assert_eq!(
        store.shares_received(b).await.unwrap(),
        vec![(a.to_string(), chat.clone())]
    );
    assert!(store.shares_granted(b).await.unwrap().is_empty());

    // A replaced share is listed once, with its new permissions, on both sides.
    let wider = strings(&["chat", "read:health"]);
    store.put_share(a, b, &wider).await.unwrap();
    assert_eq!(
        store.shares_received(b).await.unwrap(),
        vec![(a.to_string(), wider.clone())]
    );
    assert!(
        store
            .shares_granted(a)
            .await
            .unwrap()
            .contains(&(b.to_string(), wider))
    );

    store.delete_share(a, b).await.unwrap();
    assert!(store.shares_received(b).await.unwrap().is_empty());
    assert_eq!(
        store.shares_granted(a).await.unwrap(),
        vec![(c.to_string(), chat.clone())]
    );
    assert_eq!(
        store.shares_received(a).await.unwrap(),
        vec![(c.to_string(), chat)],
        "the other way stays"
    );
}

/// A user's live temporary URLs (never personal or delegated ones, never
/// another user's), soonest expiry first; revoked one at a time, only by their user.
pub(super) async fn temporary_urls_are_listed_and_revoked(
    store: &dyn Store,
    user: &str,
    other: &str,
    now: u64,
) {
    let temporary = |who: &str, session: &str, expires_at: u64| UrlGrant {
        user_id: who.to_string(),
        session_id: Some(session.to_string()),
        agent_name: Some("Claude".to_string()),
        delegation: None,
        expires_at,
        epoch: 2,
    };
    assert!(store.temporary_urls(user, now).await.unwrap().is_empty());
    let later = temporary(user, "s-later", now + 600);
    let sooner = temporary(user, "s-sooner", now + 300);
    let expired = temporary(user, "s-expired", now - 1);
    store
        .put_url_grant(&format!("{user}-later"), &later)
        .await
        .unwrap();
    store
        .put_url_grant(&format!("{user}-sooner"), &sooner)
        .await
        .unwrap();
    store
        .put_url_grant(&format!("{user}-expired"), &expired)
        .await
        .unwrap();
    store
        .put_url_grant(
            &format!("{other}-theirs"),
            &temporary(other, "s-other", now + 600),
        )
        .await
        .unwrap();
    let plain = UrlGrant {
        session_id: None,
        agent_name: None,
        ..later.clone()
    };
    store
        .put_url_grant(&format!("{user}-plain"), &plain)
        .await
        .unwrap();
    let delegated = UrlGrant {
        delegation: Some(Delegation {
            grantee: other.to_string(),
            permission: "chat".to_string(),
        }),
        ..later.clone()
    };
    store
        .put_url_grant(&format!("{user}-delegated"), &delegated)
        .await
        .unwrap();

    assert_eq!(
        store.temporary_urls(user, now).await.unwrap(),
        vec![
            (format!("{user}-sooner"), sooner.clone()),
            (format!("{user}-later"), later.clone()),
        ]
    );
    assert_eq!(
        store.temporary_urls(user, now + 300).await.unwrap(),
        vec![(format!("{user}-later"), later.clone())],
        "expired at expires_at"
    );

    // Another user cannot revoke it; a personal or delegated URL is not revoked here.
    assert!(
        !store
            .revoke_temporary_url(other, &format!("{user}-later"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke_temporary_url(user, &format!("{other}-theirs"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke_temporary_url(user, &format!("{user}-plain"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke_temporary_url(user, &format!("{user}-delegated"))
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .url_grant(&format!("{other}-theirs"), now)
            .await
            .unwrap(),
        Some(temporary(other, "s-other", now + 600))
    );
    assert_eq!(
        store
            .url_grant(&format!("{user}-plain"), now)
            .await
            .unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .url_grant(&format!("{user}-delegated"), now)
            .await
            .unwrap(),
        Some(delegated)
    );

    assert!(
        store
            .revoke_temporary_url(user, &format!("{user}-later"))
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .url_grant(&format!("{user}-later"), now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.temporary_urls(user, now).await.unwrap(),
        vec![(format!("{user}-sooner"), sooner)]
    );
    assert!(
        !store
            .revoke_temporary_url(user, &format!("{user}-later"))
            .await
            .unwrap()
    );
    assert_eq!(store.temporary_urls(other, now).await.unwrap().len(), 1);
}

/// The personal URL read as it is (nothing minted), hidden once expired.
pub(super) async fn personal_url_is_read_without_minting(store: &dyn Store, user: &str, now: u64) {
    assert_eq!(store.personal_url(user, now).await.unwrap(), None);
    assert_eq!(
        store.personal_url(user, now).await.unwrap(),
        None,
        "nothing minted"
    );
    let url = personal(user, "read", now + 100);
    let kept = store.claim_personal_url(user, &url, now).await.unwrap();
    assert_eq!(store.personal_url(user, now).await.unwrap(), Some(kept));
    assert_eq!(store.personal_url(user, now + 100).await.unwrap(), None);
    store.revoke_personal_url(user).await.unwrap();
    assert_eq!(store.personal_url(user, now).await.unwrap(), None);
}
