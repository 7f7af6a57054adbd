//! Each function binary (`target/debug/{mcp,personal,oauth,data,import}`) run the way
//! Lambda runs it (F1, F2): a local Runtime API on loopback hands it the `events/`
//! samples through `GET /2018-06-01/runtime/invocation/next` and takes its answers from
//! `POST …/invocation/{id}/response`, with DynamoDB, Secrets Manager and S3 from a moto
//! server this test starts on loopback. Nothing leaves the machine: dummy credentials,
//! no instance metadata, every endpoint a loopback address.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::runtime_api::{
    Function, INVOKE_TIMEOUT, Outcome, PUBLIC_URL, deployment, event, import_deployment, sdk_config,
};
use e2e::{listed_tools, root, sample_events};
use mirobody::domain::{UploadKind, UploadRecord, UploadStatus};
use mirobody::store::{DynamoStore, DynamoTables, HealthStore, UploadStore};
use mirobody::testing::Moto;
use serde_json::{Value, json};

const FUNCTIONS: [&str; 5] = ["mcp", "personal", "oauth", "data", "console"];

/// The function that serves an event: its file name's first word.
fn function_of(name: &str) -> &str {
    let group = name.split('-').next().unwrap_or_default();
    assert!(
        FUNCTIONS.contains(&group),
        "events/{name}.json: no function {group}"
    );
    group
}

/// The status each sample gets as written, from a fresh deployment, in name order
/// (`oauth-signin` runs before `oauth-signup`, so it finds no account yet).
fn expected_as_written(name: &str) -> u16 {
    match name {
        "mcp-get" | "mcp-secret-get" => 405,
        // A URL secret nobody minted.
        "mcp-secret-post-tools-list" => 404,
        // SAMPLE_TOKEN is not a token of this deployment.
        "personal-post" | "personal-delete" | "oauth-shares-post" | "oauth-shares-delete" => 401,
        n if n.starts_with("personal-user-mcp") || n.starts_with("personal-mcp-server") => 401,
        n if n.starts_with("data-") => 401,
        "oauth-signin" => 401,
        "oauth-signup" | "oauth-register" => 201,
        "oauth-check-state" => 404,
        // SAMPLE_CLIENT is not a registered client.
        "oauth-authorize-get"
        | "oauth-authorize-post"
        | "oauth-oauth2-authorize-get"
        | "oauth-oauth2-authorize-post" => 400,
        "oauth-token" => 401,
        // Introspection needs a confidential client's authentication.
        "oauth-introspect" => 401,
        // A sign-in form posted without the page's CSRF token.
        "oauth-mcplogin-post" => 403,
        // The page of a login state nobody made (the page reads
        // the state to say who asked; it used to show the form for any state).
        "oauth-mcplogin-get" => 410,
        // The console: SAMPLE_TOKEN is no session, so a page sends the
        // browser to sign in; a sign-in form posted without its CSRF token is refused.
        "console-data-get" => 303,
        "console-signin-post" => 403,
        _ => 200,
    }
}

