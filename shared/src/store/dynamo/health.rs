//! [`HealthStore`] on DynamoDB: readings (`h#`), genotypes (`g#`, with the
//! `by_position` index for ranges) and the `presence` item that makes availability
//! gating one GetItem.
//!
//! Never logs a reading or a genotype.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::batch::{GET_CHUNK, bounded, get_batch, put_request, query_all};
use super::codec::{Item, get_opt_s, get_s, get_u64, insert_optional, n, s};
use super::schema::{
    GENOTYPE_PREFIX, GPK, GPOS, PK, POSITION_INDEX, PRESENCE_SK, READING_PREFIX, SK, data_key,
    reading_sk,
};
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{DataPresence, Genotype, Reading, ReadingValue};
use crate::store::{
    CatalogueEntry, HealthStore, Period, ReadingQuery, Rollup, StoreError, StoreFuture, WriteReport,
};

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

    fn catalogue<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Vec<CatalogueEntry>> {
        Box::pin(async move {
            let readings = self.readings(user, &ReadingQuery::default()).await?;
            let mut by_key: std::collections::BTreeMap<String, Vec<Reading>> = Default::default();
            for r in readings {
                by_key
                    .entry(Reading::indicator_key(&r.indicator))
                    .or_default()
                    .push(r);
            }
            Ok(by_key
                .into_iter()
                .filter_map(|(key, rows)| {
                    Rollup::of("", &rows).map(|summary| CatalogueEntry { key, summary })
                })
                .collect())
        })
    }

    fn rollups<'a>(
        &'a self,
        user: &'a str,
        indicator_key: &'a str,
        period: Period,
        from: &'a str,
        to: &'a str,
    ) -> StoreFuture<'a, Vec<Rollup>> {
        Box::pin(async move {
            let query = ReadingQuery {
                indicator_keys: Some(vec![indicator_key.to_string()]),
                ..ReadingQuery::default()
            };
            let readings = self.readings(user, &query).await?;
            let mut by_period: std::collections::BTreeMap<String, Vec<Reading>> =
                Default::default();
            for r in readings {
                let p = period.of(&r.time).to_string();
                if p.as_str() >= from && p.as_str() <= to {
                    by_period.entry(p).or_default().push(r);
                }
            }
            Ok(by_period
                .iter()
                .filter_map(|(p, rows)| Rollup::of(p, rows))
                .collect())
        })
    }

    fn latest_readings<'a>(
        &'a self,
        user: &'a str,
        indicator_key: &'a str,
        limit: usize,
        window: &'a ReadingQuery,
    ) -> StoreFuture<'a, Vec<Reading>> {
        Box::pin(async move {
            let query = ReadingQuery {
                indicator_keys: Some(vec![indicator_key.to_string()]),
                ..window.clone()
            };
            let mut readings = self.readings(user, &query).await?;
            readings.reverse();
            readings.truncate(limit);
            Ok(readings)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
