//! Readings on DynamoDB, laid out so a query costs what its answer costs:
//! one item per indicator per day holding that day's readings (a CGM's 288 readings a
//! day are one write), a rollup item per day and per month, and one catalogue item per
//! indicator (keys in [`schema`](super::schema)).
//!
//! A write merges into the day item by (time, source) and rewrites the day's rollup in
//! the same transaction, conditioned on the day item's version (a racing writer's
//! readings are never lost: the loser reads again and retries). Months are then rebuilt
//! from their days and catalogue entries from their months, each a conditional write on
//! its own version, so they stay exact too. The day transaction records the rebuilds it
//! owes ([`pending`](super::pending)), so a writer stopped in between leaves them to
//! the next catalogue read instead of leaving the months behind the days.
//!
//! Never logs a reading.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, KeysAndAttributes, TransactWriteItem, WriteRequest,
};
use serde::{Deserialize, Serialize};

use super::batch::{GET_CHUNK, backoff, bounded, get_batch, query_all};
use super::codec::{Item, get_s, s};
use super::health::legacy_reading;
use super::schema::{
    CATALOGUE_PREFIX, DAY_PREFIX, DAY_ROLLUP_PREFIX, MONTH_ROLLUP_PREFIX, OWED_PREFIX, PART_COUNT,
    PARTS, PK, READING_PREFIX, ROLLUP, SK, VERSION, data_key, day_part_sk, owed_sk, rollup_sk,
};
use super::transact::{Committed, Condition, condition, tx_check, tx_delete, tx_put};
use super::{DynamoStore, corrupt, pending, sdk_error};
use crate::domain::{Original, Reading, ReadingValue, UploadStatus};
use crate::store::{
    CatalogueEntry, Period, ReadingQuery, Rollup, StoreError, TIME_MAX, WriteReport,
};

/// Bytes of readings (as JSON) one part of a day item holds (DynamoDB items stop at
/// 400 KB; a day with more readings than one part holds takes several).
const PART_BUDGET: usize = 300_000;

/// Parts one day may take: a day is written in one transaction (4 MB at most).
const MAX_PARTS: usize = 12;

/// Days read (one BatchGetItem) and written (as few transactions as fit) together.
const DAYS_PER_BATCH: usize = 50;

/// Month or catalogue rollups rebuilt in one transaction.
const REFRESH_PER_BATCH: usize = 50;

/// TransactWriteItems' limits: 100 items, 4 MB (kept under).
const TRANSACTION_ITEMS: usize = 100;

const TRANSACTION_BYTES: usize = 3_500_000;

/// Attempts at a batch that racing writers keep defeating.
const MERGE_ATTEMPTS: u32 = 8;

/// How a write meets the readings a day item already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// A written reading replaces the held one of its identity (uploads).
    Replace,
    /// A held reading stays (the migration from the per-reading layout).
    KeepExisting,
    /// The day holds exactly the written readings afterwards (the measures catalogue migration,
    /// moving readings to their measure's key); an empty day is deleted.
    WholeDay,
}

/// New readings of one indicator on one day, by (time, source).
#[derive(Debug, Clone)]
struct DayGroup {
    key: String,
    day: String,
    rows: HashMap<(String, String), Reading>,
}

/// One transaction of day writes being assembled: its groups, items and bytes, what it
/// does to the store, and the (key, month) rebuilds it owes.
#[derive(Debug, Default)]
struct DayTransaction {
    groups: Vec<DayGroup>,
    items: Vec<TransactWriteItem>,
    bytes: usize,
    counts: WriteReport,
    owed: BTreeSet<(String, String)>,
}

/// Readings grouped by indicator and day; the last of a repeated identity wins, as
/// writing one at a time would.
fn day_groups(readings: &[Reading]) -> Vec<DayGroup> {
    let mut groups: BTreeMap<(String, String), HashMap<(String, String), Reading>> =
        BTreeMap::new();
    for r in readings {
        let key = Reading::indicator_key(&r.indicator);
        let day = Period::Day.of(&r.time).to_string();
        groups
            .entry((key, day))
            .or_default()
            .insert((r.time.clone(), r.source.clone()), r.clone());
    }
    groups
        .into_iter()
        .map(|((key, day), rows)| DayGroup { key, day, rows })
        .collect()
}

/// A rollup to rebuild: its sort key and period, and the range of its sources.
#[derive(Debug, Clone)]
pub(super) struct Refresh {
    target: String,
    period: String,
    low: String,
    high: String,
}

impl Refresh {
    /// A month's rollup, from its days.
    pub(super) fn month(key: &str, month: &str) -> Refresh {
        Refresh {
            target: rollup_sk(MONTH_ROLLUP_PREFIX, key, month),
            low: rollup_sk(DAY_ROLLUP_PREFIX, key, month),
            high: rollup_sk(DAY_ROLLUP_PREFIX, key, &format!("{month}{TIME_MAX}")),
            period: month.to_string(),
        }
    }

