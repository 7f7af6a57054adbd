//! A remote MCP server's resources, resource templates and prompts, read through an
//! open [`McpConnection`] and bounded as its tools are.
//!
//! Owns the four requests (`resources/list`, `resources/templates/list`,
//! `resources/read`, `prompts/list`, `prompts/get`) and what is kept of their answers:
//! at most [`MAX_ITEMS`] items and [`MAX_CATALOGUE_BYTES`] per server and kind, over at
//! most [`MAX_PAGES`] pages; only the spec's keys, with text cut to the tools' bounds; a
//! read or a rendered prompt read up to the call bound. A server that does not offer a
//! kind (its declared capabilities, or a "method not found" answer) has none of it.
//!
//! Does not know about accounts, stored servers or how items are namespaced on `/mcp`.

use http::HeaderMap;
use serde_json::{Map, Value, json};

use super::client::DEFAULT_MAX_BYTES;
use super::mcp_client::{
    MAX_CALL_BYTES, MAX_TOOL_DESCRIPTION, MAX_TOOL_NAME, MAX_TOOL_TITLE, McpConnection,
    RemoteError, cut, header_value, protocol,
};
use crate::wire::{self, NAME_HEADER};

/// At most this many pages of one list are read.
pub(crate) const MAX_PAGES: usize = 10;

/// At most this many items of one kind are kept per server.
pub(crate) const MAX_ITEMS: usize = 256;

/// What one server's kept items of one kind may add up to.
pub(crate) const MAX_CATALOGUE_BYTES: usize = 256 * 1024;

/// A resource URI (or URI template) longer than this is left out.
pub(crate) const MAX_URI: usize = 2048;

/// A `mimeType` longer than this is dropped.
const MAX_MIME_TYPE: usize = 128;

/// A prompt keeps at most this many arguments.
const MAX_PROMPT_ARGUMENTS: usize = 32;

/// Which of a server's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CatalogueKind {
    Resources,
    ResourceTemplates,
    Prompts,
}

impl CatalogueKind {
    fn method(self) -> &'static str {
        match self {
            CatalogueKind::Resources => "resources/list",
            CatalogueKind::ResourceTemplates => "resources/templates/list",
            CatalogueKind::Prompts => "prompts/list",
        }
    }

    /// The result's array.
    fn key(self) -> &'static str {
        match self {
            CatalogueKind::Resources => "resources",
            CatalogueKind::ResourceTemplates => "resourceTemplates",
            CatalogueKind::Prompts => "prompts",
        }
    }

    /// The server capability that offers it.
    fn capability(self) -> &'static str {
        match self {
            CatalogueKind::Resources | CatalogueKind::ResourceTemplates => "resources",
            CatalogueKind::Prompts => "prompts",
        }
    }

    /// The item's identifying key: what it is read or got by.
    pub(crate) fn id_key(self) -> &'static str {
        match self {
            CatalogueKind::Resources => "uri",
            CatalogueKind::ResourceTemplates => "uriTemplate",
            CatalogueKind::Prompts => "name",
        }
    }
}

/// One server's items of one kind, bounded: each an object with only the spec's keys.
#[derive(Debug, Default)]
pub(crate) struct Catalogue {
    pub items: Vec<Map<String, Value>>,
    /// Whether items past the bounds (count, bytes, pages) were left out.
    pub truncated: bool,
}

