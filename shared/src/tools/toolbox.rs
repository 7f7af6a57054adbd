//! The one tool pipeline behind `tools/list` and `tools/call`: the built-in tools and
//! the caller's external tools behind one list and one call.
//!
//! Owns the data-availability gate (a data tool is listed only for a caller who holds
//! its kind of data; when that cannot be read, every tool is listed), the merge of an
//! external [`ToolSource`] after the built-in tools (never for a share's delegated
//! caller), agent visibility on both (a hidden tool is not callable either), and the
//! login prompt that an anonymous call to a tool
//! needing a caller gets instead of running.
//!
//! Must not resolve callers or decide visibility (the caller and the filter arrive
//! resolved), and writes no JSON-RPC: `mcp` shapes what this returns.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::notifier::Notifier;
use super::output::{ToolError, ToolOutput};
use super::registry::{Caller, DataKind, Registry, ToolCall, ToolSpec};
use super::source::{
    ItemError, ItemKind, ItemRequest, SourceCall, SourceItems, SourceListing, ToolSource,
    Unavailable,
};
use crate::clock::Clock;
use crate::domain::DataPresence;
use crate::identity::{LoginPrompts, PromptRefused};
use crate::observe;
use crate::store::McpServerStore;

/// Every tool a request can reach. Built once per process.
pub(crate) struct Toolbox {
    pub(crate) registry: Registry,
    /// Answers which kinds of data a caller holds (the availability gate) and which MCP
    /// servers they registered, in one read per `tools/list`.
    pub(crate) store: Arc<dyn McpServerStore>,
    /// What an anonymous call to a tool that needs a user gets: a link to sign in.
    pub(crate) login: LoginPrompts,
    pub(crate) clock: Arc<dyn Clock>,
    /// The caller's own MCP servers; `None` without keys.
    pub(crate) external: Option<Arc<dyn ToolSource>>,
}

/// Which tools, by name, a request may see and call (agent scoping).
pub(crate) type Visible<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// What the protocol layer knows about a `tools/call`, beyond the tool and arguments.
pub(crate) struct CallContext<'a> {
    /// The client capabilities the request declared (2026-07-28 `_meta`, or `{}`).
    pub(crate) client_capabilities: &'a Map<String, Value>,
    /// The name the client gave itself (`clientInfo.name`), if it did: the login
    /// prompt records it so the sign-in page can say who asked.
    pub(crate) client_name: Option<&'a str>,
    /// A multi-round retry's answers and state, or why they are malformed. A malformed
    /// retry is refused only once a built-in tool is about to run: an unknown tool, a
    /// login prompt and a forwarded call take precedence.
    pub(crate) retry: Result<Retry<'a>, String>,
    /// Progress and log notifications for this request's response stream.
    pub(crate) notifier: &'a Notifier,
    /// The request's source address, when the binary said (the login prompt's limit).
    pub(crate) source: Option<std::net::IpAddr>,
}

/// A multi-round (MRTR) retry: the client's answers and the state we handed out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Retry<'a> {
    pub(crate) input_responses: Option<&'a Map<String, Value>>,
    pub(crate) request_state: Option<&'a str>,
}

/// Whether the client can be asked a form question: it declared `elicitation` with
/// `form`, or with neither mode (form is then implied, 2026-07-28).
fn asks_by_form(capabilities: &Map<String, Value>) -> bool {
    match capabilities.get("elicitation") {
        Some(Value::Object(modes)) => modes.contains_key("form") || !modes.contains_key("url"),
        _ => false,
    }
}

/// Whether the client can send its person to a URL (it declared `elicitation.url`).
fn opens_urls(capabilities: &Map<String, Value>) -> bool {
    matches!(capabilities.get("elicitation"), Some(Value::Object(modes)) if modes.contains_key("url"))
}

/// One page of `tools/list`: built-in tools, then (on the last page) the caller's
/// external tools.
pub(crate) struct ToolList<'t> {
    builtin: Vec<&'t RawValue>,
    external: SourceListing,
    pub(crate) next_cursor: Option<String>,
}

