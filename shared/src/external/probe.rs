//! D4 and D6: the registration probe and what is kept of its answer.
//!
//! Owns the probe's time budget and the refusal codes it produces. A probe connects
//! with the credential being registered, lists the tools and returns them; nothing is
//! saved here. Only an enabled entry is probed: one saved disabled is recorded as
//! given, and switching it on probes it first. Behind API Gateway (30 s per request,
//! not raisable) the seed's 60 s is not available, so the whole probe, address checks
//! included, must finish within [`PROBE_BUDGET`]: registration stays synchronous and the client always gets an
//! answer (saved, or a 422 saying why) before the gateway would cut it off.

use std::time::Duration;

use http::HeaderMap;

use super::RegistryError;
use crate::domain::McpToolSnapshot;
use crate::remote::{GuardedHttp, HttpError, McpConnection, RemoteError, RemoteTool, ToolList};

/// The whole probe: connection, handshake and every `tools/list` page. 25 s leaves the
/// 29 s function time (and API Gateway's 30 s) room for the store writes around it.
pub(crate) const PROBE_BUDGET: Duration = Duration::from_secs(25);

/// How long ending a legacy session may take (best effort).
pub(super) const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Tool names longer than this are not kept (the client leaves them out).
pub(super) use crate::remote::MAX_TOOL_NAME;

/// What a successful probe saw.
pub(super) struct Probe {
    pub server_name: Option<String>,
    /// At most 256 tools, names of at most 256 characters, descriptions of at most 500
    /// (the client's bounds, the same on `/mcp`).
    pub tools: Vec<RemoteTool>,
}

/// Why connecting and listing failed.
pub(super) enum ListFailure {
    /// The address guard refused the url; nothing was sent.
    Refused(String),
    /// The server answered wrongly, refused, or could not be reached.
    Failed(String),
    /// Nothing complete within the budget.
    Late(Duration),
}

impl std::fmt::Display for ListFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListFailure::Refused(why) | ListFailure::Failed(why) => f.write_str(why),
            ListFailure::Late(budget) => write!(f, "no answer within {} s", budget.as_secs()),
        }
    }
}

/// Connects to `url` with `auth` and lists every tool, the whole exchange within
/// `budget`: the one way both the registration probe and `/mcp` open a server.
pub(super) async fn connect_and_list(
    http: &GuardedHttp,
    url: &str,
    auth: &HeaderMap,
    budget: Duration,
) -> Result<(McpConnection, ToolList), ListFailure> {
    let run = async {
        let connection = McpConnection::connect(http, url, auth, budget, None).await?;
        let tools = connection.list_tools().await?;
        Ok::<_, RemoteError>((connection, tools))
    };
    match tokio::time::timeout(budget, run).await {
        Ok(Ok(listed)) => Ok(listed),
        Ok(Err(RemoteError::Http(HttpError::Guard(refusal)))) => {
            Err(ListFailure::Refused(refusal.to_string()))
        }
        Ok(Err(error)) => Err(ListFailure::Failed(error.to_string())),
        Err(_) => Err(ListFailure::Late(budget)),
    }
}

/// Connects to `url` with `auth`, lists its tools, all within `budget`.
pub(super) async fn probe(
    http: &GuardedHttp,
    url: &str,
    auth: &HeaderMap,
    budget: Duration,
) -> Result<Probe, RegistryError> {
    probe_or(http, url, auth, budget, RegistryError::probe_failed).await
}

/// [`probe`], with `failed` saying in words why the server did not answer (a
/// registration's refusal or a switch-on's).
pub(super) async fn probe_or(
    http: &GuardedHttp,
    url: &str,
    auth: &HeaderMap,
    budget: Duration,
    failed: fn(&str) -> RegistryError,
) -> Result<Probe, RegistryError> {
    let (connection, tools) = match connect_and_list(http, url, auth, budget).await {
        Ok(listed) => listed,
        Err(ListFailure::Refused(why)) => return Err(RegistryError::invalid_url(why)),
        Err(failure) => return Err(failed(&failure.to_string())),
    };
    let server_name = connection.server_name().map(str::to_string);
    connection.close(CLOSE_TIMEOUT).await;
    Ok(Probe {
        server_name,
        tools: tools.tools,
    })
}

/// What is stored of the tools (D6): names and descriptions, as the client kept them
/// (cut to 500 characters) and as `/mcp` lists them.
pub(super) fn snapshot(tools: &[RemoteTool]) -> Vec<McpToolSnapshot> {
    tools
        .iter()
        .map(|tool| McpToolSnapshot {
            name: tool.name.clone(),
            description: tool.description.clone(),
            read_only: tool.read_only(),
        })
        .collect()
}

/// D7: every name in `allowed` (the allow list, else the deny list named by `field`)
/// must be one of the probed tools.
pub(super) fn check_allowed(
    field: &str,
    allowed: Option<&[String]>,
    tools: &[McpToolSnapshot],
) -> Result<(), RegistryError> {
    let Some(allowed) = allowed else {
        return Ok(());
    };
    let unknown: Vec<&str> = allowed
        .iter()
        .filter(|name| !tools.iter().any(|tool| &tool.name == *name))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(RegistryError::unknown_tool(field, &unknown))
}