/// The modern `tools/call` of a tool that needs the caller, from the tools/list sample.
fn anonymous_tool_call() -> String {
    let mut e: Value = serde_json::from_str(&event("mcp-post-tools-list")).unwrap();
    let mut body: Value = serde_json::from_str(e["body"].as_str().unwrap()).unwrap();
    body["method"] = json!("tools/call");
    body["params"]["name"] = json!("query_health_indicators");
    body["params"]["arguments"] = json!({ "keywords": ["HbA1c"] });
    e["body"] = json!(body.to_string());
    e["headers"]["mcp-method"] = json!("tools/call");
    e["headers"]["mcp-name"] = json!("query_health_indicators");
    e.to_string()
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn every_function_serves_its_sample_events_through_the_runtime_api() {
    let moto = Moto::start();
    let settings = deployment(&moto).await;
    let mut functions = HashMap::new();
    for name in FUNCTIONS {
        functions.insert(name, Function::start(name, &settings).await);
    }
    for name in FUNCTIONS {
        let init = functions[name].ready().await;
        eprintln!(
            "{name}: first poll for an event {} ms after start",
            init.as_millis()
        );
    }

    // Every sample as written.
    let samples = sample_events();
    for group in FUNCTIONS {
        assert!(
            samples.iter().any(|(n, _)| function_of(n) == group),
            "events/ has no sample for the {group} function"
        );
    }
    for (name, raw) in &samples {
        let answer = functions[function_of(name)].invoke(raw).await;
        assert_eq!(
            answer.status,
            expected_as_written(name),
            "{name}: {}",
            answer.body
        );
        if name.ends_with("options") {
            // A preflight passes: the page's origin comes back (loopback pages are
            // allowed), or `*` where no origin was sent and on the public OAuth endpoints.
            let sent: Value = serde_json::from_str(raw).unwrap();
            let origin = sent["headers"]["origin"].as_str().unwrap_or("*");
            let allowed = answer.header("access-control-allow-origin");
            assert!(
                allowed == Some(origin) || (name.starts_with("oauth-") && allowed == Some("*")),
                "{name}: preflight answered with {allowed:?}"
            );
        }
        if name.starts_with("mcp-post") {
            assert!(
                answer.json()["result"].is_object(),
                "{name}: {}",
                answer.body
            );
        }
    }

    // The samples again, signed in: the deployment's routes end to end.
    let signed_in = functions["oauth"].invoke(&event("oauth-signin")).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    let token = signed_in.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let with_token = |name: &str| event(name).replace("SAMPLE_TOKEN", &token);

    let health = functions["data"]
        .invoke(&with_token("data-post-health"))
        .await;
    assert_eq!(health.status, 200, "{}", health.body);
    assert_eq!(health.json()["data"]["written"], 2);
    let genotypes = functions["data"]
        .invoke(&with_token("data-post-genotype"))
        .await;
    assert_eq!(genotypes.status, 200, "{}", genotypes.body);
    assert_eq!(genotypes.json()["data"]["written"], 3);
    let summary = functions["data"].invoke(&with_token("data-get")).await;
    assert_eq!(
        summary.json()["data"],
        json!({"health": true, "genotype": true})
    );

    let personal = functions["personal"]
        .invoke(&with_token("personal-post"))
        .await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    let url = personal.json()["data"]["url"]
        .as_str()
        .expect("a URL")
        .to_string();
    let secret = url
        .strip_prefix(&format!("{PUBLIC_URL}/mcp/"))
        .unwrap_or_else(|| panic!("a personal URL under MCP_PUBLIC_URL: {url}"))
        .to_string();
    let by_secret = event("mcp-secret-post-tools-list").replace("SAMPLE_SECRET", &secret);
    let listed = functions["mcp"].invoke(&by_secret).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let names = listed_tools(&listed.json());
    assert!(
        names.contains(&"query_health_indicators".to_string())
            && names.contains(&"get_genetic_data".to_string()),
        "gating sees the uploaded data through the personal URL: {names:?}"
    );

    // The console function takes the session token as its cookie: the
    // signed-in page, framed by nobody.
    let page = functions["console"]
        .invoke(&with_token("console-data-get"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<html"), "{}", page.body);
    assert_eq!(page.header("x-frame-options"), Some("DENY"));

    // No account named by the grantee: the e-mail lookup ran, and the answer is the
    // same as for an existing account (this used to assert 404).
    let share = functions["oauth"]
        .invoke(&with_token("oauth-shares-post"))
        .await;
    assert_eq!(share.status, 200, "{}", share.body);
    assert_eq!(share.json()["data"]["grantee"], "friend@example.com");

    // An anonymous call to a tool that needs the caller: the login prompt's state is
    // written by the mcp function and polled through the oauth function.
    let prompt = functions["mcp"].invoke(&anonymous_tool_call()).await;
    assert_eq!(prompt.status, 200, "{}", prompt.body);
    let text = prompt.json()["result"]["content"][0]["text"]
        .as_str()
        .expect("a text result")
        .to_string();
    let prompt: Value = serde_json::from_str(&text).expect("the prompt is JSON");
    let state = prompt["auto_polling"]["state"].as_str().expect("a state");
    let poll_secret = prompt["auto_polling"]["poll_secret"]
        .as_str()
        .expect("a poll secret");
    assert!(
        prompt["authorization_url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{PUBLIC_URL}/mcplogin?"))),
        "{prompt}"
    );
    let poll = functions["oauth"]
        .invoke(
            &event("oauth-check-state")
                .replace("SAMPLE_STATE", state)
                .replace("SAMPLE_POLL_SECRET", poll_secret),
        )
        .await;
    assert_eq!(poll.status, 200, "{}", poll.body);
    assert_eq!(poll.json()["status"], "pending");

    // The OAuth server (C1-C4) on DynamoDB: one metadata document at three paths, a
    // registered client's sign-in page, a code that was never issued, introspection.
    let metadata: Vec<String> = [
        "oauth-metadata",
        "oauth-metadata-mcp",
        "oauth-mcp-configuration",
    ]
    .iter()
    .map(|name| event(name))
    .collect();
    let mut documents = Vec::new();
    for raw in &metadata {
        documents.push(functions["oauth"].invoke(raw).await.body);
    }
    assert!(
        documents.iter().all(|d| d == &documents[0]),
        "C1: byte-identical"
    );
    let resource = functions["oauth"]
        .invoke(&event("oauth-resource-metadata-mcp"))
        .await;
    assert_eq!(resource.json()["resource"], format!("{PUBLIC_URL}/mcp"));
    let registered = functions["oauth"].invoke(&event("oauth-register")).await;
    let client_id = registered.json()["client_id"]
        .as_str()
        .expect("a client id")
        .to_string();
    let with_client = |name: &str| event(name).replace("SAMPLE_CLIENT", &client_id);
    for page in ["oauth-authorize-get", "oauth-oauth2-authorize-get"] {
        let answer = functions["oauth"].invoke(&with_client(page)).await;
        assert_eq!(answer.status, 200, "{page}: {}", answer.body);
        assert!(answer.body.contains("<form"), "{page}: a sign-in form");
    }
    let exchanged = functions["oauth"].invoke(&with_client("oauth-token")).await;
    assert_eq!(exchanged.status, 400, "{}", exchanged.body);
    assert_eq!(exchanged.json()["error"], "invalid_grant");
    let introspected = functions["oauth"]
        .invoke(&with_token("oauth-introspect"))
        .await;
    // Introspection needs a confidential client's authentication
    // (this used to assert `active: true` for the sample event, which carries none).
    assert_eq!(introspected.status, 401, "{}", introspected.body);
    assert_eq!(introspected.json()["error"], "invalid_client");
    let login_page = functions["oauth"]
        .invoke(&event("oauth-mcplogin-get").replace("SAMPLE_STATE", state))
        .await;
    assert_eq!(login_page.status, 200, "{}", login_page.body);

    let revoked = functions["personal"]
        .invoke(&with_token("personal-delete"))
        .await;
    assert_eq!(revoked.json()["data"]["revoked"], true, "{}", revoked.body);
    assert_eq!(functions["mcp"].invoke(&by_secret).await.status, 404);
    let deleted = functions["data"].invoke(&with_token("data-delete")).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);

    // Logs: one JSON line per request, never a token or a URL secret (B4).
    for (name, function) in &functions {
        let output = function.output();
        assert!(
            !output.contains(&token) && !output.contains(&secret),
            "{name} logged a secret"
        );
        assert!(
            output.contains("\"route\""),
            "{name} logged no request line"
        );
    }
}

