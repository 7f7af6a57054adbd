//! The outbound side (docs/REQUIREMENTS.md, section D): every connection this crate makes to a URL a user gave us.
//!
//! Owns every outbound connection. Nothing else in the crate builds an HTTP client:
//! a connection starts with [`AddressGuard::check`], which parses the URL and checks
//! every address it resolves to (D3), and goes out through [`pinned_client`], which
//! connects only to those checked addresses, follows no redirects and uses no proxy
//! (D9). [`GuardedHttp`] puts the two together for one request with a bounded
//! response; the MCP client is built on it.
//!
//! Does not know about accounts, stored servers or MCP messages; those sit on top.

mod client;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod conformance;
mod guard;
mod mcp_catalogue;
mod mcp_client;
pub(crate) mod oauth_client;

pub(crate) use client::{GuardedHttp, HttpError};
#[cfg(feature = "fuzzing")]
pub(crate) use guard::Resolver;
pub(crate) use guard::{AddressGuard, GuardPolicy, INVALID_URL_CODE};
pub(crate) use mcp_catalogue::{Catalogue, CatalogueKind, MAX_URI};
pub(crate) use mcp_client::{
    Dialect, MAX_TOOL_NAME, McpConnection, RemoteError, RemoteTool, ToolList,
};
