//! The console's upload and connect pages over HTTP with a cookie session (a
//! person signed up through the console's own form): the upload page's script endpoints
//! (create with the CSRF header, PUT, poll until done; the same answers as the JSON
//! API; refused without the CSRF header, for another person's upload, signed out), the
//! recent uploads on the page, and the personal URL (minted on a POST only, working on
//! `/mcp/{secret}`, revoked, refused without CSRF). Every page stays under 50 KB.

use std::time::{Duration, Instant};

use e2e::{Reply, Server, form_of, form_with_cookie, get, listed_tools, rpc, send};
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery";
const PAGE_LIMIT: usize = 50 * 1024;

/// A person signed in to the console: the session cookie (`name=value`).
struct Person {
    cookie: String,
    email: String,
}

/// Signs up through the console's form: GET the form (its CSRF token and nonce
/// cookie), POST it; the session cookie the answer sets.
async fn sign_up(server: &Server, email: &str) -> Person {
    let form = get(&server.url("/console/signup")).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let (fields, nonce) = form_of(&form);
    let csrf = fields
        .iter()
        .find(|(name, _)| name == "csrf")
        .map(|(_, value)| value.clone())
        .expect("the sign-up form carries a CSRF token");
    let reply = form_with_cookie(
        server,
        "/console/signup",
        &[("csrf", &csrf), ("email", email), ("password", PASSWORD)],
        Some(&nonce),
    )
    .await;
    assert_eq!(reply.status, 303, "{}", reply.body);
    let cookie = reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("mirobody_session="))
        .expect("sign-up starts a session")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    Person {
        cookie,
        email: email.to_string(),
    }
}

/// `GET path` with the person's cookie.
async fn page(server: &Server, person: &Person, path: &str) -> Reply {
    let headers = vec![("cookie".to_string(), person.cookie.clone())];
    send("GET", &server.url(path), &headers, None).await
}

/// The CSRF token a signed-in page hands its script (`main[data-csrf]`).
fn csrf_of(page: &Reply) -> String {
    let start = page
        .body
        .find("data-csrf=\"")
        .expect("main carries data-csrf")
        + 11;
    let end = start + page.body[start..].find('"').unwrap();
    page.body[start..end].to_string()
}

async fn csrf(server: &Server, person: &Person) -> String {
    let upload = page(server, person, "/console/upload").await;
    assert_eq!(upload.status, 200, "{}", upload.body);
    csrf_of(&upload)
}