#[tokio::test]
async fn a_bad_setting_stops_the_function_before_it_polls_and_names_the_setting() {
    let settings = vec![("HTTP_URI_PREFIX".to_string(), "/a b".to_string())];
    let function = Function::start("mcp", &settings).await;
    let deadline = Instant::now() + INVOKE_TIMEOUT;
    let status = loop {
        if let Some(status) = function.child.lock().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the function kept running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(!status.success());
    assert!(
        function.api.state.first_poll.lock().unwrap().is_none(),
        "it asked for an event"
    );
    let output = function.output();
    assert!(output.contains("HTTP_URI_PREFIX"), "{output}");
}

// ---------------------------------------------------------------- the import function

/// `events/s3/object-created.json` naming one object of one bucket, its key URL-encoded
/// as S3 sends it (a space is `+`).
fn object_created(bucket: &str, key: &str, size: usize) -> String {
    let mut e: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("events/s3/object-created.json"))
            .expect("events/s3/object-created.json"),
    )
    .expect("the sample is JSON");
    let record = &mut e["Records"][0]["s3"];
    record["bucket"]["name"] = json!(bucket);
    record["bucket"]["arn"] = json!(format!("arn:aws:s3:::{bucket}"));
    record["object"]["key"] = json!(key.replace('+', "%2B").replace(' ', "+"));
    record["object"]["size"] = json!(size);
    e.to_string()
}

