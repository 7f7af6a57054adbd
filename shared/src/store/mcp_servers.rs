//! A user's external MCP server records, with their name and url each unique per
//! account, and the split of a record into the parts both backends keep.
//!
//! Owns the [`McpServerStore`] trait. Keeps the credential only sealed, as given;
//! never probes or calls a server.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StoreError;
use crate::domain::{
    DataPresence, McpAuth, McpServerRecord, McpServerWrite, McpToolSnapshot, ToolControls,
};

/// How both backends keep a server record: the key (`name`), the `url` and the
/// connection fields are columns (attributes) of their own, so that uniqueness and
/// `record_mcp_connection` touch them alone; the rest is this JSON body.
#[derive(Serialize, Deserialize)]
pub(crate) struct McpServerBody {
    auth: McpAuth,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed_credential: Option<String>,
    enabled: bool,
    order: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allowed_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "ToolControls::is_default")]
    controls: ToolControls,
    tools: Vec<McpToolSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_name: Option<String>,
    created_at: u64,
    updated_at: u64,
}

/// A record split the way the backends store it.
pub(crate) struct McpServerParts {
    pub name: String,
    pub url: String,
    pub body: McpServerBody,
    pub last_connected_at: Option<u64>,
    pub last_connect_error: Option<String>,
}

impl From<McpServerRecord> for McpServerParts {
    fn from(record: McpServerRecord) -> Self {
        McpServerParts {
            name: record.name,
            url: record.url,
            body: McpServerBody {
                auth: record.auth,
                sealed_credential: record.sealed_credential,
                enabled: record.enabled,
                order: record.order,
                allowed_tools: record.allowed_tools,
                controls: record.controls,
                tools: record.tools,
                server_name: record.server_name,
                created_at: record.created_at,
                updated_at: record.updated_at,
            },
            last_connected_at: record.last_connected_at,
            last_connect_error: record.last_connect_error,
        }
    }
}

impl From<McpServerParts> for McpServerRecord {
    fn from(parts: McpServerParts) -> Self {
        let McpServerParts {
            name,
            url,
            body,
            last_connected_at,
            last_connect_error,
        } = parts;
        McpServerRecord {
            name,
            url,
            auth: body.auth,
            sealed_credential: body.sealed_credential,
            enabled: body.enabled,
            order: body.order,
            allowed_tools: body.allowed_tools,
            controls: body.controls,
            tools: body.tools,
            server_name: body.server_name,
            created_at: body.created_at,
            updated_at: body.updated_at,
            last_connected_at,
            last_connect_error,
        }
    }
}

/// A user's external MCP servers (DynamoDB: data table `<user>/mcp#<name>`,
/// `<user>/mcpurl#<hash>`), and the combined read a signed-in `tools/list` makes.
#[async_trait]
pub trait McpServerStore: Send + Sync {
    /// Every server of the user, ordered by name.
    async fn mcp_servers(&self, user: &str) -> Result<Vec<McpServerRecord>, StoreError>;

    /// [`HealthStore::data_presence`](crate::store::HealthStore::data_presence) and
    /// [`McpServerStore::mcp_servers`] in one round trip: what every signed-in
    /// `tools/list` needs (which tools the user's data makes available, and the user's
    /// servers).
    async fn presence_and_mcp_servers(
        &self,
        user: &str,
    ) -> Result<(DataPresence, Vec<McpServerRecord>), StoreError>;

    async fn mcp_server(
        &self,
        user: &str,
        name: &str,
    ) -> Result<Option<McpServerRecord>, StoreError>;

    /// Creates the record and claims its url in one transaction: `Written`;
    /// `LimitReached` when the user already has
    /// [`MAX_MCP_SERVERS`](crate::domain::MAX_MCP_SERVERS) servers (checked first);
    /// else `NameTaken` or `UrlTaken` (in each refusal nothing was written). The limit
    /// holds against racing creates: it is part of the write's condition.
    async fn create_mcp_server(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError>;

    /// Replaces the record of `record.name`, conditionally on it existing with the
    /// same url: `Written`, `Missing` or `UrlChanged`.
    async fn replace_mcp_server(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError>;

    /// Records one connection (D8): success (`error` is `None`) sets
    /// `last_connected_at = at` and clears `last_connect_error`; failure sets
    /// `last_connect_error` and keeps `last_connected_at`. Touches nothing else, and
    /// writes nothing when the server no longer exists.
    async fn record_mcp_connection(
        &self,
        user: &str,
        name: &str,
        at: u64,
        error: Option<&str>,
    ) -> Result<(), StoreError>;

    /// Claims the one refresh of server `name`'s OAuth sign-in until `until` (epoch
    /// seconds), on the condition that no claim holds at `now` (a claim expires at its
    /// `until`): true if this caller has it, false if another holds it or the server no
    /// longer exists. Several instances (Lambda gives each its own) share one rotating
    /// refresh token, which only the claimant may spend. A replace of the record ends
    /// the claim. Touches nothing else.
    async fn claim_mcp_refresh(
        &self,
        user: &str,
        name: &str,
        now: u64,
        until: u64,
    ) -> Result<bool, StoreError>;

    /// Deletes the record and its url claim in one transaction; true if it existed.
    async fn delete_mcp_server(&self, user: &str, name: &str) -> Result<bool, StoreError>;

    /// Renames server `old` to `record.name`, writing `record` (every field, the sealed
    /// credential as given) in one conditional transaction: the old record is removed
    /// on the condition that it exists with `record.url`, the new one written on the
    /// condition that its name is free, and the url claim moves with it. `Written`;
    /// `Missing` (no server `old`), `UrlChanged` (its url is not `record.url`) or
    /// `NameTaken` (a server named `record.name` exists), each writing nothing. Of two
    /// racing renames of one server, one wins and the other finds it `Missing`.
    async fn rename_mcp_server(
        &self,
        user: &str,
        old: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError>;

    /// Gives the server `record.name`, saved without a url, its url `record.url`
    /// (writing `record`) in one conditional transaction that moves its url claim:
    /// `Written`; `Missing`, `UrlChanged` (it already has a url) or `UrlTaken` (another
    /// server has that url), each writing nothing. The only way a stored url changes.
    async fn set_mcp_server_url(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError>;
}
