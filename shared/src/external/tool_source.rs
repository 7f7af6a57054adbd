//! The user's own MCP servers on `/mcp`, as the toolbox's [`ToolSource`]: the enabled
//! ones contacted in parallel, their allowed tools listed under
//! `mcp__<server>__<tool>`, and calls forwarded. Answers in the tools' own vocabulary
//! ([`ToolOutput`], [`ToolError`]); `mcp` shapes the wire.
//!
//! Owns the per-process snapshot cache: a server's tool list is reused for
//! [`SNAPSHOT_TTL`] after a successful connection (a failure for [`FAILURE_TTL`]), so
//! `tools/list` does not open every server on every request; a listing can therefore be
//! up to a minute behind a server's own list. Any change through the registry API
//! drops the entry at once (in this process; another warm Lambda instance keeps its
//! own until it expires). A call always opens a fresh connection.
//!
//! A server that fails is left out with a note and recorded (`last_connect_error`); the
//! others are unaffected. A forwarded call, connection included, ends within the probe
//! budget (25 s), so the caller gets an answer before API Gateway's 30 s cut-off; its
//! result is cut to the result limit (`results`).
//! Never logs arguments, results or credentials.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::ExternalServers;
use super::credentials;
use super::naming::{PREFIX, namespace, namespaced_tools};
use super::probe::{CLOSE_TIMEOUT, connect_and_list};
use super::results::bounded;
use crate::domain::McpServerRecord;
use crate::remote::{Dialect, HttpError, McpConnection, RemoteError, RemoteTool, ToolList};
use crate::store::StoreError;
use crate::tools::{
    Caller, ListedTool, SourceListing, ToolError, ToolOutput, ToolSource, Unavailable,
};

/// Each server gets this long to connect and list (D8), all of them in parallel.
pub(crate) const CONNECT_BUDGET: Duration = Duration::from_secs(20);

/// How long a server's tool list is reused before it is fetched again.
pub(crate) const SNAPSHOT_TTL: Duration = Duration::from_secs(60);

/// How long a failed server is left out before it is tried again.
pub(super) const FAILURE_TTL: Duration = Duration::from_secs(15);

/// Entries kept at most (oldest dropped first).
const CACHE_CAPACITY: usize = 4096;

/// What the cached snapshots may hold in all, by their listings' bytes (oldest dropped
/// first): one user's servers cannot push a warm instance serving others out of memory.
const CACHE_BYTES: usize = 32 * 1024 * 1024;

/// The external tools of one `tools/list` answer may add up to this many bytes (each
/// server's own listing is bounded by the client, at 256 KiB); servers past it are left
/// out with a note. Far under Lambda's 6 MB answer.
pub(crate) const MAX_EXTERNAL_LISTING: usize = 1024 * 1024;

/// A server's tools as last seen, each with its exposed name and its `tools/list`
/// entry, serialised once when the snapshot is made (a warm listing copies no bytes).
struct Snapshot {
    dialect: Dialect,
    tools: Vec<RemoteTool>,
    /// `exposed[i]` is how `tools[i]` appears on `/mcp`.
    exposed: Arc<[ListedTool]>,
    /// What the client left out of the server's list, to tell the caller.
    note: Option<String>,
    /// The listing entries' bytes (what a `tools/list` answer carries of this server).
    bytes: usize,
}

impl Snapshot {
    fn new(record: &McpServerRecord, dialect: Dialect, list: ToolList) -> Snapshot {
        let note = list.note();
        let tools = list.tools;
        let names = namespaced_tools(&record.name, tools.iter().map(|t| t.name.as_str()));
        let exposed: Arc<[ListedTool]> = tools
            .iter()
            .zip(names)
            .map(|(tool, name)| ListedTool {
                listing: listing(record, tool, &name),
                name,
            })
            .collect();
        let bytes = exposed.iter().map(|tool| tool.listing.get().len()).sum();
        Snapshot {
            dialect,
            tools,
            exposed,
            note,
            bytes,
        }
    }