impl McpConnection {
    /// Every item of `kind`, following `nextCursor`; none when the server does not
    /// offer the kind.
    pub(crate) async fn list_catalogue(
        &self,
        kind: CatalogueKind,
    ) -> Result<Catalogue, RemoteError> {
        let mut catalogue = Catalogue::default();
        if self.declares(kind.capability()) == Some(false) {
            return Ok(catalogue);
        }
        let mut bytes = 0usize;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let result = match self
                .exchange(kind.method(), params, None, DEFAULT_MAX_BYTES)
                .await
            {
                Ok((result, _)) => result,
                Err(RemoteError::Remote {
                    code: wire::METHOD_NOT_FOUND,
                    ..
                }) => return Ok(catalogue),
                Err(error) => return Err(error),
            };
            let page = result
                .get(kind.key())
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    protocol(format!(
                        "{} result has no {} array",
                        kind.method(),
                        kind.key()
                    ))
                })?;
            for item in page {
                let Some(item) = kept(kind, item) else {
                    continue;
                };
                let size = serde_json::to_vec(&item).map_or(usize::MAX, |v| v.len());
                if catalogue.items.len() >= MAX_ITEMS || bytes + size > MAX_CATALOGUE_BYTES {
                    catalogue.truncated = true;
                    return Ok(catalogue);
                }
                bytes += size;
                catalogue.items.push(item);
            }
            cursor = match result.get("nextCursor") {
                None | Some(Value::Null) => return Ok(catalogue),
                Some(Value::String(next)) => Some(next.clone()),
                Some(_) => {
                    return Err(protocol(format!(
                        "{} nextCursor is not a string",
                        kind.method()
                    )));
                }
            };
        }
        catalogue.truncated = true;
        Ok(catalogue)
    }

    /// `resources/read` of `uri` (the server's own): the `ReadResourceResult` as sent,
    /// read up to the call bound.
    pub(crate) async fn read_resource(&self, uri: &str) -> Result<Value, RemoteError> {
        let (result, _) = self
            .exchange(
                "resources/read",
                json!({ "uri": uri }),
                Some(self.name_header(uri)),
                MAX_CALL_BYTES,
            )
            .await?;
        if !result.get("contents").is_some_and(Value::is_array) {
            return Err(protocol("resources/read result has no contents array"));
        }
        Ok(result)
    }

    /// `prompts/get` of `name` (the server's own) with `arguments`: the
    /// `GetPromptResult` as sent, read up to the call bound.
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, RemoteError> {
        let (result, _) = self
            .exchange(
                "prompts/get",
                json!({ "name": name, "arguments": arguments }),
                Some(self.name_header(name)),
                MAX_CALL_BYTES,
            )
            .await?;
        if !result.get("messages").is_some_and(Value::is_array) {
            return Err(protocol("prompts/get result has no messages array"));
        }
        Ok(result)
    }

    /// `Mcp-Name` (2026-07-28 asks for it on reads and gets); nothing on the handshake.
    fn name_header(&self, name: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if self.is_stateless() {
            headers.insert(NAME_HEADER, header_value(name));
        }
        headers
    }
}

/// What is kept of one listed item: its identifying key (non-empty, at most
/// [`MAX_URI`] bytes for a URI, [`MAX_TOOL_NAME`] characters for a name) and the spec's
/// other keys of the right types, cut; `None` when the item is not kept at all.
fn kept(kind: CatalogueKind, item: &Value) -> Option<Map<String, Value>> {
    let given = item.as_object()?;
    let text = |key: &str| given.get(key).and_then(Value::as_str);
    let id = text(kind.id_key()).filter(|id| !id.is_empty())?;
    let fits = match kind {
        CatalogueKind::Prompts => id.chars().count() <= MAX_TOOL_NAME,
        _ => id.len() <= MAX_URI,
    };
    if !fits {
        return None;
    }
    let mut kept = Map::new();
    kept.insert(kind.id_key().into(), id.into());
    // Resources and templates have a name too (required by the spec; the URI stands
    // in when a server left it out).
    if kind != CatalogueKind::Prompts {
        let name = text("name").filter(|name| !name.is_empty()).unwrap_or(id);
        kept.insert("name".into(), cut(name, MAX_TOOL_NAME).into());
    }
    if let Some(title) = text("title") {
        kept.insert("title".into(), cut(title, MAX_TOOL_TITLE).into());
    }
    if let Some(description) = text("description") {
        kept.insert(
            "description".into(),
            cut(description, MAX_TOOL_DESCRIPTION).into(),
        );
    }
    if kind != CatalogueKind::Prompts
        && let Some(mime) = text("mimeType").filter(|mime| mime.len() <= MAX_MIME_TYPE)
    {
        kept.insert("mimeType".into(), mime.into());
    }
    if kind == CatalogueKind::Resources
        && let Some(size) = given.get("size").and_then(Value::as_u64)
    {
        kept.insert("size".into(), size.into());
    }
    if kind == CatalogueKind::Prompts
        && let Some(arguments) = given.get("arguments").and_then(Value::as_array)
    {
        let arguments: Vec<Value> = arguments
            .iter()
            .filter_map(prompt_argument)
            .take(MAX_PROMPT_ARGUMENTS)
            .collect();
        if !arguments.is_empty() {
            kept.insert("arguments".into(), arguments.into());
        }
    }
    Some(kept)
}

