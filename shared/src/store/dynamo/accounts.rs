//! [`AccountStore`] on DynamoDB: accounts (`account` and the `email#` lookup, written
//! together), shares (`share#`), URL grants (`url#`), personal URL claims
//! (`user-url#`), delegated share URLs (`share-url#`), login states (`state#`) and abuse
//! counters (`limit#`).
//!
//! Every read of an expiring item checks `expires_at` itself (TTL deletion lags).

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{ReturnValue, TransactWriteItem};

use super::batch::query_all;
use super::codec::{
    Item, get_opt_s, get_opt_u64, get_s, get_strings, get_u64, insert_optional, n, s, string_list,
};
use super::schema::{
    ACCOUNT_SK, COLLECTED, COMPLETED, EMAIL_PREFIX, EXPIRES_AT, INVITE_PREFIX, INVITEE_PREFIX, KEY,
    MAIL_PREFIX, PENDING, PK, SHARE_PREFIX, SHARE_URL_PREFIX, SHARED_BY_PREFIX, SK, STATE_PREFIX,
    TEMP_URL_PREFIX, TOKENS_PREFIX, URL_PREFIX, USER_URL_PREFIX, data_key, keys_key,
};
use super::transact::{
    Attempt, Committed, Condition, condition, conditional, contended, tx_check, tx_delete, tx_put,
    tx_update,
};
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{
    Account, Delegation, Invitation, LoginState, LoginStatus, MailPurpose, MailToken, PersonalUrl,
    TokenState, UrlGrant,
};
use crate::store::accounts::counter_key;
use crate::store::{
    AccountRecords, AccountStore, Created, GrantStore, LoginStore, StoreError, TokenChange,
    apply_token_change,
};

/// A `temp-url#` entry expired this long is deleted when listed (a read at an earlier
/// `now` still sees it hidden, not gone).
const PRUNE_AFTER_SECS: u64 = 24 * 3600;

/// The serial attribute of a `tokens#` item.
const TOKENS_SERIAL: &str = "v";

/// A `tokens#` item's state and serial; the default and 0 when absent.
fn token_state_from_item(
    op: &'static str,
    item: Option<&Item>,
) -> Result<(TokenState, u64), StoreError> {
    let Some(item) = item else {
        return Ok((TokenState::default(), 0));
    };
    let state = serde_json::from_str(&get_s(op, item, "state")?).map_err(|_| corrupt(op))?;
    Ok((state, get_u64(op, item, TOKENS_SERIAL)?))
}

fn account_from_item(op: &'static str, user_id: &str, item: &Item) -> Result<Account, StoreError> {
    Ok(Account {
        user_id: user_id.to_string(),
        email: get_s(op, item, "email")?,
        password_hash: get_s(op, item, "password_hash")?,
        created_at: get_u64(op, item, "created_at")?,
        // Absent on accounts from before, which count as unconfirmed.
        email_confirmed: item.contains_key(EMAIL_CONFIRMED_AT),
    })
}

/// When the account's address was confirmed; absent until then.
const EMAIL_CONFIRMED_AT: &str = "email_confirmed_at";

fn purpose_name(purpose: MailPurpose) -> &'static str {
    match purpose {
        MailPurpose::Confirm => "confirm",
        MailPurpose::Reset => "reset",
    }
}

/// The owner's item of an invitation and the address's view of it.
fn invitation_items(invitation: &Invitation) -> (Item, Item) {
    let item = |pk: String, sk: String| {
        HashMap::from([
            (PK.to_string(), s(pk)),
            (SK.to_string(), s(sk)),
            ("id".to_string(), s(invitation.id.as_str())),
            ("owner".to_string(), s(invitation.owner.as_str())),
            ("email".to_string(), s(invitation.email.as_str())),
            (
                "permissions".to_string(),
                string_list(&invitation.permissions),
            ),
            ("created_at".to_string(), n(invitation.created_at)),
        ])
    };
    (
        item(
            invitation.owner.clone(),
            format!("{INVITE_PREFIX}{}", invitation.email),
        ),
        item(
            format!("{INVITEE_PREFIX}{}", invitation.email),
            format!("{INVITE_PREFIX}{}", invitation.owner),
        ),
    )
}

fn invitation_from_item(op: &'static str, item: &Item) -> Result<Invitation, StoreError> {
    Ok(Invitation {
        id: get_s(op, item, "id")?,
        owner: get_s(op, item, "owner")?,
        email: get_s(op, item, "email")?,
        permissions: permissions_from_item(op, item)?,
        created_at: get_u64(op, item, "created_at")?,
    })
}

fn url_grant_item(secret_hash: &str, grant: &UrlGrant) -> Item {
    let mut item = HashMap::from([
        (KEY.to_string(), s(format!("{URL_PREFIX}{secret_hash}"))),
        ("user_id".to_string(), s(grant.user_id.as_str())),
        (EXPIRES_AT.to_string(), n(grant.expires_at)),
        ("epoch".to_string(), n(grant.epoch)),
    ]);
    insert_optional(
        &mut item,
        &[
            ("session_id", &grant.session_id),
            ("agent_name", &grant.agent_name),
        ],
    );
    if let Some(delegation) = &grant.delegation {
        item.insert("grantee".to_string(), s(delegation.grantee.as_str()));
        item.insert("permission".to_string(), s(delegation.permission.as_str()));
    }
    item
}

