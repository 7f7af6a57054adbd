//! The spans an indicator's chart can show (`?range=week|month|3m|year|all`) and the
//! control to choose one: a row of plain links, the chosen one marked, so it works
//! without the script. Pure: a query value in, a span and markup out; it does not read
//! the store (the page reads the rollups of the span it is given).

use maud::{Markup, html};

/// A chart's span, counted back from the day of the series' last reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    Week,
    Month,
    Quarter,
    Year,
    /// The whole history: day points for the last twelve months, month points before.
    All,
}

impl Span {
    pub(crate) const EVERY: [Span; 5] = [
        Span::Week,
        Span::Month,
        Span::Quarter,
        Span::Year,
        Span::All,
    ];

    /// The span a `range` query value asks for; anything else is the whole history.
    pub(crate) fn parse(value: Option<&str>) -> Span {
        Span::EVERY
            .into_iter()
            .find(|span| Some(span.id()) == value)
            .unwrap_or(Span::All)
    }

    /// The query value.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Span::Week => "week",
            Span::Month => "month",
            Span::Quarter => "3m",
            Span::Year => "year",
            Span::All => "all",
        }
    }

    /// The words on the control.
    fn label(self) -> &'static str {
        match self {
            Span::Week => "Week",
            Span::Month => "Month",
            Span::Quarter => "3 months",
            Span::Year => "Year",
            Span::All => "All",
        }
    }

    /// The days the span covers, the last reading's day counted in; `None` for all.
    pub(crate) fn days(self) -> Option<i64> {
        match self {
            Span::Week => Some(7),
            Span::Month => Some(30),
            Span::Quarter => Some(90),
            Span::Year => Some(365),
            Span::All => None,
        }
    }
}

/// The control: one link per span to `path` (the indicator page's own, already
/// percent-encoded), the chosen one `aria-current`.
pub(crate) fn control(path: &str, chosen: Span) -> Markup {
    html! {
        nav.range aria-label="Chart range" {
            ul {
                @for span in Span::EVERY {
                    li {
                        a href=(format!("{path}?range={}", span.id()))
                            aria-current=[(span == chosen).then_some("true")] {
                            (span.label())
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_span_reads_back_from_its_query_value() {
        for span in Span::EVERY {
            assert_eq!(Span::parse(Some(span.id())), span);
        }
        assert_eq!(Span::parse(None), Span::All);
        assert_eq!(Span::parse(Some("decade")), Span::All);
        assert_eq!(Span::Quarter.days(), Some(90));
    }

    #[test]
    fn the_chosen_span_is_marked_and_every_link_stays_on_the_page() {
        let markup = control("/console/data/Steps", Span::Month).into_string();
        assert!(markup.contains(
            "<a href=\"/console/data/Steps?range=month\" aria-current=\"true\">Month</a>"
        ));
        assert_eq!(markup.matches("aria-current").count(), 1);
        assert_eq!(
            markup.matches("href=\"/console/data/Steps?range=").count(),
            5
        );
    }
}
