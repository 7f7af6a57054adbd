//! The end-to-end tests, one test binary with a module per area (as ripgrep does): the
//! crate, the AWS SDKs, SQLite and the HTTP stack are linked once instead of once per
//! file. Each module is the file of its name here, and its tests are named
//! `<area>::<test>` (`cargo nextest run -p e2e -E 'test(/^identity::/)'` runs one area).
//! A new area is a file here and its `mod` line below; the `e2e` library's unit test
//! `wiring::every_test_file_is_a_module_of_the_e2e_binary` fails when a file has none.
//!
//! The binaries they start are built by the test command (`scripts/test`) first; the
//! helpers are the `e2e` library (`tests/support/`).

/// The local Lambda Runtime API harness, shared by `lambda_runtime` and `lambda_observe`.
#[path = "../support/runtime_api.rs"]
mod runtime_api;

mod allowed_origins;
mod architecture;
mod console_access;
mod console_account;
mod console_browser;
mod console_charts;
mod console_data;
mod console_security;
mod console_servers;
mod console_summary;
mod console_upload;
mod cost_model;
mod data_tools;
mod external_servers;
mod faults;
mod fuzz_corpus;
mod gateway_metadata;
mod gateway_status;
mod gen_dataset;
mod hostile;
mod identity;
mod import_deletion;
mod import_year;
mod inspector;
mod keys_secret;
mod lambda_events;
mod lambda_observe;
mod lambda_runtime;
mod lambda_watch;
mod lan_start;
mod lean_functions;
mod load;
mod local_server;
mod mcp_clients;
mod mcp_wire;
mod measures_golden;
mod oauth;
mod oauth_clients;
mod oauth_truths;
mod registry_rename;
mod registry_save;
mod remote_catalogue;
mod remote_oauth;
mod security_abuse;
mod security_consent;
mod security_login;
mod security_revoke;
mod security_robust;
mod security_shares;
mod security_small;
mod security_tokens;
mod smoke;
mod stdio_bridge;
mod telemetry;
mod template_ops;
mod template_routes;
mod tool_controls;
mod uploads;
