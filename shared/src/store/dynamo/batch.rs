//! Requests over many items: batch writes of 25 and batch gets of 100, a few in
//! flight at once, unprocessed items retried with backoff, and Query pagination.
//!
//! Knows nothing of what the items hold; callers build the requests.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{DeleteRequest, KeysAndAttributes, PutRequest, WriteRequest};
use tokio::task::JoinSet;

use super::codec::{Item, s};
use super::schema::{PK, SK};
use super::{DynamoStore, corrupt, sdk_error};
use crate::store::StoreError;

/// BatchWriteItem's limit.
const WRITE_CHUNK: usize = 25;

/// BatchGetItem's limit.
pub(super) const GET_CHUNK: usize = 100;

/// Batch requests in flight at once per call.
const PARALLEL_REQUESTS: usize = 4;

/// Attempts at a batch's unprocessed items before giving up (backoff in between).
const BATCH_ATTEMPTS: u32 = 8;

impl DynamoStore {
    /// Writes (puts or deletes) any number of requests: 25 a batch, a few batches in flight.
    pub(super) async fn write_all(
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
    pub(super) async fn delete_prefixed(
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

pub(super) fn put_request(op: &'static str, item: Item) -> Result<WriteRequest, StoreError> {
    let put = PutRequest::builder()
        .set_item(Some(item))
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(WriteRequest::builder().put_request(put).build())
}

/// Runs the tasks with at most `PARALLEL_REQUESTS` in flight; results in completion order.
/// The first failure stops the rest.
pub(super) async fn bounded<T, F>(
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
                    // Its calls are spans of the request that made them.
                    running.spawn(crate::observe::carry(task));
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
pub(super) async fn get_batch(
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
pub(super) async fn query_all(
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

/// Exponential backoff with jitter: ~50 ms, 100 ms, ... capped at 2 s.
pub(super) fn backoff(attempt: u32) -> Duration {
    let ceiling = 50u64.saturating_mul(1 << attempt.min(6)).min(2_000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = u64::from(nanos) % (ceiling / 2 + 1);
    Duration::from_millis(ceiling / 2 + jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(0) <= Duration::from_millis(50));
        assert!(backoff(3) >= Duration::from_millis(200));
        assert!(backoff(30) <= Duration::from_secs(2));
    }
}
