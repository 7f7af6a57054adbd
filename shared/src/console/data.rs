//! Your data: the catalogue (every indicator with its count, first and last date and
//! unit), one indicator's chart and latest readings, and the genome summary with the
//! rsid look-up. Reads the store's catalogue, rollups and genome; renders with `chart.rs`.
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::html;

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};

impl ConsoleApi {
    pub(super) async fn data_page(&self, session: &Session) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/data",
                "Your data",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn indicator_page(&self, session: &Session, _indicator: &str) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/data",
                "Indicator",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }

    pub(super) async fn genome_page(&self, session: &Session, _request: &Request<Bytes>) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/data",
                "Your genome",
                None::<&Notice<'_>>,
                html! { p { "Coming soon." } },
            ),
        ))
    }
}