    /// A catalogue entry, from its months.
    pub(super) fn entry(key: &str) -> Refresh {
        Refresh {
            target: format!("{CATALOGUE_PREFIX}{key}"),
            low: rollup_sk(MONTH_ROLLUP_PREFIX, key, ""),
            high: rollup_sk(MONTH_ROLLUP_PREFIX, key, TIME_MAX),
            period: String::new(),
        }
    }
}

/// What must still hold for a guarded write to land, checked as the first item of
/// every transaction the write makes.
///
/// - `Import`: the user's upload must still be importing, so a deletion (which removes
///   the user's uploads first) and an import's writes exclude each other.
/// - `Owed`: a rebuild owed (see [`pending`](super::pending)) must still be there, so a
///   repair never writes after a deletion removed it.
///
/// Guarded transactions run one at a time: DynamoDB refuses concurrent transactions on
/// one item (`TransactionConflict`), the guard's included.
#[derive(Debug, Clone)]
pub(super) enum WriteGuard {
    Import { user: String, upload_id: String },
    Owed { user: String, sk: String },
}

impl WriteGuard {
    /// The guard's ConditionCheck.
    pub(super) fn check(
        &self,
        op: &'static str,
        table: &str,
    ) -> Result<TransactWriteItem, StoreError> {
        match self {
            WriteGuard::Import { user, upload_id } => {
                let key = data_key(user, super::uploads::upload_sk(upload_id));
                let importing = condition(
                    "#st = :importing",
                    &[("#st", "status")],
                    vec![(":importing", s(UploadStatus::Importing.as_str()))],
                );
                tx_check(op, table, key, importing)
            }
            WriteGuard::Owed { user, sk } => {
                let there = condition("attribute_exists(#pk)", &[("#pk", PK)], Vec::new());
                tx_check(op, table, data_key(user, sk.clone()), there)
            }
        }
    }
}

/// The transaction's items with the guard's check first (when there is a guard).
fn guarded(
    op: &'static str,
    table: &str,
    guard: Option<&WriteGuard>,
    items: Vec<TransactWriteItem>,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    match guard {
        None => Ok(items),
        Some(guard) => {
            let mut all = Vec::with_capacity(items.len() + 1);
            all.push(guard.check(op, table)?);
            all.extend(items);
            Ok(all)
        }
    }
}

/// Whether a cancelled guarded transaction failed on its guard (item 0).
fn guard_failed(guard: Option<&WriteGuard>, committed: &Committed) -> bool {
    guard.is_some() && committed.condition_failed(0)
}

/// Runs the batches: many at once ([`bounded`]) unguarded, one after another guarded
/// (see [`WriteGuard`]). Results in completion order; the first failure stops the rest.
async fn in_turn<T, F>(
    op: &'static str,
    guard: Option<&WriteGuard>,
    batches: Vec<F>,
) -> Result<Vec<T>, StoreError>
where
    T: Send + 'static,
    F: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
{
    if guard.is_none() {
        return bounded(op, batches.into_iter()).await;
    }
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        out.push(batch.await?);
    }
    Ok(out)
}