fn url_grant_from_item(op: &'static str, item: &Item) -> Result<UrlGrant, StoreError> {
    Ok(UrlGrant {
        user_id: get_s(op, item, "user_id")?,
        session_id: get_opt_s(op, item, "session_id")?,
        agent_name: get_opt_s(op, item, "agent_name")?,
        delegation: match get_opt_s(op, item, "grantee")? {
            Some(grantee) => Some(Delegation {
                grantee,
                permission: get_s(op, item, "permission")?,
            }),
            None => None,
        },
        expires_at: get_u64(op, item, EXPIRES_AT)?,
        // Absent on grants stored before they carried an epoch.
        epoch: get_opt_u64(op, item, "epoch")?.unwrap_or(0),
    })
}

/// The keys-table key of a grantee's delegated URL on `owner`'s data.
fn share_url_key(owner: &str, grantee: &str) -> String {
    format!("{SHARE_URL_PREFIX}{owner}#{grantee}")
}

/// The condition under which a claim item may be (re)put: absent, expired at `now`, or
/// from an older epoch than `candidate` (an item without an epoch is from before issue
/// 27). A racing claim put since the read carries the same epoch, so it stands.
fn replaceable_claim(candidate: &PersonalUrl, now: u64) -> Option<Condition> {
    condition(
        "attribute_not_exists(#k) OR #exp <= :now OR attribute_not_exists(#ep) OR #ep < :ep",
        &[("#k", KEY), ("#exp", EXPIRES_AT), ("#ep", "epoch")],
        vec![(":now", n(now)), (":ep", n(candidate.epoch))],
    )
}

/// A `user-url#` (or `share-url#`, with its own `key`) item.
fn personal_url_item(key: String, url: &PersonalUrl) -> Item {
    HashMap::from([
        (KEY.to_string(), s(key)),
        ("sealed_secret".to_string(), s(url.sealed_secret.as_str())),
        ("secret_hash".to_string(), s(url.secret_hash.as_str())),
        (EXPIRES_AT.to_string(), n(url.expires_at)),
        ("epoch".to_string(), n(url.epoch)),
    ])
}

fn personal_url_from_item(op: &'static str, item: &Item) -> Result<PersonalUrl, StoreError> {
    Ok(PersonalUrl {
        sealed_secret: get_s(op, item, "sealed_secret")?,
        secret_hash: get_s(op, item, "secret_hash")?,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
        // Absent on claims stored before they carried an epoch.
        epoch: get_opt_u64(op, item, "epoch")?.unwrap_or(0),
    })
}

fn login_state_from_item(op: &'static str, item: &Item) -> Result<LoginState, StoreError> {
    let status = match get_s(op, item, "status")?.as_str() {
        PENDING => LoginStatus::Pending,
        COMPLETED => LoginStatus::Completed {
            sealed_token: get_s(op, item, "sealed_token")?,
        },
        COLLECTED => LoginStatus::Collected,
        _ => return Err(corrupt(op)),
    };
    // A state written before these fields existed reads with empty hashes, which
    // nothing matches: it can be neither polled nor completed.
    let optional = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    Ok(LoginState {
        status,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
        created_at: item
            .get("created_at")
            .map(|_| get_u64(op, item, "created_at"))
            .transpose()?
            .unwrap_or(0),
        client_name: optional("client_name"),
        poll_secret_hash: optional("poll_secret_hash").unwrap_or_default(),
        user_code_hash: optional("user_code_hash").unwrap_or_default(),
    })
}

/// Permissions as written (a list), or a string set written by hand.
fn permissions_from_item(op: &'static str, item: &Item) -> Result<Vec<String>, StoreError> {
    get_strings(op, item, "permissions")
}

