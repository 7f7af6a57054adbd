//! The DynamoDB store (the Lambda default).
//!
//! Data table items (partition key `pk` = user id, sort key `sk`):
//! - `h#<indicator key>#<time>#<source>`: one reading (`indicator`, `time`, `source`,
//!   `value` as N or S, optional `unit`, `code_system`, `code`).
//! - `g#<rsid>`: one genotype (`chromosome`, `genotype`, and `gpk` = `<user>#<chromosome>`,
//!   `gpos` = position: the keys of the `by_position` index, which projects `genotype`).
//! - `presence`: booleans `health` / `genotype`, set when data is written and deleted
//!   with it, so availability gating (A5) is one GetItem.
//! - `account`: `email`, `password_hash`, `created_at` (N).
//! - `share#<grantee>`: `permissions`, a list of strings (a string set is read too).
//! - `mcp#<name>`: an external MCP server: `url`, `record` (the other fields as JSON,
//!   credential sealed), and the connection fields as attributes of their own so that
//!   recording a connection is one UpdateItem: optional `last_connected_at` (N) and
//!   `last_connect_error`.
//! - `mcpurl#<hex sha256 of the url>`: `name`, the server holding that url. Written and
//!   deleted with its `mcp#` item in one transaction, so a url is registered once per user.
//!
//! Only `h#`, `g#` and `presence` are user data (`delete_user_data`); every query reads
//! one prefix, so no kind ever shows up in another's results.
//!
//! Keys table items (partition key `key`; `expires_at`, epoch seconds, is the TTL
//! attribute, and every read checks it itself because DynamoDB deletes late):
//! - `email#<e-mail>`: `user_id` (no expiry).
//! - `url#<secret hash>`: `user_id`, optional `session_id` / `agent_name`, `expires_at`.
//! - `user-url#<user>`: `sealed_secret`, `secret_hash`, `expires_at`.
//! - `state#<state>`: `status` (`pending` / `completed`), `sealed_token` once completed,
//!   `expires_at`.
//! - `client#<client id>`: `client_id`, optional `secret_hash` / `client_name`,
//!   `redirect_uris` and `grant_types` (lists of strings), `token_endpoint_auth_method`,
//!   `created_at` (N); no expiry.
//! - `code#<code hash>`: `client_id`, `user_id`, `scope`, `redirect_uri`,
//!   `code_challenge`, optional `resource`, `expires_at`; deleted by its single use.
//! - `refresh#<token hash>`: `user_id`, `client_id`, `scope`, optional `resource`,
//!   `family_id`, `used` (BOOL), `expires_at`.
//! - `family#<family id>`: `revoked` (BOOL), `expires_at`: the family's tokens read as
//!   reused until then.
//!
//! Uniqueness and single use are conditional writes or TransactWriteItems, never
//! read-then-write; a transaction cancelled by a conflicting one is retried with backoff.
//!
//! Batch writes go out 25 items a request (a few requests in flight), unprocessed items
//! are retried with backoff; reads page through Query results and BatchGetItem
//! (100 keys a request). Errors name the operation only; the log line adds the SDK
//! error kind and code, never a key or value.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, Delete, DeleteRequest, GlobalSecondaryIndex,
    IndexStatus, KeySchemaElement, KeyType, KeysAndAttributes, Projection, ProjectionType, Put,
    PutRequest, ReturnValue, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus, TransactWriteItem, WriteRequest,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::task::JoinSet;

use super::{
    AccountStore, Created, HealthStore, McpServerBody, McpServerParts, McpServerStore, OAuthStore,
    ReadingQuery, StoreError, StoreFuture, WriteReport,
};
use crate::domain::{
    Account, AuthCode, DataPresence, Genotype, LoginState, LoginStatus, McpServerRecord,
    McpServerWrite, OAuthClient, PersonalUrl, Reading, ReadingValue, RefreshRecord, RefreshUse,
    UrlGrant,
};

type Item = HashMap<String, AttributeValue>;

const PK: &str = "pk";
const SK: &str = "sk";
const PRESENCE_SK: &str = "presence";
const READING_PREFIX: &str = "h#";
const GENOTYPE_PREFIX: &str = "g#";
const POSITION_INDEX: &str = "by_position";
const GPK: &str = "gpk";
const GPOS: &str = "gpos";
const ACCOUNT_SK: &str = "account";
const SHARE_PREFIX: &str = "share#";
const MCP_PREFIX: &str = "mcp#";
const MCP_URL_PREFIX: &str = "mcpurl#";
const MCP_URL: &str = "url";
const MCP_RECORD: &str = "record";
const LAST_CONNECTED_AT: &str = "last_connected_at";
const LAST_CONNECT_ERROR: &str = "last_connect_error";

/// The keys table's partition key and TTL attribute.
const KEY: &str = "key";
const EXPIRES_AT: &str = "expires_at";
const EMAIL_PREFIX: &str = "email#";
const URL_PREFIX: &str = "url#";
const USER_URL_PREFIX: &str = "user-url#";
const STATE_PREFIX: &str = "state#";
const CLIENT_PREFIX: &str = "client#";
const CODE_PREFIX: &str = "code#";
const REFRESH_PREFIX: &str = "refresh#";
const FAMILY_PREFIX: &str = "family#";
const USED: &str = "used";
const PENDING: &str = "pending";
const COMPLETED: &str = "completed";

/// Attempts at a transaction that another one keeps cancelling (conflicts, or a
/// condition that fails because of a racing writer and needs a fresh read).
const TRANSACTION_ATTEMPTS: u32 = 6;

/// BatchWriteItem's limit.
const WRITE_CHUNK: usize = 25;
/// BatchGetItem's limit.
const GET_CHUNK: usize = 100;
/// Batch requests in flight at once per call.
const PARALLEL_REQUESTS: usize = 4;
/// Attempts at a batch's unprocessed items before giving up (backoff in between).
const BATCH_ATTEMPTS: u32 = 8;

/// The table definitions shared with `infra/local-aws` (CreateTable request shapes).
const TABLES_JSON: &str = include_str!("../../../infra/tables.json");

/// The two tables' names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoTables {
    /// Everything found by an opaque key (TTL attribute `expires_at`).
    pub keys: String,
    /// Everything found by user (partition key `pk`, sort key `sk`).
    pub data: String,
}

/// The DynamoDB implementation of [`Store`]. Cheap to clone (the client is shared).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    tables: DynamoTables,
    /// Query page size; `None` lets DynamoDB fill 1 MB pages.
    page_limit: Option<i32>,
}

impl DynamoStore {
    pub fn new(client: Client, tables: DynamoTables) -> Self {
        DynamoStore {
            client,
            tables,
            page_limit: None,
        }
    }

