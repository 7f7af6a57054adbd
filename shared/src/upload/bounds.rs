//! Bounds on what reading one upload may cost, shared by every format: how
//! far a compressed file may inflate ([`Inflation`]), and the error a bound raises from
//! inside a reader ([`Exceeded`], carried in a `std::io::Error`) so that each parser
//! reports what was too large instead of a damaged file.
//!
//! Owns the guard on every decompressor an upload goes through: gzip (`gunzip`, for any
//! kind) and a zip entry's deflate stream (`inflate`, Apple Health's `export.zip`). Does
//! not know the kinds' own limits (rows, line lengths, a file's size once decompressed):
//! each parser owns those and raises them through [`Exceeded`] too.

use std::io::{self, BufRead, Read};

use flate2::bufread::{DeflateDecoder, MultiGzDecoder};

use super::UploadError;

/// How far a decompressor may inflate its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Inflation {
    /// Decompressed bytes at most.
    pub max_bytes: u64,
    /// Decompressed bytes per compressed byte consumed at most, past [`Self::free`].
    pub max_ratio: u64,
    /// Decompressed bytes allowed whatever the ratio (a small file may compress well).
    pub free: u64,
}

/// The bound on every decompressor an upload goes through, whatever its kind.
///
/// - `max_ratio` 100: real uploads compress 3x (a genome) to about 20x (an Apple Health
///   `export.xml`; the three-year readings CSV of `scripts/bench-upload` is 11x), while
///   a decompression bomb reaches deflate's limit of about 1,030x. At 100x a bomb is
///   refused once it has produced little more than `free` bytes (its input grows ten
///   times slower than its allowance), so it costs milliseconds: a 64 KB gzip of 22
///   million blank CSV rows stops after about 100,000 of them.
/// - `free` 256 KiB: any file that small passes whatever its ratio (the bound is on the
///   whole file so far, so a very regular stretch inside a real file passes too).
/// - `max_bytes` 32 GiB: the largest any kind takes once decompressed (an Apple Health
///   `export.xml`, bounded there by `upload::apple_health::MAX_XML_BYTES`); the other
///   kinds bound their own decompressed size below it.
pub(crate) const INFLATION: Inflation = Inflation {
    max_bytes: 32 << 30,
    max_ratio: 100,
    free: 256 << 10,
};

/// A bound an upload passed: where (a container such as `gzip`, or `None` for the
/// parser's current line) and what was too large. Travels inside an `io::Error` of kind
/// `FileTooLarge` from the reader that counts to the parser that reports it.
#[derive(Debug)]
pub(crate) struct Exceeded {
    location: Option<&'static str>,
    problem: String,
}

impl Exceeded {
    /// A bound that names its own location (`gzip`, `zip`, `file`).
    pub(crate) fn at(location: &'static str, problem: impl Into<String>) -> io::Error {
        Exceeded::error(Some(location), problem.into())
    }

    /// A bound the parser locates (at the line it was reading).
    pub(crate) fn here(problem: impl Into<String>) -> io::Error {
        Exceeded::error(None, problem.into())
    }

    fn error(location: Option<&'static str>, problem: String) -> io::Error {
        io::Error::new(io::ErrorKind::FileTooLarge, Exceeded { location, problem })
    }
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.problem)
    }
}

impl std::error::Error for Exceeded {}

/// The upload error of a read that failed on a bound (`None`: it failed otherwise);
/// `here` is where the parser was, for a bound that does not name its location.
pub(crate) fn refusal(error: &io::Error, here: impl FnOnce() -> String) -> Option<UploadError> {
    let exceeded = error.get_ref()?.downcast_ref::<Exceeded>()?;
    Some(UploadError {
        location: exceeded.location.map_or_else(here, str::to_string),
        problem: exceeded.problem.clone(),
    })
}

/// A size for a message: `64 KiB`, `4 GiB`, else in bytes.
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b.is_multiple_of(1 << 30) => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b.is_multiple_of(1 << 20) => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b.is_multiple_of(1 << 10) => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The compressed side: counts the bytes the decoder consumed (not those buffered ahead
/// of it), so the ratio compares what was inflated with what it was inflated from.
pub(crate) struct Compressed<R> {
    inner: R,
    consumed: u64,
}

impl<R: BufRead> Read for Compressed<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.consumed = self.consumed.saturating_add(n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Compressed<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.consumed = self.consumed.saturating_add(amount as u64);
        self.inner.consume(amount);
    }
}

/// A decoder over [`Compressed`] input: how much of it it consumed.
pub(crate) trait Decoder: Read {
    fn consumed(&self) -> u64;
}

impl<R: BufRead> Decoder for MultiGzDecoder<Compressed<R>> {
    fn consumed(&self) -> u64 {
        self.get_ref().consumed
    }
}

impl<R: BufRead> Decoder for DeflateDecoder<Compressed<R>> {
    fn consumed(&self) -> u64 {
        self.get_ref().consumed
    }
}

/// What the decompressors of one file produced and consumed so far: the entries of one
/// zip share one budget (and one `free` allowance), so many small bombs are one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spent {
    produced: u64,
    consumed: u64,
}

/// The decompressed side: fails with [`Exceeded`] as soon as the output passes the
/// bounds; the bytes of the read that passed them are never handed out.
pub(crate) struct Inflated<D> {
    decoder: D,
    before: Spent,
    produced: u64,
    bounds: Inflation,
    container: &'static str,
}

impl<D: Decoder> Inflated<D> {
    /// The budget spent so far, this stream's part included.
    pub(crate) fn spent(&self) -> Spent {
        Spent {
            produced: self.produced,
            consumed: self.before.consumed.saturating_add(self.decoder.consumed()),
        }
    }

