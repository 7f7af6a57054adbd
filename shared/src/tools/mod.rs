//! Tools: the one pipeline every `tools/list` and `tools/call` goes through
//! ([`Toolbox`]), the registry of built-in tools every caller shares, the tool
//! packs registered into it, and the [`ToolSource`] trait the caller's own MCP servers
//! plug in through.
//!
//! Must not shape the wire (`mcp` does) or import `mcp` or `external`.

mod agents;
#[cfg(feature = "fixtures")]
pub mod fixtures;
mod genetics;
mod health;
mod notifier;
mod output;
mod registry;
pub mod request_state;
mod source;
mod toolbox;

pub use agents::AgentPolicy;
pub(crate) use notifier::Notification;
pub use notifier::Notifier;
pub(crate) use output::ToolError;
pub use output::ToolOutput;
pub use registry::{Caller, DataKind, PAGE_SIZE, Registry, Tool, ToolCall, ToolSpec};
pub use request_state::StateSeal;
pub(crate) use source::{ListedTool, SourceListing, ToolSource, Unavailable};
pub(crate) use toolbox::{CallContext, Retry, Toolbox};

use std::sync::Arc;

use crate::store::HealthStore;

/// Registers the product's own tools. Adding a tool is one module and one line here.
pub fn register_builtin(registry: &mut Registry, store: Arc<dyn HealthStore>) {
    registry.register(health::QueryHealthIndicators::new(store.clone()));
    registry.register(genetics::GetGeneticData::new(store.clone()));
}