/// What a reading has besides its time and value, shared by the readings of a part
/// that have it in common.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Meta {
    n: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    u: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<String>,
    s: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Row {
    t: String,
    v: ReadingValue,
    /// The UTC offset the time came with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    z: Option<String>,
    /// What was sent, when the catalogue changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    o: Option<Original>,
    /// Index into the part's metas.
    #[serde(default, skip_serializing_if = "is_zero")]
    m: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One part of a day item: the `r` attribute, as JSON.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Part {
    m: Vec<Meta>,
    r: Vec<Row>,
}

fn meta_of(r: &Reading) -> Meta {
    Meta {
        n: r.indicator.clone(),
        u: r.unit.clone(),
        cs: r.code_system.clone(),
        c: r.code.clone(),
        s: r.source.clone(),
    }
}

/// A value as kept: a finite number, or text (a non-finite number as its text, as the
/// per-reading layout kept it).
fn stored_value(value: &ReadingValue) -> ReadingValue {
    match value {
        ReadingValue::Number(n) if !n.is_finite() => ReadingValue::Text(n.to_string()),
        v => v.clone(),
    }
}

/// A day's readings (sorted by time, source) as parts of at most [`PART_BUDGET`] bytes.
fn encode_parts(op: &'static str, readings: &[&Reading]) -> Result<Vec<String>, StoreError> {
    let mut parts = Vec::new();
    let mut part = Part::default();
    let mut size = 0;
    for r in readings {
        let meta = meta_of(r);
        let (index, meta_size) = match part.m.iter().position(|m| *m == meta) {
            Some(i) => (i, 0),
            None => (
                part.m.len(),
                serde_json::to_string(&meta).map_err(|_| corrupt(op))?.len() + 1,
            ),
        };
        let row = Row {
            t: r.time.clone(),
            v: stored_value(&r.value),
            z: r.offset.clone(),
            o: r.original.clone(),
            m: index,
        };
        let row_size = serde_json::to_string(&row).map_err(|_| corrupt(op))?.len() + 1;
        if size + row_size + meta_size > PART_BUDGET && !part.r.is_empty() {
            parts.push(serde_json::to_string(&std::mem::take(&mut part)).map_err(|_| corrupt(op))?);
            size = 0;
            // The meta goes into the new part.
            let meta_size = serde_json::to_string(&meta).map_err(|_| corrupt(op))?.len() + 1;
            part.m.push(meta);
            size += meta_size;
            part.r.push(Row { m: 0, ..row });
            size += row_size;
            continue;
        }
        if meta_size > 0 {
            part.m.push(meta);
        }
        part.r.push(row);
        size += row_size + meta_size;
    }
    if !part.r.is_empty() {
        parts.push(serde_json::to_string(&part).map_err(|_| corrupt(op))?);
    }
    Ok(parts)
}

fn decode_part(op: &'static str, item: &Item) -> Result<Vec<Reading>, StoreError> {
    let text = get_s(op, item, PARTS)?;
    let part: Part = serde_json::from_str(&text).map_err(|_| corrupt(op))?;
    part.r
        .into_iter()
        .map(|row| {
            let meta = part.m.get(row.m).ok_or_else(|| corrupt(op))?;
            Ok(Reading {
                indicator: meta.n.clone(),
                value: row.v,
                unit: meta.u.clone(),
                time: row.t,
                code_system: meta.cs.clone(),
                code: meta.c.clone(),
                source: meta.s.clone(),
                offset: row.z,
                original: row.o,
            })
        })
        .collect()
}

fn decode_parts(op: &'static str, items: &[Item]) -> Result<Vec<Reading>, StoreError> {
    let mut out = Vec::new();
    for item in items {
        out.extend(decode_part(op, item)?);
    }
    Ok(out)
}

fn version_of(item: Option<&Item>) -> Option<u64> {
    match item?.get(VERSION) {
        Some(AttributeValue::N(v)) => v.parse().ok(),
        _ => None,
    }
}

fn rollup_of(op: &'static str, item: &Item) -> Result<Rollup, StoreError> {
    serde_json::from_str(&get_s(op, item, ROLLUP)?).map_err(|_| corrupt(op))
}

fn rollup_item(
    op: &'static str,
    user: &str,
    sk: String,
    rollup: &Rollup,
    version: Option<u64>,
) -> Result<Item, StoreError> {
    let mut item = data_key(user, sk);
    item.insert(
        ROLLUP.to_string(),
        s(serde_json::to_string(rollup).map_err(|_| corrupt(op))?),
    );
    if let Some(v) = version {
        item.insert(VERSION.to_string(), AttributeValue::N(v.to_string()));
    }
    Ok(item)
}

/// The condition "the item still has the version read" (absent: still absent).
fn unchanged(version: Option<u64>) -> Option<Condition> {
    match version {
        Some(v) => condition(
            "#v = :v",
            &[("#v", VERSION)],
            vec![(":v", AttributeValue::N(v.to_string()))],
        ),
        None => condition("attribute_not_exists(#pk)", &[("#pk", PK)], Vec::new()),
    }
}

impl DynamoStore {
    /// Writes readings into the day items, then rebuilds the touched months and
    /// catalogue entries. Returns what the write did. With `keep_existing` (the
    /// migration), a reading already in a day item stays as it is.
    pub(super) async fn put_day_readings(
        &self,
        user: &str,
        readings: &[Reading],
        keep_existing: bool,
        guard: Option<&WriteGuard>,
    ) -> Result<WriteReport, StoreError> {
        let merge = if keep_existing {
            Merge::KeepExisting
        } else {
            Merge::Replace
        };
        self.write_days(user, day_groups(readings), merge, guard)
            .await
    }

    /// A writer stopped right after its day transactions (a test of what it leaves).
    #[cfg(test)]
    pub(super) async fn write_days_only(
        &self,
        user: &str,
        readings: &[Reading],
    ) -> Result<(), StoreError> {
        self.merge_days(user, day_groups(readings), Merge::Replace, None)
            .await
            .map(drop)
    }

    /// Writes day groups, then rebuilds their months and catalogue entries.
    async fn write_days(
        &self,
        user: &str,
        groups: Vec<DayGroup>,
        merge: Merge,
        guard: Option<&WriteGuard>,
    ) -> Result<WriteReport, StoreError> {
        let op = "put_readings";
        let months: BTreeSet<(String, String)> = groups
            .iter()
            .map(|g| (g.key.clone(), Period::Month.of(&g.day).to_string()))
            .collect();
        let keys: BTreeSet<String> = months.iter().map(|(key, _)| key.clone()).collect();
        let user = user.to_string();
        let batches = groups
            .chunks(DAYS_PER_BATCH)
            .map(|chunk| {
                let (store, user, chunk) = (self.clone(), user.clone(), chunk.to_vec());
                let guard = guard.cloned();
                async move { store.merge_days(&user, chunk, merge, guard.as_ref()).await }
            })
            .collect::<Vec<_>>();
        let mut report = WriteReport::default();
        let mut owed = Vec::new();
        for (part, marks) in in_turn(op, guard, batches).await? {
            report.add(part);
            owed.extend(marks);
        }
        // Months from their days, then catalogue entries from their months.
        let months: Vec<Refresh> = months
            .iter()
            .map(|(key, month)| Refresh::month(key, month))
            .collect();
        let entries: Vec<Refresh> = keys.iter().map(|key| Refresh::entry(key)).collect();
        for level in [months, entries] {
            let batches = level
                .chunks(REFRESH_PER_BATCH)
                .map(|chunk| {
                    let (store, user, chunk) = (self.clone(), user.clone(), chunk.to_vec());
                    let guard = guard.cloned();
                    async move { store.refresh(&user, chunk, guard.as_ref()).await }
                })
                .collect::<Vec<_>>();
            in_turn(op, guard, batches).await?;
        }
        // Rebuilt: nothing is owed any more.
        self.settle(op, &user, owed).await?;
        Ok(report)
    }

    /// The current parts of each day (part `00` by BatchGetItem; the rest, for the rare
    /// day with several, by Query), in the order of `days`.
    async fn read_days(
        &self,
        op: &'static str,
        user: &str,
        days: &[DayGroup],
    ) -> Result<Vec<Vec<Item>>, StoreError> {
        let keys = days
            .iter()
            .map(|d| data_key(user, day_part_sk(&d.key, &d.day, 0)))
            .collect();
        let mut heads = self.get_items(op, keys).await?;
        let mut out = Vec::with_capacity(days.len());
        for d in days {
            let head = heads.remove(&day_part_sk(&d.key, &d.day, 0));
            let parts = head.as_ref().and_then(|h| match h.get(PART_COUNT) {
                Some(AttributeValue::N(n)) => n.parse::<usize>().ok(),
                _ => None,
            });
            out.push(match (head, parts) {
                (None, _) => Vec::new(),
                (Some(head), Some(1) | None) => vec![head],
                (Some(_), Some(_)) => self.day_parts(op, user, &d.key, &d.day).await?,
            });
        }
        Ok(out)
    }

    /// Items by key (consistent BatchGetItem, 100 a request), by sort key.
    async fn get_items(
        &self,
        op: &'static str,
        keys: Vec<Item>,
    ) -> Result<HashMap<String, Item>, StoreError> {
        let mut found = HashMap::new();
        for chunk in keys.chunks(GET_CHUNK) {
            let request = KeysAndAttributes::builder()
                .set_keys(Some(chunk.to_vec()))
                .consistent_read(true)
                .build()
                .map_err(|_| corrupt(op))?;
            let items =
                get_batch(self.client.clone(), self.tables.data.clone(), op, request).await?;
            for item in items {
                found.insert(get_s(op, &item, SK)?, item);
            }
        }
        Ok(found)
    }

    /// Every part of one day item, in part order.
    async fn day_parts(
        &self,
        op: &'static str,
        user: &str,
        key: &str,
        day: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(format!("{DAY_PREFIX}{key}#{day}#")));
        query_all(op, q, self.page_limit).await
    }

    /// Merges each group's readings into its day item and rewrites the day's rollup;
    /// many days a transaction, each conditioned on the version read. Days whose
    /// transaction a racing writer defeated are read again and retried.
    async fn merge_days(
        &self,
        user: &str,
        mut pending: Vec<DayGroup>,
        merge: Merge,
        guard: Option<&WriteGuard>,
    ) -> Result<(WriteReport, Vec<String>), StoreError> {
        let op = "put_readings";
        let table = self.tables.data.as_str();
        let room = TRANSACTION_ITEMS - usize::from(guard.is_some());
        let mut report = WriteReport::default();
        // The rebuilds owed by committed transactions (see `pending`).
        let mut owed = Vec::new();
        for attempt in 0..MERGE_ATTEMPTS {
            if pending.is_empty() {
                return Ok((report, owed));
            }
            let current = self.read_days(op, user, &pending).await?;
            let mut transactions = vec![DayTransaction::default()];
            for (group, old) in pending.iter().zip(&current) {
                let version = version_of(old.first());
                let held: BTreeMap<(String, String), Reading> = decode_parts(op, old)?
                    .into_iter()
                    .map(|r| ((r.time.clone(), r.source.clone()), r))
                    .collect();
                let mut merged = if merge == Merge::WholeDay {
                    BTreeMap::new()
                } else {
                    held.clone()
                };
                let mut counts = WriteReport::default();
                for (identity, reading) in &group.rows {
                    let before = held.get(identity).map(|r| (&r.value, r.unit.as_deref()));
                    counts.count(before, reading);
                    if merge == Merge::KeepExisting {
                        merged
                            .entry(identity.clone())
                            .or_insert_with(|| reading.clone());
                    } else {
                        merged.insert(identity.clone(), reading.clone());
                    }
                }
                let all: Vec<&Reading> = merged.values().collect();
                let parts = encode_parts(op, &all)?;
                if parts.len() > MAX_PARTS {
                    tracing::warn!(
                        operation = op,
                        "dynamodb store: a day holds too many readings"
                    );
                    return Err(StoreError::Unavailable(format!("{op}: day too large")));
                }
                let owned: Vec<Reading> = merged.into_values().collect();
                let rollup = Rollup::of(&group.day, &owned);
                let mut items = Vec::with_capacity(parts.len() + 2);
                let mut bytes = 0;
                for (i, part) in parts.iter().enumerate() {
                    bytes += part.len() + 100;
                    let mut item = data_key(user, day_part_sk(&group.key, &group.day, i));
                    item.insert(PARTS.to_string(), s(part.as_str()));
                    let condition = if i == 0 {
                        item.insert(
                            VERSION.to_string(),
                            AttributeValue::N((version.unwrap_or(0) + 1).to_string()),
                        );
                        item.insert(
                            PART_COUNT.to_string(),
                            AttributeValue::N(parts.len().to_string()),
                        );
                        unchanged(version)
                    } else {
                        None
                    };
                    items.push(tx_put(op, table, item, condition)?);
                }
                for i in parts.len()..old.len() {
                    let key = data_key(user, day_part_sk(&group.key, &group.day, i));
                    items.push(tx_delete(op, table, key, None)?);
                }
                let sk = rollup_sk(DAY_ROLLUP_PREFIX, &group.key, &group.day);
                bytes += 1000;
                match rollup {
                    Some(rollup) => {
                        let rollup = rollup_item(op, user, sk, &rollup, None)?;
                        items.push(tx_put(op, table, rollup, None)?);
                    }
                    // An emptied day (moved to another key): its rollup goes too.
                    None => items.push(tx_delete(op, table, data_key(user, sk), None)?),
                }
                let month = (group.key.clone(), Period::Month.of(&group.day).to_string());
                let last = transactions.last_mut().ok_or_else(|| corrupt(op))?;
                let marks = last.owed.len() + usize::from(!last.owed.contains(&month));
                if last.items.len() + items.len() + marks > room
                    || last.bytes + bytes > TRANSACTION_BYTES
                {
                    transactions.push(DayTransaction::default());
                }
                let last = transactions.last_mut().ok_or_else(|| corrupt(op))?;
                last.groups.push(group.clone());
                last.items.extend(items);
                last.bytes += bytes;
                last.counts.add(counts);
                last.owed.insert(month);
            }
            let mut again = Vec::new();
            let mut pause = false;
            for transaction in transactions {
                let DayTransaction {
                    groups,
                    mut items,
                    counts,
                    owed: months,
                    ..
                } = transaction;
                if items.is_empty() {
                    continue;
                }
                let token = pending::token();
                let marks: Vec<String> = months
                    .iter()
                    .map(|(key, month)| owed_sk(key, month, &token))
                    .collect();
                for sk in &marks {
                    items.push(tx_put(op, table, data_key(user, sk.clone()), None)?);
                }
                match self.transact(op, guarded(op, table, guard, items)?).await? {
                    Committed::Yes => {
                        report.add(counts);
                        owed.extend(marks);
                    }
                    stopped if guard_failed(guard, &stopped) => {
                        return Err(StoreError::ImportStopped);
                    }
                    Committed::No(codes) => {
                        pause |= codes
                            .iter()
                            .any(|c| c != "None" && c != "ConditionalCheckFailed");
                        again.extend(groups);
                    }
                }
            }
            if pause {
                tokio::time::sleep(backoff(attempt)).await;
            }
            pending = again;
        }
        if pending.is_empty() {
            Ok((report, owed))
        } else {
            Err(StoreError::Unavailable(format!("{op}: contended")))
        }
    }

    /// Rebuilds rollups (months from their days, catalogue entries from their months):
    /// each target's version read, its sources merged, and written many a transaction
    /// on the condition that the version still holds; defeated ones are retried.
    pub(super) async fn refresh(
        &self,
        user: &str,
        pending: Vec<Refresh>,
        guard: Option<&WriteGuard>,
    ) -> Result<(), StoreError> {
        let op = "put_readings";
        let table = self.tables.data.as_str();
        for attempt in 0..MERGE_ATTEMPTS {
            if pending.is_empty() {
                return Ok(());
            }
            let keys = pending
                .iter()
                .map(|r| data_key(user, r.target.clone()))
                .collect();
            let current = self.get_items(op, keys).await?;
            let sources = pending.iter().map(|r| {
                let q = self
                    .user_query(user)
                    .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_values(":low", s(r.low.as_str()))
                    .expression_attribute_values(":high", s(r.high.as_str()));
                query_all(op, q, self.page_limit)
            });
            // In request order (`bounded` answers in completion order).
            let sources = sources
                .enumerate()
                .map(|(i, q)| async move { q.await.map(|items| (i, items)) });
            let mut sources = bounded(op, sources).await?;
            sources.sort_by_key(|(i, _)| *i);
            let mut items = Vec::with_capacity(pending.len());
            for (refresh, (_, found)) in pending.iter().zip(&sources) {
                let version = version_of(current.get(&refresh.target));
                let parts = found
                    .iter()
                    .map(|item| rollup_of(op, item))
                    .collect::<Result<Vec<_>, _>>()?;
                let parts = parts.iter().filter(|p| {
                    refresh.period.is_empty() || Period::Month.of(&p.period) == refresh.period
                });
                let condition = unchanged(version);
                items.push(match Rollup::merge(&refresh.period, parts) {
                    Some(rollup) => {
                        let next = Some(version.unwrap_or(0) + 1);
                        let item = rollup_item(op, user, refresh.target.clone(), &rollup, next)?;
                        tx_put(op, table, item, condition)?
                    }
                    None => {
                        let key = data_key(user, refresh.target.clone());
                        tx_delete(op, table, key, condition)?
                    }
                });
            }
            match self.transact(op, guarded(op, table, guard, items)?).await? {
                Committed::Yes => return Ok(()),
                stopped if guard_failed(guard, &stopped) => return Err(StoreError::ImportStopped),
                Committed::No(codes) => {
                    if codes
                        .iter()
                        .any(|c| c != "None" && c != "ConditionalCheckFailed")
                    {
                        tokio::time::sleep(backoff(attempt)).await;
                    }
                    // Nothing of a cancelled transaction is written: all again.
                }
            }
        }
        Err(StoreError::Unavailable(format!("{op}: contended")))
    }

    /// Rollups with `from <= period <= to` under one prefix and indicator, in order.
    pub(super) async fn rollup_range(
        &self,
        op: &'static str,
        user: &str,
        prefix: &str,
        key: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Rollup>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":low", s(rollup_sk(prefix, key, from)))
            .expression_attribute_values(":high", s(rollup_sk(prefix, key, to)));
        let items = query_all(op, q, self.page_limit).await?;
        items.iter().map(|item| rollup_of(op, item)).collect()
    }

    pub(super) async fn rollups_of(
        &self,
        user: &str,
        key: &str,
        period: Period,
        from: &str,
        to: &str,
    ) -> Result<Vec<Rollup>, StoreError> {
        let prefix = match period {
            Period::Day => DAY_ROLLUP_PREFIX,
            Period::Month => MONTH_ROLLUP_PREFIX,
        };
        self.rollup_range(
            "rollups",
            user,
            prefix,
            &Reading::indicator_key(key),
            from,
            to,
        )
        .await
    }

    /// The catalogue: one entry per indicator. Rebuilds a writer left owed are done
    /// first (see [`pending`](super::pending)), so the entries agree with the day items.
    pub(super) async fn catalogue_entries(
        &self,
        user: &str,
    ) -> Result<Vec<CatalogueEntry>, StoreError> {
        let (entries, owed) = self.catalogue_items(user).await?;
        if owed.is_empty() {
            return Ok(entries);
        }
        if self.repair(user, owed).await? == 0 {
            // Every marker went while we looked (its writer settled it): as read.
            return Ok(entries);
        }
        // Markers a live writer puts meanwhile are its own to settle.
        Ok(self.catalogue_items(user).await?.0)
    }

    /// The catalogue's entries and the sort keys of the markers among them.
    pub(super) async fn catalogue_items(
        &self,
        user: &str,
    ) -> Result<(Vec<CatalogueEntry>, Vec<String>), StoreError> {
        let op = "catalogue";
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(CATALOGUE_PREFIX));
        let items = query_all(op, q, self.page_limit).await?;
        let mut entries = Vec::with_capacity(items.len());
        let mut owed = Vec::new();
        for item in &items {
            let sk = get_s(op, item, SK)?;
            if sk.starts_with(OWED_PREFIX) {
                owed.push(sk);
                continue;
            }
            let key = sk
                .strip_prefix(CATALOGUE_PREFIX)
                .ok_or_else(|| corrupt(op))?
                .to_string();
            entries.push(CatalogueEntry {
                key,
                summary: rollup_of(op, item)?,
            });
        }
        Ok((entries, owed))
    }

    /// The readings matching the query, from the day items, ordered by indicator key,
    /// time and source.
    pub(super) async fn day_readings(
        &self,
        query: &ReadingQuery,
        user: &str,
    ) -> Result<Vec<Reading>, StoreError> {
        let op = "readings";
        let to = query.time_upper_bound();
        let from = query.from.clone().unwrap_or_default();
        if from > to {
            return Ok(Vec::new());
        }
        let items = match query.normalized_keys() {
            None => {
                let q = self
                    .user_query(user)
                    .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_values(":prefix", s(DAY_PREFIX));
                query_all(op, q, self.page_limit).await?
            }
            Some(keys) => {
                let day = Period::Day.of(&from).to_string();
                let queries = keys.into_iter().map(|key| {
                    let q = self
                        .user_query(user)
                        .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
                        .expression_attribute_names("#sk", SK)
                        .expression_attribute_values(":low", s(format!("{DAY_PREFIX}{key}#{day}")))
                        .expression_attribute_values(":high", s(format!("{DAY_PREFIX}{key}#{to}")));
                    query_all(op, q, self.page_limit)
                });
                bounded(op, queries).await?.into_iter().flatten().collect()
            }
        };
        let mut readings: Vec<Reading> = decode_parts(op, &items)?
            .into_iter()
            .filter(|r| r.time >= from && r.time <= to)
            .collect();
        readings.sort_by_cached_key(|r| {
            (
                Reading::indicator_key(&r.indicator),
                r.time.clone(),
                r.source.clone(),
            )
        });
        Ok(readings)
    }

    /// One indicator's newest `limit` readings in the window: day items newest first,
    /// a few at a time (sized from what the first ones held), until enough are read.
    pub(super) async fn newest_readings(
        &self,
        user: &str,
        key: &str,
        limit: usize,
        window: &ReadingQuery,
    ) -> Result<Vec<Reading>, StoreError> {
        let op = "latest_readings";
        let key = Reading::indicator_key(key);
        let to = window.time_upper_bound();
        let from = window.from.clone().unwrap_or_default();
        if from > to || limit == 0 {
            return Ok(Vec::new());
        }
        let day = Period::Day.of(&from).to_string();
        let q = self
            .user_query(user)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":low", s(format!("{DAY_PREFIX}{key}#{day}")))
            .expression_attribute_values(":high", s(format!("{DAY_PREFIX}{key}#{to}")))
            .scan_index_forward(false);
        let mut found: Vec<Reading> = Vec::new();
        let (mut items_read, mut start): (usize, Option<Item>) = (0, None);
        let mut page_size: i32 = 2;
        loop {
            let page_size_now = match self.page_limit {
                Some(cap) => page_size.min(cap),
                None => page_size,
            };
            let page = q
                .clone()
                .set_exclusive_start_key(start.take())
                .limit(page_size_now)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            let items = page.items.unwrap_or_default();
            items_read += items.len();
            found.extend(
                decode_parts(op, &items)?
                    .into_iter()
                    .filter(|r| r.time >= from && r.time <= to),
            );
            match page.last_evaluated_key {
                Some(next) if !next.is_empty() && found.len() < limit => {
                    start = Some(next);
                    // Items still needed, from the readings an item held so far.
                    let per_item = (found.len() / items_read.max(1)).max(1);
                    let need = (limit - found.len()).div_ceil(per_item) + 1;
                    page_size = i32::try_from(need.min(1000)).unwrap_or(1000);
                }
                _ => break,
            }
        }
        found.sort_by(|a, b| (&b.time, &b.source).cmp(&(&a.time, &a.source)));
        found.truncate(limit);
        Ok(found)
    }
}