#[async_trait]
impl AccountStore for DynamoStore {
    async fn create_account(&self, account: &Account) -> Result<Created, StoreError> {
        let op = "create_account";
        let email_item = HashMap::from([
            (
                KEY.to_string(),
                s(format!("{EMAIL_PREFIX}{}", account.email)),
            ),
            ("user_id".to_string(), s(account.user_id.as_str())),
        ]);
        let account_item = HashMap::from([
            (PK.to_string(), s(account.user_id.as_str())),
            (SK.to_string(), s(ACCOUNT_SK)),
            ("email".to_string(), s(account.email.as_str())),
            (
                "password_hash".to_string(),
                s(account.password_hash.as_str()),
            ),
            ("created_at".to_string(), n(account.created_at)),
        ]);
        let mut account_item = account_item;
        if account.email_confirmed {
            account_item.insert(EMAIL_CONFIRMED_AT.to_string(), n(account.created_at));
        }
        let (email_item, account_item) = (&email_item, &account_item);
        contended(op, || async move {
            let items = vec![
                tx_put(
                    op,
                    &self.tables.keys,
                    email_item.clone(),
                    condition("attribute_not_exists(#k)", &[("#k", KEY)], vec![]),
                )?,
                tx_put(
                    op,
                    &self.tables.data,
                    account_item.clone(),
                    condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]),
                )?,
            ];
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(Created::Created));
            }
            if outcome.condition_failed(0) {
                return Ok(Attempt::Done(Created::EmailTaken));
            }
            if outcome.condition_failed(1) {
                tracing::warn!(
                    operation = op,
                    "dynamodb store: user id already has an account"
                );
                return Err(StoreError::Unavailable(format!(
                    "{op}: user id already has an account"
                )));
            }
            outcome.retry(op)
        })
        .await
    }

    async fn account_by_email(&self, email: &str) -> Result<Option<Account>, StoreError> {
        let op = "account_by_email";
        let Some(lookup) = self.key_item(op, format!("{EMAIL_PREFIX}{email}")).await? else {
            return Ok(None);
        };
        let user_id = get_s(op, &lookup, "user_id")?;
        // Both items are written in one transaction: one without the other, or an
        // account with another e-mail, is a bug or a manual edit.
        let item = self
            .data_item(op, &user_id, ACCOUNT_SK.to_string())
            .await?
            .ok_or_else(|| corrupt(op))?;
        let account = account_from_item(op, &user_id, &item)?;
        if account.email != email {
            return Err(corrupt(op));
        }
        Ok(Some(account))
    }

    async fn account(&self, user_id: &str) -> Result<Option<Account>, StoreError> {
        let op = "account";
        self.data_item(op, user_id, ACCOUNT_SK.to_string())
            .await?
            .map(|item| account_from_item(op, user_id, &item))
            .transpose()
    }

    async fn purge_expired(&self, _now: u64) -> Result<u64, StoreError> {
        // DynamoDB's TTL on `expires_at` deletes expired items of both tables itself.
        Ok(0)
    }

    async fn count_event(
        &self,
        key_hash: &str,
        window_secs: u64,
        now: u64,
    ) -> Result<u32, StoreError> {
        let op = "count_event";
        let (key, expires_at) = counter_key(key_hash, window_secs, now);
        let out = self
            .client
            .update_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(key))
            .update_expression("ADD #count :one SET #exp = :exp")
            .expression_attribute_names("#count", COUNT)
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":exp", n(expires_at))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        let item = out.attributes.ok_or_else(|| corrupt(op))?;
        count_of(op, &item)
    }

    async fn event_count(
        &self,
        key_hash: &str,
        window_secs: u64,
        now: u64,
    ) -> Result<u32, StoreError> {
        let op = "event_count";
        let (key, _) = counter_key(key_hash, window_secs, now);
        match self.key_item(op, key).await? {
            Some(item) if get_u64(op, &item, EXPIRES_AT)? > now => count_of(op, &item),
            _ => Ok(0),
        }
    }

    async fn token_state(&self, user_id: &str) -> Result<TokenState, StoreError> {
        let op = "token_state";
        let item = self
            .key_item(op, format!("{TOKENS_PREFIX}{user_id}"))
            .await?;
        Ok(token_state_from_item(op, item.as_ref())?.0)
    }

    async fn change_tokens(
        &self,
        user_id: &str,
        change: &TokenChange,
        now: u64,
    ) -> Result<TokenState, StoreError> {
        let op = "change_tokens";
        contended(op, || async move {
            let (state, put) = self.next_token_state(op, user_id, change, now).await?;
            Ok(match self.transact(op, vec![put]).await? {
                Committed::Yes => Attempt::Done(state),
                outcome => outcome.retry(op)?,
            })
        })
        .await
    }

    async fn change_password(
        &self,
        user_id: &str,
        password_hash: &str,
        now: u64,
    ) -> Result<Option<TokenState>, StoreError> {
        let op = "change_password";
        contended(op, || async move {
            let (state, put) = self
                .next_token_state(op, user_id, &TokenChange::EndAll, now)
                .await?;
            let update = tx_update(
                op,
                &self.tables.data,
                data_key(user_id, ACCOUNT_SK.to_string()),
                "SET #hash = :hash",
                condition(
                    "attribute_exists(#pk)",
                    &[("#pk", PK), ("#hash", "password_hash")],
                    vec![(":hash", s(password_hash))],
                ),
            )?;
            let outcome = self.transact(op, vec![put, update]).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(Some(state)));
            }
            if outcome.condition_failed(1) {
                return Ok(Attempt::Done(None));
            }
            outcome.retry(op)
        })
        .await
    }

    async fn account_records(&self, user_id: &str) -> Result<AccountRecords, StoreError> {
        let op = "account_records";
        let mut shares_granted = Vec::new();
        for item in self
            .partition_items(op, user_id, Some(SHARE_PREFIX))
            .await?
        {
            let sk = get_s(op, &item, SK)?;
            let grantee = sk.strip_prefix(SHARE_PREFIX).ok_or_else(|| corrupt(op))?;
            shares_granted.push((grantee.to_string(), permissions_from_item(op, &item)?));
        }
        let personal_url_expires_at = match self
            .key_item(op, format!("{USER_URL_PREFIX}{user_id}"))
            .await?
        {
            Some(item) => Some(get_u64(op, &item, EXPIRES_AT)?),
            None => None,
        };
        Ok(AccountRecords {
            shares_granted,
            personal_url_expires_at,
        })
    }

    async fn confirm_email(
        &self,
        user_id: &str,
        email: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let op = "confirm_email";
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .set_key(Some(data_key(user_id, ACCOUNT_SK.to_string())))
            .update_expression("SET #c = if_not_exists(#c, :now)")
            .condition_expression("attribute_exists(#pk) AND #email = :email")
            .expression_attribute_names("#c", EMAIL_CONFIRMED_AT)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#email", "email")
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":email", s(email))
            .send()
            .await;
        Ok(conditional(op, result)?.is_some())
    }

    async fn delete_account_everything(&self, user_id: &str, now: u64) -> Result<(), StoreError> {
        let op = "delete_account_everything";
        // First the tombstone: from here on every credential of the account is refused.
        self.change_tokens(user_id, &TokenChange::Deleted, now)
            .await?;
        // What the keys table holds for the user, found from the user's own items:
        // each share's delegated URL and its grant (with the share), the personal URL
        // and its grant, the upload pointers, the e-mail lookup.
        for item in self
            .partition_items(op, user_id, Some(SHARE_PREFIX))
            .await?
        {
            let sk = get_s(op, &item, SK)?;
            if let Some(grantee) = sk.strip_prefix(SHARE_PREFIX) {
                self.delete_share(user_id, grantee).await?;
            }
        }
        // The invitations the user sent, both views (the owner's go with the partition).
        for invitation in self.invitations_sent(user_id).await? {
            self.delete_invitation(user_id, &invitation.email).await?;
        }
        self.revoke_personal_url(user_id).await?;
        crate::store::UploadStore::delete_uploads(self, user_id).await?;
        if let Some(item) = self.data_item(op, user_id, ACCOUNT_SK.to_string()).await? {
            let email = get_s(op, &item, "email")?;
            // Only if the lookup still names this user (a retry after the e-mail
            // signed up again must not take the new account's lookup).
            conditional(
                op,
                self.client
                    .delete_item()
                    .table_name(&self.tables.keys)
                    .key(KEY, s(format!("{EMAIL_PREFIX}{email}")))
                    .condition_expression("#u = :u")
                    .expression_attribute_names("#u", "user_id")
                    .expression_attribute_values(":u", s(user_id))
                    .send()
                    .await,
            )?;
        }
        // Then every item of the user's partition, the account last of all (a retry
        // still finds the e-mail through it).
        let mut account = None;
        let mut deletes = Vec::new();
        for item in self.partition_items(op, user_id, None).await? {
            let key: Item = item
                .into_iter()
                .filter(|(name, _)| name == PK || name == SK)
                .collect();
            if key.get(SK) == Some(&s(ACCOUNT_SK)) {
                account = Some(key);
                continue;
            }
            deletes.push(delete_request(op, key)?);
        }
        self.write_all(op, deletes).await?;
        if let Some(key) = account {
            self.write_all(op, vec![delete_request(op, key)?]).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl GrantStore for DynamoStore {
    async fn put_share(
        &self,
        owner: &str,
        grantee: &str,
        permissions: &[String],
    ) -> Result<(), StoreError> {
        let op = "put_share";
        // The owner's item and the grantee's view of it (shares received), together.
        let item = |pk: &str, sk: String| {
            HashMap::from([
                (PK.to_string(), s(pk)),
                (SK.to_string(), s(sk)),
                ("permissions".to_string(), string_list(permissions)),
            ])
        };
        let items = vec![
            tx_put(
                op,
                &self.tables.data,
                item(owner, format!("{SHARE_PREFIX}{grantee}")),
                None,
            )?,
            tx_put(
                op,
                &self.tables.data,
                item(grantee, format!("{SHARED_BY_PREFIX}{owner}")),
                None,
            )?,
        ];
        contended(op, || {
            let items = items.clone();
            async move {
                match self.transact(op, items).await? {
                    Committed::Yes => Ok(Attempt::Done(())),
                    outcome => outcome.retry(op),
                }
            }
        })
        .await
    }

    async fn delete_share(&self, owner: &str, grantee: &str) -> Result<(), StoreError> {
        let op = "delete_share";
        let url_key = &share_url_key(owner, grantee);
        contended(op, || async move {
            let current = self
                .key_item(op, url_key.clone())
                .await?
                .map(|item| personal_url_from_item(op, &item))
                .transpose()?;
            // Item 0 pins the delegated URL to what was read (gone, or this one), so
            // a claim racing with the unshare cannot leave a URL behind the share.
            let mut items = vec![match &current {
                Some(current) => tx_delete(
                    op,
                    &self.tables.keys,
                    keys_key(url_key.clone()),
                    condition(
                        "#hash = :hash",
                        &[("#hash", "secret_hash")],
                        vec![(":hash", s(current.secret_hash.as_str()))],
                    ),
                )?,
                None => tx_check(
                    op,
                    &self.tables.keys,
                    keys_key(url_key.clone()),
                    condition("attribute_not_exists(#k)", &[("#k", KEY)], vec![]),
                )?,
            }];
            items.push(tx_delete(
                op,
                &self.tables.data,
                HashMap::from([
                    (PK.to_string(), s(owner)),
                    (SK.to_string(), s(format!("{SHARE_PREFIX}{grantee}"))),
                ]),
                None,
            )?);
            items.push(tx_delete(
                op,
                &self.tables.data,
                HashMap::from([
                    (PK.to_string(), s(grantee)),
                    (SK.to_string(), s(format!("{SHARED_BY_PREFIX}{owner}"))),
                ]),
                None,
            )?);
            if let Some(current) = &current {
                items.push(tx_delete(
                    op,
                    &self.tables.keys,
                    keys_key(format!("{URL_PREFIX}{}", current.secret_hash)),
                    None,
                )?);
            }
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(()));
            }
            outcome.retry(op)
        })
        .await
    }

    async fn share(&self, owner: &str, grantee: &str) -> Result<Option<Vec<String>>, StoreError> {
        let op = "share";
        self.data_item(op, owner, format!("{SHARE_PREFIX}{grantee}"))
            .await?
            .map(|item| permissions_from_item(op, &item))
            .transpose()
    }

    async fn put_url_grant(&self, secret_hash: &str, grant: &UrlGrant) -> Result<(), StoreError> {
        let op = "put_url_grant";
        let item = url_grant_item(secret_hash, grant);
        if grant.session_id.is_none() || grant.delegation.is_some() {
            return self.put_key_item(op, item).await;
        }
        // A temporary URL: its grant and the user's list entry, together.
        let mut entry = HashMap::from([
            (PK.to_string(), s(grant.user_id.as_str())),
            (SK.to_string(), s(format!("{TEMP_URL_PREFIX}{secret_hash}"))),
            (EXPIRES_AT.to_string(), n(grant.expires_at)),
            ("epoch".to_string(), n(grant.epoch)),
        ]);
        insert_optional(
            &mut entry,
            &[
                ("session_id", &grant.session_id),
                ("agent_name", &grant.agent_name),
            ],
        );
        let items = vec![
            tx_put(op, &self.tables.keys, item, None)?,
            tx_put(op, &self.tables.data, entry, None)?,
        ];
        contended(op, || {
            let items = items.clone();
            async move {
                match self.transact(op, items).await? {
                    Committed::Yes => Ok(Attempt::Done(())),
                    outcome => outcome.retry(op),
                }
            }
        })
        .await
    }

    async fn url_grant(&self, secret_hash: &str, now: u64) -> Result<Option<UrlGrant>, StoreError> {
        let op = "url_grant";
        let Some(item) = self
            .key_item(op, format!("{URL_PREFIX}{secret_hash}"))
            .await?
        else {
            return Ok(None);
        };
        let grant = url_grant_from_item(op, &item)?;
        // TTL deletion lags: an expired item may still be there.
        Ok((grant.expires_at > now).then_some(grant))
    }

    async fn claim_personal_url(
        &self,
        user_id: &str,
        candidate: &PersonalUrl,
        now: u64,
    ) -> Result<PersonalUrl, StoreError> {
        let op = "claim_personal_url";
        let grant = UrlGrant {
            user_id: user_id.to_string(),
            session_id: None,
            agent_name: None,
            delegation: None,
            expires_at: candidate.expires_at,
            epoch: candidate.epoch,
        };
        let claim_key = format!("{USER_URL_PREFIX}{user_id}");
        self.claim_url(op, claim_key, grant, None, candidate, now)
            .await?
            .ok_or_else(|| {
                StoreError::Corrupt(format!("{op}: a claim without a check answered no URL"))
            })
    }

    async fn revoke_personal_url(&self, user_id: &str) -> Result<bool, StoreError> {
        self.revoke_url_claim("revoke_personal_url", format!("{USER_URL_PREFIX}{user_id}"))
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
        let grant = UrlGrant {
            user_id: owner.to_string(),
            session_id: None,
            agent_name: None,
            delegation: Some(Delegation {
                grantee: grantee.to_string(),
                permission: permission.to_string(),
            }),
            expires_at: candidate.expires_at,
            epoch: candidate.epoch,
        };
        // Only while the share holds the permission.
        let share_holds = tx_check(
            op,
            &self.tables.data,
            HashMap::from([
                (PK.to_string(), s(owner)),
                (SK.to_string(), s(format!("{SHARE_PREFIX}{grantee}"))),
            ]),
            condition(
                "contains(#perms, :perm)",
                &[("#perms", "permissions")],
                vec![(":perm", s(permission))],
            ),
        )?;
        let claim_key = share_url_key(owner, grantee);
        self.claim_url(op, claim_key, grant, Some(share_holds), candidate, now)
            .await
    }

    async fn revoke_share_url(&self, owner: &str, grantee: &str) -> Result<bool, StoreError> {
        self.revoke_url_claim("revoke_share_url", share_url_key(owner, grantee))
            .await
    }

    async fn share_url(
        &self,
        owner: &str,
        grantee: &str,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError> {
        let op = "share_url";
        let current = self
            .key_item(op, share_url_key(owner, grantee))
            .await?
            .map(|item| personal_url_from_item(op, &item))
            .transpose()?;
        Ok(current.filter(|url| url.expires_at > now))
    }

    async fn shares_granted(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        self.shares_under("shares_granted", user_id, SHARE_PREFIX)
            .await
    }

    async fn shares_received(
        &self,
        user_id: &str,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        self.shares_under("shares_received", user_id, SHARED_BY_PREFIX)
            .await
    }

    async fn temporary_urls(
        &self,
        user_id: &str,
        now: u64,
    ) -> Result<Vec<(String, UrlGrant)>, StoreError> {
        let op = "temporary_urls";
        let mut live = Vec::new();
        for item in self.user_items(op, user_id, TEMP_URL_PREFIX).await? {
            let sk = get_s(op, &item, SK)?;
            let hash = sk
                .strip_prefix(TEMP_URL_PREFIX)
                .ok_or_else(|| corrupt(op))?;
            let expires_at = get_u64(op, &item, EXPIRES_AT)?;
            if expires_at.saturating_add(PRUNE_AFTER_SECS) <= now {
                // The data table has no TTL: an entry long expired leaves as it is seen.
                self.client
                    .delete_item()
                    .table_name(&self.tables.data)
                    .set_key(Some(data_key(user_id, sk.clone())))
                    .send()
                    .await
                    .map_err(|e| sdk_error(op, e))?;
                continue;
            }
            if expires_at <= now {
                continue;
            }
            live.push((
                hash.to_string(),
                UrlGrant {
                    user_id: user_id.to_string(),
                    session_id: get_opt_s(op, &item, "session_id")?,
                    agent_name: get_opt_s(op, &item, "agent_name")?,
                    delegation: None,
                    expires_at,
                    epoch: get_opt_u64(op, &item, "epoch")?.unwrap_or(0),
                },
            ));
        }
        live.sort_by(|a, b| (a.1.expires_at, &a.0).cmp(&(b.1.expires_at, &b.0)));
        Ok(live)
    }

    async fn revoke_temporary_url(
        &self,
        user_id: &str,
        secret_hash: &str,
    ) -> Result<bool, StoreError> {
        let op = "revoke_temporary_url";
        let entry = data_key(user_id, format!("{TEMP_URL_PREFIX}{secret_hash}"));
        if self
            .data_item(op, user_id, format!("{TEMP_URL_PREFIX}{secret_hash}"))
            .await?
            .is_none()
        {
            return Ok(false);
        }
        // The grant only while it is this user's temporary URL; then the entry.
        let deleted = conditional(
            op,
            self.client
                .delete_item()
                .table_name(&self.tables.keys)
                .key(KEY, s(format!("{URL_PREFIX}{secret_hash}")))
                .condition_expression(
                    "#u = :u AND attribute_exists(#s) AND attribute_not_exists(#g)",
                )
                .expression_attribute_names("#u", "user_id")
                .expression_attribute_names("#s", "session_id")
                .expression_attribute_names("#g", "grantee")
                .expression_attribute_values(":u", s(user_id))
                .return_values(ReturnValue::AllOld)
                .send()
                .await,
        )?
        .and_then(|out| out.attributes)
        .is_some();
        self.client
            .delete_item()
            .table_name(&self.tables.data)
            .set_key(Some(entry))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(deleted)
    }

    async fn personal_url(
        &self,
        user_id: &str,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError> {
        let op = "personal_url";
        let current = self
            .key_item(op, format!("{USER_URL_PREFIX}{user_id}"))
            .await?
            .map(|item| personal_url_from_item(op, &item))
            .transpose()?;
        Ok(current.filter(|url| url.expires_at > now))
    }

    async fn put_invitation(&self, invitation: &Invitation) -> Result<(), StoreError> {
        let op = "put_invitation";
        let (mine, theirs) = invitation_items(invitation);
        let items = vec![
            tx_put(op, &self.tables.data, mine, None)?,
            tx_put(op, &self.tables.data, theirs, None)?,
        ];
        contended(op, || {
            let items = items.clone();
            async move {
                match self.transact(op, items).await? {
                    Committed::Yes => Ok(Attempt::Done(())),
                    outcome => outcome.retry(op),
                }
            }
        })
        .await
    }

    async fn delete_invitation(&self, owner: &str, email: &str) -> Result<bool, StoreError> {
        let op = "delete_invitation";
        let mine = data_key(owner, format!("{INVITE_PREFIX}{email}"));
        if self
            .data_item(op, owner, format!("{INVITE_PREFIX}{email}"))
            .await?
            .is_none()
        {
            return Ok(false);
        }
        let theirs = data_key(
            &format!("{INVITEE_PREFIX}{email}"),
            format!("{INVITE_PREFIX}{owner}"),
        );
        let items = vec![
            tx_delete(op, &self.tables.data, mine, None)?,
            tx_delete(op, &self.tables.data, theirs, None)?,
        ];
        contended(op, || {
            let items = items.clone();
            async move {
                match self.transact(op, items).await? {
                    Committed::Yes => Ok(Attempt::Done(true)),
                    outcome => outcome.retry(op),
                }
            }
        })
        .await
    }

    async fn invitations_sent(&self, owner: &str) -> Result<Vec<Invitation>, StoreError> {
        let op = "invitations_sent";
        self.user_items(op, owner, INVITE_PREFIX)
            .await?
            .iter()
            .map(|item| invitation_from_item(op, item))
            .collect()
    }

    async fn invitations_for(&self, email: &str) -> Result<Vec<Invitation>, StoreError> {
        let op = "invitations_for";
        self.user_items(op, &format!("{INVITEE_PREFIX}{email}"), INVITE_PREFIX)
            .await?
            .iter()
            .map(|item| invitation_from_item(op, item))
            .collect()
    }

    async fn accept_invitation(
        &self,
        email: &str,
        id: &str,
        grantee: &str,
    ) -> Result<Option<Invitation>, StoreError> {
        let op = "accept_invitation";
        let Some(invitation) = self
            .invitations_for(email)
            .await?
            .into_iter()
            .find(|invitation| invitation.id == id)
        else {
            return Ok(None);
        };
        if invitation.owner == grantee {
            return Ok(None);
        }
        let owner = invitation.owner.as_str();
        let same_id = || {
            condition(
                "#id = :id",
                &[("#id", "id")],
                vec![(":id", s(invitation.id.as_str()))],
            )
        };
        let share = |pk: &str, sk: String| {
            HashMap::from([
                (PK.to_string(), s(pk)),
                (SK.to_string(), s(sk)),
                (
                    "permissions".to_string(),
                    string_list(&invitation.permissions),
                ),
            ])
        };
        // Both views of the invitation go, on the condition that they are still this
        // one (a withdrawal or a new invitation in between fails it), and the share's
        // two items are written: in one transaction.
        let items = vec![
            tx_delete(
                op,
                &self.tables.data,
                data_key(owner, format!("{INVITE_PREFIX}{email}")),
                same_id(),
            )?,
            tx_delete(
                op,
                &self.tables.data,
                data_key(
                    &format!("{INVITEE_PREFIX}{email}"),
                    format!("{INVITE_PREFIX}{owner}"),
                ),
                same_id(),
            )?,
            tx_put(
                op,
                &self.tables.data,
                share(owner, format!("{SHARE_PREFIX}{grantee}")),
                None,
            )?,
            tx_put(
                op,
                &self.tables.data,
                share(grantee, format!("{SHARED_BY_PREFIX}{owner}")),
                None,
            )?,
        ];
        let accepted = contended(op, || {
            let items = items.clone();
            async move {
                let outcome = self.transact(op, items).await?;
                if matches!(outcome, Committed::Yes) {
                    return Ok(Attempt::Done(true));
                }
                if outcome.condition_failed(0) || outcome.condition_failed(1) {
                    return Ok(Attempt::Done(false));
                }
                outcome.retry(op)
            }
        })
        .await?;
        Ok(accepted.then_some(invitation))
    }
}

#[async_trait]
impl LoginStore for DynamoStore {
    async fn put_login_state(&self, state: &str, record: &LoginState) -> Result<(), StoreError> {
        let mut item = HashMap::from([
            (KEY.to_string(), s(format!("{STATE_PREFIX}{state}"))),
            (EXPIRES_AT.to_string(), n(record.expires_at)),
            ("created_at".to_string(), n(record.created_at)),
            (
                "poll_secret_hash".to_string(),
                s(record.poll_secret_hash.as_str()),
            ),
            (
                "user_code_hash".to_string(),
                s(record.user_code_hash.as_str()),
            ),
        ]);
        if let Some(name) = &record.client_name {
            item.insert("client_name".to_string(), s(name.as_str()));
        }
        match &record.status {
            LoginStatus::Pending => {
                item.insert("status".to_string(), s(PENDING));
            }
            LoginStatus::Completed { sealed_token } => {
                item.insert("status".to_string(), s(COMPLETED));
                item.insert("sealed_token".to_string(), s(sealed_token.as_str()));
            }
            LoginStatus::Collected => {
                item.insert("status".to_string(), s(COLLECTED));
            }
        }
        self.put_key_item("put_login_state", item).await
    }

    async fn login_state(&self, state: &str) -> Result<Option<LoginState>, StoreError> {
        let op = "login_state";
        self.key_item(op, format!("{STATE_PREFIX}{state}"))
            .await?
            .map(|item| login_state_from_item(op, &item))
            .transpose()
    }

    async fn complete_login_state(
        &self,
        state: &str,
        sealed_token: &str,
        now: u64,
    ) -> Result<bool, StoreError> {
        let op = "complete_login_state";
        // The condition also fails on an absent item, so this never creates one.
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(format!("{STATE_PREFIX}{state}")))
            .update_expression("SET #status = :completed, #token = :token")
            .condition_expression("#status = :pending AND #exp > :now")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#token", "sealed_token")
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_values(":completed", s(COMPLETED))
            .expression_attribute_values(":pending", s(PENDING))
            .expression_attribute_values(":token", s(sealed_token))
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        Ok(conditional(op, result)?.is_some())
    }

    async fn take_login_token(&self, state: &str, now: u64) -> Result<Option<String>, StoreError> {
        let op = "take_login_token";
        // Conditional, so of two racing takes exactly one passes and gets the old
        // item (with the sealed token) back; the token is removed in the same write.
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(format!("{STATE_PREFIX}{state}")))
            .update_expression("SET #status = :collected REMOVE #token")
            .condition_expression("#status = :completed AND #exp > :now")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#token", "sealed_token")
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_values(":collected", s(COLLECTED))
            .expression_attribute_values(":completed", s(COMPLETED))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        let Some(out) = conditional(op, result)? else {
            return Ok(None);
        };
        let item = out.attributes.ok_or_else(|| corrupt(op))?;
        Ok(Some(get_s(op, &item, "sealed_token")?))
    }

    async fn put_mail_token(&self, secret_hash: &str, token: &MailToken) -> Result<(), StoreError> {
        let op = "put_mail_token";
        self.client
            .put_item()
            .table_name(&self.tables.keys)
            .item(KEY, s(format!("{MAIL_PREFIX}{secret_hash}")))
            .item("purpose", s(purpose_name(token.purpose)))
            .item("user_id", s(token.user_id.as_str()))
            .item("email", s(token.email.as_str()))
            .item(EXPIRES_AT, n(token.expires_at))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(())
    }

    async fn take_mail_token(
        &self,
        secret_hash: &str,
        purpose: MailPurpose,
        now: u64,
    ) -> Result<Option<MailToken>, StoreError> {
        let op = "take_mail_token";
        // Conditional, so of two racing takes exactly one deletes it and gets the
        // old item back. An expired link is deleted too, and answers nothing.
        let result = self
            .client
            .delete_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(format!("{MAIL_PREFIX}{secret_hash}")))
            .condition_expression("#p = :p")
            .expression_attribute_names("#p", "purpose")
            .expression_attribute_values(":p", s(purpose_name(purpose)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        let Some(out) = conditional(op, result)? else {
            return Ok(None);
        };
        let item = out.attributes.ok_or_else(|| corrupt(op))?;
        let expires_at = get_u64(op, &item, EXPIRES_AT)?;
        if expires_at <= now {
            return Ok(None);
        }
        Ok(Some(MailToken {
            purpose,
            user_id: get_s(op, &item, "user_id")?,
            email: get_s(op, &item, "email")?,
            expires_at,
        }))
    }
}

impl DynamoStore {
    /// Claims a URL (`user-url#<user>` or `share-url#<owner>#<grantee>`): the live one if
    /// there is one (unchanged); else `candidate` and its `url#` grant, with `check` (the
    /// share that must still hold) if any, in one transaction conditional on no live
    /// claim having been put since the read; the replaced URL's grant is deleted in the
    /// same transaction (it has expired, but TTL deletion lags, and the secret should
    /// resolve to nothing). `None` when `check` failed (nothing written); a racing
    /// claim that won is read again and returned.
    async fn claim_url(
        &self,
        op: &'static str,
        claim_key: String,
        grant: UrlGrant,
        check: Option<TransactWriteItem>,
        candidate: &PersonalUrl,
        now: u64,
    ) -> Result<Option<PersonalUrl>, StoreError> {
        let (claim_key, grant, check) = (&claim_key, &grant, &check);
        contended(op, || async move {
            let current = self
                .key_item(op, claim_key.clone())
                .await?
                .map(|item| personal_url_from_item(op, &item))
                .transpose()?;
            if let Some(current) = &current
                && current.live(candidate, now)
            {
                return Ok(Attempt::Done(Some(current.clone())));
            }
            let mut items = vec![tx_put(
                op,
                &self.tables.keys,
                personal_url_item(claim_key.clone(), candidate),
                replaceable_claim(candidate, now),
            )?];
            items.extend(check.clone());
            items.push(tx_put(
                op,
                &self.tables.keys,
                url_grant_item(&candidate.secret_hash, grant),
                None,
            )?);
            if let Some(old) = current.filter(|old| old.secret_hash != candidate.secret_hash) {
                items.push(tx_delete(
                    op,
                    &self.tables.keys,
                    keys_key(format!("{URL_PREFIX}{}", old.secret_hash)),
                    None,
                )?);
            }
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(Some(candidate.clone())));
            }
            if check.is_some() && outcome.condition_failed(1) {
                return Ok(Attempt::Done(None));
            }
            outcome.retry(op)
        })
        .await
    }

    /// Deletes a URL claim (`user-url#<user>` or `share-url#<owner>#<grantee>`) and the
    /// `url#` grant of its secret, together: true if there was a claim.
    async fn revoke_url_claim(
        &self,
        op: &'static str,
        claim_key: String,
    ) -> Result<bool, StoreError> {
        let claim_key = &claim_key;
        contended(op, || async move {
            let Some(item) = self.key_item(op, claim_key.clone()).await? else {
                return Ok(Attempt::Done(false));
            };
            let current = personal_url_from_item(op, &item)?;
            // Both go together, and only if the URL is still the one read (a racing
            // claim may have replaced it; then its grant is the one to delete).
            let items = vec![
                tx_delete(
                    op,
                    &self.tables.keys,
                    keys_key(claim_key.clone()),
                    condition(
                        "#hash = :hash",
                        &[("#hash", "secret_hash")],
                        vec![(":hash", s(current.secret_hash.as_str()))],
                    ),
                )?,
                tx_delete(
                    op,
                    &self.tables.keys,
                    keys_key(format!("{URL_PREFIX}{}", current.secret_hash)),
                    None,
                )?,
            ];
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(true));
            }
            outcome.retry(op)
        })
        .await
    }

    /// Every item of `user`'s partition whose sort key starts with `prefix`.
    async fn user_items(
        &self,
        op: &'static str,
        user: &str,
        prefix: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(prefix));
        query_all(op, q, self.page_limit).await
    }

    /// The shares under `prefix` of `user`'s partition: (the other user, permissions),
    /// in sort key order (the other user's id).
    async fn shares_under(
        &self,
        op: &'static str,
        user: &str,
        prefix: &str,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        let mut shares = Vec::new();
        for item in self.user_items(op, user, prefix).await? {
            let sk = get_s(op, &item, SK)?;
            let other = sk.strip_prefix(prefix).ok_or_else(|| corrupt(op))?;
            shares.push((other.to_string(), permissions_from_item(op, &item)?));
        }
        Ok(shares)
    }
}

