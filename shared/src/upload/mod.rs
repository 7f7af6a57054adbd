//! Parsing a user's uploads (E4): health readings as JSON or CSV, genotypes as a
//! consumer raw data file (23andMe, AncestryDNA), Apple Health exports (streamed:
//! `apple_health`). Every row is checked before anything is written; a bad row is
//! reported by line (JSON: by index) and the whole upload is refused, so nothing is
//! partially written unreported. Each reading is made canonical (`domain::measures`);
//! `collisions` refuses two rows of one file that are the same reading with different
//! values; `bounds` guards every decompressor (a ratio and a size); each parser bounds
//! its own lines, rows and size.
//!
//! Pure functions: no storage, no HTTP. Error messages name the line and the field,
//! never echo the value (it is health data).

#[cfg(feature = "apple-health")]
mod apple_health;
// The same interface, refusing every file, in the functions that read no upload.
#[cfg(not(feature = "apple-health"))]
#[path = "apple_health_absent.rs"]
mod apple_health;
mod bounds;
mod collisions;
mod genotype;
mod health;
mod stream;

pub(crate) use apple_health::{stream_apple_health_xml, stream_apple_health_zip};
pub(crate) use bounds::{Exceeded, INFLATION, gunzip, refusal};
pub(crate) use collisions::Repeats;
pub(crate) use genotype::{MAX_GENOTYPE_FILE, is_rsid, parse_genotype_file, read_genome};
pub(crate) use health::{for_each_csv_reading, parse_health_csv, parse_health_json};
pub(crate) use stream::for_each_json_reading;

/// Why an upload was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UploadError {
    /// 1-based line (CSV, raw files) or 0-based index into `readings` (JSON).
    pub location: String,
    pub problem: String,
}

impl std::fmt::Display for UploadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.problem)
    }
}

/// The most rows one upload may carry (API Gateway's payload limits come first).
pub(crate) const MAX_ROWS: usize = 1_000_000;

/// The most bytes a readings file (CSV or JSON) may hold once decompressed:
/// 4 GiB, the largest file the local server stores by default
/// (`MIROBODY_UPLOAD_MAX_BYTES`), so gzip buys no more parsing than the plain file would.
/// A real three-year CSV is 27 MB; twenty million rows of 100 bytes are 2 GB.
pub(crate) const MAX_READINGS_FILE: u64 = 4 << 30;
