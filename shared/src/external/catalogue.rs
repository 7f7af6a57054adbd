//! The resources, resource templates and prompts of a person's own MCP servers on
//! `/mcp`: listed beside the built-in ones, read and got through the server that has
//! them.
//!
//! Owns how they are exposed: a resource's URI becomes
//! `mcp-server://<server>/<its own URI>` (a template's likewise, so a URI the client
//! expands from it comes back here), a prompt's name `mcp__<server>__<prompt>` (the
//! tools' mangling, cut and hashed the same way); each entry's `_meta` names the server.
//! Lists are asked afresh (the enabled servers in parallel, each within the connect
//! budget) and bounded as tools are (`remote`'s per-server bounds, the listing's
//! [`MAX_EXTERNAL_LISTING`] in all); a read or a rendered prompt is passed on up to the
//! result limit, else refused in words. A server that fails is left out with a note;
//! failures here do not change its recorded status (tools decide that). Never logs a
//! URI, an argument or a content.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::ExternalServers;
use super::naming::namespaced_tools;
use super::oauth::NEEDS_SIGN_IN;
use super::probe::CLOSE_TIMEOUT;
use super::results::size_text;
use super::tool_source::{MAX_EXTERNAL_LISTING, enabled, in_namespace};
use crate::domain::McpServerRecord;
use crate::remote::{Catalogue, CatalogueKind, HttpError, MAX_URI, McpConnection, RemoteError};
use crate::tools::{Caller, ItemError, ItemKind, ItemRequest, SourceItems, Unavailable};

/// Where an exposed resource URI starts: `mcp-server://<server>/<the server's URI>`.
pub(super) const URI_SCHEME: &str = "mcp-server://";

/// A prompt is got with at most this many arguments, of at most this many bytes in all.
const MAX_PROMPT_ARGUMENTS: usize = 32;
const MAX_PROMPT_ARGUMENT_BYTES: usize = 64 * 1024;

/// The URI a client sees for `uri` of `server`.
fn exposed_uri(server: &str, uri: &str) -> String {
    format!("{URI_SCHEME}{server}/{uri}")
}

/// `(server, the server's own URI)` of an exposed URI.
fn original_uri(uri: &str) -> Option<(&str, &str)> {
    let (server, own) = uri.strip_prefix(URI_SCHEME)?.split_once('/')?;
    (!server.is_empty() && !own.is_empty()).then_some((server, own))
}

pub(super) fn owns_uri(uri: &str) -> bool {
    uri.starts_with(URI_SCHEME)
}

fn remote_kind(kind: ItemKind) -> CatalogueKind {
    match kind {
        ItemKind::Resources => CatalogueKind::Resources,
        ItemKind::ResourceTemplates => CatalogueKind::ResourceTemplates,
        ItemKind::Prompts => CatalogueKind::Prompts,
    }
}

/// What a kind is called in a note.
fn plural(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Resources => "resources",
        ItemKind::ResourceTemplates => "resource templates",
        ItemKind::Prompts => "prompts",
    }
}

/// The listing entries of one server's catalogue, exposed.
fn exposed(record: &McpServerRecord, kind: ItemKind, catalogue: Catalogue) -> Vec<Value> {
    let server = record.name.as_str();
    match kind {
        ItemKind::Resources | ItemKind::ResourceTemplates => {
            let key = remote_kind(kind).id_key();
            catalogue
                .items
                .into_iter()
                .map(|mut item| {
                    let own = item.get(key).and_then(Value::as_str).unwrap_or_default();
                    let meta = json!({"io.mirobody/server": server, "io.mirobody/uri": own});
                    let uri = exposed_uri(server, own);
                    item.insert(key.into(), uri.into());
                    item.insert("_meta".into(), meta);
                    Value::Object(item)
                })
                .collect()
        }
        ItemKind::Prompts => {
            let names: Vec<String> = catalogue
                .items
                .iter()
                .map(|item| item["name"].as_str().unwrap_or_default().to_string())
                .collect();
            let exposed = namespaced_tools(server, names.iter().map(String::as_str));
            catalogue
                .items
                .into_iter()
                .zip(names.into_iter().zip(exposed))
                .map(|(mut item, (own, name))| {
                    item.insert("name".into(), name.into());
                    item.insert(
                        "_meta".into(),
                        json!({"io.mirobody/server": server, "io.mirobody/prompt": own}),
                    );
                    Value::Object(item)
                })
                .collect()
        }
    }
}

