//! Connect your AI: the personal MCP URL (create, copy, revoke; it is a password) and
//! ready-to-paste instructions for Claude Desktop (mcp-remote), Cursor, Claude's and
//! ChatGPT's remote connectors and the Python and TypeScript SDKs.
use http::StatusCode;
use maud::html;

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};

impl ConsoleApi {
    pub(super) async fn connect_page(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/connect",
                "Connect your AI",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn url_create(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/connect",
                "Connect your AI",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn url_revoke(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/connect",
                "Connect your AI",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }
}
