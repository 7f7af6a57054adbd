//! Storage: what the product keeps about its users, behind one trait per domain, and
//! the two backends that implement them all.
//!
//! - The traits, each in its own file with the query and outcome types of its
//!   operations: [`HealthStore`] (readings, genotypes, presence, deleting a user's
//!   data), [`AccountStore`] (accounts, their sessions and tokens, abuse counters, the
//!   whole account), [`GrantStore`] (shares, invitations, URL grants, personal and
//!   delegated URLs), [`LoginStore`] (device-login states, mailed links), [`OAuthStore`] (clients, codes, refresh tokens) and
//!   [`McpServerStore`] (a user's external MCP servers, and presence with them in one
//!   read), [`GenomeStore`] (a user's genome, versioned). [`Store`] is all of them (with [`UploadStore`], below): consumers hold an `Arc<dyn Store>`, and one that needs a single
//!   domain can take that trait instead. The records are [`crate::domain`]'s.
//! - The backends, one folder each with one file per domain: `dynamo` (DynamoDB, a
//!   `keys` table found by opaque key and a `data` table keyed by user with
//!   kind-prefixed sort keys; the Lambda default) and `embedded` (one SQLite file with
//!   the same model in typed tables; the local default). `select` opens the
//!   configured one, once per process.
//! - `contract`: one suite of behaviours a user would notice, every case a test on
//!   both backends.
//!
//! A new operation is a method on its domain's trait, its implementation in that
//! domain's file of each backend, and a case in that domain's contract file, listed
//! in `contract/mod.rs`.
//!
//! `uploads` ([`UploadStore`], upload records) is a domain like the others; `objects`
//! ([`UploadObjects`]: where uploaded files wait) has backends of its own: S3 deployed,
//! `objects_local` locally (a directory; a PUT to a signed, expiring URL that may state
//! the exact size, never replacing a stored file).
//!
//! Only this module talks to a database. It never sees an HTTP type and never logs
//! user data (health readings and genotypes are health data); its errors and log
//! lines name the operation, never a key or a value. Every read of an expiring record
//! checks its expiry itself.

mod accounts;
#[cfg(test)]
mod contract;
mod dynamo;
#[cfg(feature = "sqlite")]
mod embedded;
mod genome;
mod genome_codec;
mod grants;
mod health;
mod keys;
mod logins;
mod mcp_servers;
mod oauth;
mod objects;
mod objects_local;
#[cfg(feature = "s3")]
mod objects_s3;
mod select;
mod uploads;

#[cfg(test)]
pub(crate) use accounts::MAX_REVOKED_SESSIONS;
pub(crate) use accounts::apply_token_change;
pub(crate) use accounts::window;
pub use accounts::{AccountRecords, AccountStore, Created, TokenChange};
pub use dynamo::{DynamoStore, DynamoTables, IoCounters};
#[cfg(feature = "sqlite")]
pub use embedded::EmbeddedStore;
pub use genome::{GenomeStore, GenomeSummary, Neighbourhood};
pub use grants::GrantStore;
pub(crate) use health::TIME_MAX;
pub use health::{
    CatalogueEntry, DayTotal, GlucoseBands, HealthStore, HourValue, Period, ReadingQuery, Rollup,
    RollupPoint, WriteReport,
};
pub use logins::LoginStore;
pub use mcp_servers::McpServerStore;
pub(crate) use mcp_servers::{McpServerBody, McpServerParts};
pub use oauth::OAuthStore;
pub use objects::{BodyChunks, ObjectBody, PutTarget, Received, StoredObject, UploadObjects};
pub use objects_local::{LOCAL_OBJECTS_PATH, LocalObjects};
#[cfg(feature = "s3")]
pub(crate) use objects_s3::open_s3_objects;
pub use select::{EMBEDDED_FILE, OBJECTS_DIR, open_store, open_upload_objects};
pub use uploads::{MAX_LISTED_UPLOADS, UploadOutcome, UploadStore};

/// A fresh DynamoDB store on the tests' shared moto server (its own tables), for tests
/// outside `store` that measure what a consumer costs; the guard keeps moto running.
#[cfg(test)]
pub(crate) async fn moto_dynamo_store()
-> (DynamoStore, Option<std::sync::Arc<crate::testing::Moto>>) {
    let (endpoint, guard) = contract::moto_endpoint();
    let client = contract::moto_client(&endpoint);
    let tables = contract::fresh_tables();
    DynamoStore::create_tables(&client, &tables)
        .await
        .expect("tables created in moto");
    (DynamoStore::new(client, tables), guard)
}

/// A failure of the storage backend. Messages name the operation, never user data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The backend could not be reached or answered with an error.
    Unavailable(String),
    /// Stored data could not be read back (a bug or a manual edit).
    Corrupt(String),
    /// An import's guarded write found its upload gone or ended (the user deleted their
    /// data or account meanwhile): nothing of that write was stored.
    ImportStopped,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(f, "store unavailable: {why}"),
            StoreError::Corrupt(why) => write!(f, "stored data unreadable: {why}"),
            StoreError::ImportStopped => f.write_str("the import's upload was deleted or ended"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Everything the product stores: the eight domains' traits in one, so that
/// `Arc<dyn Store>` serves a consumer that needs several, and one that needs a single
/// domain can take the narrow trait (`Arc<dyn HealthStore>`, by upcasting).
/// Implemented for every type that implements all eight.
pub trait Store:
    HealthStore
    + AccountStore
    + GrantStore
    + LoginStore
    + OAuthStore
    + McpServerStore
    + UploadStore
    + GenomeStore
{
}

impl<
    T: HealthStore
        + AccountStore
        + GrantStore
        + LoginStore
        + OAuthStore
        + McpServerStore
        + UploadStore
        + GenomeStore,
> Store for T
{
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A consumer holding `Arc<dyn Store>` can hand out just the domain trait another
    /// one needs.
    #[tokio::test]
    async fn a_store_upcasts_to_each_domain_trait() {
        let dir = std::env::temp_dir().join(format!(
            "mirobody-upcast-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.join("db.sqlite3")).unwrap());
        let health: Arc<dyn HealthStore> = store.clone();
        let accounts: Arc<dyn AccountStore> = store.clone();
        let oauth: Arc<dyn OAuthStore> = store.clone();
        let servers: Arc<dyn McpServerStore> = store;
        assert_eq!(
            health.data_presence("u").await.unwrap(),
            crate::domain::DataPresence::default()
        );
        assert_eq!(accounts.account("u").await.unwrap(), None);
        assert_eq!(oauth.client("c", 0).await.unwrap(), None);
        assert!(servers.mcp_servers("u").await.unwrap().is_empty());
        drop((health, accounts, oauth, servers));
        let _ = std::fs::remove_dir_all(dir);
    }
}
