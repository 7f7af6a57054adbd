//! The registry's typed cores (D1, D4-D7): what the registry API's handlers
//! (`api/registry.rs`, both forms) and the console's servers pages call.
//!
//! Owns validation and the order of a write: check the url with
//! the guard (every non-empty url), seal the credential, probe (only an entry that is
//! or becomes enabled: a disabled one is recorded as given, an empty url allowed only
//! while disabled; a failed switch-on leaves the entry as it was), then one
//! conditional store write. Must not: parse a request body or shape an answer (the
//! handlers do), or return a credential.

use super::credentials::{self, AuthInput};
use super::naming::namespace;
use super::probe::{self, Probe};
use super::{ExternalServers, RegistryError};
use crate::domain::{MAX_MCP_SERVERS, McpServerRecord, McpServerWrite, ToolControls};
use crate::identity::Caller;

/// Longest server name: the namespace must leave room for tool names within 64.
const MAX_SERVER_NAME: usize = 32;

/// At most this many `allowed_tools` names (the tool bound, D6).
const MAX_ALLOWED: usize = 256;

/// The one reading of a conditional registry write (create, replace, rename, a url
/// given): what a refused write means to the user. `looked_up` is the name the write
/// expected to find (a rename's old name).
fn refused(
    written: McpServerWrite,
    record: &McpServerRecord,
    looked_up: &str,
) -> Result<(), RegistryError> {
    match written {
        McpServerWrite::Written => Ok(()),
        McpServerWrite::LimitReached => Err(too_many_servers()),
        McpServerWrite::NameTaken => Err(RegistryError::name_taken(&record.name)),
        McpServerWrite::UrlTaken if record.url.is_empty() => Err(RegistryError::url_less_taken()),
        McpServerWrite::UrlTaken => Err(RegistryError::url_taken()),
        McpServerWrite::Missing => Err(RegistryError::not_found(looked_up)),
        McpServerWrite::UrlChanged => Err(RegistryError::immutable("url")),
    }
}

fn too_many_servers() -> RegistryError {
    RegistryError::bad_request(format!(
        "an account may register at most {MAX_MCP_SERVERS} MCP servers"
    ))
}

/// A name whose namespace cannot be confused with another's: `mcp__<ns>__<tool>` is
/// read back unambiguously only when `<ns>` has no `__` and neither starts nor ends
/// with `_` (else `a` with tool `b__x` and `a__b` with tool `x` would meet).
fn check_name(name: &str) -> Result<(), RegistryError> {
    let ns = namespace(name);
    let valid = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !ns.contains("__")
        && !ns.starts_with('_')
        && !ns.ends_with('_');
    if valid {
        Ok(())
    } else {
        Err(RegistryError::bad_request(format!(
            "name must be 1 to {MAX_SERVER_NAME} letters, digits, '-' or '_', not starting or \
             ending with '-' or '_' and without two of them in a row"
        )))
    }
}

fn check_allowed_shape(allowed: Option<&Vec<String>>) -> Result<(), RegistryError> {
    check_names_shape("allowed_tools must be null or", allowed)
}

fn check_denied_shape(denied: &[String]) -> Result<(), RegistryError> {
    check_names_shape("denied_tools must be", Some(&denied.to_vec()))
}

fn check_names_shape(what: &str, names: Option<&Vec<String>>) -> Result<(), RegistryError> {
    let Some(names) = names else {
        return Ok(());
    };
    if names.len() > MAX_ALLOWED
        || names
            .iter()
            .any(|name| name.is_empty() || name.chars().count() > probe::MAX_TOOL_NAME)
    {
        return Err(RegistryError::bad_request(format!(
            "{what} at most {MAX_ALLOWED} tool names of 1 to {} characters",
            probe::MAX_TOOL_NAME
        )));
    }
    Ok(())
}

/// What a registration asks for, whichever form it came in (the JSON API or the console).
pub(crate) struct Registration {
    pub name: String,
    pub url: String,
    pub auth: AuthInput,
    pub allowed_tools: Option<Vec<String>>,
    pub controls: ToolControls,
    pub enabled: bool,
    pub order: i64,
}