    /// What keeping it costs: the listing entries and the tools they were made from.
    fn weight(&self) -> usize {
        2 * self.bytes
    }
}

struct Entry {
    /// The record version the entry was made for (a changed record misses).
    url: String,
    updated_at: u64,
    at: Instant,
    outcome: Result<Arc<Snapshot>, String>,
}

#[derive(Default)]
pub(super) struct SnapshotCache {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<(String, String), Entry>,
    /// The sum of the entries' [`Snapshot::weight`].
    weight: usize,
}

impl Entry {
    fn weight(&self) -> usize {
        self.outcome
            .as_ref()
            .map_or(0, |snapshot| snapshot.weight())
    }
}

impl Entries {
    fn remove(&mut self, key: &(String, String)) {
        if let Some(entry) = self.map.remove(key) {
            self.weight -= entry.weight();
        }
    }

    fn remove_oldest(&mut self) {
        let oldest = self
            .map
            .iter()
            .min_by_key(|(_, entry)| entry.at)
            .map(|(key, _)| key.clone());
        if let Some(oldest) = oldest {
            self.remove(&oldest);
        }
    }
}

impl SnapshotCache {
    fn get(&self, user: &str, record: &McpServerRecord) -> Option<Result<Arc<Snapshot>, String>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entry = entries.map.get(&(user.to_string(), record.name.clone()))?;
        let ttl = match entry.outcome {
            Ok(_) => SNAPSHOT_TTL,
            Err(_) => FAILURE_TTL,
        };
        let fresh = entry.url == record.url
            && entry.updated_at == record.updated_at
            && entry.at.elapsed() < ttl;
        fresh.then(|| entry.outcome.clone())
    }

    fn put(&self, user: &str, record: &McpServerRecord, outcome: Result<Arc<Snapshot>, String>) {
        let entry = Entry {
            url: record.url.clone(),
            updated_at: record.updated_at,
            at: Instant::now(),
            outcome,
        };
        let key = (user.to_string(), record.name.clone());
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.remove(&key);
        while !entries.map.is_empty()
            && (entries.map.len() >= CACHE_CAPACITY
                || entries.weight + entry.weight() > CACHE_BYTES)
        {
            entries.remove_oldest();
        }
        entries.weight += entry.weight();
        entries.map.insert(key, entry);
    }

    pub(super) fn forget(&self, user: &str, name: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.remove(&(user.to_string(), name.to_string()));
    }

    /// The cached snapshots' weight in all (tests).
    #[cfg(test)]
    fn weight(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .weight
    }
}

/// The enabled servers (D2: an empty url is skipped) in listing order, or why the list
/// could not be read (logged without user data).
fn enabled(
    records: Result<Vec<McpServerRecord>, StoreError>,
) -> Result<Vec<McpServerRecord>, String> {
    let mut records = records.map_err(|error| {
        tracing::warn!(%error, "could not read the caller's MCP servers");
        "the list of your MCP servers could not be read".to_string()
    })?;
    records.retain(|r| r.enabled && !r.url.is_empty());
    super::sort_for_listing(&mut records);
    Ok(records)
}

fn allowed(record: &McpServerRecord, tool: &str) -> bool {
    record
        .allowed_tools
        .as_ref()
        .is_none_or(|list| list.iter().any(|name| name == tool))
}

