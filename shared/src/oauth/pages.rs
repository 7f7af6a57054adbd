//! Server-rendered HTML for the sign-in and consent pages. Plain forms that work
//! without JavaScript, built with `maud`, which escapes every value.

use maud::{DOCTYPE, Markup, PreEscaped, html};

/// The pages' own style: inline, which their CSP allows (`style-src 'unsafe-inline'`);
/// a constant, never data.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}\
label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password],input[type=text]{width:100%;padding:.4rem}\
button{margin:1rem .5rem 0 0;padding:.5rem 1rem}.error{color:#a00}";

fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (title) }
                (body)
            }
        }
    }
    .into_string()
}

/// Hidden inputs carrying the request's parameters through the form post.
pub(super) fn hidden(fields: &[(&str, &str)]) -> Markup {
    html! {
        @for (name, value) in fields {
            input type="hidden" name=(name) value=(value);
        }
    }
}

/// Who asked for a `/mcplogin` sign-in, and when (shown so a user can tell a link
/// someone else sent them from one their own assistant opened).
pub(super) struct Asked<'a> {
    /// The MCP client's self-given name, if it gave one.
    pub(super) client: Option<&'a str>,
    /// When, as shown (UTC).
    pub(super) at: &'a str,
}

/// Sign-in (and, for OAuth clients, consent) form posting back to `action`. With
/// `asked` (`/mcplogin`), it says who asked and when and asks for the user code.
pub(super) fn sign_in(
    action: &str,
    client_name: Option<&str>,
    scope: &str,
    hidden_fields: Markup,
    error: Option<&str>,
    asked: Option<&Asked<'_>>,
) -> String {
    let body = html! {
        @match (client_name, asked) {
            (_, Some(asked)) => p id="asked" {
                strong { (asked.client.unwrap_or("An MCP client that gave no name")) }
                " asked at " (asked.at) " to read your health data. \
    Continue only if you started this just now in your own assistant: it shows you a code. \
    If someone sent you this link, close this page."
            },
            (Some(name), None) => p {
                strong { (name) }
                " asks to read your health data with the scopes " code { (scope) } "."
            },
            (None, None) => p { "Sign in so your AI assistant can read your health data." },
        }
        @if let Some(error) = error {
            p.error role="alert" { (error) }
        }
        form method="post" action=(action) {
            (hidden_fields)
            @if asked.is_some() {
                label for="user_code" { "The code your assistant shows (XXXX-XXXX)" }
                input id="user_code" name="user_code" type="text" autocomplete="off"
                    autocapitalize="characters" spellcheck="false" required;
            }
            label for="email" { "E-mail" }
            input id="email" name="email" type="email" autocomplete="username" required;
            label for="password" { "Password" }
            input id="password" name="password" type="password" autocomplete="current-password" required;
            button id="allow" type="submit" name="decision" value="allow" { "Allow" }
            button id="deny" type="submit" name="decision" value="deny" formnovalidate { "Deny" }
        }
    };
    page("Sign in to Mirobody", body)
}

pub(super) fn message(title: &str, text: &str) -> String {
    page(title, html! { p id="message" { (text) } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_on_the_sign_in_page_is_escaped() {
        let hostile = "<script>alert(1)</script>\"'&";
        let asked = Asked {
            client: Some(hostile),
            at: hostile,
        };
        let fields = [("state", hostile)];
        for page in [
            sign_in(
                hostile,
                Some(hostile),
                hostile,
                hidden(&fields),
                Some(hostile),
                None,
            ),
            sign_in("/mcplogin", None, "", hidden(&fields), None, Some(&asked)),
            message(hostile, hostile),
        ] {
            assert!(!page.contains("<script>"), "{page}");
            assert!(page.contains("&lt;script&gt;"), "{page}");
        }
    }
}
