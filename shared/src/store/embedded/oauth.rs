//! [`OAuthStore`] on SQLite: the `keys` rows of clients (`client#`), codes (`code#`),
//! refresh tokens (`refresh#`) and revoked families (`family#`).
//!
//! A code's single use and a token's rotation each run in one immediate transaction.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

use super::{
    EmbeddedStore, json_column, json_from_column, now_column, put_key, seconds_column,
    seconds_from_column,
};
use crate::domain::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};
use crate::store::keys::{CLIENT_PREFIX, CODE_PREFIX, FAMILY_PREFIX, REFRESH_PREFIX};
use crate::store::{OAuthStore, StoreError};

/// A `code#` row's value (`expires_at` is the column).
#[derive(Serialize, Deserialize)]
struct CodeValue {
    client_id: String,
    user_id: String,
    scope: String,
    redirect_uri: String,
    code_challenge: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
    /// Absent on codes stored before they carried an epoch.
    #[serde(default)]
    epoch: u64,
    #[serde(default)]
    issued_at: u64,
}

/// A `refresh#` row's value: the record and whether it has been used.
#[derive(Serialize, Deserialize)]
struct RefreshValue {
    user_id: String,
    client_id: String,
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
    family_id: String,
    used: bool,
    #[serde(default)]
    epoch: u64,
    #[serde(default)]
    issued_at: u64,
}

impl RefreshValue {
    fn of(record: &RefreshRecord, used: bool) -> RefreshValue {
        RefreshValue {
            user_id: record.user_id.clone(),
            client_id: record.client_id.clone(),
            scope: record.scope.clone(),
            resource: record.resource.clone(),
            family_id: record.family_id.clone(),
            used,
            epoch: record.epoch,
            issued_at: record.issued_at,
        }
    }
}

/// A `family#` row's value: the family's tokens are revoked until `expires_at`.
#[derive(Serialize, Deserialize)]
struct FamilyValue {
    revoked: bool,
}

/// A `refresh#` row as stored (live or not): the record and its `used` flag.
fn refresh_in(tx: &Transaction<'_>, key: &str) -> rusqlite::Result<Option<(RefreshRecord, bool)>> {
    tx.prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
        .query_row([key], |row| {
            let value: RefreshValue = json_from_column(row, 0)?;
            let record = RefreshRecord {
                user_id: value.user_id,
                client_id: value.client_id,
                scope: value.scope,
                resource: value.resource,
                family_id: value.family_id,
                expires_at: seconds_from_column(row, 1)?,
                epoch: value.epoch,
                issued_at: value.issued_at,
            };
            Ok((record, value.used))
        })
        .optional()
}

#[async_trait]
impl OAuthStore for EmbeddedStore {
    async fn put_client(&self, client: &OAuthClient) -> Result<bool, StoreError> {
        let op = "put_client";
        let key = format!("{CLIENT_PREFIX}{}", client.client_id);
        // The lapse time lives in the column (the value's copy is ignored on read).
        let expires_at = client.expires_at.map(seconds_column).transpose();
        let client = OAuthClient {
            expires_at: None,
            ..client.clone()
        };
        self.run(op, move |conn| {
            // One statement, so the check and the insert are one atomic step.
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO keys (key, value, expires_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (key) DO NOTHING",
                )?
                .execute(params![key, json_column(&client)?, expires_at?])?;
            Ok(inserted == 1)
        })
        .await
    }

    async fn client(&self, client_id: &str, now: u64) -> Result<Option<OAuthClient>, StoreError> {
        let op = "client";
        let key = format!("{CLIENT_PREFIX}{client_id}");
        self.run(op, move |conn| {
            conn.prepare_cached(
                "SELECT value, expires_at FROM keys \
                 WHERE key = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
            )
            .and_then(|mut stmt| {
                stmt.query_row(params![key, now_column(now)], |row| {
                    let client: OAuthClient = json_from_column(row, 0)?;
                    let expires_at: Option<i64> = row.get(1)?;
                    Ok(OAuthClient {
                        expires_at: expires_at.and_then(|at| u64::try_from(at).ok()),
                        ..client
                    })
                })
                .optional()
            })
        })
        .await
    }

    async fn extend_client(&self, client_id: &str, expires_at: u64) -> Result<bool, StoreError> {
        let op = "extend_client";
        let key = format!("{CLIENT_PREFIX}{client_id}");
        self.run(op, move |conn| {
            let updated = conn
                .prepare_cached("UPDATE keys SET expires_at = ?2 WHERE key = ?1")?
                .execute(params![key, seconds_column(expires_at)?])?;
            Ok(updated == 1)
        })
        .await
    }

