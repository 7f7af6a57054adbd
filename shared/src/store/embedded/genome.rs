//! [`GenomeStore`] on SQLite: the same blocks and rsid index as DynamoDB
//! ([`crate::store::genome_codec`]), as `genome_items` rows keyed by (user, version,
//! key), and the `genomes` row naming the active version and its layout.
//!
//! A new genome is written as a new version, a few hundred rows per transaction (other
//! requests run in between), then one small transaction switches `genomes` to it, then
//! the previous version's rows are deleted. Every read runs in one read transaction (a
//! snapshot under WAL): the active version and its rows always agree. Never logs a
//! genotype.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::EmbeddedStore;
use crate::domain::{Genome, Genotype, Variant, chromosome_code};
use crate::store::genome::{new_version, sort_nearby};
use crate::store::genome_codec::{
    ItemKey, Layout, VersionItem, decode_blocks, decode_bucket, encode_genome, rsid_keys,
    within_radius,
};
use crate::store::{GenomeStore, GenomeSummary, Neighbourhood, StoreError};

/// Items written per transaction while a new version is imported (~7 KB each).
const CHUNK: usize = 200;

/// A stored genome that does not decode (a bug or a manual edit).
fn damaged() -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(0, "genome".into(), rusqlite::types::Type::Blob)
}

fn int(value: u64) -> rusqlite::Result<i64> {
    i64::try_from(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// The user's active version and its layout.
struct Active {
    version: i64,
    layout: Layout,
}

fn active(conn: &Connection, user: &str) -> rusqlite::Result<Option<Active>> {
    conn.prepare_cached("SELECT version, buckets, blocks FROM genomes WHERE user = ?1")?
        .query_row([user], |row| {
            let blocks: Vec<u8> = row.get(2)?;
            Ok(Active {
                version: row.get(0)?,
                layout: Layout {
                    buckets: super::seconds_from_column(row, 1)?,
                    blocks: Layout::decode_blocks(&blocks).ok_or_else(damaged)?,
                },
            })
        })
        .optional()
}

/// These items of a version; every one must be there (reads run in a snapshot).
fn items(
    conn: &Connection,
    user: &str,
    version: i64,
    keys: Vec<ItemKey>,
) -> rusqlite::Result<Vec<VersionItem>> {
    let mut stmt = conn.prepare_cached(
        "SELECT data FROM genome_items WHERE user = ?1 AND version = ?2 AND key = ?3",
    )?;
    keys.into_iter()
        .map(|key| {
            let data: Vec<u8> = stmt
                .query_row(params![user, version, key.text()], |row| row.get(0))
                .optional()?
                .ok_or_else(damaged)?;
            Ok((key, data))
        })
        .collect()
}

/// Writes items of a version (inside the caller's transaction).
fn write_items(
    tx: &Connection,
    user: &str,
    version: i64,
    items: &[VersionItem],
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO genome_items (user, version, key, data) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (key, data) in items {
        stmt.execute(params![user, version, key.text(), data])?;
    }
    Ok(())
}

/// Makes `version` the user's active one (inside the caller's transaction); returns the
/// version it replaces.
fn switch(
    tx: &Connection,
    user: &str,
    version: i64,
    variants: usize,
    source: &str,
    imported_at: u64,
    layout: &Layout,
) -> rusqlite::Result<Option<i64>> {
    let previous = active(tx, user)?.map(|a| a.version);
    tx.prepare_cached(
        "INSERT INTO genomes (user, version, variants, source, imported_at, buckets, blocks) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (user) DO UPDATE SET version = excluded.version, \
           variants = excluded.variants, source = excluded.source, \
           imported_at = excluded.imported_at, buckets = excluded.buckets, \
           blocks = excluded.blocks",
    )?
    .execute(params![
        user,
        version,
        int(variants as u64)?,
        source,
        int(imported_at)?,
        int(layout.buckets)?,
        layout.encode_blocks()
    ])?;
    Ok(previous)
}

/// Deletes every version of the user's genome and its pointer (inside the caller's
/// transaction).
pub(super) fn delete_genome(tx: &Connection, user: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM genome_items WHERE user = ?1")?
        .execute([user])?;
    tx.prepare_cached("DELETE FROM genomes WHERE user = ?1")?
        .execute([user])?;
    Ok(())
}

/// Schema step 5: the `genotypes` table of versions 1 to 4 becomes each user's active
/// version 1 (source `migrated`; a row that is not a valid genotype is dropped), then
/// is dropped.
pub(super) fn migrate_genotypes_table(tx: &Connection) -> rusqlite::Result<()> {
    let exists: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'genotypes')",
        [],
        |row| row.get(0),
    )?;
    if !exists {
        return Ok(());
    }
    let users: Vec<String> = tx
        .prepare("SELECT DISTINCT user FROM genotypes")?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut stmt =
        tx.prepare("SELECT rsid, chromosome, position, genotype FROM genotypes WHERE user = ?1")?;
    for user in users {
        let variants: Vec<Variant> = stmt
            .query_map([&user], |row| {
                let position: i64 = row.get(2)?;
                Ok(Variant::new(
                    &row.get::<_, String>(0)?,
                    &row.get::<_, String>(1)?,
                    u64::try_from(position).unwrap_or(u64::MAX),
                    &row.get::<_, String>(3)?,
                ))
            })?
            .filter_map(|v| v.transpose())
            .collect::<rusqlite::Result<_>>()?;
        if variants.is_empty() {
            continue;
        }
        let genome = Genome::from_variants(variants);
        let (layout, items) = encode_genome(&genome).ok_or_else(damaged)?;
        write_items(tx, &user, 1, &items)?;
        switch(tx, &user, 1, genome.len(), "migrated", 0, &layout)?;
    }
    drop(stmt);
    tx.execute_batch("DROP TABLE genotypes;")
}

