//! [`GenomeStore`] on DynamoDB: a genome as a few hundred large items per version, read
//! with a handful of requests.
//!
//! Items (data table, partition key the user; layout in [`super::schema`]):
//! - `genome`: the pointer: the active `version`, `variants`, `source`, `imported_at`,
//!   the number of rsid `buckets`, and `blocks`, the block ids (and parts) the version
//!   holds. Switched in one conditional transaction with the `presence` flag.
//! - `gv#<version>#b#<block>.<part>`: the SNPs of one chromosome region
//!   (4 Mbp) in position order, compactly encoded in `d` (binary):
//!   a region of ~800 SNPs is ~7 KB; a region with more than 20,000 SNPs is
//!   split into parts.
//! - `gv#<version>#i#<bucket>`: the rsid index: the rsids hashing to this bucket, each
//!   with its chromosome and position to 16 kbp (which block holds it, and whether its
//!   neighbourhood reaches the next block), in `d` (binary), ~600 rsids a bucket.
//!
//! A whole 23andMe genome is ~1,800 items (BatchWriteItem, 25 a request); a lookup of a
//! few rsids with their neighbours is three requests (the pointer, the index buckets,
//! the blocks). A reader that finds an item of its version missing (a racing import
//! switched and removed it) starts again from the pointer, so it never mixes versions.
//! Never logs a genotype.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use super::batch::{GET_CHUNK, bounded, get_batch, put_request, query_all};
use super::codec::{Item, get_s, get_u64, n, s};
use super::readings::WriteGuard;
use super::schema::{
    GENOME_SK, GENOME_VERSION_PREFIX, GENOTYPE_PREFIX, GPOS, PK, PRESENCE_SK, SK, data_key,
    genome_item_sk,
};
use super::transact::{Attempt, Committed, condition, contended, tx_delete, tx_put, tx_update};
use super::{DynamoStore, corrupt, sdk_error};
use crate::domain::{Genome, Genotype, Variant, chromosome_code};
use crate::store::genome::{new_version, sort_nearby};
use crate::store::genome_codec::{
    ItemKey, Layout, VersionItem, decode_blocks, decode_bucket, encode_genome, rsid_keys,
    within_radius,
};
use crate::store::{GenomeStore, GenomeSummary, Neighbourhood, StoreError};

/// Reads that find their version gone start again at most this many times.
const READ_ATTEMPTS: usize = 4;

/// Requests and bytes this module's reads and writes made (per process): what the
/// measurement test prints.
pub(super) struct Meter {
    pub requests: AtomicU64,
    pub bytes_read: AtomicU64,
    pub items_written: AtomicU64,
}

pub(super) static METER: Meter = Meter {
    requests: AtomicU64::new(0),
    bytes_read: AtomicU64::new(0),
    items_written: AtomicU64::new(0),
};

/// An item's size as DynamoDB counts it (names and values), near enough.
fn item_size(item: &Item) -> u64 {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    AttributeValue::S(v) | AttributeValue::N(v) => v.len(),
                    AttributeValue::B(b) => b.as_ref().len(),
                    _ => 1,
                }
        })
        .sum::<usize>() as u64
}

fn metered(items: &[Item]) {
    METER.requests.fetch_add(1, Ordering::Relaxed);
    let bytes: u64 = items.iter().map(item_size).sum();
    METER.bytes_read.fetch_add(bytes, Ordering::Relaxed);
}

// ---------------------------------------------------------------- the pointer

struct Pointer {
    version: String,
    variants: u64,
    source: String,
    imported_at: u64,
    layout: Layout,
}

