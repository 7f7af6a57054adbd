//! Server-rendered HTML for the sign-in and consent pages. Plain forms that work
//! without JavaScript; every value is HTML-escaped.

pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>{title}</title><style>body{{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}}\
label{{display:block;margin:.8rem 0 .2rem}}input[type=email],input[type=password],input[type=text]{{width:100%;padding:.4rem}}\
button{{margin:1rem .5rem 0 0;padding:.5rem 1rem}}.error{{color:#a00}}</style></head><body><h1>{title}</h1>{body}</body></html>",
        title = escape(title)
    )
}

/// Hidden inputs carrying the request's parameters through the form post.
pub(super) fn hidden(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(name, value)| {
            format!(
                "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                escape(name),
                escape(value)
            )
        })
        .collect()
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
    hidden_fields: &str,
    error: Option<&str>,
    asked: Option<&Asked<'_>>,
) -> String {
    let who = match (client_name, asked) {
        (_, Some(asked)) => format!(
            "<p id=\"asked\"><strong>{}</strong> asked at {} to read your health data. \
Continue only if you started this just now in your own assistant: it shows you a code. \
If someone sent you this link, close this page.</p>",
            escape(asked.client.unwrap_or("An MCP client that gave no name")),
            escape(asked.at)
        ),
        (Some(name), None) => format!(
            "<p><strong>{}</strong> asks to read your health data with the scopes <code>{}</code>.</p>",
            escape(name),
            escape(scope)
        ),
        (None, None) => {
            "<p>Sign in so your AI assistant can read your health data.</p>".to_string()
        }
    };
    let code = if asked.is_some() {
        "<label for=\"user_code\">The code your assistant shows (XXXX-XXXX)</label>\
<input id=\"user_code\" name=\"user_code\" type=\"text\" autocomplete=\"off\" autocapitalize=\"characters\" spellcheck=\"false\" required>"
    } else {
        ""
    };
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e)))
        .unwrap_or_default();
    page(
        "Sign in to Mirobody",
        &format!(
            "{who}{error}<form method=\"post\" action=\"{action}\">{hidden_fields}{code}\
<label for=\"email\">E-mail</label><input id=\"email\" name=\"email\" type=\"email\" autocomplete=\"username\" required>\
<label for=\"password\">Password</label><input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\
<button id=\"allow\" type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
<button id=\"deny\" type=\"submit\" name=\"decision\" value=\"deny\" formnovalidate>Deny</button></form>",
            action = escape(action)
        ),
    )
}

pub(super) fn message(title: &str, text: &str) -> String {
    page(title, &format!("<p id=\"message\">{}</p>", escape(text)))
}
