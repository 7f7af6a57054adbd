//! [`AccountStore`] on SQLite: the `accounts` and `shares` tables, and the `keys` rows
//! of URL grants (`url#`), personal URLs (`user-url#`), delegated share URLs
//! (`share-url#<owner>#<grantee>`, as `user-url#`), login states (`state#`) and abuse
//! counters (`limit#`, the value a JSON number).
//!
//! Every read of an expiring row checks `expires_at` itself.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::{
    EmbeddedStore, json_column, json_from_column, now_column, put_key, seconds_column,
    seconds_from_column,
};
use crate::domain::{
    Account, Delegation, Invitation, LoginState, LoginStatus, MailPurpose, MailToken, PersonalUrl,
    TokenState, UrlGrant,
};
use crate::store::accounts::counter_key;
use crate::store::keys::{
    MAIL_PREFIX, SHARE_URL_PREFIX, STATE_PREFIX, TOKENS_PREFIX, URL_PREFIX, USER_URL_PREFIX,
};
use crate::store::{
    AccountRecords, AccountStore, Created, GrantStore, LoginStore, StoreError, TokenChange,
    apply_token_change,
};

/// The columns [`account_from_row`] reads.
const ACCOUNT_COLUMNS: &str =
    "user_id, email, password_hash, created_at, email_confirmed_at IS NOT NULL";

/// A `mail#` row's value (`expires_at` is the column).
#[derive(Serialize, Deserialize)]
struct MailValue {
    purpose: MailPurpose,
    user_id: String,
    email: String,
}

fn invitation_from_row(row: &Row<'_>) -> rusqlite::Result<Invitation> {
    Ok(Invitation {
        owner: row.get(0)?,
        email: row.get(1)?,
        id: row.get(2)?,
        permissions: json_from_column(row, 3)?,
        created_at: seconds_from_column(row, 4)?,
    })
}

const INVITATION_COLUMNS: &str = "owner, email, id, permissions, created_at";

/// A `url#` row's value (`expires_at` is the column).
#[derive(Serialize, Deserialize)]
struct GrantValue {
    user_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_name: Option<String>,
    /// A delegated URL's grantee and permission (`user_id` is the owner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grantee: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    permission: Option<String>,
    /// The holder's token epoch (absent on grants stored before grants carried one).
    #[serde(default)]
    epoch: u64,
}

impl GrantValue {
    fn new(grant: UrlGrant) -> GrantValue {
        let (grantee, permission) = match grant.delegation {
            Some(d) => (Some(d.grantee), Some(d.permission)),
            None => (None, None),
        };
        GrantValue {
            user_id: grant.user_id,
            session_id: grant.session_id,
            agent_name: grant.agent_name,
            grantee,
            permission,
            epoch: grant.epoch,
        }
    }

    fn grant(self, expires_at: u64) -> UrlGrant {
        let delegation = match (self.grantee, self.permission) {
            (Some(grantee), Some(permission)) => Some(Delegation {
                grantee,
                permission,
            }),
            _ => None,
        };
        UrlGrant {
            user_id: self.user_id,
            session_id: self.session_id,
            agent_name: self.agent_name,
            delegation,
            expires_at,
            epoch: self.epoch,
        }
    }
}

/// A `user-url#` row's value.
#[derive(Serialize, Deserialize)]
struct PersonalUrlValue {
    sealed_secret: String,
    secret_hash: String,
    /// Absent on claims stored before they carried an epoch.
    #[serde(default)]
    epoch: u64,
}

/// A `state#` row's value: `{"status":"pending"}` or
/// `{"status":"completed","sealed_token":…}`, as the DynamoDB attributes.
#[derive(Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
enum StateValue {
    Pending,
    Completed { sealed_token: String },
    Collected,
}

/// A `state#` row's value: the status and what the prompt recorded. A row written
/// before these fields existed reads with empty hashes, which nothing matches.
#[derive(Serialize, Deserialize)]
struct StateRow {
    #[serde(flatten)]
    status: StateValue,
    #[serde(default)]
    created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_name: Option<String>,
    #[serde(default)]
    poll_secret_hash: String,
    #[serde(default)]
    user_code_hash: String,
}

