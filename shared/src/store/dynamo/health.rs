//! [`HealthStore`] on DynamoDB: readings (day items, rollups and the catalogue, in
//! `readings.rs`; the older per-reading `h#` items are read here only to migrate them)
//! and the `presence` item that makes availability gating one GetItem (genomes are
//! `genome.rs`'s; `g#` items are the layout before it, deleted with the user's data).
//!
//! Never logs a reading or a genotype.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

use super::codec::{Item, get_opt_s, get_s, s};
use super::readings::WriteGuard;
use super::schema::{
    CATALOGUE_PREFIX, DAY_PREFIX, DAY_ROLLUP_PREFIX, GENOTYPE_PREFIX, MONTH_ROLLUP_PREFIX, PK,
    PRESENCE_SK, READING_PREFIX, SK, data_key,
};
use super::transact::{Attempt, Committed, contended, expression_values, tx_update};
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{DataPresence, Reading, ReadingValue};
use crate::store::{
    CatalogueEntry, GenomeStore, HealthStore, Period, ReadingQuery, Rollup, StoreError, WriteReport,
};

/// A reading from an item of the per-reading layout (`h#`).
pub(super) fn legacy_reading(op: &'static str, item: &Item) -> Result<Reading, StoreError> {
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
        offset: None,
        original: None,
    })
}

/// The `presence` item's flags (absent: no data of either kind).
pub(super) fn presence_of(item: Option<&Item>) -> DataPresence {
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

impl DynamoStore {
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
}

impl DynamoStore {
    /// [`DynamoStore::mark_present`] for health data, in one transaction with the
    /// import's guard: a deletion that ran first leaves no presence behind.
    async fn mark_present_guarded(&self, user: &str, guard: &WriteGuard) -> Result<(), StoreError> {
        let op = "put_import_readings";
        let table = self.tables.data.as_str();
        contended(op, || async {
            let presence = tx_update(
                op,
                table,
                data_key(user, PRESENCE_SK.to_string()),
                "SET #kind = :yes",
                expression_values(
                    &[("#kind", "health")],
                    vec![(":yes", AttributeValue::Bool(true))],
                ),
            )?;
            let items = vec![guard.check(op, table)?, presence];
            match self.transact(op, items).await? {
                Committed::Yes => Ok(Attempt::Done(())),
                stopped if stopped.condition_failed(0) => Err(StoreError::ImportStopped),
                other => other.retry(op),
            }
        })
        .await
    }
}

#[async_trait]
impl HealthStore for DynamoStore {
    async fn data_presence(&self, user: &str) -> Result<DataPresence, StoreError> {
        let item = self
            .data_item("data_presence", user, PRESENCE_SK.to_string())
            .await?;
        Ok(presence_of(item.as_ref()))
    }

    async fn put_readings(
        &self,
        user: &str,
        readings: &[Reading],
    ) -> Result<WriteReport, StoreError> {
        let op = "put_readings";
        if readings.is_empty() {
            return Ok(WriteReport::default());
        }
        // Presence first: if the data write then fails, gating shows tools that find
        // nothing, rather than hiding data that did arrive.
        self.mark_present(op, user, "health").await?;
        self.put_day_readings(user, readings, false, None).await
    }

    async fn put_import_readings(
        &self,
        user: &str,
        upload_id: &str,
        readings: &[Reading],
    ) -> Result<WriteReport, StoreError> {
        if readings.is_empty() {
            return Ok(WriteReport::default());
        }
        let guard = WriteGuard::Import {
            user: user.to_string(),
            upload_id: upload_id.to_string(),
        };
        self.mark_present_guarded(user, &guard).await?;
        self.put_day_readings(user, readings, false, Some(&guard))
            .await
    }

    async fn readings(&self, user: &str, query: &ReadingQuery) -> Result<Vec<Reading>, StoreError> {
        self.day_readings(query, user).await
    }

    async fn delete_user_data(&self, user: &str) -> Result<(), StoreError> {
        let op = "delete_user_data";
        // Readings and genotypes only: the account (and any other kind) stays.
        self.delete_genome(user).await?;
        for prefix in [
            READING_PREFIX,
            DAY_PREFIX,
            DAY_ROLLUP_PREFIX,
            MONTH_ROLLUP_PREFIX,
            CATALOGUE_PREFIX,
        ] {
            self.delete_prefixed(op, user, prefix).await?;
        }
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
    }

    async fn catalogue(&self, user: &str) -> Result<Vec<CatalogueEntry>, StoreError> {
        self.catalogue_entries(user).await
    }

    async fn rollups(
        &self,
        user: &str,
        indicator_key: &str,
        period: Period,
        from: &str,
        to: &str,
    ) -> Result<Vec<Rollup>, StoreError> {
        self.rollups_of(user, indicator_key, period, from, to).await
    }

    async fn latest_readings(
        &self,
        user: &str,
        indicator_key: &str,
        limit: usize,
        window: &ReadingQuery,
    ) -> Result<Vec<Reading>, StoreError> {
        self.newest_readings(user, indicator_key, limit, window)
            .await
    }

    async fn migrate_measures(&self) -> Result<u64, StoreError> {
        self.canonicalize_all().await
    }

    async fn migrate_legacy_readings(&self) -> Result<u64, StoreError> {
        self.migrate_readings().await
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::store::dynamo::codec::insert_optional;

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

    /// A reading as the per-reading layout kept it (tests write legacy data with it).
    pub(in crate::store) fn reading_item(user: &str, sk: String, r: &Reading) -> Item {
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
}
