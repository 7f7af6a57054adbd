//! The console's "Your MCP servers" page over HTTP with a cookie session: a real
//! MCP server on loopback (`tests/clients/remote_server.py`, reached through
//! `MIROBODY_REMOTE_DEV_LOOPBACK`) is added through the form and its tools appear in the
//! table; a dead URL is refused in words with what was typed kept (never the credential);
//! edit, switch off and on, probe again (also failing: the error in the row), delete; a
//! post without the CSRF token is refused and changes nothing; another user never sees
//! the row and cannot touch it. A server added switched off is saved without a
//! probe; the toggle probes it; the edit form renames.

use e2e::remote_server::RemoteServer;
use e2e::{Reply, Server, encode_form, send};

const REMOTE_TOKEN: &str = "remote-bearer-4f9c2e7a";
const DEAD_SECRET: &str = "dead-secret-71c3a9";

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A person signed in to the console: the session cookie and the page's CSRF token.
struct Person {
    cookie: String,
    csrf: String,
}

fn set_cookies(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_string())
        .collect()
}

/// The value of attribute `name` after `marker` in `body`.
fn attr_after(body: &str, marker: &str, name: &str) -> String {
    let at = body
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker}: {body}"));
    let rest = &body[at..];
    let start = rest.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    let end = start + rest[start..].find('"').unwrap();
    rest[start..end].to_string()
}

/// Signs up through the console's form (GET for the CSRF token and nonce cookie, POST).
async fn sign_up(server: &Server, email: &str) -> Person {
    let form = send("GET", &server.url("/console/signup"), &[], None).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let nonce = set_cookies(&form).remove(0);
    let csrf = attr_after(&form.body, "name=\"csrf\"", "value");
    let body = encode_form(&[
        ("csrf", &csrf),
        ("email", email),
        ("password", "a long enough password"),
    ]);
    let headers = vec![
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("cookie".to_string(), nonce),
    ];
    let done = send("POST", &server.url("/console/signup"), &headers, Some(body)).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = set_cookies(&done)
        .into_iter()
        .find(|c| c.starts_with("mirobody_session="))
        .expect("a session cookie");
    let mut person = Person {
        cookie,
        csrf: String::new(),
    };
    let page = person.get(server, "/console/servers").await;
    person.csrf = attr_after(&page.body, "data-csrf=", "data-csrf");
    person
}

impl Person {
    async fn get(&self, server: &Server, path: &str) -> Reply {
        let headers = vec![("cookie".to_string(), self.cookie.clone())];
        send("GET", &server.url(path), &headers, None).await
    }

    /// A form post with the session cookie, and the CSRF token when `csrf`.
    async fn post(&self, server: &Server, path: &str, pairs: &[(&str, &str)], csrf: bool) -> Reply {
        let mut all: Vec<(&str, &str)> = pairs.to_vec();
        if csrf {
            all.push(("csrf", &self.csrf));
        }
        let headers = vec![
            (
                "content-type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ),
            ("cookie".to_string(), self.cookie.clone()),
        ];
        send("POST", &server.url(path), &headers, Some(encode_form(&all))).await
    }
}

/// The `<tr data-server="name">` row of the page, if present.
fn row<'p>(page: &'p str, name: &str) -> Option<&'p str> {
    let start = page.find(&format!("<tr data-server=\"{name}\""))?;
    let end = start + page[start..].find("</tr>")?;
    Some(&page[start..end])
}

/// The text of the `td` with class `class` in `row`.
fn cell<'r>(row: &'r str, class: &str) -> &'r str {
    let start = row
        .find(&format!("<td class=\"{class}\""))
        .unwrap_or_else(|| panic!("no td.{class} in {row}"));
    let start = start + row[start..].find('>').unwrap() + 1;
    let end = start + row[start..].find("</td>").unwrap();
    &row[start..end]
}

fn assert_redirect(reply: &Reply, to: &str) {
    assert_eq!(reply.status, 303, "{}", reply.body);
    assert_eq!(reply.header("location"), Some(to));
}

