//! Mirobody: a health-data MCP server. All behaviour lives in this crate; the
//! binaries in `functions/` only build an [`App`] once and hand it requests.
//!
//! See `ARCHITECTURE.md` at the repository root for the map.

mod account_api;
mod app;
pub mod clock;
pub mod config;
mod data_api;
pub mod demo;
pub mod domain;
pub mod external;
pub mod http;
pub mod identity;
pub mod mcp;
pub mod oauth;
pub mod prompts;
pub mod remote;
pub mod resources;
mod services;
pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tools;
pub mod upload;

pub use app::{App, TOKEN_AUDIENCE, TOKEN_ISSUER};
pub use config::{Config, ConfigError, Runtime, StoreKind};
pub use http::RouteGroup;
pub use services::{Services, StartupError};