/// What an update asks for; `None` leaves a field as it is.
#[derive(Default)]
pub(crate) struct Changes {
    pub url: Option<String>,
    pub name: Option<String>,
    pub auth: Option<AuthInput>,
    pub allowed_tools: Option<Option<Vec<String>>>,
    /// The whole deny list (the per-tool switches that are off).
    pub denied_tools: Option<Vec<String>>,
    pub read_only: Option<bool>,
    pub ask_first: Option<bool>,
    pub enabled: Option<bool>,
    pub order: Option<i64>,
}

impl ExternalServers {
    // ----- the typed cores both forms and the console share -----

    /// The caller's servers as the store keeps them (the seed's table).
    pub(crate) async fn table_records(
        &self,
        caller: &Caller,
    ) -> Result<Vec<McpServerRecord>, RegistryError> {
        self.store
            .mcp_servers(&caller.user_id)
            .await
            .map_err(RegistryError::unavailable)
    }

    /// The seed's set: the name checked, then the caller's server `name` changed by
    /// `changes` ([`Self::update`]), or registered with them if there is none (a field
    /// not given takes its default: no url, no auth, every tool, enabled, order 0).
    pub(crate) async fn set_server(
        &self,
        caller: &Caller,
        name: String,
        changes: Changes,
    ) -> Result<(), RegistryError> {
        check_name(&name)?;
        let existing = self
            .store
            .mcp_server(&caller.user_id, &name)
            .await
            .map_err(RegistryError::unavailable)?;
        if let Some(record) = existing {
            self.update(caller, record, changes).await?;
        } else {
            let registration = Registration {
                name,
                url: changes.url.unwrap_or_default(),
                auth: changes.auth.unwrap_or(AuthInput::None),
                allowed_tools: changes.allowed_tools.flatten(),
                controls: ToolControls {
                    denied_tools: changes.denied_tools.unwrap_or_default(),
                    read_only: changes.read_only.unwrap_or(false),
                    ask_first: changes.ask_first.unwrap_or(false),
                },
                enabled: changes.enabled.unwrap_or(true),
                order: changes.order.unwrap_or(0),
            };
            self.register(caller, registration).await?;
        }
        Ok(())
    }

    /// The caller's servers in listing order.
    pub(crate) async fn servers(
        &self,
        caller: &Caller,
    ) -> Result<Vec<McpServerRecord>, RegistryError> {
        let mut records = self
            .store
            .mcp_servers(&caller.user_id)
            .await
            .map_err(RegistryError::unavailable)?;
        super::sort_for_listing(&mut records);
        Ok(records)
    }

