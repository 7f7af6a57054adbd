//! HTTP concerns shared by every route: what a route is and the router, the REST refusals
//! (`ApiError`) and successes (`Success`, the envelopes), CORS, `Origin`/`Host` checks and response helpers. Plain `http` types
//! only; no Lambda, no sockets.

mod boundary;
mod error;
mod origin;
mod routes;
mod success;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::Value;

pub(crate) use boundary::catch_panic;
pub(crate) use error::{ApiError, Form, STORAGE_UNAVAILABLE};
pub(crate) use origin::{CorsOrigin, OriginPolicy};
pub(crate) use routes::{
    Accepts, Access, FORM_BODY, Prefix, REGISTRY_BODY, RPC_BODY, Route, Router, UPLOAD_BODY,
    methods_at,
};
pub use routes::{Matched, Resolved, RouteGroup};
#[cfg(test)]
pub(crate) use routes::{Params, captures};
pub(crate) use success::Success;

/// Where a request came from, as the binary that received it knows it (the local
/// server: the peer address; Lambda: API Gateway's `requestContext.http.sourceIp`),
/// put into the request's extensions. The abuse counters key on it (hashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceAddr(pub std::net::IpAddr);

/// The request's source address, when the binary that received it said.
pub(crate) fn source_of<B>(request: &http::Request<B>) -> Option<std::net::IpAddr> {
    request.extensions().get::<SourceAddr>().map(|s| s.0)
}

const ALLOW_HEADERS: &str = "Content-Type, Authorization, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, Last-Event-ID";
/// What a browser page may read of an answer: `Retry-After` so a page can say when to
/// try again after a 429.
const EXPOSE_HEADERS: &str = "MCP-Protocol-Version, WWW-Authenticate, Retry-After";

/// A percent-encoded path segment's value (a client id may be a URL); `+` stays `+`.
pub(crate) fn decode_segment(segment: &str) -> String {
    let encoded = format!("x={}", segment.replace('+', "%2B"));
    form_urlencoded::parse(encoded.as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// Room for a JSON answer's headers (its type and the CORS ones) without regrowing.
const ANSWER_HEADERS: usize = 12;

pub(crate) fn json(status: StatusCode, body: &Value) -> Response<Bytes> {
    // Written straight into bytes (`Value`'s `Display` goes through a formatter).
    json_bytes(
        status,
        Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
    )
}

/// A complete `text/event-stream` body: each message one `data:` line.
pub(crate) fn event_stream(notifications: &[Value], response: &Value) -> Response<Bytes> {
    let mut body = String::new();
    for message in notifications.iter().chain(std::iter::once(response)) {
        body.push_str("event: message\ndata: ");
        body.push_str(&serde_json::to_string(message).unwrap_or_default());
        body.push_str("\n\n");
    }
    let mut out = Response::new(Bytes::from(body));
    let headers = out.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    out
}

/// A JSON body that is already serialised.
pub(crate) fn json_bytes(status: StatusCode, body: Bytes) -> Response<Bytes> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = http::HeaderMap::with_capacity(ANSWER_HEADERS);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(crate) fn empty(status: StatusCode) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = status;
    response
}

/// Adds CORS headers for an allowed browser origin (`*` when there is none to echo), and
/// the request headers a preflight may send.
pub(crate) fn add_cors(
    response: &mut Response<Bytes>,
    allowed_origin: Option<CorsOrigin<'_>>,
    methods: &'static str,
    request: &http::HeaderMap,
) {
    let headers = response.headers_mut();
    let origin = match allowed_origin {
        Some(CorsOrigin::Echo(origin)) => HeaderValue::from_str(origin).ok(),
        Some(CorsOrigin::Any) => Some(HeaderValue::from_static("*")),
        None => None,
    };
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        origin.unwrap_or(HeaderValue::from_static("*")),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(methods),
    );
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers(request));
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
}

/// The longest `Access-Control-Request-Headers` read for `Mcp-Param-*` names.
const REQUEST_HEADERS_CAP: usize = 4096;
const PARAM_PREFIX: &str = "mcp-param-";

/// [`ALLOW_HEADERS`], plus the `Mcp-Param-*` headers a preflight asks for (a tool's
/// `x-mcp-header` parameters: their names cannot be listed in advance, and a wildcard
/// never covers `Authorization`).
fn allow_headers(request: &http::HeaderMap) -> HeaderValue {
    let asked = request
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= REQUEST_HEADERS_CAP)
        .unwrap_or_default();
    let params: Vec<&str> = asked
        .split(',')
        .map(str::trim)
        .filter(|name| {
            name.len() > PARAM_PREFIX.len()
                && name
                    .get(..PARAM_PREFIX.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(PARAM_PREFIX))
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .collect();
    if params.is_empty() {
        return HeaderValue::from_static(ALLOW_HEADERS);
    }
    HeaderValue::from_str(&format!("{ALLOW_HEADERS}, {}", params.join(", ")))
        .unwrap_or(HeaderValue::from_static(ALLOW_HEADERS))
}

/// The cookie of a person's console session (its session token): set by the console,
/// read by the console and by the OAuth consent page (no second password in a browser
/// already signed in).
pub(crate) const SESSION_COOKIE: &str = "mirobody_session";

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(value: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            HeaderValue::from_str(value).unwrap(),
        );
        headers
    }

    #[test]
    fn a_preflight_may_send_the_mcp_param_headers_it_asks_for_and_nothing_else() {
        let allowed = allow_headers(&asking(
            "authorization, Mcp-Param-Region, mcp-param-, x-evil, mcp-param-a b, mcp-param-ok_2",
        ));
        let allowed = allowed.to_str().unwrap();
        assert!(allowed.starts_with(ALLOW_HEADERS), "{allowed}");
        let extra: Vec<&str> = allowed[ALLOW_HEADERS.len()..]
            .split(", ")
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(extra, ["Mcp-Param-Region", "mcp-param-ok_2"]);
        assert_eq!(allow_headers(&http::HeaderMap::new()), ALLOW_HEADERS);
        let long = format!("mcp-param-{}", "a".repeat(REQUEST_HEADERS_CAP));
        assert_eq!(allow_headers(&asking(&long)), ALLOW_HEADERS);
    }
}
