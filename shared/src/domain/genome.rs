//! A whole genome in memory, compactly: one 16-byte [`Variant`] per SNP (a 23andMe file
//! of ~638,000 rows is ~10 MB), never one [`Genotype`] with three strings per row.
//!
//! Owns the compact forms every layer shares: the rsid as a number ([`rsid_key`]), the
//! chromosome as a code ([`chromosome_code`]), the call packed in 16 bits
//! ([`pack_call`]). A genome holds each rsid once (the last one given wins) and keeps
//! its variants in chromosome and position order. Knows nothing of files or storage.

use super::Genotype;

/// The symbols a call is made of, in code order (a no-call is `-`).
const CALL_SYMBOLS: &[u8; 7] = b"ACGTDI-";

/// The longest call (AncestryDNA's two alleles, or an indel call of up to four symbols).
pub(crate) const MAX_CALL: usize = 4;

/// Chromosome names in code order: code 1 is `1`, ... 22 is `22`, 23 `X`, 24 `Y`, 25 `MT`.
const CHROMOSOMES: [&str; 25] = [
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17",
    "18", "19", "20", "21", "22", "X", "Y", "MT",
];

/// The bits of an rsid key: the number (up to 12 digits, < 2^40), then the count of
/// leading zeros as written (`rs007` stays `rs007`), then the kind (`rs` 0, `i` 1).
const ZEROS_SHIFT: u32 = 40;
const KIND_SHIFT: u32 = 44;

/// An rsid (`rs…` or `i…`, lower-case, 1 to 12 digits) as a number that formats back to
/// the same text ([`rsid_text`]); `None` for anything else.
pub(crate) fn rsid_key(rsid: &str) -> Option<u64> {
    let (kind, digits) = match rsid.strip_prefix("rs") {
        Some(d) => (0u64, d),
        None => (1u64, rsid.strip_prefix('i')?),
    };
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number: u64 = digits.parse().ok()?;
    let natural = if number == 0 {
        1
    } else {
        number.ilog10() as usize + 1
    };
    let zeros = (digits.len() - natural) as u64;
    Some(number | zeros << ZEROS_SHIFT | kind << KIND_SHIFT)
}

/// The text of an rsid key made by [`rsid_key`].
pub(crate) fn rsid_text(key: u64) -> String {
    let number = key & ((1 << ZEROS_SHIFT) - 1);
    let zeros = ((key >> ZEROS_SHIFT) & 0xF) as usize;
    let prefix = if key >> KIND_SHIFT & 1 == 1 {
        "i"
    } else {
        "rs"
    };
    format!("{prefix}{}{number}", "0".repeat(zeros))
}

/// A chromosome name (`1`-`22`, `X`, `Y`, `MT`) as its code 1-25.
pub(crate) fn chromosome_code(name: &str) -> Option<u8> {
    CHROMOSOMES
        .iter()
        .position(|c| *c == name)
        .map(|i| i as u8 + 1)
}

/// The name of chromosome code 1-25.
pub(crate) fn chromosome_name(code: u8) -> Option<&'static str> {
    CHROMOSOMES.get(usize::from(code).checked_sub(1)?).copied()
}

/// A call (1 to 4 of `A C G T D I -`) in 16 bits: the length less one in the low two
/// bits, then three bits per symbol. `None` for anything else.
pub(crate) fn pack_call(call: &str) -> Option<u16> {
    let bytes = call.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_CALL {
        return None;
    }
    let mut packed = (bytes.len() - 1) as u16;
    for (i, b) in bytes.iter().enumerate() {
        let symbol = CALL_SYMBOLS.iter().position(|s| s == b)? as u16;
        packed |= symbol << (2 + 3 * i);
    }
    Some(packed)
}

/// The text of a call packed by [`pack_call`]; `None` if the bits are not one.
pub(crate) fn unpack_call(packed: u16) -> Option<String> {
    let len = usize::from(packed & 3) + 1;
    if packed >> (2 + 3 * len) != 0 {
        return None;
    }
    (0..len)
        .map(|i| {
            CALL_SYMBOLS
                .get(usize::from(packed >> (2 + 3 * i) & 7))
                .map(|b| *b as char)
        })
        .collect()
}

/// One SNP of a genome, 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// [`rsid_key`].
    pub rsid: u64,
    pub position: u32,
    /// [`chromosome_code`].
    pub chromosome: u8,
    /// [`pack_call`].
    pub call: u16,
}

impl Variant {
    /// Builds a variant from its parts as text; `None` if a part is not valid.
    pub fn new(rsid: &str, chromosome: &str, position: u64, call: &str) -> Option<Variant> {
        Some(Variant {
            rsid: rsid_key(&rsid.to_lowercase())?,
            position: u32::try_from(position).ok()?,
            chromosome: chromosome_code(chromosome)?,
            call: pack_call(call)?,
        })
    }

