//! A user's genome: one whole genotype file at a time, kept as versions of which one is
//! active. Owns the [`GenomeStore`] trait and its outcome types.
//!
//! A new file is written as a new version next to the active one, then one small
//! conditional write makes it the active one, then the old version is removed (best
//! effort). Readers follow the active version: they see the old genome, complete,
//! until the switch, then the new one, complete; never a mix, never nothing. Never
//! logs a genotype.

use super::StoreError;
use crate::domain::{Genome, Genotype, chromosome_code};
use async_trait::async_trait;

/// What the console shows about a user's genome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenomeSummary {
    /// SNPs in the active version.
    pub variants: u64,
    /// The uploaded file's name (or `upload`, `migrated`).
    pub source: String,
    /// Epoch seconds of the switch to this version.
    pub imported_at: u64,
}

/// The answer to a lookup with neighbours (the genetics tool's one read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Neighbourhood {
    /// The asked rsids that the genome holds, in any order.
    pub hits: Vec<Genotype>,
    /// At least every variant within `radius` of a hit on its chromosome (the hits
    /// among them), each once, ordered by chromosome, position and rsid.
    pub nearby: Vec<Genotype>,
}

/// A whole genome per user, versioned (DynamoDB: the `genome` pointer and the
/// `gv#<version>#…` blocks and rsid index; SQLite: `genomes` and `genome_items`).
#[async_trait]
pub trait GenomeStore: Send + Sync {
    /// Makes `genome` the user's genome, replacing any previous one as a whole (no
    /// merge): written as a new version, switched to in one conditional write (which
    /// also sets the presence flag), then the previous version removed. An empty
    /// genome deletes the user's genome.
    async fn replace_genome(
        &self,
        user: &str,
        genome: &Genome,
        source: &str,
        imported_at: u64,
    ) -> Result<(), StoreError>;

    /// As [`GenomeStore::replace_genome`], for the import of upload `upload_id`: the
    /// switch happens only while that upload of the user is still importing (checked in
    /// the switch's own transaction); otherwise the written version is removed and the
    /// answer is [`StoreError::ImportStopped`](super::StoreError::ImportStopped).
    async fn replace_import_genome(
        &self,
        user: &str,
        upload_id: &str,
        genome: &Genome,
        source: &str,
        imported_at: u64,
    ) -> Result<(), StoreError>;

    /// The active genome's summary; `None` without one.
    async fn genome_summary(&self, user: &str) -> Result<Option<GenomeSummary>, StoreError>;

    /// Genotypes for these rsids (lower-cased), in any order; unknown ones are absent.
    async fn genotypes_by_rsid(
        &self,
        user: &str,
        rsids: &[String],
    ) -> Result<Vec<Genotype>, StoreError>;

    /// Genotypes on `chromosome` with `from <= position <= to`, ordered by position
    /// (then rsid).
    async fn genotypes_in_range(
        &self,
        user: &str,
        chromosome: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<Genotype>, StoreError>;

    /// These rsids' genotypes and the variants around them, all from one version.
    async fn genotypes_near(
        &self,
        user: &str,
        rsids: &[String],
        radius: u64,
    ) -> Result<Neighbourhood, StoreError>;

    /// Deletes the user's genome (every version) and clears the presence flag.
    async fn delete_genome(&self, user: &str) -> Result<(), StoreError>;

    /// Moves genotypes kept in the layout before versions (DynamoDB's `g#<rsid>` items)
    /// into an active version per user and deletes them; returns the users moved. Safe
    /// to run again (nothing left to move). The embedded store migrates on open.
    async fn migrate_legacy_genotypes(&self, now: u64) -> Result<usize, StoreError>;
}

/// A fresh version id: random, so two imports racing never write the same version.
pub(crate) fn new_version() -> Result<u64, StoreError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|_| StoreError::Unavailable("replace_genome: no random source".into()))?;
    // 62 bits: fits SQLite's signed integers.
    Ok(u64::from_le_bytes(bytes) >> 2)
}

/// Orders variants by chromosome (as a genome does), position and rsid, each once.
pub(crate) fn sort_nearby(nearby: &mut Vec<Genotype>) {
    nearby.sort_by(|a, b| {
        (chromosome_code(&a.chromosome), a.position, &a.rsid).cmp(&(
            chromosome_code(&b.chromosome),
            b.position,
            &b.rsid,
        ))
    });
    nearby.dedup_by(|a, b| a.rsid == b.rsid);
}
