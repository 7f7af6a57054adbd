//! The registry API's handlers: the seed's table form and the richer REST form, over
//! the typed cores of `external` (the console's too).
//!
//! - `GET`/`POST /api/user/mcp`: the whole table `{name: entry}`;
//!   `POST /api/user/mcp/set`: add or replace one entry; `POST /api/user/mcp/delete`:
//!   remove one. Envelope `{success, code, msg, data}` (`Success::seed`).
//! - `POST`/`GET /api/user/mcp-servers`, `GET`/`PATCH`/`DELETE
//!   /api/user/mcp-servers/{name}`, `POST /api/user/mcp-servers/{name}/probe`: the data
//!   itself (`Success::bare`), refusals `{error: {code, message}}`.
//!
//! Owns the request bodies' parsing (serde's messages with every quoted value blanked)
//! and the views: a view shows the auth type and header name only, never a credential.
//! Must not: validate, probe, seal or write (the cores in `external/registry.rs` do,
//! in their one order), or reach the store.

use http::StatusCode;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

use crate::domain::{McpAuth, McpServerRecord, ToolControls};
use crate::external::{AuthInput, Changes, ExternalServers, Registration, RegistryError};
use crate::http::{ApiError, Success};
use crate::identity::Caller;

/// `Some(None)` for an explicit `null`, `None` when the field is absent.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Ok(Some(Option::deserialize(deserializer)?))
}

/// `POST /api/user/mcp-servers`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    name: String,
    url: String,
    #[serde(default)]
    auth: Option<AuthInput>,
    #[serde(default)]
    allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    denied_tools: Option<Vec<String>>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    ask_first: Option<bool>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    order: Option<i64>,
}

/// `PATCH /api/user/mcp-servers/{name}`. `url` may be sent unchanged; another `name`
/// renames the server.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct UpdateRequest {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    auth: Option<AuthInput>,
    #[serde(default, deserialize_with = "nullable")]
    allowed_tools: Option<Option<Vec<String>>>,
    #[serde(default)]
    denied_tools: Option<Vec<String>>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    ask_first: Option<bool>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    order: Option<i64>,
}

/// One entry of the seed's table (`token` is the optional bearer; the richer fields
/// are accepted too). An absent `token` keeps the stored credential on a replace;
/// `null` or `""` removes it.
#[derive(Deserialize, Default)]
struct SeedEntry {
    #[serde(default)]
    url: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    token: Option<Option<String>>,
    #[serde(default)]
    auth: Option<AuthInput>,
    #[serde(default, deserialize_with = "nullable")]
    allowed_tools: Option<Option<Vec<String>>>,
    #[serde(default)]
    denied_tools: Option<Vec<String>>,
    #[serde(default)]
    read_only: Option<bool>,
    #[serde(default)]
    ask_first: Option<bool>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    order: Option<i64>,
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, RegistryError> {
    serde_json::from_slice(body).map_err(|err| {
        RegistryError::bad_request(format!(
            "the body is not a valid request: {}",
            unquoted(&err.to_string())
        ))
    })
}

/// serde's message with every quoted value blanked: it names fields (in backticks) and
/// positions, but `invalid type: string "…"` would echo what was sent, maybe a secret.
fn unquoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut inside = false;
    for c in message.chars() {
        if c == '"' {
            if inside {
                out.push_str("…\"");
            } else {
                out.push('"');
            }
            inside = !inside;
        } else if !inside {
            out.push(c);
        }
    }
    out
}

fn rfc3339(secs: Option<u64>) -> Value {
    secs.and_then(|s| chrono::DateTime::from_timestamp(s as i64, 0))
        .map(|t| Value::String(t.to_rfc3339()))
        .unwrap_or(Value::Null)
}

