//! Every sample event in `events/` (what `cargo lambda invoke --data-file` sends)
//! deserialises through `lambda_http` as an API Gateway HTTP API event, converts
//! through `lambda-glue`, and gets the answer its route should give from the app of
//! the function its name starts with (F2), here without keys or AWS. The same events
//! through the real binaries and a Runtime API: `lambda_runtime.rs`.

use bytes::Bytes;
use std::sync::Arc;

use e2e::{TempDir, sample_events};
use mirobody::store::{EmbeddedStore, LocalObjects};
use mirobody::{App, Config, RouteGroup, Runtime, Services};

fn expected_status(name: &str) -> u16 {
    match name {
        "mcp-get" | "mcp-secret-get" => 405,
        // A URL secret nobody minted (or one revoked or expired) is refused.
        "mcp-secret-post-tools-list" => 404,
        // Without keys no bearer token verifies, and accounts and OAuth are switched off
        // (browsers' preflights still pass).
        "personal-post" | "personal-delete" | "oauth-shares-post" | "oauth-shares-delete" => 401,
        n if n.starts_with("personal-user-mcp") || n.starts_with("personal-mcp-server") => 401,
        n if n.starts_with("data-") => 401,
        // The form's Origin is the sample API's, not this app's (no MCP_PUBLIC_URL
        // here): refused at the door, before the console.
        "console-signin-post" => 403,
        // Without keys there are no accounts: the console's pages answer 503.
        n if n.starts_with("console-") => 503,
        "oauth-check-state" => 404,
        n if n.starts_with("oauth-") && n.ends_with("-options") => 200,
        n if n.starts_with("oauth-") => 503,
        _ => 200,
    }
}

fn group_of(name: &str) -> RouteGroup {
    match name.split('-').next() {
        Some("mcp") => RouteGroup::Mcp,
        Some("personal") => RouteGroup::Personal,
        Some("oauth") => RouteGroup::Oauth,
        Some("data") => RouteGroup::Data,
        Some("console") => RouteGroup::Console,
        _ => panic!(
            "events/{name}.json: its name must start with a function (mcp, personal, oauth, data, console)"
        ),
    }
}

#[tokio::test]
async fn every_sample_event_is_served_by_its_function() {
    let dir = TempDir::new("events");
    let store = Arc::new(EmbeddedStore::open(dir.0.join("db.sqlite3")).unwrap());
    let app = |group| {
        let config = Config::from_vars(Runtime::Lambda, Vec::new()).unwrap();
        let services = Services {
            mail: None,
            store: store.clone(),
            keys: None,
            clock: Arc::new(mirobody::clock::SystemClock),
            objects: Arc::new(
                LocalObjects::open(dir.0.join("uploads"), &config.public_origin()).unwrap(),
            ),
        };
        App::new(config, group, services).unwrap()
    };
    let apps: Vec<(RouteGroup, App)> = [
        RouteGroup::Mcp,
        RouteGroup::Personal,
        RouteGroup::Oauth,
        RouteGroup::Data,
        RouteGroup::Console,
    ]
    .into_iter()
    .map(|g| (g, app(g)))
    .collect();
    let samples = sample_events();
    assert!(samples.len() >= 5, "sample events went missing");
    for (name, raw) in &samples {
        let group = group_of(name);
        let app = &apps.iter().find(|(g, _)| *g == group).unwrap().1;
        let event = lambda_http::request::from_str(raw)
            .unwrap_or_else(|e| panic!("{name}: lambda_http cannot read it: {e}"));
        let request: http::Request<Bytes> = lambda_glue::from_lambda(event);
        let response = lambda_glue::to_lambda(app.handle(request).await);
        assert_eq!(response.status().as_u16(), expected_status(name), "{name}");
        if name.starts_with("mcp-post") && expected_status(name) == 200 {
            let lambda_http::Body::Text(text) = response.body() else {
                panic!("{name}: no text body");
            };
            let body: serde_json::Value = serde_json::from_str(text).unwrap();
            assert!(body.get("result").is_some(), "{name}: {body}");
        }
    }
}
