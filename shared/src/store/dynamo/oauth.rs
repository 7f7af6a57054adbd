//! [`OAuthStore`] on DynamoDB: clients (`client#`), single-use codes (`code#`),
//! refresh tokens (`refresh#`) and revoked families (`family#`).
//!
//! Single use and rotation are conditional writes, so two racing uses cannot both win.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::codec::{
    Item, get_bool, get_opt_s, get_opt_u64, get_s, get_strings, get_u64, insert_optional, n, s,
    string_list,
};
use super::schema::{
    CLIENT_PREFIX, CODE_PREFIX, EXPIRES_AT, FAMILY_PREFIX, KEY, REFRESH_PREFIX, USED,
};
use super::transact::conditional;
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};
use crate::store::{OAuthStore, StoreError};

fn client_item(client: &OAuthClient) -> Item {
    let mut item = HashMap::from([
        (
            KEY.to_string(),
            s(format!("{CLIENT_PREFIX}{}", client.client_id)),
        ),
        ("client_id".to_string(), s(client.client_id.as_str())),
        (
            "redirect_uris".to_string(),
            string_list(&client.redirect_uris),
        ),
        ("grant_types".to_string(), string_list(&client.grant_types)),
        (
            "token_endpoint_auth_method".to_string(),
            s(client.token_endpoint_auth_method.as_str()),
        ),
        ("created_at".to_string(), n(client.created_at)),
    ]);
    if let Some(expires_at) = client.expires_at {
        item.insert(EXPIRES_AT.to_string(), n(expires_at));
    }
    insert_optional(
        &mut item,
        &[
            ("secret_hash", &client.secret_hash),
            ("client_name", &client.client_name),
        ],
    );
    item
}

fn client_from_item(op: &'static str, item: &Item) -> Result<OAuthClient, StoreError> {
    Ok(OAuthClient {
        client_id: get_s(op, item, "client_id")?,
        secret_hash: get_opt_s(op, item, "secret_hash")?,
        redirect_uris: get_strings(op, item, "redirect_uris")?,
        grant_types: get_strings(op, item, "grant_types")?,
        token_endpoint_auth_method: get_s(op, item, "token_endpoint_auth_method")?,
        client_name: get_opt_s(op, item, "client_name")?,
        created_at: get_u64(op, item, "created_at")?,
        expires_at: item
            .contains_key(EXPIRES_AT)
            .then(|| get_u64(op, item, EXPIRES_AT))
            .transpose()?,
    })
}

fn code_item(code_hash: &str, code: &AuthCode) -> Item {
    let mut item = HashMap::from([
        (KEY.to_string(), s(format!("{CODE_PREFIX}{code_hash}"))),
        ("client_id".to_string(), s(code.client_id.as_str())),
        ("user_id".to_string(), s(code.user_id.as_str())),
        ("scope".to_string(), s(code.scope.as_str())),
        ("redirect_uri".to_string(), s(code.redirect_uri.as_str())),
        (
            "code_challenge".to_string(),
            s(code.code_challenge.as_str()),
        ),
        (EXPIRES_AT.to_string(), n(code.expires_at)),
        ("epoch".to_string(), n(code.epoch)),
        ("issued_at".to_string(), n(code.issued_at)),
    ]);
    insert_optional(&mut item, &[("resource", &code.resource)]);
    item
}

fn code_from_item(op: &'static str, item: &Item) -> Result<AuthCode, StoreError> {
    Ok(AuthCode {
        client_id: get_s(op, item, "client_id")?,
        user_id: get_s(op, item, "user_id")?,
        scope: get_s(op, item, "scope")?,
        redirect_uri: get_s(op, item, "redirect_uri")?,
        code_challenge: get_s(op, item, "code_challenge")?,
        resource: get_opt_s(op, item, "resource")?,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
        // Absent on codes stored before they carried an epoch.
        epoch: get_opt_u64(op, item, "epoch")?.unwrap_or(0),
        issued_at: get_opt_u64(op, item, "issued_at")?.unwrap_or(0),
    })
}

fn refresh_item(token_hash: &str, record: &RefreshRecord) -> Item {
    let mut item = HashMap::from([
        (KEY.to_string(), s(format!("{REFRESH_PREFIX}{token_hash}"))),
        ("user_id".to_string(), s(record.user_id.as_str())),
        ("client_id".to_string(), s(record.client_id.as_str())),
        ("scope".to_string(), s(record.scope.as_str())),
        ("family_id".to_string(), s(record.family_id.as_str())),
        (USED.to_string(), AttributeValue::Bool(false)),
        (EXPIRES_AT.to_string(), n(record.expires_at)),
        ("epoch".to_string(), n(record.epoch)),
        ("issued_at".to_string(), n(record.issued_at)),
    ]);
    insert_optional(&mut item, &[("resource", &record.resource)]);
    item
}

/// A `refresh#` item: the record and its `used` flag.
fn refresh_from_item(op: &'static str, item: &Item) -> Result<(RefreshRecord, bool), StoreError> {
    let record = RefreshRecord {
        user_id: get_s(op, item, "user_id")?,
        client_id: get_s(op, item, "client_id")?,
        scope: get_s(op, item, "scope")?,
        resource: get_opt_s(op, item, "resource")?,
        family_id: get_s(op, item, "family_id")?,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
        // Absent on tokens stored before epochs existed.
        epoch: get_opt_u64(op, item, "epoch")?.unwrap_or(0),
        issued_at: get_opt_u64(op, item, "issued_at")?.unwrap_or(0),
    };
    Ok((record, get_bool(op, item, USED)?))
}

