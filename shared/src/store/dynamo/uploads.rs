//! [`UploadStore`] on DynamoDB.
//!
//! - Data table `upload#<id>` under the owner: the record, its mutable fields as
//!   attributes of their own (`status`, `bytes`, `rows_read`, `rows_written`,
//!   `progress`, optional `error_line`, `error_message`, `finished_at`), so starting an
//!   import is one conditional UpdateItem (`status = waiting`). Ids are time-ordered,
//!   so a reverse Query of the prefix lists the newest first.
//! - Keys table `upload-object#<object key>`: `user_id` and `upload_id`, the way from
//!   an S3 event (which names only the object) to the record; `expires_at` as TTL.
//!
//! Never logs a user id, a file name or an object key.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

use super::codec::{Item, get_opt_u64, get_s, get_u64, n, s};
use super::schema::{EXPIRES_AT, KEY, PK, SK};
use super::transact::conditional;
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{UploadFailure, UploadKind, UploadRecord, UploadStatus};
use crate::store::{MAX_LISTED_UPLOADS, StoreError, UploadOutcome, UploadStore};

const UPLOAD_PREFIX: &str = "upload#";
/// When the running import last reported (see `UploadRecord::active_at`).
const ACTIVE_AT: &str = "active_at";
const UPLOAD_OBJECT_PREFIX: &str = "upload-object#";

pub(super) fn upload_sk(id: &str) -> String {
    format!("{UPLOAD_PREFIX}{id}")
}

fn f(value: f64) -> AttributeValue {
    AttributeValue::N(value.clamp(0.0, 1.0).to_string())
}

fn record_item(record: &UploadRecord) -> Item {
    let mut item = HashMap::from([
        (PK.to_string(), s(record.user.as_str())),
        (SK.to_string(), s(upload_sk(&record.id))),
        ("id".to_string(), s(record.id.as_str())),
        ("object_key".to_string(), s(record.object_key.as_str())),
        ("kind".to_string(), s(record.kind.as_str())),
        ("filename".to_string(), s(record.filename.as_str())),
        ("status".to_string(), s(record.status.as_str())),
        ("bytes".to_string(), n(record.bytes)),
        ("rows_read".to_string(), n(record.rows_read)),
        ("rows_written".to_string(), n(record.rows_written)),
        ("progress".to_string(), f(record.progress)),
        ("created_at".to_string(), n(record.created_at)),
        (EXPIRES_AT.to_string(), n(record.expires_at)),
    ]);
    if let Some(error) = &record.error {
        item.insert("error_message".into(), s(error.message.as_str()));
        if let Some(line) = error.line {
            item.insert("error_line".into(), n(line));
        }
    }
    if let Some(at) = record.finished_at {
        item.insert("finished_at".into(), n(at));
    }
    if let Some(at) = record.active_at {
        item.insert(ACTIVE_AT.into(), n(at));
    }
    item
}

fn record_from_item(op: &'static str, item: &Item) -> Result<UploadRecord, StoreError> {
    let progress = match item.get("progress") {
        Some(AttributeValue::N(v)) => v.parse::<f64>().map_err(|_| corrupt(op))?,
        _ => return Err(corrupt(op)),
    };
    let error = match item.get("error_message") {
        Some(AttributeValue::S(message)) => Some(UploadFailure {
            line: get_opt_u64(op, item, "error_line")?,
            message: message.clone(),
        }),
        _ => None,
    };
    Ok(UploadRecord {
        id: get_s(op, item, "id")?,
        user: get_s(op, item, PK)?,
        kind: UploadKind::parse(&get_s(op, item, "kind")?).ok_or_else(|| corrupt(op))?,
        filename: get_s(op, item, "filename")?,
        object_key: get_s(op, item, "object_key")?,
        status: UploadStatus::parse(&get_s(op, item, "status")?).ok_or_else(|| corrupt(op))?,
        bytes: get_u64(op, item, "bytes")?,
        rows_read: get_u64(op, item, "rows_read")?,
        rows_written: get_u64(op, item, "rows_written")?,
        progress,
        error,
        created_at: get_u64(op, item, "created_at")?,
        finished_at: get_opt_u64(op, item, "finished_at")?,
        active_at: get_opt_u64(op, item, ACTIVE_AT)?,
        expires_at: get_u64(op, item, EXPIRES_AT)?,
        counts: match item.get("counts") {
            Some(AttributeValue::S(text)) => serde_json::from_str(text).ok(),
            _ => None,
        },
    })
}

