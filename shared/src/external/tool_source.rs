//! The user's own MCP servers on `/mcp`, as the toolbox's [`ToolSource`]: the enabled
//! ones contacted in parallel, their allowed tools listed under
//! `mcp__<server>__<tool>`, and calls forwarded. Answers in the tools' own vocabulary
//! ([`ToolOutput`], [`ToolError`]); `mcp` shapes the wire.
//!
//! Owns the per-process snapshot cache and its rule: a server's tool list is fresh for
//! what the server said (`ttlMs`, the caching utility; none means immediately stale),
//! but reused for at least [`MIN_REUSE`] (so a client's `tools/list` and the call right
//! after it contact the server once) and at most [`SNAPSHOT_TTL`] (so a server that
//! stopped answering leaves a listing, and a tool it added appears, within seconds). A
//! failed server is left out for [`FAILURE_TTL`] and tried again after that; the note
//! and a call's answer say since when and when. A listing's `ttlMs` is never longer than
//! what is left of the snapshots it used ([`SourceListing::valid_for`]). Any change
//! through the registry API drops the entry at once (in this process; another warm
//! Lambda instance keeps its own until it expires). A call always opens a fresh
//! connection; one that finds the server unreachable replaces its snapshot with a
//! failure at once.
//!
//! Owns the truth of `last_connected_at` and `last_connect_error` for `/mcp` (D8): a
//! connection counts as made only after a real exchange (a listing, or a call that
//! got a JSON-RPC answer); every failure is recorded in words. A server that fails is
//! left out with a note; the others are unaffected. A call to an unavailable server's
//! tool answers a tool error telling the model to stop calling it. A forwarded call,
//! connection included, ends within the probe budget (25 s), so the caller gets an
//! answer before API Gateway's 30 s cut-off; its result is cut to the result limit
//! (`results`). Never logs arguments, results or credentials.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Map, json};

use super::ExternalServers;
use super::approval::{self, Approval, Pending};
use super::naming::{PREFIX, namespace, namespaced_tools};
use super::oauth::NEEDS_SIGN_IN;
use super::probe::{CLOSE_TIMEOUT, connect_and_list};
use super::results::bounded;
use crate::domain::McpServerRecord;
use crate::remote::{Dialect, HttpError, McpConnection, RemoteError, RemoteTool, ToolList};
use crate::store::StoreError;
use crate::tools::{
    Caller, ItemError, ItemKind, ItemRequest, ListedTool, Retry, SourceCall, SourceItems,
    SourceListing, ToolError, ToolOutput, ToolSource, Unavailable,
};

/// Each server gets this long to connect and list (D8), all of them in parallel.
pub(crate) const CONNECT_BUDGET: Duration = Duration::from_secs(20);

/// The longest a server's tool list is reused before it is fetched again, whatever its
/// `ttlMs` said (`MIROBODY_SNAPSHOT_TTL_SECS` may set 1 to 60 s).
pub(crate) const SNAPSHOT_TTL: Duration = Duration::from_secs(10);

/// The shortest a tool list is reused, also when the server said nothing (or 0): one
/// conversation turn's `tools/list` and `tools/call` reach the server once, not twice.
pub(crate) const MIN_REUSE: Duration = Duration::from_secs(2);

/// How long a failed server is left out before it is tried again (never longer than
/// the snapshot validity in force).
pub(super) const FAILURE_TTL: Duration = Duration::from_secs(15);

/// A successful exchange is written to the record only when that changes what the
/// record says: an error to clear, or a `last_connected_at` older than this. So a
/// model calling a server's tools in a loop costs no store write per call, and the
/// time shown is at most this much behind the last real exchange.
const RECORD_EVERY_SECS: u64 = 60;

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
    /// The server's own `ttlMs` for the list.
    ttl_ms: Option<u64>,
}

impl Snapshot {
    fn new(record: &McpServerRecord, dialect: Dialect, list: ToolList) -> Snapshot {
        let note = list.note();
        let ttl_ms = list.ttl_ms;
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
            ttl_ms,
        }
    }

    /// What keeping it costs: the listing entries and the tools they were made from.
    fn weight(&self) -> usize {
        2 * self.bytes
    }
}

