//! [`GenomeStore`] on SQLite: `genome_variants` rows keyed by (user, version, rsid) and
//! the `genomes` row naming the active version.
//!
//! A new genome is written as a new version in chunks of [`CHUNK`] rows, one
//! transaction each (other requests run in between), then one small transaction
//! switches `genomes` to it, then the previous version's rows are deleted. Every read
//! runs in one read transaction (a snapshot under WAL): the active version and its rows
//! always agree. Never logs a genotype.

use rusqlite::{Connection, Row, Transaction, TransactionBehavior, params};

use super::EmbeddedStore;
use crate::domain::{Genome, Genotype, Variant};
use crate::store::genome::{new_version, sort_nearby};
use crate::store::{GenomeStore, GenomeSummary, Neighbourhood, StoreError, StoreFuture};

/// Rows written per transaction while a new version is imported.
const CHUNK: usize = 20_000;

const COLUMNS: &str = "rsid, chromosome, position, genotype";

fn genotype_from_row(row: &Row<'_>) -> rusqlite::Result<Genotype> {
    let position: i64 = row.get(2)?;
    let position = u64::try_from(position).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Integer, Box::new(e))
    })?;
    Ok(Genotype {
        rsid: row.get(0)?,
        chromosome: row.get(1)?,
        position,
        genotype: row.get(3)?,
    })
}

fn int(value: u64) -> rusqlite::Result<i64> {
    i64::try_from(value).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// The user's active version, if any.
fn active(conn: &Connection, user: &str) -> rusqlite::Result<Option<i64>> {
    let mut stmt = conn.prepare_cached("SELECT version FROM genomes WHERE user = ?1")?;
    let mut rows = stmt.query([user])?;
    rows.next()?.map(|row| row.get(0)).transpose()
}

/// Deletes every version of the user's genome and its pointer (inside the caller's
/// transaction).
pub(super) fn delete_genome(tx: &Connection, user: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM genome_variants WHERE user = ?1")?
        .execute([user])?;
    tx.prepare_cached("DELETE FROM genomes WHERE user = ?1")?
        .execute([user])?;
    Ok(())
}

/// Schema step 5: the `genotypes` table of versions 1 to 4 becomes each user's active
/// version 1 (source `migrated`), then is dropped.
pub(super) fn migrate_genotypes_table(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let exists: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'genotypes')",
        [],
        |row| row.get(0),
    )?;
    if !exists {
        return Ok(());
    }
    tx.execute_batch(
        "INSERT INTO genome_variants (user, version, rsid, chromosome, position, genotype) \
             SELECT user, 1, rsid, chromosome, position, genotype FROM genotypes; \
         INSERT INTO genomes (user, version, variants, source, imported_at) \
             SELECT user, 1, count(*), 'migrated', 0 FROM genotypes GROUP BY user; \
         DROP TABLE genotypes;",
    )
}

/// Rows of the version on `chromosome` within `from..=to`, by position then rsid.
fn range_rows(
    conn: &Connection,
    user: &str,
    version: i64,
    chromosome: &str,
    from: u64,
    to: u64,
) -> rusqlite::Result<Vec<Genotype>> {
    // No stored position exceeds i64::MAX (positions are at most 1e9).
    let Ok(from) = i64::try_from(from) else {
        return Ok(Vec::new());
    };
    let to = i64::try_from(to).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM genome_variants \
         WHERE user = ?1 AND version = ?2 AND chromosome = ?3 AND position >= ?4 AND position <= ?5 \
         ORDER BY position, rsid"
    ))?;
    let rows = stmt.query_map(
        params![user, version, chromosome, from, to],
        genotype_from_row,
    )?;
    rows.collect()
}

fn rsid_rows(
    conn: &Connection,
    user: &str,
    version: i64,
    rsids: &[String],
) -> rusqlite::Result<Vec<Genotype>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM genome_variants WHERE user = ?1 AND version = ?2 AND rsid = ?3"
    ))?;
    let mut out = Vec::new();
    for rsid in rsids {
        for row in stmt.query_map(params![user, version, rsid], genotype_from_row)? {
            out.push(row?);
        }
    }
    Ok(out)
}

