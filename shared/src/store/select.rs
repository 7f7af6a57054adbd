//! Picks and opens the configured store, once per process.

use std::sync::Arc;

use super::{DynamoStore, DynamoTables, EmbeddedStore, Store, StoreError};
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