impl DynamoStore {
    async fn upload_record(
        &self,
        op: &'static str,
        user: &str,
        id: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError> {
        let record = self
            .data_item(op, user, upload_sk(id))
            .await?
            .map(|item| record_from_item(op, &item))
            .transpose()?;
        // TTL deletion lags (and the data table has none): expiry is checked here.
        Ok(record.filter(|r| r.expires_at > now))
    }
}

#[async_trait]
impl UploadStore for DynamoStore {
    async fn create_upload(&self, record: &UploadRecord) -> Result<(), StoreError> {
        let op = "create_upload";
        let pointer = HashMap::from([
            (
                KEY.to_string(),
                s(format!("{UPLOAD_OBJECT_PREFIX}{}", record.object_key)),
            ),
            ("user_id".to_string(), s(record.user.as_str())),
            ("upload_id".to_string(), s(record.id.as_str())),
            (EXPIRES_AT.to_string(), n(record.expires_at)),
        ]);
        self.put_key_item(op, pointer).await?;
        self.client
            .put_item()
            .table_name(&self.tables.data)
            .set_item(Some(record_item(record)))
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        Ok(())
    }

    async fn upload(
        &self,
        user: &str,
        id: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError> {
        self.upload_record("upload", user, id, now).await
    }

    async fn upload_by_object(
        &self,
        object_key: &str,
        now: u64,
    ) -> Result<Option<UploadRecord>, StoreError> {
        let op = "upload_by_object";
        let Some(pointer) = self
            .key_item(op, format!("{UPLOAD_OBJECT_PREFIX}{object_key}"))
            .await?
        else {
            return Ok(None);
        };
        if get_u64(op, &pointer, EXPIRES_AT)? <= now {
            return Ok(None);
        }
        let user = get_s(op, &pointer, "user_id")?;
        let id = get_s(op, &pointer, "upload_id")?;
        self.upload_record(op, &user, &id, now).await
    }

    async fn recent_uploads(
        &self,
        user: &str,
        limit: usize,
        now: u64,
    ) -> Result<Vec<UploadRecord>, StoreError> {
        let op = "recent_uploads";
        let limit = limit.clamp(1, MAX_LISTED_UPLOADS);
        // One page, newest first: the records are small, `limit` of them fit.
        let out = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(UPLOAD_PREFIX))
            .scan_index_forward(false)
            .limit(limit as i32)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        let mut records = Vec::new();
        for item in out.items() {
            let record = record_from_item(op, item)?;
            if record.expires_at > now {
                records.push(record);
            }
        }
        Ok(records)
    }

