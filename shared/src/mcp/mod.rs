//! The MCP protocol: JSON-RPC envelope, errors, eras and versions, the capabilities
//! declaration, method dispatch, tool answers shaped as results, and the wire
//! vocabulary the outbound client shares. Transport-independent: it sees headers and a
//! body, never a socket or a Lambda event.

mod capabilities;
mod dispatch;
pub(crate) mod era;
mod error;
mod jsonrpc;
mod param_headers;
mod results;
pub(crate) mod wire;

pub(crate) use capabilities::Declaration;
pub(crate) use dispatch::{Exchange, McpServer, Reply};
pub(crate) use era::Era;
pub(crate) use error::McpError;
pub(crate) use jsonrpc::McpBody;