/// A remote failure in words (never the URL or a credential).
fn failure(error: RemoteError, budget: Duration) -> String {
    match error {
        RemoteError::Http(HttpError::Timeout) => format!("no answer within {} s", budget.as_secs()),
        error => error.to_string(),
    }
}

impl ExternalServers {
    /// `resources/list`, `resources/templates/list` or `prompts/list`: every enabled
    /// server asked in parallel; a note for each that could not be.
    pub(super) async fn items(&self, caller: &Caller, kind: ItemKind) -> SourceItems {
        let user = caller.user_id.as_str();
        let mut out = SourceItems::default();
        let records = match enabled(self.store.mcp_servers(user).await) {
            Ok(records) => records,
            Err(why) => {
                out.unavailable.push(Unavailable {
                    server: "*".into(),
                    error: why,
                });
                return out;
            }
        };
        if records.is_empty() {
            return out;
        }
        // Asked afresh each time: the list holds no longer than a tool snapshot would.
        out.valid_for = Some(self.snapshot_ttl());
        let (records, awaiting): (Vec<_>, Vec<_>) =
            records.into_iter().partition(|r| !r.awaits_sign_in());
        for record in &awaiting {
            out.unavailable.push(Unavailable {
                server: record.name.clone(),
                error: format!(
                    "{NEEDS_SIGN_IN}: the user signs in to it at {}",
                    self.settings_page()
                ),
            });
        }
        let lists = futures_util::future::join_all(
            records
                .iter()
                .map(|record| self.catalogue(user, record, kind)),
        )
        .await;
        let mut bytes = 0usize;
        for (record, list) in records.iter().zip(lists) {
            let catalogue = match list {
                Ok(catalogue) => catalogue,
                Err(why) => {
                    out.unavailable.push(Unavailable {
                        server: record.name.clone(),
                        error: format!("its {} are left out of this list: {why}", plural(kind)),
                    });
                    continue;
                }
            };
            let truncated = catalogue.truncated;
            let entries = exposed(record, kind, catalogue);
            let size: usize = entries
                .iter()
                .map(|entry| serde_json::to_vec(entry).map_or(usize::MAX, |v| v.len()))
                .fold(0, usize::saturating_add);
            if bytes.saturating_add(size) > MAX_EXTERNAL_LISTING {
                out.unavailable.push(Unavailable {
                    server: record.name.clone(),
                    error: format!(
                        "its {} are left out: those of your MCP servers are listed up to {} KiB in all",
                        plural(kind),
                        MAX_EXTERNAL_LISTING / 1024
                    ),
                });
                continue;
            }
            bytes += size;
            if truncated {
                out.unavailable.push(Unavailable {
                    server: record.name.clone(),
                    error: format!(
                        "partly listed: only its first {} {} are listed",
                        entries.len(),
                        plural(kind)
                    ),
                });
            }
            out.items.extend(entries);
        }
        out
    }

    /// One server's catalogue of `kind`, within the connect budget.
    async fn catalogue(
        &self,
        user: &str,
        record: &McpServerRecord,
        kind: ItemKind,
    ) -> Result<Catalogue, String> {
        let budget = self.connect_budget;
        let work = async {
            let connection = self
                .connect(user, record, self.cached_dialect(user, record))
                .await?;
            let listed = connection.list_catalogue(remote_kind(kind)).await;
            connection.close(CLOSE_TIMEOUT).await;
            listed.map_err(|error| failure(error, budget))
        };
        tokio::time::timeout(budget, work)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {} s", budget.as_secs())))
    }