impl DynamoStore {
    /// Moves readings from the per-reading layout (`h#` items) into day items, page by
    /// page over the whole table: a page's readings are written (a reading already in
    /// the new layout wins) before its items are deleted, so a run that stops midway
    /// loses nothing and the next run carries on. Returns the readings moved.
    pub(super) async fn migrate_readings(&self) -> Result<u64, StoreError> {
        let op = "migrate_legacy_readings";
        let scan = self
            .client
            .scan()
            .table_name(&self.tables.data)
            .consistent_read(true)
            .filter_expression("begins_with(#sk, :prefix)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(READING_PREFIX));
        let mut moved = 0;
        let mut start: Option<Item> = None;
        loop {
            let page = scan
                .clone()
                .set_exclusive_start_key(start.take())
                .set_limit(self.page_limit)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            let items = page.items.unwrap_or_default();
            let mut by_user: BTreeMap<String, Vec<Reading>> = BTreeMap::new();
            let mut deletes = Vec::with_capacity(items.len());
            for item in &items {
                let user = get_s(op, item, PK)?;
                let sk = get_s(op, item, SK)?;
                by_user
                    .entry(user.clone())
                    .or_default()
                    .push(legacy_reading(op, item)?);
                let delete = DeleteRequest::builder()
                    .set_key(Some(data_key(&user, sk)))
                    .build()
                    .map_err(|_| corrupt(op))?;
                deletes.push(WriteRequest::builder().delete_request(delete).build());
            }
            for (user, readings) in &by_user {
                self.put_day_readings(user, readings, true, None).await?;
                moved += readings.len() as u64;
            }
            self.write_all(op, deletes).await?;
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(moved),
            }
        }
    }
}