    /// Builds the client once from the environment (region, credentials, and the
    /// `AWS_ENDPOINT_URL_DYNAMODB` the SDK reads itself); `endpoint` overrides the
    /// endpoint (a local emulator such as moto).
    pub async fn from_env(tables: DynamoTables, endpoint: Option<String>) -> Self {
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_attempt_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(12))
            .build();
        let mut loader =
            aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts);
        if let Some(url) = endpoint {
            loader = loader.endpoint_url(url);
        }
        let config = loader.load().await;
        Self::new(Client::new(&config), tables)
    }

    /// Caps every Query page at `limit` items (tests use it to make pagination real).
    pub fn with_page_limit(mut self, limit: i32) -> Self {
        self.page_limit = Some(limit.max(1));
        self
    }

    pub fn tables(&self) -> &DynamoTables {
        &self.tables
    }

    /// Creates both tables from `infra/tables.json` under the given names, unless they
    /// exist, waits until they are active, and turns TTL on for the keys table. For
    /// tests and local development; deployed tables come from the SAM template.
    pub async fn create_tables(client: &Client, tables: &DynamoTables) -> Result<(), StoreError> {
        let op = "create_tables";
        let defs: TableFile = serde_json::from_str(TABLES_JSON).map_err(|_| bad_definition())?;
        for (def, name) in [
            (&defs.tables.keys, &tables.keys),
            (&defs.tables.data, &tables.data),
        ] {
            let request = client
                .create_table()
                .table_name(name)
                .set_attribute_definitions(Some(def.create_table.attribute_definitions()?))
                .set_key_schema(Some(key_schema(&def.create_table.key_schema)?))
                .set_global_secondary_indexes(def.create_table.global_secondary_indexes()?)
                .billing_mode(BillingMode::from(def.create_table.billing_mode.as_str()));
            match request.send().await {
                Ok(_) => {}
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_resource_in_use_exception()) => {}
                Err(e) => return Err(sdk_error(op, e)),
            }
        }
        for name in [&tables.keys, &tables.data] {
            wait_until_active(client, name).await?;
        }
        for (def, name) in [
            (&defs.tables.keys, &tables.keys),
            (&defs.tables.data, &tables.data),
        ] {
            let Some(ttl) = &def.time_to_live_specification else {
                continue;
            };
            let current = client
                .describe_time_to_live()
                .table_name(name)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            let status = current
                .time_to_live_description()
                .and_then(|d| d.time_to_live_status());
            if matches!(
                status,
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            ) {
                continue;
            }
            let spec = TimeToLiveSpecification::builder()
                .attribute_name(&ttl.attribute_name)
                .enabled(ttl.enabled)
                .build()
                .map_err(|_| bad_definition())?;
            client
                .update_time_to_live()
                .table_name(name)
                .time_to_live_specification(spec)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
        }
        Ok(())
    }

    /// A Query on the data table for one user, consistent (reads follow writes).
    fn user_query(&self, user: &str) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.tables.data)
            .consistent_read(true)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_values(":pk", s(user))
    }

    /// Marks the user as holding `kind` (`health` or `genotype`).
    async fn mark_present(
        &self,
        op: &'static str,
        user: &str,
        kind: &'static str,
    ) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(PRESENCE_SK))
            .update_expression("SET #kind = :yes")
            .expression_attribute_names("#kind", kind)
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(())
    }

    /// Writes (puts or deletes) any number of requests: 25 a batch, a few batches in flight.
    async fn write_all(
        &self,
        op: &'static str,
        requests: Vec<WriteRequest>,
    ) -> Result<(), StoreError> {
        let mut requests = requests.into_iter().peekable();
        let batches = std::iter::from_fn(move || {
            requests.peek()?;
            let batch: Vec<WriteRequest> = requests.by_ref().take(WRITE_CHUNK).collect();
            Some(write_batch(
                self.client.clone(),
                self.tables.data.clone(),
                op,
                batch,
            ))
        });
        bounded(op, batches).await.map(drop)
    }

    /// Deletes every item of the user whose sort key starts with `prefix`, page by page.
    async fn delete_prefixed(
        &self,
        op: &'static str,
        user: &str,
        prefix: &str,
    ) -> Result<(), StoreError> {
        let query = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(prefix))
            .projection_expression("#pk, #sk");
        let mut start: Option<Item> = None;
        loop {
            let page = query
                .clone()
                .set_exclusive_start_key(start.take())
                .set_limit(self.page_limit)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            let mut deletes = Vec::new();
            for item in page.items.unwrap_or_default() {
                let key: Item = item
                    .into_iter()
                    .filter(|(name, _)| name == PK || name == SK)
                    .collect();
                let delete = DeleteRequest::builder()
                    .set_key(Some(key))
                    .build()
                    .map_err(|_| StoreError::Corrupt(op.into()))?;
                deletes.push(WriteRequest::builder().delete_request(delete).build());
            }
            self.write_all(op, deletes).await?;
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(()),
            }
        }
    }
}

impl DynamoStore {
    /// One keys-table item, read consistently (a racing writer's commit is visible).
    async fn key_item(&self, op: &'static str, key: String) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.tables.keys)
            .key(KEY, s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(out.item)
    }

    /// One data-table item, read consistently.
    async fn data_item(
        &self,
        op: &'static str,
        user: &str,
        sk: String,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(out.item)
    }

    async fn put_key_item(&self, op: &'static str, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.tables.keys)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(())
    }

    /// One TransactWriteItems. A cancelled transaction (nothing written) is not an
    /// error: it returns its cancellation reasons, one code per item in request order
    /// (`None` for an item that did not fail).
    async fn transact(
        &self,
        op: &'static str,
        items: Vec<TransactWriteItem>,
    ) -> Result<Committed, StoreError> {
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(Committed::Yes),
            Err(e) => match e.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
                    Ok(Committed::No(
                        cancelled
                            .cancellation_reasons()
                            .iter()
                            .map(|r| r.code().unwrap_or("None").to_string())
                            .collect(),
                    ))
                }
                _ => Err(sdk_error(op, e)),
            },
        }
    }
}

/// The outcome of a transaction that reached DynamoDB.
#[derive(Debug)]
enum Committed {
    Yes,
    /// Cancelled, nothing written; the cancellation code of each item.
    No(Vec<String>),
}

impl Committed {
    /// Whether item `index`'s condition failed.
    fn condition_failed(&self, index: usize) -> bool {
        matches!(self, Committed::No(codes) if codes.get(index).is_some_and(|c| c == "ConditionalCheckFailed"))
    }