fn personal_url_row(row: &Row<'_>) -> rusqlite::Result<PersonalUrl> {
    let value: PersonalUrlValue = json_from_column(row, 0)?;
    Ok(PersonalUrl {
        sealed_secret: value.sealed_secret,
        secret_hash: value.secret_hash,
        expires_at: seconds_from_column(row, 1)?,
        epoch: value.epoch,
    })
}

fn share_url_key(owner: &str, grantee: &str) -> String {
    format!("{SHARE_URL_PREFIX}{owner}#{grantee}")
}

/// Deletes a URL claim row (`user-url#`, `share-url#`) and its secret's grant; true if
/// there was one.
fn delete_url_claim(tx: &Transaction<'_>, claim_key: &str) -> rusqlite::Result<bool> {
    let Some(current) = personal_url_in(tx, claim_key)? else {
        return Ok(false);
    };
    let mut delete = tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?;
    delete.execute([claim_key])?;
    delete.execute([format!("{URL_PREFIX}{}", current.secret_hash)])?;
    Ok(true)
}

/// The user's personal URL (or a delegated URL) as stored, live or not.
fn personal_url_in(tx: &Transaction<'_>, user_key: &str) -> rusqlite::Result<Option<PersonalUrl>> {
    tx.prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
        .query_row([user_key], personal_url_row)
        .optional()
}

/// The user's token state as stored (the default when there is no row).
fn token_state_in(conn: &Connection, key: &str) -> rusqlite::Result<TokenState> {
    Ok(conn
        .prepare_cached("SELECT value FROM keys WHERE key = ?1")?
        .query_row([key], |row| json_from_column(row, 0))
        .optional()?
        .unwrap_or_default())
}

/// Reads, changes and writes the user's token state inside the caller's transaction.
fn change_tokens_in(
    tx: &Transaction<'_>,
    key: &str,
    change: &TokenChange,
    now: u64,
) -> rusqlite::Result<TokenState> {
    let mut state = token_state_in(tx, key)?;
    apply_token_change(&mut state, change, now);
    tx.prepare_cached(
        "INSERT INTO keys (key, value, expires_at) VALUES (?1, ?2, NULL) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = NULL",
    )?
    .execute(params![key, json_column(&state)?])?;
    Ok(state)
}

fn account_from_row(row: &Row<'_>) -> rusqlite::Result<Account> {
    Ok(Account {
        user_id: row.get(0)?,
        email: row.get(1)?,
        password_hash: row.get(2)?,
        created_at: seconds_from_column(row, 3)?,
        email_confirmed: row.get(4)?,
    })
}

#[async_trait]
impl AccountStore for EmbeddedStore {
    async fn create_account(&self, account: &Account) -> Result<Created, StoreError> {
        let op = "create_account";
        let account = account.clone();
        {
            // `None`: the user id already has an account.
            let created = self
                .run(op, move |conn| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let (email_taken, id_taken): (bool, bool) = tx
                        .prepare_cached(
                            "SELECT EXISTS (SELECT 1 FROM accounts WHERE email = ?1), \
                                    EXISTS (SELECT 1 FROM accounts WHERE user_id = ?2)",
                        )?
                        .query_row(params![account.email, account.user_id], |row| {
                            Ok((row.get(0)?, row.get(1)?))
                        })?;
                    if email_taken {
                        return Ok(Some(Created::EmailTaken));
                    }
                    if id_taken {
                        return Ok(None);
                    }
                    tx.prepare_cached(
                        "INSERT INTO accounts \
                         (user_id, email, password_hash, created_at, email_confirmed_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )?
                    .execute(params![
                        account.user_id,
                        account.email,
                        account.password_hash,
                        seconds_column(account.created_at)?,
                        account
                            .email_confirmed
                            .then(|| seconds_column(account.created_at))
                            .transpose()?,
                    ])?;
                    tx.commit()?;
                    Ok(Some(Created::Created))
                })
                .await?;
            created.ok_or_else(|| {
                tracing::warn!(
                    operation = op,
                    "embedded store: user id already has an account"
                );
                StoreError::Unavailable(format!("{op}: user id already has an account"))
            })
        }
    }

