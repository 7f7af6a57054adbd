//! How each MCP client people use connects: the settings to paste for a given address,
//! where they go, the sign-in the client gets, and how the product checks it. One table,
//! read by the console's Connect page (with this deployment's real address) and written
//! into the README by `mirobody-local clients-readme`, so the two cannot disagree.
//!
//! Text only: no I/O, no knowledge of the deployment beyond the address it is given.

/// One client: its settings for an address and the words around them.
pub struct ClientSetup {
    /// The console's element id of its snippet (`<id>` on the page).
    pub id: &'static str,
    pub name: &'static str,
    /// Where the settings go, in the client.
    pub place: &'static str,
    /// The README's code fence language of the settings.
    pub language: &'static str,
    /// The settings for an MCP address (a personal URL, or the plain `/mcp`).
    pub settings: fn(&str) -> String,
    /// What sign-in the client gets.
    pub sign_in: &'static str,
    /// How the product checks that it works.
    pub verified: &'static str,
}

pub const CONNECTORS: ClientSetup = ClientSetup {
    id: "connector-url",
    name: "Claude (claude.ai, the apps) and ChatGPT connectors",
    place: "Claude: Settings → Connectors → Add custom connector. ChatGPT: Settings → \
            Apps & Connectors → Create (developer mode on)",
    language: "text",
    settings: |url| url.to_owned(),
    sign_in: "the personal URL needs none (ChatGPT: no authentication); the plain URL on \
              a deployment with `RequireAuth=true`: OAuth in the browser (ChatGPT: OAuth)",
    verified: "by the vendors' documentation: their servers cannot reach this machine",
};

pub const CLAUDE_DESKTOP: ClientSetup = ClientSetup {
    id: "claude-desktop-config",
    name: "Claude Desktop through `mcp-remote`",
    place: "`claude_desktop_config.json` (Settings → Developer → Edit Config), then restart; \
            needs Node.js",
    language: "json",
    settings: claude_desktop,
    sign_in: "the personal URL needs none; the plain URL: OAuth in the browser when the \
              deployment asks for sign-in (`RequireAuth=true`), or a bearer header",
    verified: "`tests/e2e/stdio_bridge.rs` (mcp-remote 0.15.1: personal URL, plain URL \
               with a header, plain URL signed in through Chromium)",
};

pub const CURSOR: ClientSetup = ClientSetup {
    id: "cursor-config",
    name: "Cursor",
    place: "`~/.cursor/mcp.json`, or the console's Add to Cursor link",
    language: "json",
    settings: cursor,
    sign_in: "the personal URL needs none; the plain URL: OAuth in the browser when the \
              deployment asks for sign-in",
    verified: "by Cursor's documentation (it does not install from a registry)",
};

pub const VSCODE: ClientSetup = ClientSetup {
    id: "vscode-config",
    name: "VS Code",
    place: "`.vscode/mcp.json`",
    language: "json",
    settings: vscode,
    sign_in: "the personal URL needs none; the plain URL: OAuth in the browser when the \
              deployment asks for sign-in",
    verified: "by VS Code's documentation (it does not install from a registry)",
};

pub const CLAUDE_CODE: ClientSetup = ClientSetup {
    id: "claude-code-command",
    name: "Claude Code",
    place: "a shell",
    language: "sh",
    settings: claude_code,
    sign_in: "the personal URL needs none; the plain URL: OAuth in the browser when the \
              deployment asks for sign-in (`/mcp` in Claude Code)",
    verified: "by Claude Code's documentation (it signs in to Anthropic first)",
};

pub const INSPECTOR: ClientSetup = ClientSetup {
    id: "inspector-command",
    name: "MCP Inspector (CLI)",
    place: "a shell; add `--header \"Authorization: Bearer <token>\"` for the plain URL with \
            a token, `--protocol-era modern` for 2026-07-28",
    language: "sh",
    settings: inspector,
    sign_in: "the personal URL needs none; the plain URL: a bearer header, or OAuth in the \
              browser when the deployment asks for sign-in",
    verified: "`tests/e2e/inspector.rs` (2.12.0: header in both eras, personal URL, OAuth \
               through Chromium)",
};

pub const PYTHON_SDK: ClientSetup = ClientSetup {
    id: "python-sdk-code",
    name: "Python SDK",
    place: "your program (`mcp` 2.x, streamable HTTP)",
    language: "python",
    settings: python_sdk,
    sign_in: "the personal URL needs none; the plain URL: a bearer header, or the SDK's \
              OAuth client",
    verified: "`tests/clients/python_client.py` (mcp 2.3.0, modern and auto modes) and \
                   `python_oauth.py` (its OAuth client)",
};

pub const TYPESCRIPT_SDK: ClientSetup = ClientSetup {
    id: "typescript-sdk-code",
    name: "TypeScript SDK",
    place: "your program (`@modelcontextprotocol/sdk`, streamable HTTP)",
    language: "js",
    settings: typescript_sdk,
    sign_in: "the personal URL needs none; the plain URL: a bearer header, or the SDK's \
              OAuth provider",
    verified: "`tests/clients/ts_client.mjs` (1.x, `initialize`) and the Inspector (2.x, \
               2026-07-28)",
};