    /// Whether the cancellation is transient (another transaction on the same items,
    /// or throttling): worth the same request again after a pause.
    fn transient(&self) -> bool {
        matches!(self, Committed::No(codes) if codes.iter().any(|c| matches!(
            c.as_str(),
            "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded" | "RequestLimitExceeded"
        )))
    }

    /// The log line for a cancellation that is neither expected nor transient
    /// (codes only, never keys).
    fn unexpected(&self, op: &'static str) -> StoreError {
        if let Committed::No(codes) = self {
            tracing::warn!(
                operation = op,
                codes = codes.join(","),
                "dynamodb store: transaction cancelled"
            );
        }
        StoreError::Unavailable(op.to_string())
    }

    /// What a cancellation the caller did not claim calls for: a transient one, the
    /// same request after a pause; a failed condition on item 0 (a racing writer since
    /// the read it was built from), a fresh read at once; anything else is an error.
    fn retry<T>(&self, op: &'static str) -> Result<Attempt<T>, StoreError> {
        if self.transient() {
            Ok(Attempt::Pause)
        } else if self.condition_failed(0) {
            Ok(Attempt::Again)
        } else {
            Err(self.unexpected(op))
        }
    }
}

/// One try at a write that racing writers can defeat.
enum Attempt<T> {
    Done(T),
    /// Cancelled by a conflicting transaction, or throttled: again after a pause.
    Pause,
    /// Beaten by a racing writer: again at once, from a fresh read.
    Again,
}

/// Runs `attempt` until it is done, at most `TRANSACTION_ATTEMPTS` times, with
/// backoff before a try that follows a [`Attempt::Pause`].
async fn contended<T, F, Fut>(op: &'static str, mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Attempt<T>, StoreError>>,
{
    for n in 0..TRANSACTION_ATTEMPTS {
        match attempt().await? {
            Attempt::Done(value) => return Ok(value),
            Attempt::Pause if n + 1 < TRANSACTION_ATTEMPTS => {
                tokio::time::sleep(backoff(n)).await;
            }
            Attempt::Pause | Attempt::Again => {}
        }
    }
    Err(StoreError::Unavailable(format!("{op}: contended")))
}

/// The error code of a failed condition on a single-item write.
const CONDITION_FAILED: &str = "ConditionalCheckFailedException";

/// A conditional single-item write's result: `Some(output)` when it was written, `None`
/// when its condition failed (nothing written); any other failure is an error.
fn conditional<O, E: ProvideErrorMetadata, R>(
    op: &'static str,
    result: Result<O, SdkError<E, R>>,
) -> Result<Option<O>, StoreError> {
    match result {
        Ok(out) => Ok(Some(out)),
        Err(e) if e.code() == Some(CONDITION_FAILED) => Ok(None),
        Err(e) => Err(sdk_error(op, e)),
    }
}

/// A condition on one transaction item, as the request's fields (an absent map is
/// left out: DynamoDB refuses an empty one).
#[derive(Default)]
struct Condition {
    expression: Option<String>,
    names: Option<HashMap<String, String>>,
    values: Option<HashMap<String, AttributeValue>>,
}

fn condition(
    expression: &str,
    names: &[(&str, &str)],
    values: Vec<(&str, AttributeValue)>,
) -> Option<Condition> {
    let names: HashMap<String, String> = names
        .iter()
        .map(|(placeholder, name)| (placeholder.to_string(), name.to_string()))
        .collect();
    let values: HashMap<String, AttributeValue> = values
        .into_iter()
        .map(|(placeholder, value)| (placeholder.to_string(), value))
        .collect();
    Some(Condition {
        expression: Some(expression.to_string()),
        names: (!names.is_empty()).then_some(names),
        values: (!values.is_empty()).then_some(values),
    })
}

/// A transaction Put, with an optional condition.
fn tx_put(
    op: &'static str,
    table: &str,
    item: Item,
    condition: Option<Condition>,
) -> Result<TransactWriteItem, StoreError> {
    let condition = condition.unwrap_or_default();
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .set_condition_expression(condition.expression)
        .set_expression_attribute_names(condition.names)
        .set_expression_attribute_values(condition.values)
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// A transaction Delete, with an optional condition.
fn tx_delete(
    op: &'static str,
    table: &str,
    key: Item,
    condition: Option<Condition>,
) -> Result<TransactWriteItem, StoreError> {
    let condition = condition.unwrap_or_default();
    let delete = Delete::builder()
        .table_name(table)
        .set_key(Some(key))
        .set_condition_expression(condition.expression)
        .set_expression_attribute_names(condition.names)
        .set_expression_attribute_values(condition.values)
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn keys_key(key: String) -> Item {
    HashMap::from([(KEY.to_string(), s(key))])
}

fn account_from_item(op: &'static str, user_id: &str, item: &Item) -> Result<Account, StoreError> {
    Ok(Account {
        user_id: user_id.to_string(),
        email: get_s(op, item, "email")?,
        password_hash: get_s(op, item, "password_hash")?,
        created_at: get_u64(op, item, "created_at")?,
    })
}

fn url_grant_item(secret_hash: &str, grant: &UrlGrant) -> Item {
    let mut item = HashMap::from([
        (KEY.to_string(), s(format!("{URL_PREFIX}{secret_hash}"))),
        ("user_id".to_string(), s(grant.user_id.as_str())),
        (EXPIRES_AT.to_string(), n(grant.expires_at)),
    ]);
    insert_optional(
        &mut item,
        &[
            ("session_id", &grant.session_id),
            ("agent_name", &grant.agent_name),
        ],
    );
    item
}

fn url_grant_from_item(op: &'static str, item: &Item) -> Result<UrlGrant, StoreError> {
    Ok(UrlGrant {
        user_id: get_s(op, item, "user_id")?,
        session_id: get_opt_s(op, item, "session_id")?,
        agent_name: get_opt_s(op, item, "agent_name")?,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
    })
}

fn personal_url_item(user_id: &str, url: &PersonalUrl) -> Item {
    HashMap::from([
        (KEY.to_string(), s(format!("{USER_URL_PREFIX}{user_id}"))),
        ("sealed_secret".to_string(), s(url.sealed_secret.as_str())),
        ("secret_hash".to_string(), s(url.secret_hash.as_str())),
        (EXPIRES_AT.to_string(), n(url.expires_at)),
    ])
}

fn personal_url_from_item(op: &'static str, item: &Item) -> Result<PersonalUrl, StoreError> {
    Ok(PersonalUrl {
        sealed_secret: get_s(op, item, "sealed_secret")?,
        secret_hash: get_s(op, item, "secret_hash")?,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
    })
}

fn login_state_from_item(op: &'static str, item: &Item) -> Result<LoginState, StoreError> {
    let status = match get_s(op, item, "status")?.as_str() {
        PENDING => LoginStatus::Pending,
        COMPLETED => LoginStatus::Completed {
            sealed_token: get_s(op, item, "sealed_token")?,
        },
        _ => return Err(corrupt(op)),
    };
    Ok(LoginState {
        status,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
    })
}

/// A list of strings (a list, not a string set: a set cannot be empty).
fn string_list(values: &[String]) -> AttributeValue {
    AttributeValue::L(values.iter().map(|v| s(v.as_str())).collect())
}

/// A list of strings as written, or a string set written by hand.
fn get_strings(op: &'static str, item: &Item, name: &str) -> Result<Vec<String>, StoreError> {
    match item.get(name) {
        Some(AttributeValue::L(list)) => list
            .iter()
            .map(|v| match v {
                AttributeValue::S(p) => Ok(p.clone()),
                _ => Err(corrupt(op)),
            })
            .collect(),
        Some(AttributeValue::Ss(set)) => Ok(set.clone()),
        _ => Err(corrupt(op)),
    }
}

fn get_bool(op: &'static str, item: &Item, name: &str) -> Result<bool, StoreError> {
    match item.get(name) {
        Some(AttributeValue::Bool(v)) => Ok(*v),
        _ => Err(corrupt(op)),
    }
}

/// Adds the optional string attributes that are present.
fn insert_optional(item: &mut Item, values: &[(&str, &Option<String>)]) {
    for (name, value) in values {
        if let Some(v) = value {
            item.insert(name.to_string(), s(v.as_str()));
        }
    }
}

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
    };
    Ok((record, get_bool(op, item, USED)?))
}

/// Permissions as written (a list), or a string set written by hand.
fn permissions_from_item(op: &'static str, item: &Item) -> Result<Vec<String>, StoreError> {
    get_strings(op, item, "permissions")
}

/// Maps an SDK failure to `Unavailable(<operation>)`; the log line carries the error
/// kind and code, never the message (it can quote keys).
fn sdk_error<E: ProvideErrorMetadata, R>(op: &'static str, err: SdkError<E, R>) -> StoreError {
    let kind = match &err {
        SdkError::ConstructionFailure(_) => "construction",
        SdkError::TimeoutError(_) => "timeout",
        SdkError::DispatchFailure(_) => "dispatch",
        SdkError::ResponseError(_) => "response",
        SdkError::ServiceError(_) => "service",
        _ => "other",
    };
    tracing::warn!(
        operation = op,
        kind,
        code = err.code().unwrap_or("-"),
        "dynamodb store: operation failed"
    );
    StoreError::Unavailable(op.to_string())
}

fn corrupt(op: &'static str) -> StoreError {
    tracing::warn!(operation = op, "dynamodb store: unreadable item");
    StoreError::Corrupt(op.to_string())
}

/// Exponential backoff with jitter: ~50 ms, 100 ms, ... capped at 2 s.
fn backoff(attempt: u32) -> Duration {
    let ceiling = 50u64.saturating_mul(1 << attempt.min(6)).min(2_000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = u64::from(nanos) % (ceiling / 2 + 1);
    Duration::from_millis(ceiling / 2 + jitter)
}

/// Runs the tasks with at most `PARALLEL_REQUESTS` in flight; results in completion order.
/// The first failure stops the rest.
async fn bounded<T, F>(
    op: &'static str,
    tasks: impl Iterator<Item = F>,
) -> Result<Vec<T>, StoreError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StoreError>> + Send + 'static,
{
    let mut tasks = tasks.fuse();
    let mut running = JoinSet::new();
    let mut out = Vec::new();
    loop {
        while running.len() < PARALLEL_REQUESTS {
            match tasks.next() {
                Some(task) => {
                    running.spawn(task);
                }
                None => break,
            }
        }
        match running.join_next().await {
            None => return Ok(out),
            Some(Ok(result)) => out.push(result?),
            Some(Err(_)) => {
                return Err(StoreError::Unavailable(format!("{op}: worker task failed")));
            }
        }
    }
}

/// One BatchWriteItem of at most 25 requests, retrying unprocessed items with backoff.
async fn write_batch(
    client: Client,
    table: String,
    op: &'static str,
    batch: Vec<WriteRequest>,
) -> Result<(), StoreError> {
    let mut pending = HashMap::from([(table, batch)]);
    for attempt in 0..BATCH_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt - 1)).await;
        }
        let out = client
            .batch_write_item()
            .set_request_items(Some(pending))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        match out.unprocessed_items {
            Some(left) if left.values().any(|requests| !requests.is_empty()) => pending = left,
            _ => return Ok(()),
        }
    }
    tracing::warn!(
        operation = op,
        "dynamodb store: unprocessed items after retries"
    );
    Err(StoreError::Unavailable(format!("{op}: throttled")))
}

