//! Picks and opens the configured store and the place uploaded files wait, once per
//! process.

use std::sync::Arc;

#[cfg(feature = "sqlite")]
use super::EmbeddedStore;
#[cfg(feature = "s3")]
use super::open_s3_objects;
use super::{
    DynamoStore, DynamoTables, LocalObjects, PutTarget, Store, StoreError, StoredObject,
    UploadObjects,
};
use crate::aws::AwsConfig;
use crate::config::{Config, Runtime, StoreKind};
use async_trait::async_trait;

/// File name of the embedded database inside the data directory.
pub const EMBEDDED_FILE: &str = "mirobody.sqlite3";

/// A build without the `sqlite` feature (every Lambda function) has no embedded store:
/// asking for it is refused at start-up, naming the setting.
pub async fn open_store(config: &Config, aws: &AwsConfig) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match config.store {
        #[cfg(feature = "sqlite")]
        StoreKind::Embedded => Arc::new(EmbeddedStore::open(config.data_dir.join(EMBEDDED_FILE))?),
        #[cfg(not(feature = "sqlite"))]
        StoreKind::Embedded => {
            return Err(StoreError::Unavailable(
                "MIROBODY_STORE=embedded: this build has no embedded store (mirobody feature `sqlite`)"
                    .into(),
            ));
        }
        StoreKind::DynamoDb => {
            let tables = DynamoTables {
                keys: config.keys_table.clone(),
                data: config.data_table.clone(),
            };
            Arc::new(DynamoStore::from_config(
                aws.shared().await,
                tables,
                config.dynamodb_endpoint.clone(),
            ))
        }
    })
}

/// The directory under the data directory where uploaded files wait locally.
pub const OBJECTS_DIR: &str = "uploads";

/// Where uploaded files wait until imported: the S3 bucket of `MIROBODY_UPLOAD_BUCKET`
/// when one is set (deployed: presigned PUT URLs); otherwise, locally, a directory under
/// the data directory, PUT to the local server itself at its public origin. In Lambda
/// without a bucket (a read-only file system) none: creating an upload answers 503
/// there, and nothing touches the disk at a cold start. A build without the `s3` feature
/// (a function whose group keeps no files) ignores the bucket.
pub async fn open_upload_objects(
    config: &Config,
    aws: &AwsConfig,
) -> Result<Arc<dyn UploadObjects>, StoreError> {
    #[cfg(feature = "s3")]
    if config.upload_bucket.is_some() {
        return Ok(Arc::new(open_s3_objects(config, aws.shared().await)?));
    }
    Ok(match config.runtime {
        Runtime::Local => Arc::new(LocalObjects::open(
            config.data_dir.join(OBJECTS_DIR),
            &config.public_origin(),
        )?),
        Runtime::Lambda => Arc::new(NoObjects),
    })
}

/// No place for uploaded files: every upload is refused as unavailable.
struct NoObjects;

#[async_trait]
impl UploadObjects for NoObjects {
    async fn put_target(&self, _: &str, _: u64, _: Option<u64>) -> Result<PutTarget, StoreError> {
        Err(StoreError::Unavailable(
            "upload objects: none configured".into(),
        ))
    }

    async fn open(&self, _: &str) -> Result<Option<StoredObject>, StoreError> {
        Ok(None)
    }

    async fn remove(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
}
