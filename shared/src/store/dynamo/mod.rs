//! The DynamoDB store (the Lambda default): two tables, `keys` (found by an opaque key)
//! and `data` (found by user), described in [`schema`].
//!
//! `mod.rs` holds the store value, its construction and the single-item requests every
//! domain uses; each domain's trait is implemented in its own file (`health`,
//! `accounts`, `oauth`, `mcp_servers`) over the shared machinery: `schema` (key
//! layout and attribute names, table definitions), `codec` (attribute values),
//! `batch` (batch requests, pagination, retries of unprocessed items) and `transact`
//! (conditional writes and transactions, retried when contended). `readings` is the
//! readings layout (day items, day and month rollups, the catalogue), `pending` the month
//! and catalogue rebuilds a day write owes until it has done them (a writer stopped
//! half-way leaves them to the next catalogue read), `counters` the requests and bytes a
//! benchmark reads, and `spans` the SDK interceptor behind `observe`'s store-call spans.
//!
//! Uniqueness and single use are conditional writes or TransactWriteItems, never
//! read-then-write; a transaction cancelled by a conflicting one is retried with backoff.
//!
//! Batch writes go out 25 items a request (a few requests in flight), unprocessed items
//! are retried with backoff; reads page through Query results and BatchGetItem
//! (100 keys a request). Errors name the operation only; the log line adds the SDK
//! error kind and code, never a key or value.

mod accounts;
mod batch;
mod codec;
mod counters;
mod genome;
mod health;
mod mcp_servers;
mod oauth;
mod pending;
mod readings;
mod schema;
mod spans;
mod transact;
mod uploads;

use std::sync::Arc;
use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;

use crate::store::StoreError;
use codec::{Item, s};
pub use counters::IoCounters;
use counters::{Counter, Counts};
use schema::{KEY, PK, SK};
pub(crate) use spans::CallSpans;

/// The two tables' names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoTables {
    /// Everything found by an opaque key (TTL attribute `expires_at`).
    pub keys: String,
    /// Everything found by user (partition key `pk`, sort key `sk`).
    pub data: String,
}

/// The DynamoDB implementation of [`Store`](crate::store::Store). Cheap to clone (the
/// client is shared).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    tables: DynamoTables,
    /// Query page size; `None` lets DynamoDB fill 1 MB pages.
    page_limit: Option<i32>,
    /// Requests and bytes received by this store's client.
    counts: Arc<Counts>,
}

impl DynamoStore {
    /// The store over `client` (to which it adds its request and byte counters).
    pub fn new(client: Client, tables: DynamoTables) -> Self {
        let counts = Arc::new(Counts::default());
        let config = client
            .config()
            .to_builder()
            .interceptor(Counter(counts.clone()))
            .interceptor(CallSpans)
            .build();
        DynamoStore {
            client: Client::from_conf(config),
            tables,
            page_limit: None,
            counts,
        }
    }

    /// Requests sent and response bytes received so far (benchmarks read it before and
    /// after a query).
    pub fn io_counters(&self) -> IoCounters {
        self.counts.snapshot()
    }

    /// Builds the client once from the process's SDK configuration (region, credentials,
    /// and the `AWS_ENDPOINT_URL_DYNAMODB` the SDK reads itself); `endpoint` overrides the
    /// endpoint (a local emulator such as moto).
    pub fn from_config(shared: &SdkConfig, tables: DynamoTables, endpoint: Option<String>) -> Self {
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_attempt_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(12))
            .build();
        let mut config = aws_sdk_dynamodb::config::Builder::from(shared).timeout_config(timeouts);
        if let Some(url) = endpoint {
            config = config.endpoint_url(url);
        }
        Self::new(Client::from_conf(config.build()), tables)
    }

    /// Caps every Query page at `limit` items (tests use it to make pagination real).
    pub fn with_page_limit(mut self, limit: i32) -> Self {
        self.page_limit = Some(limit.max(1));
        self
    }

    pub fn tables(&self) -> &DynamoTables {
        &self.tables
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