#[tokio::test(flavor = "multi_thread")]
async fn console_servers_add_edit_toggle_probe_and_delete() {
    let mut remote = Some(RemoteServer::start(&["--token", REMOTE_TOKEN]));
    let url = remote.as_ref().unwrap().url();
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]);
    let alice = sign_up(&server, "alice@example.com").await;

    let empty = alice.get(&server, "/console/servers").await;
    assert_eq!(empty.status, 200);
    for id in [
        "table class=\"stack\" id=\"servers\"",
        "form id=\"server-add\"",
        "id=\"server-name\"",
        "id=\"server-url\"",
        "select id=\"server-auth-type\"",
        "id=\"server-credential\"",
        "id=\"server-header-name\"",
        "id=\"server-enabled\"",
        "id=\"server-allowed-tools\"",
        "id=\"server-add-button\"",
    ] {
        assert!(empty.body.contains(id), "{id} missing");
    }
    assert!(row(&empty.body, "shop").is_none());

    let add = [
        ("name", "shop"),
        ("url", url.as_str()),
        ("auth_type", "bearer"),
        ("credential", REMOTE_TOKEN),
        ("enabled", "on"),
        ("allowed_tools", ""),
    ];
    // Without the CSRF token: refused, nothing saved.
    let forged = alice.post(&server, "/console/servers", &add, false).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let page = alice.get(&server, "/console/servers").await;
    assert!(row(&page.body, "shop").is_none());

    // Added: probed, its tools in the table; the credential is only "set".
    let added = alice.post(&server, "/console/servers", &add, true).await;
    assert_redirect(&added, "/console/servers?done=added");
    let page = alice.get(&server, "/console/servers?done=added").await;
    assert_eq!(page.status, 200);
    assert!(page.body.len() < 50 * 1024, "{} bytes", page.body.len());
    assert!(page.body.contains("The server was added"), "{}", page.body);
    assert!(!page.body.contains(REMOTE_TOKEN));
    let shop = row(&page.body, "shop").expect("the shop row");
    let tools = cell(shop, "tools");
    for tool in ["lookup_order", "create_ticket", "always_fails", "stall"] {
        assert!(tools.contains(tool), "{tool} not in {tools}");
    }
    // Each tool with the name the AI sees and the description /mcp hands it (issue 31).
    assert!(
        tools.contains("<code class=\"exposed\">mcp__shop__lookup_order</code>")
            && tools.contains("Look up an order"),
        "{tools}"
    );
    assert_eq!(cell(shop, "auth"), "bearer token (set)");
    assert_eq!(cell(shop, "enabled"), "yes");
    assert_eq!(cell(shop, "last-error"), "");
    for class in [
        "server-toggle",
        "server-probe",
        "server-delete",
        "server-edit",
    ] {
        assert!(shop.contains(class), "{class} missing");
    }
    assert!(shop.contains("data-confirm="));

    // A dead URL: refused in words (422), the form keeps what was typed, not the secret.
    let dead = format!("http://127.0.0.1:{}/mcp", free_port());
    let refused = alice
        .post(
            &server,
            "/console/servers",
            &[
                ("name", "deadone"),
                ("url", &dead),
                ("auth_type", "bearer"),
                ("credential", DEAD_SECRET),
                ("enabled", "on"),
                ("allowed_tools", "lookup_order"),
            ],
            true,
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("The MCP server could not be probed"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("nothing was saved"));
    assert!(refused.body.contains("value=\"deadone\""));
    assert!(refused.body.contains(&format!("value=\"{dead}\"")));
    assert!(refused.body.contains("value=\"lookup_order\""));
    assert!(!refused.body.contains(DEAD_SECRET));
    assert!(row(&refused.body, "deadone").is_none());

    // A taken name: refused in words with its status.
    let taken = alice.post(&server, "/console/servers", &add, true).await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(
        taken.body.contains("is already registered"),
        "{}",
        taken.body
    );

    // Edit: the form says the credential is set, never shows it; a blank one keeps it.
    let edit = alice.get(&server, "/console/servers/shop").await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    assert!(edit.body.contains("form id=\"server-edit\""));
    assert!(edit.body.contains("Set. Leave blank to keep it."));
    assert!(!edit.body.contains(REMOTE_TOKEN));
    let saved = alice
        .post(
            &server,
            "/console/servers/shop",
            &[
                ("auth_type", "bearer"),
                ("credential", ""),
                ("allowed_tools", "lookup_order, create_ticket"),
                ("enabled", "on"),
            ],
            true,
        )
        .await;
    assert_redirect(&saved, "/console/servers?done=saved");
    let page = alice.get(&server, "/console/servers").await;
    let shop = row(&page.body, "shop").unwrap();
    assert_eq!(cell(shop, "allowed"), "lookup_order, create_ticket");
    assert_eq!(cell(shop, "auth"), "bearer token (set)");
    // A tool the server does not list: refused in words, what was typed kept.
    let unknown = alice
        .post(
            &server,
            "/console/servers/shop",
            &[
                ("auth_type", "bearer"),
                ("allowed_tools", "no_such_tool"),
                ("enabled", "on"),
            ],
            true,
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert!(
        unknown.body.contains("does not list: no_such_tool"),
        "{}",
        unknown.body
    );
    assert!(unknown.body.contains("value=\"no_such_tool\""));
    // Nothing was saved.
    let page = alice.get(&server, "/console/servers").await;
    assert_eq!(
        cell(row(&page.body, "shop").unwrap(), "allowed"),
        "lookup_order, create_ticket"
    );

    // Switch off, then on (switching on probes again).
    let off = alice
        .post(&server, "/console/servers/shop/toggle", &[], true)
        .await;
    assert_redirect(&off, "/console/servers?done=disabled");
    let page = alice.get(&server, "/console/servers").await;
    assert_eq!(cell(row(&page.body, "shop").unwrap(), "enabled"), "no");
    let on = alice
        .post(&server, "/console/servers/shop/toggle", &[], true)
        .await;
    assert_redirect(&on, "/console/servers?done=enabled");
    let page = alice.get(&server, "/console/servers").await;
    assert_eq!(cell(row(&page.body, "shop").unwrap(), "enabled"), "yes");

    // Probe again: fine while the server runs; once it is gone, the error in words.
    let probed = alice
        .post(&server, "/console/servers/shop/probe", &[], true)
        .await;
    assert_redirect(&probed, "/console/servers?done=probed");
    remote.take();
    let failed = alice
        .post(&server, "/console/servers/shop/probe", &[], true)
        .await;
    assert_eq!(failed.status, 422, "{}", failed.body);
    assert!(failed.body.contains("The MCP server could not be probed"));
    let shop = row(&failed.body, "shop").unwrap();
    assert!(
        cell(shop, "last-error").contains("class=\"error\""),
        "{shop}"
    );
    // The tools of the last good probe stay.
    assert!(cell(shop, "tools").contains("lookup_order"));

    // Another user: never sees the row, cannot touch it.
    let bob = sign_up(&server, "bob@example.com").await;
    let bobs = bob.get(&server, "/console/servers").await;
    assert_eq!(bobs.status, 200);
    assert!(row(&bobs.body, "shop").is_none());
    assert!(!bobs.body.contains(&url));
    let stranger = bob
        .post(&server, "/console/servers/shop/delete", &[], true)
        .await;
    assert_eq!(stranger.status, 404, "{}", stranger.body);
    assert!(stranger.body.contains("No MCP server named"));
    let edit = bob.get(&server, "/console/servers/shop").await;
    assert_eq!(edit.status, 404);
    assert!(!edit.body.contains(&url));
    // Alice's CSRF token does not work with Bob's cookie.
    let crossed = Person {
        cookie: bob.cookie.clone(),
        csrf: alice.csrf.clone(),
    }
    .post(&server, "/console/servers/shop/delete", &[], true)
    .await;
    assert_eq!(crossed.status, 403);

    // Delete: without the token refused; with it, gone.
    let forged = alice
        .post(&server, "/console/servers/shop/delete", &[], false)
        .await;
    assert_eq!(forged.status, 403);
    assert!(row(&alice.get(&server, "/console/servers").await.body, "shop").is_some());
    let deleted = alice
        .post(&server, "/console/servers/shop/delete", &[], true)
        .await;
    assert_redirect(&deleted, "/console/servers?done=deleted");
    let page = alice.get(&server, "/console/servers?done=deleted").await;
    assert!(row(&page.body, "shop").is_none());
    assert!(page.body.contains("The server was deleted."));

    // Signed out: the page sends you to sign in.
    let anonymous = send("GET", &server.url("/console/servers"), &[], None).await;
    assert_eq!(anonymous.status, 303);
}

/// Saving switched off, on the page: a server added with "Enabled" unchecked is saved without
/// contacting it (a loopback listener counts connections); the toggle then probes, and a
/// server that does not answer is refused in words and stays switched off.
#[tokio::test(flavor = "multi_thread")]
async fn console_adds_switched_off_without_a_probe_and_the_toggle_probes() {
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).unwrap();
    let offline = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let contacts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = contacts.clone();
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(socket);
        }
    });
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]);
    let kim = sign_up(&server, "kim@example.com").await;
    let added = kim
        .post(
            &server,
            "/console/servers",
            &[
                ("name", "later"),
                ("url", offline.as_str()),
                ("auth_type", "bearer"),
                ("credential", DEAD_SECRET),
                ("allowed_tools", ""),
            ],
            true,
        )
        .await;
    assert_redirect(&added, "/console/servers?done=added-off");
    let page = kim.get(&server, "/console/servers?done=added-off").await;
    assert!(page.body.contains("saved switched off"), "{}", page.body);
    let later = row(&page.body, "later").expect("the row");
    assert_eq!(cell(later, "enabled"), "no");
    assert_eq!(contacts.load(std::sync::atomic::Ordering::SeqCst), 0);

    let on = kim
        .post(&server, "/console/servers/later/toggle", &[], true)
        .await;
    assert_eq!(on.status, 422, "{}", on.body);
    assert!(on.body.contains("could not be switched on"), "{}", on.body);
    assert!(!on.body.contains(DEAD_SECRET));
    assert!(contacts.load(std::sync::atomic::Ordering::SeqCst) > 0);
    assert_eq!(cell(row(&on.body, "later").unwrap(), "enabled"), "no");
}