/// The clients, in the order the console and the README show them.
pub const CLIENTS: &[ClientSetup] = &[
    CONNECTORS,
    CLAUDE_DESKTOP,
    CURSOR,
    VSCODE,
    CLAUDE_CODE,
    INSPECTOR,
    PYTHON_SDK,
    TYPESCRIPT_SDK,
];

fn claude_desktop(url: &str) -> String {
    format!(
        r#"{{
  "mcpServers": {{
    "mirobody": {{
      "command": "npx",
      "args": ["-y", "mcp-remote", "{url}"]
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

fn vscode(url: &str) -> String {
    format!(
        r#"{{
  "servers": {{
    "mirobody": {{
      "type": "http",
      "url": "{url}"
    }}
  }}
}}"#
    )
}

fn claude_code(url: &str) -> String {
    format!("claude mcp add --transport http mirobody {url}")
}

fn inspector(url: &str) -> String {
    format!(
        "npx -y @modelcontextprotocol/inspector --cli {url} --transport http --method tools/list"
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

const BEGIN: &str = "<!-- BEGIN CLIENTS";
const END: &str = "<!-- END CLIENTS -->";

/// The README's client section: the table, then each client's settings.
fn readme_section() -> String {
    const URL: &str = "<url>";
    let mut out = String::from(
        "<!-- BEGIN CLIENTS: generated from shared/src/clients.rs by \
         `cargo run -p mirobody-local -- clients-readme`; edit there -->\n",
    );
    out.push_str(
        "`<url>` is the personal URL (`https://<api>/mcp/<secret>`) or the plain \
         `https://<api>/mcp`, as above. The console's Connect your AI page shows the same \
         settings with the deployment's real address.\n\n",
    );
    out.push_str("| client | where the settings go | sign-in | verified |\n|---|---|---|---|\n");
    for client in CLIENTS {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            client.name, client.place, client.sign_in, client.verified
        ));
    }
    for client in CLIENTS {
        out.push_str(&format!(
            "\n**{}**:\n\n```{}\n{}\n```\n",
            client.name,
            client.language,
            (client.settings)(URL)
        ));
    }
    out.push_str(END);
    out
}

/// `readme` with its client section, between `<!-- BEGIN CLIENTS` and `<!-- END CLIENTS -->`,
/// written from the table; `Err` when the markers are missing.
pub fn readme_with_clients(readme: &str) -> Result<String, &'static str> {
    let begin = readme
        .find(BEGIN)
        .ok_or("the README has no `<!-- BEGIN CLIENTS` line")?;
    let end = readme[begin..]
        .find(END)
        .map(|at| begin + at + END.len())
        .ok_or("the README has no `<!-- END CLIENTS -->` line after its BEGIN")?;
    Ok(format!(
        "{}{}{}",
        &readme[..begin],
        readme_section(),
        &readme[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_settings_carry_the_url_and_the_json_ones_stay_valid() {
        let url = "https://mcp.example.com/mcp/secret";
        for client in CLIENTS {
            let settings = (client.settings)(url);
            assert!(settings.contains(url), "{}: {settings}", client.name);
            if client.language == "json" {
                let parsed: serde_json::Value = serde_json::from_str(&settings).unwrap();
                assert!(parsed.is_object(), "{}", client.name);
            }
        }
        let desktop: serde_json::Value =
            serde_json::from_str(&(CLAUDE_DESKTOP.settings)(url)).unwrap();
        assert_eq!(
            desktop["mcpServers"]["mirobody"]["args"],
            serde_json::json!(["-y", "mcp-remote", url])
        );
        let vscode: serde_json::Value = serde_json::from_str(&(VSCODE.settings)(url)).unwrap();
        assert_eq!(vscode["servers"]["mirobody"]["url"], url);
        assert!((PYTHON_SDK.settings)(url).contains(&format!("streamable_http_client(\"{url}\")")));
        assert!((TYPESCRIPT_SDK.settings)(url).contains(&format!("new URL(\"{url}\")")));
    }

    /// The README shows what the console shows: its section is this table's, written by
    /// `mirobody-local clients-readme`.
    #[test]
    fn the_readme_client_section_is_generated_from_the_table() {
        let readme = include_str!("../../README.md");
        let written = readme_with_clients(readme).expect("README has the client markers");
        assert!(
            written == readme,
            "README.md's client section is not the table's: run \
             `cargo run -p mirobody-local -- clients-readme`"
        );
        for client in CLIENTS {
            assert!(readme.contains(client.name), "{}", client.name);
        }
    }

    #[test]
    fn a_readme_without_markers_is_refused() {
        assert!(readme_with_clients("# no section").is_err());
        assert!(readme_with_clients("<!-- BEGIN CLIENTS -->").is_err());
    }
}
