//! [`McpServerStore`] on DynamoDB: server records (`mcp#<name>`) and their url claims
//! (`mcpurl#<hash>`), written and deleted together in one transaction. A create also
//! bumps the user's creation serial (`serial#mcp`) on the condition that it is
//! unchanged since the server count was read, which makes the count limit atomic.
//!
//! A rename moves the record and its url claim in one transaction too, and so does
//! giving a server saved without a url its url.
//!
//! Also the combined read of presence and servers: one Query over one key range.
//! Keeps the credential only sealed, as given; never logs a record.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use super::batch::query_all;
use super::codec::{Item, get_opt_s, get_s, get_u64, insert_optional, n, s};
use super::health::presence_of;
use super::schema::{
    LAST_CONNECT_ERROR, LAST_CONNECTED_AT, MCP_PREFIX, MCP_RECORD, MCP_SERIAL, MCP_SERIAL_SK,
    MCP_URL, PK, PRESENCE_SK, REFRESH_CLAIMED_UNTIL, SK, data_key, mcp_sk, mcp_url_sk,
};
use super::transact::{Attempt, Committed, condition, conditional, contended, tx_delete, tx_put};
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{DataPresence, MAX_MCP_SERVERS, McpServerRecord, McpServerWrite};
use crate::store::{McpServerBody, McpServerParts, McpServerStore, StoreError};

fn mcp_item(op: &'static str, user: &str, record: &McpServerRecord) -> Result<Item, StoreError> {
    let McpServerParts {
        name,
        url,
        body,
        last_connected_at,
        last_connect_error,
    } = McpServerParts::from(record.clone());
    let body = serde_json::to_string(&body)
        .map_err(|_| StoreError::Unavailable(format!("{op}: cannot encode the record")))?;
    let mut item = HashMap::from([
        (PK.to_string(), s(user)),
        (SK.to_string(), s(mcp_sk(&name))),
        (MCP_URL.to_string(), s(url)),
        (MCP_RECORD.to_string(), s(body)),
    ]);
    if let Some(at) = last_connected_at {
        item.insert(LAST_CONNECTED_AT.to_string(), n(at));
    }
    insert_optional(&mut item, &[(LAST_CONNECT_ERROR, &last_connect_error)]);
    Ok(item)
}

fn mcp_from_item(op: &'static str, item: &Item) -> Result<McpServerRecord, StoreError> {
    let sk = get_s(op, item, SK)?;
    let name = sk.strip_prefix(MCP_PREFIX).ok_or_else(|| corrupt(op))?;
    let body: McpServerBody =
        serde_json::from_str(&get_s(op, item, MCP_RECORD)?).map_err(|_| corrupt(op))?;
    let last_connected_at = match item.get(LAST_CONNECTED_AT) {
        None | Some(AttributeValue::Null(_)) => None,
        Some(_) => Some(get_u64(op, item, LAST_CONNECTED_AT)?),
    };
    Ok(McpServerRecord::from(McpServerParts {
        name: name.to_string(),
        url: get_s(op, item, MCP_URL)?,
        body,
        last_connected_at,
        last_connect_error: get_opt_s(op, item, LAST_CONNECT_ERROR)?,
    }))
}

impl DynamoStore {
    /// An UpdateItem of server `name`'s record on the condition that it exists (and
    /// `and`, when given): it never creates one.
    fn update_existing_mcp(
        &self,
        user: &str,
        name: &str,
        and: Option<&str>,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        let condition = match and {
            None => "attribute_exists(#pk)".to_string(),
            Some(and) => format!("attribute_exists(#pk) AND {and}"),
        };
        self.client
            .update_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(mcp_sk(name)))
            .condition_expression(condition)
            .expression_attribute_names("#pk", PK)
    }
}

