//! Consumer raw genotype files: 23andMe (`rsid chromosome position genotype`) and
//! AncestryDNA (`rsid chromosome position allele1 allele2`, chromosomes 23-26 for
//! X, Y, XY, MT), tab- or comma-separated, `#` comments and a header row allowed.
//!
//! Bounded as it is read: a line at most [`MAX_LINE`] bytes, at most
//! [`MAX_LINES`] lines of any kind (blank and comment ones count) and
//! [`MAX_GENOTYPE_FILE`] bytes once decompressed.

use std::io::{BufRead, Read};

use super::bounds::{refusal, size};
use super::{MAX_ROWS, UploadError};
use crate::domain::{Genome, Variant};

/// The largest position accepted (the longest human chromosome has about 250 million
/// base pairs); keeps distances between positions far from overflow.
const MAX_POSITION: u64 = 1_000_000_000;

fn error(line: usize, problem: &str) -> UploadError {
    UploadError {
        location: format!("line {line}"),
        problem: problem.into(),
    }
}

fn chromosome(raw: &str) -> Option<String> {
    let raw = raw.trim().trim_start_matches("chr").to_uppercase();
    let name = match raw.as_str() {
        "23" | "X" => "X",
        "24" | "Y" => "Y",
        "25" | "XY" => "X",
        "26" | "MT" | "M" => "MT",
        n => {
            let number: u8 = n.parse().ok()?;
            return (1..=22).contains(&number).then(|| number.to_string());
        }
    };
    Some(name.to_string())
}

/// What a variant id looks like (lower-cased): `rs` or `i` (a vendor id), then 1 to
/// 12 digits. The genetics tool accepts the same ids.
pub(crate) fn is_rsid(id: &str) -> bool {
    id.strip_prefix("rs")
        .or_else(|| id.strip_prefix('i'))
        .is_some_and(|d| !d.is_empty() && d.len() <= 12 && d.bytes().all(|b| b.is_ascii_digit()))
}

fn allele_ok(a: &str) -> bool {
    !a.is_empty()
        && a.len() <= 4
        && a.chars()
            .all(|c| matches!(c, 'A' | 'C' | 'G' | 'T' | 'D' | 'I' | '-' | '0'))
}

/// The longest line read (a data row is ~30 bytes; vendor comment lines a few hundred):
/// a longer one is refused before it is parsed, so one line never holds much memory.
const MAX_LINE: usize = 16 * 1024;
/// The most lines read, blank and comment ones included: a genome file is about 640,000
/// (23andMe) to 700,000 (AncestryDNA) lines, a few dozen of them comments.
const MAX_LINES: usize = 2 * MAX_ROWS;
/// The largest genotype file read (decompressed): a whole consumer genome is ~25 MB.
pub(crate) const MAX_GENOTYPE_FILE: u64 = 128 * 1024 * 1024;

/// The small-body endpoint's parser (`POST /api/data/genotype`): the body already in
/// memory, read by [`read_genome`].
pub(crate) fn parse_genotype_file(body: &[u8]) -> Result<Genome, UploadError> {
    read_genome(body)
}

/// Reads a raw file row by row into a compact [`Genome`] (each rsid once, the last row
/// of a repeated one wins). Every row is checked, and the first bad one refuses the
/// whole file, naming its 1-based line; lines longer than [`MAX_LINE`], files of more
/// than [`MAX_ROWS`] rows or [`MAX_LINES`] lines, and files larger than
/// [`MAX_GENOTYPE_FILE`] are refused.
pub(crate) fn read_genome(mut reader: impl BufRead) -> Result<Genome, UploadError> {
    let mut variants = Vec::new();
    let mut buffer = Vec::with_capacity(256);
    let mut line = 0;
    let mut total = 0u64;
    loop {
        buffer.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(|e| {
                refusal(&e, || format!("line {}", line + 1))
                    .unwrap_or_else(|| error(line + 1, "the file could not be read"))
            })?;
        if read == 0 {
            break;
        }
        line += 1;
        total = total.saturating_add(read as u64);
        if buffer.len() > MAX_LINE {
            return Err(error(line, "line is too long"));
        }
        if line > MAX_LINES {
            return Err(error(
                line,
                &format!("more than {MAX_LINES} lines in one file"),
            ));
        }
        if total > MAX_GENOTYPE_FILE {
            return Err(error(
                line,
                &format!(
                    "the file is larger than {} (decompressed)",
                    size(MAX_GENOTYPE_FILE)
                ),
            ));
        }
        let text =
            std::str::from_utf8(&buffer).map_err(|_| error(line, "the file is not UTF-8 text"))?;
        if let Some(variant) = parse_row(text, line)? {
            if variants.len() == MAX_ROWS {
                return Err(error(line, "too many rows in one upload"));
            }
            variants.push(variant);
        }
    }
    if variants.is_empty() {
        return Err(error(1, "no genotype rows found"));
    }
    Ok(Genome::from_variants(variants))
}

