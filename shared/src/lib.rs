//! Mirobody: a health-data MCP server. All behaviour lives in this crate; the
//! binaries in `functions/` only build an [`App`] once and hand it requests.
//!
//! See `ARCHITECTURE.md` at the repository root for the map.

#![warn(unreachable_pub)]
// A Lambda function's build links its route group only (Cargo features, `features.rs`):
// code, re-exports and a dispatch's arguments only other groups use are unused there. The
// full build (the local server, the tests, CI's clippy) still finds all of them.
#![cfg_attr(
    not(feature = "full"),
    allow(dead_code, unused_imports, unused_variables)
)]

mod api;
mod app;
pub mod aws;
pub mod clients;
pub mod clock;
mod config;
#[cfg(feature = "console")]
mod console;
mod demo;
pub mod domain;
mod external;
mod features;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod hashing;
pub mod http;
pub mod identity;
mod imports;
pub mod mail;
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
mod wire;

pub use app::{App, BodyPlan, routes};
pub use config::{AllowedOrigins, Config, ConfigError, Runtime, StoreKind};
pub use http::{RouteGroup, SourceAddr};
pub use imports::{ImportError, ImportSummary, Importer};
pub use services::{Migrated, Services, StartupError};