/// The deployed upload path: a file PUT to a presigned URL of the upload bucket
/// (moto's S3), then S3's ObjectCreated event through the Runtime API to the `import`
/// binary, which imports it as a stream: the upload is done, its rows landed and the
/// file is removed (DynamoDB on moto too).
#[tokio::test]
async fn the_import_function_imports_an_uploaded_object_named_by_an_s3_event() {
    let moto = Moto::start();
    // As in the template: the import function holds no keys.
    let bucket = "mirobody-uploads-123456789012";
    let (settings, s3) = import_deployment(&moto, bucket).await;

    // The upload as `POST /api/data/uploads` records it (its object key is what the S3
    // event names), then the client's side: one PUT of the file to a presigned URL.
    let key = "uploads/upload 7f3a+1";
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&sdk_config(&moto).await),
        DynamoTables {
            keys: "lambda-runtime-keys".into(),
            data: "lambda-runtime-data".into(),
        },
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    store
        .create_upload(&UploadRecord::waiting(
            "7f3a".into(),
            "importer-user".into(),
            UploadKind::Health,
            "cgm.csv".into(),
            key.into(),
            now,
            now + 3600,
        ))
        .await
        .expect("upload recorded");
    let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let content = std::iter::once("indicator,value,unit,time\n".to_string())
        .chain((0..20_000).map(|i| {
            let at = start + chrono::Duration::minutes(5 * i);
            format!(
                "glucose,{},mg/dL,{}\n",
                80 + i % 50,
                at.format("%Y-%m-%dT%H:%M:%S")
            )
        }))
        .collect::<String>();
    let presigned = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .presigned(
            aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(900))
                .expect("a presigning config"),
        )
        .await
        .expect("a presigned PUT");
    let put = e2e::web_client()
        .build()
        .unwrap()
        .put(presigned.uri())
        .body(content.clone())
        .send()
        .await
        .expect("the PUT reaches moto");
    assert!(put.status().is_success(), "{}", put.status());

    let function = Function::start("import", &settings).await;
    let init = function.ready().await;
    eprintln!(
        "import: first poll for an event {} ms after start",
        init.as_millis()
    );

    let answer = match function
        .invoke_raw(&object_created(bucket, key, content.len()))
        .await
    {
        Outcome::Response(bytes) => serde_json::from_slice::<Value>(&bytes).expect("JSON"),
        Outcome::Error(error) => panic!(
            "invocation error {}:\n{}",
            String::from_utf8_lossy(&error),
            function.output()
        ),
    };
    assert_eq!(answer, json!({ "handled": 1, "skipped": 0 }));
    // Imported: the upload is done with every row written, the readings are there, and
    // the file is gone from the bucket.
    let record = store
        .upload("importer-user", "7f3a", now)
        .await
        .expect("store read")
        .expect("the upload");
    assert_eq!(
        record.status,
        UploadStatus::Done,
        "{record:?}\n{}",
        function.output()
    );
    assert_eq!(record.rows_written, 20_000, "{record:?}");
    assert_eq!(record.bytes, content.len() as u64, "{record:?}");
    assert!(store.data_presence("importer-user").await.unwrap().health);
    assert!(
        s3.head_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .is_err(),
        "the imported file is removed"
    );

    // A second delivery of the event after the object is gone: handled, not retried.
    let again = function
        .invoke_raw(&object_created(bucket, key, content.len()))
        .await;
    assert!(
        matches!(&again, Outcome::Response(bytes) if bytes.as_ref() == br#"{"handled":1,"skipped":0}"#),
        "{again:?}"
    );
    let again = store
        .upload("importer-user", "7f3a", now)
        .await
        .expect("store read")
        .expect("the upload");
    assert_eq!(
        (again.status, again.rows_written),
        (UploadStatus::Done, 20_000),
        "imported once"
    );

    // An event that is not ObjectCreated is skipped.
    let removed =
        object_created(bucket, key, 0).replace("ObjectCreated:Put", "ObjectRemoved:Delete");
    let skipped = function.invoke_raw(&removed).await;
    assert!(
        matches!(&skipped, Outcome::Response(bytes) if bytes.as_ref() == br#"{"handled":0,"skipped":1}"#),
        "{skipped:?}"
    );

    // Keys carry upload ids: never logged.
    let output = function.output();
    assert!(!output.contains("7f3a"), "the key was logged:\n{output}");
}

/// Deployed: an object no upload owns (a PUT that completed after
/// its account was deleted, a stray object) and a replayed PUT after its upload's import
/// ended are deleted by the `import` function when S3 reports them, so nothing is left
/// for the bucket's day-long lifecycle rule. Without that both stayed in the bucket.
#[tokio::test]
async fn the_import_function_deletes_objects_no_upload_will_read() {
    let moto = Moto::start();
    let bucket = "mirobody-uploads-210987654321";
    let (settings, s3) = import_deployment(&moto, bucket).await;
    let store = DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&sdk_config(&moto).await),
        DynamoTables {
            keys: "lambda-runtime-keys".into(),
            data: "lambda-runtime-data".into(),
        },
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let key = "uploads/replayed";
    store
        .create_upload(&UploadRecord::waiting(
            "9c1d".into(),
            "replay-user".into(),
            UploadKind::Health,
            "a.csv".into(),
            key.into(),
            now,
            now + 3600,
        ))
        .await
        .expect("upload recorded");
    let content = "indicator,value,unit,time\nglucose,90,mg/dL,2026-01-01T00:00:00\n";
    let put = |key: &'static str| {
        let s3 = s3.clone();
        async move {
            s3.put_object()
                .bucket(bucket)
                .key(key)
                .body(content.as_bytes().to_vec().into())
                .send()
                .await
                .expect("stored in moto");
        }
    };
    let gone = |key: &'static str| {
        let s3 = s3.clone();
        async move {
            s3.head_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .is_err()
        }
    };
    let function = Function::start("import", &settings).await;
    function.ready().await;
    let handled = |answer: &Outcome| matches!(answer, Outcome::Response(bytes) if bytes.as_ref() == br#"{"handled":1,"skipped":0}"#);

    put(key).await;
    let first = function
        .invoke_raw(&object_created(bucket, key, content.len()))
        .await;
    assert!(handled(&first), "{first:?}\n{}", function.output());
    assert!(gone(key).await, "the imported file is removed");

    // The same presigned PUT again after the import: S3 reports it, the copy is deleted,
    // and nothing is imported twice.
    put(key).await;
    let replay = function
        .invoke_raw(&object_created(bucket, key, content.len()))
        .await;
    assert!(handled(&replay), "{replay:?}");
    assert!(gone(key).await, "the replayed file is removed");
    let record = store
        .upload("replay-user", "9c1d", now)
        .await
        .unwrap()
        .expect("the upload");
    assert_eq!(
        (record.status, record.rows_written),
        (UploadStatus::Done, 1)
    );

    // An object no upload owns.
    put("uploads/orphan").await;
    let orphan = function
        .invoke_raw(&object_created(bucket, "uploads/orphan", content.len()))
        .await;
    assert!(handled(&orphan), "{orphan:?}");
    assert!(gone("uploads/orphan").await, "the orphan is removed");
}