#[async_trait]
impl McpServerStore for DynamoStore {
    async fn mcp_servers(&self, user: &str) -> Result<Vec<McpServerRecord>, StoreError> {
        let op = "mcp_servers";
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(MCP_PREFIX));
        // Sort key order (UTF-8 bytes) is name order.
        query_all(op, q, self.page_limit)
            .await?
            .iter()
            .map(|item| mcp_from_item(op, item))
            .collect()
    }

    async fn presence_and_mcp_servers(
        &self,
        user: &str,
    ) -> Result<(DataPresence, Vec<McpServerRecord>), StoreError> {
        let op = "presence_and_mcp_servers";
        // One key range holds both: `mcp#…` < `mcpurl#…` < `presence`, and no other
        // kind sorts between them (`account`, `g#`, `h#` before; `share#` after).
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :first AND :last")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":first", s(MCP_PREFIX))
            .expression_attribute_values(":last", s(PRESENCE_SK));
        let items = query_all(op, q, self.page_limit).await?;
        let mut presence = None;
        let mut servers = Vec::new();
        for item in &items {
            let sk = get_s(op, item, SK)?;
            if sk == PRESENCE_SK {
                presence = Some(item);
            } else if sk.starts_with(MCP_PREFIX) {
                servers.push(mcp_from_item(op, item)?);
            }
        }
        Ok((presence_of(presence), servers))
    }

    async fn mcp_server(
        &self,
        user: &str,
        name: &str,
    ) -> Result<Option<McpServerRecord>, StoreError> {
        let op = "mcp_server";
        self.data_item(op, user, mcp_sk(name))
            .await?
            .map(|item| mcp_from_item(op, &item))
            .transpose()
    }

    async fn create_mcp_server(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "create_mcp_server";
        let record_item = mcp_item(op, user, record)?;
        let mut url_item = data_key(user, mcp_url_sk(&record.url));
        url_item.insert("name".to_string(), s(record.name.as_str()));
        let (record_item, url_item) = (&record_item, &url_item);
        contended(op, || async move {
            // The serial first, then the count: a create that commits after the
            // serial was read changes it, and this transaction's condition fails.
            let serial = match self.data_item(op, user, MCP_SERIAL_SK.to_string()).await? {
                Some(item) => Some(get_u64(op, &item, MCP_SERIAL)?),
                None => None,
            };
            let count_query = self
                .user_query(user)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(MCP_PREFIX))
                .projection_expression("#sk");
            if query_all(op, count_query, self.page_limit).await?.len() >= MAX_MCP_SERVERS {
                return Ok(Attempt::Done(McpServerWrite::LimitReached));
            }
            let mut serial_item = data_key(user, MCP_SERIAL_SK.to_string());
            serial_item.insert(MCP_SERIAL.to_string(), n(serial.unwrap_or(0) + 1));
            let unchanged = match serial {
                None => condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]),
                Some(v) => condition("#v = :v", &[("#v", MCP_SERIAL)], vec![(":v", n(v))]),
            };
            let absent = || condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]);
            let items = vec![
                tx_put(op, &self.tables.data, record_item.clone(), absent())?,
                tx_put(op, &self.tables.data, url_item.clone(), absent())?,
                tx_put(op, &self.tables.data, serial_item, unchanged)?,
            ];
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(McpServerWrite::Written));
            }
            // Both taken (the same server again) reads as the name.
            if outcome.condition_failed(0) {
                return Ok(Attempt::Done(McpServerWrite::NameTaken));
            }
            if outcome.condition_failed(1) {
                return Ok(Attempt::Done(McpServerWrite::UrlTaken));
            }
            // Another create since the serial was read: count again.
            if outcome.condition_failed(2) {
                return Ok(Attempt::Again);
            }
            outcome.retry(op)
        })
        .await
    }

    async fn replace_mcp_server(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "replace_mcp_server";
        // A failed condition returns the stored item, if any: absent is `Missing`,
        // present means its url differs. One request, no read-then-write race.
        let result = self
            .client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(mcp_item(op, user, record)?))
            .condition_expression("attribute_exists(#pk) AND #url = :url")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#url", MCP_URL)
            .expression_attribute_values(":url", s(record.url.as_str()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(McpServerWrite::Written),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                    Ok(if failed.item().is_some_and(|item| !item.is_empty()) {
                        McpServerWrite::UrlChanged
                    } else {
                        McpServerWrite::Missing
                    })
                }
                _ => Err(sdk_error(op, e)),
            },
        }
    }

    async fn claim_mcp_refresh(
        &self,
        user: &str,
        name: &str,
        now: u64,
        until: u64,
    ) -> Result<bool, StoreError> {
        let op = "claim_mcp_refresh";
        // One conditional update: of two racing claims, one passes.
        let update = self
            .update_existing_mcp(
                user,
                name,
                Some("(attribute_not_exists(#claim) OR #claim <= :now)"),
            )
            .update_expression("SET #claim = :until")
            .expression_attribute_names("#claim", REFRESH_CLAIMED_UNTIL)
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now));
        conditional(op, update.send().await).map(|done| done.is_some())
    }

    async fn record_mcp_connection(
        &self,
        user: &str,
        name: &str,
        at: u64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let op = "record_mcp_connection";
        let update = self
            .update_existing_mcp(user, name, None)
            .expression_attribute_names("#err", LAST_CONNECT_ERROR);
        let update = match error {
            None => update
                .update_expression("SET #at = :at REMOVE #err")
                .expression_attribute_names("#at", LAST_CONNECTED_AT)
                .expression_attribute_values(":at", n(at)),
            Some(error) => update
                .update_expression("SET #err = :err")
                .expression_attribute_values(":err", s(error)),
        };
        conditional(op, update.send().await).map(drop)
    }

    async fn delete_mcp_server(&self, user: &str, name: &str) -> Result<bool, StoreError> {
        let op = "delete_mcp_server";
        let sk = &mcp_sk(name);
        contended(op, || async move {
            let Some(item) = self.data_item(op, user, sk.clone()).await? else {
                return Ok(Attempt::Done(false));
            };
            let url = get_s(op, &item, MCP_URL)?;
            // Conditional on the record still holding the url read (a racing delete
            // and re-create may have changed it; then its claim is the one to delete).
            let items = vec![
                tx_delete(
                    op,
                    &self.tables.data,
                    data_key(user, sk.clone()),
                    condition(
                        "attribute_exists(#pk) AND #url = :url",
                        &[("#pk", PK), ("#url", MCP_URL)],
                        vec![(":url", s(url.as_str()))],
                    ),
                )?,
                tx_delete(
                    op,
                    &self.tables.data,
                    data_key(user, mcp_url_sk(&url)),
                    None,
                )?,
            ];
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(true));
            }
            // Deleted or replaced since the read: read again.
            outcome.retry(op)
        })
        .await
    }

    async fn rename_mcp_server(
        &self,
        user: &str,
        old: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "rename_mcp_server";
        let record_item = &mcp_item(op, user, record)?;
        let mut claim = data_key(user, mcp_url_sk(&record.url));
        claim.insert("name".to_string(), s(record.name.as_str()));
        let claim = &claim;
        contended(op, || async move {
            let items = vec![
                // The old record, still holding this url.
                tx_delete(
                    op,
                    &self.tables.data,
                    data_key(user, mcp_sk(old)),
                    condition(
                        "attribute_exists(#pk) AND #url = :url",
                        &[("#pk", PK), ("#url", MCP_URL)],
                        vec![(":url", s(record.url.as_str()))],
                    ),
                )?,
                // The new name, free.
                tx_put(
                    op,
                    &self.tables.data,
                    record_item.clone(),
                    condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]),
                )?,
                // The url's claim, moved from the old name to the new one.
                tx_put(
                    op,
                    &self.tables.data,
                    claim.clone(),
                    condition("#n = :old", &[("#n", "name")], vec![(":old", s(old))]),
                )?,
            ];
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(McpServerWrite::Written));
            }
            if outcome.condition_failed(0) {
                // Gone (perhaps renamed by a racing request), or holding another url.
                let stored = self.data_item(op, user, mcp_sk(old)).await?;
                return Ok(Attempt::Done(match stored {
                    None => McpServerWrite::Missing,
                    Some(_) => McpServerWrite::UrlChanged,
                }));
            }
            if outcome.condition_failed(1) {
                return Ok(Attempt::Done(McpServerWrite::NameTaken));
            }
            outcome.retry(op)
        })
        .await
    }

    async fn set_mcp_server_url(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "set_mcp_server_url";
        let record_item = &mcp_item(op, user, record)?;
        let mut claim = data_key(user, mcp_url_sk(&record.url));
        claim.insert("name".to_string(), s(record.name.as_str()));
        let claim = &claim;
        let name = record.name.as_str();
        contended(op, || async move {
            let items = vec![
                // The record, still without a url.
                tx_put(
                    op,
                    &self.tables.data,
                    record_item.clone(),
                    condition(
                        "attribute_exists(#pk) AND #url = :none",
                        &[("#pk", PK), ("#url", MCP_URL)],
                        vec![(":none", s(""))],
                    ),
                )?,
                // Its claim of the empty url, released.
                tx_delete(
                    op,
                    &self.tables.data,
                    data_key(user, mcp_url_sk("")),
                    condition("#n = :name", &[("#n", "name")], vec![(":name", s(name))]),
                )?,
                // The new url, free.
                tx_put(
                    op,
                    &self.tables.data,
                    claim.clone(),
                    condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]),
                )?,
            ];
            let outcome = self.transact(op, items).await?;
            if matches!(outcome, Committed::Yes) {
                return Ok(Attempt::Done(McpServerWrite::Written));
            }
            if outcome.condition_failed(0) {
                let stored = self.data_item(op, user, mcp_sk(name)).await?;
                return Ok(Attempt::Done(match stored {
                    None => McpServerWrite::Missing,
                    Some(_) => McpServerWrite::UrlChanged,
                }));
            }
            if outcome.condition_failed(2) {
                return Ok(Attempt::Done(McpServerWrite::UrlTaken));
            }
            outcome.retry(op)
        })
        .await
    }
}
