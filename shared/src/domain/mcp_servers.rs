//! A user's own external MCP servers: the registry record (url, auth kind, sealed
//! credential, allowed tools, the probe's tool snapshot, connection health) and the
//! outcomes of writing one.
//!
//! Plain records: the credential appears only sealed. Knows nothing of probing,
//! forwarding or storage.

use serde::{Deserialize, Serialize};

/// How a user's external MCP server is authenticated (D5). Only the kind and the
/// header name are stored in the clear; the token or header value is sealed
/// separately ([`McpServerRecord::sealed_credential`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "UPPERCASE")]
pub enum McpAuth {
    None,
    Bearer,
    Header {
        name: String,
    },
    /// The MCP authorization flow: the person signs in to the server's authorization
    /// server; the sealed credential is the token set (`external::oauth`), absent until
    /// they did and after a refresh was refused ([`McpServerRecord::awaits_sign_in`]).
    #[serde(rename = "OAUTH")]
    OAuth,
}

/// One tool as the registration probe saw it (D6: description cut to 500 characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolSnapshot {
    pub name: String,
    pub description: Option<String>,
    /// The server annotated it `readOnlyHint: true` (it says it changes nothing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// The person's own controls over a server's tools, beside its allow list
/// ([`McpServerRecord::allowed_tools`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolControls {
    /// Tools switched off by name (a deny list: tools the server adds later are on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied_tools: Vec<String>,
    /// Only the tools the server annotates `readOnlyHint: true` are offered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// A tool not annotated read-only runs only once the person said yes to that call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ask_first: bool,
}

impl ToolControls {
    pub fn is_default(&self) -> bool {
        self == &ToolControls::default()
    }
}

/// A user's external MCP server. Its name and its url are each unique per account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerRecord {
    /// The registry key and tool namespace; unique per account.
    pub name: String,
    /// The normalised https URL; unique per account and never changed (D6).
    pub url: String,
    pub auth: McpAuth,
    /// The bearer token or header value, AES-256-GCM sealed and bound to the account
    /// and the url; `None` for [`McpAuth::None`].
    pub sealed_credential: Option<String>,
    pub enabled: bool,
    /// Listing order among the user's servers (the seed's `order`).
    pub order: i64,
    /// `None`: every tool, including ones the server adds later (D7).
    pub allowed_tools: Option<Vec<String>>,
    /// Switches, read-only and ask-first (narrowing what the allow list lets through).
    pub controls: ToolControls,
    /// The tools the last probe saw (at most 256).
    pub tools: Vec<McpToolSnapshot>,
    /// The server's self-reported `serverInfo.name`.
    pub server_name: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    /// Epoch seconds of the last successful connection (D8).
    pub last_connected_at: Option<u64>,
    /// Why the last connection failed; cleared by a successful one.
    pub last_connect_error: Option<String>,
}

impl McpServerRecord {
    /// Whether the person lets the model see and call `tool` (annotated read-only or
    /// not): on the allow list (or no list), not switched off, and read-only when only
    /// read-only tools are wanted.
    pub fn offers(&self, tool: &str, read_only: bool) -> bool {
        let allowed = self
            .allowed_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|name| name == tool));
        allowed
            && !self.controls.denied_tools.iter().any(|name| name == tool)
            && (read_only || !self.controls.read_only)
    }

    /// An OAuth server without a usable token set: the person must sign in (again)
    /// before it is contacted.
    pub fn awaits_sign_in(&self) -> bool {
        matches!(self.auth, McpAuth::OAuth) && self.sealed_credential.is_none()
    }

    /// Whether a call of a tool (annotated read-only or not) waits for the person's yes.
    pub fn asks_first(&self, read_only: bool) -> bool {
        self.controls.ask_first && !read_only
    }
}

/// How many external MCP servers one account may register: the store refuses the
/// next one in the same write that would create it.
pub const MAX_MCP_SERVERS: usize = 20;

/// The outcome of writing an external server's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpServerWrite {
    Written,
    /// Create: the account already has [`MAX_MCP_SERVERS`] servers (nothing written).
    LimitReached,
    /// Create or rename: the account already has a server of that name (nothing written).
    NameTaken,
    /// Create or a url given: the account already registered that url (nothing written).
    UrlTaken,
    /// Replace, rename or a url given: there is no server of that name (nothing written).
    Missing,
    /// Replace or rename: the stored url differs from the record's (a url given: the
    /// stored one is no longer empty) (nothing written; D6).
    UrlChanged,
}
