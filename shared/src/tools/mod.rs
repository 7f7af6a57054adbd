//! Tools: the one pipeline every `tools/list` and `tools/call` goes through
//! ([`Toolbox`]), the registry of built-in tools every caller shares, the tool
//! packs registered into it, and the [`ToolSource`] trait the caller's own MCP servers
//! plug in through.
//!
//! Must not shape the wire (`mcp` does) or import `mcp` or `external`.

mod agents;
#[cfg(feature = "fixtures")]
pub(crate) mod fixtures;
mod genetics;
mod health;
#[cfg(test)]
mod listing_tests;
mod notifier;
mod output;
mod params;
mod registry;
pub(crate) mod request_state;
mod source;
mod toolbox;

pub(crate) use agents::AgentPolicy;
/// The console's charts shade the reference range the synonym table knows.
pub(crate) use health::reference_range;
/// The console's data pages answer as `query_health_indicators` does.
pub(crate) use health::{
    HourProfile, as_sent, cgm_report, format_number, hours_and_minutes, profile_hours,
    profile_window,
};
pub(crate) use notifier::Notification;
pub(crate) use notifier::Notifier;
pub(crate) use output::ToolError;
pub(crate) use output::ToolOutput;
pub(crate) use params::input_schema;
pub(crate) use registry::{Caller, DataKind, Registry, Tool, ToolCall, ToolSpec};
#[cfg(feature = "fixtures")]
pub(crate) use request_state::StateSeal;
pub(crate) use source::{
    ItemError, ItemKind, ItemRequest, ListedTool, SourceCall, SourceItems, SourceListing,
    ToolSource, Unavailable,
};
pub(crate) use toolbox::{CallContext, Retry, Toolbox};

use std::sync::Arc;

use crate::store::Store;

/// Registers the product's own tools. Adding a tool is one module and one line here.
pub(crate) fn register_builtin(registry: &mut Registry, store: Arc<dyn Store>) {
    registry.register(health::QueryHealthIndicators::new(store.clone()));
    registry.register(genetics::GetGeneticData::new(store.clone()));
}
