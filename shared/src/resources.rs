//! Resources (A9): the descriptors found in `MCP_RESOURCE_DIRS`, plus any a tool pack
//! registers, served by `resources/list` and `resources/read`.
//!
//! Owns loading (each `*.json` is one descriptor with a `uri`, its text inline or in a
//! `_file` beside it), ordering by uri, and per-request substitution of
//! `{{WEB_SERVER_URL}}`, `{{MCP_SERVER_URL}}` and `{{DATA_SERVER_URL}}` on a copy: the
//! loaded text is never changed. `{{JWT_TOKEN}}` becomes a fixed placeholder
//! ([`WITHHELD_TOKEN`]), never the caller's bearer token: resource text goes into a
//! model's context, and a credential there can be repeated, logged or exfiltrated by a
//! prompt injection.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::config::ConfigError;

#[derive(Debug, Clone)]
pub(crate) enum ResourceBody {
    Text(String),
    /// Base64-encoded bytes (only the fixture pack serves one today).
    #[cfg_attr(not(feature = "fixtures"), allow(dead_code))]
    Blob(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Resource {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub body: ResourceBody,
}

/// Reads a templated resource: the uri matched the template; `None` if nothing is there.
pub(crate) type TemplateReader =
    Arc<dyn Fn(&str, &BTreeMap<String, String>) -> Option<Resource> + Send + Sync>;

#[derive(Clone)]
pub(crate) struct ResourceTemplate {
    pub uri_template: String,
    pub name: String,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub read: TemplateReader,
}

/// Values substituted into resource text on read, for one request.
pub(crate) struct Substitutions<'a> {
    pub server_url: &'a str,
}

/// What `{{JWT_TOKEN}}` reads as: the caller's credential never enters resource text.
pub(crate) const WITHHELD_TOKEN: &str =
    "[access token withheld: your MCP client signs in with its own credentials]";

#[derive(Clone, Default)]
pub(crate) struct Resources {
    by_uri: BTreeMap<String, Resource>,
    templates: Vec<ResourceTemplate>,
}

impl Resources {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Loads every `*.json` descriptor in the given directories.
    pub(crate) fn load_dirs(
        &mut self,
        dirs: &[impl AsRef<Path>],
    ) -> Result<&mut Self, ConfigError> {
        for dir in dirs {
            let dir = dir.as_ref();
            let entries =
                std::fs::read_dir(dir).map_err(|e| resource_error(dir, &e.to_string()))?;
            let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            for path in paths
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
            {
                let resource = load_descriptor(path)?;
                self.add(resource);
            }
        }
        Ok(self)
    }

    pub(crate) fn add(&mut self, resource: Resource) -> &mut Self {
        self.by_uri.insert(resource.uri.clone(), resource);
        self
    }

    #[cfg_attr(not(feature = "fixtures"), allow(dead_code))]
    pub(crate) fn add_template(&mut self, template: ResourceTemplate) -> &mut Self {
        self.templates.push(template);
        self.templates
            .sort_by(|a, b| a.uri_template.cmp(&b.uri_template));
        self
    }

    /// `resources/list` entries, sorted by uri, without their text.
    pub(crate) fn list(&self) -> Vec<Value> {
        self.by_uri.values().map(describe).collect()
    }

    pub(crate) fn list_templates(&self) -> Vec<Value> {
        self.templates
            .iter()
            .map(|t| {
                let mut v = json!({ "uriTemplate": t.uri_template, "name": t.name });
                if let Some(d) = &t.description {
                    v["description"] = d.clone().into();
                }
                if let Some(m) = &t.mime_type {
                    v["mimeType"] = m.clone().into();
                }
                v
            })
            .collect()
    }