/// A person signed up on a server with the remote shop (bearer token) added through
/// the console's form: the remote, the server, the person.
async fn with_shop(email: &str) -> (RemoteServer, Server, Person) {
    let remote = RemoteServer::start(&["--token", REMOTE_TOKEN]);
    let url = remote.url();
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "4"),
    ]);
    let person = sign_up(&server, email).await;
    let added = person
        .post(
            &server,
            "/console/servers",
            &[
                ("name", "shop"),
                ("url", url.as_str()),
                ("auth_type", "bearer"),
                ("credential", REMOTE_TOKEN),
                ("enabled", "on"),
                ("allowed_tools", ""),
            ],
            true,
        )
        .await;
    assert_redirect(&added, "/console/servers?done=added");
    (remote, server, person)
}

/// Renaming, on the page: the edit form's name field renames the server (then the
/// edit page of the new name), its credential kept; a taken name is refused in words
/// with what was typed kept.
#[tokio::test(flavor = "multi_thread")]
async fn console_edit_renames_a_server() {
    let (_remote, server, lee) = with_shop("lee@example.com").await;
    let spare = lee
        .post(
            &server,
            "/console/servers",
            &[
                ("name", "spare"),
                ("url", "http://127.0.0.1:9/mcp"),
                ("auth_type", "none"),
                ("allowed_tools", ""),
            ],
            true,
        )
        .await;
    assert_redirect(&spare, "/console/servers?done=added-off");

    let edit = lee.get(&server, "/console/servers/shop").await;
    assert!(edit.body.contains("id=\"server-rename\""), "{}", edit.body);
    assert!(edit.body.contains("value=\"shop\""));
    let renamed = lee
        .post(
            &server,
            "/console/servers/shop",
            &[
                ("name", "store"),
                ("auth_type", "bearer"),
                ("credential", ""),
                ("allowed_tools", ""),
                ("enabled", "on"),
            ],
            true,
        )
        .await;
    assert_redirect(&renamed, "/console/servers/store");
    let page = lee.get(&server, "/console/servers").await;
    assert!(row(&page.body, "shop").is_none(), "{}", page.body);
    let store = row(&page.body, "store").expect("the renamed row");
    assert_eq!(cell(store, "auth"), "bearer token (set)");
    assert!(cell(store, "tools").contains("lookup_order"));
    // The kept credential still opens: probing again with it succeeds.
    let probed = lee
        .post(&server, "/console/servers/store/probe", &[], true)
        .await;
    assert_redirect(&probed, "/console/servers?done=probed");

    let taken = lee
        .post(
            &server,
            "/console/servers/store",
            &[
                ("name", "spare"),
                ("auth_type", "bearer"),
                ("allowed_tools", ""),
                ("enabled", "on"),
            ],
            true,
        )
        .await;
    assert_eq!(taken.status, 409, "{}", taken.body);
    assert!(
        taken.body.contains("is already registered"),
        "{}",
        taken.body
    );
    assert!(taken.body.contains("value=\"spare\""));
    let page = lee.get(&server, "/console/servers").await;
    assert!(row(&page.body, "store").is_some());
    assert!(cell(row(&page.body, "spare").unwrap(), "enabled").contains("no"));
}