    async fn put_code(&self, code_hash: &str, code: &AuthCode) -> Result<(), StoreError> {
        let op = "put_code";
        let key = format!("{CODE_PREFIX}{code_hash}");
        let code = code.clone();
        self.run(op, move |conn| {
            let value = json_column(&CodeValue {
                client_id: code.client_id,
                user_id: code.user_id,
                scope: code.scope,
                redirect_uri: code.redirect_uri,
                code_challenge: code.code_challenge,
                resource: code.resource,
                epoch: code.epoch,
                issued_at: code.issued_at,
            })?;
            put_key(conn, &key, &value, code.expires_at)
        })
        .await
    }

    async fn take_code(&self, code_hash: &str, now: u64) -> Result<Option<AuthCode>, StoreError> {
        let op = "take_code";
        let key = format!("{CODE_PREFIX}{code_hash}");
        self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some(code) = tx
                .prepare_cached("SELECT value, expires_at FROM keys WHERE key = ?1")?
                .query_row([&key], |row| {
                    let value: CodeValue = json_from_column(row, 0)?;
                    Ok(AuthCode {
                        client_id: value.client_id,
                        user_id: value.user_id,
                        scope: value.scope,
                        redirect_uri: value.redirect_uri,
                        code_challenge: value.code_challenge,
                        resource: value.resource,
                        expires_at: seconds_from_column(row, 1)?,
                        epoch: value.epoch,
                        issued_at: value.issued_at,
                    })
                })
                .optional()?
            else {
                return Ok(None);
            };
            // Deleted whether live or expired: a code is never read twice.
            tx.prepare_cached("DELETE FROM keys WHERE key = ?1")?
                .execute([&key])?;
            tx.commit()?;
            Ok((code.expires_at > now).then_some(code))
        })
        .await
    }

    async fn put_refresh(
        &self,
        token_hash: &str,
        record: &RefreshRecord,
    ) -> Result<(), StoreError> {
        let op = "put_refresh";
        let key = format!("{REFRESH_PREFIX}{token_hash}");
        let value = RefreshValue::of(record, false);
        let expires_at = record.expires_at;
        self.run(op, move |conn| {
            put_key(conn, &key, &json_column(&value)?, expires_at)
        })
        .await
    }

    async fn use_refresh(&self, token_hash: &str, now: u64) -> Result<RefreshUse, StoreError> {
        let op = "use_refresh";
        let key = format!("{REFRESH_PREFIX}{token_hash}");
        self.run(op, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let Some((record, used)) = refresh_in(&tx, &key)? else {
                return Ok(RefreshUse::Unknown);
            };
            if record.expires_at <= now {
                return Ok(RefreshUse::Unknown);
            }
            if used {
                return Ok(RefreshUse::Reused(record));
            }
            let revoked = tx
                .prepare_cached("SELECT value FROM keys WHERE key = ?1 AND expires_at > ?2")?
                .query_row(
                    params![
                        format!("{FAMILY_PREFIX}{}", record.family_id),
                        now_column(now)
                    ],
                    |row| json_from_column::<FamilyValue>(row, 0),
                )
                .optional()?
                .is_some_and(|family| family.revoked);
            // Marked used either way (as the DynamoDB store does): a token of a revoked
            // family stays dead even after the revocation marker expires.
            let value = json_column(&RefreshValue::of(&record, true))?;
            tx.prepare_cached("UPDATE keys SET value = ?2 WHERE key = ?1")?
                .execute([&key, &value])?;
            tx.commit()?;
            Ok(if revoked {
                RefreshUse::Reused(record)
            } else {
                RefreshUse::Fresh(record)
            })
        })
        .await
    }

    async fn revoke_refresh_family(
        &self,
        family_id: &str,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        let op = "revoke_refresh_family";
        let key = format!("{FAMILY_PREFIX}{family_id}");
        self.run(op, move |conn| {
            // A family already revoked until later stays revoked until then.
            conn.prepare_cached(
                "INSERT INTO keys (key, value, expires_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, \
                   expires_at = max(coalesce(expires_at, 0), excluded.expires_at)",
            )?
            .execute(params![
                key,
                json_column(&FamilyValue { revoked: true })?,
                seconds_column(expires_at)?
            ])?;
            Ok(())
        })
        .await
    }
}