/// One BatchGetItem of at most 100 keys, retrying unprocessed keys with backoff.
async fn get_batch(
    client: Client,
    table: String,
    op: &'static str,
    keys: KeysAndAttributes,
) -> Result<Vec<Item>, StoreError> {
    let mut pending = HashMap::from([(table, keys)]);
    let mut found = Vec::new();
    for attempt in 0..BATCH_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt - 1)).await;
        }
        let out = client
            .batch_get_item()
            .set_request_items(Some(pending))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        found.extend(out.responses.unwrap_or_default().into_values().flatten());
        match out.unprocessed_keys {
            Some(left) if left.values().any(|k| !k.keys().is_empty()) => pending = left,
            _ => return Ok(found),
        }
    }
    tracing::warn!(
        operation = op,
        "dynamodb store: unprocessed keys after retries"
    );
    Err(StoreError::Unavailable(format!("{op}: throttled")))
}

/// Every item a Query returns, following `LastEvaluatedKey`.
async fn query_all(
    op: &'static str,
    query: QueryFluentBuilder,
    limit: Option<i32>,
) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    let mut start: Option<Item> = None;
    loop {
        let page = query
            .clone()
            .set_exclusive_start_key(start.take())
            .set_limit(limit)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        items.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return Ok(items),
        }
    }
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn get_s(op: &'static str, item: &Item, name: &str) -> Result<String, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        _ => Err(corrupt(op)),
    }
}

fn get_opt_s(op: &'static str, item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(_) => Err(corrupt(op)),
    }
}

fn get_u64(op: &'static str, item: &Item, name: &str) -> Result<u64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| corrupt(op)),
        _ => Err(corrupt(op)),
    }
}

