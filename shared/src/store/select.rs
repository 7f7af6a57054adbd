//! Picks and opens the configured store, once per process.

use std::sync::Arc;

use super::{
    DynamoStore, DynamoTables, EmbeddedStore, LocalObjects, Store, StoreError, UploadObjects,
};
use crate::config::{Config, StoreKind};

/// File name of the embedded database inside the data directory.
pub const EMBEDDED_FILE: &str = "mirobody.sqlite3";

pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match config.store {
        StoreKind::Embedded => Arc::new(EmbeddedStore::open(config.data_dir.join(EMBEDDED_FILE))?),
        StoreKind::DynamoDb => {
            let tables = DynamoTables {
                keys: config.keys_table.clone(),
                data: config.data_table.clone(),
            };
            Arc::new(DynamoStore::from_env(tables, config.dynamodb_endpoint.clone()).await)
        }
    })
}

/// The directory under the data directory where uploaded files wait locally.
pub const OBJECTS_DIR: &str = "uploads";

/// Where uploaded files wait until imported: locally a directory under the data
/// directory, PUT to the local server itself at its public origin.
pub async fn open_upload_objects(config: &Config) -> Result<Arc<dyn UploadObjects>, StoreError> {
    Ok(Arc::new(LocalObjects::open(
        config.data_dir.join(OBJECTS_DIR),
        &config.public_origin(),
    )?))
}