/// A record as clients see it: the auth type and header name, never the credential.
fn view(record: &McpServerRecord) -> Map<String, Value> {
    let auth = match &record.auth {
        McpAuth::None => json!({"type": "NONE"}),
        McpAuth::Bearer => json!({"type": "BEARER"}),
        McpAuth::Header { name } => json!({"type": "HEADER", "name": name}),
        McpAuth::OAuth => json!({"type": "OAUTH", "signed_in": !record.awaits_sign_in()}),
    };
    let exposed = crate::external::exposed_names(&record.name, &record.tools);
    let tools: Vec<Value> = record
        .tools
        .iter()
        .zip(exposed)
        .map(|(tool, exposed)| {
            json!({
                "name": tool.name,
                "exposed_name": exposed,
                "description": tool.description,
                "read_only": tool.read_only,
                "offered": record.offers(&tool.name, tool.read_only),
                "asks_first": record.asks_first(tool.read_only),
            })
        })
        .collect();
    let mut view = Map::new();
    view.insert("name".into(), record.name.clone().into());
    view.insert("url".into(), record.url.clone().into());
    view.insert("auth".into(), auth);
    // An OAuth server whose person has not signed in (or must again): where they do.
    view.insert("needs_sign_in".into(), record.awaits_sign_in().into());
    view.insert("allowed_tools".into(), json!(record.allowed_tools));
    view.insert("denied_tools".into(), json!(record.controls.denied_tools));
    view.insert("read_only".into(), record.controls.read_only.into());
    view.insert("ask_first".into(), record.controls.ask_first.into());
    view.insert("enabled".into(), record.enabled.into());
    view.insert("order".into(), record.order.into());
    view.insert("server_name".into(), json!(record.server_name));
    view.insert("tools".into(), tools.into());
    view.insert("created_at".into(), rfc3339(Some(record.created_at)));
    view.insert("updated_at".into(), rfc3339(Some(record.updated_at)));
    view.insert(
        "last_connected_at".into(),
        rfc3339(record.last_connected_at),
    );
    view.insert(
        "last_connect_error".into(),
        json!(record.last_connect_error),
    );
    view
}

/// The seed's table: `{name: entry}` (the entry without its `name`).
fn table(records: &[McpServerRecord]) -> Value {
    let mut table = Map::new();
    for record in records {
        let mut entry = view(record);
        entry.remove("name");
        table.insert(record.name.clone(), Value::Object(entry));
    }
    Value::Object(table)
}

impl ExternalServers {
    // ----- the seed's table form -----

    /// `GET`/`POST /api/user/mcp`.
    pub(crate) async fn seed_table(&self, caller: &Caller) -> Result<Success, ApiError> {
        let records = self
            .table_records(caller)
            .await
            .map_err(RegistryError::seed)?;
        Ok(Success::seed(table(&records)))
    }

    /// `POST /api/user/mcp/set`: `{"name": …, "url": …, …}` or `{"<name>": {…}}`.
    pub(crate) async fn seed_set(&self, caller: &Caller, body: &[u8]) -> Result<Success, ApiError> {
        let outcome = async {
            let (name, entry) = seed_entry(body)?;
            let auth = entry.auth.or_else(|| match &entry.token {
                Some(Some(token)) if !token.is_empty() => Some(AuthInput::Bearer {
                    token: token.clone(),
                }),
                Some(_) => Some(AuthInput::None),
                None => None,
            });
            let changes = Changes {
                url: entry.url,
                name: None,
                auth,
                allowed_tools: entry.allowed_tools,
                denied_tools: entry.denied_tools,
                read_only: entry.read_only,
                ask_first: entry.ask_first,
                enabled: entry.enabled,
                order: entry.order,
            };
            self.set_server(caller, name, changes).await?;
            self.table_records(caller).await
        };
        let records = outcome.await.map_err(RegistryError::seed)?;
        Ok(Success::seed(table(&records)))
    }

    /// `POST /api/user/mcp/delete`: `{"name": …}`.
    pub(crate) async fn seed_delete(
        &self,
        caller: &Caller,
        body: &[u8],
    ) -> Result<Success, ApiError> {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let outcome = async {
            let Named { name } = parse(body)?;
            self.remove(caller, &name).await?;
            self.table_records(caller).await
        };
        let records = outcome.await.map_err(RegistryError::seed)?;
        Ok(Success::seed(table(&records)))
    }

    // ----- the REST form -----

    /// `GET /api/user/mcp-servers`: `{"servers": [...]}` in listing order.
    pub(crate) async fn list(&self, caller: &Caller) -> Result<Success, ApiError> {
        let records = self.servers(caller).await.map_err(RegistryError::rest)?;
        let servers: Vec<Value> = records.iter().map(|r| Value::Object(view(r))).collect();
        Ok(Success::bare(StatusCode::OK, json!({ "servers": servers })))
    }