impl GenomeStore for EmbeddedStore {
    fn replace_genome<'a>(
        &'a self,
        user: &'a str,
        genome: &'a Genome,
        source: &'a str,
        imported_at: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let op = "replace_genome";
            if genome.is_empty() {
                return self.delete_genome(user).await;
            }
            let version = i64::try_from(new_version()?)
                .map_err(|_| StoreError::Unavailable(format!("{op}: version")))?;
            // The rows as stored, converted once (a few hundred bytes per chunk in flight).
            for chunk in genome.variants().chunks(CHUNK) {
                let rows: Vec<Genotype> = chunk
                    .iter()
                    .map(Variant::genotype)
                    .collect::<Option<_>>()
                    .ok_or_else(|| StoreError::Corrupt(format!("{op}: variant")))?;
                let user = user.to_string();
                self.run(op, move |conn| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    {
                        let mut stmt = tx.prepare_cached(
                            "INSERT OR REPLACE INTO genome_variants \
                             (user, version, rsid, chromosome, position, genotype) \
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        )?;
                        for g in &rows {
                            stmt.execute(params![
                                user,
                                version,
                                g.rsid,
                                g.chromosome,
                                int(g.position)?,
                                g.genotype
                            ])?;
                        }
                    }
                    tx.commit()
                })
                .await?;
            }
            let variants = int(genome.len() as u64).map_err(|_| StoreError::Corrupt(op.into()))?;
            let imported = int(imported_at).map_err(|_| StoreError::Corrupt(op.into()))?;
            let (user_owned, source) = (user.to_string(), source.to_string());
            // The switch: one small transaction.
            let previous = self
                .run(op, move |conn| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let previous = active(&tx, &user_owned)?;
                    tx.prepare_cached(
                        "INSERT INTO genomes (user, version, variants, source, imported_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5) \
                         ON CONFLICT (user) DO UPDATE SET version = excluded.version, \
                           variants = excluded.variants, source = excluded.source, \
                           imported_at = excluded.imported_at",
                    )?
                    .execute(params![user_owned, version, variants, source, imported])?;
                    tx.commit()?;
                    Ok(previous)
                })
                .await?;
            // Best effort: a failure leaves unreachable rows, never a wrong answer.
            if let Some(previous) = previous.filter(|p| *p != version) {
                let user = user.to_string();
                let removed = self
                    .run(op, move |conn| {
                        conn.prepare_cached(
                            "DELETE FROM genome_variants WHERE user = ?1 AND version = ?2 \
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
        })
    }

    fn genome_summary<'a>(&'a self, user: &'a str) -> StoreFuture<'a, Option<GenomeSummary>> {
        let user = user.to_string();
        Box::pin(self.run("genome_summary", move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT variants, source, imported_at FROM genomes WHERE user = ?1",
            )?;
            let mut rows = stmt.query([&user])?;
            let Some(row) = rows.next()? else {
                return Ok(None);
            };
            Ok(Some(GenomeSummary {
                variants: super::seconds_from_column(row, 0)?,
                source: row.get(1)?,
                imported_at: super::seconds_from_column(row, 2)?,
            }))
        }))
    }

    fn genotypes_by_rsid<'a>(
        &'a self,
        user: &'a str,
        rsids: &'a [String],
    ) -> StoreFuture<'a, Vec<Genotype>> {
        let user = user.to_string();
        let rsids = Genotype::normalized_rsids(rsids);
        Box::pin(self.run("genotypes_by_rsid", move |conn| {
            let tx = conn.transaction()?;
            let Some(version) = active(&tx, &user)? else {
                return Ok(Vec::new());
            };
            rsid_rows(&tx, &user, version, &rsids)
        }))
    }

    fn genotypes_in_range<'a>(
        &'a self,
        user: &'a str,
        chromosome: &'a str,
        from: u64,
        to: u64,
    ) -> StoreFuture<'a, Vec<Genotype>> {
        let user = user.to_string();
        let chromosome = chromosome.to_string();
        Box::pin(self.run("genotypes_in_range", move |conn| {
            let tx = conn.transaction()?;
            let Some(version) = active(&tx, &user)? else {
                return Ok(Vec::new());
            };
            range_rows(&tx, &user, version, &chromosome, from, to)
        }))
    }

    fn genotypes_near<'a>(
        &'a self,
        user: &'a str,
        rsids: &'a [String],
        radius: u64,
    ) -> StoreFuture<'a, Neighbourhood> {
        let user = user.to_string();
        let rsids = Genotype::normalized_rsids(rsids);
        Box::pin(self.run("genotypes_near", move |conn| {
            let tx = conn.transaction()?;
            let Some(version) = active(&tx, &user)? else {
                return Ok(Neighbourhood::default());
            };
            let hits = rsid_rows(&tx, &user, version, &rsids)?;
            // One range query per run of overlapping windows, not one per hit.
            let mut windows: Vec<(&str, u64, u64)> = hits
                .iter()
                .map(|h| {
                    (
                        h.chromosome.as_str(),
                        h.position.saturating_sub(radius),
                        h.position.saturating_add(radius),
                    )
                })
                .collect();
            windows.sort_unstable();
            let mut merged: Vec<(&str, u64, u64)> = Vec::with_capacity(windows.len());
            for w in windows {
                match merged.last_mut() {
                    Some(last) if last.0 == w.0 && w.1 <= last.2 => last.2 = last.2.max(w.2),
                    _ => merged.push(w),
                }
            }
            let mut nearby = Vec::new();
            for (chromosome, from, to) in merged {
                nearby.extend(range_rows(&tx, &user, version, chromosome, from, to)?);
            }
            sort_nearby(&mut nearby);
            Ok(Neighbourhood { hits, nearby })
        }))
    }

    fn delete_genome<'a>(&'a self, user: &'a str) -> StoreFuture<'a, ()> {
        let user = user.to_string();
        Box::pin(self.run("delete_genome", move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            delete_genome(&tx, &user)?;
            tx.commit()
        }))
    }

    fn migrate_legacy_genotypes(&self, _now: u64) -> StoreFuture<'_, usize> {
        // Schema step 5 moved the `genotypes` table when the file was opened.
        Box::pin(async { Ok(0) })
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
