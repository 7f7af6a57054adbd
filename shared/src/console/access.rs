//! Who can act for you: the OAuth clients the user authorised (revoking one ends its
//! refresh tokens), the personal URL, active temporary agent URLs, shares granted and
//! received, each revocable, and "sign out everywhere".
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};

impl ConsoleApi {
    pub(super) async fn access_page(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/access",
                "Who can act for you",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn grant_revoke(&self, session: &Session, _client_id: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/access",
                "Who can act for you",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn share_revoke(
        &self,
        session: &Session,
        _request: &Request<Bytes>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/access",
                "Who can act for you",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn temporary_url_revoke(
        &self,
        session: &Session,
        _request: &Request<Bytes>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/access",
                "Who can act for you",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn sign_out_all(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/access",
                "Who can act for you",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }
}