    /// `POST /api/user/mcp-servers`: 201 with the server, its tools and its self-reported name.
    pub(crate) async fn create(&self, caller: &Caller, body: &[u8]) -> Result<Success, ApiError> {
        let outcome = async {
            let request: CreateRequest = parse(body)?;
            let registration = Registration {
                name: request.name,
                url: request.url,
                auth: request.auth.unwrap_or(AuthInput::None),
                allowed_tools: request.allowed_tools,
                controls: ToolControls {
                    denied_tools: request.denied_tools.unwrap_or_default(),
                    read_only: request.read_only.unwrap_or(false),
                    ask_first: request.ask_first.unwrap_or(false),
                },
                enabled: request.enabled.unwrap_or(true),
                order: request.order.unwrap_or(0),
            };
            self.create_server(caller, registration).await
        };
        let record = outcome.await.map_err(RegistryError::rest)?;
        Ok(Success::bare(
            StatusCode::CREATED,
            Value::Object(view(&record)),
        ))
    }

    /// `GET /api/user/mcp-servers/{name}`.
    pub(crate) async fn get(&self, caller: &Caller, name: &str) -> Result<Success, ApiError> {
        let record = self.load(caller, name).await.map_err(RegistryError::rest)?;
        Ok(Success::bare(StatusCode::OK, Value::Object(view(&record))))
    }

    /// `PATCH /api/user/mcp-servers/{name}`.
    pub(crate) async fn patch(
        &self,
        caller: &Caller,
        name: &str,
        body: &[u8],
    ) -> Result<Success, ApiError> {
        let outcome = async {
            let request: UpdateRequest = parse(body)?;
            let changes = Changes {
                url: request.url,
                name: request.name,
                auth: request.auth,
                allowed_tools: request.allowed_tools,
                denied_tools: request.denied_tools,
                read_only: request.read_only,
                ask_first: request.ask_first,
                enabled: request.enabled,
                order: request.order,
            };
            self.update_server(caller, name, changes).await
        };
        let record = outcome.await.map_err(RegistryError::rest)?;
        Ok(Success::bare(StatusCode::OK, Value::Object(view(&record))))
    }

    /// `POST /api/user/mcp-servers/{name}/probe`: probe again with the stored
    /// credential and keep the fresh tool snapshot.
    pub(crate) async fn reprobe(&self, caller: &Caller, name: &str) -> Result<Success, ApiError> {
        let record = self
            .reprobe_server(caller, name)
            .await
            .map_err(RegistryError::rest)?;
        Ok(Success::bare(StatusCode::OK, Value::Object(view(&record))))
    }

    /// `DELETE /api/user/mcp-servers/{name}`.
    pub(crate) async fn delete(&self, caller: &Caller, name: &str) -> Result<Success, ApiError> {
        self.remove(caller, name)
            .await
            .map_err(RegistryError::rest)?;
        Ok(Success::bare(StatusCode::OK, json!({"deleted": name})))
    }
}

/// The seed's set body: `{"name": …, …}` or `{"<name>": {…}}`.
fn seed_entry(body: &[u8]) -> Result<(String, SeedEntry), RegistryError> {
    let value: Value = parse(body)?;
    let Value::Object(mut object) = value else {
        return Err(RegistryError::bad_request("the body must be a JSON object"));
    };
    let entry_of = |value: Value| {
        serde_json::from_value::<SeedEntry>(value).map_err(|err| {
            RegistryError::bad_request(format!(
                "the entry is not valid: {}",
                unquoted(&err.to_string())
            ))
        })
    };
    match object.remove("name") {
        Some(Value::String(name)) => Ok((name, entry_of(Value::Object(object))?)),
        Some(_) => Err(RegistryError::bad_request("name must be a string")),
        None if object.len() == 1 => {
            let (name, entry) = object.into_iter().next().expect("one entry");
            if !entry.is_object() {
                return Err(RegistryError::bad_request("the entry must be an object"));
            }
            Ok((name, entry_of(entry)?))
        }
        None => Err(RegistryError::bad_request(
            "send {\"name\": …, \"url\": …} or {\"<name>\": {\"url\": …}}",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_never_echo_values() {
        let err =
            parse::<CreateRequest>(br#"{"name": "shop", "url": "https://x", "enabled": "s3cr3t"}"#)
                .err()
                .unwrap();
        assert!(!err.message.contains("s3cr3t"), "{}", err.message);
        assert!(err.message.contains("invalid type"), "{}", err.message);
    }
}
