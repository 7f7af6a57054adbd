//! Deleting deletes, even during an import. A large CSV is uploaded
//! through the two-step flow; once its second pass is writing, the person deletes their
//! data (`DELETE /api/data`) or their account (`DELETE /api/user`). Afterwards nothing of
//! the user is in the store: no reading, no rollup or catalogue entry, no presence, no
//! upload file, read back from the store itself (the embedded file, or DynamoDB on
//! moto), not only through the API. Without the import's guarded writes the import goes
//! on writing chunk after chunk under the deleted user id. Finding 4: an import killed
//! mid-way is failed and leaves the store consistent. Finding 6: a PUT that completes
//! after the account's deletion leaves no file either.

use std::path::Path;
use std::time::{Duration, Instant};

use e2e::{Server, bearer, bearer_json, post_json, rpc, send};
use mirobody::store::{
    DynamoStore, DynamoTables, EMBEDDED_FILE, EmbeddedStore, HealthStore, OBJECTS_DIR,
    ReadingQuery, Store,
};
use mirobody::testing::Moto;
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery staple";

/// Heart rate every minute from 2025-01-01: `rows` rows, enough for many chunks.
fn big_csv(rows: usize) -> String {
    let mut csv = String::from("indicator,value,unit,time,source\n");
    let start = chrono::NaiveDate::from_ymd_opt(2025, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    for i in 0..rows {
        let time = start + chrono::Duration::minutes(i as i64);
        let value = 60 + i % 40;
        csv += &format!(
            "Heart rate,{value},bpm,{},Watch\n",
            time.format("%Y-%m-%dT%H:%M:%S")
        );
    }
    csv
}

/// A new account: its user id and a session token.
async fn sign_up(server: &Server, email: &str) -> (String, String) {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let data = reply.json()["data"].clone();
    (
        data["user_id"].as_str().unwrap().to_string(),
        data["token"].as_str().unwrap().to_string(),
    )
}

/// Creates the upload, PUTs the file and waits until its import is writing (the second
/// pass has written at least one chunk). Answers the upload's status path.
async fn importing(server: &Server, token: &str, csv: String) -> String {
    let created = json!({ "kind": "health", "filename": "year.csv" });
    let created = bearer_json(server, "POST", "/api/data/uploads", token, Some(created)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let data = created.json()["data"].clone();
    let stored = send("PUT", data["upload_url"].as_str().unwrap(), &[], Some(csv)).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    let path = format!("/api/data/uploads/{}", data["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let reply = send("GET", &server.url(&path), &bearer(token), None).await;
        let record = reply.json()["data"].clone();
        assert_ne!(
            record["status"], "done",
            "the import ended before the deletion: {record}"
        );
        assert_ne!(record["status"], "failed", "{record}");
        if record["rows_written"].as_u64().unwrap_or(0) > 0 {
            return path;
        }
        assert!(Instant::now() < deadline, "never writing: {record}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until no upload file is left in the local objects directory (the stopped import
/// removes its own), at most a minute.
async fn no_upload_files(data: &Path) {
    let dir = data.join(OBJECTS_DIR);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().is_file() && e.file_name() != "signing.key")
                    .collect()
            })
            .unwrap_or_default();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "upload files left: {left:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Nothing of `user` in the store: readings, catalogue (rollups' summary), presence.
async fn nothing_of(store: &dyn Store, user: &str) {
    let readings = store
        .readings(user, &ReadingQuery::default())
        .await
        .unwrap();
    assert!(readings.is_empty(), "{} readings left", readings.len());
    let catalogue = store.catalogue(user).await.unwrap();
    assert!(
        catalogue.is_empty(),
        "{} catalogue entries left",
        catalogue.len()
    );
    let presence = store.data_presence(user).await.unwrap();
    assert!(!presence.health && !presence.genotype, "{presence:?}");
    let days = store
        .rollups(user, "heart rate", mirobody::store::Period::Day, "", "~")
        .await
        .unwrap();
    assert!(days.is_empty(), "{} day rollups left", days.len());
}

/// The catalogue `query_health_indicators` answers the user.
async fn catalogue(server: &Server, token: &str) -> Value {
    let params = json!({ "name": "query_health_indicators", "arguments": {} });
    let reply = rpc(&server.url("/mcp"), Some(token), "tools/call", params).await;
    let text = reply.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// Both deletions, each during a running import, on one server; `store` reads the
/// server's own store.
async fn deletions_during_imports(server: &Server, store: &dyn Store, rows: usize) {
    // 1. The data: the import stops, its upload record is gone, nothing is left.
    let (alice, token) = sign_up(server, "alice@example.com").await;
    let upload = importing(server, &token, big_csv(rows)).await;
    let deleted = send("DELETE", &server.url("/api/data"), &bearer(&token), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    no_upload_files(server.data_dir()).await;
    let gone = send("GET", &server.url(&upload), &bearer(&token), None).await;
    assert_eq!(gone.status, 404, "{}", gone.body);
    // What the import might still write lands within a chunk: look twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    nothing_of(store, &alice).await;
    let summary = send("GET", &server.url("/api/data"), &bearer(&token), None).await;
    assert_eq!(
        summary.json()["data"],
        json!({ "health": false, "genotype": false })
    );
    let answer = catalogue(server, &token).await;
    assert!(!answer.to_string().contains("Heart rate"), "{answer}");

    // 2. The account: deleted during an import of its own, nothing is left either.
    let (bob, token) = sign_up(server, "bob@example.com").await;
    importing(server, &token, big_csv(rows)).await;
    let confirm = json!({ "password": PASSWORD });
    let deleted = bearer_json(server, "DELETE", "/api/user", &token, Some(confirm)).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    no_upload_files(server.data_dir()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    nothing_of(store, &bob).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_during_an_import_leaves_nothing_on_the_embedded_store() {
    let server = Server::start(&[]);
    let store = EmbeddedStore::open(server.data_dir().join(EMBEDDED_FILE)).unwrap();
    // 150,000 rows: 30 chunks, seconds of writing on the embedded store.
    deletions_during_imports(&server, &store, 150_000).await;
}

/// Tables in `moto` for one test, and the settings that point the local server at them.
async fn dynamodb(moto: &Moto, name: &str) -> (DynamoStore, Vec<(String, String)>) {
    let config = crate::runtime_api::sdk_config(moto).await;
    let tables = DynamoTables {
        keys: format!("{name}-keys"),
        data: format!("{name}-data"),
    };
    let client = aws_sdk_dynamodb::Client::new(&config);
    DynamoStore::create_tables(&client, &tables)
        .await
        .expect("tables created in moto");
    let settings = vec![
        ("MIROBODY_STORE".into(), "dynamodb".into()),
        ("MIROBODY_KEYS_TABLE".into(), tables.keys.clone()),
        ("MIROBODY_DATA_TABLE".into(), tables.data.clone()),
        ("AWS_ENDPOINT_URL_DYNAMODB".into(), moto.endpoint.clone()),
    ];
    (DynamoStore::new(client, tables), settings)
}

fn pairs(settings: &[(String, String)]) -> Vec<(&str, &str)> {
    settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_during_an_import_leaves_nothing_on_dynamodb() {
    let moto = Moto::start();
    let (store, settings) = dynamodb(&moto, "deletion").await;
    let server = Server::start(&pairs(&settings));
    // 30,000 rows: 6 chunks (moto writes slowly; enough for the deletion to land mid-way).
    deletions_during_imports(&server, &store, 30_000).await;
    drop(moto);
}

/// An import killed mid-way (the process SIGKILLed while its
/// second pass writes, as a crash or the import function's timeout does) is failed
/// within the stall time (`MIROBODY_IMPORT_STALL_SECS`, 10 s here) instead of importing
/// for ever, and leaves the store consistent: the catalogue's count, through the store
/// and through `query_health_indicators`, is the number of readings stored, and the
/// months add up to it. Uploading the same file again completes it: 30,000 readings,
/// none twice, each counted new or already there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_import_is_failed_and_leaves_the_store_consistent_on_dynamodb() {
    const ROWS: usize = 30_000;
    let moto = Moto::start();
    let (store, mut settings) = dynamodb(&moto, "killed").await;
    settings.push(("MIROBODY_IMPORT_STALL_SECS".into(), "10".into()));
    let mut server = Server::start(&pairs(&settings));
    let (user, token) = sign_up(&server, "kim@example.com").await;
    let upload = importing(&server, &token, big_csv(ROWS)).await;
    server.kill_and_restart();
    let killed = Instant::now();

    // Within the stall time it is still importing; then it is failed, saying why.
    let reply = send("GET", &server.url(&upload), &bearer(&token), None).await;
    assert_eq!(
        reply.json()["data"]["status"],
        "importing",
        "{}",
        reply.body
    );
    let failed = loop {
        let reply = send("GET", &server.url(&upload), &bearer(&token), None).await;
        let record = reply.json()["data"].clone();
        if record["status"] != "importing" {
            break record;
        }
        assert!(killed.elapsed() < Duration::from_secs(60), "{record}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(killed.elapsed() >= Duration::from_secs(9), "{failed}");
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("the import stopped"), "{failed}");
    no_upload_files(server.data_dir()).await;

    // Consistent: what the catalogue and the months count is what is stored.
    let stored = store
        .readings(&user, &ReadingQuery::default())
        .await
        .unwrap()
        .len() as u64;
    assert!(
        0 < stored && stored < ROWS as u64,
        "{stored} readings stored"
    );
    let entries = store.catalogue(&user).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].summary.count, stored);
    let months = store
        .rollups(&user, "heart rate", mirobody::store::Period::Month, "", "~")
        .await
        .unwrap();
    assert_eq!(months.iter().map(|m| m.count).sum::<u64>(), stored);
    // The catalogue's columns are name|code|kind|unit|latest|latest_date|count|…
    let answer = catalogue(&server, &token).await;
    let row = answer["rows"][0].as_str().unwrap_or_default().to_string();
    assert_eq!(
        row.split('|').nth(6),
        Some(stored.to_string().as_str()),
        "{answer}"
    );

    // The same file again completes it, none twice.
    let upload = importing(&server, &token, big_csv(ROWS)).await;
    let done = loop {
        let record = send("GET", &server.url(&upload), &bearer(&token), None)
            .await
            .json()["data"]
            .clone();
        if record["status"] != "importing" {
            break record;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_written"], ROWS, "{done}");
    let counts = &done["readings"];
    assert_eq!(
        counts["new"].as_u64().unwrap(),
        ROWS as u64 - stored,
        "{done}"
    );
    assert_eq!(counts["already_there"].as_u64().unwrap(), stored, "{done}");
    let entries = store.catalogue(&user).await.unwrap();
    assert_eq!(entries[0].summary.count, ROWS as u64);
    drop(moto);
}

/// A PUT that completes after its account was deleted leaves no
/// file. The body is sent in two halves over a raw connection; between them the person
/// deletes their account. The server stores the completed file (the URL was valid when
/// the PUT began), and its import, finding no upload that owns it, deletes it. Without
/// that the file stayed in the objects directory, and nothing would ever remove it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_completing_after_the_account_is_deleted_leaves_no_file() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = Server::start(&[]);
    let (_, token) = sign_up(&server, "carol@example.com").await;
    let created = json!({ "kind": "health", "filename": "late.csv" });
    let created = bearer_json(&server, "POST", "/api/data/uploads", &token, Some(created)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let url = created.json()["data"]["upload_url"]
        .as_str()
        .unwrap()
        .to_string();
    let rest = url.strip_prefix("http://").expect("a local http URL");
    let (authority, target) = rest.split_at(rest.find('/').unwrap());
    let body = big_csv(2_000).into_bytes();
    let (first, second) = body.split_at(body.len() / 2);

    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let head = format!(
        "PUT {target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(first).await.unwrap();
    stream.flush().await.unwrap();
    // The server is receiving the body: its partial file is there.
    let partial = server.data_dir().join(OBJECTS_DIR);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_dir(&partial)
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().contains("partial"))
        })
        .unwrap_or(false)
    {
        assert!(Instant::now() < deadline, "the PUT never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let confirm = json!({ "password": PASSWORD });
    let deleted = bearer_json(&server, "DELETE", "/api/user", &token, Some(confirm)).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);

    stream.write_all(second).await.unwrap();
    stream.flush().await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    no_upload_files(server.data_dir()).await;
}
