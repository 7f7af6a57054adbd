//! Connect your AI: the personal MCP URL (create, copy, revoke; it is a password) and
//! ready-to-paste instructions for Claude Desktop (mcp-remote), Cursor, Claude's and
//! ChatGPT's remote connectors and the Python and TypeScript SDKs.
//!
//! The personal URL is a secret: it is shown only in the answer to the POST that mints
//! (or re-shows) it, never on a GET; the GET page says whether one is active. The
//! snippets carry this deployment's real URLs: the personal URL when just shown, else a
//! placeholder, and the plain MCP endpoint (OAuth signs in) for the remote connectors.
use http::StatusCode;
use maud::{Markup, html};

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};
use crate::http::ApiError;

/// What the snippets show where the personal URL goes when it is not on the page.
const PLACEHOLDER: &str = "<your personal MCP URL>";

/// One ready-to-paste snippet: a `pre` with an id, and its copy button.
fn snippet(id: &str, text: &str) -> Markup {
    html! {
        pre id=(id) { code { (text) } }
        button.secondary type="button" data-copy=(id) { "Copy" }
    }
}

fn claude_desktop(url: &str) -> String {
    format!(
        r#"{{
  "mcpServers": {{
    "mirobody": {{
      "command": "npx",
      "args": ["mcp-remote", "{url}"]
    }}
  }}
}}"#
    )
}

fn cursor(url: &str) -> String {
    format!(
        r#"{{
  "mcpServers": {{
    "mirobody": {{
      "url": "{url}"
    }}
  }}
}}"#
    )
}

fn python_sdk(url: &str) -> String {
    format!(
        r#"# pip install "mcp>=2"
import asyncio

from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    async with Client(streamable_http_client("{url}")) as client:
        tools = await client.list_tools()
        print([tool.name for tool in tools.tools])


asyncio.run(main())"#
    )
}

fn typescript_sdk(url: &str) -> String {
    format!(
        r#"// npm install @modelcontextprotocol/sdk
import {{ Client }} from "@modelcontextprotocol/sdk/client/index.js";
import {{ StreamableHTTPClientTransport }} from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({{ name: "my-app", version: "1.0.0" }});
await client.connect(new StreamableHTTPClientTransport(new URL("{url}")));
const {{ tools }} = await client.listTools();
console.log(tools.map((tool) => tool.name));"#
    )
}