/// One line: `None` for a blank line, a comment or the header row.
fn parse_row(raw_line: &str, line: usize) -> Result<Option<Variant>, UploadError> {
    let trimmed = raw_line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    // At most six fields are looked at: more than five is refused all the same.
    let mut fields = [""; 6];
    let mut count = 0;
    let split: Box<dyn Iterator<Item = &str>> = if trimmed.contains('\t') {
        Box::new(trimmed.split('\t').map(str::trim))
    } else {
        Box::new(trimmed.split(',').map(|f| f.trim().trim_matches('"')))
    };
    for f in split {
        if let Some(slot) = fields.get_mut(count) {
            *slot = f;
        }
        count += 1;
    }
    if fields[0].eq_ignore_ascii_case("rsid") {
        return Ok(None); // header row
    }
    let mut call = String::with_capacity(4);
    let (rsid, chrom, position) = match count {
        4 => {
            call.push_str(fields[3]);
            (fields[0], fields[1], fields[2])
        }
        5 => {
            call.push_str(fields[3]);
            call.push_str(fields[4]);
            (fields[0], fields[1], fields[2])
        }
        _ => {
            return Err(error(
                line,
                "expected rsid, chromosome, position and genotype columns",
            ));
        }
    };
    call.make_ascii_uppercase();
    let rsid = rsid.to_lowercase();
    if !is_rsid(&rsid) {
        return Err(error(line, "rsid must look like rs123 or i123"));
    }
    let chromosome = chromosome(chrom).ok_or_else(|| error(line, "unknown chromosome"))?;
    let position: u64 = position
        .parse()
        .ok()
        .filter(|p| *p <= MAX_POSITION)
        .ok_or_else(|| error(line, "position must be a whole number up to 1,000,000,000"))?;
    if !allele_ok(&call) {
        return Err(error(
            line,
            "genotype must be made of A, C, G, T, D, I or -",
        ));
    }
    let call = if call.contains('0') { "--" } else { &call };
    Variant::new(&rsid, &chromosome, position, call)
        .map(Some)
        .ok_or_else(|| error(line, "genotype must be made of A, C, G, T, D, I or -"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Genotype;

    #[test]
    fn both_vendor_formats_parse() {
        let me = "# 23andMe\n# rsid\tchromosome\tposition\tgenotype\nrs429358\t19\t44908684\tTC\ni6019299\tMT\t16519\tT\n";
        let rows: Vec<Genotype> = parse_genotype_file(me.as_bytes())
            .unwrap()
            .genotypes()
            .collect();
        assert_eq!(
            rows[0],
            Genotype {
                rsid: "rs429358".into(),
                chromosome: "19".into(),
                position: 44908684,
                genotype: "TC".into()
            }
        );
        let ancestry = "#AncestryDNA\nrsid\tchromosome\tposition\tallele1\tallele2\nrs7412\t19\t44908822\tC\tT\nrs1\t23\t100\t0\t0\n";
        let rows: Vec<Genotype> = parse_genotype_file(ancestry.as_bytes())
            .unwrap()
            .genotypes()
            .collect();
        assert_eq!(
            (
                rows[0].genotype.as_str(),
                rows[1].chromosome.as_str(),
                rows[1].genotype.as_str()
            ),
            ("CT", "X", "--")
        );
    }

    #[test]
    fn a_bad_row_is_named_by_line() {
        let err =
            parse_genotype_file(b"rs1\t1\t100\tAA\nrs1'; DROP TABLE x\t1\t5\tAA\n").unwrap_err();
        assert_eq!(err.location, "line 2");
    }

    #[test]
    fn read_genome_names_the_line_and_bounds_it() {
        let err = read_genome(&b"# c\nrs1\t1\t5\tAA\nrs2\tQ\t5\tAA\n"[..]).unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            ("line 3", "unknown chromosome")
        );
        let mut long = b"rs1\t1\t5\tAA\n".to_vec();
        long.extend(std::iter::repeat_n(b'#', MAX_LINE + 10));
        long.extend(b"\nrs2\t1\t6\tAA\n");
        let err = read_genome(&long[..]).unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            ("line 2", "line is too long")
        );
        let err = read_genome(&b"rs1\t1\t5\tAA\nrs2\t1\t6\t\xff\n"[..]).unwrap_err();
        assert_eq!(err.location, "line 2");
        assert_eq!(
            read_genome(&b"# only\n\n"[..]).unwrap_err().location,
            "line 1"
        );
        // A repeated rsid keeps its last row; CRLF line ends and CSV quoting are fine.
        let genome =
            read_genome(&b"rsid,chromosome,position,genotype\r\n\"rs1\",\"1\",\"5\",\"AA\"\r\nrs1,2,9,ct\r\n"[..])
                .unwrap();
        let rows: Vec<Genotype> = genome.genotypes().collect();
        assert_eq!(
            rows,
            vec![Genotype {
                rsid: "rs1".into(),
                chromosome: "2".into(),
                position: 9,
                genotype: "CT".into()
            }]
        );
    }

    /// Blank and comment lines count against the file's lines; none is free.
    #[test]
    fn every_line_counts_against_the_line_cap() {
        let mut blank = b"rs1\t1\t5\tAA\n".to_vec();
        blank.extend(b"\n#\n".repeat(MAX_LINES / 2));
        let err = read_genome(&blank[..]).unwrap_err();
        assert_eq!(
            (err.location, err.problem),
            (
                format!("line {}", MAX_LINES + 1),
                format!("more than {MAX_LINES} lines in one file")
            )
        );
    }

    /// A 23andMe-sized file: 638,000 rows (~15 MB) streamed into a compact genome.
    /// Prints the time and the genome's size (`cargo nextest run -p mirobody --release
    /// -E 'test(whole_file)' --no-capture` for the optimised figure).
    #[test]
    fn a_whole_file_streams_into_a_compact_genome() {
        const ROWS: usize = 638_000;
        let mut file = String::with_capacity(ROWS * 26);
        file.push_str("# rsid\tchromosome\tposition\tgenotype\n");
        let calls = ["AA", "AG", "CT", "GG", "--", "TT", "C", "DI"];
        for i in 0..ROWS {
            let chromosome = i % 25 + 1;
            let chromosome = match chromosome {
                23 => "X".to_string(),
                24 => "Y".to_string(),
                25 => "MT".to_string(),
                n => n.to_string(),
            };
            let id = if i % 20 == 0 { "i" } else { "rs" };
            file.push_str(&format!(
                "{id}{}\t{chromosome}\t{}\t{}\n",
                1000 + i * 7,
                (i / 25) * 9 + 1,
                calls[i % calls.len()]
            ));
        }
        let started = std::time::Instant::now();
        let genome = read_genome(std::io::BufReader::new(file.as_bytes())).unwrap();
        let took = started.elapsed();
        let bytes = genome.len() * std::mem::size_of::<Variant>();
        println!(
            "read_genome: {ROWS} rows, {} bytes of text, {took:?}, genome {bytes} bytes in memory",
            file.len()
        );
        assert_eq!(genome.len(), ROWS);
        assert!(bytes <= 11_000_000);
    }
}