/// DynamoDB numbers hold up to 38 significant digits within about 1e-130..1e126; Rust
/// prints the shortest text that reads back to the same `f64`. A number whose text does
/// not fit (absurd magnitudes) and a non-finite one are kept as text.
fn value_attribute(value: &ReadingValue) -> AttributeValue {
    match value {
        ReadingValue::Number(n) => {
            let text = n.to_string();
            let digits = text.bytes().filter(u8::is_ascii_digit).count();
            if n.is_finite() && digits <= 38 {
                AttributeValue::N(text)
            } else {
                AttributeValue::S(text)
            }
        }
        ReadingValue::Text(t) => s(t.as_str()),
    }
}

fn reading_sk(r: &Reading) -> String {
    format!(
        "{READING_PREFIX}{}#{}#{}",
        Reading::indicator_key(&r.indicator),
        r.time,
        r.source
    )
}

fn reading_item(user: &str, sk: String, r: &Reading) -> Item {
    let mut item = HashMap::from([
        (PK.to_string(), s(user)),
        (SK.to_string(), s(sk)),
        ("indicator".to_string(), s(r.indicator.as_str())),
        ("time".to_string(), s(r.time.as_str())),
        ("source".to_string(), s(r.source.as_str())),
        ("value".to_string(), value_attribute(&r.value)),
    ]);
    insert_optional(
        &mut item,
        &[
            ("unit", &r.unit),
            ("code_system", &r.code_system),
            ("code", &r.code),
        ],
    );
    item
}

fn reading_from_item(op: &'static str, item: &Item) -> Result<Reading, StoreError> {
    let value = match item.get("value") {
        Some(AttributeValue::N(n)) => ReadingValue::Number(n.parse().map_err(|_| corrupt(op))?),
        Some(AttributeValue::S(t)) => ReadingValue::Text(t.clone()),
        _ => return Err(corrupt(op)),
    };
    Ok(Reading {
        indicator: get_s(op, item, "indicator")?,
        value,
        unit: get_opt_s(op, item, "unit")?,
        time: get_s(op, item, "time")?,
        code_system: get_opt_s(op, item, "code_system")?,
        code: get_opt_s(op, item, "code")?,
        source: get_s(op, item, "source")?,
    })
}

fn genotype_item(user: &str, rsid: &str, g: &Genotype) -> Item {
    HashMap::from([
        (PK.to_string(), s(user)),
        (SK.to_string(), s(format!("{GENOTYPE_PREFIX}{rsid}"))),
        ("chromosome".to_string(), s(g.chromosome.as_str())),
        ("genotype".to_string(), s(g.genotype.as_str())),
        (GPK.to_string(), s(format!("{user}#{}", g.chromosome))),
        (GPOS.to_string(), n(g.position)),
    ])
}

/// A genotype from its item; `chromosome` is given when the item comes from the index
/// (which projects only the keys and `genotype`).
fn genotype_from_item(
    op: &'static str,
    item: &Item,
    chromosome: Option<&str>,
) -> Result<Genotype, StoreError> {
    let sk = get_s(op, item, SK)?;
    let rsid = sk
        .strip_prefix(GENOTYPE_PREFIX)
        .ok_or_else(|| corrupt(op))?
        .to_string();
    let chromosome = match chromosome {
        Some(c) => c.to_string(),
        None => get_s(op, item, "chromosome")?,
    };
    Ok(Genotype {
        rsid,
        chromosome,
        position: get_u64(op, item, GPOS)?,
        genotype: get_s(op, item, "genotype")?,
    })
}

fn mcp_sk(name: &str) -> String {
    format!("{MCP_PREFIX}{name}")
}