/// A remote tool's `tools/list` entry under its exposed `name`: its title, description,
/// schemas and annotations as the client kept them (bounded, known keys only), and
/// `_meta` naming the server and the remote tool.
fn listing(record: &McpServerRecord, tool: &RemoteTool, name: &str) -> Box<RawValue> {
    let mut entry = Map::new();
    entry.insert("name".into(), name.into());
    if let Some(title) = &tool.title {
        entry.insert("title".into(), title.clone().into());
    }
    if let Some(description) = &tool.description {
        entry.insert("description".into(), description.clone().into());
    }
    entry.insert("inputSchema".into(), tool.input_schema.clone());
    if let Some(output) = &tool.output_schema {
        entry.insert("outputSchema".into(), output.clone());
    }
    if let Some(annotations) = &tool.annotations {
        entry.insert("annotations".into(), annotations.clone());
    }
    entry.insert(
        "_meta".into(),
        json!({"io.mirobody/server": record.name, "io.mirobody/tool": tool.name}),
    );
    serde_json::value::to_raw_value(&entry).expect("a JSON map always serialises")
}

/// What a call answers when the remote's result is over the read bound: nothing of it
/// could be read, so the model is told to ask for less.
fn too_large(server: &str, limit: usize) -> String {
    format!(
        "the MCP server {server:?} answered with a result larger than {} MB, more than mirobody reads, so none of it can be shown; call the tool again asking for much less (a narrower range or fewer items)",
        limit / (1024 * 1024)
    )
}

impl ToolSource for ExternalServers {
    fn owns(&self, name: &str) -> bool {
        name.starts_with(PREFIX)
    }

    fn list<'a>(
        &'a self,
        caller: &'a Caller,
        servers: Result<Vec<McpServerRecord>, StoreError>,
    ) -> BoxFuture<'a, SourceListing> {
        Box::pin(self.listing(caller, servers))
    }

    fn call<'a>(
        &'a self,
        caller: &'a Caller,
        name: &'a str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.forward(caller, name, arguments))
    }
}

impl ExternalServers {
    /// The caller's enabled servers, read for a forwarded call.
    async fn enabled(&self, user: &str) -> Result<Vec<McpServerRecord>, String> {
        enabled(self.store.mcp_servers(user).await)
    }

    /// Connects to one server (the cached dialect first) within the connect budget.
    async fn connect(
        &self,
        user: &str,
        record: &McpServerRecord,
        prefer: Option<Dialect>,
    ) -> Result<McpConnection, String> {
        let auth = credentials::headers(&self.sealer, user, record)?;
        let budget = self.connect_budget;
        tokio::time::timeout(
            budget,
            McpConnection::connect(&self.http, &record.url, &auth, budget, prefer),
        )
        .await
        .map_err(|_| format!("no answer within {} s", budget.as_secs()))?
        .map_err(|error| error.to_string())
    }

