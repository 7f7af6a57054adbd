//! The console's account page over HTTP against `mirobody-local`: the
//! export (what was uploaded, no secret), deleting all data, deleting the account
//! (password confirmed; afterwards every credential of it refused, the e-mail free),
//! CSRF, and the JSON API forms (`GET /api/user/export`, `DELETE /api/user`).

use std::io::Read;

use e2e::{Reply, Server, bearer, encode_form, form_of, get, rpc, send};
use serde_json::{Value, json};

const PASSWORD: &str = "correct horse battery";

/// A person signed up through the console form: their session cookie, user id and a
/// bearer token from the JSON sign-in (for uploads).
struct Person {
    email: String,
    cookie: String,
    token: String,
}

async fn sign_up(server: &Server, email: &str) -> Person {
    let page = get(&server.url("/console/signup")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (hidden, nonce) = form_of(&page);
    let mut pairs: Vec<(&str, &str)> = hidden
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([("email", email), ("password", PASSWORD)]);
    let reply = post_form(server, "/console/signup", &pairs, &nonce).await;
    assert_eq!(reply.status, 303, "{}", reply.body);
    let cookie = session_cookie(&reply).expect("signing up starts a session");
    let signin = send(
        "POST",
        &server.url("/auth/signin"),
        &[("content-type".into(), "application/json".into())],
        Some(json!({ "email": email, "password": PASSWORD }).to_string()),
    )
    .await;
    assert_eq!(signin.status, 200, "{}", signin.body);
    let token = signin.json()["data"]["token"].as_str().unwrap().to_string();
    Person {
        email: email.to_string(),
        cookie,
        token,
    }
}

fn session_cookie(reply: &Reply) -> Option<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("mirobody_session=") && !v.starts_with("mirobody_session=;"))
        .map(|v| v.split(';').next().unwrap().to_string())
}

async fn post_form(server: &Server, path: &str, pairs: &[(&str, &str)], cookie: &str) -> Reply {
    send(
        "POST",
        &server.url(path),
        &[
            (
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            ),
            ("cookie".into(), cookie.into()),
        ],
        Some(encode_form(pairs)),
    )
    .await
}

async fn page(server: &Server, path: &str, cookie: &str) -> Reply {
    send(
        "GET",
        &server.url(path),
        &[("cookie".into(), cookie.into())],
        None,
    )
    .await
}

/// The CSRF token of a signed-in page.
fn csrf_of(page: &Reply) -> String {
    let (hidden, _) = form_of_fields(page);
    hidden
        .into_iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v)
        .expect("a signed-in page carries its CSRF token")
}

/// The hidden inputs of a page (without needing a cookie on the reply).
fn form_of_fields(page: &Reply) -> (Vec<(String, String)>, ()) {
    let mut fields = Vec::new();
    for input in page.body.split("<input type=\"hidden\" ").skip(1) {
        let attr = |name: &str| {
            let start = input.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            let end = start + input[start..].find('"').unwrap();
            input[start..end].to_string()
        };
        fields.push((attr("name"), attr("value")));
    }
    (fields, ())
}

async fn upload(server: &Server, token: &str, path: &str, content_type: &str, body: &str) {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), content_type.into()));
    let reply = send("POST", &server.url(path), &headers, Some(body.into())).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

async fn personal_url(server: &Server, token: &str) -> String {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), "application/json".into()));
    let reply = send(
        "POST",
        &server.url("/personal/mcp"),
        &headers,
        Some("{}".into()),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"]["url"].as_str().unwrap().to_string()
}

/// A personal URL's path on this server.
fn local(server: &Server, url: &str) -> String {
    server.url(&url[url.find("/mcp/").unwrap()..])
}

