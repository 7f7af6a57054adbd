//! Server-rendered HTML for the sign-in and consent pages. Plain forms that work
//! without JavaScript, built with `maud`, which escapes every value.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::identity::SERVERS_SCOPE;

/// The pages' own style, the console's look (its colours, type, fields and buttons):
/// inline, which their CSP allows (`style-src 'unsafe-inline'`), so the page needs
/// nothing from the console's function; a constant, never data.
const STYLE: &str = ":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--accent:#0b5cad;--bad:#a40e26}\
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:var(--fg)}\
header{padding:.6rem 1rem;border-bottom:1px solid var(--line);background:var(--soft);font-weight:700}\
main{max-width:30rem;margin:0 auto;padding:1rem}h1{font-size:1.6rem;margin:.5rem 0 1rem}\
label{display:block;margin:.7rem 0 .2rem;font-weight:600}\
input[type=email],input[type=password],input[type=text]{width:100%;padding:.45rem;border:1px solid var(--line);border-radius:4px;font:inherit}\
button{margin:1rem .5rem 0 0;padding:.45rem .9rem;border:1px solid var(--accent);border-radius:4px;background:var(--accent);color:#fff;font:inherit;cursor:pointer}\
button.secondary{background:#fff;color:var(--accent)}\
button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid #f0b400;outline-offset:2px}\
a{color:var(--accent)}.error{color:var(--bad);border:1px solid var(--bad);border-radius:4px;padding:.5rem .7rem}\
label.check{display:flex;gap:.5rem;align-items:flex-start;font-weight:400}ul{padding-left:1.2rem}code{font-size:.9rem}";

fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header { "Mirobody" }
                main {
                    h1 { (title) }
                    (body)
                }
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

/// The person this browser is signed in as (the console's session), on the consent page.
pub(super) struct SignedIn<'a> {
    pub(super) email: &'a str,
    /// The same request with `prompt=login`: the form that asks for a password instead.
    pub(super) other_account: &'a str,
}

/// What an OAuth client asks for, as the consent page shows it.
pub(super) struct Consent<'a> {
    /// The client's self-given name, already cleaned of hidden characters, or its id.
    pub(super) client: &'a str,
    /// Where the answer goes: the redirect URI's host (or `scheme:` for an app's own
    /// scheme), so a person can tell the app it sends them to.
    pub(super) redirect_to: &'a str,
    /// The scopes asked for, as the request gave them.
    pub(super) scope: &'a str,
}

/// What a scope lets an app do here, in plain words; `None` for a scope that grants
/// nothing here (it is still named, as asked for). `mcp:servers` has its own box.
fn scope_words(scope: &str) -> Option<&'static str> {
    match scope {
        "mcp:tools" => Some(
            "Read your health data and genotype through its tools: your readings, lab results, \
             sleep, activity and the answers about your genome.",
        ),
        _ => None,
    }
}

/// The consent's words: what the app may do, the box for the person's own MCP servers,
/// and what it asked for that grants nothing here.
fn consent_text(consent: &Consent<'_>) -> Markup {
    let scopes: Vec<&str> = consent.scope.split_whitespace().collect();
    let granting: Vec<&str> = scopes.iter().filter_map(|s| scope_words(s)).collect();
    let servers = scopes.contains(&SERVERS_SCOPE);
    let inert: Vec<&str> = scopes
        .iter()
        .copied()
        .filter(|s| scope_words(s).is_none() && *s != SERVERS_SCOPE)
        .collect();
    html! {
        p id="consent" {
            strong { (consent.client) } " wants to connect to your Mirobody account."
        }
        @if granting.is_empty() && !servers {
            p { "It asks for nothing that reaches your data here." }
        } @else {
            p { "If you allow it, it can:" }
            ul id="grants" {
                @for words in &granting { li { (words) } }
            }
        }
        @if servers {
            p {
                label.check for="servers" {
                    input id="servers" name="servers" type="checkbox" value="yes" checked;
                    " Also call the MCP servers you added in the console, with the \
                     credentials you stored for them. Untick this to keep them from it."
                }
            }
        }
        @if !inert.is_empty() {
            p id="inert" {
                "It also asked for " code { (inert.join(" ")) }
                ", which gives it nothing more here."
            }
        }
        p {
            "It stays connected for up to 30 days at a time, until you remove it under "
            em { "Who can act for you" } ", sign out everywhere or change your password."
        }
        p id="redirect" {
            "After you answer, you go back to " strong { (consent.redirect_to) } "."
        }
    }
}