impl ToolList<'_> {
    /// Each tool's pre-serialised `tools/list` entry, in listing order.
    pub(crate) fn listings(&self) -> Vec<&RawValue> {
        let external = self.external.tools().map(|tool| &*tool.listing);
        self.builtin.iter().copied().chain(external).collect()
    }

    /// The caller's external servers that did not answer, left out of this page.
    pub(crate) fn unavailable(&self) -> &[Unavailable] {
        &self.external.unavailable
    }

    /// How long this page stays true: `None` unless the caller's external tools
    /// (or notes about them) are in it, then what is left of their snapshots' validity.
    pub(crate) fn valid_for(&self) -> Option<std::time::Duration> {
        self.external.valid_for
    }
}

impl Toolbox {
    /// `tools/list`: the page at `cursor` (the request's `cursor` as sent) of what
    /// `caller` may see.
    pub(crate) async fn list(
        &self,
        caller: Option<&Caller>,
        visible: Visible<'_>,
        cursor: Option<&Value>,
    ) -> Result<ToolList<'_>, ToolError> {
        // A signed-in caller's data presence and external servers come from one store
        // read; the external listing then contacts the servers.
        let (presence, external) = match caller {
            None => (None, SourceListing::default()),
            Some(caller) => {
                let (presence, servers) =
                    match self.store.presence_and_mcp_servers(&caller.user_id).await {
                        Ok((presence, servers)) => (Some(presence), Ok(servers)),
                        Err(error) => {
                            tracing::warn!(%error, "availability probe failed; listing every tool");
                            (None, Err(error))
                        }
                    };
                // A share's delegated caller never reaches the owner's servers: they
                // are not contacted, so nothing of theirs is listed.
                let external = match &self.external {
                    Some(source) if caller.reaches_external_servers() => {
                        source.list(caller, servers).await
                    }
                    _ => SourceListing::default(),
                };
                (presence, external)
            }
        };
        let cursor = match cursor {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(cursor.as_str()),
            Some(_) => return Err(ToolError::InvalidCursor),
        };
        let page = self
            .registry
            .page(cursor, &|spec| visible(spec.name) && gate(spec, presence))?;
        // External tools follow the built-in ones, on the last page (with at most
        // `PAGE_SIZE` built-in tools, always the first).
        let external = match page.next_cursor {
            None => {
                let mut external = external;
                external.retain(visible);
                external
            }
            Some(_) => SourceListing::default(),
        };
        Ok(ToolList {
            builtin: page.tools,
            external,
            next_cursor: page.next_cursor,
        })
    }

    /// `tools/call`: runs `name` for `caller` with `arguments` (the request's
    /// `arguments` as sent), if `visible` admits it.
    pub(crate) async fn call(
        &self,
        caller: Option<&Caller>,
        visible: Visible<'_>,
        name: &str,
        arguments: Option<&Value>,
        context: CallContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let unknown = || ToolError::UnknownTool(name.into());
        if let (Some(source), Some(caller)) = (&self.external, caller)
            && source.owns(name)
        {
            // Unknown to a share's delegated caller, as it is not listed for them.
            if !caller.reaches_external_servers() {
                return Err(unknown());
            }
            if !visible(name) {
                return Err(unknown());
            }
            let call = SourceCall {
                arguments: arguments_object(arguments)?,
                can_ask: asks_by_form(context.client_capabilities),
                can_open_url: opens_urls(context.client_capabilities),
                retry: context.retry,
            };
            // Never the tool's own name: the user chose it.
            observe::note_tool("external");
            return source.call(caller, name, call).await;
        }
        let spec = self.registry.spec(name).ok_or_else(unknown)?;
        if !visible(spec.name) {
            // A tool hidden from this caller is not callable by it either.
            return Err(unknown());
        }
        observe::note_tool(spec.name);
        let arguments = arguments_object(arguments)?;
        if spec.needs_caller && caller.is_none() {
            // The call succeeds with a login prompt instead of running.
            return Ok(self.login_prompt(context.client_name, context.source).await);
        }
        let retry = context.retry.map_err(ToolError::InvalidParams)?;
        let call = ToolCall {
            arguments,
            caller: if spec.needs_caller { caller } else { None },
            client_capabilities: context.client_capabilities,
            input_responses: retry.input_responses,
            request_state: retry.request_state,
            notifier: context.notifier,
        };
        self.registry.call(name, call).await
    }

    /// The caller's resources, resource templates or prompts from its own MCP servers
    /// (after the built-in ones, which `mcp` lists). Only for the person's own
    /// credentials that reach their servers; an agent's URL gets the prompts its lists
    /// admit by name, and no resources (its lists name tools and prompts, never URIs).
    pub(crate) async fn external_items(
        &self,
        caller: Option<&Caller>,
        visible: Visible<'_>,
        kind: ItemKind,
    ) -> SourceItems {
        let (Some(source), Some(caller)) = (&self.external, caller) else {
            return SourceItems::default();
        };
        if !caller.reaches_external_servers()
            || (caller.agent.is_some() && kind != ItemKind::Prompts)
        {
            return SourceItems::default();
        }
        let mut items = source.items(caller, kind).await;
        if kind == ItemKind::Prompts {
            items.items.retain(|item| {
                item.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(visible)
            });
        }
        items
    }

    /// Whether `resources/read` of `uri` or `prompts/get` of `name` is the external
    /// source's to answer.
    pub(crate) fn owns_item(&self, request: &ItemRequest<'_>) -> bool {
        self.external.as_ref().is_some_and(|source| match request {
            ItemRequest::Resource { uri } => source.owns_uri(uri),
            ItemRequest::Prompt { name, .. } => source.owns(name),
        })
    }

    /// `resources/read` or `prompts/get` of an item of the caller's own MCP servers,
    /// under the rules of [`Toolbox::external_items`]: an item the caller is not shown
    /// is unknown to it.
    pub(crate) async fn fetch_external(
        &self,
        caller: Option<&Caller>,
        visible: Visible<'_>,
        request: ItemRequest<'_>,
    ) -> Result<Map<String, Value>, ItemError> {
        let (Some(source), Some(caller)) = (&self.external, caller) else {
            return Err(ItemError::Unknown);
        };
        let shown = caller.reaches_external_servers()
            && match &request {
                ItemRequest::Resource { .. } => caller.agent.is_none(),
                ItemRequest::Prompt { name, .. } => visible(name),
            };
        if !shown {
            return Err(ItemError::Unknown);
        }
        source.fetch(caller, request).await
    }

    async fn login_prompt(
        &self,
        client_name: Option<&str>,
        source: Option<std::net::IpAddr>,
    ) -> ToolOutput {
        match self
            .login
            .prompt(self.clock.now(), client_name, source)
            .await
        {
            Ok(prompt) => ToolOutput::Json(prompt),
            Err(PromptRefused::Limited(seconds)) => ToolOutput::Error(format!(
                "too many sign-in prompts from this address: sign in with the link of an \
                 earlier answer, or try again in {} minutes",
                seconds.div_ceil(60)
            )),
            Err(PromptRefused::Store(error)) => {
                tracing::warn!(%error, "login prompt could not be stored");
                ToolOutput::Error("sign-in is unavailable right now; try again shortly".into())
            }
        }
    }
}