/// Gets a download and gunzips it.
async fn download(server: &Server, path: &str, headers: &[(String, String)]) -> (Reply, Value) {
    let client = e2e::web_client()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut request = client.get(server.url(path));
    for (k, v) in headers {
        request = request.header(k, v);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    let reply = Reply {
        status,
        headers,
        body: String::new(),
    };
    assert_eq!(status, 200);
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .expect("the export is gzip");
    let reply = Reply {
        body: text,
        ..reply
    };
    let json = reply.json();
    (reply, json)
}

const CSV: &str = "indicator,value,unit,time\n\
Glucose,91,mg/dL,2026-03-01T08:00:00\n\
Glucose,97,mg/dL,2026-03-02T08:00:00\n\
Heart Rate,61,bpm,2026-03-01T08:00:00\n";

const GENOME: &str = "rs429358\t19\t44908684\tTC\nrs7412\t19\t44908822\tCC\n";

async fn data_summary(server: &Server, token: &str) -> Reply {
    send("GET", &server.url("/api/data"), &bearer(token), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_export_holds_what_was_uploaded_and_no_secret() {
    let server = Server::start(&[]);
    let ann = sign_up(&server, "ann@example.com").await;
    let bob = sign_up(&server, "bob@example.com").await;
    upload(&server, &ann.token, "/api/data/health", "text/csv", CSV).await;
    upload(
        &server,
        &ann.token,
        "/api/data/genotype",
        "text/plain",
        GENOME,
    )
    .await;
    let url = personal_url(&server, &ann.token).await;
    let secret = url.rsplit('/').next().unwrap().to_string();
    let mut headers = bearer(&ann.token);
    headers.push(("content-type".into(), "application/json".into()));
    let shared = send(
        "POST",
        &server.url("/api/shares"),
        &headers,
        Some(json!({ "grantee": bob.email, "permissions": ["chat"] }).to_string()),
    )
    .await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    server.accept_invitations(&bob.email, &bob.token).await;

    // The page: the e-mail, the links and forms of the DOM contract, small.
    let account = page(&server, "/console/account", &ann.cookie).await;
    assert_eq!(account.status, 200, "{}", account.body);
    for needle in [
        "ann@example.com",
        "id=\"export\" href=\"/console/account/export\"",
        "id=\"change-password\" href=\"/console/password\"",
        "<form id=\"delete-data\"",
        "<form id=\"delete-account\"",
        "id=\"delete-password\"",
        "id=\"delete-account-button\"",
        "data-confirm=",
    ] {
        assert!(
            account.body.contains(needle),
            "{needle} in {}",
            account.body
        );
    }
    assert!(account.body.len() < 50_000, "{} bytes", account.body.len());
    assert!(!account.body.contains("bob@example.com"));
    let changed = page(&server, "/console/account?changed=password", &ann.cookie).await;
    assert!(
        changed
            .body
            .contains("Password changed. Every other session and app signed in with the old one was signed out, and your personal MCP URL was revoked"),
        "{}",
        changed.body
    );

    // The download: an attachment named by the date, gzip JSON of everything.
    let (reply, export) = download(
        &server,
        "/console/account/export",
        &[("cookie".into(), ann.cookie.clone())],
    )
    .await;
    let disposition = reply.header("content-disposition").unwrap().to_string();
    assert!(
        disposition.starts_with("attachment; filename=\"mirobody-export-")
            && disposition.ends_with(".json.gz\""),
        "{disposition}"
    );
    assert_eq!(reply.header("content-type"), Some("application/gzip"));
    assert_eq!(export["format"], "mirobody-export/1");
    assert_eq!(export["account"]["email"], "ann@example.com");
    let readings = export["readings"].as_array().unwrap();
    let glucose = readings
        .iter()
        .find(|r| r["indicator"] == "Glucose")
        .expect("glucose exported");
    assert_eq!(glucose["count"], 2);
    // One unit and source throughout: said once, each reading `[time, value]`.
    assert_eq!(glucose["unit"], "mg/dL");
    assert_eq!(glucose["columns"], json!(["time", "value"]));
    assert_eq!(
        glucose["readings"],
        json!([["2026-03-01T08:00:00", 91.0], ["2026-03-02T08:00:00", 97.0]])
    );
    // The measure's name; what was sent is kept beside it.
    let heart = readings
        .iter()
        .find(|r| r["indicator"] == "Heart rate")
        .expect("heart rate exported under its measure's name");
    assert!(
        heart.to_string().contains("Heart Rate"),
        "the original name: {heart}"
    );
    assert_eq!(export["genome"]["variants"], 2);
    let genotypes = export["genome"]["genotypes"].as_array().unwrap();
    assert!(genotypes.contains(&json!(["rs429358", "19", 44908684, "TC"])));
    assert_eq!(export["shares_granted"][0]["permissions"], json!(["chat"]));
    assert_eq!(export["personal_url"]["exists"], true);
    // No secret: no password hash, no URL secret, nothing sealed.
    for secretive in [secret.as_str(), "argon2", "password", "sealed", "secret"] {
        assert!(!reply.body.contains(secretive), "{secretive} in the export");
    }

    // The JSON API's form, with the bearer token: the same export.
    let (_, by_api) = download(&server, "/api/user/export", &bearer(&ann.token)).await;
    assert_eq!(by_api["readings"], export["readings"]);
    // One user's export never holds another's data.
    let (_, bobs) = download(&server, "/api/user/export", &bearer(&bob.token)).await;
    assert_eq!(bobs["account"]["email"], "bob@example.com");
    assert_eq!(bobs["readings"], json!([]));
    assert_eq!(bobs["genome"], Value::Null);
    assert!(!bobs.to_string().contains("ann@example.com"));
    // Without a session: the sign-in page, not a file.
    let anonymous = get(&server.url("/console/account/export")).await;
    assert_eq!(anonymous.status, 303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_delete_data_keeps_the_account_and_needs_csrf() {
    let server = Server::start(&[]);
    let ann = sign_up(&server, "ann@example.com").await;
    upload(&server, &ann.token, "/api/data/health", "text/csv", CSV).await;
    upload(
        &server,
        &ann.token,
        "/api/data/genotype",
        "text/plain",
        GENOME,
    )
    .await;
    let account = page(&server, "/console/account", &ann.cookie).await;
    let csrf = csrf_of(&account);

    // Without the CSRF token: refused, nothing deleted.
    let forged = post_form(&server, "/console/account/delete-data", &[], &ann.cookie).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let wrong = post_form(
        &server,
        "/console/account/delete-data",
        &[("csrf", "not-the-token")],
        &ann.cookie,
    )
    .await;
    assert_eq!(wrong.status, 403);
    let summary = data_summary(&server, &ann.token).await.json();
    assert_eq!(
        (&summary["data"]["health"], &summary["data"]["genotype"]),
        (&json!(true), &json!(true))
    );

    let done = post_form(
        &server,
        "/console/account/delete-data",
        &[("csrf", &csrf)],
        &ann.cookie,
    )
    .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(
        done.header("location"),
        Some("/console/account?deleted=data")
    );
    let summary = data_summary(&server, &ann.token).await.json();
    assert_eq!(
        (&summary["data"]["health"], &summary["data"]["genotype"]),
        (&json!(false), &json!(false))
    );
    let after = page(&server, "/console/account?deleted=data", &ann.cookie).await;
    assert_eq!(after.status, 200, "the account stays");
    assert!(after.body.contains("All your data was deleted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_account_deletion_refuses_every_credential_afterwards() {
    let server = Server::start(&[]);
    let ann = sign_up(&server, "ann@example.com").await;
    let bob = sign_up(&server, "bob@example.com").await;
    upload(&server, &ann.token, "/api/data/health", "text/csv", CSV).await;
    upload(&server, &bob.token, "/api/data/health", "text/csv", CSV).await;
    let url = personal_url(&server, &ann.token).await;
    let bobs_url = personal_url(&server, &bob.token).await;
    let listed = rpc(&local(&server, &url), None, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let account = page(&server, "/console/account", &ann.cookie).await;
    let csrf = csrf_of(&account);

    // Without the CSRF token, or with the wrong password: refused, nothing deleted.
    let forged = post_form(
        &server,
        "/console/account/delete",
        &[("password", PASSWORD)],
        &ann.cookie,
    )
    .await;
    assert_eq!(forged.status, 403);
    let wrong = post_form(
        &server,
        "/console/account/delete",
        &[("csrf", &csrf), ("password", "not my password")],
        &ann.cookie,
    )
    .await;
    assert_eq!(wrong.status, 403, "{}", wrong.body);
    assert!(
        wrong.body.contains("password is wrong") && wrong.body.contains("Nothing was deleted"),
        "{}",
        wrong.body
    );
    assert_eq!(data_summary(&server, &ann.token).await.status, 200);
    assert_eq!(
        data_summary(&server, &ann.token).await.json()["data"]["health"],
        true
    );
    assert_eq!(
        page(&server, "/console/account", &ann.cookie).await.status,
        200
    );

    // Deleted: the goodbye page, and the cookie cleared.
    let gone = post_form(
        &server,
        "/console/account/delete",
        &[("csrf", &csrf), ("password", PASSWORD)],
        &ann.cookie,
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert!(gone.body.contains("Account deleted"), "{}", gone.body);
    let cleared = gone
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.starts_with("mirobody_session=") && v.contains("Max-Age=0"));
    assert!(cleared, "{:?}", gone.headers);

    // Every credential refused: the old cookie, the bearer token, the personal URL,
    // the password.
    let old_cookie = page(&server, "/console/account", &ann.cookie).await;
    assert_eq!(old_cookie.status, 303, "{}", old_cookie.body);
    assert_eq!(data_summary(&server, &ann.token).await.status, 401);
    let by_url = rpc(&local(&server, &url), None, "tools/list", json!({})).await;
    assert_ne!(by_url.status, 200, "{}", by_url.body);
    let signin = send(
        "POST",
        &server.url("/auth/signin"),
        &[("content-type".into(), "application/json".into())],
        Some(json!({ "email": ann.email, "password": PASSWORD }).to_string()),
    )
    .await;
    assert_eq!(signin.status, 401, "{}", signin.body);

    // The other user keeps everything.
    assert_eq!(
        data_summary(&server, &bob.token).await.json()["data"]["health"],
        true
    );
    assert_eq!(
        rpc(&local(&server, &bobs_url), None, "tools/list", json!({}))
            .await
            .status,
        200
    );

    // The e-mail signs up again, as a new account with nothing in it.
    let again = sign_up(&server, "ann@example.com").await;
    assert_eq!(
        data_summary(&server, &again.token).await.json()["data"]["health"],
        false
    );
    assert_eq!(data_summary(&server, &ann.token).await.status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_api_deletes_the_account_with_its_password() {
    let server = Server::start(&[]);
    let ann = sign_up(&server, "ann@example.com").await;
    upload(&server, &ann.token, "/api/data/health", "text/csv", CSV).await;
    let mut headers = bearer(&ann.token);
    headers.push(("content-type".into(), "application/json".into()));
    let delete = |body: Value| {
        let headers = headers.clone();
        let url = server.url("/api/user");
        async move { send("DELETE", &url, &headers, Some(body.to_string())).await }
    };

    let no_body = send("DELETE", &server.url("/api/user"), &headers, None).await;
    assert_eq!(no_body.status, 400, "{}", no_body.body);
    let wrong = delete(json!({ "password": "not my password" })).await;
    assert_eq!(wrong.status, 403, "{}", wrong.body);
    assert_eq!(
        data_summary(&server, &ann.token).await.json()["data"]["health"],
        true
    );
    let anonymous = send(
        "DELETE",
        &server.url("/api/user"),
        &[("content-type".into(), "application/json".into())],
        Some(json!({ "password": PASSWORD }).to_string()),
    )
    .await;
    assert_eq!(anonymous.status, 401);

    let done = delete(json!({ "password": PASSWORD })).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.json()["data"]["deleted"], true);
    // The token that deleted it is refused, and so is the export.
    assert_eq!(data_summary(&server, &ann.token).await.status, 401);
    let export = send(
        "GET",
        &server.url("/api/user/export"),
        &bearer(&ann.token),
        None,
    )
    .await;
    assert_eq!(export.status, 401);
    assert_eq!(delete(json!({ "password": PASSWORD })).await.status, 401);
}

/// `tests/clients/remote_server.py` (the Python SDK's MCP server) on a free loopback
/// port, requiring `token` as its bearer; killed on drop.
struct Remote(std::process::Child, u16);

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn remote_server(token: &str) -> Remote {
    use std::net::{Ipv4Addr, SocketAddr, TcpStream};
    use std::time::{Duration, Instant};
    let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(e2e::python())
        .arg(e2e::root().join("tests/clients/remote_server.py"))
        .arg(port.to_string())
        .args(["--token", token])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the Python MCP server starts");
    let remote = Remote(child, port);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "remote_server.py did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    remote
}

/// The export lists the user's MCP servers with their tools and auth type, never the
/// credential; deleting the account deletes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_lists_mcp_servers_without_their_credentials() {
    const REMOTE_TOKEN: &str = "remote-bearer-credential-5e1d";
    let remote = remote_server(REMOTE_TOKEN);
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]);
    let ann = sign_up(&server, "ann@example.com").await;
    let mut headers = bearer(&ann.token);
    headers.push(("content-type".into(), "application/json".into()));
    let created = send(
        "POST",
        &server.url("/api/user/mcp-servers"),
        &headers,
        Some(
            json!({
                "name": "shop",
                "url": format!("http://127.0.0.1:{}/mcp", remote.1),
                "auth": {"type": "BEARER", "token": REMOTE_TOKEN},
            })
            .to_string(),
        ),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);

    let (reply, export) = download(&server, "/api/user/export", &bearer(&ann.token)).await;
    let servers = export["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{export}");
    assert_eq!(servers[0]["name"], "shop");
    assert_eq!(servers[0]["auth_type"], "bearer");
    assert_eq!(servers[0]["has_credential"], true);
    assert!(
        servers[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("lookup_order")),
        "{export}"
    );
    assert!(!reply.body.contains(REMOTE_TOKEN), "the credential leaked");
    assert!(!reply.body.contains("sealed"));

    let done = send(
        "DELETE",
        &server.url("/api/user"),
        &headers,
        Some(json!({ "password": PASSWORD }).to_string()),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let again = sign_up(&server, "ann@example.com").await;
    let listed = send(
        "GET",
        &server.url("/api/user/mcp-servers"),
        &bearer(&again.token),
        None,
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(!listed.body.contains("shop"), "{}", listed.body);
}

/// Issue 29: a form's problem is said under the field it is about, in plain words, the
/// field marked invalid and described by it; nothing is created or changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_problems_are_said_under_their_field() {
    let server = Server::start(&[]);
    let signup = |email: &'static str, password: &'static str| {
        let server = &server;
        async move {
            let page = get(&server.url("/console/signup")).await;
            let (hidden, nonce) = form_of(&page);
            let mut pairs: Vec<(&str, &str)> = hidden
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            pairs.extend([("email", email), ("password", password)]);
            post_form(server, "/console/signup", &pairs, &nonce).await
        }
    };
    // A short password: under the password, which is invalid and described by it.
    let short = signup("short@example.com", "seven77").await;
    assert_eq!(short.status, 400, "{}", short.body);
    assert!(short.body.contains(
        "<p class=\"error field-error\" id=\"password-error\">The password must have at least 10 characters.</p>"
    ), "{}", short.body);
    assert!(
        short
            .body
            .contains("aria-invalid=\"true\" aria-describedby=\"password-error password-rule\"")
    );
    assert!(
        !short.body.contains("class=\"notice problem\""),
        "not above the form too"
    );
    assert!(session_cookie(&short).is_none(), "no account, no session");
    // An address already taken: under the address, which keeps what was typed.
    let ann = sign_up(&server, "ann@example.com").await;
    let taken = signup("ann@example.com", "another long password").await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(taken.body.contains(
        "<p class=\"error field-error\" id=\"email-error\">An account with this e-mail already exists; sign in instead.</p>"
    ), "{}", taken.body);
    assert!(taken.body.contains(
        "value=\"ann@example.com\" aria-invalid=\"true\" aria-describedby=\"email-error\""
    ));

    // The password page: a wrong current password under that field; the password is
    // unchanged (the old one still signs in).
    let form = page(&server, "/console/password", &ann.cookie).await;
    let csrf = csrf_of(&form);
    let wrong = post_form(
        &server,
        "/console/password",
        &[
            ("csrf", &csrf),
            ("current_password", "not the password at all"),
            ("new_password", "a brand new password"),
        ],
        &ann.cookie,
    )
    .await;
    assert_eq!(wrong.status, 403, "{}", wrong.body);
    assert!(wrong.body.contains(
        "<p class=\"error field-error\" id=\"current_password-error\">The current password is wrong.</p>"
    ), "{}", wrong.body);
    let still = send(
        "POST",
        &server.url("/auth/signin"),
        &[("content-type".into(), "application/json".into())],
        Some(json!({ "email": ann.email, "password": PASSWORD }).to_string()),
    )
    .await;
    assert_eq!(still.status, 200, "{}", still.body);
}
