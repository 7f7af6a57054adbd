//! The compact encoding of a genome version that both backends store: blocks (one
//! chromosome region's SNPs, [`REGION_BITS`]: 4 Mbp, in position order) and an rsid
//! index bucketed by hash (each rsid with its block and where in it), plus the
//! [`Layout`] a version's pointer keeps (its buckets and blocks).
//!
//! Pure functions over bytes; the backends decide where the items go (DynamoDB: items
//! of the data table; SQLite: rows of `genome_items`). Decoding never panics: damaged
//! bytes give `None`.

use std::collections::BTreeSet;

use crate::domain::{Genome, Variant};

/// Positions per block: 2^22 = 4,194,304 bp.
pub(crate) const REGION_BITS: u32 = 22;

/// The index keeps positions to 2^18 = 262,144 bp (16 cells a block): enough to tell
/// whether a neighbourhood reaches the next block.
const CELL_BITS: u32 = 18;

/// Most SNPs in one block item (~9 bytes each: far below DynamoDB's 400 KB).
const PART_VARIANTS: usize = 20_000;

/// The rsid index's buckets: ~530 rsids each, at most this many (a whole genome's
/// ~800 blocks and 1,200 buckets stay under 2,000 items).
const MAX_BUCKETS: u64 = 1200;
const BUCKET_TARGET: u64 = 530;

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first()?;
            self.0 = rest;
            value |= u64::from(byte & 0x7F).checked_shl(shift)?;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }
}

/// The block of a variant: chromosome code and region index (< 256: positions are at
/// most 1e9).
pub(crate) fn block_of(chromosome: u8, position: u32) -> u16 {
    u16::from(chromosome) << 8 | (position >> REGION_BITS) as u16
}

/// A variant's place in the index: its block's index in the pointer's list, and the
/// cell of the block it lies in.
pub(crate) fn location_of(block_index: usize, v: &Variant) -> u64 {
    let cell = (v.position & ((1 << REGION_BITS) - 1)) >> CELL_BITS;
    (block_index as u64) << (REGION_BITS - CELL_BITS) | u64::from(cell)
}

pub(crate) fn bucket_of(rsid: u64, buckets: u64) -> u64 {
    (rsid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % buckets.max(1)
}

pub(crate) fn bucket_count(variants: usize) -> u64 {
    (variants as u64 / BUCKET_TARGET).clamp(1, MAX_BUCKETS)
}

/// A packed call ([`crate::domain::Variant::call`]) as a number below 56 (one byte) for
/// one or two symbols: two as `7 * first + second`, one as `49 + symbol`; longer ones as
/// `56 + packed`.
pub(crate) fn call_code(packed: u16) -> u64 {
    let symbol = |i: u16| u64::from(packed >> (2 + 3 * i) & 7);
    match packed & 3 {
        1 if packed >> 8 == 0 && symbol(0) < 7 && symbol(1) < 7 => 7 * symbol(0) + symbol(1),
        0 if packed >> 5 == 0 && symbol(0) < 7 => 49 + symbol(0),
        _ => 56 + u64::from(packed),
    }
}

pub(crate) fn call_from_code(code: u64) -> Option<u16> {
    let packed = match code {
        0..49 => 1 | ((code / 7) as u16) << 2 | ((code % 7) as u16) << 5,
        49..56 => ((code - 49) as u16) << 2,
        _ => u16::try_from(code - 56).ok()?,
    };
    crate::domain::unpack_call(packed).map(|_| packed)
}

/// A block part: the count, then per SNP its position (a delta from the previous), rsid
/// key and packed call.
pub(crate) fn encode_block(variants: &[Variant]) -> Vec<u8> {
    let mut out = Vec::with_capacity(variants.len() * 9 + 4);
    put_varint(&mut out, variants.len() as u64);
    let mut previous = 0u32;
    for v in variants {
        put_varint(&mut out, u64::from(v.position.wrapping_sub(previous)));
        put_varint(&mut out, v.rsid);
        put_varint(&mut out, call_code(v.call));
        previous = v.position;
    }
    out
}

pub(crate) fn decode_block(chromosome: u8, bytes: &[u8]) -> Option<Vec<Variant>> {
    let mut r = Reader(bytes);
    let count = usize::try_from(r.varint()?).ok()?;
    let mut out = Vec::with_capacity(count.min(PART_VARIANTS));
    let mut position = 0u32;
    for _ in 0..count {
        position = position.checked_add(u32::try_from(r.varint()?).ok()?)?;
        let rsid = r.varint()?;
        let call = call_from_code(r.varint()?)?;
        out.push(Variant {
            rsid,
            position,
            chromosome,
            call,
        });
    }
    r.0.is_empty().then_some(out)
}

/// A bucket: the count, then per rsid (in key order) the key as a delta and its location.
pub(crate) fn encode_bucket(entries: &mut [(u64, u64)]) -> Vec<u8> {
    entries.sort_unstable();
    let mut out = Vec::with_capacity(entries.len() * 6 + 4);
    put_varint(&mut out, entries.len() as u64);
    let mut previous = 0u64;
    for (key, location) in entries.iter() {
        put_varint(&mut out, key - previous);
        put_varint(&mut out, *location);
        previous = *key;
    }
    out
}

pub(crate) fn decode_bucket(bytes: &[u8]) -> Option<Vec<(u64, u64)>> {
    let mut r = Reader(bytes);
    let count = usize::try_from(r.varint()?).ok()?;
    let mut out = Vec::with_capacity(count.min(100_000));
    let mut key = 0u64;
    for _ in 0..count {
        key = key.checked_add(r.varint()?)?;
        out.push((key, r.varint()?));
    }
    r.0.is_empty().then_some(out)
}

/// What a version holds: the number of index buckets and the blocks (id and number of
/// parts, by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub buckets: u64,
    pub blocks: Vec<(u16, u8)>,
}