impl Pointer {
    fn item(&self, user: &str) -> Item {
        HashMap::from([
            (PK.to_string(), s(user)),
            (SK.to_string(), s(GENOME_SK)),
            ("version".to_string(), s(self.version.as_str())),
            ("variants".to_string(), n(self.variants)),
            ("source".to_string(), s(self.source.as_str())),
            ("imported_at".to_string(), n(self.imported_at)),
            ("buckets".to_string(), n(self.layout.buckets)),
            (
                "blocks".to_string(),
                AttributeValue::B(self.layout.encode_blocks().into()),
            ),
        ])
    }

    fn from_item(op: &'static str, item: &Item) -> Result<Pointer, StoreError> {
        let blocks = match item.get("blocks") {
            Some(AttributeValue::B(b)) => {
                Layout::decode_blocks(b.as_ref()).ok_or_else(|| corrupt(op))?
            }
            _ => return Err(corrupt(op)),
        };
        Ok(Pointer {
            version: get_s(op, item, "version")?,
            variants: get_u64(op, item, "variants")?,
            source: get_s(op, item, "source")?,
            imported_at: get_u64(op, item, "imported_at")?,
            layout: Layout {
                buckets: get_u64(op, item, "buckets")?,
                blocks,
            },
        })
    }
}

fn binary(op: &'static str, item: &Item) -> Result<Vec<u8>, StoreError> {
    match item.get("d") {
        Some(AttributeValue::B(b)) => Ok(b.as_ref().to_vec()),
        _ => Err(corrupt(op)),
    }
}

impl DynamoStore {
    async fn genome_pointer(
        &self,
        op: &'static str,
        user: &str,
    ) -> Result<Option<Pointer>, StoreError> {
        let item = self.data_item(op, user, GENOME_SK.to_string()).await?;
        METER.requests.fetch_add(1, Ordering::Relaxed);
        match item {
            None => Ok(None),
            Some(item) => {
                metered_bytes(&item);
                Pointer::from_item(op, &item).map(Some)
            }
        }
    }

    /// The bytes of each of these items of a version; `None` if one is missing (the
    /// version was removed meanwhile).
    async fn genome_items(
        &self,
        op: &'static str,
        user: &str,
        version: &str,
        keys: Vec<ItemKey>,
    ) -> Result<Option<Vec<VersionItem>>, StoreError> {
        let by_sk: HashMap<String, ItemKey> = keys
            .into_iter()
            .map(|key| (genome_item_sk(version, &key), key))
            .collect();
        let sks: Vec<&String> = by_sk.keys().collect();
        let mut batches = Vec::new();
        for chunk in sks.chunks(GET_CHUNK) {
            let keys = chunk
                .iter()
                .map(|sk| data_key(user, (*sk).clone()))
                .collect();
            let request = KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build()
                .map_err(|_| corrupt(op))?;
            batches.push(get_batch(
                self.client.clone(),
                self.tables.data.clone(),
                op,
                request,
            ));
        }
        let mut found = Vec::with_capacity(by_sk.len());
        for items in bounded(op, batches.into_iter()).await? {
            metered(&items);
            for item in &items {
                let key = by_sk
                    .get(&get_s(op, item, SK)?)
                    .ok_or_else(|| corrupt(op))?;
                found.push((*key, binary(op, item)?));
            }
        }
        Ok((found.len() == by_sk.len()).then_some(found))
    }
}

fn metered_bytes(item: &Item) {
    METER
        .bytes_read
        .fetch_add(item_size(item), Ordering::Relaxed);
}

fn gone(op: &'static str) -> StoreError {
    StoreError::Unavailable(format!("{op}: genome replaced meanwhile"))
}

impl DynamoStore {
    /// The index entries (rsid key, location) of these keys; `None` if the version is gone.
    async fn locate(
        &self,
        op: &'static str,
        user: &str,
        pointer: &Pointer,
        keys: &BTreeSet<u64>,
    ) -> Result<Option<Vec<(u64, u64)>>, StoreError> {
        let wanted = pointer.layout.bucket_keys(keys);
        let Some(items) = self
            .genome_items(op, user, &pointer.version, wanted)
            .await?
        else {
            return Ok(None);
        };
        let mut found = Vec::new();
        for (_, bytes) in &items {
            let entries = decode_bucket(bytes).ok_or_else(|| corrupt(op))?;
            found.extend(entries.into_iter().filter(|(k, _)| keys.contains(k)));
        }
        Ok(Some(found))
    }

