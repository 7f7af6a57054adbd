//! End to end: the login prompt's sign-in link can no longer be
//! phished (RFC 8628 §5.4). The attack as the issue writes it: an attacker makes an
//! anonymous `tools/call`, sends the victim the `/mcplogin` link it got, the victim
//! signs in, and whoever polls `/oauth2/check_state/{state}` collects a token,
//! repeatedly. Now the link alone completes nothing (the page asks for the code the
//! initiating client shows, and says who asked and when), the poll needs a secret
//! that only the initiating client holds (never in the link), and the token is handed
//! out once.

use e2e::{Reply, Server, TempDir, encode_form, form_of, get, modern, post_json, send};
use serde_json::{Value, json};

const PASSWORD: &str = "a long enough password";
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// What the initiating client holds after its anonymous call.
struct Prompt {
    /// The `/mcplogin` link (path and query): all a victim is sent.
    link: String,
    /// The state, as it appears inside the link.
    state: String,
    user_code: String,
    /// `auto_polling.poll_url`'s path and query: the state and the poll secret.
    poll: String,
}

async fn sign_up(server: &Server, email: &str) {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signup"), &[], &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
}

/// An anonymous `tools/call` from a client calling itself `client_name`.
async fn tool_call(server: &Server, token: Option<&str>, client_name: &str) -> Value {
    let (mut headers, mut body) = modern(
        1,
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs1" } }),
    );
    body["params"]["_meta"][CLIENT_INFO]["name"] = json!(client_name);
    if let Some(token) = token {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    let reply = post_json(&server.url("/mcp"), &headers, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

async fn prompt(server: &Server, client_name: &str) -> Prompt {
    let answer = tool_call(server, None, client_name).await;
    let prompt = &answer["result"]["structuredContent"];
    let text = |value: &Value| {
        value
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_string()
    };
    let url = text(&prompt["authorization_url"]);
    let poll = text(&prompt["auto_polling"]["poll_url"]);
    Prompt {
        link: url[url.find("/mcplogin").unwrap()..].to_string(),
        state: text(&prompt["auto_polling"]["state"]),
        user_code: text(&prompt["user_code"]),
        poll: poll[poll.find("/oauth2/").unwrap()..].to_string(),
    }
}

/// Opens the link and signs in as `email` with `code` typed (or none).
async fn sign_in_through(server: &Server, link: &str, email: &str, code: Option<&str>) -> Reply {
    let page = get(&server.url(link)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (fields, cookie) = form_of(&page);
    let mut pairs: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([
        ("email", email),
        ("password", PASSWORD),
        ("decision", "allow"),
    ]);
    pairs.extend(code.map(|code| ("user_code", code)));
    let headers = [
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("cookie".to_string(), cookie),
    ];
    send(
        "POST",
        &server.url("/mcplogin"),
        &headers,
        Some(encode_form(&pairs)),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_sent_to_a_victim_completes_nothing_without_the_code() {
    let server = Server::start(&[]);
    sign_up(&server, "victim@example.com").await;
    // The attacker's anonymous call, from a client naming itself with markup.
    let attacker = prompt(&server, "<b>Mirobody</b> \"support\"").await;

    // The victim opens the link they were sent: the page says who asked, escaped, and
    // when, and asks for the code the initiating client shows.
    let page = get(&server.url(&attacker.link)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("<strong>&lt;b&gt;Mirobody&lt;/b&gt; &quot;support&quot;</strong> asked at "),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<b>Mirobody</b>"));
    assert!(page.body.contains(" UTC"), "{}", page.body);
    assert!(page.body.contains("name=\"user_code\""), "{}", page.body);

    // Signing in with the right password but no code, or a wrong one, completes nothing.
    for code in [None, Some("BBBB-BBBB"), Some(&attacker.state[..8])] {
        let reply = sign_in_through(&server, &attacker.link, "victim@example.com", code).await;
        assert_eq!(reply.status, 401, "{code:?}: {}", reply.body);
        assert!(
            reply.body.contains("That code does not match"),
            "{}",
            reply.body
        );
    }
    let poll = get(&server.url(&attacker.poll)).await;
    assert_eq!(
        (poll.status, poll.json()["status"].clone()),
        (200, json!("pending")),
        "the attacker's poll, with its own secret, collects nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_codes_count_toward_the_mcplogin_limit() {
    let server = Server::start(&[]);
    sign_up(&server, "victim@example.com").await;
    let attacker = prompt(&server, "phisher").await;
    // Ten wrong codes in the minute (each a 401 that completes nothing), then even the
    // right code and password are refused with 429 before anything is checked.
    for _ in 0..10 {
        let reply = sign_in_through(
            &server,
            &attacker.link,
            "victim@example.com",
            Some("ZZZZ-ZZZZ"),
        )
        .await;
        assert_eq!(reply.status, 401, "{}", reply.body);
    }
    let reply = sign_in_through(
        &server,
        &attacker.link,
        "victim@example.com",
        Some(&attacker.user_code),
    )
    .await;
    assert_eq!(reply.status, 429, "{}", reply.body);
    assert!(reply.header("retry-after").is_some());
    let poll = get(&server.url(&attacker.poll)).await;
    assert_eq!(poll.json()["status"], "pending", "nothing was completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_poll_needs_the_initiators_secret_and_hands_the_token_out_once() {
    let server = Server::start(&[]);
    sign_up(&server, "user@example.com").await;
    let mine = prompt(&server, "My Assistant").await;
    assert!(
        !mine
            .link
            .contains(&mine.poll[mine.poll.find("poll_secret=").unwrap() + 12..]),
        "the link never carries the poll secret"
    );
    // The legitimate flow: the user types the code their assistant shows (any case,
    // dash optional).
    let typed = mine.user_code.to_lowercase().replace('-', "");
    let done = sign_in_through(&server, &mine.link, "user@example.com", Some(&typed)).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("You are signed in"), "{}", done.body);

    // Whoever has only the link (the state) polls for nothing, and takes nothing away.
    let bare = get(&server.url(&format!("/oauth2/check_state/{}", mine.state))).await;
    assert_eq!(bare.status, 400, "{}", bare.body);
    assert!(bare.json().get("token").is_none());
    let guessed = format!("/oauth2/check_state/{}?poll_secret=guess", mine.state);
    let guessed = get(&server.url(&guessed)).await;
    assert_eq!(
        (guessed.status, guessed.json()["status"].clone()),
        (404, json!("not_found"))
    );
    let mut header = vec![("x-poll-secret".to_string(), "guess".to_string())];
    let by_header = send(
        "GET",
        &server.url(&format!("/oauth2/check_state/{}", mine.state)),
        &header,
        None,
    )
    .await;
    assert_eq!(by_header.status, 404, "{}", by_header.body);

    // The initiator collects the token once; a second poll gets nothing.
    let first = get(&server.url(&mine.poll)).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["status"], "completed");
    let token = first.json()["token"].as_str().unwrap().to_string();
    let second = get(&server.url(&mine.poll)).await;
    assert_eq!(
        (second.status, second.json()["status"].clone()),
        (410, json!("collected"))
    );
    assert!(second.json().get("token").is_none());
    // The secret also works as a header (nothing left to collect now).
    header[0].1 = mine.poll[mine.poll.find("poll_secret=").unwrap() + 12..].to_string();
    let by_header = send(
        "GET",
        &server.url(&format!("/oauth2/check_state/{}", mine.state)),
        &header,
        None,
    )
    .await;
    assert_eq!(by_header.status, 410, "{}", by_header.body);

    // The token works for the tool call, and the link cannot be used again.
    let answer = tool_call(&server, Some(&token), "My Assistant").await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let again = get(&server.url(&mine.link)).await;
    assert_eq!(again.status, 410, "{}", again.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_polls_of_a_completed_login_get_one_token() {
    let server = Server::start(&[]);
    sign_up(&server, "race@example.com").await;
    let mine = prompt(&server, "Racer").await;
    let done = sign_in_through(
        &server,
        &mine.link,
        "race@example.com",
        Some(&mine.user_code),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let url = server.url(&mine.poll);
    let (a, b, c, d) = tokio::join!(get(&url), get(&url), get(&url), get(&url));
    let polls = [a, b, c, d];
    let statuses: Vec<u16> = polls.iter().map(|p| p.status).collect();
    let tokens = polls
        .iter()
        .filter(|p| p.status == 200 && p.json()["token"].is_string())
        .count();
    assert_eq!(tokens, 1, "exactly one poll gets the token: {statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 410).count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_flow_logs_no_state_poll_secret_code_or_token() {
    let log_dir = TempDir::new("login-logs");
    let log_path = log_dir.0.join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Server::start_logging(&[("RUST_LOG", "trace")], log);
    sign_up(&server, "logs@example.com").await;
    let mine = prompt(&server, "Logged Client").await;
    let wrong = sign_in_through(&server, &mine.link, "logs@example.com", Some("BBBB-CCCC")).await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let done = sign_in_through(
        &server,
        &mine.link,
        "logs@example.com",
        Some(&mine.user_code),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let poll = get(&server.url(&mine.poll)).await.json();
    let token = poll["token"].as_str().unwrap().to_string();
    drop(server);
    let logged = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        logged.contains("GET /oauth2/check_state/{state}"),
        "the log was captured: {logged}"
    );
    let poll_secret = &mine.poll[mine.poll.find("poll_secret=").unwrap() + 12..];
    for (what, value) in [
        ("state", mine.state.as_str()),
        ("poll secret", poll_secret),
        ("user code", mine.user_code.as_str()),
        ("token", token.as_str()),
        ("password", PASSWORD),
    ] {
        assert!(!logged.contains(value), "the log contains the {what}");
    }
}