/// Sign-in (and, for OAuth clients, consent) form posting back to `action`. With
/// `asked` (`/mcplogin`), it says who asked and when and asks for the user code.
pub(super) fn sign_in(
    action: &str,
    consent: Option<&Consent<'_>>,
    hidden_fields: Markup,
    error: Option<&str>,
    asked: Option<&Asked<'_>>,
    signed_in: Option<&SignedIn<'_>>,
) -> String {
    let body = html! {
        @match (consent, asked) {
            (_, Some(asked)) => p id="asked" {
                strong { (asked.client.unwrap_or("An MCP client that gave no name")) }
                " asked at " (asked.at) " to read your health data (not your own MCP servers). \
    Continue only if you started this just now in your own assistant: it shows you a code. \
    If someone sent you this link, close this page."
            },
            (Some(consent), None) => (consent_text(consent)),
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
            @if let Some(signed_in) = signed_in {
                p id="signed-in" {
                    "You are signed in as " strong { (signed_in.email) } ". "
                    a href=(signed_in.other_account) { "Use another account" }
                }
            } @else {
                label for="email" { "E-mail" }
                input id="email" name="email" type="email" autocomplete="username" required;
                label for="password" { "Password" }
                input id="password" name="password" type="password" autocomplete="current-password" required;
            }
            button id="allow" type="submit" name="decision" value="allow" { "Allow" }
            button.secondary id="deny" type="submit" name="decision" value="deny" formnovalidate { "Deny" }
        }
    };
    let title = match signed_in {
        Some(_) => "Allow access to your Mirobody account?",
        None => "Sign in to Mirobody",
    };
    page(title, body)
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
        let consent = Consent {
            client: hostile,
            redirect_to: hostile,
            scope: hostile,
        };
        for page in [
            sign_in(
                hostile,
                Some(&consent),
                hidden(&fields),
                Some(hostile),
                None,
                Some(&SignedIn {
                    email: hostile,
                    other_account: hostile,
                }),
            ),
            sign_in("/mcplogin", None, hidden(&fields), None, Some(&asked), None),
            message(hostile, hostile),
        ] {
            assert!(!page.contains("<script>"), "{page}");
            assert!(page.contains("&lt;script&gt;"), "{page}");
        }
    }

    /// The page says in words what each scope grants, asks
    /// separately for the person's own MCP servers, and names what grants nothing.
    #[test]
    fn the_consent_page_says_what_it_grants() {
        let consent = |scope| {
            sign_in(
                "/oauth/authorize",
                Some(&Consent {
                    client: "Notes App",
                    redirect_to: "notes.example",
                    scope,
                }),
                hidden(&[]),
                None,
                None,
                None,
            )
        };
        let tools = consent("mcp:tools");
        assert!(
            tools.contains("Read your health data and genotype"),
            "{tools}"
        );
        assert!(
            !tools.contains("id=\"servers\""),
            "no servers box unless asked"
        );
        assert!(tools.contains("notes.example"));
        let both = consent("mcp:tools mcp:servers openid");
        assert!(both.contains("id=\"servers\""), "{both}");
        assert!(both.contains("credentials you stored"), "{both}");
        assert!(both.contains("<code>openid</code>"), "{both}");
        let nothing = consent("mcp:read");
        assert!(
            nothing.contains("asks for nothing that reaches your data"),
            "{nothing}"
        );
    }
}