/// The sort key of a url's claim: urls can be longer than a sort key may be.
fn mcp_url_sk(url: &str) -> String {
    let hash: String = Sha256::digest(url.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{MCP_URL_PREFIX}{hash}")
}

fn data_key(user: &str, sk: String) -> Item {
    HashMap::from([(PK.to_string(), s(user)), (SK.to_string(), s(sk))])
}

/// The `presence` item's flags (absent: no data of either kind).
fn presence_of(item: Option<&Item>) -> DataPresence {
    let flag = |name: &str| {
        matches!(
            item.and_then(|i| i.get(name)),
            Some(AttributeValue::Bool(true))
        )
    };
    DataPresence {
        health: flag("health"),
        genotype: flag("genotype"),
    }
}

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

fn put_request(op: &'static str, item: Item) -> Result<WriteRequest, StoreError> {
    let put = PutRequest::builder()
        .set_item(Some(item))
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(WriteRequest::builder().put_request(put).build())
}

impl HealthStore for DynamoStore {
    fn data_presence<'a>(&'a self, user: &'a str) -> StoreFuture<'a, DataPresence> {
        Box::pin(async move {
            let item = self
                .data_item("data_presence", user, PRESENCE_SK.to_string())
                .await?;
            Ok(presence_of(item.as_ref()))
        })
    }

    fn put_readings<'a>(
        &'a self,
        user: &'a str,
        readings: &'a [Reading],
    ) -> StoreFuture<'a, WriteReport> {
        Box::pin(async move {
            let op = "put_readings";
            // One batch may not name an item twice: the last of a repeated identity wins,
            // as it would writing one at a time.
            let mut by_sk: HashMap<String, &Reading> = HashMap::with_capacity(readings.len());
            for r in readings {
                by_sk.insert(reading_sk(r), r);
            }
            if by_sk.is_empty() {
                return Ok(WriteReport::default());
            }
            // Presence first: if the data write then fails, gating shows tools that find
            // nothing, rather than hiding data that did arrive.
            self.mark_present(op, user, "health").await?;
            let written = by_sk.len();
            let requests = by_sk
                .into_iter()
                .map(|(sk, r)| put_request(op, reading_item(user, sk, r)))
                .collect::<Result<Vec<_>, _>>()?;
            self.write_all(op, requests).await?;
            Ok(WriteReport { written })
        })
    }

    fn readings<'a>(
        &'a self,
        user: &'a str,
        query: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>> {
        Box::pin(async move {
            let op = "readings";
            let to = query.time_upper_bound();
            if query.from.as_deref().is_some_and(|from| from > to.as_str()) {
                // An empty window (and DynamoDB refuses BETWEEN with its ends swapped).
                return Ok(Vec::new());
            }
            let mut filter = vec!["#time <= :to"];
            if query.from.is_some() {
                filter.push("#time >= :from");
            }
            let base = self
                .user_query(user)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_names("#time", "time")
                .expression_attribute_values(":to", s(to.as_str()))
                .filter_expression(filter.join(" AND "));
            let base = match &query.from {
                Some(from) => base.expression_attribute_values(":from", s(from.as_str())),
                None => base,
            };
            let items = match query.normalized_keys() {
                None => {
                    let q = base
                        .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                        .expression_attribute_values(":prefix", s(READING_PREFIX));
                    query_all(op, q, self.page_limit).await?
                }
                Some(keys) => {
                    let from = query.from.as_deref().unwrap_or("");
                    let limit = self.page_limit;
                    let queries = keys.into_iter().map(|key| {
                        let q = base
                            .clone()
                            .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
                            .expression_attribute_values(
                                ":low",
                                s(format!("{READING_PREFIX}{key}#{from}")),
                            )
                            .expression_attribute_values(
                                ":high",
                                s(format!("{READING_PREFIX}{key}#{to}")),
                            );
                        query_all(op, q, limit)
                    });
                    bounded(op, queries).await?.into_iter().flatten().collect()
                }
            };
            let mut readings = items
                .iter()
                .map(|item| reading_from_item(op, item))
                .collect::<Result<Vec<_>, _>>()?;
            // Sort keys order `#` against the characters of an indicator key differently
            // from plain text ("a b" vs "a"), so order here, as the embedded store does.
            readings.sort_by_cached_key(|r| {
                (
                    Reading::indicator_key(&r.indicator),
                    r.time.clone(),
                    r.source.clone(),
                )
            });
            Ok(readings)
        })
    }

    fn put_genotypes<'a>(
        &'a self,
        user: &'a str,
        genotypes: &'a [Genotype],
    ) -> StoreFuture<'a, WriteReport> {
        Box::pin(async move {
            let op = "put_genotypes";
            let mut by_rsid: HashMap<String, &Genotype> = HashMap::with_capacity(genotypes.len());
            for g in genotypes {
                by_rsid.insert(g.rsid.to_lowercase(), g);
            }
            if by_rsid.is_empty() {
                return Ok(WriteReport::default());
            }
            self.mark_present(op, user, "genotype").await?;
            let written = by_rsid.len();
            let requests = by_rsid
                .iter()
                .map(|(rsid, g)| put_request(op, genotype_item(user, rsid, g)))
                .collect::<Result<Vec<_>, _>>()?;
            self.write_all(op, requests).await?;
            Ok(WriteReport { written })
        })
    }

    fn genotypes_by_rsid<'a>(
        &'a self,
        user: &'a str,
        rsids: &'a [String],
    ) -> StoreFuture<'a, Vec<Genotype>> {
        Box::pin(async move {
            let op = "genotypes_by_rsid";
            let rsids = Genotype::normalized_rsids(rsids);
            let mut batches = Vec::new();
            for chunk in rsids.chunks(GET_CHUNK) {
                let keys = chunk
                    .iter()
                    .map(|rsid| data_key(user, format!("{GENOTYPE_PREFIX}{rsid}")))
                    .collect();
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .consistent_read(true)
                    .projection_expression("#sk, #chr, #pos, #gt")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_names("#chr", "chromosome")
                    .expression_attribute_names("#pos", GPOS)
                    .expression_attribute_names("#gt", "genotype")
                    .build()
                    .map_err(|_| corrupt(op))?;
                batches.push(get_batch(
                    self.client.clone(),
                    self.tables.data.clone(),
                    op,
                    request,
                ));
            }
            let items: Vec<Item> = bounded(op, batches.into_iter())
                .await?
                .into_iter()
                .flatten()
                .collect();
            items
                .iter()
                .map(|item| genotype_from_item(op, item, None))
                .collect()
        })
    }

    fn genotypes_in_range<'a>(
        &'a self,
        user: &'a str,
        chromosome: &'a str,
        from: u64,
        to: u64,
    ) -> StoreFuture<'a, Vec<Genotype>> {
        Box::pin(async move {
            let op = "genotypes_in_range";
            if from > to {
                return Ok(Vec::new());
            }
            let q = self
                .client
                .query()
                .table_name(&self.tables.data)
                .index_name(POSITION_INDEX)
                .key_condition_expression("#gpk = :gpk AND #gpos BETWEEN :from AND :to")
                .expression_attribute_names("#gpk", GPK)
                .expression_attribute_names("#gpos", GPOS)
                .expression_attribute_values(":gpk", s(format!("{user}#{chromosome}")))
                .expression_attribute_values(":from", n(from))
                .expression_attribute_values(":to", n(to));
            let items = query_all(op, q, self.page_limit).await?;
            // `<user>#<chromosome>` could in principle be another user's key: keep the user's own.
            let mut out = items
                .iter()
                .filter(|item| matches!(item.get(PK), Some(AttributeValue::S(pk)) if pk == user))
                .map(|item| genotype_from_item(op, item, Some(chromosome)))
                .collect::<Result<Vec<_>, _>>()?;
            out.sort_by(|a, b| (a.position, &a.rsid).cmp(&(b.position, &b.rsid)));
            Ok(out)
        })
    }

    fn delete_user_data<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let op = "delete_user_data";
            // Readings and genotypes only: the account (and any other kind) stays.
            self.delete_prefixed(op, user, READING_PREFIX).await?;
            self.delete_prefixed(op, user, GENOTYPE_PREFIX).await?;
            self.client
                .delete_item()
                .table_name(&self.tables.data)
                .key(PK, s(user))
                .key(SK, s(PRESENCE_SK))
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            Ok(())
        })
    }
}

impl AccountStore for DynamoStore {
    fn create_account<'a>(&'a self, account: &'a Account) -> StoreFuture<'a, Created> {
        Box::pin(async move {
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
        })
    }

    fn account_by_email<'a>(&'a self, email: &'a str) -> StoreFuture<'a, Option<Account>> {
        Box::pin(async move {
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
        })
    }

    fn account<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Option<Account>> {
        Box::pin(async move {
            let op = "account";
            self.data_item(op, user_id, ACCOUNT_SK.to_string())
                .await?
                .map(|item| account_from_item(op, user_id, &item))
                .transpose()
        })
    }

