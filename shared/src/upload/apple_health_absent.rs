//! Apple Health exports in a build without the `apple-health` feature (the mcp,
//! personal and oauth functions, which read no upload): the same interface as
//! `apple_health.rs`, refusing every file in words.

use std::io::{BufRead, Read};

use super::UploadError;
use crate::domain::Reading;

/// What an import of one export saw (nothing, here).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AppleHealthReport {
    pub imported: u64,
}

fn refused() -> UploadError {
    UploadError {
        location: "file".into(),
        problem: "Apple Health exports are read by the import function, not this one".into(),
    }
}

pub(crate) fn stream_apple_health_xml<R: BufRead>(
    _reader: R,
    _each: &mut dyn FnMut(Reading) -> Result<(), UploadError>,
) -> Result<AppleHealthReport, UploadError> {
    Err(refused())
}

pub(crate) fn stream_apple_health_zip<R: Read>(
    _reader: R,
    _each: &mut dyn FnMut(Reading) -> Result<(), UploadError>,
) -> Result<AppleHealthReport, UploadError> {
    Err(refused())
}
