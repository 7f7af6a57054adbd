//! Storage: a small domain-level `Store` trait and its two implementations,
//! DynamoDB (`dynamo`) and embedded SQLite (`embedded`), which one contract test
//! suite (`contract`) runs against unchanged.
//!
//! Owns the storage model of DESIGN ("Storage"): the data table keyed by user, with
//! kind-prefixed sort keys. Only this module talks to a database; it never sees an
//! HTTP type and never logs user data (health readings and genotypes are health data).

use std::future::Future;
use std::pin::Pin;

mod accounts;
#[cfg(test)]
mod contract;
mod dynamo;
mod embedded;
mod health;
mod mcp_servers;
mod oauth;
mod select;

pub use accounts::{AccountStore, Created};
pub use dynamo::{DynamoStore, DynamoTables};
pub use embedded::EmbeddedStore;
pub use health::{HealthStore, ReadingQuery, WriteReport};
pub use mcp_servers::McpServerStore;
pub(crate) use mcp_servers::{McpServerBody, McpServerParts};
pub use oauth::OAuthStore;
pub use select::{EMBEDDED_FILE, open_store};

pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A failure of the storage backend. Messages name the operation, never user data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The backend could not be reached or answered with an error.
    Unavailable(String),
    /// Stored data could not be read back (a bug or a manual edit).
    Corrupt(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(f, "store unavailable: {why}"),
            StoreError::Corrupt(why) => write!(f, "stored data unreadable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Everything the product stores: the four domains' traits in one, so that
/// `Arc<dyn Store>` serves a consumer that needs several, and one that needs a single
/// domain can take the narrow trait (`Arc<dyn HealthStore>`, by upcasting).
/// Implemented for every type that implements all four.
pub trait Store: HealthStore + AccountStore + OAuthStore + McpServerStore {}

impl<T: HealthStore + AccountStore + OAuthStore + McpServerStore> Store for T {}