    /// Every variant of these blocks; `None` if the version is gone.
    async fn read_blocks(
        &self,
        op: &'static str,
        user: &str,
        pointer: &Pointer,
        blocks: &BTreeSet<u16>,
    ) -> Result<Option<Vec<Variant>>, StoreError> {
        let wanted = pointer.layout.block_keys(blocks);
        if wanted.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let Some(items) = self
            .genome_items(op, user, &pointer.version, wanted)
            .await?
        else {
            return Ok(None);
        };
        decode_blocks(&items).map(Some).ok_or_else(|| corrupt(op))
    }

    /// The user's rsids' entries and the blocks around them, from one version: (hits,
    /// every variant of the blocks read). Empty without a genome.
    async fn lookup(
        &self,
        op: &'static str,
        user: &str,
        rsids: &[String],
        radius: u64,
    ) -> Result<(Vec<Variant>, Vec<Variant>), StoreError> {
        let keys = rsid_keys(rsids);
        if keys.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        for _ in 0..READ_ATTEMPTS {
            let Some(pointer) = self.genome_pointer(op, user).await? else {
                return Ok((Vec::new(), Vec::new()));
            };
            let Some(entries) = self.locate(op, user, &pointer, &keys).await? else {
                continue;
            };
            let blocks = pointer
                .layout
                .blocks_near(&entries, radius)
                .ok_or_else(|| corrupt(op))?;
            let Some(read) = self.read_blocks(op, user, &pointer, &blocks).await? else {
                continue;
            };
            let hits = read
                .iter()
                .filter(|v| keys.contains(&v.rsid))
                .copied()
                .collect();
            return Ok((hits, read));
        }
        Err(gone(op))
    }
}

fn genotypes(op: &'static str, variants: &[Variant]) -> Result<Vec<Genotype>, StoreError> {
    variants
        .iter()
        .map(|v| v.genotype().ok_or_else(|| corrupt(op)))
        .collect()
}

