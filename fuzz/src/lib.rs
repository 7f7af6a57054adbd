//! The fuzz targets' bodies: one module per target (`fuzz_targets/<target>.rs` is only
//! `fuzz_target!(|data| mirobody_fuzz::<target>::run(data))`), and the in-process app the
//! request targets drive (`common`).
//!
//! The same files are also a module of the end-to-end test binary
//! (`tests/e2e/fuzz_corpus.rs` includes this file with `#[path]`), which replays every
//! committed seed through each `run` on the stable toolchain, with no sanitizer build.
//! So they refer to each other as `super::...`, never `crate::...`, and use only crates
//! the `e2e` package also depends on.

pub mod common;

pub mod address_guard;
pub mod jwt_verify;
pub mod mcp_request;
pub mod route_and_forms;
pub mod upload_rows;