    /// `resources/read` contents for `uri`, substituted for this request; `None` when
    /// no resource or template serves it.
    pub(crate) fn read(&self, uri: &str, subs: &Substitutions<'_>) -> Option<Value> {
        // A loaded resource is read in place; only its substituted text is copied.
        let found = match self.by_uri.get(uri) {
            Some(resource) => Cow::Borrowed(resource),
            None => Cow::Owned(self.templates.iter().find_map(|t| {
                let vars = match_template(&t.uri_template, uri)?;
                (t.read)(uri, &vars)
            })?),
        };
        let mut content = json!({ "uri": found.uri });
        if let Some(m) = &found.mime_type {
            content["mimeType"] = m.clone().into();
        }
        match &found.body {
            ResourceBody::Text(text) => content["text"] = substitute(text, subs).into(),
            ResourceBody::Blob(blob) => content["blob"] = blob.clone().into(),
        }
        Some(json!([content]))
    }
}

fn describe(r: &Resource) -> Value {
    let mut v = Map::new();
    v.insert("uri".into(), r.uri.clone().into());
    v.insert("name".into(), r.name.clone().into());
    if let Some(t) = &r.title {
        v.insert("title".into(), t.clone().into());
    }
    if let Some(d) = &r.description {
        v.insert("description".into(), d.clone().into());
    }
    if let Some(m) = &r.mime_type {
        v.insert("mimeType".into(), m.clone().into());
    }
    Value::Object(v)
}

fn substitute(text: &str, subs: &Substitutions<'_>) -> String {
    if !text.contains("{{") {
        return text.to_string();
    }
    text.replace("{{WEB_SERVER_URL}}", subs.server_url)
        .replace("{{MCP_SERVER_URL}}", subs.server_url)
        .replace("{{DATA_SERVER_URL}}", subs.server_url)
        .replace("{{JWT_TOKEN}}", WITHHELD_TOKEN)
}

/// Matches RFC 6570 level-1 templates (`scheme://x/{id}/y`).
fn match_template(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let mut vars = BTreeMap::new();
    let mut rest = uri;
    let mut pieces = template.split('{');
    let head = pieces.next()?;
    rest = rest.strip_prefix(head)?;
    for piece in pieces {
        let (name, literal) = piece.split_once('}')?;
        let end = if literal.is_empty() {
            rest.len()
        } else {
            rest.find(literal)?
        };
        let value = &rest[..end];
        if value.is_empty() || value.contains('/') {
            return None;
        }
        vars.insert(name.to_string(), value.to_string());
        rest = &rest[end + literal.len()..];
    }
    rest.is_empty().then_some(vars)
}

fn resource_error(path: &Path, why: &str) -> ConfigError {
    ConfigError {
        setting: "MCP_RESOURCE_DIRS".into(),
        problem: format!("{}: {why}", path.display()),
    }
}

fn load_descriptor(path: &Path) -> Result<Resource, ConfigError> {
    let raw = std::fs::read_to_string(path).map_err(|e| resource_error(path, &e.to_string()))?;
    let v: Value = serde_json::from_str(&raw).map_err(|e| resource_error(path, &e.to_string()))?;
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    let uri = field("uri").ok_or_else(|| resource_error(path, "has no \"uri\""))?;
    let text = match (field("text"), field("_file")) {
        (Some(text), _) => text,
        (None, Some(file)) => {
            let beside = path.parent().unwrap_or(Path::new(".")).join(&file);
            std::fs::read_to_string(&beside).map_err(|e| resource_error(&beside, &e.to_string()))?
        }
        (None, None) => return Err(resource_error(path, "has neither \"text\" nor \"_file\"")),
    };
    Ok(Resource {
        name: field("name").unwrap_or_else(|| uri.clone()),
        uri,
        title: field("title"),
        description: field("description"),
        mime_type: field("mimeType").or_else(|| Some("text/plain".into())),
        body: ResourceBody::Text(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_happens_on_a_copy_and_never_carries_a_token() {
        let mut r = Resources::new();
        r.add(Resource {
            uri: "mirobody://guide".into(),
            name: "guide".into(),
            title: None,
            description: None,
            mime_type: None,
            body: ResourceBody::Text("{{MCP_SERVER_URL}}/mcp with {{JWT_TOKEN}}".into()),
        });
        let a = r.read(
            "mirobody://guide",
            &Substitutions {
                server_url: "http://a",
            },
        );
        let b = r.read(
            "mirobody://guide",
            &Substitutions {
                server_url: "http://b",
            },
        );
        assert_eq!(
            a.unwrap()[0]["text"],
            format!("http://a/mcp with {WITHHELD_TOKEN}")
        );
        assert_eq!(
            b.unwrap()[0]["text"],
            format!("http://b/mcp with {WITHHELD_TOKEN}")
        );
    }

    #[test]
    fn templates_match_level_one_variables() {
        let vars = match_template("test://template/{id}/data", "test://template/42/data").unwrap();
        assert_eq!(vars["id"], "42");
        assert!(match_template("test://template/{id}/data", "test://template/42/other").is_none());
    }
}