/// Why a server is left out, since when, and when it is tried again (Unix seconds).
#[derive(Clone, Debug)]
pub(super) struct Failure {
    why: String,
    /// The first failure of this run of failures.
    since: u64,
    retry_at: u64,
}

struct Entry {
    /// The record version the entry was made for (a changed record misses).
    url: String,
    updated_at: u64,
    at: Instant,
    /// How long the entry is used from `at`.
    fresh_for: Duration,
    outcome: Result<Arc<Snapshot>, Failure>,
}

pub(super) struct SnapshotCache {
    entries: Mutex<Entries>,
    /// How long a snapshot is reused ([`SNAPSHOT_TTL`] unless configured).
    snapshot_ttl: Duration,
}

impl Default for SnapshotCache {
    fn default() -> Self {
        SnapshotCache::with_ttl(SNAPSHOT_TTL)
    }
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
    /// A cache whose snapshots are reused for `snapshot_ttl` (failures for
    /// [`FAILURE_TTL`], or `snapshot_ttl` if that is shorter).
    pub(super) fn with_ttl(snapshot_ttl: Duration) -> Self {
        SnapshotCache {
            entries: Mutex::default(),
            snapshot_ttl,
        }
    }

    /// How long an entry with this outcome is used: a list for what its server said,
    /// within [`MIN_REUSE`] and the longest reuse; a failure for [`FAILURE_TTL`].
    fn fresh_for(&self, outcome: &Result<Arc<Snapshot>, String>) -> Duration {
        let longest = self.snapshot_ttl;
        match outcome {
            Ok(snapshot) => Duration::from_millis(snapshot.ttl_ms.unwrap_or(0))
                .clamp(MIN_REUSE.min(longest), longest),
            Err(_) => FAILURE_TTL.min(longest),
        }
    }

    fn get(&self, user: &str, record: &McpServerRecord) -> Option<Result<Arc<Snapshot>, Failure>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let entry = entries.map.get(&(user.to_string(), record.name.clone()))?;
        let fresh = entry.url == record.url
            && entry.updated_at == record.updated_at
            && entry.at.elapsed() < entry.fresh_for;
        fresh.then(|| entry.outcome.clone())
    }

    /// What is left of the validity of the entries of `servers` (the least of them):
    /// how long a listing made from them may be cached. A server without an entry
    /// (evicted meanwhile) leaves nothing.
    fn valid_for<'n>(&self, user: &str, servers: impl IntoIterator<Item = &'n str>) -> Duration {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        servers
            .into_iter()
            .map(
                |name| match entries.map.get(&(user.to_string(), name.to_string())) {
                    Some(entry) => entry.fresh_for.saturating_sub(entry.at.elapsed()),
                    None => Duration::ZERO,
                },
            )
            .min()
            .unwrap_or(self.snapshot_ttl)
    }

    /// Keeps `outcome` of a fetch made at `now` (Unix seconds) and answers it as kept: a
    /// failure dated from the first of a run of failures, with its next try.
    fn put(
        &self,
        user: &str,
        record: &McpServerRecord,
        outcome: Result<Arc<Snapshot>, String>,
        now: u64,
    ) -> Result<Arc<Snapshot>, Failure> {
        let fresh_for = self.fresh_for(&outcome);
        let key = (user.to_string(), record.name.clone());
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let since = match entries.map.get(&key).map(|entry| &entry.outcome) {
            Some(Err(earlier)) => earlier.since,
            _ => now,
        };
        let outcome = outcome.map_err(|why| Failure {
            why,
            since,
            retry_at: now + fresh_for.as_secs(),
        });
        let entry = Entry {
            url: record.url.clone(),
            updated_at: record.updated_at,
            at: Instant::now(),
            fresh_for,
            outcome: outcome.clone(),
        };
        entries.remove(&key);
        while !entries.map.is_empty()
            && (entries.map.len() >= CACHE_CAPACITY
                || entries.weight + entry.weight() > CACHE_BYTES)
        {
            entries.remove_oldest();
        }
        entries.weight += entry.weight();
        entries.map.insert(key, entry);
        outcome
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

impl ExternalServers {
    /// The dialect `record` spoke at its last snapshot, if one is kept (a connection
    /// then skips the probe).
    pub(super) fn cached_dialect(&self, user: &str, record: &McpServerRecord) -> Option<Dialect> {
        match self.cache.get(user, record)? {
            Ok(snapshot) => Some(snapshot.dialect),
            Err(_) => None,
        }
    }

    /// How long a listing made from fresh answers may be kept.
    pub(super) fn snapshot_ttl(&self) -> Duration {
        self.cache.snapshot_ttl
    }

    /// Where the person manages their servers (and signs in to them), in words a
    /// model can pass on.
    pub(super) fn settings_page(&self) -> String {
        if self.console_origin.is_empty() {
            "their MCP server settings".to_string()
        } else {
            format!("{}/console/servers", self.console_origin)
        }
    }
}

/// The `input_required` result that asks the client to open the page where its person
/// signs in to their server `server` (URL-mode elicitation).
fn sign_in_elicitation(server: &str, page: &str) -> ToolOutput {
    let request = serde_json::json!({
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": format!(
                "Your MCP server {server:?} needs you to sign in to it before your AI can use its tools. Open your MCP server settings, press Sign in on {server:?}, then come back and try again."
            ),
            "url": page,
        }
    });
    let mut requests = serde_json::Map::new();
    requests.insert("sign_in".into(), request);
    ToolOutput::InputRequired {
        input_requests: requests,
        request_state: None,
    }
}