/// One item of a version: a block's part, or an index bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ItemKey {
    Block(u16, u8),
    Bucket(u64),
}

/// One item of a version with its bytes.
pub(crate) type VersionItem = (ItemKey, Vec<u8>);

impl ItemKey {
    /// The key's text (`b#<block>.<part>`, `i#<bucket>`, hex), after a version prefix.
    pub(crate) fn text(&self) -> String {
        match self {
            ItemKey::Block(block, part) => format!("b#{block:04x}.{part:02x}"),
            ItemKey::Bucket(bucket) => format!("i#{bucket:03x}"),
        }
    }
}

impl Layout {
    pub(crate) fn parts(&self, block: u16) -> Option<u8> {
        self.blocks
            .binary_search_by_key(&block, |b| b.0)
            .ok()
            .map(|i| self.blocks[i].1)
    }

    /// Every part of these blocks (those the version holds).
    pub(crate) fn block_keys(&self, blocks: &BTreeSet<u16>) -> Vec<ItemKey> {
        blocks
            .iter()
            .filter_map(|b| self.parts(*b).map(|parts| (*b, parts)))
            .flat_map(|(b, parts)| (0..parts).map(move |p| ItemKey::Block(b, p)))
            .collect()
    }

    /// The buckets holding these rsid keys.
    pub(crate) fn bucket_keys(&self, rsids: &BTreeSet<u64>) -> Vec<ItemKey> {
        let buckets: BTreeSet<u64> = rsids.iter().map(|k| bucket_of(*k, self.buckets)).collect();
        buckets.into_iter().map(ItemKey::Bucket).collect()
    }

    /// The blocks of `chromosome` (code) that `from..=to` can touch.
    pub(crate) fn blocks_in_range(&self, chromosome: u8, from: u64, to: u64) -> BTreeSet<u16> {
        let (first, last) = (from >> REGION_BITS, to >> REGION_BITS);
        self.blocks
            .iter()
            .map(|b| b.0)
            .filter(|b| {
                (b >> 8) as u8 == chromosome && (first..=last).contains(&u64::from(b & 0xFF))
            })
            .collect()
    }

    /// The blocks holding these index entries and, with `radius`, their neighbourhoods;
    /// `None` if an entry names no block.
    pub(crate) fn blocks_near(&self, entries: &[(u64, u64)], radius: u64) -> Option<BTreeSet<u16>> {
        let mut blocks = BTreeSet::new();
        for (_, location) in entries {
            blocks_around(self, *location, radius, &mut blocks)?;
        }
        Some(blocks)
    }

    /// The pointer's `blocks` bytes: ids as deltas (mostly 1), then parts.
    pub(crate) fn encode_blocks(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.blocks.len() * 2);
        let mut previous = 0u16;
        for (id, parts) in &self.blocks {
            put_varint(&mut out, u64::from(id - previous));
            put_varint(&mut out, u64::from(*parts));
            previous = *id;
        }
        out
    }

    pub(crate) fn decode_blocks(bytes: &[u8]) -> Option<Vec<(u16, u8)>> {
        let mut r = Reader(bytes);
        let mut blocks = Vec::new();
        let mut id = 0u16;
        while !r.0.is_empty() {
            id = id.checked_add(u16::try_from(r.varint()?).ok()?)?;
            blocks.push((id, u8::try_from(r.varint()?).ok()?));
        }
        Some(blocks)
    }
}

/// A whole genome's items and its layout; `None` if a region needs more than 255 parts
/// (never: at most 1,000,000 rows).
pub(crate) fn encode_genome(genome: &Genome) -> Option<(Layout, Vec<VersionItem>)> {
    let buckets = bucket_count(genome.len());
    let mut items = Vec::new();
    let mut blocks = Vec::new();
    for run in genome
        .variants()
        .chunk_by(|a, b| block_of(a.chromosome, a.position) == block_of(b.chromosome, b.position))
    {
        let id = block_of(run[0].chromosome, run[0].position);
        let mut parts = 0u8;
        for (part, variants) in run.chunks(PART_VARIANTS).enumerate() {
            let part = u8::try_from(part).ok()?;
            items.push((ItemKey::Block(id, part), encode_block(variants)));
            parts = part + 1;
        }
        blocks.push((id, parts));
    }
    let mut index: Vec<Vec<(u64, u64)>> = vec![Vec::new(); buckets as usize];
    // Blocks come in id order (the genome's order), so an id's index is its rank.
    let mut block_index = 0;
    for v in genome.variants() {
        let id = block_of(v.chromosome, v.position);
        while blocks[block_index].0 != id {
            block_index += 1;
        }
        index[bucket_of(v.rsid, buckets) as usize].push((v.rsid, location_of(block_index, v)));
    }
    for (bucket, entries) in index.iter_mut().enumerate() {
        items.push((ItemKey::Bucket(bucket as u64), encode_bucket(entries)));
    }
    Some((Layout { buckets, blocks }, items))
}