    async fn account_by_email(&self, email: &str) -> Result<Option<Account>, StoreError> {
        let email = email.to_string();
        self.run("account_by_email", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE email = ?1"
            ))
            .and_then(|mut stmt| stmt.query_row([&email], account_from_row).optional())
        })
        .await
    }

    async fn account(&self, user_id: &str) -> Result<Option<Account>, StoreError> {
        let user_id = user_id.to_string();
        self.run("account", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE user_id = ?1"
            ))
            .and_then(|mut stmt| stmt.query_row([&user_id], account_from_row).optional())
        })
        .await
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        self.run("purge_expired", move |conn| {
            super::purge_expired_rows(conn, now)
        })
        .await
    }

    async fn count_event(
        &self,
        key_hash: &str,
        window_secs: u64,
        now: u64,
    ) -> Result<u32, StoreError> {
        let (key, expires_at) = counter_key(key_hash, window_secs, now);
        self.run("count_event", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Drop long-past windows here (no TTL in SQLite). Not the one just ended: the
            // limits sum this window and the one before, so a burst across a boundary
            // counts whole. A day covers every window in use (at most an hour).
            tx.prepare_cached(
                "DELETE FROM keys WHERE key >= 'limit#' AND key < 'limit$' AND expires_at <= ?1",
            )?
            .execute([now_column(now.saturating_sub(24 * 3600))])?;
            let count: i64 = tx
                .prepare_cached(
                    "INSERT INTO keys (key, value, expires_at) VALUES (?1, '1', ?2) \
                     ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 \
                     RETURNING CAST(value AS INTEGER)",
                )?
                .query_row(params![key, seconds_column(expires_at)?], |row| row.get(0))?;
            tx.commit()?;
            Ok(u32::try_from(count).unwrap_or(u32::MAX))
        })
        .await
    }

    async fn event_count(
        &self,
        key_hash: &str,
        window_secs: u64,
        now: u64,
    ) -> Result<u32, StoreError> {
        let (key, _) = counter_key(key_hash, window_secs, now);
        self.run("event_count", move |conn| {
            let count: Option<i64> = conn
                .prepare_cached(
                    "SELECT CAST(value AS INTEGER) FROM keys WHERE key = ?1 AND expires_at > ?2",
                )?
                .query_row(params![key, now_column(now)], |row| row.get(0))
                .optional()?;
            Ok(count.map_or(0, |c| u32::try_from(c).unwrap_or(u32::MAX)))
        })
        .await
    }

    async fn token_state(&self, user_id: &str) -> Result<TokenState, StoreError> {
        let key = format!("{TOKENS_PREFIX}{user_id}");
        self.read("token_state", move |conn| token_state_in(conn, &key))
            .await
    }

    async fn change_tokens(
        &self,
        user_id: &str,
        change: &TokenChange,
        now: u64,
    ) -> Result<TokenState, StoreError> {
        let key = format!("{TOKENS_PREFIX}{user_id}");
        let change = change.clone();
        self.run("change_tokens", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let state = change_tokens_in(&tx, &key, &change, now)?;
            tx.commit()?;
            Ok(state)
        })
        .await
    }

    async fn change_password(
        &self,
        user_id: &str,
        password_hash: &str,
        now: u64,
    ) -> Result<Option<TokenState>, StoreError> {
        let key = format!("{TOKENS_PREFIX}{user_id}");
        let user_id = user_id.to_string();
        let password_hash = password_hash.to_string();
        self.run("change_password", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let changed = tx
                .prepare_cached("UPDATE accounts SET password_hash = ?2 WHERE user_id = ?1")?
                .execute([&user_id, &password_hash])?;
            if changed == 0 {
                return Ok(None);
            }
            let state = change_tokens_in(&tx, &key, &TokenChange::EndAll, now)?;
            tx.commit()?;
            Ok(Some(state))
        })
        .await
    }

    async fn account_records(&self, user_id: &str) -> Result<AccountRecords, StoreError> {
        let user = user_id.to_string();
        self.run("account_records", move |conn| {
            let shares_granted = conn
                .prepare_cached(
                    "SELECT grantee, permissions FROM shares WHERE owner = ?1 ORDER BY grantee",
                )?
                .query_map([&user], |row| Ok((row.get(0)?, json_from_column(row, 1)?)))?
                .collect::<rusqlite::Result<Vec<(String, Vec<String>)>>>()?;
            let personal_url_expires_at = conn
                .prepare_cached("SELECT expires_at FROM keys WHERE key = ?1")?
                .query_row([format!("{USER_URL_PREFIX}{user}")], |row| {
                    seconds_from_column(row, 0)
                })
                .optional()?;
            Ok(AccountRecords {
                shares_granted,
                personal_url_expires_at,
            })
        })
        .await
    }

    async fn confirm_email(
        &self,
        user_id: &str,
        email: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let (user, email) = (user_id.to_string(), email.to_string());
        self.run("confirm_email", move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE accounts SET email_confirmed_at = coalesce(email_confirmed_at, ?3) \
                     WHERE user_id = ?1 AND email = ?2",
                )?
                .execute(params![user, email, seconds_column(now)?])?;
            Ok(changed > 0)
        })
        .await
    }

    async fn delete_account_everything(&self, user_id: &str, now: u64) -> Result<(), StoreError> {
        let user = user_id.to_string();
        self.run("delete_account_everything", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            change_tokens_in(
                &tx,
                &format!("{TOKENS_PREFIX}{user}"),
                &TokenChange::Deleted,
                now,
            )?;
            // Every URL grant that names the user (personal, temporary, delegated on
            // either side), the personal URL, delegated URLs both ways, the user's OAuth
            // codes, refresh tokens and their families: found by what they hold (one
            // file, so a scan of the keys rows is affordable here).
            tx.prepare_cached(
                "DELETE FROM keys WHERE key IN ( \
                   SELECT 'family#' || json_extract(value, '$.family_id') FROM keys \
                   WHERE substr(key, 1, 8) = 'refresh#' AND json_extract(value, '$.user_id') = ?1)",
            )?
            .execute([&user])?;
            tx.prepare_cached(
                "DELETE FROM keys WHERE (substr(key, 1, 4) = 'url#' \
                   AND (json_extract(value, '$.user_id') = ?1 OR json_extract(value, '$.grantee') = ?1)) \
                 OR ((substr(key, 1, 8) = 'refresh#' OR substr(key, 1, 5) = 'code#') \
                   AND json_extract(value, '$.user_id') = ?1) \
                 OR (substr(key, 1, 5) = 'mail#' AND json_extract(value, '$.user_id') = ?1) \
                 OR key = ?2 \
                 OR substr(key, 1, length(?3)) = ?3 \
                 OR (substr(key, 1, 10) = 'share-url#' AND substr(key, -length(?4)) = ?4)",
            )?
            .execute(params![
                user,
                format!("{USER_URL_PREFIX}{user}"),
                format!("{SHARE_URL_PREFIX}{user}#"),
                format!("#{user}"),
            ])?;
            for statement in [
                "DELETE FROM shares WHERE owner = ?1 OR grantee = ?1",
                "DELETE FROM invitations WHERE owner = ?1",
                "DELETE FROM readings WHERE user = ?1",
                "DELETE FROM reading_rollups WHERE user = ?1",
                "DELETE FROM reading_catalogue WHERE user = ?1",
                "DELETE FROM uploads WHERE user = ?1",
                "DELETE FROM mcp_servers WHERE user = ?1",
                "DELETE FROM accounts WHERE user_id = ?1",
            ] {
                tx.prepare_cached(statement)?.execute([&user])?;
            }
            super::genome::delete_genome(&tx, &user)?;
            tx.commit()
        }).await
    }
}