    /// The record tools read. A variant built by [`Variant::new`] always converts; bits
    /// from elsewhere (a damaged store) give `None`.
    pub fn genotype(&self) -> Option<Genotype> {
        Some(Genotype {
            rsid: rsid_text(self.rsid),
            chromosome: chromosome_name(self.chromosome)?.to_string(),
            position: u64::from(self.position),
            genotype: unpack_call(self.call)?,
        })
    }
}

/// A whole genome: each rsid once, in chromosome and position order (then rsid text,
/// as the stores answer ranges).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Genome {
    variants: Vec<Variant>,
}

impl Genome {
    /// A genome of these variants; a repeated rsid keeps its last variant.
    pub fn from_variants(mut variants: Vec<Variant>) -> Genome {
        // In place (a whole genome is ~10 MB): reversed, a stable sort puts each rsid's
        // last row first among its repeats, and dedup keeps the first.
        variants.reverse();
        variants.sort_by_key(|v| v.rsid);
        variants.dedup_by_key(|v| v.rsid);
        variants.sort_by(|a, b| {
            (a.chromosome, a.position)
                .cmp(&(b.chromosome, b.position))
                .then_with(|| rsid_text(a.rsid).cmp(&rsid_text(b.rsid)))
        });
        variants.shrink_to_fit();
        Genome { variants }
    }

    /// A genome of these records; `None` if one is not valid (see [`Variant::new`]).
    pub fn from_genotypes(genotypes: &[Genotype]) -> Option<Genome> {
        let variants = genotypes
            .iter()
            .map(|g| Variant::new(&g.rsid, &g.chromosome, g.position, &g.genotype))
            .collect::<Option<Vec<_>>>()?;
        Some(Genome::from_variants(variants))
    }

    /// The variants, in chromosome and position order.
    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }

    pub fn len(&self) -> usize {
        self.variants.len()
    }

    pub fn is_empty(&self) -> bool {
        self.variants.is_empty()
    }

    /// The variants as records, in the genome's order.
    pub fn genotypes(&self) -> impl Iterator<Item = Genotype> + '_ {
        self.variants.iter().filter_map(Variant::genotype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Variant>(), 16);
    }

    #[test]
    fn rsids_chromosomes_and_calls_round_trip() {
        for id in ["rs1", "rs0", "rs007", "i6019299", "rs999999999999", "i0001"] {
            assert_eq!(rsid_text(rsid_key(id).unwrap()), id);
        }
        for bad in ["rs", "r1", "rs1x", "rs1234567890123", "RS1", "x1"] {
            assert_eq!(rsid_key(bad), None, "{bad}");
        }
        assert_ne!(rsid_key("rs7"), rsid_key("rs07"));
        assert_ne!(rsid_key("rs7"), rsid_key("i7"));
        for (i, name) in CHROMOSOMES.iter().enumerate() {
            let code = chromosome_code(name).unwrap();
            assert_eq!(usize::from(code), i + 1);
            assert_eq!(chromosome_name(code), Some(*name));
        }
        assert_eq!(chromosome_code("XY"), None);
        assert_eq!(chromosome_name(0), None);
        for call in ["A", "AG", "--", "DI", "ACGT", "-", "II"] {
            assert_eq!(unpack_call(pack_call(call).unwrap()).as_deref(), Some(call));
        }
        for bad in ["", "AGCTA", "N", "ag"] {
            assert_eq!(pack_call(bad), None, "{bad}");
        }
        assert_eq!(unpack_call(u16::MAX), None);
    }

    #[test]
    fn a_genome_keeps_each_rsid_once_in_position_order() {
        let v = |rsid: &str, chr: &str, pos: u64, call: &str| {
            Variant::new(rsid, chr, pos, call).unwrap()
        };
        let genome = Genome::from_variants(vec![
            v("rs3", "2", 5, "AA"),
            v("rs1", "1", 20, "AG"),
            v("rs2", "1", 10, "CC"),
            v("rs1", "X", 7, "TT"),
            v("rs10", "1", 10, "GG"),
        ]);
        let rows: Vec<(String, String, u64, String)> = genome
            .genotypes()
            .map(|g| (g.rsid, g.chromosome, g.position, g.genotype))
            .collect();
        let row = |r: &str, c: &str, p: u64, g: &str| (r.into(), c.into(), p, g.into());
        assert_eq!(
            rows,
            vec![
                row("rs10", "1", 10, "GG"),
                row("rs2", "1", 10, "CC"),
                row("rs3", "2", 5, "AA"),
                row("rs1", "X", 7, "TT"),
            ]
        );
    }
}