/// The asked rsids' variants and every variant of the blocks around them.
fn lookup(
    conn: &Connection,
    user: &str,
    rsids: &[String],
    radius: u64,
) -> rusqlite::Result<(Vec<Variant>, Vec<Variant>)> {
    let keys = rsid_keys(rsids);
    let Some(active) = active(conn, user)?.filter(|_| !keys.is_empty()) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut entries = Vec::new();
    for (_, bytes) in items(conn, user, active.version, active.layout.bucket_keys(&keys))? {
        let bucket = decode_bucket(&bytes).ok_or_else(damaged)?;
        entries.extend(bucket.into_iter().filter(|(k, _)| keys.contains(k)));
    }
    let blocks = active
        .layout
        .blocks_near(&entries, radius)
        .ok_or_else(damaged)?;
    let read = items(
        conn,
        user,
        active.version,
        active.layout.block_keys(&blocks),
    )?;
    let read = decode_blocks(&read).ok_or_else(damaged)?;
    let hits = read
        .iter()
        .filter(|v| keys.contains(&v.rsid))
        .copied()
        .collect();
    Ok((hits, read))
}

fn genotypes(variants: &[Variant]) -> rusqlite::Result<Vec<Genotype>> {
    variants
        .iter()
        .map(|v| v.genotype().ok_or_else(damaged))
        .collect()
}