    /// One of the caller's servers.
    pub(crate) async fn server(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<McpServerRecord, RegistryError> {
        self.load(caller, name).await
    }

    /// Registers a server (D4): the name checked, then [`Self::register`].
    pub(crate) async fn create_server(
        &self,
        caller: &Caller,
        registration: Registration,
    ) -> Result<McpServerRecord, RegistryError> {
        check_name(&registration.name)?;
        self.register(caller, registration).await
    }

    /// Changes a server (D7), probing again when [`Self::update`] must.
    pub(crate) async fn update_server(
        &self,
        caller: &Caller,
        name: &str,
        changes: Changes,
    ) -> Result<McpServerRecord, RegistryError> {
        let record = self.load(caller, name).await?;
        self.update(caller, record, changes).await
    }

    /// Probes again with the stored credential and keeps the fresh tool snapshot; a
    /// failure is recorded on the server (`last_connect_error`) and returned.
    pub(crate) async fn reprobe_server(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<McpServerRecord, RegistryError> {
        let mut record = self.load(caller, name).await?;
        let auth = self
            .auth_headers(&caller.user_id, &record)
            .await
            .map_err(|why| RegistryError::probe_failed(&why))?;
        let now = self.clock.now();
        let seen = match probe::probe(&self.http, &record.url, &auth, self.probe_budget).await {
            Ok(seen) => seen,
            Err(error) => {
                self.record_failure(caller, name, &error.message).await;
                return Err(error);
            }
        };
        self.apply_probe(&mut record, &seen, now);
        self.replace(caller, &record).await?;
        Ok(record)
    }

    // ----- the operations both forms share -----

    pub(crate) async fn load(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<McpServerRecord, RegistryError> {
        self.store
            .mcp_server(&caller.user_id, name)
            .await
            .map_err(RegistryError::unavailable)?
            .ok_or_else(|| RegistryError::not_found(name))
    }

    /// Deletes one of the caller's servers.
    pub(crate) async fn remove(&self, caller: &Caller, name: &str) -> Result<(), RegistryError> {
        let deleted = self
            .store
            .delete_mcp_server(&caller.user_id, name)
            .await
            .map_err(RegistryError::unavailable)?;
        if !deleted {
            return Err(RegistryError::not_found(name));
        }
        self.cache.forget(&caller.user_id, name);
        Ok(())
    }

    /// D4: check the url, seal, probe, then create (name and url unique per account).
    async fn register(
        &self,
        caller: &Caller,
        registration: Registration,
    ) -> Result<McpServerRecord, RegistryError> {
        let user = &caller.user_id;
        check_allowed_shape(registration.allowed_tools.as_ref())?;
        check_denied_shape(&registration.controls.denied_tools)?;
        let existing = self
            .store
            .mcp_servers(user)
            .await
            .map_err(RegistryError::unavailable)?;
        // The fast path: refused before the probe. The store's write enforces the limit
        // again, atomically, for registrations that raced through the probe together.
        if existing.len() >= MAX_MCP_SERVERS {
            return Err(too_many_servers());
        }
        let wanted = namespace(&registration.name);
        if existing.iter().any(|r| namespace(&r.name) == wanted) {
            return Err(RegistryError::name_taken(&registration.name));
        }
        // An empty url only while disabled (a configuration recorded for later); every
        // other url goes through the guard, enabled or not.
        let url = if registration.url.trim().is_empty() {
            if registration.enabled {
                return Err(RegistryError::bad_request("url is required"));
            }
            String::new()
        } else {
            self.checked_url(&registration.url).await?
        };
        if existing.iter().any(|r| r.url == url) {
            return Err(if url.is_empty() {
                RegistryError::url_less_taken()
            } else {
                RegistryError::url_taken()
            });
        }
        let (auth, sealed_credential) =
            credentials::seal(&self.sealer, user, &url, &registration.auth)
                .map_err(RegistryError::bad_request)?;
        let now = self.clock.now();
        let mut record = McpServerRecord {
            name: registration.name,
            url,
            auth,
            sealed_credential,
            enabled: registration.enabled,
            order: registration.order,
            allowed_tools: registration.allowed_tools,
            controls: registration.controls,
            tools: Vec::new(),
            server_name: None,
            created_at: now,
            updated_at: now,
            last_connected_at: None,
            last_connect_error: None,
        };
        // Saved disabled: recorded as given, never contacted (its tools are listed when
        // it is switched on, which probes). Saved enabled: probed first.
        // An OAuth server is saved before its person signs in; its tools come with that.
        if record.enabled && !record.awaits_sign_in() {
            let headers = credentials::headers(&self.sealer, user, &record)
                .map_err(RegistryError::bad_request)?;
            let seen = probe::probe(&self.http, &record.url, &headers, self.probe_budget).await?;
            self.apply_probe(&mut record, &seen, now);
            probe::check_allowed(
                "allowed_tools",
                record.allowed_tools.as_deref(),
                &record.tools,
            )?;
            let denied = Some(record.controls.denied_tools.as_slice());
            probe::check_allowed("denied_tools", denied, &record.tools)?;
        }
        let written = self
            .store
            .create_mcp_server(user, &record)
            .await
            .map_err(RegistryError::unavailable)?;
        refused(written, &record, &record.name)?;
        Ok(record)
    }

    /// D7: update what may change (a new name renames); probe again when the
    /// credential changes, when the server is switched on, or when `allowed_tools` names
    /// a tool the snapshot lacks (only for an entry that is or becomes enabled).
    async fn update(
        &self,
        caller: &Caller,
        mut record: McpServerRecord,
        changes: Changes,
    ) -> Result<McpServerRecord, RegistryError> {
        let user = &caller.user_id;
        let old_name = record.name.clone();
        if let Some(name) = changes.name.filter(|name| *name != record.name) {
            check_name(&name)?;
            // Unique by tool namespace too (as on create), the server itself aside.
            let wanted = namespace(&name);
            let others = self
                .store
                .mcp_servers(user)
                .await
                .map_err(RegistryError::unavailable)?;
            if others
                .iter()
                .any(|r| r.name != old_name && namespace(&r.name) == wanted)
            {
                return Err(RegistryError::name_taken(&name));
            }
            record.name = name;
        }
        // The url never changes once set; an entry saved without one may be given one
        // (checked by the guard; its credential sealed again for it).
        let mut url_given = false;
        if let Some(url) = changes.url.as_deref().map(str::trim) {
            if record.url.is_empty() && !url.is_empty() {
                if record.name != old_name {
                    return Err(RegistryError::bad_request(
                        "give the server its url and its new name in two steps",
                    ));
                }
                let checked = self.checked_url(url).await?;
                record.sealed_credential =
                    credentials::rebind(&self.sealer, user, &record, "", &checked)
                        .map_err(RegistryError::bad_request)?;
                record.url = checked;
                url_given = true;
            } else {
                let same = if record.url.is_empty() {
                    url.is_empty()
                } else {
                    url::Url::parse(url).is_ok_and(|u| u.as_str() == record.url)
                };
                if !same {
                    return Err(RegistryError::immutable("url"));
                }
            }
        }
        // An entry that is already switched on (stored by an older version with an empty
        // url) is probed when it gets its url, like any switch-on.
        let mut reprobe = url_given;
        if let Some(input) = &changes.auth {
            let (auth, sealed) = credentials::seal(&self.sealer, user, &record.url, input)
                .map_err(RegistryError::bad_request)?;
            record.auth = auth;
            record.sealed_credential = sealed;
            reprobe = true;
        }
        if let Some(allowed) = changes.allowed_tools {
            check_allowed_shape(allowed.as_ref())?;
            reprobe |=
                probe::check_allowed("allowed_tools", allowed.as_deref(), &record.tools).is_err();
            record.allowed_tools = allowed;
        }
        // The deny list is checked against the tools only when it is given: a tool the
        // server later drops stays on it harmlessly.
        let denied_given = changes.denied_tools.is_some();
        if let Some(denied) = changes.denied_tools {
            check_denied_shape(&denied)?;
            reprobe |= probe::check_allowed("denied_tools", Some(&denied), &record.tools).is_err();
            record.controls.denied_tools = denied;
        }
        if let Some(read_only) = changes.read_only {
            record.controls.read_only = read_only;
        }
        if let Some(ask_first) = changes.ask_first {
            record.controls.ask_first = ask_first;
        }
        let switching_on = changes.enabled == Some(true) && !record.enabled;
        if let Some(enabled) = changes.enabled {
            record.enabled = enabled;
        }
        if let Some(order) = changes.order {
            record.order = order;
        }
        let now = self.clock.now();
        // A disabled entry is saved as given, never contacted. Switching one on probes
        // first; a failed probe refuses the whole update and the stored entry stays
        // as it was (still disabled).
        let awaits_sign_in = record.awaits_sign_in();
        if switching_on && !awaits_sign_in {
            if record.url.is_empty() {
                return Err(RegistryError::bad_request(
                    "a server without a url cannot be switched on",
                ));
            }
            let headers = self
                .auth_headers(user, &record)
                .await
                .map_err(|why| RegistryError::switch_on_failed(&why))?;
            let seen = probe::probe_or(
                &self.http,
                &record.url,
                &headers,
                self.probe_budget,
                RegistryError::switch_on_failed,
            )
            .await?;
            self.apply_probe(&mut record, &seen, now);
        } else if reprobe && record.enabled && !awaits_sign_in {
            let headers = self
                .auth_headers(user, &record)
                .await
                .map_err(RegistryError::bad_request)?;
            let seen = probe::probe(&self.http, &record.url, &headers, self.probe_budget).await?;
            self.apply_probe(&mut record, &seen, now);
        }
        if record.enabled && !awaits_sign_in {
            probe::check_allowed(
                "allowed_tools",
                record.allowed_tools.as_deref(),
                &record.tools,
            )?;
            if denied_given {
                let denied = Some(record.controls.denied_tools.as_slice());
                probe::check_allowed("denied_tools", denied, &record.tools)?;
            }
        }
        record.updated_at = now;
        if url_given {
            self.give_url(caller, &record).await?;
        } else if record.name == old_name {
            self.replace(caller, &record).await?;
        } else {
            self.rename(caller, &old_name, &record).await?;
        }
        Ok(record)
    }

    /// D7: one conditional store write moves the record (its sealed
    /// credential is bound to the account and the url, not the name, so it opens as
    /// before); both names' snapshots are dropped.
    async fn rename(
        &self,
        caller: &Caller,
        old: &str,
        record: &McpServerRecord,
    ) -> Result<(), RegistryError> {
        let written = self
            .store
            .rename_mcp_server(&caller.user_id, old, record)
            .await
            .map_err(RegistryError::unavailable)?;
        self.cache.forget(&caller.user_id, old);
        self.cache.forget(&caller.user_id, &record.name);
        refused(written, record, old)
    }

    /// A server saved without a url given its url: one conditional store write.
    async fn give_url(
        &self,
        caller: &Caller,
        record: &McpServerRecord,
    ) -> Result<(), RegistryError> {
        let written = self
            .store
            .set_mcp_server_url(&caller.user_id, record)
            .await
            .map_err(RegistryError::unavailable)?;
        self.cache.forget(&caller.user_id, &record.name);
        refused(written, record, &record.name)
    }

    /// The guard's verdict on `url` within the probe budget: the normalised url.
    async fn checked_url(&self, url: &str) -> Result<String, RegistryError> {
        let check = self.http.guard().check(url);
        let checked = tokio::time::timeout(self.probe_budget, check)
            .await
            .map_err(|_| RegistryError::invalid_url("the host name did not resolve in time"))?
            .map_err(|refusal| RegistryError::invalid_url(refusal.to_string()))?;
        Ok(checked.url().to_string())
    }

    pub(super) fn apply_probe(&self, record: &mut McpServerRecord, seen: &Probe, now: u64) {
        record.tools = probe::snapshot(&seen.tools);
        record.server_name = seen.server_name.clone();
        record.last_connected_at = Some(now);
        record.last_connect_error = None;
        record.updated_at = now;
    }

    pub(super) async fn replace(
        &self,
        caller: &Caller,
        record: &McpServerRecord,
    ) -> Result<(), RegistryError> {
        let written = self
            .store
            .replace_mcp_server(&caller.user_id, record)
            .await
            .map_err(RegistryError::unavailable)?;
        self.cache.forget(&caller.user_id, &record.name);
        refused(written, record, &record.name)
    }

    async fn record_failure(&self, caller: &Caller, name: &str, why: &str) {
        let at = self.clock.now();
        if let Err(error) = self
            .store
            .record_mcp_connection(&caller.user_id, name, at, Some(why))
            .await
        {
            tracing::warn!(%error, "could not record an MCP connection failure");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_tool_namespaces_unambiguous() {
        for good in [
            "shop",
            "my-shop",
            "my_shop2",
            "a-b_c",
            &"x".repeat(MAX_SERVER_NAME),
        ] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a__b",
            "a-_b",
            "a--b",
            "_a",
            "a_",
            "-a",
            "a-",
            "a b",
            "a.b",
            "é",
            &"x".repeat(MAX_SERVER_NAME + 1),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
