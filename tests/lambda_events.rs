//! Every sample event in `events/` (what `cargo lambda invoke --data-file` sends)
//! deserialises through `lambda_http` as an API Gateway HTTP API event, converts
//! through `lambda-glue`, and gets the answer its route should give from the `mcp`
//! function's app (F2).

use bytes::Bytes;
use std::sync::Arc;

use e2e::{TempDir, root};
use mirobody::store::EmbeddedStore;
use mirobody::{App, Config, RouteGroup, Runtime, Services};

fn expected_status(name: &str) -> u16 {
    match name {
        "mcp-get" => 405,
        // A URL secret nobody minted (or one revoked or expired) is refused.
        "mcp-secret-post-tools-list" => 404,
        _ => 200,
    }
}

#[tokio::test]
async fn every_sample_event_is_served_by_the_mcp_function() {
    let config = Config::from_vars(Runtime::Lambda, Vec::new()).unwrap();
    let dir = TempDir::new("events");
    let store = Arc::new(EmbeddedStore::open(dir.0.join("db.sqlite3")).unwrap());
    let services = Services {
        store,
        keys: None,
        clock: Arc::new(mirobody::clock::SystemClock),
    };
    let app = App::new(config, RouteGroup::Mcp, services).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(root().join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "sample events went missing");
    for file in files
        .iter()
        .filter(|f| f.file_name().unwrap().to_string_lossy().starts_with("mcp"))
    {
        let name = file.file_stem().unwrap().to_string_lossy().to_string();
        let raw = std::fs::read_to_string(file).unwrap();
        let event = lambda_http::request::from_str(&raw)
            .unwrap_or_else(|e| panic!("{name}: lambda_http cannot read it: {e}"));
        let request: http::Request<Bytes> = lambda_glue::from_lambda(event);
        let response = lambda_glue::to_lambda(app.handle(request).await);
        assert_eq!(response.status().as_u16(), expected_status(&name), "{name}");
        if let lambda_http::Body::Text(text) = response.body() {
            let body: serde_json::Value = serde_json::from_str(text).unwrap();
            if name.contains("post") && expected_status(&name) == 200 {
                assert!(body.get("result").is_some(), "{name}: {body}");
            }
        }
    }
}
