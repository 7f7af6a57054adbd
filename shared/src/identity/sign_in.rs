//! Checking an e-mail and password against the stored account: the one sign-in check
//! shared by the account API, the OAuth consent page and `/mcplogin`.

use super::password::{hash_password, verify_password};
use super::secret::random_secret;
use crate::store::{AccountStore, StoreError};

/// An Argon2id hash of a random string, verified against when the e-mail is unknown.
/// Made once per process, on the first unknown e-mail.
static DUMMY_HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The user id when `password` is the password of the account for `email` (any case,
/// surrounding spaces ignored). An unknown e-mail costs one password verification too,
/// so timing does not reveal which e-mails have accounts. The hashing runs off the
/// async workers.
pub(crate) async fn authenticate(
    store: &dyn AccountStore,
    email: &str,
    password: &str,
) -> Result<Option<String>, StoreError> {
    let email = email.trim().to_lowercase();
    let account = store.account_by_email(&email).await?;
    let stored = account.as_ref().map(|a| a.password_hash.clone());
    let password = password.to_string();
    let verified = tokio::task::spawn_blocking(move || {
        let hash = match &stored {
            Some(hash) => hash,
            None => DUMMY_HASH.get_or_init(|| hash_password(&random_secret(16))),
        };
        verify_password(&password, hash)
    })
    .await
    .unwrap_or(false);
    Ok(account.filter(|_| verified).map(|a| a.user_id))
}
