//! Your MCP servers: the table of the user's external servers (name, url, auth type,
//! enabled, allowed tools, last connected, last error, the tools of the last probe) with
//! add, edit, enable/disable, re-probe and delete, through the typed cores of
//! `ExternalServers` (the same ones the JSON API calls); a refusal (a probe that failed,
//! a taken name) is shown in words on the page with its status, and the form keeps what
//! was typed except the credential. A credential is never shown back: only "set".
//! The registry's rules hold here as in the API: a server added switched off is saved
//! without contacting it; switching one on probes it and is refused if it does not answer;
//! a new name on the edit form renames it (then the edit page of the new name).

use bytes::Bytes;
use http::{Request, StatusCode};
use maud::{Markup, html};

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, field, form, html as page, query_param, redirect};
use crate::domain::{McpAuth, McpServerRecord};
use crate::external::{AuthInput, Changes, Registration, RegistryError};
use crate::http::ApiError;
use crate::identity::Caller;

const SECTION: &str = "/console/servers";
const TITLE: &str = "Your MCP servers";

/// What the add form held, shown again after a refusal (never the credential).
#[derive(Default)]
struct Draft {
    name: String,
    url: String,
    auth_type: String,
    header_name: String,
    enabled: bool,
    allowed_tools: String,
}

impl Draft {
    fn of(fields: &[(String, String)]) -> Draft {
        let text = |name: &str| field(fields, name).unwrap_or_default().trim().to_string();
        Draft {
            name: text("name"),
            url: text("url"),
            auth_type: text("auth_type"),
            header_name: text("header_name"),
            enabled: field(fields, "enabled").is_some(),
            allowed_tools: text("allowed_tools"),
        }
    }

    fn fresh() -> Draft {
        Draft {
            auth_type: "none".into(),
            enabled: true,
            ..Draft::default()
        }
    }
}

/// The allowed-tools field: names separated by commas or white space; none means every tool.
fn allowed_tools(text: &str) -> Option<Vec<String>> {
    let names: Vec<String> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect();
    (!names.is_empty()).then_some(names)
}

/// The auth the form asks for. `current` is the stored auth on an edit: a blank
/// credential then keeps the sealed one (`Ok(None)`: no change), when the kind (and the
/// header name) stay the same.
fn auth_input(
    fields: &[(String, String)],
    current: Option<&McpAuth>,
) -> Result<Option<AuthInput>, RegistryError> {
    let credential = field(fields, "credential").map(str::to_string);
    let header_name = field(fields, "header_name")
        .unwrap_or_default()
        .trim()
        .to_string();
    let kind = field(fields, "auth_type").unwrap_or("none");
    match (kind, credential) {
        ("oauth", _) => Ok(match current {
            Some(McpAuth::OAuth) => None,
            _ => Some(AuthInput::OAuth),
        }),
        ("none", _) => Ok(match current {
            Some(McpAuth::None) => None,
            _ => Some(AuthInput::None),
        }),
        ("bearer", Some(token)) => Ok(Some(AuthInput::Bearer { token })),
        ("bearer", None) if matches!(current, Some(McpAuth::Bearer)) => Ok(None),
        ("bearer", None) => Err(RegistryError::bad_request(
            "enter the bearer token the server expects",
        )),
        ("header", Some(value)) => Ok(Some(AuthInput::Header {
            name: header_name,
            value,
        })),
        ("header", None) if matches!(current, Some(McpAuth::Header { name }) if *name == header_name) => {
            Ok(None)
        }
        ("header", None) => Err(RegistryError::bad_request(
            "enter the header's value (a new header name needs its value again)",
        )),
        _ => Err(RegistryError::bad_request(
            "choose no authentication, a bearer token or a header",
        )),
    }
}

/// A refusal of the registry in words, with its status (the one mapping for the pages).
fn problem(error: &RegistryError) -> (StatusCode, String) {
    let mut words = error.message.clone();
    if let Some(first) = words.get(0..1) {
        let upper = first.to_uppercase();
        words.replace_range(0..1, &upper);
    }
    if !words.ends_with('.') {
        words.push('.');
    }
    (error.status, words)
}