/// Whether a server is contacted at all (D2: switched on, with a url).
fn active(record: &McpServerRecord) -> bool {
    record.enabled && !record.url.is_empty()
}

/// The enabled servers (D2: an empty url is skipped) in listing order, or why the list
/// could not be read (logged without user data).
pub(super) fn enabled(
    records: Result<Vec<McpServerRecord>, StoreError>,
) -> Result<Vec<McpServerRecord>, String> {
    let mut records = records.map_err(|error| {
        tracing::warn!(%error, "could not read the caller's MCP servers");
        "the list of your MCP servers could not be read".to_string()
    })?;
    records.retain(active);
    super::sort_for_listing(&mut records);
    Ok(records)
}

/// Whether the person's controls let the model see and call `tool`.
fn offered(record: &McpServerRecord, tool: &RemoteTool) -> bool {
    record.offers(&tool.name, tool.read_only())
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
        Box::pin(async move {
            // The listing may be cached only as long as the snapshots it used are valid.
            let names: Option<Vec<String>> = servers.as_ref().ok().map(|records| {
                let active = records.iter().filter(|record| active(record));
                active.map(|record| record.name.clone()).collect()
            });
            let mut out = self.listing(caller, servers).await;
            out.valid_for = match names {
                Some(names) if names.is_empty() => None,
                Some(names) => Some(
                    self.cache
                        .valid_for(&caller.user_id, names.iter().map(String::as_str)),
                ),
                // The list of servers could not be read: try again soon.
                None => Some(FAILURE_TTL.min(self.cache.snapshot_ttl)),
            };
            out
        })
    }

    fn call<'a>(
        &'a self,
        caller: &'a Caller,
        name: &'a str,
        call: SourceCall<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.forward(caller, name, call))
    }

    fn items<'a>(&'a self, caller: &'a Caller, kind: ItemKind) -> BoxFuture<'a, SourceItems> {
        Box::pin(self.items(caller, kind))
    }

    fn owns_uri(&self, uri: &str) -> bool {
        super::catalogue::owns_uri(uri)
    }

    fn fetch<'a>(
        &'a self,
        caller: &'a Caller,
        request: ItemRequest<'a>,
    ) -> BoxFuture<'a, Result<Map<String, serde_json::Value>, ItemError>> {
        Box::pin(self.fetch_item(caller, request))
    }
}