/// The variants of `read` within `radius` of a hit on its chromosome.
pub(crate) fn within_radius(hits: &[Variant], read: Vec<Variant>, radius: u64) -> Vec<Variant> {
    let mut windows: Vec<(u8, u64, u64)> = hits
        .iter()
        .map(|h| {
            let p = u64::from(h.position);
            (
                h.chromosome,
                p.saturating_sub(radius),
                p.saturating_add(radius),
            )
        })
        .collect();
    windows.sort_unstable();
    read.into_iter()
        .filter(|v| {
            let p = u64::from(v.position);
            let i = windows.partition_point(|w| (w.0, w.1) <= (v.chromosome, p));
            // Windows of one radius: the last one starting at or before `p` reaches furthest.
            i > 0 && windows[i - 1].0 == v.chromosome && p <= windows[i - 1].2
        })
        .collect()
}

/// The block (id) of an index location.
pub(crate) fn block_of_location(layout: &Layout, location: u64) -> Option<u16> {
    let index = usize::try_from(location >> (REGION_BITS - CELL_BITS)).ok()?;
    layout.blocks.get(index).map(|b| b.0)
}

/// The blocks the window `radius` around an index location can reach (those the
/// version holds), its own among them; `None` for a location naming no block.
pub(crate) fn blocks_around(
    layout: &Layout,
    location: u64,
    radius: u64,
    into: &mut BTreeSet<u16>,
) -> Option<()> {
    let block = block_of_location(layout, location)?;
    let chromosome = block >> 8;
    let cell = location & ((1 << (REGION_BITS - CELL_BITS)) - 1);
    let low = (u64::from(block & 0xFF) << REGION_BITS) + (cell << CELL_BITS);
    let high = low + (1 << CELL_BITS) - 1;
    let first = low.saturating_sub(radius) >> REGION_BITS;
    let last = (high.saturating_add(radius) >> REGION_BITS).min(255);
    into.insert(block);
    for region in first..=last {
        let near = chromosome << 8 | region as u16;
        if layout.parts(near).is_some() {
            into.insert(near);
        }
    }
    Some(())
}

/// Every variant of these block items (a bucket among them is refused).
pub(crate) fn decode_blocks(items: &[VersionItem]) -> Option<Vec<Variant>> {
    let mut variants = Vec::new();
    for (key, bytes) in items {
        let ItemKey::Block(block, _) = key else {
            return None;
        };
        variants.extend(decode_block((block >> 8) as u8, bytes)?);
    }
    Some(variants)
}

/// The asked rsids as keys (lower-cased; anything not an rsid is dropped).
pub(crate) fn rsid_keys(rsids: &[String]) -> BTreeSet<u64> {
    crate::domain::Genotype::normalized_rsids(rsids)
        .iter()
        .filter_map(|r| crate::domain::rsid_key(r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_buckets_round_trip() {
        let variants: Vec<Variant> = [
            ("rs1", 5u64, "AG"),
            ("i77", 5, "--"),
            ("rs007", 4_194_303, "ACGT"),
        ]
        .iter()
        .map(|(r, p, c)| Variant::new(r, "7", *p, c).unwrap())
        .collect();
        assert_eq!(
            decode_block(7, &encode_block(&variants)),
            Some(variants.clone())
        );
        let mut entries: Vec<(u64, u64)> = variants
            .iter()
            .enumerate()
            .map(|(i, v)| (v.rsid, location_of(i, v)))
            .collect();
        let bytes = encode_bucket(&mut entries);
        assert_eq!(decode_bucket(&bytes), Some(entries));
        // Damaged bytes are refused, never a panic.
        for bytes in [&[][..], &[5, 1][..], &[0xFF; 12][..], &[1, 0, 0, 0, 9][..]] {
            assert_eq!(decode_block(1, bytes), None);
            assert!(decode_bucket(bytes).is_none() || bytes == [1, 0, 0, 0, 9]);
        }
        for packed in 0..=u16::MAX {
            if crate::domain::unpack_call(packed).is_some() {
                assert_eq!(call_from_code(call_code(packed)), Some(packed));
            }
        }
        for call in ["AG", "--", "A", "-", "ACGT", "DI", "III"] {
            let packed = crate::domain::pack_call(call).unwrap();
            assert_eq!(call_from_code(call_code(packed)), Some(packed), "{call}");
            assert_eq!(call_code(packed) < 56, call.len() <= 2, "{call}");
        }
    }
}
