//! Consumer raw genotype files: 23andMe (`rsid chromosome position genotype`) and
//! AncestryDNA (`rsid chromosome position allele1 allele2`, chromosomes 23-26 for
//! X, Y, XY, MT), tab- or comma-separated, `#` comments and a header row allowed.

use super::{MAX_ROWS, UploadError};
use crate::domain::Genotype;

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

pub(crate) fn parse_genotype_file(body: &[u8]) -> Result<Vec<Genotype>, UploadError> {
    let text = std::str::from_utf8(body).map_err(|_| error(1, "the file is not UTF-8 text"))?;
    let mut genotypes = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw_line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = if trimmed.contains('\t') {
            trimmed.split('\t').map(str::trim).collect()
        } else {
            trimmed
                .split(',')
                .map(|f| f.trim().trim_matches('"'))
                .collect()
        };
        if fields[0].eq_ignore_ascii_case("rsid") {
            continue; // header row
        }
        if genotypes.len() == MAX_ROWS {
            return Err(error(line, "too many rows in one upload"));
        }
        let (rsid, chrom, position, call) = match fields.as_slice() {
            [rsid, chrom, pos, call] => (*rsid, *chrom, *pos, call.to_uppercase()),
            [rsid, chrom, pos, a, b] => (*rsid, *chrom, *pos, format!("{a}{b}").to_uppercase()),
            _ => {
                return Err(error(
                    line,
                    "expected rsid, chromosome, position and genotype columns",
                ));
            }
        };
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
        let genotype = if call.contains('0') {
            "--".to_string()
        } else {
            call
        };
        genotypes.push(Genotype {
            rsid,
            chromosome,
            position,
            genotype,
        });
    }
    if genotypes.is_empty() {
        return Err(error(1, "no genotype rows found"));
    }
    Ok(genotypes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_vendor_formats_parse() {
        let me = "# 23andMe\n# rsid\tchromosome\tposition\tgenotype\nrs429358\t19\t44908684\tTC\ni6019299\tMT\t16519\tT\n";
        let rows = parse_genotype_file(me.as_bytes()).unwrap();
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
        let rows = parse_genotype_file(ancestry.as_bytes()).unwrap();
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
}