impl ConsoleApi {
    /// The page; `minted` is the personal URL when this answers the POST that showed it.
    fn connect_view(
        &self,
        session: &Session,
        active: bool,
        minted: Option<&str>,
        notice: Option<&Notice<'_>>,
    ) -> Markup {
        let url = minted.unwrap_or(PLACEHOLDER);
        let content = html! {
            section id="personal-url-section" aria-labelledby="personal-url-heading" {
                h2 id="personal-url-heading" { "Your personal MCP URL" }
                p.notice.problem role="note" id="personal-url-warning" {
                    strong { "This URL is a password." }
                    " Anyone who has it reads your health data through any AI client. Keep it to yourself, and revoke it here if it leaks: a new one can be made at once."
                }
                @if let Some(minted) = minted {
                    p { "Your personal MCP URL (shown only now; press Show to see it again later):" }
                    p { code.secret id="personal-url" { (minted) } }
                } @else if active {
                    p id="personal-url-state" data-active="true" { "You have an active personal URL. It is not shown on this page; press Show to see it." }
                } @else {
                    p id="personal-url-state" data-active="false" { "You have no personal URL. Create one to connect a client that cannot sign in by itself." }
                }
                div.actions {
                    @if minted.is_some() {
                        button type="button" data-copy="personal-url" { "Copy" }
                    }
                    form id="url-create" method="post" action="/console/connect/url" {
                        input type="hidden" name="csrf" value=(session.csrf);
                        @if minted.is_some() {
                            button.secondary type="submit" { "Show it again" }
                        } @else if active {
                            button type="submit" { "Show my personal URL" }
                        } @else {
                            button type="submit" { "Create my personal URL" }
                        }
                    }
                    @if active || minted.is_some() {
                        form id="url-revoke" method="post" action="/console/connect/url/revoke"
                            data-confirm="Revoke your personal URL? Every client using it stops working." {
                            input type="hidden" name="csrf" value=(session.csrf);
                            button.danger type="submit" { "Revoke it" }
                        }
                    }
                }
            }
            section id="claude-desktop" aria-labelledby="claude-desktop-heading" {
                h2 id="claude-desktop-heading" { "Claude Desktop" }
                p { "Add this to " code { "claude_desktop_config.json" } " (Settings → Developer → Edit Config), then restart Claude Desktop. It runs " code { "mcp-remote" } " through " code { "npx" } " (Node.js needed)." }
                (snippet("claude-desktop-config", &claude_desktop(url)))
            }
            section id="cursor" aria-labelledby="cursor-heading" {
                h2 id="cursor-heading" { "Cursor" }
                p { "Add this to " code { "~/.cursor/mcp.json" } " (or the project's " code { ".cursor/mcp.json" } ")." }
                (snippet("cursor-config", &cursor(url)))
            }
            section id="remote-connectors" aria-labelledby="remote-connectors-heading" {
                h2 id="remote-connectors-heading" { "Claude and ChatGPT connectors" }
                p { "These sign in with your account (OAuth), so they take the plain MCP URL, not your personal one:" }
                p { code.secret id="mcp-url" { (self.mcp_url) } }
                button.secondary type="button" data-copy="mcp-url" { "Copy" }
                ul {
                    li { strong { "Claude" } " (claude.ai or the apps): Settings → Connectors → Add custom connector; paste the URL, then Connect and sign in here." }
                    li { strong { "ChatGPT" } ": Settings → Apps & Connectors (developer mode on) → Create; paste the URL, choose OAuth, then sign in here." }
                }
            }
            section id="python-sdk" aria-labelledby="python-sdk-heading" {
                h2 id="python-sdk-heading" { "Python SDK" }
                p { "The " code { "mcp" } " package (2.x), over streamable HTTP:" }
                (snippet("python-sdk-code", &python_sdk(url)))
            }
            section id="typescript-sdk" aria-labelledby="typescript-sdk-heading" {
                h2 id="typescript-sdk-heading" { "TypeScript SDK" }
                p { code { "@modelcontextprotocol/sdk" } " with its streamable HTTP transport:" }
                (snippet("typescript-sdk-code", &typescript_sdk(url)))
            }
        };
        layout::page(
            session,
            "/console/connect",
            "Connect your AI",
            notice,
            content,
        )
    }

    /// Whether the user has a live personal URL (read only: nothing is minted).
    async fn personal_url_active(&self, user_id: &str) -> Result<bool, ApiError> {
        Ok(self.accounts.live_personal_url(user_id).await?.is_some())
    }

    pub(crate) async fn connect_page(&self, session: &Session) -> Answer {
        let active = self.personal_url_active(&session.user_id).await?;
        Ok(page(
            StatusCode::OK,
            self.connect_view(session, active, None, None),
        ))
    }

    /// Mints the personal URL, or shows the live one (B1: asking again gives the same
    /// URL): the only answer that carries it.
    pub(crate) async fn url_create(&self, session: &Session) -> Answer {
        let url = self.accounts.own_personal_url(&session.user_id).await?;
        Ok(page(
            StatusCode::OK,
            self.connect_view(session, true, Some(&url), None),
        ))
    }

    pub(crate) async fn url_revoke(&self, session: &Session) -> Answer {
        let revoked = self
            .accounts
            .revoke_own_personal_url(&session.user_id)
            .await?;
        let words = if revoked {
            "Your personal URL is revoked: clients using it are refused from now on."
        } else {
            "You had no personal URL; nothing to revoke."
        };
        Ok(page(
            StatusCode::OK,
            self.connect_view(session, false, None, Some(&Notice::Done(words))),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_connect_snippets_carry_the_url_and_stay_valid_json() {
        let url = "https://mcp.example.com/mcp/secret";
        for config in [claude_desktop(url), cursor(url)] {
            let parsed: serde_json::Value = serde_json::from_str(&config).unwrap();
            assert!(config.contains(url), "{config}");
            assert!(parsed["mcpServers"]["mirobody"].is_object(), "{config}");
        }
        let desktop: serde_json::Value = serde_json::from_str(&claude_desktop(url)).unwrap();
        assert_eq!(
            desktop["mcpServers"]["mirobody"]["args"],
            serde_json::json!(["mcp-remote", url])
        );
        assert!(python_sdk(url).contains(&format!("streamable_http_client(\"{url}\")")));
        assert!(typescript_sdk(url).contains(&format!("new URL(\"{url}\")")));
    }
}