    /// `resources/read` of an exposed URI or `prompts/get` of an exposed name.
    pub(super) async fn fetch_item(
        &self,
        caller: &Caller,
        request: ItemRequest<'_>,
    ) -> Result<Map<String, Value>, ItemError> {
        let user = caller.user_id.as_str();
        let records = enabled(self.store.mcp_servers(user).await)
            .map_err(|why| ItemError::Failed(format!("{why}; try again shortly")))?;
        let budget = self.probe_budget;
        match request {
            ItemRequest::Resource { uri } => {
                let (server, own) = original_uri(uri).ok_or(ItemError::Unknown)?;
                if own.len() > MAX_URI {
                    return Err(ItemError::Unknown);
                }
                let record = records
                    .iter()
                    .find(|record| record.name == server)
                    .ok_or(ItemError::Unknown)?;
                let connection = self.open(user, record).await?;
                let read = tokio::time::timeout(budget, connection.read_resource(own)).await;
                connection.close(CLOSE_TIMEOUT).await;
                let result = settle(read, budget, &record.name, |_| ItemError::Unknown)?;
                self.contents(record, result)
            }
            ItemRequest::Prompt { name, arguments } => {
                check_arguments(&arguments)?;
                for record in records.iter().filter(|r| in_namespace(r, name)) {
                    let connection = self.open(user, record).await?;
                    let got = tokio::time::timeout(
                        budget,
                        prompt(&connection, record, name, arguments.clone()),
                    )
                    .await;
                    connection.close(CLOSE_TIMEOUT).await;
                    if let Some(result) = settle(got, budget, &record.name, ItemError::Invalid)? {
                        return self.messages(record, result);
                    }
                }
                Err(ItemError::Unknown)
            }
        }
    }

    /// A connection to `record` for a read or a get; a server awaiting sign-in is not
    /// contacted.
    async fn open(&self, user: &str, record: &McpServerRecord) -> Result<McpConnection, ItemError> {
        if record.awaits_sign_in() {
            return Err(ItemError::Failed(format!(
                "the MCP server {:?} {NEEDS_SIGN_IN}: the user signs in to it at {}",
                record.name,
                self.settings_page()
            )));
        }
        self.connect(user, record, self.cached_dialect(user, record))
            .await
            .map_err(|why| {
                ItemError::Failed(format!("the MCP server {:?} failed: {why}", record.name))
            })
    }

    /// A `ReadResourceResult` as passed on: each content's URI exposed, only the spec's
    /// keys, and nothing over the result limit.
    fn contents(
        &self,
        record: &McpServerRecord,
        mut result: Value,
    ) -> Result<Map<String, Value>, ItemError> {
        let contents: Vec<Value> = match result.get_mut("contents").map(Value::take) {
            Some(Value::Array(items)) => items
                .into_iter()
                .filter_map(|item| content(&record.name, item))
                .collect(),
            _ => Vec::new(),
        };
        let mut out = Map::new();
        out.insert("contents".into(), contents.into());
        self.within_limit(record, "resource", out)
    }

    /// A `GetPromptResult` as passed on: its description cut, its messages (a role and
    /// a content object each) and nothing over the result limit.
    fn messages(
        &self,
        record: &McpServerRecord,
        result: Value,
    ) -> Result<Map<String, Value>, ItemError> {
        let messages: Vec<Value> = result
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|message| {
                let role = message.get("role").and_then(Value::as_str)?;
                let content = message.get("content").filter(|c| c.is_object())?;
                matches!(role, "user" | "assistant")
                    .then(|| json!({"role": role, "content": content}))
            })
            .collect();
        let mut out = Map::new();
        if let Some(description) = result.get("description").and_then(Value::as_str) {
            let description: String = description.chars().take(MAX_DESCRIPTION).collect();
            out.insert("description".into(), description.into());
        }
        out.insert("messages".into(), messages.into());
        self.within_limit(record, "prompt", out)
    }

    fn within_limit(
        &self,
        record: &McpServerRecord,
        what: &str,
        result: Map<String, Value>,
    ) -> Result<Map<String, Value>, ItemError> {
        let size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
        if size > self.result_max_bytes {
            return Err(ItemError::Failed(format!(
                "the MCP server {:?} answered with a {what} of {}, more than the {} mirobody passes on; ask for a smaller one",
                record.name,
                size_text(size),
                size_text(self.result_max_bytes)
            )));
        }
        Ok(result)
    }
}