impl EmbeddedStore {
    /// [`GenomeStore::replace_genome`], guarded by an importing upload when `guard`
    /// names one.
    async fn replace(
        &self,
        user: &str,
        guard: Option<&str>,
        genome: &Genome,
        source: &str,
        imported_at: u64,
    ) -> Result<(), StoreError> {
        let op = "replace_genome";
        if genome.is_empty() {
            return self.delete_genome(user).await;
        }
        let version = i64::try_from(new_version()?)
            .map_err(|_| StoreError::Unavailable(format!("{op}: version")))?;
        let (layout, mut items) =
            encode_genome(genome).ok_or_else(|| StoreError::Corrupt(op.into()))?;
        while !items.is_empty() {
            let chunk: Vec<VersionItem> = items.drain(..items.len().min(CHUNK)).collect();
            let user = user.to_string();
            self.run(op, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                write_items(&tx, &user, version, &chunk)?;
                tx.commit()
            })
            .await?;
        }
        let (user_owned, source, variants) = (user.to_string(), source.to_string(), genome.len());
        // The switch: one small transaction.
        let guard = guard.map(str::to_string);
        let switched = self
            .run(op, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                if let Some(upload) = guard
                    && !super::uploads::still_importing(&tx, &user_owned, &upload)?
                {
                    // Deleted meanwhile: the new version goes, nothing switches.
                    tx.prepare_cached("DELETE FROM genome_items WHERE user = ?1 AND version = ?2")?
                        .execute(params![user_owned, version])?;
                    tx.commit()?;
                    return Ok(None);
                }
                let previous = switch(
                    &tx,
                    &user_owned,
                    version,
                    variants,
                    &source,
                    imported_at,
                    &layout,
                )?;
                tx.commit()?;
                Ok(Some(previous))
            })
            .await?;
        let Some(previous) = switched else {
            return Err(StoreError::ImportStopped);
        };
        // Best effort: a failure leaves unreachable rows, never a wrong answer.
        if let Some(previous) = previous.filter(|p| *p != version) {
            let user = user.to_string();
            let removed = self
                .run(op, move |conn| {
                    conn.prepare_cached(
                        "DELETE FROM genome_items WHERE user = ?1 AND version = ?2 \
                         AND version <> coalesce((SELECT version FROM genomes WHERE user = ?1), -1)",
                    )?
                    .execute(params![user, previous])
                })
                .await;
            if removed.is_err() {
                tracing::warn!(
                    operation = op,
                    "embedded store: previous genome version left"
                );
            }
        }
        Ok(())
    }
}

