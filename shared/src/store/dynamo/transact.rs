//! Conditional writes and transactions: the conditions, the outcome of a
//! TransactWriteItems (committed, or cancelled with a code per item), and the retry of
//! a write that racing writers defeat.
//!
//! Uniqueness and single use rest on these, never on a read followed by a write.

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};

use super::batch::backoff;
use super::codec::Item;
use super::{DynamoStore, corrupt, sdk_error};
use crate::store::StoreError;

/// Attempts at a transaction that another one keeps cancelling (conflicts, or a
/// condition that fails because of a racing writer and needs a fresh read).
const TRANSACTION_ATTEMPTS: u32 = 6;

impl DynamoStore {
    /// One TransactWriteItems. A cancelled transaction (nothing written) is not an
    /// error: it returns its cancellation reasons, one code per item in request order
    /// (`None` for an item that did not fail).
    pub(super) async fn transact(
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
pub(super) enum Committed {
    Yes,
    /// Cancelled, nothing written; the cancellation code of each item.
    No(Vec<String>),
}

impl Committed {
    /// Whether item `index`'s condition failed.
    pub(super) fn condition_failed(&self, index: usize) -> bool {
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
    pub(super) fn retry<T>(&self, op: &'static str) -> Result<Attempt<T>, StoreError> {
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
pub(super) enum Attempt<T> {
    Done(T),
    /// Cancelled by a conflicting transaction, or throttled: again after a pause.
    Pause,
    /// Beaten by a racing writer: again at once, from a fresh read.
    Again,
}

/// Runs `attempt` until it is done, at most `TRANSACTION_ATTEMPTS` times, with
/// backoff before a try that follows a [`Attempt::Pause`].
pub(super) async fn contended<T, F, Fut>(op: &'static str, mut attempt: F) -> Result<T, StoreError>
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
pub(super) fn conditional<O, E: ProvideErrorMetadata, R>(
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
pub(super) struct Condition {
    expression: Option<String>,
    names: Option<HashMap<String, String>>,
    values: Option<HashMap<String, AttributeValue>>,
}

pub(super) fn condition(
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

/// An update expression's names and values, without a condition.
pub(super) fn expression_values(
    names: &[(&str, &str)],
    values: Vec<(&str, AttributeValue)>,
) -> Option<Condition> {
    let mut out = condition("", names, values)?;
    out.expression = None;
    Some(out)
}

/// A transaction Put, with an optional condition.
pub(super) fn tx_put(
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
pub(super) fn tx_delete(
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

/// A transaction ConditionCheck: `condition` must hold on the item at `key`, which is
/// not written.
pub(super) fn tx_check(
    op: &'static str,
    table: &str,
    key: Item,
    condition: Option<Condition>,
) -> Result<TransactWriteItem, StoreError> {
    let condition = condition.unwrap_or_default();
    let check = ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(key))
        .set_condition_expression(condition.expression)
        .set_expression_attribute_names(condition.names)
        .set_expression_attribute_values(condition.values)
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(TransactWriteItem::builder().condition_check(check).build())
}

/// A transaction Update of `key` by `expression`, with an optional condition; the
/// expression's own names and values go in with the condition's.
pub(super) fn tx_update(
    op: &'static str,
    table: &str,
    key: Item,
    expression: &str,
    condition: Option<Condition>,
) -> Result<TransactWriteItem, StoreError> {
    let condition = condition.unwrap_or_default();
    let update = Update::builder()
        .table_name(table)
        .set_key(Some(key))
        .update_expression(expression)
        .set_condition_expression(condition.expression)
        .set_expression_attribute_names(condition.names)
        .set_expression_attribute_values(condition.values)
        .build()
        .map_err(|_| corrupt(op))?;
    Ok(TransactWriteItem::builder().update(update).build())
}