#[async_trait]
impl GrantStore for EmbeddedStore {
    async fn put_share(
        &self,
        owner: &str,
        grantee: &str,
        permissions: &[String],
    ) -> Result<(), StoreError> {
        let owner = owner.to_string();
        let grantee = grantee.to_string();
        let permissions = permissions.to_vec();
        self.run("put_share", move |conn| {
            conn.prepare_cached(
                "INSERT INTO shares (owner, grantee, permissions) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (owner, grantee) DO UPDATE SET permissions = excluded.permissions",
            )?
            .execute(params![owner, grantee, json_column(&permissions)?])?;
            Ok(())
        })
        .await
    }

    async fn delete_share(&self, owner: &str, grantee: &str) -> Result<(), StoreError> {
        let owner = owner.to_string();
        let grantee = grantee.to_string();
        self.run("delete_share", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached("DELETE FROM shares WHERE owner = ?1 AND grantee = ?2")?
                .execute([&owner, &grantee])?;
            delete_url_claim(&tx, &share_url_key(&owner, &grantee))?;
            tx.commit()
        })
        .await
    }

    async fn share(&self, owner: &str, grantee: &str) -> Result<Option<Vec<String>>, StoreError> {
        let owner = owner.to_string();
        let grantee = grantee.to_string();
        self.run("share", move |conn| {
            conn.prepare_cached("SELECT permissions FROM shares WHERE owner = ?1 AND grantee = ?2")
                .and_then(|mut stmt| {
                    stmt.query_row([&owner, &grantee], |row| json_from_column(row, 0))
                        .optional()
                })
        })
        .await
    }

    async fn put_url_grant(&self, secret_hash: &str, grant: &UrlGrant) -> Result<(), StoreError> {
        let key = format!("{URL_PREFIX}{secret_hash}");
        let grant = grant.clone();
        self.run("put_url_grant", move |conn| {
            let expires_at = grant.expires_at;
            let value = json_column(&GrantValue::new(grant))?;
            put_key(conn, &key, &value, expires_at)
        })
        .await
    }

    async fn url_grant(&self, secret_hash: &str, now: u64) -> Result<Option<UrlGrant>, StoreError> {
        let key = format!("{URL_PREFIX}{secret_hash}");
        self.run("url_grant", move |conn| {
            conn.prepare_cached(
                "SELECT value, expires_at FROM keys WHERE key = ?1 AND expires_at > ?2",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![key, now_column(now)], |row| {
                    let value: GrantValue = json_from_column(row, 0)?;
                    Ok(value.grant(seconds_from_column(row, 1)?))
                })
                .optional()
            })
        })
        .await
    }

    async fn claim_personal_url(
        &self,
        user_id: &str,
        candidate: &PersonalUrl,
        now: u64,
    ) -> Result<PersonalUrl, StoreError> {
        let op = "claim_personal_url";
        let user_id = user_id.to_string();
        let candidate = candidate.clone();
        self.run(op, move |conn| {
            let user_key = format!("{USER_URL_PREFIX}{user_id}");
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let current = personal_url_in(&tx, &user_key)?;
            if let Some(current) = current.as_ref().filter(|c| c.live(&candidate, now)) {
                return Ok(current.clone());
            }
            // Absent or expired: the candidate replaces it, and the old secret's
            // grant goes with it.
            if let Some(old) = current.filter(|old| old.secret_hash != candidate.secret_hash) {
                tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?
                    .execute([format!("{URL_PREFIX}{}", old.secret_hash)])?;
            }
            let value = json_column(&PersonalUrlValue {
                sealed_secret: candidate.sealed_secret.clone(),
                secret_hash: candidate.secret_hash.clone(),
                epoch: candidate.epoch,
            })?;
            put_key(&tx, &user_key, &value, candidate.expires_at)?;
            let grant = json_column(&GrantValue {
                user_id: user_id.clone(),
                session_id: None,
                agent_name: None,
                grantee: None,
                permission: None,
                epoch: candidate.epoch,
            })?;
            put_key(
                &tx,
                &format!("{URL_PREFIX}{}", candidate.secret_hash),
                &grant,
                candidate.expires_at,
            )?;
            tx.commit()?;
            Ok(candidate.clone())
        })
        .await
    }

    async fn revoke_personal_url(&self, user_id: &str) -> Result<bool, StoreError> {
        let op = "revoke_personal_url";
        let user_key = format!("{USER_URL_PREFIX}{user_id}");
        self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let revoked = delete_url_claim(&tx, &user_key)?;
            tx.commit()?;
            Ok(revoked)
        })
        .await
    }

    async fn claim_share_url(
        &self,
        owner: &str,
        grantee: &str,
        permission: &str,
        candidate: &PersonalUrl,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError> {
        let op = "claim_share_url";
        let (owner, grantee, permission) = (
            owner.to_string(),
            grantee.to_string(),
            permission.to_string(),
        );
        let candidate = candidate.clone();
        self.run(op, move |conn| {
            let url_key = share_url_key(&owner, &grantee);
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let current = personal_url_in(&tx, &url_key)?;
            if let Some(current) = current.as_ref().filter(|c| c.live(&candidate, now)) {
                return Ok(Some(current.clone()));
            }
            let shared: Option<Vec<String>> = tx
                .prepare_cached("SELECT permissions FROM shares WHERE owner = ?1 AND grantee = ?2")?
                .query_row([&owner, &grantee], |row| json_from_column(row, 0))
                .optional()?;
            if !shared.is_some_and(|perms| perms.contains(&permission)) {
                return Ok(None);
            }
            if let Some(old) = current.filter(|old| old.secret_hash != candidate.secret_hash) {
                tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?
                    .execute([format!("{URL_PREFIX}{}", old.secret_hash)])?;
            }
            let value = json_column(&PersonalUrlValue {
                sealed_secret: candidate.sealed_secret.clone(),
                secret_hash: candidate.secret_hash.clone(),
                epoch: candidate.epoch,
            })?;
            put_key(&tx, &url_key, &value, candidate.expires_at)?;
            let grant = json_column(&GrantValue {
                user_id: owner.clone(),
                session_id: None,
                agent_name: None,
                grantee: Some(grantee.clone()),
                permission: Some(permission.clone()),
                epoch: candidate.epoch,
            })?;
            put_key(
                &tx,
                &format!("{URL_PREFIX}{}", candidate.secret_hash),
                &grant,
                candidate.expires_at,
            )?;
            tx.commit()?;
            Ok(Some(candidate.clone()))
        })
        .await
    }

    async fn revoke_share_url(&self, owner: &str, grantee: &str) -> Result<bool, StoreError> {
        let url_key = share_url_key(owner, grantee);
        self.run("revoke_share_url", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let revoked = delete_url_claim(&tx, &url_key)?;
            tx.commit()?;
            Ok(revoked)
        })
        .await
    }

    async fn share_url(
        &self,
        owner: &str,
        grantee: &str,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError> {
        let url_key = share_url_key(owner, grantee);
        self.run("share_url", move |conn| {
            conn.prepare_cached(
                "SELECT value, expires_at FROM keys WHERE key = ?1 AND expires_at > ?2",
            )?
            .query_row(params![url_key, now_column(now)], personal_url_row)
            .optional()
        })
        .await
    }

    async fn shares_granted(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        let user = user_id.to_string();
        self.run("shares_granted", move |conn| {
            conn.prepare_cached(
                "SELECT grantee, permissions FROM shares WHERE owner = ?1 ORDER BY grantee",
            )?
            .query_map([&user], |row| Ok((row.get(0)?, json_from_column(row, 1)?)))?
            .collect()
        })
        .await
    }

    async fn shares_received(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        let user = user_id.to_string();
        self.run("shares_received", move |conn| {
            conn.prepare_cached(
                "SELECT owner, permissions FROM shares WHERE grantee = ?1 ORDER BY owner",
            )?
            .query_map([&user], |row| Ok((row.get(0)?, json_from_column(row, 1)?)))?
            .collect()
        })
        .await
    }

    async fn temporary_urls(
        &self,
        user_id: &str,
        now: u64,
    ) -> Result<Vec<(String, UrlGrant)>, StoreError> {
        let user = user_id.to_string();
        self.run("temporary_urls", move |conn| {
            // One file: a range scan of the `url#` rows is affordable here.
            conn.prepare_cached(
                "SELECT key, value, expires_at FROM keys \
                 WHERE key > 'url#' AND key < 'url$' AND expires_at > ?2 \
                   AND json_extract(value, '$.user_id') = ?1 \
                   AND json_extract(value, '$.session_id') IS NOT NULL \
                   AND json_extract(value, '$.grantee') IS NULL \
                 ORDER BY expires_at, key",
            )?
            .query_map(params![user, now_column(now)], |row| {
                let key: String = row.get(0)?;
                let value: GrantValue = json_from_column(row, 1)?;
                let hash = key.strip_prefix(URL_PREFIX).unwrap_or(&key).to_string();
                Ok((hash, value.grant(seconds_from_column(row, 2)?)))
            })?
            .collect()
        })
        .await
    }

    async fn revoke_temporary_url(
        &self,
        user_id: &str,
        secret_hash: &str,
    ) -> Result<bool, StoreError> {
        let user = user_id.to_string();
        let key = format!("{URL_PREFIX}{secret_hash}");
        self.run("revoke_temporary_url", move |conn| {
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM keys WHERE key = ?1 \
                       AND json_extract(value, '$.user_id') = ?2 \
                       AND json_extract(value, '$.session_id') IS NOT NULL \
                       AND json_extract(value, '$.grantee') IS NULL",
                )?
                .execute([&key, &user])?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn personal_url(
        &self,
        user_id: &str,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError> {
        let user_key = format!("{USER_URL_PREFIX}{user_id}");
        self.run("personal_url", move |conn| {
            conn.prepare_cached(
                "SELECT value, expires_at FROM keys WHERE key = ?1 AND expires_at > ?2",
            )?
            .query_row(params![user_key, now_column(now)], personal_url_row)
            .optional()
        })
        .await
    }

    async fn put_invitation(&self, invitation: &Invitation) -> Result<(), StoreError> {
        let invitation = invitation.clone();
        self.run("put_invitation", move |conn| {
            conn.prepare_cached(
                "INSERT INTO invitations (owner, email, id, permissions, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (owner, email) DO UPDATE SET id = excluded.id, \
                   permissions = excluded.permissions, created_at = excluded.created_at",
            )?
            .execute(params![
                invitation.owner,
                invitation.email,
                invitation.id,
                json_column(&invitation.permissions)?,
                seconds_column(invitation.created_at)?
            ])?;
            Ok(())
        })
        .await
    }

    async fn delete_invitation(&self, owner: &str, email: &str) -> Result<bool, StoreError> {
        let (owner, email) = (owner.to_string(), email.to_string());
        self.run("delete_invitation", move |conn| {
            let deleted = conn
                .prepare_cached("DELETE FROM invitations WHERE owner = ?1 AND email = ?2")?
                .execute([&owner, &email])?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn invitations_sent(&self, owner: &str) -> Result<Vec<Invitation>, StoreError> {
        let owner = owner.to_string();
        self.run("invitations_sent", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {INVITATION_COLUMNS} FROM invitations WHERE owner = ?1 ORDER BY email"
            ))?
            .query_map([&owner], invitation_from_row)?
            .collect()
        })
        .await
    }

    async fn invitations_for(&self, email: &str) -> Result<Vec<Invitation>, StoreError> {
        let email = email.to_string();
        self.run("invitations_for", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {INVITATION_COLUMNS} FROM invitations WHERE email = ?1 ORDER BY owner"
            ))?
            .query_map([&email], invitation_from_row)?
            .collect()
        })
        .await
    }

    async fn accept_invitation(
        &self,
        email: &str,
        id: &str,
        grantee: &str,
    ) -> Result<Option<Invitation>, StoreError> {
        let (email, id, grantee) = (email.to_string(), id.to_string(), grantee.to_string());
        self.run("accept_invitation", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(invitation) = tx
                .prepare_cached(&format!(
                    "SELECT {INVITATION_COLUMNS} FROM invitations WHERE email = ?1 AND id = ?2"
                ))?
                .query_row([&email, &id], invitation_from_row)
                .optional()?
            else {
                return Ok(None);
            };
            if invitation.owner == grantee {
                return Ok(None);
            }
            tx.prepare_cached("DELETE FROM invitations WHERE owner = ?1 AND email = ?2")?
                .execute([&invitation.owner, &email])?;
            tx.prepare_cached(
                "INSERT INTO shares (owner, grantee, permissions) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (owner, grantee) DO UPDATE SET permissions = excluded.permissions",
            )?
            .execute(params![
                invitation.owner,
                grantee,
                json_column(&invitation.permissions)?
            ])?;
            tx.commit()?;
            Ok(Some(invitation))
        })
        .await
    }
}