impl ExternalServers {
    /// Connects to one server (the cached dialect first) within the connect budget.
    pub(super) async fn connect(
        &self,
        user: &str,
        record: &McpServerRecord,
        prefer: Option<Dialect>,
    ) -> Result<McpConnection, String> {
        let auth = self.auth_headers(user, record).await?;
        let budget = self.connect_budget;
        tokio::time::timeout(
            budget,
            McpConnection::connect(&self.http, &record.url, &auth, budget, prefer),
        )
        .await
        .unwrap_or(Err(RemoteError::Http(HttpError::Timeout)))
        .map_err(|error| match error {
            RemoteError::Http(HttpError::Timeout) => {
                format!("no answer within {} s", budget.as_secs())
            }
            error => error.to_string(),
        })
    }

    /// Connects and lists: the fresh snapshot and the open connection.
    async fn fetch(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<(Arc<Snapshot>, McpConnection), String> {
        let auth = self.auth_headers(user, record).await?;
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
    ) -> (Result<Arc<Snapshot>, Failure>, Option<McpConnection>) {
        if let Some(cached) = self.cache.get(user, record) {
            return (cached, None);
        }
        let fetched = self.fetch(user, record).await;
        let (outcome, connection) = match fetched {
            Ok((snapshot, connection)) => (Ok(snapshot), Some(connection)),
            Err(why) => (Err(why), None),
        };
        let outcome = self.cache.put(user, record, outcome, self.clock.now());
        let error = outcome.as_ref().err().map(|failure| failure.why.as_str());
        self.record(user, record, error).await;
        (outcome, connection)
    }

    /// D8: every real exchange's outcome on the record: `last_connected_at` (clearing
    /// `last_connect_error`) after a success, `last_connect_error` alone after a
    /// failure. A success that would change nothing is not written
    /// ([`RECORD_EVERY_SECS`]). The log line says only that a server failed.
    async fn record(&self, user: &str, record: &McpServerRecord, error: Option<&str>) {
        let at = self.clock.now();
        if !worth_writing(record, at, error) {
            return;
        }
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
        let mut out = SourceListing::default();
        // A server awaiting its person's sign-in is not contacted: the note says where.
        let (records, awaiting): (Vec<_>, Vec<_>) =
            records.into_iter().partition(|r| !r.awaits_sign_in());
        for record in &awaiting {
            out.unavailable.push(Unavailable {
                server: record.name.clone(),
                error: format!(
                    "{NEEDS_SIGN_IN}: the user signs in to it at {}; its tools are listed once they have; do not call its tools until then",
                    self.settings_page()
                ),
            });
        }
        let snapshots = futures_util::future::join_all(
            records.iter().map(|record| self.snapshot(user, record)),
        )
        .await;
        let mut open = Vec::new();
        let mut listed_bytes = 0usize;
        for (record, (outcome, connection)) in records.iter().zip(snapshots) {
            open.extend(connection);
            match outcome {
                Ok(snapshot) => {
                    let shown: Vec<usize> = (0..snapshot.tools.len())
                        .filter(|&i| offered(record, &snapshot.tools[i]))
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
                Err(failure) => out.unavailable.push(Unavailable {
                    server: record.name.clone(),
                    error: left_out(&failure),
                }),
            }
        }
        futures_util::future::join_all(open.into_iter().map(|c| c.close(CLOSE_TIMEOUT))).await;
        out
    }

    /// `tools/call` for an `mcp__…` name: forwarded to its server. A remote failure is a
    /// tool error (`isError: true`); a name that is not one of the caller's allowed
    /// external tools is an unknown tool. A server found unreachable (on connecting or
    /// by the call) is recorded, its snapshot replaced by the failure, and the model
    /// told to stop calling its tools ([`unavailable`]).
    async fn forward(
        &self,
        caller: &Caller,
        name: &str,
        mut call: SourceCall<'_>,
    ) -> Result<ToolOutput, ToolError> {
        // The whole call, connection included, fits the registration probe's budget
        // (25 s): a clear answer inside the function's 29 s and API Gateway's 30 s.
        let started = Instant::now();
        let user = caller.user_id.as_str();
        let unknown = || ToolError::UnknownTool(name.to_string());
        let read = self.store.mcp_servers(user).await;
        let switched_off: Vec<McpServerRecord> = match &read {
            Ok(all) => all.iter().filter(|r| !active(r)).cloned().collect(),
            Err(_) => Vec::new(),
        };
        let records = match enabled(read) {
            Ok(records) => records,
            Err(why) => return Ok(ToolOutput::Error(format!("{why}; try again shortly"))),
        };
        for record in records.iter().filter(|r| in_namespace(r, name)) {
            if record.awaits_sign_in() {
                // A client that can open a URL sends its person to the console's page
                // (the spec's third-party authorization case); its retry, if they have
                // not signed in meanwhile, gets the sentence below.
                let retried = matches!(&call.retry, Ok(retry) if retry.input_responses.is_some());
                if call.can_open_url && !retried && !self.console_origin.is_empty() {
                    return Ok(sign_in_elicitation(&record.name, &self.settings_page()));
                }
                return Ok(ToolOutput::Error(format!(
                    "The MCP server {:?} {NEEDS_SIGN_IN}: its sign-in was never done, or ended. Tell the user to sign in to it at {}; its tools are listed again once they have.",
                    record.name,
                    self.settings_page()
                )));
            }
            let (outcome, connection) = self.snapshot(user, record).await;
            let snapshot = match outcome {
                Ok(snapshot) => snapshot,
                Err(failure) => return Ok(unavailable(&record.name, &failure, self.clock.now())),
            };
            let Some(index) = snapshot.exposed.iter().position(|e| e.name == name) else {
                continue;
            };
            let tool = &snapshot.tools[index];
            if !offered(record, tool) {
                if let Some(connection) = connection {
                    connection.close(CLOSE_TIMEOUT).await;
                }
                return Err(unknown());
            }
            if record.asks_first(tool.read_only()) {
                let pending = Pending {
                    user,
                    server: &record.name,
                    tool: &tool.name,
                    exposed: name,
                    arguments: &call.arguments,
                };
                let now = self.clock.now();
                let retry = std::mem::replace(&mut call.retry, Ok(Retry::default()));
                if let Approval::Answer(output) =
                    approval::decide(&self.sealer, &pending, call.can_ask, retry, now)
                {
                    if let Some(connection) = connection {
                        connection.close(CLOSE_TIMEOUT).await;
                    }
                    return Ok(output);
                }
            }
            let connection = match connection {
                Some(connection) => connection,
                None => {
                    // A server known to speak 2026-07-28 is adopted without a request;
                    // a 2025-era one answers the handshake here.
                    match self.connect(user, record, Some(snapshot.dialect)).await {
                        Ok(connection) => connection,
                        Err(why) => return Ok(self.unreachable(user, record, why).await),
                    }
                }
            };
            let left = self.probe_budget.saturating_sub(started.elapsed());
            let outcome =
                tokio::time::timeout(left, connection.call_tool(tool, call.arguments)).await;
            connection.close(CLOSE_TIMEOUT).await;
            let waited = started.elapsed().as_secs_f32().ceil();
            return Ok(match outcome {
                Ok(Ok(result)) => {
                    self.record(user, record, None).await;
                    bounded(
                        ToolOutput::forwarded(result),
                        self.result_max_bytes,
                        tool.output_schema.is_some(),
                    )
                }
                // A JSON-RPC answer: the server was reached. Its tools may have changed
                // (an unknown tool), so the snapshot is fetched again next time.
                Ok(Err(RemoteError::Remote { message, .. })) => {
                    self.record(user, record, None).await;
                    self.cache.forget(user, &record.name);
                    ToolOutput::Error(format!(
                        "the MCP server {:?} returned an error: {message}",
                        record.name
                    ))
                }
                Ok(Err(error @ RemoteError::InputRequired)) => {
                    self.record(user, record, None).await;
                    ToolOutput::Error(format!(
                        "the call to the MCP server {:?} failed: {error}",
                        record.name
                    ))
                }
                // No answer in time: a hung server and a tool that runs too long look
                // the same here. Recorded, and the snapshot dropped so that the next
                // listing asks the server again (and leaves it out if it is down);
                // its other tools are not condemned for one slow tool.
                Ok(Err(RemoteError::Http(HttpError::Timeout))) | Err(_) => {
                    let budget = self.probe_budget.as_secs();
                    let why = format!("tools/call got no answer within {budget} s");
                    self.record(user, record, Some(&why)).await;
                    self.cache.forget(user, &record.name);
                    ToolOutput::Error(format!(
                        "the MCP server {:?} did not answer in time ({waited} s); if this keeps happening, tell the user to check it in their MCP server settings",
                        record.name
                    ))
                }
                // The server answered, with more than a result may be: reached, and
                // the model told to ask for less.
                Ok(Err(RemoteError::Http(HttpError::TooLarge { limit }))) => {
                    self.record(user, record, None).await;
                    ToolOutput::Error(too_large(&record.name, limit))
                }
                Ok(Err(error)) => self.unreachable(user, record, error.to_string()).await,
            });
        }
        // A switched-off server's tool (one it listed when it was last probed) is
        // unavailable, not unknown: the model is told why and to stop calling it.
        if let Some(record) = switched_off
            .iter()
            .find(|record| in_namespace(record, name) && stored_tool(record, name))
        {
            let why = if record.url.is_empty() {
                "it has no url in the MCP server settings"
            } else {
                "it is switched off in the MCP server settings"
            };
            return Ok(ToolOutput::Error(format!(
                "The MCP server {:?} is not in use: {why}. Its tools cannot be called until the user changes that there.",
                record.name
            )));
        }
        Err(unknown())
    }

    /// A forwarded call found the server unreachable: recorded, and its snapshot
    /// replaced by the failure at once, so the next listing leaves it out with a note;
    /// answers what the model is told ([`unavailable`]).
    async fn unreachable(&self, user: &str, record: &McpServerRecord, why: String) -> ToolOutput {
        let now = self.clock.now();
        self.record(user, record, Some(&why)).await;
        match self.cache.put(user, record, Err(why), now) {
            Err(failure) => unavailable(&record.name, &failure, now),
            Ok(_) => ToolOutput::Error(format!("the MCP server {:?} failed", record.name)),
        }
    }
}

/// Whether `name` is in the tool namespace of `record`.
pub(super) fn in_namespace(record: &McpServerRecord, name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace(&record.name).as_str()))
        .is_some_and(|rest| rest.starts_with("__"))
}