impl DynamoStore {
    /// [`GenomeStore::replace_genome`], guarded by an importing upload when `import`
    /// names one (its check is the switch transaction's third item).
    async fn replace(
        &self,
        user: &str,
        import: Option<&WriteGuard>,
        genome: &Genome,
        source: &str,
        imported_at: u64,
    ) -> Result<(), StoreError> {
        let op = "replace_genome";
        if genome.is_empty() {
            return self.delete_genome(user).await;
        }
        let version = format!("{:016x}", new_version()?);
        let (layout, items) = encode_genome(genome).ok_or_else(|| corrupt(op))?;
        let requests = items
            .into_iter()
            .map(|(key, bytes)| {
                put_request(
                    op,
                    HashMap::from([
                        (PK.to_string(), s(user)),
                        (SK.to_string(), s(genome_item_sk(&version, &key))),
                        ("d".to_string(), AttributeValue::B(bytes.into())),
                    ]),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        METER
            .items_written
            .fetch_add(requests.len() as u64, Ordering::Relaxed);
        let version_prefix = format!("{GENOME_VERSION_PREFIX}{version}#");
        if let Err(error) = self.write_all(op, requests).await {
            // Nothing points at the partial version: remove it if possible.
            let _ = self.delete_prefixed(op, user, &version_prefix).await;
            return Err(error);
        }
        let pointer = Pointer {
            version: version.clone(),
            variants: genome.len() as u64,
            source: source.to_string(),
            imported_at,
            layout,
        };
        let switched = contended(op, || async {
            let previous = self.genome_pointer(op, user).await?.map(|p| p.version);
            let guard = match &previous {
                None => condition("attribute_not_exists(#pk)", &[("#pk", PK)], vec![]),
                Some(v) => condition(
                    "#version = :previous",
                    &[("#version", "version")],
                    vec![(":previous", s(v.as_str()))],
                ),
            };
            let mut items = vec![
                tx_put(op, &self.tables.data, pointer.item(user), guard)?,
                tx_update(
                    op,
                    &self.tables.data,
                    data_key(user, PRESENCE_SK.to_string()),
                    "SET #genotype = :yes",
                    condition(
                        "attribute_exists(#pk) OR attribute_not_exists(#pk)",
                        &[("#pk", PK), ("#genotype", "genotype")],
                        vec![(":yes", AttributeValue::Bool(true))],
                    ),
                )?,
            ];
            if let Some(import) = import {
                items.push(import.check(op, &self.tables.data)?);
            }
            match self.transact(op, items).await? {
                Committed::Yes => Ok(Attempt::Done(previous)),
                // Deleted meanwhile (the import's upload is gone): nothing switches.
                stopped if import.is_some() && stopped.condition_failed(2) => {
                    Err(StoreError::ImportStopped)
                }
                cancelled => cancelled.retry(op),
            }
        })
        .await;
        let previous = match switched {
            Ok(previous) => previous,
            Err(error) => {
                let _ = self.delete_prefixed(op, user, &version_prefix).await;
                return Err(error);
            }
        };
        if let Some(previous) = previous.filter(|p| *p != version) {
            let prefix = format!("{GENOME_VERSION_PREFIX}{previous}#");
            if self.delete_prefixed(op, user, &prefix).await.is_err() {
                tracing::warn!(
                    operation = op,
                    "dynamodb store: previous genome version left"
                );
            }
        }
        Ok(())
    }
}

#[async_trait]
impl GenomeStore for DynamoStore {
    async fn replace_genome(
        &self,
        user: &str,
        genome: &Genome,
        source: &str,
        imported_at: u64,
    ) -> Result<(), StoreError> {
        self.replace(user, None, genome, source, imported_at).await
    }

    async fn replace_import_genome(
        &self,
        user: &str,
        upload_id: &str,
        genome: &Genome,
        source: &str,
        imported_at: u64,
    ) -> Result<(), StoreError> {
        let guard = WriteGuard::Import {
            user: user.to_string(),
            upload_id: upload_id.to_string(),
        };
        {
            self.replace(user, Some(&guard), genome, source, imported_at)
                .await
        }
    }

    async fn genome_summary(&self, user: &str) -> Result<Option<GenomeSummary>, StoreError> {
        Ok(self
            .genome_pointer("genome_summary", user)
            .await?
            .map(|p| GenomeSummary {
                variants: p.variants,
                source: p.source,
                imported_at: p.imported_at,
            }))
    }

    async fn genotypes_by_rsid(
        &self,
        user: &str,
        rsids: &[String],
    ) -> Result<Vec<Genotype>, StoreError> {
        let op = "genotypes_by_rsid";
        let (hits, _) = self.lookup(op, user, rsids, 0).await?;
        genotypes(op, &hits)
    }

    async fn genotypes_in_range(
        &self,
        user: &str,
        chromosome: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<Genotype>, StoreError> {
        let op = "genotypes_in_range";
        let Some(code) = chromosome_code(chromosome) else {
            return Ok(Vec::new());
        };
        if from > to || from > u64::from(u32::MAX) {
            return Ok(Vec::new());
        }
        let to = to.min(u64::from(u32::MAX));
        for _ in 0..READ_ATTEMPTS {
            let Some(pointer) = self.genome_pointer(op, user).await? else {
                return Ok(Vec::new());
            };
            let blocks = pointer.layout.blocks_in_range(code, from, to);
            let Some(mut read) = self.read_blocks(op, user, &pointer, &blocks).await? else {
                continue;
            };
            read.retain(|v| (from..=to).contains(&u64::from(v.position)));
            let mut out = genotypes(op, &read)?;
            out.sort_by(|a, b| (a.position, &a.rsid).cmp(&(b.position, &b.rsid)));
            return Ok(out);
        }
        Err(gone(op))
    }

    async fn genotypes_near(
        &self,
        user: &str,
        rsids: &[String],
        radius: u64,
    ) -> Result<Neighbourhood, StoreError> {
        let op = "genotypes_near";
        let (hits, read) = self.lookup(op, user, rsids, radius).await?;
        // Only what lies within `radius` of a hit on its chromosome.
        let near = within_radius(&hits, read, radius);
        let mut nearby = genotypes(op, &near)?;
        sort_nearby(&mut nearby);
        Ok(Neighbourhood {
            hits: genotypes(op, &hits)?,
            nearby,
        })
    }

    async fn delete_genome(&self, user: &str) -> Result<(), StoreError> {
        let op = "delete_genome";
        let items = vec![
            tx_delete(
                op,
                &self.tables.data,
                data_key(user, GENOME_SK.to_string()),
                None,
            )?,
            tx_update(
                op,
                &self.tables.data,
                data_key(user, PRESENCE_SK.to_string()),
                "REMOVE #genotype",
                condition(
                    "attribute_exists(#pk) OR attribute_not_exists(#pk)",
                    &[("#pk", PK), ("#genotype", "genotype")],
                    vec![],
                ),
            )?,
        ];
        contended(op, || async {
            match self.transact(op, items.clone()).await? {
                Committed::Yes => Ok(Attempt::Done(())),
                cancelled => cancelled.retry(op),
            }
        })
        .await?;
        // Every version, the active one's and any an interrupted import left.
        self.delete_prefixed(op, user, GENOME_VERSION_PREFIX).await
    }

    async fn migrate_legacy_genotypes(&self, now: u64) -> Result<usize, StoreError> {
        let op = "migrate_legacy_genotypes";
        // First who has legacy items (keys only), then one user at a time, so memory
        // holds one user's genotypes, never the table's.
        let mut users = BTreeSet::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.tables.data)
                .consistent_read(true)
                .filter_expression("begins_with(#sk, :prefix)")
                .projection_expression("#pk")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(GENOTYPE_PREFIX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            for item in page.items.unwrap_or_default() {
                users.insert(get_s(op, &item, PK)?);
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        let mut moved = 0;
        for user in users {
            let query = self
                .user_query(&user)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(GENOTYPE_PREFIX));
            let items = query_all(op, query, self.page_limit).await?;
            // An unreadable legacy row is dropped (it could never be shown).
            let variants: Vec<Variant> = items
                .iter()
                .filter_map(|item| {
                    let sk = get_s(op, item, SK).ok()?;
                    let rsid = sk.strip_prefix(GENOTYPE_PREFIX)?;
                    let chromosome = get_s(op, item, "chromosome").ok()?;
                    let call = get_s(op, item, "genotype").ok()?;
                    let position = get_u64(op, item, GPOS).ok()?;
                    Variant::new(rsid, &chromosome, position, &call)
                })
                .collect();
            drop(items);
            // A user who already has a versioned genome keeps it.
            if !variants.is_empty() && self.genome_pointer(op, &user).await?.is_none() {
                let genome = Genome::from_variants(variants);
                self.replace_genome(&user, &genome, "migrated", now).await?;
                moved += 1;
            }
            self.delete_prefixed(op, &user, GENOTYPE_PREFIX).await?;
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::HealthStore;
    use crate::store::contract::{fresh_tables, moto_client, moto_endpoint};

    async fn moto_store() -> (DynamoStore, Option<std::sync::Arc<crate::testing::Moto>>) {
        let (endpoint, moto) = moto_endpoint();
        let client = moto_client(&endpoint);
        let tables = fresh_tables();
        DynamoStore::create_tables(&client, &tables)
            .await
            .expect("create tables");
        (DynamoStore::new(client, tables), moto)
    }

    /// Today's `g#<rsid>` items become an active genome version and are deleted; a user
    /// who already has a versioned genome keeps it; running again moves nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn legacy_genotypes_move_into_an_active_genome() {
        let (store, _moto) = moto_store().await;
        let legacy = |user: &str, rsid: &str, chromosome: &str, position: u64, call: &str| {
            HashMap::from([
                (PK.to_string(), s(user)),
                (SK.to_string(), s(format!("{GENOTYPE_PREFIX}{rsid}"))),
                ("chromosome".to_string(), s(chromosome)),
                ("genotype".to_string(), s(call)),
                ("gpk".to_string(), s(format!("{user}#{chromosome}"))),
                (GPOS.to_string(), n(position)),
            ])
        };
        let rows = [
            legacy("u1", "rs429358", "19", 44_908_684, "TC"),
            legacy("u1", "rs7412", "19", 44_908_822, "CC"),
            legacy("u1", "i5000", "X", 5, "--"),
            legacy("u1", "rs5", "Q", 1, "AA"), // unreadable: dropped, still deleted
            legacy("u2", "rs1", "1", 1, "AA"),
        ];
        for item in rows {
            store
                .client
                .put_item()
                .table_name(&store.tables.data)
                .set_item(Some(item))
                .send()
                .await
                .unwrap();
        }
        let kept = Genome::from_genotypes(&[Genotype {
            rsid: "rs2".into(),
            chromosome: "2".into(),
            position: 2,
            genotype: "GG".into(),
        }])
        .unwrap();
        store.replace_genome("u2", &kept, "new", 5).await.unwrap();

        assert_eq!(store.migrate_legacy_genotypes(99).await.unwrap(), 1);
        let mut found = store
            .genotypes_by_rsid("u1", &["rs429358".into(), "rs7412".into(), "i5000".into()])
            .await
            .unwrap();
        found.sort_by(|a, b| a.rsid.cmp(&b.rsid));
        let rsids: Vec<&str> = found.iter().map(|g| g.rsid.as_str()).collect();
        assert_eq!(rsids, ["i5000", "rs429358", "rs7412"]);
        assert_eq!(
            store.genome_summary("u1").await.unwrap(),
            Some(GenomeSummary {
                variants: 3,
                source: "migrated".into(),
                imported_at: 99
            })
        );
        assert!(store.data_presence("u1").await.unwrap().genotype);
        assert_eq!(
            store.genome_summary("u2").await.unwrap().unwrap().source,
            "new",
            "a versioned genome is kept"
        );
        for user in ["u1", "u2"] {
            let left = store
                .user_query(user)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":prefix", s(GENOTYPE_PREFIX))
                .send()
                .await
                .unwrap();
            assert_eq!(left.count, 0, "legacy items deleted");
        }
        assert_eq!(
            store.migrate_legacy_genotypes(100).await.unwrap(),
            0,
            "idempotent"
        );
        assert_eq!(
            store
                .genome_summary("u1")
                .await
                .unwrap()
                .unwrap()
                .imported_at,
            99
        );
    }

    /// A reader whose version's items are gone (a racing import switched and removed
    /// them) retries from the pointer and, if they stay gone, fails: it never answers
    /// with part of a genome or nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_vanished_version_is_an_error_never_a_partial_answer() {
        let (store, _moto) = moto_store().await;
        let genome = Genome::from_genotypes(&[Genotype {
            rsid: "rs1".into(),
            chromosome: "1".into(),
            position: 5,
            genotype: "AA".into(),
        }])
        .unwrap();
        store.replace_genome("v", &genome, "t", 1).await.unwrap();
        store
            .delete_prefixed("test", "v", GENOME_VERSION_PREFIX)
            .await
            .unwrap();
        assert!(matches!(
            store.genotypes_by_rsid("v", &["rs1".into()]).await,
            Err(StoreError::Unavailable(_))
        ));
        assert!(matches!(
            store.genotypes_in_range("v", "1", 0, 10).await,
            Err(StoreError::Unavailable(_))
        ));
        // A new import repairs it.
        store.replace_genome("v", &genome, "t", 2).await.unwrap();
        assert_eq!(
            store
                .genotypes_by_rsid("v", &["rs1".into()])
                .await
                .unwrap()
                .len(),
            1
        );
    }

    /// Approximate GRCh37 chromosome lengths in Mbp (1-22, X, Y, MT as 1).
    const LENGTHS: [u64; 25] = [
        249, 243, 198, 191, 181, 171, 159, 146, 141, 136, 135, 134, 115, 107, 103, 90, 81, 78, 59,
        63, 48, 51, 155, 59, 1,
    ];

    /// A 23andMe-sized genome (638,000 SNPs spread over the chromosomes by length): how
    /// many items it is written as, and what a lookup of 4 rsids with their 20 nearest
    /// within 1 Mbp costs. Prints the figures (`--no-capture`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_whole_genome_is_few_items_and_a_lookup_few_requests() {
        const SNPS: u64 = 638_000;
        let total: u64 = LENGTHS.iter().sum();
        let mut variants = Vec::with_capacity(SNPS as usize);
        let calls = ["AA", "AG", "CT", "GG", "CC", "TT", "--", "AC"];
        let mut i = 0u64;
        for (c, mbp) in LENGTHS.iter().enumerate() {
            let count = SNPS * mbp / total;
            let step = mbp * 1_000_000 / count.max(1);
            for k in 0..count {
                let rsid = if i.is_multiple_of(30) {
                    format!("i{}", 3_000_000 + i)
                } else {
                    format!("rs{}", (i * 2_654_435_761) % 999_999_937 + 1)
                };
                let v = Variant::new(
                    &rsid,
                    crate::domain::chromosome_name(c as u8 + 1).unwrap(),
                    k * step + (i * 7919) % step.max(1),
                    calls[(i % 8) as usize],
                )
                .unwrap();
                variants.push(v);
                i += 1;
            }
        }
        let genome = Genome::from_variants(variants);
        let (store, _moto) = moto_store().await;
        let started = std::time::Instant::now();
        store
            .replace_genome("measure", &genome, "genome.txt", 1)
            .await
            .unwrap();
        let items = METER.items_written.load(Ordering::Relaxed);
        println!(
            "replace_genome: {} SNPs as {items} items in {} BatchWriteItem requests, {:?} on moto",
            genome.len(),
            items.div_ceil(25),
            started.elapsed()
        );
        assert!(items <= 2_000, "{items} items");

        // Four rsids on different chromosomes, as the tool asks (default range 1 Mbp).
        let picks = [1_000usize, 200_000, 400_000, 600_000];
        let rsids: Vec<String> = picks
            .iter()
            .map(|i| genome.variants()[*i].genotype().unwrap().rsid)
            .collect();
        METER.requests.store(0, Ordering::Relaxed);
        METER.bytes_read.store(0, Ordering::Relaxed);
        let near = store
            .genotypes_near("measure", &rsids, 1_000_000)
            .await
            .unwrap();
        let (requests, bytes) = (
            METER.requests.load(Ordering::Relaxed),
            METER.bytes_read.load(Ordering::Relaxed),
        );
        println!(
            "genotypes_near: 4 rsids, radius 1 Mbp: {requests} requests, {bytes} bytes read, {} nearby",
            near.nearby.len()
        );
        assert_eq!(near.hits.len(), 4);
        assert!(requests <= 3, "{requests} requests");
        assert!(bytes <= 64 * 1024, "{bytes} bytes");
    }
}