#[async_trait]
impl LoginStore for EmbeddedStore {
    async fn put_login_state(&self, state: &str, record: &LoginState) -> Result<(), StoreError> {
        let key = format!("{STATE_PREFIX}{state}");
        let record = record.clone();
        self.run("put_login_state", move |conn| {
            let value = json_column(&StateRow {
                status: match record.status {
                    LoginStatus::Pending => StateValue::Pending,
                    LoginStatus::Completed { sealed_token } => {
                        StateValue::Completed { sealed_token }
                    }
                    LoginStatus::Collected => StateValue::Collected,
                },
                created_at: record.created_at,
                client_name: record.client_name,
                poll_secret_hash: record.poll_secret_hash,
                user_code_hash: record.user_code_hash,
            })?;
            put_key(conn, &key, &value, record.expires_at)
        })
        .await
    }

    async fn login_state(&self, state: &str) -> Result<Option<LoginState>, StoreError> {
        let key = format!("{STATE_PREFIX}{state}");
        self.run("login_state", move |conn| {
            conn.prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([&key], |row| {
                        let stored: StateRow = json_from_column(row, 0)?;
                        let status = match stored.status {
                            StateValue::Pending => LoginStatus::Pending,
                            StateValue::Completed { sealed_token } => {
                                LoginStatus::Completed { sealed_token }
                            }
                            StateValue::Collected => LoginStatus::Collected,
                        };
                        Ok(LoginState {
                            status,
                            expires_at: seconds_from_column(row, 1)?,
                            created_at: stored.created_at,
                            client_name: stored.client_name,
                            poll_secret_hash: stored.poll_secret_hash,
                            user_code_hash: stored.user_code_hash,
                        })
                    })
                    .optional()
                })
        })
        .await
    }

    async fn complete_login_state(
        &self,
        state: &str,
        sealed_token: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let op = "complete_login_state";
        let key = format!("{STATE_PREFIX}{state}");
        let sealed_token = sealed_token.to_string();
        self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let row = tx
                .prepare_cached("SELECT value FROM keys WHERE key = ?1 AND expires_at > ?2")?
                .query_row(params![key, now_column(now)], |row| {
                    json_from_column::<StateRow>(row, 0)
                })
                .optional()?;
            let Some(mut row) = row.filter(|r| matches!(r.status, StateValue::Pending)) else {
                return Ok(false);
            };
            row.status = StateValue::Completed { sealed_token };
            tx.prepare_cached("UPDATE keys SET value = ?2 WHERE key = ?1")?
                .execute([&key, &json_column(&row)?])?;
            tx.commit()?;
            Ok(true)
        })
        .await
    }

    async fn take_login_token(&self, state: &str, now: u64) -> Result<Option<String>, StoreError> {
        let op = "take_login_token";
        let key = format!("{STATE_PREFIX}{state}");
        self.run(op, move |conn| {
            // One immediate transaction: of two racing takes, the second reads the
            // state the first left (collected) and gets nothing.
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let row = tx
                .prepare_cached("SELECT value FROM keys WHERE key = ?1 AND expires_at > ?2")?
                .query_row(params![key, now_column(now)], |row| {
                    json_from_column::<StateRow>(row, 0)
                })
                .optional()?;
            let Some(mut row) = row else {
                return Ok(None);
            };
            let StateValue::Completed { sealed_token } =
                std::mem::replace(&mut row.status, StateValue::Collected)
            else {
                return Ok(None);
            };
            tx.prepare_cached("UPDATE keys SET value = ?2 WHERE key = ?1")?
                .execute([&key, &json_column(&row)?])?;
            tx.commit()?;
            Ok(Some(sealed_token))
        })
        .await
    }

    async fn put_mail_token(&self, secret_hash: &str, token: &MailToken) -> Result<(), StoreError> {
        let key = format!("{MAIL_PREFIX}{secret_hash}");
        let value = MailValue {
            purpose: token.purpose,
            user_id: token.user_id.clone(),
            email: token.email.clone(),
        };
        let expires_at = token.expires_at;
        self.run("put_mail_token", move |conn| {
            put_key(conn, &key, &json_column(&value)?, expires_at)
        })
        .await
    }

    async fn take_mail_token(
        &self,
        secret_hash: &str,
        purpose: MailPurpose,
        now: u64,
    ) -> Result<Option<MailToken>, StoreError> {
        let key = format!("{MAIL_PREFIX}{secret_hash}");
        self.run("take_mail_token", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let row: Option<(MailValue, u64)> = tx
                .prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
                .query_row([&key], |row| {
                    Ok((json_from_column(row, 0)?, seconds_from_column(row, 1)?))
                })
                .optional()?;
            let Some((value, expires_at)) = row else {
                return Ok(None);
            };
            if value.purpose != purpose {
                return Ok(None);
            }
            tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?
                .execute([&key])?;
            tx.commit()?;
            Ok((expires_at > now).then_some(MailToken {
                purpose: value.purpose,
                user_id: value.user_id,
                email: value.email,
                expires_at,
            }))
        })
        .await
    }
}