/// The edit page's switches: a tool switched off, read-only and ask-first saved from
/// the form, shown in the table (`data-offered`, "off", "asks you first") and kept on
/// the form; an edit from an older form without the switches leaves them as they were.
#[tokio::test(flavor = "multi_thread")]
async fn console_switches_tools_off_and_asks_first() {
    let (_remote, server, kim) = with_shop("kim@example.com").await;
    let edit = kim.get(&server, "/console/servers/shop").await;
    assert!(
        edit.body.contains("id=\"server-controls\""),
        "{}",
        edit.body
    );
    assert!(
        edit.body.contains("value=\"create_ticket\" checked"),
        "{}",
        edit.body
    );

    // Everything on but always_fails and stall; ask first.
    let saved = kim
        .post(
            &server,
            "/console/servers/shop",
            &[
                ("name", "shop"),
                ("auth_type", "bearer"),
                ("credential", ""),
                ("allowed_tools", ""),
                ("enabled", "on"),
                ("controls", "1"),
                ("tool_on", "lookup_order"),
                ("tool_on", "create_ticket"),
                ("ask_first", "on"),
            ],
            true,
        )
        .await;
    assert_redirect(&saved, "/console/servers?done=saved");
    let page = kim.get(&server, "/console/servers").await;
    let shop = row(&page.body, "shop").expect("the row");
    let tools = cell(shop, "tools");
    assert!(
        tools.contains("data-tool=\"always_fails\" data-offered=\"false\""),
        "{tools}"
    );
    assert!(
        tools.contains("data-tool=\"lookup_order\" data-offered=\"true\""),
        "{tools}"
    );
    let ticket = &tools[tools.find("data-tool=\"create_ticket\"").unwrap()..];
    assert!(
        ticket[..ticket.find("</li>").unwrap()].contains("asks you first"),
        "{tools}"
    );
    let lookup = &tools[tools.find("data-tool=\"lookup_order\"").unwrap()..];
    assert!(
        !lookup[..lookup.find("</li>").unwrap()].contains("asks you first"),
        "a read-only tool is not asked about: {tools}"
    );
    let edit = kim.get(&server, "/console/servers/shop").await;
    assert!(
        edit.body.contains("value=\"always_fails\">"),
        "{}",
        edit.body
    );
    assert!(
        edit.body.contains("value=\"lookup_order\" checked"),
        "{}",
        edit.body
    );
    assert!(
        edit.body.contains(
            "id=\"server-ask-first\" name=\"ask_first\" type=\"checkbox\" value=\"on\" checked"
        ),
        "{}",
        edit.body
    );

    // An edit without the switches (an older form) leaves them as they are.
    let plain = kim
        .post(
            &server,
            "/console/servers/shop",
            &[
                ("name", "shop"),
                ("auth_type", "bearer"),
                ("credential", ""),
                ("allowed_tools", ""),
                ("enabled", "on"),
            ],
            true,
        )
        .await;
    assert_redirect(&plain, "/console/servers?done=saved");
    let page = kim.get(&server, "/console/servers").await;
    let tools = cell(row(&page.body, "shop").unwrap(), "tools").to_string();
    assert!(
        tools.contains("data-tool=\"always_fails\" data-offered=\"false\""),
        "{tools}"
    );
}
