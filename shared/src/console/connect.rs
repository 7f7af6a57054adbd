//! Connect your AI, for people: first the way most people connect (Claude or ChatGPT:
//! paste an address, sign in where asked), then Cursor (its install link), Claude
//! Desktop (through `mcp-remote`), and a section for developers (Claude Code, VS Code,
//! the MCP Inspector, the Python and TypeScript SDKs).
//!
//! Which address a connector gets follows what this deployment does: when `/mcp` asks
//! an anonymous caller to sign in (`MIROBODY_REQUIRE_AUTH`), the plain MCP URL and the
//! OAuth sign-in; otherwise the personal MCP URL, which needs no sign-in because it is
//! the credential. The personal URL is a secret: it is shown only in the answer to the
//! POST that mints (or re-shows) it, never on a GET; the GET page says whether one is
//! active. Snippets carry only real addresses; until one exists they say so and offer
//! nothing to copy.

use http::StatusCode;
use maud::{Markup, html};

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};
use crate::clients::{self, ClientSetup};
use crate::http::ApiError;

/// One client's ready-to-paste settings for `url` (`clients.rs`, which the README's
/// client section is written from too): a `pre` with the client's id, and its copy button.
fn snippet(client: &ClientSetup, url: &str) -> Markup {
    let (id, text) = (client.id, (client.settings)(url));
    html! {
        // Focusable: a long line scrolls, and the keyboard must reach it.
        pre id=(id) tabindex="0" { code { (text) } }
        button.secondary type="button" data-copy=(id) { "Copy" }
    }
}

