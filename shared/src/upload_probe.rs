//! A stand-in for the import runner while it is built beside the S3 side (issue 14,
//! part s3): the `import` function reads the uploaded object through the S3 backend
//! as a stream and counts its bytes, so the deployed path (S3 event, function, bucket)
//! is tested end to end before the importer lands.
//!
//! merge: removed once `functions/import` calls `mirobody::Importer::import_object`.
//! Never holds the object in memory; never logs a key or any content.

use tokio::io::AsyncReadExt;

use crate::config::Config;
use crate::store::{S3Objects, StoreError, UploadObjects, open_s3_objects};

/// Reads uploaded objects from the configured bucket (`MIROBODY_UPLOAD_BUCKET`).
pub struct UploadProbe {
    objects: S3Objects,
}

impl UploadProbe {
    /// Builds the S3 client once (per cold start).
    pub async fn open(config: &Config) -> Result<UploadProbe, StoreError> {
        Ok(UploadProbe {
            objects: open_s3_objects(config).await?,
        })
    }

    /// Streams object `key` through a fixed buffer and counts its bytes: `None` when it
    /// is not there (already imported and removed, or never sent).
    pub async fn count_bytes(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let Some(mut object) = self.objects.open(key).await? else {
            return Ok(None);
        };
        let mut buffer = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            let read = object
                .body
                .read(&mut buffer)
                .await
                .map_err(|e| StoreError::Unavailable(format!("read upload: {}", e.kind())))?;
            if read == 0 {
                return Ok(Some(total));
            }
            total = total.saturating_add(read as u64);
        }
    }
}
