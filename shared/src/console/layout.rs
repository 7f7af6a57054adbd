//! The frame every console page shares: the document head (the stylesheet and script
//! by URL, never inline, so the CSP forbids inline script), the navigation with the
//! current page marked, the sign-out button, and notices. Renders only; knows no store.

use maud::{DOCTYPE, Markup, html};

use super::Session;

/// The console's sections, in the navigation's order: (path, label).
pub(crate) const SECTIONS: [(&str, &str); 6] = [
    ("/console/data", "Your data"),
    ("/console/upload", "Upload"),
    ("/console/connect", "Connect your AI"),
    ("/console/servers", "Your MCP servers"),
    ("/console/access", "Who can act for you"),
    ("/console/account", "Your account"),
];

/// A notice shown above a page's content.
pub(crate) enum Notice<'a> {
    /// Something done (`role=status`).
    Done(&'a str),
    /// Something refused (`role=alert`).
    Problem(&'a str),
}

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · Mirobody" }
            link rel="stylesheet" href="/console/assets/console.css";
            script src="/console/assets/console.js" defer {}
        }
    }
}

/// A refusal that is about one field of a form: shown under that field (its id), the
/// field marked `aria-invalid` and described by it, instead of above the form.
#[derive(Clone, Copy)]
pub(crate) struct FieldProblem<'a> {
    pub field: &'a str,
    pub text: &'a str,
}

impl<'a> FieldProblem<'a> {
    /// The problem of `text` when it names one of `fields` (`(id, words it is known
    /// by)`, first match wins), e.g. a too-short password.
    pub(crate) fn of(text: &'a str, fields: &[(&'a str, &[&str])]) -> Option<FieldProblem<'a>> {
        let lower = text.to_lowercase();
        fields
            .iter()
            .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
            .map(|(field, _)| FieldProblem { field, text })
    }

    /// Whether this is about `field`.
    pub(crate) fn on(problem: Option<FieldProblem<'_>>, field: &str) -> bool {
        problem.is_some_and(|p| p.field == field)
    }
}

/// The words under `field` when the problem is about it (`p.error#<field>-error`).
pub(crate) fn field_error(problem: Option<FieldProblem<'_>>, field: &str) -> Markup {
    html! {
        @if let Some(problem) = problem.filter(|p| p.field == field) {
            p.error.field-error id={ (field) "-error" } { (problem.text) }
        }
    }
}

/// The `aria-describedby` of `field`: its rule, and its error when it has one.
pub(crate) fn described_by(problem: Option<FieldProblem<'_>>, field: &str, rule: &str) -> String {
    if FieldProblem::on(problem, field) {
        format!("{field}-error {rule}")
    } else {
        rule.to_string()
    }
}

pub(crate) fn notice(notice: Option<&Notice<'_>>) -> Markup {
    html! {
        @match notice {
            Some(Notice::Done(text)) => p.notice.done role="status" { (text) },
            Some(Notice::Problem(text)) => p.notice.problem role="alert" { (text) },
            None => {},
        }
    }
}

/// A signed-in page: the navigation with `active` (a path of [`SECTIONS`]) marked, the
/// session's CSRF token for the page's script, and `content` under an `h1` of `title`.
pub(crate) fn page(
    session: &Session,
    active: &str,
    title: &str,
    notice_: Option<&Notice<'_>>,
    content: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/console/data" { "Mirobody" }
                    // The sections as a row of links, and at phone width (CSS shows
                    // one or the other) behind a "Menu" disclosure naming the page.
                    nav.wide aria-label="Console" { (sections(active)) }
                    details.menu {
                        summary {
                            "Menu"
                            @if let Some((_, label)) = SECTIONS.iter().find(|(p, _)| *p == active) {
                                span.muted { ": " (label) }
                            }
                        }
                        nav aria-label="Console menu" { (sections(active)) }
                    }
                    form.signout method="post" action="/console/signout" {
                        input type="hidden" name="csrf" value=(session.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
                main id="main" data-csrf=(session.csrf) {
                    h1 { (title) }
                    (notice(notice_))
                    (content)
                }
            }
        }
    }
}

/// The links to the console's sections, `active` marked as the current page.
fn sections(active: &str) -> Markup {
    html! {
        ul {
            @for (path, label) in SECTIONS {
                li {
                    @if path == active {
                        a href=(path) aria-current="page" { (label) }
                    } @else {
                        a href=(path) { (label) }
                    }
                }
            }
        }
    }
}

/// A page without the signed-in frame (sign-in, sign-up, errors).
pub(crate) fn bare(title: &str, notice_: Option<&Notice<'_>>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                header.top {
                    a.brand href="/" { "Mirobody" }
                }
                main id="main" {
                    h1 { (title) }
                    (notice(notice_))
                    (content)
                }
            }
        }
    }
}

/// A page that says one thing (an error, a confirmation), with a way back.
pub(crate) fn message_page(title: &str, text: &str) -> Markup {
    bare(
        title,
        None,
        html! {
            p id="message" { (text) }
            p { a href="/console/data" { "Back to the console" } }
        },
    )
}