#[async_trait]
impl OAuthStore for DynamoStore {
    async fn put_client(&self, client: &OAuthClient) -> Result<bool, StoreError> {
        let op = "put_client";
        let result = self
            .client
            .put_item()
            .table_name(&self.tables.keys)
            .set_item(Some(client_item(client)))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", KEY)
            .send()
            .await;
        Ok(conditional(op, result)?.is_some())
    }

    async fn client(&self, client_id: &str, now: u64) -> Result<Option<OAuthClient>, StoreError> {
        let op = "client";
        let client = self
            .key_item(op, format!("{CLIENT_PREFIX}{client_id}"))
            .await?
            .map(|item| client_from_item(op, &item))
            .transpose()?;
        // TTL deletion lags, so a lapsed client is refused here.
        Ok(client.filter(|c| c.expires_at.is_none_or(|at| at > now)))
    }

    async fn extend_client(&self, client_id: &str, expires_at: u64) -> Result<bool, StoreError> {
        let op = "extend_client";
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(format!("{CLIENT_PREFIX}{client_id}")))
            .update_expression("SET #exp = :exp")
            .condition_expression("attribute_exists(#k)")
            .expression_attribute_names("#k", KEY)
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_values(":exp", n(expires_at))
            .send()
            .await;
        Ok(conditional(op, result)?.is_some())
    }

    async fn put_code(&self, code_hash: &str, code: &AuthCode) -> Result<(), StoreError> {
        self.put_key_item("put_code", code_item(code_hash, code))
            .await
    }

    async fn take_code(&self, code_hash: &str, now: u64) -> Result<Option<AuthCode>, StoreError> {
        let op = "take_code";
        // Conditional, so of two racing takes exactly one gets the item back. An
        // expired code (TTL deletion lags) is deleted too, and refused below.
        let result = self
            .client
            .delete_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(format!("{CODE_PREFIX}{code_hash}")))
            .condition_expression("attribute_exists(#k)")
            .expression_attribute_names("#k", KEY)
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        let Some(out) = conditional(op, result)? else {
            return Ok(None);
        };
        let item = out.attributes.ok_or_else(|| corrupt(op))?;
        let code = code_from_item(op, &item)?;
        Ok((code.expires_at > now).then_some(code))
    }

    async fn put_refresh(
        &self,
        token_hash: &str,
        record: &RefreshRecord,
    ) -> Result<(), StoreError> {
        self.put_key_item("put_refresh", refresh_item(token_hash, record))
            .await
    }

    async fn use_refresh(&self, token_hash: &str, now: u64) -> Result<RefreshUse, StoreError> {
        let op = "use_refresh";
        // Mark it used first: the record (and so its family id) comes back with it,
        // and of two racing uses only one passes the condition. The condition also
        // fails on an absent item, so this never creates one; when it fails, the
        // item it was checked against comes back, so one request says which case.
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(format!("{REFRESH_PREFIX}{token_hash}")))
            .update_expression("SET #used = :true")
            .condition_expression("#used = :false AND #exp > :now")
            .expression_attribute_names("#used", USED)
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_values(":true", AttributeValue::Bool(true))
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let item = match result {
            Ok(out) => out.attributes.ok_or_else(|| corrupt(op))?,
            Err(e) => {
                let Some(UpdateItemError::ConditionalCheckFailedException(failed)) =
                    e.as_service_error()
                else {
                    return Err(sdk_error(op, e));
                };
                // Absent, expired or used.
                let Some(item) = failed.item().filter(|item| !item.is_empty()) else {
                    return Ok(RefreshUse::Unknown);
                };
                let (record, used) = refresh_from_item(op, item)?;
                return if record.expires_at <= now {
                    Ok(RefreshUse::Unknown)
                } else if used {
                    Ok(RefreshUse::Reused(record))
                } else {
                    // A live, unused token passes the condition: it cannot come back.
                    Err(corrupt(op))
                };
            }
        };
        let (record, _) = refresh_from_item(op, &item)?;
        // A token of a revoked family is a replay even on its first use (and it
        // stays used, so it is dead after the marker expires too).
        let revoked = match self
            .key_item(op, format!("{FAMILY_PREFIX}{}", record.family_id))
            .await?
        {
            Some(family) => {
                get_bool(op, &family, "revoked")? && get_u64(op, &family, EXPIRES_AT)? > now
            }
            None => false,
        };
        Ok(if revoked {
            RefreshUse::Reused(record)
        } else {
            RefreshUse::Fresh(record)
        })
    }

    async fn revoke_refresh_family(
        &self,
        family_id: &str,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        let op = "revoke_refresh_family";
        // A family already revoked until later stays revoked until then (the
        // condition fails, and that is success).
        let result = self
            .client
            .put_item()
            .table_name(&self.tables.keys)
            .item(KEY, s(format!("{FAMILY_PREFIX}{family_id}")))
            .item("revoked", AttributeValue::Bool(true))
            .item(EXPIRES_AT, n(expires_at))
            .condition_expression("attribute_not_exists(#k) OR #exp < :exp")
            .expression_attribute_names("#k", KEY)
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_values(":exp", n(expires_at))
            .send()
            .await;
        conditional(op, result).map(drop)
    }
}