    fn put_share<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
        permissions: &'a [String],
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let op = "put_share";
            self.client
                .put_item()
                .table_name(&self.tables.data)
                .item(PK, s(owner))
                .item(SK, s(format!("{SHARE_PREFIX}{grantee}")))
                .item("permissions", string_list(permissions))
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            Ok(())
        })
    }

    fn delete_share<'a>(&'a self, owner: &'a str, grantee: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let op = "delete_share";
            self.client
                .delete_item()
                .table_name(&self.tables.data)
                .key(PK, s(owner))
                .key(SK, s(format!("{SHARE_PREFIX}{grantee}")))
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            Ok(())
        })
    }

    fn share<'a>(
        &'a self,
        owner: &'a str,
        grantee: &'a str,
    ) -> StoreFuture<'a, Option<Vec<String>>> {
        Box::pin(async move {
            let op = "share";
            self.data_item(op, owner, format!("{SHARE_PREFIX}{grantee}"))
                .await?
                .map(|item| permissions_from_item(op, &item))
                .transpose()
        })
    }

    fn put_url_grant<'a>(
        &'a self,
        secret_hash: &'a str,
        grant: &'a UrlGrant,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.put_key_item("put_url_grant", url_grant_item(secret_hash, grant)))
    }

    fn url_grant<'a>(
        &'a self,
        secret_hash: &'a str,
        now: u64,
    ) -> StoreFuture<'a, Option<UrlGrant>> {
        Box::pin(async move {
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
        })
    }

    fn claim_personal_url<'a>(
        &'a self,
        user_id: &'a str,
        candidate: &'a PersonalUrl,
        now: u64,
    ) -> StoreFuture<'a, PersonalUrl> {
        Box::pin(async move {
            let op = "claim_personal_url";
            let user_key = format!("{USER_URL_PREFIX}{user_id}");
            let grant = UrlGrant {
                user_id: user_id.to_string(),
                session_id: None,
                agent_name: None,
                expires_at: candidate.expires_at,
            };
            let (user_key, grant) = (&user_key, &grant);
            contended(op, || async move {
                let current = self
                    .key_item(op, user_key.clone())
                    .await?
                    .map(|item| personal_url_from_item(op, &item))
                    .transpose()?;
                if let Some(current) = &current
                    && current.expires_at > now
                {
                    return Ok(Attempt::Done(current.clone()));
                }
                // Absent or expired: put the candidate, unless someone else has put a
                // live one since the read.
                let mut items = vec![
                    tx_put(
                        op,
                        &self.tables.keys,
                        personal_url_item(user_id, candidate),
                        condition(
                            "attribute_not_exists(#k) OR #exp <= :now",
                            &[("#k", KEY), ("#exp", EXPIRES_AT)],
                            vec![(":now", n(now))],
                        ),
                    )?,
                    tx_put(
                        op,
                        &self.tables.keys,
                        url_grant_item(&candidate.secret_hash, grant),
                        None,
                    )?,
                ];
                // The replaced URL's grant goes in the same transaction (it has expired,
                // but TTL deletion lags, and the secret should resolve to nothing).
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
                    return Ok(Attempt::Done(candidate.clone()));
                }
                // A racing caller won: read again and return theirs.
                outcome.retry(op)
            })
            .await
        })
    }

    fn revoke_personal_url<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let op = "revoke_personal_url";
            let user_key = &format!("{USER_URL_PREFIX}{user_id}");
            contended(op, || async move {
                let Some(item) = self.key_item(op, user_key.clone()).await? else {
                    return Ok(Attempt::Done(false));
                };
                let current = personal_url_from_item(op, &item)?;
                // Both go together, and only if the URL is still the one read (a racing
                // claim may have replaced it; then its grant is the one to delete).
                let items = vec![
                    tx_delete(
                        op,
                        &self.tables.keys,
                        keys_key(user_key.clone()),
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
        })
    }

    fn put_login_state<'a>(
        &'a self,
        state: &'a str,
        record: &'a LoginState,
    ) -> StoreFuture<'a, ()> {
        let mut item = HashMap::from([
            (KEY.to_string(), s(format!("{STATE_PREFIX}{state}"))),
            (EXPIRES_AT.to_string(), n(record.expires_at)),
        ]);
        match &record.status {
            LoginStatus::Pending => {
                item.insert("status".to_string(), s(PENDING));
            }
            LoginStatus::Completed { sealed_token } => {
                item.insert("status".to_string(), s(COMPLETED));
                item.insert("sealed_token".to_string(), s(sealed_token.as_str()));
            }
        }
        Box::pin(self.put_key_item("put_login_state", item))
    }

    fn login_state<'a>(&'a self, state: &'a str) -> StoreFuture<'a, Option<LoginState>> {
        Box::pin(async move {
            let op = "login_state";
            self.key_item(op, format!("{STATE_PREFIX}{state}"))
                .await?
                .map(|item| login_state_from_item(op, &item))
                .transpose()
        })
    }

    fn complete_login_state<'a>(
        &'a self,
        state: &'a str,
        sealed_token: &'a str,
        now: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
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
        })
    }
}

impl OAuthStore for DynamoStore {
    fn put_client<'a>(&'a self, client: &'a OAuthClient) -> StoreFuture<'a, bool> {
        Box::pin(async move {
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
        })
    }

    fn client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, Option<OAuthClient>> {
        Box::pin(async move {
            let op = "client";
            self.key_item(op, format!("{CLIENT_PREFIX}{client_id}"))
                .await?
                .map(|item| client_from_item(op, &item))
                .transpose()
        })
    }

    fn put_code<'a>(&'a self, code_hash: &'a str, code: &'a AuthCode) -> StoreFuture<'a, ()> {
        Box::pin(self.put_key_item("put_code", code_item(code_hash, code)))
    }

    fn take_code<'a>(&'a self, code_hash: &'a str, now: u64) -> StoreFuture<'a, Option<AuthCode>> {
        Box::pin(async move {
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
        })
    }

    fn put_refresh<'a>(
        &'a self,
        token_hash: &'a str,
        record: &'a RefreshRecord,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.put_key_item("put_refresh", refresh_item(token_hash, record)))
    }

    fn use_refresh<'a>(&'a self, token_hash: &'a str, now: u64) -> StoreFuture<'a, RefreshUse> {
        Box::pin(async move {
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
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
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
        })
    }

    fn revoke_refresh_family<'a>(
        &'a self,
        family_id: &'a str,
        expires_at: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
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
        })
    }
}

impl McpServerStore for DynamoStore {
    fn mcp_servers<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Vec<McpServerRecord>> {
        Box::pin(async move {
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
        })
    }

