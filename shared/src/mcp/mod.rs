//! The MCP protocol: JSON-RPC envelope, errors, eras and versions, the capabilities
//! declaration, method dispatch, and the wire vocabulary the outbound client shares.
//! Transport-independent: it sees headers and a body, never a socket or a Lambda event.

mod capabilities;
mod dispatch;
pub mod era;
mod error;
mod jsonrpc;
pub(crate) mod wire;

pub use capabilities::Declaration;
pub use dispatch::{CACHE_TTL_MS, Exchange, McpServer, Reply};
pub use era::Era;
pub use error::McpError;