impl DynamoStore {
    /// Every day item's readings made canonical by the measures catalogue and
    /// every rollup rebuilt (they now carry totals, bands and days), page by page over the
    /// table. A reading whose measure has another key (`Weight` is `Body weight`) is
    /// written under it first, then its old day keeps only what stays (an emptied day and
    /// its rollup are deleted), so a run that stops midway loses nothing and the next run
    /// carries on. A reading the catalogue refuses stays as it is. Returns the readings
    /// that moved or changed.
    pub(super) async fn canonicalize_all(&self) -> Result<u64, StoreError> {
        let op = "migrate_measures";
        let scan = self
            .client
            .scan()
            .table_name(&self.tables.data)
            .consistent_read(true)
            .filter_expression("begins_with(#sk, :prefix)")
            .projection_expression("#pk, #sk")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":prefix", s(DAY_PREFIX));
        let catalogue = crate::domain::measures::catalogue();
        let mut changed = 0;
        let mut start: Option<Item> = None;
        loop {
            let page = scan
                .clone()
                .set_exclusive_start_key(start.take())
                .set_limit(self.page_limit)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            let mut days: BTreeSet<(String, String, String)> = BTreeSet::new();
            for item in page.items.unwrap_or_default() {
                let user = get_s(op, &item, PK)?;
                let sk = get_s(op, &item, SK)?;
                let rest = sk.strip_prefix(DAY_PREFIX).ok_or_else(|| corrupt(op))?;
                let mut fields = rest.rsplitn(3, '#');
                let (_part, day, key) = (fields.next(), fields.next(), fields.next());
                let (Some(day), Some(key)) = (day, key) else {
                    return Err(corrupt(op));
                };
                days.insert((user, key.to_string(), day.to_string()));
            }
            for (user, key, day) in days {
                let held = decode_parts(op, &self.day_parts(op, &user, &key, &day).await?)?;
                if held.is_empty() {
                    continue;
                }
                let (mut stays, mut moves) = (Vec::new(), Vec::new());
                for reading in held {
                    let canonical = catalogue
                        .canonical(reading.clone())
                        .unwrap_or_else(|_| reading.clone());
                    if canonical != reading {
                        changed += 1;
                    }
                    if Reading::indicator_key(&canonical.indicator) == key {
                        stays.push(canonical);
                    } else {
                        moves.push(canonical);
                    }
                }
                if !moves.is_empty() {
                    self.put_day_readings(&user, &moves, false, None).await?;
                }
                let rows = stays
                    .into_iter()
                    .map(|r| ((r.time.clone(), r.source.clone()), r))
                    .collect();
                let group = DayGroup { key, day, rows };
                self.write_days(&user, vec![group], Merge::WholeDay, None)
                    .await?;
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(changed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::HealthStore;
    use crate::store::contract::{fresh_tables, moto_client, moto_endpoint};
    use crate::store::dynamo::batch::put_request;
    use crate::store::dynamo::health::tests::reading_item;

    /// A reading's sort key in the per-reading layout.
    fn reading_sk(r: &Reading) -> String {
        format!(
            "{READING_PREFIX}{}#{}#{}",
            Reading::indicator_key(&r.indicator),
            r.time,
            r.source
        )
    }

    fn reading(indicator: &str, time: &str, source: &str, value: f64) -> Reading {
        Reading {
            indicator: indicator.to_string(),
            value: ReadingValue::Number(value),
            unit: Some("mg/dL".to_string()),
            time: time.to_string(),
            code_system: None,
            code: None,
            source: source.to_string(),
            offset: None,
            original: None,
        }
    }

    /// Readings written in the per-reading layout (one `h#` item each) move into
    /// day items: nothing lost, a reading already in the new layout wins, no `h#` item
    /// left, and a second run finds nothing to do.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn legacy_readings_are_migrated() {
        let (endpoint, _moto) = moto_endpoint();
        let client = moto_client(&endpoint);
        let tables = fresh_tables();
        DynamoStore::create_tables(&client, &tables).await.unwrap();
        let store = DynamoStore::new(client, tables).with_page_limit(40);
        let mut legacy: Vec<(&str, Reading)> = (0..120)
            .map(|i| {
                let time = format!("2023-0{}-{:02}T08:00:00", 1 + i % 3, 1 + i / 4);
                (
                    "alice",
                    reading(&format!("Marker {}", i % 2), &time, "lab", f64::from(i)),
                )
            })
            .collect();
        legacy.push((
            "bob",
            reading("Glucose", "2024-05-01T07:00:00", "meter", 99.0),
        ));
        let newer = reading("Marker 0", "2023-01-01T08:00:00", "lab", 1000.0);
        store
            .put_readings("alice", std::slice::from_ref(&newer))
            .await
            .unwrap();
        let puts = legacy
            .iter()
            .map(|(user, r)| put_request("test", reading_item(user, reading_sk(r), r)))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        store.write_all("test", puts).await.unwrap();

        assert_eq!(store.migrate_legacy_readings().await.unwrap(), 121);
        let alice = store
            .readings("alice", &ReadingQuery::default())
            .await
            .unwrap();
        assert_eq!(alice.len(), 120, "every legacy reading moved, none twice");
        assert!(alice.contains(&newer), "the reading already moved wins");
        let catalogue = store.catalogue("alice").await.unwrap();
        let counts: Vec<(&str, u64)> = catalogue
            .iter()
            .map(|e| (e.key.as_str(), e.summary.count))
            .collect();
        assert_eq!(counts, [("marker 0", 60), ("marker 1", 60)]);
        let bob = store
            .readings("bob", &ReadingQuery::default())
            .await
            .unwrap();
        assert_eq!(bob, [legacy[120].1.clone()]);
        for user in ["alice", "bob"] {
            let left = store
                .user_query(user)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(READING_PREFIX))
                .send()
                .await
                .unwrap();
            assert_eq!(left.count, 0, "no h# item left");
        }
        assert_eq!(
            store.migrate_legacy_readings().await.unwrap(),
            0,
            "idempotent"
        );
    }
}