fn delete_request(
    op: &'static str,
    key: Item,
) -> Result<aws_sdk_dynamodb::types::WriteRequest, StoreError> {
    let delete = aws_sdk_dynamodb::types::DeleteRequest::builder()
        .set_key(Some(key))
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(aws_sdk_dynamodb::types::WriteRequest::builder()
        .delete_request(delete)
        .build())
}

const COUNT: &str = "count";

impl DynamoStore {
    /// Every item of the user's partition (with `prefix`: those whose sort key starts
    /// with it); without a prefix only the keys are read (day items are large).
    async fn partition_items(
        &self,
        op: &'static str,
        user: &str,
        prefix: Option<&str>,
    ) -> Result<Vec<Item>, StoreError> {
        let query = match prefix {
            Some(prefix) => self
                .user_query(user)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(prefix)),
            None => self
                .user_query(user)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#sk", SK)
                .projection_expression("#pk, #sk"),
        };
        super::batch::query_all(op, query, self.page_limit).await
    }
}

impl DynamoStore {
    /// Reads the user's token state and builds the conditional Put of its next state
    /// (on the serial read, so a racing change makes it fail and the caller read again).
    async fn next_token_state(
        &self,
        op: &'static str,
        user_id: &str,
        change: &TokenChange,
        now: u64,
    ) -> Result<(TokenState, TransactWriteItem), StoreError> {
        let item = self
            .key_item(op, format!("{TOKENS_PREFIX}{user_id}"))
            .await?;
        let (mut state, serial) = token_state_from_item(op, item.as_ref())?;
        apply_token_change(&mut state, change, now);
        let json = serde_json::to_string(&state).map_err(|_| corrupt(op))?;
        let next = HashMap::from([
            (KEY.to_string(), s(format!("{TOKENS_PREFIX}{user_id}"))),
            ("state".to_string(), s(json)),
            (TOKENS_SERIAL.to_string(), n(serial + 1)),
        ]);
        let guard = match item {
            None => condition("attribute_not_exists(#k)", &[("#k", KEY)], vec![]),
            Some(_) => condition("#v = :v", &[("#v", TOKENS_SERIAL)], vec![(":v", n(serial))]),
        };
        Ok((state, tx_put(op, &self.tables.keys, next, guard)?))
    }
}

fn count_of(op: &'static str, item: &Item) -> Result<u32, StoreError> {
    u32::try_from(get_u64(op, item, COUNT)?).map_err(|_| corrupt(op))
}
