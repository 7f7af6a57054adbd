//! The MCP protocol: JSON-RPC envelope, errors, eras and versions, the capabilities
//! declaration, method dispatch, and tool answers shaped as results. The wire
//! vocabulary it shares with the outbound client is `crate::wire`.
//! Transport-independent: it sees headers and a body, never a socket or a Lambda event.

mod capabilities;
mod dispatch;
pub(crate) mod era;
mod error;
mod jsonrpc;
mod param_headers;
mod results;

pub(crate) use capabilities::Declaration;
pub(crate) use dispatch::{Exchange, McpServer, Reply};
pub(crate) use era::Era;
pub(crate) use error::McpError;
pub(crate) use jsonrpc::McpBody;