/// Whether `name` is one of the allowed tools `record` listed when it was last probed.
fn stored_tool(record: &McpServerRecord, name: &str) -> bool {
    let tools = record.tools.iter().map(|tool| tool.name.as_str());
    namespaced_tools(&record.name, tools)
        .iter()
        .zip(&record.tools)
        .any(|(exposed, tool)| exposed == name && record.offers(&tool.name, tool.read_only))
}

/// A Unix time in words a person and a model read alike.
fn utc(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .map_or_else(
            || format!("{secs} s after 1970"),
            |time| time.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        )
}

/// The reason, cut to what a note carries.
fn reason(failure: &Failure) -> String {
    failure.why.chars().take(300).collect()
}

/// The listing's note for a server left out: what failed, since when, and when it is
/// tried again (it comes back by itself in a later listing once it answers).
fn left_out(failure: &Failure) -> String {
    format!(
        "{}; left out since {}; tried again by the first request after {}, and listed again once it answers; do not call its tools until then",
        reason(failure),
        utc(failure.since),
        utc(failure.retry_at)
    )
}

/// What a call to the tool of an unavailable server answers at `now`: a tool error a
/// model acts on (what failed, since when, when it is tried again, where the user looks).
fn unavailable(server: &str, failure: &Failure, now: u64) -> ToolOutput {
    let wait = failure.retry_at.saturating_sub(now);
    ToolOutput::Error(format!(
        "The MCP server {server:?} is unavailable ({}) since {}. It is tried again by the first request after {} (in about {wait} s); until it is listed again, do not call its tools. If it keeps failing, tell the user to check it in their MCP server settings.",
        reason(failure),
        utc(failure.since),
        utc(failure.retry_at)
    ))
}