    async fn start_upload(
        &self,
        user: &str,
        id: &str,
        bytes: u64,
        now: u64,
    ) -> Result<bool, StoreError> {
        let op = "start_upload";
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(upload_sk(id)))
            .update_expression("SET #st = :importing, #bytes = :bytes, #active = :now")
            .condition_expression("#st = :waiting")
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#bytes", "bytes")
            .expression_attribute_names("#active", ACTIVE_AT)
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":importing", s(UploadStatus::Importing.as_str()))
            .expression_attribute_values(":waiting", s(UploadStatus::Waiting.as_str()))
            .expression_attribute_values(":bytes", n(bytes))
            .send()
            .await;
        Ok(conditional(op, result)?.is_some())
    }

    async fn upload_progress(
        &self,
        user: &str,
        id: &str,
        rows_read: u64,
        rows_written: u64,
        progress: f64,
        now: u64,
    ) -> Result<(), StoreError> {
        let op = "upload_progress";
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(upload_sk(id)))
            .update_expression(
                "SET rows_read = :r, rows_written = :w, progress = :p, #active = :now",
            )
            .condition_expression("attribute_exists(#sk)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_names("#active", ACTIVE_AT)
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":r", n(rows_read))
            .expression_attribute_values(":w", n(rows_written))
            .expression_attribute_values(":p", f(progress))
            .send()
            .await;
        conditional(op, result)?;
        Ok(())
    }

    async fn fail_stalled_upload(
        &self,
        user: &str,
        id: &str,
        silent_since: u64,
        failure: &UploadFailure,
        now: u64,
    ) -> Result<bool, StoreError> {
        let op = "fail_stalled_upload";
        let result = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(upload_sk(id)))
            .update_expression(
                "SET #st = :failed, finished_at = :now, error_message = :msg \
                 REMOVE error_line",
            )
            .condition_expression(
                "#st = :importing AND (attribute_not_exists(#active) OR #active < :since)",
            )
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#active", ACTIVE_AT)
            .expression_attribute_values(":failed", s(UploadStatus::Failed.as_str()))
            .expression_attribute_values(":importing", s(UploadStatus::Importing.as_str()))
            .expression_attribute_values(":msg", s(failure.message.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":since", n(silent_since))
            .send()
            .await;
        Ok(conditional(op, result)?.is_some())
    }

    async fn finish_upload(
        &self,
        user: &str,
        id: &str,
        outcome: &UploadOutcome,
        finished_at: u64,
    ) -> Result<(), StoreError> {
        let op = "finish_upload";
        let update = self
            .client
            .update_item()
            .table_name(&self.tables.data)
            .key(PK, s(user))
            .key(SK, s(upload_sk(id)))
            .condition_expression("#st = :importing")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":importing", s(UploadStatus::Importing.as_str()))
            .expression_attribute_values(":at", n(finished_at));
        let update = match outcome {
            UploadOutcome::Done(counts) => {
                let update = update
                    .expression_attribute_values(":st", s(UploadStatus::Done.as_str()))
                    .expression_attribute_values(":one", f(1.0));
                match counts.and_then(|c| serde_json::to_string(&c).ok()) {
                    Some(counts) => update
                        .update_expression(
                            "SET #st = :st, finished_at = :at, progress = :one, counts = :c",
                        )
                        .expression_attribute_values(":c", s(counts)),
                    None => update
                        .update_expression("SET #st = :st, finished_at = :at, progress = :one"),
                }
            }
            UploadOutcome::Failed(failure) => {
                let update = update
                    .expression_attribute_values(":st", s(UploadStatus::Failed.as_str()))
                    .expression_attribute_values(":msg", s(failure.message.as_str()));
                match failure.line {
                    Some(line) => update
                        .update_expression(
                            "SET #st = :st, finished_at = :at, error_message = :msg, \
                             error_line = :line",
                        )
                        .expression_attribute_values(":line", n(line)),
                    None => update.update_expression(
                        "SET #st = :st, finished_at = :at, error_message = :msg \
                         REMOVE error_line",
                    ),
                }
            }
        };
        conditional(op, update.send().await)?;
        Ok(())
    }

    async fn delete_uploads(&self, user: &str) -> Result<(), StoreError> {
        let op = "delete_uploads";
        let items = super::batch::query_all(
            op,
            self.user_query(user)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(UPLOAD_PREFIX))
                .projection_expression("#pk, #sk, object_key"),
            self.page_limit,
        )
        .await?;
        for item in &items {
            // The pointer first: a retry still finds it through the record.
            let object_key = get_s(op, item, "object_key")?;
            self.client
                .delete_item()
                .table_name(&self.tables.keys)
                .key(KEY, s(format!("{UPLOAD_OBJECT_PREFIX}{object_key}")))
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
        }
        self.delete_prefixed(op, user, UPLOAD_PREFIX).await
    }
}