    /// Connects and lists: the fresh snapshot and the open connection.
    async fn fetch(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<(Arc<Snapshot>, McpConnection), String> {
        let auth = credentials::headers(&self.sealer, user, record)?;
        let (connection, list) =
            connect_and_list(&self.http, &record.url, &auth, self.connect_budget)
                .await
                .map_err(|failure| failure.to_string())?;
        let snapshot = Snapshot::new(record, connection.dialect(), list);
        Ok((Arc::new(snapshot), connection))
    }

    /// The server's snapshot, from the cache or a fresh connection (then also the
    /// connection, for a call to reuse). Every real connection is recorded (D8).
    async fn snapshot(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> (Result<Arc<Snapshot>, String>, Option<McpConnection>) {
        if let Some(cached) = self.cache.get(user, record) {
            return (cached, None);
        }
        let fetched = self.fetch(user, record).await;
        let (outcome, connection) = match fetched {
            Ok((snapshot, connection)) => (Ok(snapshot), Some(connection)),
            Err(why) => (Err(why), None),
        };
        self.cache.put(user, record, outcome.clone());
        self.record(user, record, outcome.as_ref().err()).await;
        (outcome, connection)
    }

    /// D8: every connection's outcome on the record (`last_connected_at` or
    /// `last_connect_error`). The log line says only that a server failed.
    async fn record(&self, user: &str, record: &McpServerRecord, error: Option<&String>) {
        let at = self.clock.now();
        let error = error.map(String::as_str);
        if let Err(failure) = self
            .store
            .record_mcp_connection(user, &record.name, at, error)
            .await
        {
            tracing::warn!(error = %failure, "could not record an MCP connection");
        }
        if error.is_some() {
            tracing::info!("an external MCP server was unreachable; left out of this request");
        }
    }

    /// `tools/list`: every enabled server in parallel; the allowed tools of those that
    /// answered, a note for each that did not.
    /// `records` is the caller's server list as the store answered it (read together
    /// with the availability probe, one round trip).
    async fn listing(
        &self,
        caller: &Caller,
        records: Result<Vec<McpServerRecord>, StoreError>,
    ) -> SourceListing {
        let user = caller.user_id.as_str();
        let records = match enabled(records) {
            Ok(records) => records,
            Err(why) => {
                let mut out = SourceListing::default();
                out.unavailable.push(Unavailable {
                    server: "*".into(),
                    error: why,
                });
                return out;
            }
        };
        let snapshots = futures_util::future::join_all(
            records.iter().map(|record| self.snapshot(user, record)),
        )
        .await;
        let mut out = SourceListing::default();
        let mut open = Vec::new();
        let mut listed_bytes = 0usize;
        for (record, (outcome, connection)) in records.iter().zip(snapshots) {
            open.extend(connection);
            match outcome {
                Ok(snapshot) => {
                    let shown: Vec<usize> = (0..snapshot.tools.len())
                        .filter(|&i| allowed(record, &snapshot.tools[i].name))
                        .collect();
                    let bytes: usize = shown
                        .iter()
                        .map(|&i| snapshot.exposed[i].listing.get().len())
                        .sum();
                    if listed_bytes + bytes > MAX_EXTERNAL_LISTING {
                        out.unavailable.push(Unavailable {
                            server: record.name.clone(),
                            error: format!(
                                "left out: the tools of your MCP servers are listed up to {} KiB in all, and this server's would pass it; do not call its tools",
                                MAX_EXTERNAL_LISTING / 1024
                            ),
                        });
                        continue;
                    }
                    listed_bytes += bytes;
                    if let Some(note) = &snapshot.note {
                        out.unavailable.push(Unavailable {
                            server: record.name.clone(),
                            error: format!("partly listed: {note}"),
                        });
                    }
                    out.push(snapshot.exposed.clone(), shown);
                }
                Err(why) => out.unavailable.push(Unavailable {
                    server: record.name.clone(),
                    error: format!(
                        "{why}; its tools are not available in this request, do not call them"
                    ),
                }),
            }
        }
        futures_util::future::join_all(open.into_iter().map(|c| c.close(CLOSE_TIMEOUT))).await;
        out
    }

    /// `tools/call` for an `mcp__…` name: forwarded to its server. A remote failure is a
    /// tool error (`isError: true`); a name that is not one of the caller's allowed
    /// external tools is an unknown tool.
    async fn forward(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        // The whole call, connection included, fits the registration probe's budget
        // (25 s): a clear answer inside the function's 29 s and API Gateway's 30 s.
        let started = Instant::now();
        let user = caller.user_id.as_str();
        let unknown = || ToolError::UnknownTool(name.to_string());
        let records = match self.enabled(user).await {
            Ok(records) => records,
            Err(why) => return Ok(ToolOutput::Error(format!("{why}; try again shortly"))),
        };
        for record in records
            .iter()
            .filter(|r| name.starts_with(&format!("{PREFIX}{}__", namespace(&r.name))))
        {
            let (outcome, connection) = self.snapshot(user, record).await;
            let snapshot = match outcome {
                Ok(snapshot) => snapshot,
                Err(why) => {
                    return Ok(ToolOutput::Error(format!(
                        "the MCP server {:?} is unavailable right now ({why}); its tools cannot be used in this request",
                        record.name
                    )));
                }
            };
            let Some(index) = snapshot.exposed.iter().position(|e| e.name == name) else {
                continue;
            };
            let tool = &snapshot.tools[index];
            if !allowed(record, &tool.name) {
                return Err(unknown());
            }
            let connection = match connection {
                Some(connection) => connection,
                None => {
                    let connected = self.connect(user, record, Some(snapshot.dialect)).await;
                    self.record(user, record, connected.as_ref().err()).await;
                    match connected {
                        Ok(connection) => connection,
                        Err(why) => {
                            self.cache.forget(user, &record.name);
                            return Ok(ToolOutput::Error(format!(
                                "the MCP server {:?} is unavailable right now ({why})",
                                record.name
                            )));
                        }
                    }
                }
            };
            let left = self.probe_budget.saturating_sub(started.elapsed());
            let call = tokio::time::timeout(left, connection.call_tool(tool, arguments));
            let outcome = call.await;
            connection.close(CLOSE_TIMEOUT).await;
            let late = || {
                ToolOutput::Error(format!(
                    "the MCP server {:?} did not answer in time ({} s)",
                    record.name,
                    started.elapsed().as_secs_f32().ceil()
                ))
            };
            return Ok(match outcome {
                Ok(Ok(result)) => bounded(
                    ToolOutput::forwarded(result),
                    self.result_max_bytes,
                    tool.output_schema.is_some(),
                ),
                Ok(Err(RemoteError::Remote { message, .. })) => ToolOutput::Error(format!(
                    "the MCP server {:?} returned an error: {message}",
                    record.name
                )),
                Ok(Err(RemoteError::Http(HttpError::Timeout))) | Err(_) => late(),
                Ok(Err(RemoteError::Http(HttpError::TooLarge { limit }))) => {
                    ToolOutput::Error(too_large(&record.name, limit))
                }
                Ok(Err(error)) => ToolOutput::Error(format!(
                    "the call to the MCP server {:?} failed: {error}",
                    record.name
                )),
            });
        }
        Err(unknown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::McpAuth;

    fn record(name: &str) -> McpServerRecord {
        McpServerRecord {
            name: name.into(),
            url: format!("https://{name}.example/mcp"),
            auth: McpAuth::None,
            sealed_credential: None,
            enabled: true,
            order: 0,
            allowed_tools: None,
            tools: Vec::new(),
            server_name: None,
            created_at: 0,
            updated_at: 0,
            last_connected_at: None,
            last_connect_error: None,
        }
    }

    /// 256 tools of about 1 KiB each: a snapshot of about 256 KiB of listing.
    fn big_snapshot(record: &McpServerRecord) -> Arc<Snapshot> {
        let tools = (0..256)
            .map(|i| RemoteTool {
                name: format!("t{i}"),
                description: Some("d".repeat(1000)),
                input_schema: json!({"type": "object"}),
                ..RemoteTool::default()
            })
            .collect();
        let list = ToolList {
            tools,
            ..ToolList::default()
        };
        Arc::new(Snapshot::new(record, Dialect::Stateless, list))
    }

    /// Issue 13, finding 4: one user's servers cannot grow the per-process cache past
    /// its byte budget; the oldest entries go first.
    #[test]
    fn the_snapshot_cache_is_bounded_by_bytes() {
        let cache = SnapshotCache::default();
        let one = big_snapshot(&record("s")).weight();
        let servers = CACHE_BYTES / one + 20;
        for i in 0..servers {
            let record = record(&format!("s{i}"));
            cache.put("u", &record, Ok(big_snapshot(&record)));
            assert!(
                cache.weight() <= CACHE_BYTES,
                "{} after {i}",
                cache.weight()
            );
        }
        assert!(
            cache.get("u", &record("s0")).is_none(),
            "the oldest went first"
        );
        let newest = record(&format!("s{}", servers - 1));
        assert!(cache.get("u", &newest).is_some());
        // Replacing an entry does not count it twice.
        cache.put("u", &newest, Err("down".into()));
        cache.forget("u", &newest.name);
        assert!(cache.weight() <= CACHE_BYTES - one);
    }
}
