//! Mirobody: a health-data MCP server. All behaviour lives in this crate; the
//! binaries in `functions/` only build an [`App`] once and hand it requests.
//!
//! See `ARCHITECTURE.md` at the repository root for the map.

mod app;
pub mod config;
pub mod http;
pub mod mcp;
pub mod prompts;
pub mod resources;
pub mod tools;

pub use app::App;
pub use config::{Config, ConfigError, Runtime};
pub use http::RouteGroup;
