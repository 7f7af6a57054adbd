//! Tools: the registry every caller shares (E3), and the tool packs registered into it.

mod agents;
#[cfg(feature = "fixtures")]
pub mod fixtures;
mod genetics;
mod health;
mod registry;
pub mod request_state;

pub use agents::AgentPolicy;
pub use registry::{
    CallContext, Caller, DataKind, Notifier, PAGE_SIZE, Registry, Tool, ToolCall, ToolOutput,
    ToolSpec, call_result,
};
pub use request_state::StateSeal;

use std::sync::Arc;

use crate::store::Store;

/// Registers the product's own tools. Adding a tool is one module and one line here.
pub fn register_builtin(registry: &mut Registry, store: &Arc<dyn Store>) {
    registry.register(health::QueryHealthIndicators {
        store: store.clone(),
    });
    registry.register(genetics::GetGeneticData {
        store: store.clone(),
    });
}
