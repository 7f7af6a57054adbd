//! Tools: the registry every caller shares (E3), and the tool packs registered into it.

#[cfg(feature = "fixtures")]
pub mod fixtures;
mod registry;
pub mod request_state;

pub use registry::{
    BoxFuture, CallContext, Caller, Notifier, PAGE_SIZE, Registry, Tool, ToolCall, ToolOutput,
    ToolSpec, call_result,
};
pub use request_state::StateSeal;

/// Registers the product's own tools. Adding a tool is one module and one line here.
pub fn register_builtin(_registry: &mut Registry) {}
