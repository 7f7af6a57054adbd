//! Mirobody: a health-data MCP server. All behaviour lives in this crate; the
//! binaries in `functions/` only build an [`App`] once and hand it requests.
//!
//! See `ARCHITECTURE.md` at the repository root for the map.

#![warn(unreachable_pub)]

mod account_api;
mod app;
pub mod clock;
mod config;
mod console;
mod data_api;
mod demo;
pub mod domain;
mod external;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod http;
pub mod identity;
mod imports;
mod mcp;
mod oauth;
pub mod observe;
mod prompts;
mod remote;
mod resources;
mod services;
pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tools;
mod upload;
mod whole_account;

pub use app::App;
pub use config::{AllowedOrigins, Config, ConfigError, Runtime, StoreKind};
pub use http::{RouteGroup, SourceAddr};
pub use imports::{ImportError, ImportSummary, Importer};
pub use services::{Services, StartupError};