/// A prompt's description is cut to this many characters (as a tool's is).
const MAX_DESCRIPTION: usize = 500;

/// One content of a read: its URI exposed; `text` or `blob` (strings), `mimeType`.
fn content(server: &str, item: Value) -> Option<Value> {
    let given = item.as_object()?;
    let uri = given.get("uri").and_then(Value::as_str)?;
    let mut kept = Map::new();
    kept.insert("uri".into(), exposed_uri(server, uri).into());
    if let Some(mime) = given.get("mimeType").and_then(Value::as_str) {
        kept.insert("mimeType".into(), mime.into());
    }
    let body = ["text", "blob"]
        .into_iter()
        .find_map(|key| Some((key, given.get(key)?.as_str()?)))?;
    kept.insert(body.0.into(), body.1.into());
    Some(Value::Object(kept))
}

/// The exposed prompt `name` of `record`, got with `arguments`; `None` when the server
/// lists no prompt by that name.
async fn prompt(
    connection: &McpConnection,
    record: &McpServerRecord,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Option<Value>, RemoteError> {
    let list = connection.list_catalogue(CatalogueKind::Prompts).await?;
    let own: Vec<&str> = list
        .items
        .iter()
        .map(|prompt| prompt["name"].as_str().unwrap_or_default())
        .collect();
    let exposed = namespaced_tools(&record.name, own.iter().copied());
    match exposed.iter().position(|exposed| exposed == name) {
        Some(i) => connection.get_prompt(own[i], arguments).await.map(Some),
        None => Ok(None),
    }
}

/// A prompt's arguments as the spec has them (strings), bounded.
fn check_arguments(arguments: &Map<String, Value>) -> Result<(), ItemError> {
    let bytes: usize = arguments
        .iter()
        .map(|(key, value)| key.len() + value.as_str().map_or(0, str::len))
        .sum();
    let invalid = |why: String| Err(ItemError::Invalid(why));
    if arguments.len() > MAX_PROMPT_ARGUMENTS {
        return invalid(format!(
            "a prompt takes at most {MAX_PROMPT_ARGUMENTS} arguments"
        ));
    }
    if arguments.values().any(|value| !value.is_string()) {
        return invalid("a prompt's arguments are strings".into());
    }
    if bytes > MAX_PROMPT_ARGUMENT_BYTES {
        return invalid(format!(
            "a prompt's arguments may add up to {} KiB",
            MAX_PROMPT_ARGUMENT_BYTES / 1024
        ));
    }
    Ok(())
}

/// A read's or a get's outcome within the budget: the server's refusal of the request
/// (not found, or bad arguments) is `refused` with its message; any other failure is
/// said in words, naming `server`.
fn settle<T>(
    outcome: Result<Result<T, RemoteError>, tokio::time::error::Elapsed>,
    budget: Duration,
    server: &str,
    refused: fn(String) -> ItemError,
) -> Result<T, ItemError> {
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(match error.refused_request() {
            Some(message) => refused(message.into()),
            None => ItemError::Failed(format!(
                "the MCP server {server:?} failed: {}",
                failure(error, budget)
            )),
        }),
        Err(_) => Err(ItemError::Failed(format!(
            "the MCP server {server:?} did not answer within {} s",
            budget.as_secs()
        ))),
    }
}