pub(crate) fn when(secs: Option<u64>) -> String {
    secs.and_then(|s| chrono::DateTime::from_timestamp(i64::try_from(s).ok()?, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "never".into())
}

fn auth_words(auth: &McpAuth) -> String {
    match auth {
        McpAuth::None => "none".into(),
        McpAuth::Bearer => "bearer token".into(),
        McpAuth::Header { name } => format!("header {name}"),
        McpAuth::OAuth => "OAuth sign-in".into(),
    }
}

fn path_of(name: &str) -> String {
    let encoded: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
    format!("/console/servers/{encoded}")
}

/// The console's page an OAuth server's authorization server sends the person back to.
pub(crate) const CALLBACK: &str = "/console/oauth/callback";

/// The fixed words of a finished action (`?done=…`, never user input on the page).
fn done_words(done: &str) -> Option<&'static str> {
    Some(match done {
        "signed-in" => "You are signed in to the server; its tools are listed.",
        "added" => "The server was added and its tools listed.",
        "added-off" => {
            "The server was saved switched off, without contacting it; switch it on to list its tools."
        }
        "saved" => "The server was saved.",
        "enabled" => "The server was switched on.",
        "disabled" => "The server was switched off.",
        "probed" => "The server was probed again; its tools are up to date.",
        "deleted" => "The server was deleted.",
        _ => return None,
    })
}

fn auth_select(id: &str, selected: &str) -> Markup {
    let options = [
        ("none", "No authentication"),
        ("bearer", "Bearer token"),
        ("header", "Custom header"),
        ("oauth", "OAuth sign-in (the server's own sign-in page)"),
    ];
    html! {
        select id=(id) name="auth_type" {
            @for (value, label) in options {
                option value=(value) selected[value == selected] { (label) }
            }
        }
    }
}