/// Whether an exchange's outcome changes what the record says (see
/// [`RECORD_EVERY_SECS`]): every failure does; a success does when it clears an error,
/// or when the recorded time is missing or older than that.
fn worth_writing(record: &McpServerRecord, now: u64, error: Option<&str>) -> bool {
    error.is_some()
        || record.last_connect_error.is_some()
        || record
            .last_connected_at
            .is_none_or(|at| now.saturating_sub(at) >= RECORD_EVERY_SECS)
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
            controls: Default::default(),
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
        snapshot_saying(record, None, 256)
    }

    /// `count` tools of about 1 KiB each, the list's `ttlMs` as the server said it.
    fn snapshot_saying(
        record: &McpServerRecord,
        ttl_ms: Option<u64>,
        count: usize,
    ) -> Arc<Snapshot> {
        let tools = (0..count)
            .map(|i| RemoteTool {
                name: format!("t{i}"),
                description: Some("d".repeat(1000)),
                input_schema: json!({"type": "object"}),
                ..RemoteTool::default()
            })
            .collect();
        let list = ToolList {
            tools,
            ttl_ms,
            ..ToolList::default()
        };
        Arc::new(Snapshot::new(record, Dialect::Stateless, list))
    }

    /// One user's servers cannot grow the per-process cache past
    /// its byte budget; the oldest entries go first.
    #[test]
    fn the_snapshot_cache_is_bounded_by_bytes() {
        let cache = SnapshotCache::default();
        let one = big_snapshot(&record("s")).weight();
        let servers = CACHE_BYTES / one + 20;
        for i in 0..servers {
            let record = record(&format!("s{i}"));
            let _ = cache.put("u", &record, Ok(big_snapshot(&record)), 1_000);
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
        let _ = cache.put("u", &newest, Err("down".into()), 1_000);
        cache.forget("u", &newest.name);
        assert!(cache.weight() <= CACHE_BYTES - one);
    }

    /// A listing's validity is the least left of its entries', a
    /// failure's at most [`FAILURE_TTL`]; a server with no entry leaves nothing.
    #[test]
    fn a_listing_is_valid_for_what_is_left_of_its_snapshots() {
        let cache = SnapshotCache::with_ttl(Duration::from_secs(30));
        let (up, down) = (record("up"), record("down"));
        let _ = cache.put("u", &up, Ok(snapshot_saying(&up, Some(25_000), 1)), 1_000);
        let valid = cache.valid_for("u", ["up"]);
        assert!(valid <= Duration::from_secs(25) && valid > Duration::from_secs(24));
        let _ = cache.put("u", &down, Err("refused".into()), 1_000);
        assert!(cache.valid_for("u", ["up", "down"]) <= FAILURE_TTL);
        let _ = cache.put("u", &up, Ok(big_snapshot(&up)), 1_000);
        assert!(
            cache.valid_for("u", ["up"]) <= MIN_REUSE,
            "said nothing: 2 s"
        );
        assert_eq!(cache.valid_for("u", ["up", "gone"]), Duration::ZERO);
        let short = SnapshotCache::with_ttl(Duration::from_secs(2));
        let _ = short.put("u", &down, Err("refused".into()), 1_000);
        assert!(short.valid_for("u", ["down"]) <= Duration::from_secs(2));
    }

    /// The reuse rule: a list for what its server said, at least
    /// [`MIN_REUSE`] (also when it said nothing or 0) and at most the longest reuse; a
    /// failure for [`FAILURE_TTL`] or the longest reuse if shorter.
    #[test]
    fn a_list_is_reused_for_what_its_server_said_within_bounds() {
        let cache = SnapshotCache::with_ttl(Duration::from_secs(10));
        let server = record("s");
        let reuse = |ttl_ms| cache.fresh_for(&Ok(snapshot_saying(&server, ttl_ms, 1)));
        assert_eq!(
            reuse(None),
            MIN_REUSE,
            "said nothing: immediately stale, reused 2 s"
        );
        assert_eq!(reuse(Some(0)), MIN_REUSE);
        assert_eq!(reuse(Some(4_500)), Duration::from_millis(4_500));
        assert_eq!(
            reuse(Some(3_600_000)),
            Duration::from_secs(10),
            "an hour: 10 s"
        );
        assert_eq!(
            cache.fresh_for(&Err("down".into())),
            Duration::from_secs(10)
        );
        let one = SnapshotCache::with_ttl(Duration::from_secs(1));
        assert_eq!(
            one.fresh_for(&Ok(snapshot_saying(&server, None, 1))),
            Duration::from_secs(1)
        );
        assert_eq!(
            SnapshotCache::default().fresh_for(&Err("down".into())),
            Duration::from_secs(10)
        );
    }

    /// A run of failures keeps the time of its first; a success ends the run; the
    /// model's text says since when and when the server is tried again, and never that
    /// it is gone for the conversation.
    #[test]
    fn a_failure_says_since_when_and_when_it_is_tried_again() {
        let cache = SnapshotCache::with_ttl(Duration::from_secs(60));
        let server = record("shop");
        // 2026-12-04 19:00:00 UTC.
        let first = 1_796_410_800;
        let Err(failure) = cache.put("u", &server, Err("HTTP 503".into()), first) else {
            panic!("a failure is kept as one");
        };
        assert_eq!((failure.since, failure.retry_at), (first, first + 15));
        let Err(again) = cache.put("u", &server, Err("refused".into()), first + 20) else {
            panic!("a failure is kept as one");
        };
        assert_eq!(
            (again.since, again.retry_at),
            (first, first + 35),
            "since the first"
        );
        let ToolOutput::Error(text) = unavailable("shop", &again, first + 30) else {
            panic!("a tool error");
        };
        assert_eq!(
            text,
            "The MCP server \"shop\" is unavailable (refused) since 2026-12-04 19:00:00 UTC. It is tried again by the first request after 2026-12-04 19:00:35 UTC (in about 5 s); until it is listed again, do not call its tools. If it keeps failing, tell the user to check it in their MCP server settings."
        );
        assert!(!text.contains("conversation"));
        assert!(left_out(&again).contains("left out since 2026-12-04 19:00:00 UTC; tried again by the first request after 2026-12-04 19:00:35 UTC"));
        let _ = cache.put(
            "u",
            &server,
            Ok(snapshot_saying(&server, None, 1)),
            first + 40,
        );
        let Err(later) = cache.put("u", &server, Err("refused".into()), first + 50) else {
            panic!("a failure is kept as one");
        };
        assert_eq!(later.since, first + 50, "a success ended the run");
    }

    /// A success is written only when it changes what the record
    /// says; a failure always is.
    #[test]
    fn only_successes_that_change_the_record_are_written() {
        let mut server = record("s");
        assert!(worth_writing(&server, 1_000, None), "never connected");
        server.last_connected_at = Some(1_000);
        assert!(!worth_writing(&server, 1_000 + RECORD_EVERY_SECS - 1, None));
        assert!(worth_writing(&server, 1_000 + RECORD_EVERY_SECS, None));
        assert!(worth_writing(&server, 1_001, Some("HTTP 401")));
        server.last_connect_error = Some("HTTP 401".into());
        assert!(
            worth_writing(&server, 1_001, None),
            "a success clears the error"
        );
    }

    #[test]
    fn names_belong_to_their_servers_namespace_and_stored_tools() {
        let mut server = record("my-shop");
        server.tools = vec![crate::domain::McpToolSnapshot {
            name: "lookup".into(),
            description: None,
            read_only: false,
        }];
        assert!(in_namespace(&server, "mcp__my_shop__lookup"));
        assert!(!in_namespace(&server, "mcp__my_shopx__lookup"));
        assert!(!in_namespace(&server, "mcp__my_shop_lookup"));
        assert!(stored_tool(&server, "mcp__my_shop__lookup"));
        assert!(!stored_tool(&server, "mcp__my_shop__nope"));
        server.allowed_tools = Some(vec![]);
        assert!(!stored_tool(&server, "mcp__my_shop__lookup"));
    }
}