    fn check(&self) -> io::Result<()> {
        let Inflation {
            max_bytes,
            max_ratio,
            free,
        } = self.bounds;
        if self.produced > max_bytes {
            return Err(Exceeded::at(
                self.container,
                format!("the file decompresses to more than {}", size(max_bytes)),
            ));
        }
        let allowed = free.saturating_add(self.spent().consumed.saturating_mul(max_ratio));
        if self.produced > allowed {
            return Err(Exceeded::at(
                self.container,
                format!(
                    "the file decompresses to more than {max_ratio} times its compressed size \
                     (a decompression bomb?)"
                ),
            ));
        }
        Ok(())
    }
}

impl<D: Decoder> Read for Inflated<D> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.decoder.read(out)?;
        self.produced = self.produced.saturating_add(n as u64);
        self.check()?;
        Ok(n)
    }
}

/// A gzip stream (every member of it) decompressed within `bounds`.
pub(crate) fn gunzip<R: BufRead>(
    input: R,
    bounds: Inflation,
) -> Inflated<MultiGzDecoder<Compressed<R>>> {
    Inflated {
        decoder: MultiGzDecoder::new(Compressed {
            inner: input,
            consumed: 0,
        }),
        before: Spent::default(),
        produced: 0,
        bounds,
        container: "gzip",
    }
}

/// A raw deflate stream (a zip entry) decompressed within `bounds`, counting what the
/// archive's earlier entries `spent`.
pub(crate) fn inflate<R: BufRead>(
    input: R,
    bounds: Inflation,
    spent: Spent,
) -> Inflated<DeflateDecoder<Compressed<R>>> {
    Inflated {
        decoder: DeflateDecoder::new(Compressed {
            inner: input,
            consumed: 0,
        }),
        before: spent,
        produced: spent.produced,
        bounds,
        container: "zip",
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(input: impl Read) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        io::copy(&mut { input }, &mut encoder).unwrap();
        encoder.finish().unwrap()
    }

    /// Reads `input` to its end or its first error: the bytes handed out, and the error.
    fn drain(mut input: impl Read) -> (u64, Option<io::Error>) {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            match input.read(&mut buffer) {
                Ok(0) => return (total, None),
                Ok(n) => total += n as u64,
                Err(error) => return (total, Some(error)),
            }
        }
    }

    fn problem(error: &io::Error) -> UploadError {
        refusal(error, || "line ?".into()).expect("a bound")
    }

    #[test]
    fn a_gzip_bomb_is_refused_by_its_ratio_soon_after_its_free_bytes() {
        // 66 MiB of blank CSV rows gzip to about 65 KB (1,000x).
        let blank = b",,\n".repeat(22 << 20);
        let bomb = gzip(blank.as_slice());
        assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
        let (handed, error) = drain(gunzip(bomb.as_slice(), INFLATION));
        let error = problem(&error.expect("refused"));
        assert_eq!(error.location, "gzip");
        assert!(error.problem.contains("100 times"), "{}", error.problem);
        assert!(
            handed <= INFLATION.free + (64 << 10),
            "{handed} bytes handed out"
        );
    }

    #[test]
    fn a_gzip_over_its_size_is_refused_and_a_real_ratio_passes() {
        // Readings as a CGM writes them: about 11x, like scripts/bench-upload's file.
        let mut csv = String::from("indicator,value,unit,time,source\n");
        for i in 0..200_000u64 {
            csv.push_str(&format!(
                "Glucose,{},mg/dL,2024-01-{:02}T{:02}:{:02}:00,Dexcom G7\n",
                70 + (i * 7919) % 90,
                1 + (i / 288) % 28,
                (i / 12) % 24,
                (i % 12) * 5
            ));
        }
        let zipped = gzip(csv.as_bytes());
        let (handed, error) = drain(gunzip(zipped.as_slice(), INFLATION));
        assert!(error.is_none(), "{error:?}");
        assert_eq!(handed, csv.len() as u64);

        let small = Inflation {
            max_bytes: 1 << 20,
            ..INFLATION
        };
        let (handed, error) = drain(gunzip(zipped.as_slice(), small));
        let error = problem(&error.expect("refused"));
        assert_eq!(
            (error.location.as_str(), error.problem.as_str()),
            ("gzip", "the file decompresses to more than 1 MiB")
        );
        assert!(handed <= 1 << 20, "{handed}");
    }

    #[test]
    fn a_deflate_bomb_is_refused_and_other_errors_are_not_bounds() {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&vec![b'<'; 32 << 20]).unwrap();
        let bomb = encoder.finish().unwrap();
        let (_, error) = drain(inflate(bomb.as_slice(), INFLATION, Spent::default()));
        assert_eq!(problem(&error.expect("refused")).location, "zip");
        // Entries share one budget: 5/8 of the free bytes pass alone, not twice.
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        encoder
            .write_all(&vec![0u8; (INFLATION.free * 5 / 8) as usize])
            .unwrap();
        let small = encoder.finish().unwrap();
        let mut first = inflate(small.as_slice(), INFLATION, Spent::default());
        assert!(drain(&mut first).1.is_none());
        let (_, error) = drain(inflate(small.as_slice(), INFLATION, first.spent()));
        assert_eq!(problem(&error.expect("refused")).location, "zip");
        let (_, error) = drain(gunzip(&b"\x1f\x8b\x08\0garbage"[..], INFLATION));
        assert!(refusal(&error.expect("damaged"), || "x".into()).is_none());
        assert_eq!(
            problem(&Exceeded::here("the row is too long")).location,
            "line ?"
        );
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(1000), "1000 bytes");
    }
}
