//! Tools that live outside this process (the caller's own MCP servers), as the
//! toolbox sees them, with those servers' resources and prompts.
//!
//! Owns the [`ToolSource`] trait and the shape of what a source lists. A source keeps
//! its tools in its own namespace, lists them for a caller and runs calls; the toolbox
//! decides what the caller sees and merges. Knows nothing of any source's internals:
//! `external` implements the trait, and `tools` never imports `external`.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::output::{ToolError, ToolOutput};
use super::registry::Caller;
use super::toolbox::Retry;
use crate::domain::McpServerRecord;
use crate::store::StoreError;

/// A source of tools beside the built-in ones.
pub(crate) trait ToolSource: Send + Sync {
    /// Whether `name` is in this source's namespace (no built-in tool's name is).
    fn owns(&self, name: &str) -> bool;

    /// The caller's tools from this source. `servers` is the caller's list of MCP
    /// servers as the store answered it, read together with their data presence (one
    /// round trip for both).
    fn list<'a>(
        &'a self,
        caller: &'a Caller,
        servers: Result<Vec<McpServerRecord>, StoreError>,
    ) -> BoxFuture<'a, SourceListing>;

    /// Runs the tool `name` for `caller`. A name that is not one of the caller's tools
    /// is [`ToolError::UnknownTool`]; a failure of the source itself is a tool error
    /// output the model can read.
    fn call<'a>(
        &'a self,
        caller: &'a Caller,
        name: &'a str,
        call: SourceCall<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// The caller's resources, resource templates or prompts from this source, each a
    /// listing entry under its exposed URI or name. None unless the source has some.
    fn items<'a>(&'a self, caller: &'a Caller, kind: ItemKind) -> BoxFuture<'a, SourceItems> {
        let _ = (caller, kind);
        Box::pin(async { SourceItems::default() })
    }

    /// Whether a resource URI is in this source's namespace (no built-in one is).
    fn owns_uri(&self, uri: &str) -> bool {
        let _ = uri;
        false
    }

    /// `resources/read` of an exposed URI, or `prompts/get` of an exposed name: the
    /// result as the wire carries it (URIs exposed again).
    fn fetch<'a>(
        &'a self,
        caller: &'a Caller,
        request: ItemRequest<'a>,
    ) -> BoxFuture<'a, Result<Map<String, Value>, ItemError>> {
        let _ = (caller, request);
        Box::pin(async { Err(ItemError::Unknown) })
    }
}

/// Which of a source's catalogues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    Resources,
    ResourceTemplates,
    Prompts,
}

/// What one catalogue of a source lists for a caller.
#[derive(Debug, Default)]
pub(crate) struct SourceItems {
    /// Listing entries, in listing order.
    pub(crate) items: Vec<Value>,
    pub(crate) unavailable: Vec<Unavailable>,
    /// How long the list stays true; `None` when the source had nothing to ask.
    pub(crate) valid_for: Option<Duration>,
}

/// One item asked for by its exposed URI or name.
pub(crate) enum ItemRequest<'a> {
    Resource {
        uri: &'a str,
    },
    Prompt {
        name: &'a str,
        arguments: Map<String, Value>,
    },
}

/// Why an item could not be given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemError {
    /// Not one of the caller's items (never listed, or hidden from it).
    Unknown,
    /// The request is malformed for the item (a prompt's arguments): in words.
    Invalid(String),
    /// The item's server failed, or answered more than is passed on: in words.
    Failed(String),
}

/// A call as a source receives it: the arguments, and what a source that must ask the
/// person first needs (whether the client can show a form question, and a multi-round
/// retry's answers).
pub(crate) struct SourceCall<'a> {
    pub(crate) arguments: Map<String, Value>,
    /// The client declared form-mode elicitation (2026-07-28 `_meta`).
    pub(crate) can_ask: bool,
    /// The client declared URL-mode elicitation (it can send its person to a page).
    pub(crate) can_open_url: bool,
    /// A multi-round retry's answers and state, or why they are malformed.
    pub(crate) retry: Result<Retry<'a>, String>,
}

/// One listed tool: the name it is called by and its `tools/list` entry, serialised
/// once (a warm listing copies no bytes).
pub(crate) struct ListedTool {
    pub(crate) name: String,
    pub(crate) listing: Box<RawValue>,
}

/// A part of a source that did not answer, left out of this listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unavailable {
    /// The server's name (`*` when the list of servers itself could not be read).
    pub(crate) server: String,
    pub(crate) error: String,
}

/// What a source lists for one caller.
#[derive(Default)]
pub(crate) struct SourceListing {
    /// Groups of listed tools, each shared with the source's cache, with the
    /// positions of the ones shown, in listing order.
    groups: Vec<(Arc<[ListedTool]>, Vec<usize>)>,
    pub(crate) unavailable: Vec<Unavailable>,
    /// How long what was listed stays true (the least validity left of what it was
    /// made from); `None` when it does not expire on its own.
    pub(crate) valid_for: Option<Duration>,
}

impl SourceListing {
    /// Adds the tools at `shown` of `group`, after those already listed.
    pub(crate) fn push(&mut self, group: Arc<[ListedTool]>, shown: Vec<usize>) {
        self.groups.push((group, shown));
    }

    /// Keeps only the tools whose names `keep` admits.
    pub(crate) fn retain(&mut self, keep: &dyn Fn(&str) -> bool) {
        for (group, shown) in &mut self.groups {
            shown.retain(|&i| keep(&group[i].name));
        }
    }

    /// Every listed tool, in listing order.
    pub(crate) fn tools(&self) -> impl Iterator<Item = &ListedTool> {
        self.groups
            .iter()
            .flat_map(|(group, shown)| shown.iter().map(|&i| &group[i]))
    }
}
