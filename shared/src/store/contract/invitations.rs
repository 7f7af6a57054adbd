//! Proving an address and shares as invitations: confirmation, mailed links
//! (single use, expiring, atomic), invitations that grant nothing until accepted.

use super::strings;
use crate::domain::{Account, Invitation, MailPurpose, MailToken};
use crate::store::{Created, Store};

fn account(user_id: &str) -> Account {
    Account {
        user_id: user_id.to_string(),
        email: format!("{user_id}@example.com"),
        password_hash: "hash".to_string(),
        created_at: 1_700_000_000,
        email_confirmed: false,
    }
}

fn invitation(owner: &str, email: &str, id: &str, now: u64) -> Invitation {
    Invitation {
        id: id.to_string(),
        owner: owner.to_string(),
        email: email.to_string(),
        permissions: strings(&["chat"]),
        created_at: now,
    }
}

pub(super) async fn addresses_are_confirmed_only_as_mailed(
    store: &dyn Store,
    user: &str,
    now: u64,
) {
    let mine = account(user);
    assert_eq!(store.create_account(&mine).await.unwrap(), Created::Created);
    assert!(!store.account(user).await.unwrap().unwrap().email_confirmed);
    // Another address (the account's was changed, or a forged record): nothing.
    assert!(
        !store
            .confirm_email(user, "someone-else@example.com", now)
            .await
            .unwrap()
    );
    assert!(!store.account(user).await.unwrap().unwrap().email_confirmed);
    assert!(
        !store
            .confirm_email(&format!("{user}-nobody"), &mine.email, now)
            .await
            .unwrap()
    );
    assert!(store.confirm_email(user, &mine.email, now).await.unwrap());
    assert!(store.account(user).await.unwrap().unwrap().email_confirmed);
    let by_email = store.account_by_email(&mine.email).await.unwrap().unwrap();
    assert!(by_email.email_confirmed);
    // Again: still confirmed, still true.
    assert!(
        store
            .confirm_email(user, &mine.email, now + 5)
            .await
            .unwrap()
    );
    // An account created confirmed reads so.
    let confirmed = Account {
        email_confirmed: true,
        ..account(&format!("{user}-born-confirmed"))
    };
    store.create_account(&confirmed).await.unwrap();
    assert!(
        store
            .account(&confirmed.user_id)
            .await
            .unwrap()
            .unwrap()
            .email_confirmed
    );
}

pub(super) async fn mail_links_are_taken_once_and_expire(store: &dyn Store, user: &str, now: u64) {
    let token = |purpose, expires_at| MailToken {
        purpose,
        user_id: user.to_string(),
        email: format!("{user}@example.com"),
        expires_at,
    };
    let hash = format!("{user}-link");
    store
        .put_mail_token(&hash, &token(MailPurpose::Reset, now + 600))
        .await
        .unwrap();
    // A reset link is no confirmation link, and asking so does not spend it.
    assert_eq!(
        store
            .take_mail_token(&hash, MailPurpose::Confirm, now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .take_mail_token(&hash, MailPurpose::Reset, now)
            .await
            .unwrap(),
        Some(token(MailPurpose::Reset, now + 600))
    );
    assert_eq!(
        store
            .take_mail_token(&hash, MailPurpose::Reset, now)
            .await
            .unwrap(),
        None,
        "a link works once"
    );
    // Expired: nothing, even if the store still holds it.
    let old = format!("{user}-old");
    store
        .put_mail_token(&old, &token(MailPurpose::Confirm, now + 10))
        .await
        .unwrap();
    assert_eq!(
        store
            .take_mail_token(&old, MailPurpose::Confirm, now + 10)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .take_mail_token(&format!("{user}-never"), MailPurpose::Confirm, now)
            .await
            .unwrap(),
        None
    );
    // Racing takes: exactly one gets it.
    let raced = format!("{user}-raced");
    store
        .put_mail_token(&raced, &token(MailPurpose::Confirm, now + 600))
        .await
        .unwrap();
    let takes = (0..6).map(|_| store.take_mail_token(&raced, MailPurpose::Confirm, now));
    let won = futures_util::future::join_all(takes)
        .await
        .into_iter()
        .filter(|take| take.as_ref().unwrap().is_some())
        .count();
    assert_eq!(won, 1, "one racing take gets the link");
}

pub(super) async fn invitations_grant_nothing_until_accepted(
    store: &dyn Store,
    owner: &str,
    grantee: &str,
    now: u64,
) {
    let email = format!("{grantee}@example.com");
    let first = invitation(owner, &email, &format!("{owner}-id-1"), now);
    store.put_invitation(&first).await.unwrap();
    assert_eq!(
        store.invitations_sent(owner).await.unwrap(),
        vec![first.clone()]
    );
    assert_eq!(
        store.invitations_for(&email).await.unwrap(),
        vec![first.clone()]
    );
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        None,
        "an invitation is no share"
    );
    assert!(store.shares_granted(owner).await.unwrap().is_empty());

    // Invited again: the new invitation replaces the first (whose id no longer works).
    let second = Invitation {
        id: format!("{owner}-id-2"),
        created_at: now + 1,
        ..first.clone()
    };
    store.put_invitation(&second).await.unwrap();
    assert_eq!(
        store.invitations_for(&email).await.unwrap(),
        vec![second.clone()]
    );
    assert_eq!(
        store
            .accept_invitation(&email, &first.id, grantee)
            .await
            .unwrap(),
        None
    );
    // Only by its address: the right id for another address does nothing.
    assert_eq!(
        store
            .accept_invitation("other@example.com", &second.id, grantee)
            .await
            .unwrap(),
        None
    );
    // The owner cannot accept their own invitation.
    assert_eq!(
        store
            .accept_invitation(&email, &second.id, owner)
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.share(owner, grantee).await.unwrap(), None);

    assert_eq!(
        store
            .accept_invitation(&email, &second.id, grantee)
            .await
            .unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        Some(strings(&["chat"]))
    );
    assert_eq!(
        store.shares_received(grantee).await.unwrap(),
        vec![(owner.to_string(), strings(&["chat"]))]
    );
    assert!(store.invitations_sent(owner).await.unwrap().is_empty());
    assert!(store.invitations_for(&email).await.unwrap().is_empty());
    assert_eq!(
        store
            .accept_invitation(&email, &second.id, grantee)
            .await
            .unwrap(),
        None,
        "an invitation is accepted once"
    );

    // A withdrawn invitation cannot be accepted.
    let third = invitation(owner, "third@example.com", &format!("{owner}-id-3"), now);
    store.put_invitation(&third).await.unwrap();
    assert!(
        store
            .delete_invitation(owner, "third@example.com")
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_invitation(owner, "third@example.com")
            .await
            .unwrap()
    );
    assert!(
        store
            .invitations_for("third@example.com")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .accept_invitation("third@example.com", &third.id, grantee)
            .await
            .unwrap(),
        None
    );
}

pub(super) async fn deleting_an_account_withdraws_its_invitations(
    store: &dyn Store,
    owner: &str,
    now: u64,
) {
    store.create_account(&account(owner)).await.unwrap();
    let email = format!("{owner}-invitee@example.com");
    store
        .put_invitation(&invitation(owner, &email, &format!("{owner}-id"), now))
        .await
        .unwrap();
    store.delete_account_everything(owner, now).await.unwrap();
    assert!(store.invitations_sent(owner).await.unwrap().is_empty());
    assert!(store.invitations_for(&email).await.unwrap().is_empty());
}
