//! Your account: export everything the product holds about the user (one download),
//! delete all data, delete the account (everything, confirmed by password).
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};

impl ConsoleApi {
    pub(super) async fn account_page(
        &self,
        session: &Session,
        _notice: Option<&Notice<'_>>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/account",
                "Your account",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn export(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/account",
                "Your account",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn delete_data(&self, session: &Session, _request: &Request<Bytes>) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/account",
                "Your account",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn delete_account(
        &self,
        session: &Session,
        _request: &Request<Bytes>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/account",
                "Your account",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }
}