    fn presence_and_mcp_servers<'a>(
        &'a self,
        user: &'a str,
    ) -> StoreFuture<'a, (DataPresence, Vec<McpServerRecord>)> {
        Box::pin(async move {
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
        })
    }

    fn mcp_server<'a>(
        &'a self,
        user: &'a str,
        name: &'a str,
    ) -> StoreFuture<'a, Option<McpServerRecord>> {
        Box::pin(async move {
            let op = "mcp_server";
            self.data_item(op, user, mcp_sk(name))
                .await?
                .map(|item| mcp_from_item(op, &item))
                .transpose()
        })
    }

    fn create_mcp_server<'a>(
        &'a self,
        user: &'a str,
        record: &'a McpServerRecord,
    ) -> StoreFuture<'a, McpServerWrite> {
        Box::pin(async move {
            let op = "create_mcp_server";
            let record_item = mcp_item(op, user, record)?;
            let mut url_item = data_key(user, mcp_url_sk(&record.url));
            url_item.insert("name".to_string(), s(record.name.as_str()));
            let (record_item, url_item) = (&record_item, &url_item);
            contended(op, || async move {
                let absent = || condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]);
                let items = vec![
                    tx_put(op, &self.tables.data, record_item.clone(), absent())?,
                    tx_put(op, &self.tables.data, url_item.clone(), absent())?,
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
                outcome.retry(op)
            })
            .await
        })
    }

    fn replace_mcp_server<'a>(
        &'a self,
        user: &'a str,
        record: &'a McpServerRecord,
    ) -> StoreFuture<'a, McpServerWrite> {
        Box::pin(async move {
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
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
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
        })
    }

    fn record_mcp_connection<'a>(
        &'a self,
        user: &'a str,
        name: &'a str,
        at: u64,
        error: Option<&'a str>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let op = "record_mcp_connection";
            // The condition also fails on an absent item, so this never creates one.
            let update = self
                .client
                .update_item()
                .table_name(&self.tables.data)
                .key(PK, s(user))
                .key(SK, s(mcp_sk(name)))
                .condition_expression("attribute_exists(#pk)")
                .expression_attribute_names("#pk", PK)
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
        })
    }

    fn delete_mcp_server<'a>(&'a self, user: &'a str, name: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
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
        })
    }
}

// ---------------------------------------------------------------- table definitions

#[derive(Deserialize)]
struct TableFile {
    tables: TableSet,
}

#[derive(Deserialize)]
struct TableSet {
    keys: TableDef,
    data: TableDef,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TableDef {
    create_table: CreateTableDef,
    time_to_live_specification: Option<TtlDef>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CreateTableDef {
    attribute_definitions: Vec<AttributeDef>,
    key_schema: Vec<KeyDef>,
    #[serde(default)]
    global_secondary_indexes: Vec<IndexDef>,
    billing_mode: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AttributeDef {
    attribute_name: String,
    attribute_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct KeyDef {
    attribute_name: String,
    key_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IndexDef {
    index_name: String,
    key_schema: Vec<KeyDef>,
    projection: ProjectionDef,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ProjectionDef {
    projection_type: String,
    #[serde(default)]
    non_key_attributes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TtlDef {
    attribute_name: String,
    enabled: bool,
}

fn bad_definition() -> StoreError {
    StoreError::Corrupt("create_tables: infra/tables.json".into())
}

fn key_schema(keys: &[KeyDef]) -> Result<Vec<KeySchemaElement>, StoreError> {
    keys.iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(&k.attribute_name)
                .key_type(KeyType::from(k.key_type.as_str()))
                .build()
                .map_err(|_| bad_definition())
        })
        .collect()
}

impl CreateTableDef {
    fn attribute_definitions(&self) -> Result<Vec<AttributeDefinition>, StoreError> {
        self.attribute_definitions
            .iter()
            .map(|a| {
                AttributeDefinition::builder()
                    .attribute_name(&a.attribute_name)
                    .attribute_type(ScalarAttributeType::from(a.attribute_type.as_str()))
                    .build()
                    .map_err(|_| bad_definition())
            })
            .collect()
    }

    fn global_secondary_indexes(&self) -> Result<Option<Vec<GlobalSecondaryIndex>>, StoreError> {
        if self.global_secondary_indexes.is_empty() {
            return Ok(None);
        }
        self.global_secondary_indexes
            .iter()
            .map(|index| {
                let projection = Projection::builder()
                    .projection_type(ProjectionType::from(
                        index.projection.projection_type.as_str(),
                    ))
                    .set_non_key_attributes(
                        (!index.projection.non_key_attributes.is_empty())
                            .then(|| index.projection.non_key_attributes.clone()),
                    )
                    .build();
                GlobalSecondaryIndex::builder()
                    .index_name(&index.index_name)
                    .set_key_schema(Some(key_schema(&index.key_schema)?))
                    .projection(projection)
                    .build()
                    .map_err(|_| bad_definition())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// Polls until the table and its indexes are active (immediate on moto; seconds on AWS).
async fn wait_until_active(client: &Client, table: &str) -> Result<(), StoreError> {
    let op = "create_tables";
    for _ in 0..600 {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        if let Some(t) = out.table() {
            let table_active = t.table_status() == Some(&TableStatus::Active);
            let indexes_active = t
                .global_secondary_indexes()
                .iter()
                .all(|i| i.index_status() == Some(&IndexStatus::Active));
            if table_active && indexes_active {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(StoreError::Unavailable(format!("{op}: table not active")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_definitions_match_the_code() {
        let defs: TableFile = serde_json::from_str(TABLES_JSON).expect("infra/tables.json parses");
        let data = &defs.tables.data.create_table;
        let keys: Vec<(&str, &str)> = data
            .key_schema
            .iter()
            .map(|k| (k.attribute_name.as_str(), k.key_type.as_str()))
            .collect();
        assert_eq!(keys, [(PK, "HASH"), (SK, "RANGE")]);
        let index = &data.global_secondary_indexes[0];
        assert_eq!(index.index_name, POSITION_INDEX);
        let index_keys: Vec<&str> = index
            .key_schema
            .iter()
            .map(|k| k.attribute_name.as_str())
            .collect();
        assert_eq!(index_keys, [GPK, GPOS]);
        assert!(
            index
                .projection
                .non_key_attributes
                .iter()
                .any(|a| a == "genotype")
        );
        let ttl = defs
            .tables
            .keys
            .time_to_live_specification
            .as_ref()
            .expect("keys table has TTL");
        assert_eq!(
            (ttl.attribute_name.as_str(), ttl.enabled),
            ("expires_at", true)
        );
        assert!(data.attribute_definitions().is_ok() && data.global_secondary_indexes().is_ok());
    }

    #[test]
    fn numbers_keep_their_exact_value_or_fall_back_to_text() {
        assert_eq!(
            value_attribute(&ReadingValue::Number(5.7)),
            AttributeValue::N("5.7".into())
        );
        assert_eq!(
            value_attribute(&ReadingValue::Number(-0.1)),
            AttributeValue::N("-0.1".into())
        );
        assert_eq!(
            value_attribute(&ReadingValue::Number(f64::NAN)),
            AttributeValue::S("NaN".into())
        );
        assert!(matches!(
            value_attribute(&ReadingValue::Number(1e300)),
            AttributeValue::S(_)
        ));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(0) <= Duration::from_millis(50));
        assert!(backoff(3) >= Duration::from_millis(200));
        assert!(backoff(30) <= Duration::from_secs(2));
    }
}