/// The personal URL: shown with Copy when just minted (with the calm note that it is a
/// password), else whether one is active; the buttons to make, show and revoke it.
fn personal_url_block(session: &Session, active: bool, minted: Option<&str>) -> Markup {
    html! {
        div id="personal-url-block" {
            @if let Some(minted) = minted {
                p { code.secret id="personal-url" { (minted) } }
                p.notice role="note" id="personal-url-warning" {
                    "Keep this URL to yourself, like a password: whoever has it can read your data. "
                    "It is shown only now; press Show it again to see it later, or revoke it if it leaks "
                    "and make a new one."
                }
            } @else if active {
                p id="personal-url-state" data-active="true" { "You have an active personal URL. It is not shown on this page; press Show to see it." }
            } @else {
                p id="personal-url-state" data-active="false" { "You have no personal URL yet." }
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
                        button type="submit" { "Make my personal URL" }
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
    }
}

/// What to do before a snippet can carry the personal URL.
fn first_the_url(active: bool) -> &'static str {
    if active {
        "Press Show my personal URL above first:"
    } else {
        "Make your personal URL above first:"
    }
}

/// Cursor's install link: its deeplink with the server's settings, base64 JSON.
fn cursor_install_link(url: &str) -> String {
    use base64::Engine;
    let config = serde_json::json!({ "url": url }).to_string();
    let encoded = base64::engine::general_purpose::STANDARD.encode(config);
    let encoded: String = form_urlencoded::byte_serialize(encoded.as_bytes()).collect();
    format!("cursor://anysphere.cursor-deeplink/mcp/install?name=mirobody&config={encoded}")
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
        // The address a connector is given, when there is a real one to give.
        let oauth = self.mcp_signs_in.then_some(self.mcp_url.as_str());
        let url = oauth.or(minted);
        let content = html! {
            p.lede {
                "Connect an AI assistant to your data: it can then answer questions about your "
                "readings and genome, and only yours. Pick the app you use."
            }
            section id="remote-connectors" aria-labelledby="remote-connectors-heading" {
                h2 id="remote-connectors-heading" { "Claude or ChatGPT" }
                ol.steps {
                    @if let Some(address) = oauth {
                        li {
                            "Copy this address: " code.secret id="mcp-url" { (address) } " "
                            button.secondary type="button" data-copy="mcp-url" { "Copy" }
                        }
                        li {
                            strong { "Claude" } " (claude.ai or the app): Settings → Connectors → "
                            "Add custom connector. Name it Mirobody, paste the address, Add, then Connect. "
                            strong { "ChatGPT" } ": Settings → Apps & Connectors → Create (developer mode "
                            "on), paste the address, choose OAuth."
                        }
                        li { "Sign in with your Mirobody e-mail and password when asked, and allow access." }
                    } @else {
                        li {
                            "Make your personal MCP URL: it is the address your AI uses, and it opens "
                            "your data without a password, so it needs no sign-in."
                            (personal_url_block(session, active, minted))
                        }
                        li {
                            strong { "Claude" } " (claude.ai or the app): Settings → Connectors → "
                            "Add custom connector. Name it Mirobody, paste the URL, Add. "
                            strong { "ChatGPT" } ": Settings → Apps & Connectors → Create (developer mode "
                            "on), paste the URL, choose no authentication."
                        }
                    }
                    li { "Ask it something, for example “How did I sleep last week?”" }
                }
            }
            section id="cursor" aria-labelledby="cursor-heading" {
                h2 id="cursor-heading" { "Cursor" }
                @if let Some(url) = url {
                    p {
                        a.button id="cursor-install" href=(cursor_install_link(url)) { "Add to Cursor" }
                        " opens Cursor and adds the server; or add this to "
                        code { "~/.cursor/mcp.json" } ":"
                    }
                    (snippet(&clients::CURSOR, url))
                } @else {
                    p.muted { (first_the_url(active)) " the install link and the settings carry it." }
                }
            }
            section id="claude-desktop" aria-labelledby="claude-desktop-heading" {
                h2 id="claude-desktop-heading" { "Claude Desktop" }
                p {
                    "The simplest way is the connector above: Claude Desktop shares Claude's connectors. "
                    "To set it up by hand instead, add this to " code { "claude_desktop_config.json" }
                    " (Settings → Developer → Edit Config) and restart Claude Desktop; it needs Node.js."
                }
                @if let Some(url) = url {
                    (snippet(&clients::CLAUDE_DESKTOP, url))
                } @else {
                    p.muted { (first_the_url(active)) " the settings carry it." }
                }
            }
            @if oauth.is_some() {
                section id="personal-url-section" aria-labelledby="personal-url-heading" {
                    h2 id="personal-url-heading" { "A personal MCP URL, for apps that cannot sign in" }
                    (personal_url_block(session, active, minted))
                }
            }
            section id="developers" aria-labelledby="developers-heading" {
                h2 id="developers-heading" { "For developers" }
                @if let Some(url) = url {
                    h3 { "Claude Code" }
                    (snippet(&clients::CLAUDE_CODE, url))
                    h3 { "VS Code" }
                    p { "In " code { ".vscode/mcp.json" } ":" }
                    (snippet(&clients::VSCODE, url))
                    h3 { "MCP Inspector" }
                    (snippet(&clients::INSPECTOR, url))
                    section id="python-sdk" aria-labelledby="python-sdk-heading" {
                        h3 id="python-sdk-heading" { "Python SDK" }
                        p { "The " code { "mcp" } " package (2.x), over streamable HTTP:" }
                        (snippet(&clients::PYTHON_SDK, url))
                    }
                    section id="typescript-sdk" aria-labelledby="typescript-sdk-heading" {
                        h3 id="typescript-sdk-heading" { "TypeScript SDK" }
                        p { code { "@modelcontextprotocol/sdk" } " with its streamable HTTP transport:" }
                        (snippet(&clients::TYPESCRIPT_SDK, url))
                    }
                } @else {
                    p.muted {
                        "Claude Code, VS Code, the MCP Inspector and the Python and TypeScript SDKs take "
                        "the personal URL too. " (first_the_url(active)) " their settings appear here."
                    }
                }
                p {
                    "The MCP endpoint is " code { (self.mcp_url) } "; scripts can also send a bearer "
                    "token from " code { "POST /auth/signin" } " (see the README)."
                }
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