/// `POST /console/uploads` as the page's script sends it (`csrf`: the header, if any).
async fn create(server: &Server, person: &Person, csrf: Option<&str>, body: Value) -> Reply {
    let mut headers = vec![
        ("cookie".to_string(), person.cookie.clone()),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    if let Some(csrf) = csrf {
        headers.push(("x-csrf-token".to_string(), csrf.to_string()));
    }
    send(
        "POST",
        &server.url("/console/uploads"),
        &headers,
        Some(body.to_string()),
    )
    .await
}

async fn put(url: &str, body: &str) -> Reply {
    send("PUT", url, &[], Some(body.to_string())).await
}

/// Polls `GET /console/uploads/{id}` until the upload is done or failed.
async fn finished(server: &Server, person: &Person, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reply = page(server, person, &format!("/console/uploads/{id}")).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let record = reply.json()["data"].clone();
        if record["status"] == "done" || record["status"] == "failed" {
            return record;
        }
        assert!(Instant::now() < deadline, "still {record}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Create, PUT and poll as the page's script does: the finished record.
async fn upload_through_console(
    server: &Server,
    person: &Person,
    csrf: &str,
    kind: &str,
    filename: &str,
    body: &str,
) -> Value {
    let created = create(
        server,
        person,
        Some(csrf),
        json!({ "kind": kind, "filename": filename }),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let data = created.json()["data"].clone();
    let stored = put(data["upload_url"].as_str().unwrap(), body).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    finished(server, person, data["id"].as_str().unwrap()).await
}

/// The person's bearer token from the JSON API's sign-in (to compare answers).
async fn bearer_token(server: &Server, person: &Person) -> String {
    let reply = send(
        "POST",
        &server.url("/auth/signin"),
        &[("content-type".to_string(), "application/json".to_string())],
        Some(json!({ "email": person.email, "password": PASSWORD }).to_string()),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"]["token"].as_str().unwrap().to_string()
}

const READINGS: &str = "indicator,value,unit,time,source\n\
Glucose,92,mg/dL,2025-03-01T08:00:00,meter\n\
Glucose,101,mg/dL,2025-03-02T08:00:00,meter\n\
Weight,71.5,kg,2025-03-02T07:00:00,scale\n";

const BAD_READINGS: &str = "indicator,value,unit,time,source\n\
Glucose,92,mg/dL,2025-03-01T08:00:00,meter\n\
Glucose,,mg/dL,2025-03-02T08:00:00,meter\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_page_script_flow_creates_puts_and_polls_to_done() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice@example.com").await;

    // The page: the picker, the bar, the status, the no-script words; no uploads yet.
    let upload = page(&server, &alice, "/console/upload").await;
    assert_eq!(upload.status, 200, "{}", upload.body);
    for part in [
        "<select id=\"upload-kind\"",
        "<option value=\"health\"",
        "<option value=\"genotype\"",
        "<option value=\"apple_health\"",
        "<input id=\"upload-file\" name=\"file\" type=\"file\"",
        "<button id=\"upload-start\"",
        "<progress id=\"upload-progress\" max=\"100\"",
        "id=\"upload-status\" aria-live=\"polite\" data-state=\"idle\"",
        "needs JavaScript",
        "No uploads yet.",
    ] {
        assert!(
            upload.body.contains(part),
            "missing {part}: {}",
            upload.body
        );
    }
    assert!(
        upload.body.len() < PAGE_LIMIT,
        "{} bytes",
        upload.body.len()
    );
    let csrf = csrf_of(&upload);

    // Create (the script's call), PUT the file, poll: three rows written.
    let created = create(
        &server,
        &alice,
        Some(&csrf),
        json!({ "kind": "health", "filename": "readings.csv" }),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let data = created.json()["data"].clone();
    assert_eq!(data["method"], "PUT", "{data}");
    assert!(data["headers"].is_object(), "{data}");
    let id = data["id"].as_str().unwrap().to_string();
    let stored = put(data["upload_url"].as_str().unwrap(), READINGS).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    let done = finished(&server, &alice, &id).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_written"], 3, "{done}");
    assert_eq!(done["filename"], "readings.csv", "{done}");

    // The console's answer is the JSON API's, envelope and all.
    let token = bearer_token(&server, &alice).await;
    let api = send(
        "GET",
        &server.url(&format!("/api/data/uploads/{id}")),
        &[("authorization".to_string(), format!("Bearer {token}"))],
        None,
    )
    .await;
    let console = page(&server, &alice, &format!("/console/uploads/{id}")).await;
    assert_eq!(api.status, console.status);
    assert_eq!(api.json(), console.json());

    // A file with a bad line: failed, with the line and the field in words.
    let created = create(
        &server,
        &alice,
        Some(&csrf),
        json!({ "kind": "health", "filename": "broken.csv" }),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let data = created.json()["data"].clone();
    let broken = data["id"].as_str().unwrap().to_string();
    let stored = put(data["upload_url"].as_str().unwrap(), BAD_READINGS).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    let failed = finished(&server, &alice, &broken).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["line"], 3, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap().to_string();

    // The page lists both, with what became of them in words.
    let upload = page(&server, &alice, "/console/upload").await;
    assert_eq!(upload.status, 200, "{}", upload.body);
    let table = &upload.body[upload
        .body
        .find("<table class=\"stack\" id=\"uploads\"")
        .expect("the table")..];
    assert!(table.contains(&format!("data-upload=\"{id}\"")), "{table}");
    assert!(
        table.contains(&format!("data-upload=\"{broken}\"")),
        "{table}"
    );
    assert!(table.contains("readings.csv"), "{table}");
    assert!(table.contains("3 rows written"), "{table}");
    let failure = format!("Failed at line 3: {}", maud_escaped(&message));
    assert!(table.contains(&failure), "{failure} in {table}");
    assert!(
        upload.body.len() < PAGE_LIMIT,
        "{} bytes",
        upload.body.len()
    );

    // A bad body is refused in words, as the JSON API refuses it.
    let bad = create(&server, &alice, Some(&csrf), json!({ "kind": "video" })).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.json()["msg"].as_str().unwrap().contains("kind must be"),
        "{}",
        bad.body
    );
}

/// How maud writes `text` in HTML.
fn maud_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_endpoints_refuse_without_csrf_for_others_and_signed_out() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice@example.com").await;
    let bob = sign_up(&server, "bob@example.com").await;
    let body = json!({ "kind": "genotype", "filename": "alice-genome.txt" });

    // Without the CSRF header, or with another session's: 403, and nothing created.
    let missing = create(&server, &alice, None, body.clone()).await;
    assert_eq!(missing.status, 403, "{}", missing.body);
    let bobs = csrf(&server, &bob).await;
    let foreign = create(&server, &alice, Some(&bobs), body.clone()).await;
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let token = bearer_token(&server, &alice).await;
    let listed = send(
        "GET",
        &server.url("/api/data/uploads"),
        &[("authorization".to_string(), format!("Bearer {token}"))],
        None,
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(
        listed.json()["data"]["uploads"],
        json!([]),
        "nothing created"
    );
    let upload = page(&server, &alice, "/console/upload").await;
    assert!(upload.body.contains("No uploads yet."), "{}", upload.body);

    // Alice's upload is hers: Bob's session reads it as one that never existed.
    let alices = csrf(&server, &alice).await;
    let created = create(&server, &alice, Some(&alices), body.clone()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["data"]["id"].as_str().unwrap().to_string();
    let as_bob = page(&server, &bob, &format!("/console/uploads/{id}")).await;
    assert_eq!(as_bob.status, 404, "{}", as_bob.body);
    assert_eq!(as_bob.json()["msg"], "no such upload", "{}", as_bob.body);
    let never = page(&server, &bob, "/console/uploads/0123456789abcdef0123456789").await;
    assert_eq!(never.status, 404, "{}", never.body);
    assert_eq!(as_bob.json(), never.json(), "no oracle");
    let bobs_page = page(&server, &bob, "/console/upload").await;
    assert!(
        !bobs_page.body.contains("alice-genome.txt") && !bobs_page.body.contains(&id),
        "{}",
        bobs_page.body
    );
    let alices_page = page(&server, &alice, "/console/upload").await;
    assert!(
        alices_page.body.contains("alice-genome.txt"),
        "{}",
        alices_page.body
    );

    // A body over the route's cap is refused before it is parsed.
    let long = "x".repeat(20 * 1024);
    let oversized = create(
        &server,
        &alice,
        Some(&alices),
        json!({ "kind": "health", "filename": long }),
    )
    .await;
    assert_eq!(oversized.status, 413, "{}", oversized.body);

    // Signed out: 401 in JSON for the script, not a redirect to the sign-in page.
    let nobody = Person {
        cookie: "mirobody_session=not-a-token".to_string(),
        email: String::new(),
    };
    let refused = create(&server, &nobody, Some(&alices), body.clone()).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.json()["msg"]
            .as_str()
            .unwrap()
            .contains("sign in again"),
        "{}",
        refused.body
    );
    let status = send(
        "GET",
        &server.url(&format!("/console/uploads/{id}")),
        &[],
        None,
    )
    .await;
    assert_eq!(status.status, 401, "{}", status.body);
    assert!(status.json()["msg"].is_string(), "{}", status.body);
    // The page itself sends a signed-out person to sign in.
    let signed_out = get(&server.url("/console/upload")).await;
    assert_eq!(signed_out.status, 303, "{}", signed_out.body);
}

/// The personal URL in a connect page (`code#personal-url`), if shown.
fn personal_url_in(page: &Reply) -> Option<String> {
    let marker = "id=\"personal-url\">";
    let start = page.body.find(marker)? + marker.len();
    let end = start + page.body[start..].find('<')?;
    Some(page.body[start..end].to_string())
}

/// The same URL on the test server's address.
fn local(server: &Server, url: &str) -> String {
    server.url(&url[url.find("/mcp/").expect("a personal URL has /mcp/<secret>")..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_page_mints_shows_and_revokes_the_personal_url() {
    let server = Server::start(&[]);
    let alice = sign_up(&server, "alice@example.com").await;
    let bob = sign_up(&server, "bob@example.com").await;

    // The GET page: no URL yet; Claude and ChatGPT first (this server lets anonymous
    // callers list tools, so a connector gets the personal URL, not an OAuth sign-in),
    // then Cursor, Claude Desktop and the developers' clients, which wait for the URL:
    // nothing to copy, no placeholder, no install link until a real URL exists.
    let connect = page(&server, &alice, "/console/connect").await;
    assert_eq!(connect.status, 200, "{}", connect.body);
    let order: Vec<usize> = [
        "id=\"remote-connectors\"",
        "id=\"cursor\"",
        "id=\"claude-desktop\"",
        "id=\"developers\"",
    ]
    .iter()
    .map(|part| {
        connect
            .body
            .find(part)
            .unwrap_or_else(|| panic!("missing {part}: {}", connect.body))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    let first = &connect.body[order[0]..order[1]];
    assert!(first.contains("You have no personal URL yet."), "{first}");
    assert!(first.contains("<form id=\"url-create\""), "{first}");
    assert!(first.contains("choose no authentication"), "{first}");
    for absent in [
        "data-copy=",
        "cursor-install",
        "mcp-remote",
        "&lt;your personal MCP URL&gt;",
        "This URL is a password.",
    ] {
        assert!(!connect.body.contains(absent), "{absent}: {}", connect.body);
    }
    assert!(connect.body.contains(&format!("{}/mcp<", server.origin())));
    assert!(personal_url_in(&connect).is_none());
    assert!(
        connect.body.len() < PAGE_LIMIT,
        "{} bytes",
        connect.body.len()
    );
    let csrf = csrf_of(&connect);

    // Without the CSRF token: refused, and nothing minted.
    let forged = form_with_cookie(&server, "/console/connect/url", &[], Some(&alice.cookie)).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let still = page(&server, &alice, "/console/connect").await;
    assert!(
        still.body.contains("You have no personal URL"),
        "{}",
        still.body
    );

    // Minted on the POST: the URL, its copy button, and it works for MCP.
    let minted = form_with_cookie(
        &server,
        "/console/connect/url",
        &[("csrf", &csrf)],
        Some(&alice.cookie),
    )
    .await;
    assert_eq!(minted.status, 200, "{}", minted.body);
    assert!(
        minted.body.len() < PAGE_LIMIT,
        "{} bytes",
        minted.body.len()
    );
    let url = personal_url_in(&minted).expect("the minted URL is shown");
    assert!(url.contains("/mcp/"), "{url}");
    assert!(minted.body.contains("data-copy=\"personal-url\""));
    assert!(minted.body.contains("<form id=\"url-revoke\""));
    assert!(
        minted
            .body
            .contains("Keep this URL to yourself, like a password")
    );
    for snippet in [
        format!("\"args\": [\"-y\", \"mcp-remote\", \"{url}\"]"),
        format!("claude mcp add --transport http mirobody {url}"),
        format!("\"type\": \"http\",\n      \"url\": \"{url}\""),
        format!("streamable_http_client(\"{url}\")"),
        format!("new URL(\"{url}\")"),
    ] {
        assert!(
            minted.body.contains(&maud_escaped(&snippet)),
            "the snippets carry the URL: {snippet}: {}",
            minted.body
        );
    }
    // Cursor's install link: its deeplink, the settings as base64 JSON.
    let link = minted
        .body
        .split("id=\"cursor-install\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the Cursor install link");
    let config = link
        .strip_prefix("cursor://anysphere.cursor-deeplink/mcp/install?name=mirobody&amp;config=")
        .unwrap_or_else(|| panic!("{link}"));
    // Standard base64, percent-encoded: only `+`, `/` and `=` need it.
    let config = config
        .replace("%2B", "+")
        .replace("%2F", "/")
        .replace("%3D", "=");
    use base64::Engine;
    let config = base64::engine::general_purpose::STANDARD
        .decode(config)
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&config).unwrap(),
        json!({ "url": url })
    );
    let tools = rpc(&local(&server, &url), None, "tools/list", json!({})).await;
    assert_eq!(tools.status, 200, "{}", tools.body);
    assert!(!listed_tools(&tools.json()).is_empty(), "{}", tools.body);
    // It reads Alice's data: her genome, uploaded through the upload page's endpoints.
    let genome = "# rsid\tchromosome\tposition\tgenotype\n\
                  rs429358\t19\t44908684\tTC\nrs7412\t19\t44908822\tCC\n";
    let done =
        upload_through_console(&server, &alice, &csrf, "genotype", "genome.txt", genome).await;
    assert_eq!(done["rows_written"], 2, "{done}");
    let genes = rpc(
        &local(&server, &url),
        None,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs7412" } }),
    )
    .await;
    assert_eq!(genes.status, 200, "{}", genes.body);
    assert!(
        genes.body.contains("rs7412") && genes.body.contains("CC"),
        "{}",
        genes.body
    );
    let secret = &url[url.find("/mcp/").unwrap() + 5..];
    let last = if secret.ends_with('x') { 'y' } else { 'x' };
    let guessed = format!("/mcp/{}{last}", &secret[..secret.len() - 1]);
    let guessed = rpc(&server.url(&guessed), None, "tools/list", json!({})).await;
    assert_eq!(
        guessed.status, 404,
        "only the minted secret opens: {}",
        guessed.body
    );

    // The GET page says it is active but never shows it; asking again shows the same.
    let active = page(&server, &alice, "/console/connect").await;
    assert!(active.body.contains("You have an active personal URL"));
    assert!(!active.body.contains(&url[url.find("/mcp/").unwrap()..]));
    assert!(active.body.contains("<form id=\"url-revoke\""));
    let again = form_with_cookie(
        &server,
        "/console/connect/url",
        &[("csrf", &csrf)],
        Some(&alice.cookie),
    )
    .await;
    assert_eq!(personal_url_in(&again).as_deref(), Some(url.as_str()));

    // Bob's page knows nothing of Alice's URL.
    let bobs = page(&server, &bob, "/console/connect").await;
    assert!(
        bobs.body.contains("You have no personal URL"),
        "{}",
        bobs.body
    );
    assert!(!bobs.body.contains(&url[url.find("/mcp/").unwrap()..]));

    // Revoke without the CSRF token: refused, the URL still works.
    let forged = form_with_cookie(
        &server,
        "/console/connect/url/revoke",
        &[("csrf", "forged")],
        Some(&alice.cookie),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let tools = rpc(&local(&server, &url), None, "tools/list", json!({})).await;
    assert_eq!(tools.status, 200, "{}", tools.body);

    // Revoked: said in words, and the URL is refused from then on.
    let revoked = form_with_cookie(
        &server,
        "/console/connect/url/revoke",
        &[("csrf", &csrf)],
        Some(&alice.cookie),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert!(
        revoked.body.contains("Your personal URL is revoked"),
        "{}",
        revoked.body
    );
    assert!(revoked.body.contains("You have no personal URL"));
    let tools = rpc(&local(&server, &url), None, "tools/list", json!({})).await;
    assert_eq!(tools.status, 404, "{}", tools.body);
}

/// The upload page's template (issue 29): a download (an attachment, CSV) that imports
/// as it is, each row the measure and unit it names: 7 rows, 6 measures, steps as
/// 5,200 + 3,100 = 8,300 for the day, nothing converted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readings_template_downloads_and_imports_as_it_is() {
    let server = Server::start(&[]);
    let person = sign_up(&server, "template@example.com").await;
    let upload = page(&server, &person, "/console/upload").await;
    assert!(
        upload.body.contains(
            "<a id=\"readings-template\" href=\"/console/assets/readings-template.csv\" download>"
        ),
        "{}",
        upload.body
    );
    let template = get(&server.url("/console/assets/readings-template.csv")).await;
    assert_eq!(template.status, 200);
    assert_eq!(
        template.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    assert_eq!(
        template.header("content-disposition"),
        Some("attachment; filename=\"readings-template.csv\"")
    );
    assert!(
        template
            .body
            .starts_with("indicator,value,unit,time,source\n")
    );

    let csrf = csrf(&server, &person).await;
    let done = upload_through_console(
        &server,
        &person,
        &csrf,
        "health",
        "readings-template.csv",
        &template.body,
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_written"], 7, "{done}");
    assert_eq!(done["readings"]["new"], 7, "{done}");

    let token = bearer_token(&server, &person).await;
    let reply = rpc(
        &server.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({ "name": "query_health_indicators", "arguments": {} }),
    )
    .await;
    let answer = reply.json()["result"]["structuredContent"].clone();
    assert_eq!(answer["indicator_count"], 6, "{answer}");
    let rows: Vec<&str> = answer["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (name, unit, latest) in [
        ("Steps", "steps", "8300"),
        ("Body weight", "kg", "72.4"),
        ("Resting heart rate", "/min", "58"),
        ("Glucose", "mg/dL", "95"),
        ("Sleep asleep", "min", "450"),
        ("Hemoglobin A1c", "%", "5.4"),
    ] {
        let row: Vec<&str> = rows
            .iter()
            .find(|row| row.starts_with(&format!("{name}|")))
            .unwrap_or_else(|| panic!("{name} in {rows:?}"))
            .split('|')
            .collect();
        assert_eq!((row[3], row[4]), (unit, latest), "{name}: {row:?}");
    }
}

/// With `MIROBODY_REQUIRE_AUTH=true`, `/mcp` asks every anonymous caller to sign in, so
/// a connector given the plain URL runs the OAuth sign-in: the page leads with that URL
/// (ready to copy, in Cursor's install link too) and keeps the personal URL for apps
/// that cannot sign in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_page_leads_with_the_sign_in_url_where_mcp_requires_it() {
    let server = Server::start(&[("MIROBODY_REQUIRE_AUTH", "true")]);
    let person = sign_up(&server, "oauth-first@example.com").await;
    let connect = page(&server, &person, "/console/connect").await;
    assert_eq!(connect.status, 200, "{}", connect.body);
    let mcp = format!("{}/mcp", server.origin());
    let first = &connect.body[connect.body.find("id=\"remote-connectors\"").unwrap()
        ..connect.body.find("id=\"cursor\"").unwrap()];
    assert!(
        first.contains(&format!(
            "<code class=\"secret\" id=\"mcp-url\">{mcp}</code>"
        )),
        "{first}"
    );
    assert!(first.contains("data-copy=\"mcp-url\""), "{first}");
    assert!(first.contains("Sign in with your Mirobody e-mail and password"));
    assert!(!first.contains("url-create"), "{first}");
    assert!(connect.body.contains("id=\"cursor-install\""));
    assert!(connect.body.contains(&maud_escaped(&format!(
        "claude mcp add --transport http mirobody {mcp}"
    ))));
    assert!(connect.body.contains("id=\"personal-url-section\""));
    assert!(connect.body.contains("<form id=\"url-create\""));
    // And the URL it gives does ask an anonymous caller to sign in.
    let anonymous = rpc(&server.url("/mcp"), None, "tools/list", json!({})).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    assert!(anonymous.header("www-authenticate").is_some());
}
