//! The user's external MCP servers (requirements D1-D9): the registry API and their tools on `/mcp`.
//!
//! Owns the per-account registry (the typed cores under the seed's `/api/user/mcp*`
//! table form and the richer `/api/user/mcp-servers` form, both over the same stored
//! records; their handlers are `api/registry.rs`), the
//! registration probe, sealed credentials, tool namespacing, and listing and forwarding
//! calls for `/mcp` as the toolbox's `tools::ToolSource`. Every connection goes through
//! `remote` (the address guard, pinned and redirect-free); only `store` keeps the
//! records. Imports nothing from `mcp`: results are shaped there.
//!
//! Must not: return or log a credential (responses show the auth type and header name
//! only), log a tool's arguments or results (health data may pass through), or let one
//! failing server affect another.

mod approval;
mod catalogue;
mod credentials;
mod naming;
mod oauth;
mod probe;
mod registry;
mod results;
mod tool_source;

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use crate::clock::Clock;
use crate::domain::McpServerRecord;
use crate::http::{ApiError, Form, STORAGE_UNAVAILABLE};
use crate::identity::Sealer;
use crate::remote::{GuardedHttp, INVALID_URL_CODE};
use crate::store::{McpServerStore, StoreError};

pub(crate) use credentials::AuthInput;
pub(crate) use probe::PROBE_BUDGET;
pub(crate) use registry::{Changes, Registration};
pub(crate) use results::DEFAULT_RESULT_MAX_BYTES;
pub(crate) use tool_source::CONNECT_BUDGET;

/// How each of a server's stored tools is named on `/mcp` (the same mangling, cut and
/// hash as the gateway's listing), in the snapshot's order.
pub(crate) fn exposed_names(server: &str, tools: &[crate::domain::McpToolSnapshot]) -> Vec<String> {
    naming::namespaced_tools(server, tools.iter().map(|tool| tool.name.as_str()))
}

/// Whether a tool name on `/mcp` is one of a user's own MCP servers' tools.
pub(crate) fn is_external_tool(name: &str) -> bool {
    name.starts_with(naming::PREFIX)
}

/// The external-server side of the app, built once per process.
pub(crate) struct ExternalServers {
    store: Arc<dyn McpServerStore>,
    sealer: Arc<Sealer>,
    http: Arc<GuardedHttp>,
    clock: Arc<dyn Clock>,
    cache: tool_source::SnapshotCache,
    probe_budget: Duration,
    connect_budget: Duration,
    /// A forwarded result's content is cut to this many bytes (`results`).
    result_max_bytes: usize,
    /// One OAuth refresh at a time (`oauth`).
    refreshing: tokio::sync::Mutex<()>,
    /// The console's origin, for the words that send a person to their servers' page.
    console_origin: String,
}

impl ExternalServers {
    pub(crate) fn new(
        store: Arc<dyn McpServerStore>,
        sealer: Arc<Sealer>,
        http: Arc<GuardedHttp>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        ExternalServers {
            store,
            sealer,
            http,
            clock,
            cache: tool_source::SnapshotCache::default(),
            probe_budget: PROBE_BUDGET,
            connect_budget: CONNECT_BUDGET,
            result_max_bytes: DEFAULT_RESULT_MAX_BYTES,
            refreshing: tokio::sync::Mutex::new(()),
            console_origin: String::new(),
        }
    }

    /// Shorter budgets (tests of slow servers).
    pub(crate) fn with_budgets(mut self, probe: Duration, connect: Duration) -> Self {
        self.probe_budget = probe;
        self.connect_budget = connect;
        self
    }

    /// The console's origin (where a person signs in to their OAuth servers).
    pub(crate) fn with_console_origin(mut self, origin: String) -> Self {
        self.console_origin = origin;
        self
    }

    /// Another limit for forwarded results (`MCP_REMOTE_RESULT_MAX_BYTES`).
    pub(crate) fn with_result_limit(mut self, bytes: usize) -> Self {
        self.result_max_bytes = bytes;
        self
    }

    /// How long a server's tool list is reused on `/mcp` (the default is
    /// `tool_source::SNAPSHOT_TTL`).
    pub(crate) fn with_snapshot_ttl(mut self, ttl: Duration) -> Self {
        self.cache = tool_source::SnapshotCache::with_ttl(ttl);
        self
    }
}

/// The order servers are listed in, on `/mcp` and by the API: `order`, then name.
fn sort_for_listing(records: &mut [McpServerRecord]) {
    records.sort_by(|a, b| (a.order, &a.name).cmp(&(b.order, &b.name)));
}

/// A refusal of the registry API: one status, one stable code, one message. Becomes an
/// `ApiError` in the seed's envelope or the REST form, which renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegistryError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl RegistryError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        RegistryError {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub(crate) fn invalid_url(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, INVALID_URL_CODE, message)
    }

    pub(crate) fn probe_failed(why: &str) -> Self {
        let why: String = why.chars().take(300).collect();
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "mcp_probe_failed",
            format!("the MCP server could not be probed: {why}; nothing was saved"),
        )
    }

    /// Switching a disabled server on found it not answering: the entry is unchanged.
    pub(crate) fn switch_on_failed(why: &str) -> Self {
        let why: String = why.chars().take(300).collect();
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "mcp_probe_failed",
            format!(
                "the MCP server could not be switched on: {why}; it stays switched off and \
                 nothing was changed"
            ),
        )
    }

    /// The OAuth sign-in to a server did not work (`external::oauth`): why, in words.
    pub(crate) fn sign_in_failed(why: &str) -> Self {
        let why: String = why.chars().take(300).collect();
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "mcp_sign_in_failed",
            format!("signing in to the MCP server did not work: {why}"),
        )
    }

    pub(crate) fn unknown_tool(field: &str, names: &[&str]) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_mcp_tool",
            format!(
                "{field} names tools the server does not list: {}",
                names.join(", ")
            ),
        )
    }

    pub(crate) fn immutable(field: &str) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "immutable_field",
            format!("{field} cannot be changed; delete the server and register it again"),
        )
    }

    pub(crate) fn name_taken(name: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "mcp_server_name_taken",
            format!(
                "a server named {name:?} (or one with the same tool namespace) is already registered"
            ),
        )
    }

    pub(crate) fn url_taken() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "mcp_server_url_taken",
            "this url is already registered under another name",
        )
    }

    /// The url uniqueness also holds for the empty url of disabled entries.
    pub(crate) fn url_less_taken() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "mcp_server_url_taken",
            "another server is already saved without a url; delete it first",
        )
    }

    pub(crate) fn not_found(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no MCP server named {name:?}"),
        )
    }

    pub(crate) fn unavailable(error: StoreError) -> Self {
        tracing::warn!(%error, "external server registry store failure");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            STORAGE_UNAVAILABLE,
        )
    }

    /// For the seed's table endpoints: `{success: false, code, msg}` plus the `error` code.
    pub(crate) fn seed(self) -> ApiError {
        self.in_form(Form::Seed)
    }

    /// For the REST endpoints: `{error: {code, message}}`.
    pub(crate) fn rest(self) -> ApiError {
        self.in_form(Form::Rest)
    }

    fn in_form(self, form: Form) -> ApiError {
        ApiError::Coded {
            status: self.status,
            code: self.code,
            message: self.message,
            form,
        }
    }
}