#[async_trait]
impl GenomeStore for EmbeddedStore {
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
        self.replace(user, Some(upload_id), genome, source, imported_at)
            .await
    }

    async fn genome_summary(&self, user: &str) -> Result<Option<GenomeSummary>, StoreError> {
        let user = user.to_string();
        self.run("genome_summary", move |conn| {
            conn.prepare_cached(
                "SELECT variants, source, imported_at FROM genomes WHERE user = ?1",
            )?
            .query_row([&user], |row| {
                Ok(GenomeSummary {
                    variants: super::seconds_from_column(row, 0)?,
                    source: row.get(1)?,
                    imported_at: super::seconds_from_column(row, 2)?,
                })
            })
            .optional()
        })
        .await
    }

    async fn genotypes_by_rsid(
        &self,
        user: &str,
        rsids: &[String],
    ) -> Result<Vec<Genotype>, StoreError> {
        let user = user.to_string();
        let rsids = rsids.to_vec();
        self.run("genotypes_by_rsid", move |conn| {
            let tx = conn.transaction()?;
            let (hits, _) = lookup(&tx, &user, &rsids, 0)?;
            genotypes(&hits)
        })
        .await
    }

    async fn genotypes_in_range(
        &self,
        user: &str,
        chromosome: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<Genotype>, StoreError> {
        let user = user.to_string();
        let code = chromosome_code(chromosome);
        self.run("genotypes_in_range", move |conn| {
            let Some(code) = code.filter(|_| from <= to && from <= u64::from(u32::MAX)) else {
                return Ok(Vec::new());
            };
            let to = to.min(u64::from(u32::MAX));
            let tx = conn.transaction()?;
            let Some(active) = active(&tx, &user)? else {
                return Ok(Vec::new());
            };
            let blocks = active.layout.blocks_in_range(code, from, to);
            let read = items(
                &tx,
                &user,
                active.version,
                active.layout.block_keys(&blocks),
            )?;
            let mut read = decode_blocks(&read).ok_or_else(damaged)?;
            read.retain(|v| (from..=to).contains(&u64::from(v.position)));
            let mut out = genotypes(&read)?;
            out.sort_by(|a, b| (a.position, &a.rsid).cmp(&(b.position, &b.rsid)));
            Ok(out)
        })
        .await
    }

    async fn genotypes_near(
        &self,
        user: &str,
        rsids: &[String],
        radius: u64,
    ) -> Result<Neighbourhood, StoreError> {
        let user = user.to_string();
        let rsids = rsids.to_vec();
        self.run("genotypes_near", move |conn| {
            let tx = conn.transaction()?;
            let (hits, read) = lookup(&tx, &user, &rsids, radius)?;
            let mut nearby = genotypes(&within_radius(&hits, read, radius))?;
            sort_nearby(&mut nearby);
            Ok(Neighbourhood {
                hits: genotypes(&hits)?,
                nearby,
            })
        })
        .await
    }

    async fn delete_genome(&self, user: &str) -> Result<(), StoreError> {
        let user = user.to_string();
        self.run("delete_genome", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            delete_genome(&tx, &user)?;
            tx.commit()
        })
        .await
    }

    async fn migrate_legacy_genotypes(&self, _now: u64) -> Result<usize, StoreError> {
        // Schema step 5 moved the `genotypes` table when the file was opened.
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 23andMe-sized genome (638,000 SNPs) on SQLite: the import's time and a lookup of
    /// 4 rsids with neighbours within 1 Mbp (median of 20). A measurement, not a timed
    /// test: `cargo nextest run -p mirobody --run-ignored only -E
    /// 'test(embedded_whole_genome)' --no-capture`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "a measurement (prints figures); run on purpose"]
    async fn embedded_whole_genome_import_and_lookup() {
        let dir = std::env::temp_dir().join(format!(
            "mirobody-genome-measure-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let store = EmbeddedStore::open(dir.join("db.sqlite3")).unwrap();
        let calls = ["AA", "AG", "CT", "GG", "CC", "TT", "--", "AC"];
        let variants: Vec<crate::domain::Variant> = (0..638_000u64)
            .map(|i| {
                let chromosome = crate::domain::chromosome_name((i * 25 / 638_000) as u8 + 1);
                crate::domain::Variant::new(
                    &format!("rs{}", (i * 2_654_435_761) % 999_999_937 + 1),
                    chromosome.unwrap(),
                    (i % 25_520) * 9_000 + 17,
                    calls[(i % 8) as usize],
                )
                .unwrap()
            })
            .collect();
        let genome = Genome::from_variants(variants);
        let started = std::time::Instant::now();
        store
            .replace_genome("m", &genome, "genome.txt", 1)
            .await
            .unwrap();
        println!(
            "embedded replace_genome: {} SNPs in {:?}",
            genome.len(),
            started.elapsed()
        );
        let rsids: Vec<String> = [1_000usize, 200_000, 400_000, 600_000]
            .iter()
            .map(|i| genome.variants()[*i].genotype().unwrap().rsid)
            .collect();
        let mut times = Vec::new();
        for _ in 0..20 {
            let started = std::time::Instant::now();
            let near = store.genotypes_near("m", &rsids, 1_000_000).await.unwrap();
            times.push(started.elapsed());
            assert_eq!(near.hits.len(), 4);
        }
        times.sort();
        println!(
            "embedded genotypes_near (4 rsids, 1 Mbp): median {:?}, max {:?}",
            times[10], times[19]
        );
        let started = std::time::Instant::now();
        store
            .replace_genome("m", &genome, "again.txt", 2)
            .await
            .unwrap();
        println!(
            "embedded replace_genome over an existing genome: {:?}",
            started.elapsed()
        );
        drop(store);
        let _ = std::fs::remove_dir_all(dir);
    }
}
