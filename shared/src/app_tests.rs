//! `App::handle` without a socket: which answers carry CORS headers, and the door's
//! refusals, as the route table's access column decides them.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use serde_json::{Value, json};

use super::*;
use crate::clock::FakeClock;
use crate::config::Runtime;
use crate::identity::Keys;
use crate::store::{EmbeddedStore, LocalObjects};

const PAGE: &str = "http://localhost:18060";

/// An app over a fresh embedded store; the directory goes when the app does.
struct Fixture {
    app: App,
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::ops::Deref for Fixture {
    type Target = App;
    fn deref(&self) -> &App {
        &self.app
    }
}

fn app(keys: bool) -> Fixture {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("mirobody-app-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.join("db.sqlite3")).unwrap());
    let vars = [("MIROBODY_DATA_DIR".to_string(), dir.display().to_string())];
    let config = Config::from_vars(Runtime::Local, vars).unwrap();
    let services = Services {
        mail: None,
        store,
        keys: keys.then_some(Keys {
            jwt: [1; 32],
            seal: [2; 32],
        }),
        clock: Arc::new(FakeClock::at(1_800_000_000)),
        objects: Arc::new(
            LocalObjects::open(dir.join("uploads"), &config.public_origin()).unwrap(),
        ),
    };
    let app = App::new(config, RouteGroup::All, services).unwrap();
    Fixture { app, dir }
}

async fn send(app: &App, method: &str, path: &str, headers: &[(&str, &str)]) -> Response<Bytes> {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    app.handle(request.body(Bytes::new()).unwrap()).await
}

fn header<'r>(response: &'r Response<Bytes>, name: &str) -> Option<&'r str> {
    response.headers().get(name).map(|v| v.to_str().unwrap())
}

fn body(response: &Response<Bytes>) -> Value {
    serde_json::from_slice(response.body()).unwrap()
}

#[tokio::test]
async fn no_route_and_a_known_path_with_another_method_are_404_without_cors() {
    let app = app(true);
    for (method, path) in [
        ("GET", "/nowhere"),
        ("PUT", "/mcp"),
        ("GET", "/api/data/health"),
    ] {
        let response = send(&app, method, path, &[("origin", PAGE)]).await;
        assert_eq!(response.status(), 404, "{method} {path}");
        assert_eq!(body(&response), json!({"error": "not found"}));
        assert_eq!(header(&response, "access-control-allow-origin"), None);
    }
}

#[tokio::test]
async fn a_foreign_origin_is_a_json_rpc_403_without_cors_except_on_open_routes() {
    let app = app(true);
    let foreign = [("origin", "https://evil.example")];
    for path in ["/mcp", "/api/data", "/oauth/authorize"] {
        let response = send(&app, "GET", path, &foreign).await;
        assert_eq!(response.status(), 403, "{path}");
        assert_eq!(
            body(&response),
            json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Forbidden: Origin or Host not allowed"}})
        );
        assert_eq!(header(&response, "access-control-allow-origin"), None);
    }
    let open = send(
        &app,
        "GET",
        "/.well-known/oauth-authorization-server",
        &foreign,
    )
    .await;
    assert_eq!(open.status(), 200);
    assert_eq!(header(&open, "access-control-allow-origin"), Some("*"));
    assert_eq!(
        header(&open, "access-control-allow-methods"),
        Some("GET, POST, OPTIONS")
    );
}

#[tokio::test]
async fn same_origin_answers_echo_an_allowed_origin() {
    let app = app(true);
    let placeholder = send(&app, "GET", "/mcp", &[("origin", PAGE)]).await;
    assert_eq!(placeholder.status(), 405);
    assert_eq!(header(&placeholder, "allow"), Some("POST, OPTIONS"));
    assert_eq!(body(&placeholder)["error"]["code"], -32000);
    assert_eq!(
        header(&placeholder, "access-control-allow-origin"),
        Some(PAGE)
    );
    assert_eq!(
        header(&placeholder, "access-control-allow-methods"),
        Some("GET, POST, DELETE, OPTIONS")
    );
    // A handler's refusal is an answer like any other.
    let poll = send(
        &app,
        "GET",
        "/oauth2/check_state/nope?poll_secret=guess",
        &[("origin", PAGE)],
    )
    .await;
    assert_eq!(poll.status(), 404);
    assert_eq!(header(&poll, "access-control-allow-origin"), Some(PAGE));
}

#[tokio::test]
async fn signed_in_routes_turn_away_a_missing_or_invalid_token_at_the_door() {
    let app = app(true);
    for token in [None, Some("Bearer nope")] {
        let mut headers = vec![("origin", PAGE)];
        headers.extend(token.map(|t| ("authorization", t)));
        let response = send(&app, "GET", "/api/data", &headers).await;
        assert_eq!(response.status(), 401);
        assert!(
            header(&response, "www-authenticate")
                .unwrap()
                .contains("invalid_token")
        );
        assert_eq!(header(&response, "access-control-allow-origin"), None);
    }
}

#[tokio::test]
async fn without_keys_oauth_is_turned_away_but_accounts_answer_with_cors() {
    let app = app(false);
    let metadata = send(&app, "GET", "/.well-known/oauth-authorization-server", &[]).await;
    assert_eq!(metadata.status(), 503);
    assert_eq!(header(&metadata, "access-control-allow-origin"), None);
    let preflight = send(&app, "OPTIONS", "/oauth/token", &[]).await;
    assert_eq!(preflight.status(), 200);
    assert_eq!(header(&preflight, "access-control-allow-origin"), Some("*"));
    let sign_up = send(&app, "POST", "/auth/signup", &[("origin", PAGE)]).await;
    assert_eq!(sign_up.status(), 503);
    assert_eq!(header(&sign_up, "access-control-allow-origin"), Some(PAGE));
    // A page can read when to try again after a 429.
    assert!(
        header(&sign_up, "access-control-expose-headers")
            .is_some_and(|h| h.contains("Retry-After"))
    );
}

/// A request whose handling panicked answers 500 in its endpoint's form.
#[test]
fn a_panicked_request_answers_500_in_its_endpoints_form() {
    let row = |method: &str, path: &str| {
        ROUTES
            .iter()
            .find(|r| r.method == method && r.path == path)
            .unwrap()
    };
    let mcp = panicked(row("POST", "/mcp"));
    assert_eq!(mcp.status(), 500);
    let body: Value = serde_json::from_slice(mcp.body()).unwrap();
    assert_eq!(body["error"]["message"], "Internal error", "{body}");
    let rest = panicked(row("POST", "/api/data/health"));
    assert_eq!(rest.status(), 500);
    let body: Value = serde_json::from_slice(rest.body()).unwrap();
    assert_eq!(body["code"], 500, "{body}");
}