/// A data tool is listed only when the caller holds its kind of data (or when
/// that is unknown: anonymous callers and failed probes see everything).
fn gate(spec: &ToolSpec, presence: Option<DataPresence>) -> bool {
    match (spec.requires, presence) {
        (Some(DataKind::Health), Some(p)) => p.health,
        (Some(DataKind::Genotype), Some(p)) => p.genotype,
        _ => true,
    }
}

/// The call's arguments: absent (or null) is none; anything but an object is refused.
fn arguments_object(arguments: Option<&Value>) -> Result<Map<String, Value>, ToolError> {
    match arguments {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(ToolError::InvalidParams(
            "arguments must be an object".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;
    use serde_json::json;

    use super::*;
    use crate::clock::FakeClock;
    use crate::domain::McpServerRecord;
    use crate::store::{EmbeddedStore, StoreError};
    use crate::tools::{ListedTool, Tool};

    /// A tool that echoes its arguments, with the spec each test needs.
    struct Echo(ToolSpec);

    impl Tool for Echo {
        fn spec(&self) -> ToolSpec {
            self.0.clone()
        }
        fn call<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
            Box::pin(async move { ToolOutput::Json(Value::Object(call.arguments)) })
        }
    }

    fn echo(name: &'static str) -> ToolSpec {
        ToolSpec::new(
            name,
            "echoes",
            json!({"type": "object", "properties": {"x": {}}}),
        )
    }

    /// A source owning `ext__` names: lists two tools and a note, answers every call.
    struct Fake;

    impl ToolSource for Fake {
        fn owns(&self, name: &str) -> bool {
            name.starts_with("ext__")
        }
        fn list<'a>(
            &'a self,
            _: &'a Caller,
            _: Result<Vec<McpServerRecord>, StoreError>,
        ) -> BoxFuture<'a, SourceListing> {
            Box::pin(async {
                let tool = |name: &str| ListedTool {
                    name: name.into(),
                    listing: serde_json::value::to_raw_value(&json!({ "name": name })).unwrap(),
                };
                let mut listing = SourceListing::default();
                listing.push(Arc::from([tool("ext__a"), tool("ext__hidden")]), vec![0, 1]);
                listing.unavailable.push(Unavailable {
                    server: "down".into(),
                    error: "no answer".into(),
                });
                listing
            })
        }
        fn call<'a>(
            &'a self,
            _: &'a Caller,
            name: &'a str,
            _: SourceCall<'a>,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async move { Ok(ToolOutput::Error(format!("forwarded {name}"))) })
        }
        fn items<'a>(&'a self, _: &'a Caller, kind: ItemKind) -> BoxFuture<'a, SourceItems> {
            Box::pin(async move {
                let items = match kind {
                    ItemKind::Prompts => {
                        vec![json!({"name": "ext__p"}), json!({"name": "ext__hidden"})]
                    }
                    _ => vec![json!({"uri": "ext://r"})],
                };
                SourceItems {
                    items,
                    ..SourceItems::default()
                }
            })
        }
        fn owns_uri(&self, uri: &str) -> bool {
            uri.starts_with("ext://")
        }
        fn fetch<'a>(
            &'a self,
            _: &'a Caller,
            _: ItemRequest<'a>,
        ) -> BoxFuture<'a, Result<Map<String, Value>, ItemError>> {
            Box::pin(async { Ok(Map::new()) })
        }
    }

    async fn toolbox() -> Toolbox {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mirobody-toolbox-{}-{nanos}", std::process::id()));
        let store: Arc<dyn crate::store::Store> =
            Arc::new(EmbeddedStore::open(dir.join("db.sqlite")).unwrap());
        let genotypes = crate::demo::genotypes();
        let genome = crate::domain::Genome::from_genotypes(&genotypes[..1]).unwrap();
        store.replace_genome("u", &genome, "demo", 0).await.unwrap();
        let mut registry = Registry::new();
        registry.register(Echo(echo("open")));
        registry.register(Echo(echo("mine").needs_caller()));
        registry.register(Echo(echo("health").requires(DataKind::Health)));
        registry.register(Echo(echo("genes").requires(DataKind::Genotype)));
        registry.register(Echo(echo("secret")));
        Toolbox {
            registry,
            store: store.clone(),
            login: LoginPrompts {
                store,
                origin: "http://localhost".into(),
            },
            clock: Arc::new(FakeClock::at(1_000)),
            external: Some(Arc::new(Fake)),
        }
    }

    fn names(list: &ToolList<'_>) -> Vec<String> {
        list.listings()
            .iter()
            .map(|raw| serde_json::from_str::<Value>(raw.get()).unwrap()["name"].to_string())
            .map(|name| name.trim_matches('"').to_string())
            .collect()
    }

    fn context<'a>(
        caps: &'a Map<String, Value>,
        notifier: &'a Notifier,
        retry: Result<Retry<'a>, String>,
    ) -> CallContext<'a> {
        CallContext {
            client_capabilities: caps,
            client_name: None,
            retry,
            notifier,
            source: None,
        }
    }

    #[tokio::test]
    async fn listing_gates_by_data_hides_by_agent_and_appends_external_tools() {
        let toolbox = toolbox().await;
        let caller = Caller::user("u");
        let visible = |name: &str| name != "secret" && name != "ext__hidden";
        let list = toolbox.list(Some(&caller), &visible, None).await.unwrap();
        assert_eq!(names(&list), ["genes", "mine", "open", "ext__a"]);
        assert_eq!(list.unavailable().len(), 1);
        // Anonymous: no presence to gate by, no external tools.
        let list = toolbox.list(None, &visible, None).await.unwrap();
        assert_eq!(names(&list), ["genes", "health", "mine", "open"]);
        assert!(list.unavailable().is_empty());
        let bogus = json!(7);
        assert_eq!(
            toolbox.list(None, &visible, Some(&bogus)).await.err(),
            Some(ToolError::InvalidCursor)
        );
    }

    #[tokio::test]
    async fn refusals_come_in_the_order_clients_saw_them() {
        let toolbox = toolbox().await;
        let caller = Caller::user("u");
        let visible = |name: &str| name != "secret" && name != "ext__hidden";
        let (caps, notifier) = (Map::new(), Notifier::default());
        let bad_arguments = json!([1]);
        let malformed = || Err("requestState must be a string".to_string());
        let call = |caller, name, arguments, retry| {
            toolbox.call(
                caller,
                &visible,
                name,
                arguments,
                context(&caps, &notifier, retry),
            )
        };
        // Unknown and hidden tools are unknown, whatever else is wrong.
        for name in ["nope", "secret", "ext__hidden"] {
            assert_eq!(
                call(Some(&caller), name, Some(&bad_arguments), malformed())
                    .await
                    .err(),
                Some(ToolError::UnknownTool(name.into()))
            );
        }
        // Then the arguments' shape.
        assert_eq!(
            call(Some(&caller), "open", Some(&bad_arguments), malformed())
                .await
                .err(),
            Some(ToolError::InvalidParams(
                "arguments must be an object".into()
            ))
        );
        // An anonymous call to a tool that needs a caller gets the login prompt.
        let prompt = call(None, "mine", None, malformed()).await.unwrap();
        assert!(matches!(prompt, ToolOutput::Json(ref p) if p.to_string().contains("mcplogin")));
        // A malformed retry is refused only when a built-in tool is about to run.
        assert_eq!(
            call(Some(&caller), "mine", None, malformed()).await.err(),
            Some(ToolError::InvalidParams(
                "requestState must be a string".into()
            ))
        );
        // The source's names go to the source, for a signed-in caller only.
        let forwarded = call(Some(&caller), "ext__a", None, malformed()).await;
        assert!(matches!(forwarded, Ok(ToolOutput::Error(ref m)) if m == "forwarded ext__a"));
        assert_eq!(
            call(None, "ext__a", None, Ok(Retry::default())).await.err(),
            Some(ToolError::UnknownTool("ext__a".into()))
        );
        // A tool that does not need a caller runs with its arguments.
        let arguments = json!({"x": 1});
        let answer = call(
            Some(&caller),
            "open",
            Some(&arguments),
            Ok(Retry::default()),
        )
        .await;
        assert!(matches!(answer, Ok(ToolOutput::Json(ref v)) if *v == arguments));
    }

    /// B2: a share's delegated caller gets the owner's built-in tools and nothing of the
    /// owner's external servers, neither listed nor callable.
    #[tokio::test]
    async fn a_delegated_caller_never_reaches_the_owners_external_tools() {
        let toolbox = toolbox().await;
        let delegated = Caller {
            delegation: Some(crate::domain::Delegation {
                grantee: "g".into(),
                permission: "chat".into(),
            }),
            ..Caller::user("u")
        };
        let visible = |_: &str| true;
        let list = toolbox
            .list(Some(&delegated), &visible, None)
            .await
            .unwrap();
        assert_eq!(names(&list), ["genes", "mine", "open", "secret"]);
        assert!(list.unavailable().is_empty(), "no server was contacted");
        let (caps, notifier) = (Map::new(), Notifier::default());
        let forwarded = toolbox
            .call(
                Some(&delegated),
                &visible,
                "ext__a",
                None,
                context(&caps, &notifier, Ok(Retry::default())),
            )
            .await;
        assert_eq!(
            forwarded.err(),
            Some(ToolError::UnknownTool("ext__a".into()))
        );
        let own = toolbox
            .call(
                Some(&delegated),
                &visible,
                "mine",
                None,
                context(&caps, &notifier, Ok(Retry::default())),
            )
            .await;
        assert!(own.is_ok(), "the owner's built-in tools answer");
    }

    /// The resources and prompts of the person's own servers: the person gets them; an
    /// agent's URL only the prompts its lists admit and no resources; a share's delegate
    /// and an app without `mcp:servers` none, and cannot read or get one by its name.
    #[tokio::test]
    async fn external_resources_and_prompts_reach_only_whom_the_servers_do() {
        let toolbox = toolbox().await;
        let visible = |name: &str| name != "ext__hidden";
        let uris = |items: &SourceItems, key: &str| -> Vec<String> {
            items
                .items
                .iter()
                .map(|item| item[key].as_str().unwrap().to_string())
                .collect()
        };
        let person = Caller::user("u");
        let resources = toolbox
            .external_items(Some(&person), &visible, ItemKind::Resources)
            .await;
        assert_eq!(uris(&resources, "uri"), ["ext://r"]);
        let prompts = toolbox
            .external_items(Some(&person), &visible, ItemKind::Prompts)
            .await;
        assert_eq!(
            uris(&prompts, "name"),
            ["ext__p"],
            "the lists narrow prompts by name"
        );
        let read = ItemRequest::Resource { uri: "ext://r" };
        assert!(toolbox.owns_item(&read));
        let fetched = toolbox.fetch_external(Some(&person), &visible, read).await;
        assert!(fetched.is_ok());

        let agent = Caller {
            agent: Some("claude".into()),
            ..Caller::user("u")
        };
        let resources = toolbox
            .external_items(Some(&agent), &visible, ItemKind::Resources)
            .await;
        assert!(resources.items.is_empty(), "an agent URL gets no resources");
        let prompts = toolbox
            .external_items(Some(&agent), &visible, ItemKind::Prompts)
            .await;
        assert_eq!(uris(&prompts, "name"), ["ext__p"]);
        let read = ItemRequest::Resource { uri: "ext://r" };
        let refused = toolbox.fetch_external(Some(&agent), &visible, read).await;
        assert!(matches!(refused, Err(ItemError::Unknown)));

        let delegated = Caller {
            delegation: Some(crate::domain::Delegation {
                grantee: "g".into(),
                permission: "chat".into(),
            }),
            ..Caller::user("u")
        };
        let app = Caller {
            servers: false,
            ..Caller::user("u")
        };
        for caller in [Some(&delegated), Some(&app), None] {
            for kind in [
                ItemKind::Resources,
                ItemKind::ResourceTemplates,
                ItemKind::Prompts,
            ] {
                let items = toolbox.external_items(caller, &visible, kind).await;
                assert!(items.items.is_empty(), "{caller:?}");
            }
            let get = ItemRequest::Prompt {
                name: "ext__p",
                arguments: Map::new(),
            };
            let refused = toolbox.fetch_external(caller, &visible, get).await;
            assert!(matches!(refused, Err(ItemError::Unknown)), "{caller:?}");
        }
    }

    /// An app's token without `mcp:servers` (the login prompt's
    /// token among them) gets the built-in tools and nothing of the person's own servers.
    #[tokio::test]
    async fn a_caller_without_the_servers_scope_never_reaches_the_external_tools() {
        let toolbox = toolbox().await;
        let app = Caller {
            servers: false,
            ..Caller::user("u")
        };
        let visible = |_: &str| true;
        let list = toolbox.list(Some(&app), &visible, None).await.unwrap();
        assert_eq!(names(&list), ["genes", "mine", "open", "secret"]);
        let (caps, notifier) = (Map::new(), Notifier::default());
        let forwarded = toolbox
            .call(
                Some(&app),
                &visible,
                "ext__a",
                None,
                context(&caps, &notifier, Ok(Retry::default())),
            )
            .await;
        assert_eq!(
            forwarded.err(),
            Some(ToolError::UnknownTool("ext__a".into()))
        );
        let full = toolbox
            .list(Some(&Caller::user("u")), &visible, None)
            .await
            .unwrap();
        assert!(
            names(&full).contains(&"ext__a".to_string()),
            "{:?}",
            names(&full)
        );
    }
}
