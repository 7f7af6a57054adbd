//! [`HealthStore`] on DynamoDB: readings (day items, rollups and the catalogue, in
//! `readings.rs`; the older per-reading `h#` items are read here only to migrate them),
//! genotypes (`g#`, with the `by_position` index for ranges) and the `presence` item
//! that makes availability gating one GetItem.
//!
//! Never logs a reading or a genotype.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::batch::{GET_CHUNK, bounded, get_batch, put_request, query_all};
use super::codec::{Item, get_opt_s, get_s, get_u64, n, s};
use super::schema::{
    CATALOGUE_PREFIX, DAY_PREFIX, DAY_ROLLUP_PREFIX, GENOTYPE_PREFIX, GPK, GPOS,
    MONTH_ROLLUP_PREFIX, PK, POSITION_INDEX, PRESENCE_SK, READING_PREFIX, SK, data_key,
};
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{DataPresence, Genotype, Reading, ReadingValue};
use crate::store::{
    CatalogueEntry, HealthStore, Period, ReadingQuery, Rollup, StoreError, StoreFuture, WriteReport,
};

/// A reading from an item of the layout before issue 14 (`h#`).
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
            if readings.is_empty() {
                return Ok(WriteReport::default());
            }
            // Presence first: if the data write then fails, gating shows tools that find
            // nothing, rather than hiding data that did arrive.
            self.mark_present(op, user, "health").await?;
            let written = self.put_day_readings(user, readings, false).await?;
            Ok(WriteReport { written })
        })
    }

    fn readings<'a>(
        &'a self,
        user: &'a str,
        query: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>> {
        Box::pin(async move { self.day_readings(query, user).await })
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
        })
    }

    fn catalogue<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Vec<CatalogueEntry>> {
        Box::pin(self.catalogue_entries(user))
    }

    fn rollups<'a>(
        &'a self,
        user: &'a str,
        indicator_key: &'a str,
        period: Period,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, Vec<Rollup>> {
        Box::pin(self.rollups_of(user, indicator_key, period, from, to))
    }

    fn latest_readings<'a>(
        &'a self,
        user: &'a str,
        indicator_key: &'a str,
        limit: usize,
        window: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>> {
        Box::pin(self.newest_readings(user, indicator_key, limit, window))
    }

    fn migrate_legacy_readings(&self) -> StoreFuture<'_, u64> {
        Box::pin(self.migrate_readings())
    }
}

#[cfg(test)]
pub(super) mod tests {
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

    /// A reading as the layout before issue 14 kept it (tests write legacy data with it).
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