/// A prompt argument: its name (at most [`MAX_TOOL_NAME`] characters), title,
/// description and `required`.
fn prompt_argument(argument: &Value) -> Option<Value> {
    let given = argument.as_object()?;
    let name = given
        .get("name")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty() && name.chars().count() <= MAX_TOOL_NAME)?;
    let mut kept = Map::new();
    kept.insert("name".into(), name.into());
    if let Some(title) = given.get("title").and_then(Value::as_str) {
        kept.insert("title".into(), cut(title, MAX_TOOL_TITLE).into());
    }
    if let Some(description) = given.get("description").and_then(Value::as_str) {
        kept.insert(
            "description".into(),
            cut(description, MAX_TOOL_DESCRIPTION).into(),
        );
    }
    if let Some(required) = given.get("required").and_then(Value::as_bool) {
        kept.insert("required".into(), required.into());
    }
    Some(Value::Object(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_specs_keys_are_kept_and_cut() {
        let long = "d".repeat(MAX_TOOL_DESCRIPTION + 50);
        let item = json!({
            "uri": "file:///a.txt", "name": "a", "description": long,
            "mimeType": "text/plain", "size": 12, "_meta": {"secret": 1}, "icons": []
        });
        let kept = kept(CatalogueKind::Resources, &item).unwrap();
        let mut keys: Vec<&str> = kept.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["description", "mimeType", "name", "size", "uri"]);
        let description = kept["description"].as_str().unwrap();
        assert_eq!(
            description.chars().count(),
            MAX_TOOL_DESCRIPTION + 1,
            "cut with an ellipsis"
        );
    }

    #[test]
    fn items_without_their_key_or_over_the_bounds_are_left_out() {
        assert!(kept(CatalogueKind::Resources, &json!({"name": "no uri"})).is_none());
        let uri = format!("file:///{}", "u".repeat(MAX_URI));
        assert!(kept(CatalogueKind::Resources, &json!({"uri": uri})).is_none());
        let name = "p".repeat(MAX_TOOL_NAME + 1);
        assert!(kept(CatalogueKind::Prompts, &json!({"name": name})).is_none());
        // A resource without a name is named by its URI.
        let kept = kept(CatalogueKind::Resources, &json!({"uri": "x:1"})).unwrap();
        assert_eq!(kept["name"], "x:1");
    }

    #[test]
    fn a_prompt_keeps_at_most_32_well_formed_arguments() {
        let arguments: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("a{i}"), "required": i == 0, "extra": true}))
            .chain([json!({"required": true}), json!("text")])
            .collect();
        let kept = kept(
            CatalogueKind::Prompts,
            &json!({"name": "p", "arguments": arguments}),
        )
        .unwrap();
        let kept = kept["arguments"].as_array().unwrap();
        assert_eq!(kept.len(), MAX_PROMPT_ARGUMENTS);
        assert_eq!(kept[0], json!({"name": "a0", "required": true}));
    }
}