/// A server's tools as the last probe saw them: each name, the name your AI sees it
/// under when that differs from the plain `mcp__<server>__<tool>`, and its
/// description, the same words `/mcp` hands the model.
fn tool_list(record: &McpServerRecord) -> Markup {
    let exposed = crate::external::exposed_names(&record.name, &record.tools);
    html! {
        @if !record.tools.is_empty() {
            ul.tool-list {
                @for (tool, exposed) in record.tools.iter().zip(exposed) {
                    @let offered = record.offers(&tool.name, tool.read_only);
                    li data-tool=(tool.name) data-offered=(offered) {
                        details {
                            summary {
                                code { (tool.name) }
                                @if !offered { " " span.badge.off { "off" } }
                                @else if record.asks_first(tool.read_only) { " " span.badge { "asks you first" } }
                            }
                            @if offered {
                                p { "Your AI sees it as " code.exposed { (exposed) } "." }
                            } @else {
                                p { "Your AI does not see it (" code.exposed { (exposed) } ")." }
                            }
                            @if let Some(description) = &tool.description {
                                p.description { (description) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The per-tool switches, read-only and ask-first: what the edit form adds to its
/// fields (`controls` says they were shown, so an unchecked box means off).
fn controls_fieldset(record: &McpServerRecord) -> Markup {
    html! {
        fieldset id="server-controls" {
            legend { "What your AI may use" }
            input type="hidden" name="controls" value="1";
            @if record.tools.is_empty() {
                p.muted { "No tools listed yet: they appear here once the server answers." }
            }
            ul.tool-switches {
                @for (i, tool) in record.tools.iter().enumerate() {
                    @let id = format!("tool-on-{i}");
                    @let on = !record.controls.denied_tools.contains(&tool.name);
                    li {
                        label for=(id) {
                            input id=(id) name="tool_on" type="checkbox" value=(tool.name) checked[on];
                            " " code { (tool.name) }
                            @if tool.read_only { " " span.badge { "read-only" } }
                        }
                    }
                }
            }
            label for="server-read-only" {
                input id="server-read-only" name="read_only" type="checkbox" value="on"
                    checked[record.controls.read_only];
                " Only tools the server marks read-only"
            }
            label for="server-ask-first" {
                input id="server-ask-first" name="ask_first" type="checkbox" value="on"
                    checked[record.controls.ask_first];
                " Ask me before a tool that can change things runs"
            }
            p.muted {
                "Read-only is the server's own word (its readOnlyHint). When asking first, an AI "
                "app that can show a question asks you for each such call; one that cannot is told "
                "the tool did not run and why."
            }
        }
    }
}

/// The deny list the edit form's switches give: the listed tools left unchecked, and
/// the denied names the server no longer lists (kept, harmless).
fn denied_from(fields: &[(String, String)], record: &McpServerRecord) -> Vec<String> {
    let on = |name: &str| fields.iter().any(|(k, v)| k == "tool_on" && v == name);
    let listed = |name: &str| record.tools.iter().any(|tool| tool.name == name);
    let mut denied: Vec<String> = record
        .controls
        .denied_tools
        .iter()
        .filter(|name| !listed(name))
        .cloned()
        .collect();
    denied.extend(
        record
            .tools
            .iter()
            .filter(|tool| !on(&tool.name))
            .map(|tool| tool.name.clone()),
    );
    denied
}

fn servers_table(session: &Session, records: &[McpServerRecord]) -> Markup {
    html! {
        @if records.is_empty() {
            p.muted id="no-servers" { "No servers yet. Add one below." }
        }
        div.table-wrap {
            table.stack id="servers" {
                thead {
                    tr {
                        th { "Name" } th { "URL" } th { "Auth" } th { "Enabled" }
                        th { "Allowed tools" } th { "Tools" } th { "Last connected" }
                        th { "Last error" } th { "Actions" }
                    }
                }
                tbody {
                    @for record in records {
                        @let path = path_of(&record.name);
                        tr data-server=(record.name) {
                            td.name data-label="Name" { (record.name) }
                            td.url data-label="URL" { code { (record.url) } }
                            td.auth data-label="Auth" {
                                (auth_words(&record.auth))
                                @if record.awaits_sign_in() { " " span.badge.off { "needs sign-in" } }
                                @else if record.sealed_credential.is_some() { " (set)" }
                            }
                            td.enabled data-label="Enabled" { @if record.enabled { "yes" } @else { "no" } }
                            td.allowed data-label="Allowed tools" {
                                @match &record.allowed_tools {
                                    Some(names) => (names.join(", ")),
                                    None => span.muted { "all" },
                                }
                            }
                            td.tools data-label="Tools" { (tool_list(record)) }
                            td.last-connected data-label="Last connected" { (when(record.last_connected_at)) }
                            td.last-error data-label="Last error" {
                                @if let Some(error) = &record.last_connect_error { span.error { (error) } }
                            }
                            td.actions {
                                a.server-edit href=(path) { "Edit" }
                                @if matches!(record.auth, McpAuth::OAuth) && !record.url.is_empty() {
                                    form method="post" action={ (path) "/sign-in" } {
                                        input type="hidden" name="csrf" value=(session.csrf);
                                        button.server-sign-in type="submit" {
                                            @if record.awaits_sign_in() { "Sign in" } @else { "Sign in again" }
                                        }
                                    }
                                }
                                form method="post" action={ (path) "/toggle" } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    button.server-toggle.secondary type="submit" {
                                        @if record.enabled { "Switch off" } @else { "Switch on" }
                                    }
                                }
                                form method="post" action={ (path) "/probe" } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    button.server-probe.secondary type="submit" { "Probe again" }
                                }
                                form method="post" action={ (path) "/delete" }
                                    data-confirm={ "Delete the server " (record.name) "?" } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    button.server-delete.danger type="submit" { "Delete" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn add_form(session: &Session, draft: &Draft) -> Markup {
    html! {
        h2 { "Add a server" }
        p.muted { "We connect to the server and list its tools before saving it." }
        form id="server-add" method="post" action="/console/servers" {
            input type="hidden" name="csrf" value=(session.csrf);
            label for="server-name" { "Name" }
            input id="server-name" name="name" type="text" required maxlength="32"
                value=(draft.name) aria-describedby="server-name-rule";
            p.muted id="server-name-rule" { "Letters, digits, '-' or '_'; your AI sees its tools as mcp__<name>__<tool>." }
            label for="server-url" { "URL" }
            input id="server-url" name="url" type="url" required value=(draft.url);
            label for="server-auth-type" { "Authentication" }
            (auth_select("server-auth-type", &draft.auth_type))
            label for="server-credential" { "Token or header value" }
            input id="server-credential" name="credential" type="password" autocomplete="off";
            label for="server-header-name" { "Header name (for a custom header)" }
            input id="server-header-name" name="header_name" type="text" value=(draft.header_name);
            label for="server-allowed-tools" { "Allowed tools (blank for all)" }
            input id="server-allowed-tools" name="allowed_tools" type="text" value=(draft.allowed_tools);
            label for="server-enabled" {
                input id="server-enabled" name="enabled" type="checkbox" value="on" checked[draft.enabled];
                " Enabled"
            }
            button id="server-add-button" type="submit" { "Add server" }
        }
    }
}

impl ConsoleApi {
    async fn servers_view(
        &self,
        session: &Session,
        status: StatusCode,
        notice: Option<&Notice<'_>>,
        draft: &Draft,
    ) -> Answer {
        let caller = Caller::user(session.user_id.clone());
        let records = self
            .external
            .servers(&caller)
            .await
            .map_err(|_| ApiError::Unavailable)?;
        let content = html! {
            (servers_table(session, &records))
            (add_form(session, draft))
        };
        Ok(page(
            status,
            layout::page(session, SECTION, TITLE, notice, content),
        ))
    }

    /// The servers page with a refusal in words, the add form keeping `draft`.
    async fn servers_refused(
        &self,
        session: &Session,
        error: &RegistryError,
        draft: &Draft,
    ) -> Answer {
        let (status, words) = problem(error);
        self.servers_view(session, status, Some(&Notice::Problem(&words)), draft)
            .await
    }

    pub(crate) async fn servers_page(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let done = query_param(request, "done");
        let notice = done.as_deref().and_then(done_words).map(Notice::Done);
        self.servers_view(session, StatusCode::OK, notice.as_ref(), &Draft::fresh())
            .await
    }

    pub(crate) async fn server_add(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let fields = form(request);
        let draft = Draft::of(&fields);
        let caller = Caller::user(session.user_id.clone());
        let outcome = async {
            let auth = auth_input(&fields, None)?.unwrap_or(AuthInput::None);
            let registration = Registration {
                name: draft.name.clone(),
                url: draft.url.clone(),
                auth,
                allowed_tools: allowed_tools(&draft.allowed_tools),
                controls: Default::default(),
                enabled: draft.enabled,
                order: 0,
            };
            self.external.create_server(&caller, registration).await
        };
        match outcome.await {
            Ok(record) if record.enabled => Ok(redirect("/console/servers?done=added")),
            Ok(_) => Ok(redirect("/console/servers?done=added-off")),
            Err(error) => self.servers_refused(session, &error, &draft).await,
        }
    }

    /// The edit form of `record`; `name` is what the name field shows (a new name typed
    /// and refused stays in it).
    fn edit_view(
        &self,
        session: &Session,
        record: &McpServerRecord,
        name: &str,
        status: StatusCode,
        notice: Option<&Notice<'_>>,
    ) -> Answer {
        let (kind, header_name) = match &record.auth {
            McpAuth::None => ("none", ""),
            McpAuth::Bearer => ("bearer", ""),
            McpAuth::Header { name } => ("header", name.as_str()),
            McpAuth::OAuth => ("oauth", ""),
        };
        let set = record.sealed_credential.is_some();
        let allowed = record
            .allowed_tools
            .as_ref()
            .map(|names| names.join(", "))
            .unwrap_or_default();
        let content = html! {
            p { "URL: " code id="server-url-shown" { (record.url) } }
            p.muted { "The URL cannot change: delete the server and add it again for another one." }
            form id="server-edit" method="post" action=(path_of(&record.name)) {
                input type="hidden" name="csrf" value=(session.csrf);
                label for="server-rename" { "Name (a new one renames it; its tools' names follow)" }
                input id="server-rename" name="name" type="text" value=(name) required;
                label for="server-auth-type" { "Authentication" }
                (auth_select("server-auth-type", kind))
                label for="server-credential" { "Token or header value" }
                input id="server-credential" name="credential" type="password" autocomplete="off"
                    aria-describedby="server-credential-state";
                p.muted id="server-credential-state" {
                    @if set { "Set. Leave blank to keep it." } @else { "Not set." }
                }
                label for="server-header-name" { "Header name (for a custom header)" }
                input id="server-header-name" name="header_name" type="text" value=(header_name);
                label for="server-allowed-tools" { "Allowed tools (blank for all)" }
                input id="server-allowed-tools" name="allowed_tools" type="text" value=(allowed);
                label for="server-enabled" {
                    input id="server-enabled" name="enabled" type="checkbox" value="on" checked[record.enabled];
                    " Enabled"
                }
                (controls_fieldset(record))
                button id="server-save" type="submit" { "Save" }
            }
            p { a href=(SECTION) { "Back to your servers" } }
        };
        let title = format!("Edit {}", record.name);
        Ok(page(
            status,
            layout::page(session, SECTION, &title, notice, content),
        ))
    }

    pub(crate) async fn server_edit_form(&self, session: &Session, name: &str) -> Answer {
        let caller = Caller::user(session.user_id.clone());
        match self.external.server(&caller, name).await {
            Ok(record) => self.edit_view(session, &record, &record.name, StatusCode::OK, None),
            Err(error) => self.servers_refused(session, &error, &Draft::fresh()).await,
        }
    }

    pub(crate) async fn server_edit(
        &self,
        session: &Session,
        name: &str,
        request: &Request<Bytes>,
    ) -> Answer {
        let fields = form(request);
        let caller = Caller::user(session.user_id.clone());
        let record = match self.external.server(&caller, name).await {
            Ok(record) => record,
            Err(error) => return self.servers_refused(session, &error, &Draft::fresh()).await,
        };
        let typed_name = field(&fields, "name")
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty());
        let controls = field(&fields, "controls").is_some();
        let outcome = async {
            let changes = Changes {
                name: typed_name.clone(),
                auth: auth_input(&fields, Some(&record.auth))?,
                allowed_tools: Some(allowed_tools(
                    field(&fields, "allowed_tools").unwrap_or_default(),
                )),
                denied_tools: controls.then(|| denied_from(&fields, &record)),
                read_only: controls.then(|| field(&fields, "read_only").is_some()),
                ask_first: controls.then(|| field(&fields, "ask_first").is_some()),
                enabled: Some(field(&fields, "enabled").is_some()),
                ..Changes::default()
            };
            self.external.update_server(&caller, name, changes).await
        };
        match outcome.await {
            Ok(saved) if saved.name != name => Ok(redirect(&path_of(&saved.name))),
            Ok(_) => Ok(redirect("/console/servers?done=saved")),
            Err(error) => {
                let (status, words) = problem(&error);
                // What was typed is kept (never the credential).
                let mut shown = record;
                shown.allowed_tools =
                    allowed_tools(field(&fields, "allowed_tools").unwrap_or_default());
                shown.enabled = field(&fields, "enabled").is_some();
                if controls {
                    shown.controls.denied_tools = denied_from(&fields, &shown);
                    shown.controls.read_only = field(&fields, "read_only").is_some();
                    shown.controls.ask_first = field(&fields, "ask_first").is_some();
                }
                let typed = typed_name.unwrap_or_else(|| shown.name.clone());
                self.edit_view(
                    session,
                    &shown,
                    &typed,
                    status,
                    Some(&Notice::Problem(&words)),
                )
            }
        }
    }

    pub(crate) async fn server_toggle(&self, session: &Session, name: &str) -> Answer {
        let caller = Caller::user(session.user_id.clone());
        let outcome = async {
            let record = self.external.server(&caller, name).await?;
            let changes = Changes {
                enabled: Some(!record.enabled),
                ..Changes::default()
            };
            self.external.update_server(&caller, name, changes).await
        };
        match outcome.await {
            Ok(record) if record.enabled => Ok(redirect("/console/servers?done=enabled")),
            Ok(_) => Ok(redirect("/console/servers?done=disabled")),
            Err(error) => self.servers_refused(session, &error, &Draft::fresh()).await,
        }
    }

    pub(crate) async fn server_probe(&self, session: &Session, name: &str) -> Answer {
        let caller = Caller::user(session.user_id.clone());
        match self.external.reprobe_server(&caller, name).await {
            Ok(_) => Ok(redirect("/console/servers?done=probed")),
            Err(error) => self.servers_refused(session, &error, &Draft::fresh()).await,
        }
    }

    /// Starts the person's OAuth sign-in to their server: a page with the link to its
    /// authorization server (a link, not a redirect: the console's `form-action 'self'`
    /// keeps a form's answer from sending the browser to another site), naming the
    /// site they are going to.
    pub(crate) async fn server_sign_in(&self, session: &Session, name: &str) -> Answer {
        let caller = Caller::user(session.user_id.clone());
        let callback = format!("{}{CALLBACK}", self.origin);
        let authorize = match self.external.begin_sign_in(&caller, name, &callback).await {
            Ok(authorize) => authorize,
            Err(error) => return self.servers_refused(session, &error, &Draft::fresh()).await,
        };
        let site = url::Url::parse(&authorize)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        let content = html! {
            p { "To let your AI use " strong { (name) } ", sign in on the server's own page at "
                code { (site) } ". You come back here when you are done." }
            p { a.button id="sign-in-continue" href=(authorize) { "Continue to " (site) } }
            p.muted { "This link works for ten minutes. Your password there is never seen here; \
                       this console keeps only the access it is given, sealed." }
            p { a href=(SECTION) { "Back to your servers" } }
        };
        let title = format!("Sign in to {name}");
        Ok(page(
            StatusCode::OK,
            layout::page(session, SECTION, &title, None, content),
        ))
    }

    /// Where the server's authorization server sends the person back: the code
    /// exchanged and the tools listed, or why not.
    pub(crate) async fn server_signed_in(
        &self,
        session: &Session,
        request: &Request<Bytes>,
    ) -> Answer {
        let query: Vec<(String, String)> = request
            .uri()
            .query()
            .map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .take(8)
                    .collect()
            })
            .unwrap_or_default();
        let caller = Caller::user(session.user_id.clone());
        let outcome = async {
            if let Some(error) = field(&query, "error") {
                let error: String = error.chars().take(64).collect();
                return Err(RegistryError::bad_request(format!(
                    "the server's sign-in page answered {error}; nothing was changed"
                )));
            }
            let (Some(code), Some(state)) = (field(&query, "code"), field(&query, "state")) else {
                return Err(RegistryError::bad_request(
                    "the sign-in came back without its code; start it again",
                ));
            };
            self.external.finish_sign_in(&caller, code, state).await
        };
        match outcome.await {
            Ok(_) => Ok(redirect("/console/servers?done=signed-in")),
            Err(error) => self.servers_refused(session, &error, &Draft::fresh()).await,
        }
    }

    pub(crate) async fn server_delete(&self, session: &Session, name: &str) -> Answer {
        let caller = Caller::user(session.user_id.clone());
        match self.external.remove(&caller, name).await {
            Ok(()) => Ok(redirect("/console/servers?done=deleted")),
            Err(error) => self.servers_refused(session, &error, &Draft::fresh()).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn console_allowed_tools_split_on_commas_and_spaces() {
        assert_eq!(allowed_tools(" "), None);
        assert_eq!(
            allowed_tools("a, b\nc"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
    }

    #[test]
    fn console_blank_credential_keeps_the_sealed_one_only_for_the_same_auth() {
        let bearer = fields(&[("auth_type", "bearer"), ("credential", "")]);
        assert!(matches!(
            auth_input(&bearer, Some(&McpAuth::Bearer)),
            Ok(None)
        ));
        assert!(auth_input(&bearer, Some(&McpAuth::None)).is_err());
        assert!(auth_input(&bearer, None).is_err());
        let header = fields(&[("auth_type", "header"), ("header_name", "x-key")]);
        let same = McpAuth::Header {
            name: "x-key".into(),
        };
        let other = McpAuth::Header {
            name: "x-other".into(),
        };
        assert!(matches!(auth_input(&header, Some(&same)), Ok(None)));
        assert!(auth_input(&header, Some(&other)).is_err());
        let none = fields(&[("auth_type", "none")]);
        assert!(matches!(auth_input(&none, Some(&McpAuth::None)), Ok(None)));
        assert!(matches!(
            auth_input(&none, Some(&McpAuth::Bearer)),
            Ok(Some(AuthInput::None))
        ));
        assert!(auth_input(&fields(&[("auth_type", "magic")]), None).is_err());
    }

    #[test]
    fn console_problems_read_as_sentences() {
        let (status, words) = problem(&RegistryError::probe_failed("connection refused"));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            words.starts_with("The MCP server could not be probed"),
            "{words}"
        );
        assert!(words.ends_with('.'));
    }
}
