//! The route parser (`mirobody::routes::resolve`) and the OAuth and account form parsers
//! through `App::handle`. The first byte picks the variant:
//! - even: the rest is `METHOD PATH` (split at the first space): resolved under a few
//!   prefixes, then sent through the app with no body (query strings included, so the
//!   `GET /oauth/authorize` parameters are parsed too);
//! - odd: the rest is the body of a POST to one of the form endpoints, as a form or as
//!   JSON. Sign-up and password sign-in are left out: each hashes a password
//!   (deliberately slow), which would starve the fuzzer.

use super::common;
use http::Method;

const FORMS: &[&str] = &[
    "/oauth/token",
    "/oauth/register",
    "/oauth/authorize",
    "/oauth2/authorize",
    "/oauth/introspect",
    "/oauth/revoke",
    "/auth/signout",
    "/api/shares",
    "/api/user/mcp",
    "/api/user/mcp-servers",
];

const PREFIXES: &[&str] = &["", "/api", "/v1/", "/x/y"];

/// The body of the `route_and_forms` fuzz target: one input.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let app = common::fuzzed();
    let bearer = app.bearer();
    let signed_in = mode & 2 == 2;
    if mode & 1 == 0 {
        let text = String::from_utf8_lossy(rest);
        let (method, path) = text.split_once(' ').unwrap_or(("GET", &text));
        let Ok(method) = Method::from_bytes(method.as_bytes()) else {
            return;
        };
        for prefix in PREFIXES {
            let _ = mirobody::routes::resolve(&method, path, prefix);
        }
        let mut headers = vec![];
        if signed_in {
            headers.push(("authorization", bearer.as_str()));
        }
        app.send(method.as_str(), path, &headers, b"");
    } else {
        let Some((&pick, body)) = rest.split_first() else {
            return;
        };
        let path = FORMS[usize::from(pick) % FORMS.len()];
        let content_type = if pick & 0x80 == 0 {
            "application/x-www-form-urlencoded"
        } else {
            "application/json"
        };
        let mut headers = vec![("content-type", content_type)];
        if signed_in {
            headers.push(("authorization", bearer.as_str()));
        }
        app.send("POST", path, &headers, body);
    }
}
