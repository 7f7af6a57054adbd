//! The store contract: one suite of behaviours a user would notice, run unchanged on
//! both backends. The embedded run uses a fresh SQLite file; the DynamoDB run starts its
//! own moto server on a free loopback port (never the network) and stops it afterwards.

use std::path::PathBuf;
use std::time::Instant;

use super::{Created, DynamoStore, DynamoTables, EmbeddedStore, HealthStore, ReadingQuery, Store};
use crate::domain::{
    Account, AuthCode, DataPresence, Genotype, LoginState, LoginStatus, McpAuth, McpServerRecord,
    McpServerWrite, McpToolSnapshot, OAuthClient, PersonalUrl, Reading, ReadingValue,
    RefreshRecord, RefreshUse, UrlGrant,
};
use crate::testing::Moto;

// ---------------------------------------------------------------- fixtures

fn reading(indicator: &str, time: &str, source: &str, value: f64) -> Reading {
    Reading {
        indicator: indicator.to_string(),
        value: ReadingValue::Number(value),
        unit: Some("mg/dL".to_string()),
        time: time.to_string(),
        code_system: Some("LOINC".to_string()),
        code: Some("2345-7".to_string()),
        source: source.to_string(),
    }
}

fn genotype(rsid: &str, chromosome: &str, position: u64, call: &str) -> Genotype {
    Genotype {
        rsid: rsid.to_string(),
        chromosome: chromosome.to_string(),
        position,
        genotype: call.to_string(),
    }
}

fn all() -> ReadingQuery {
    ReadingQuery::default()
}

fn keys(keys: &[&str]) -> ReadingQuery {
    ReadingQuery {
        indicator_keys: Some(keys.iter().map(|k| k.to_string()).collect()),
        ..ReadingQuery::default()
    }
}

fn window(from: Option<&str>, to: Option<&str>) -> ReadingQuery {
    ReadingQuery {
        indicator_keys: None,
        from: from.map(String::from),
        to: to.map(String::from),
    }
}

fn times(readings: &[Reading]) -> Vec<&str> {
    readings.iter().map(|r| r.time.as_str()).collect()
}

fn positions(genotypes: &[Genotype]) -> Vec<u64> {
    genotypes.iter().map(|g| g.position).collect()
}

fn sorted_rsids(genotypes: &[Genotype]) -> Vec<String> {
    let mut rsids: Vec<String> = genotypes.iter().map(|g| g.rsid.clone()).collect();
    rsids.sort();
    rsids
}

fn account(user_id: &str, email: &str, password_hash: &str) -> Account {
    Account {
        user_id: user_id.to_string(),
        email: email.to_string(),
        password_hash: password_hash.to_string(),
        created_at: 1_700_000_000,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A personal URL; `tag` makes its secret and hash distinct.
fn personal(user: &str, tag: &str, expires_at: u64) -> PersonalUrl {
    PersonalUrl {
        sealed_secret: format!("sealed-{user}-{tag}"),
        secret_hash: format!("hash-{user}-{tag}"),
        expires_at,
    }
}

/// The grant a personal URL's secret resolves to.
fn personal_grant(user: &str, url: &PersonalUrl) -> UrlGrant {
    UrlGrant {
        user_id: user.to_string(),
        session_id: None,
        agent_name: None,
        expires_at: url.expires_at,
    }
}

fn pending(expires_at: u64) -> LoginState {
    LoginState {
        status: LoginStatus::Pending,
        expires_at,
    }
}

fn oauth_client(client_id: &str, name: &str) -> OAuthClient {
    OAuthClient {
        client_id: client_id.to_string(),
        secret_hash: Some(format!("sha256-of-{name}-secret")),
        redirect_uris: strings(&["https://app.example/callback", "http://127.0.0.1:33418/cb"]),
        grant_types: strings(&["authorization_code", "refresh_token"]),
        token_endpoint_auth_method: "client_secret_post".to_string(),
        client_name: Some(name.to_string()),
        created_at: 1_700_000_000,
    }
}

fn auth_code(user: &str, resource: Option<&str>, expires_at: u64) -> AuthCode {
    AuthCode {
        client_id: format!("{user}-client"),
        user_id: user.to_string(),
        scope: "read:health read:genetics".to_string(),
        redirect_uri: "https://app.example/callback?x=1".to_string(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".to_string(),
        resource: resource.map(String::from),
        expires_at,
    }
}

fn refresh_record(user: &str, family: &str, expires_at: u64) -> RefreshRecord {
    RefreshRecord {
        user_id: user.to_string(),
        client_id: format!("{user}-client"),
        scope: "read:health".to_string(),
        resource: Some("https://mcp.example/mcp".to_string()),
        family_id: family.to_string(),
        expires_at,
    }
}

/// An external MCP server with every field set (a header credential, a tool list with
/// and without descriptions, an allow-list).
fn mcp_server(name: &str, url: &str) -> McpServerRecord {
    McpServerRecord {
        name: name.to_string(),
        url: url.to_string(),
        auth: McpAuth::Header {
            name: "X-Api-Key".to_string(),
        },
        sealed_credential: Some(format!("sealed-credential-for-{name}")),
        enabled: true,
        order: 2,
        allowed_tools: Some(strings(&["forecast"])),
        tools: vec![
            McpToolSnapshot {
                name: "forecast".to_string(),
                description: Some("Weather \"forecast\", ±5 days.".to_string()),
            },
            McpToolSnapshot {
                name: "alerts".to_string(),
                description: None,
            },
        ],
        server_name: Some("Weather Server".to_string()),
        created_at: 1_700_000_000,
        updated_at: 1_700_000_100,
        last_connected_at: None,
        last_connect_error: None,
    }
}

/// The plainest server: no auth, every tool, nothing probed.
fn plain_mcp_server(name: &str, url: &str) -> McpServerRecord {
    McpServerRecord {
        auth: McpAuth::None,
        sealed_credential: None,
        enabled: false,
        order: -1,
        allowed_tools: None,
        tools: Vec::new(),
        server_name: None,
        ..mcp_server(name, url)
    }
}

fn names(servers: &[McpServerRecord]) -> Vec<&str> {
    servers.iter().map(|s| s.name.as_str()).collect()
}

/// Seconds in a year (a personal URL's lifetime).
const YEAR: u64 = 365 * 24 * 3600;

// ---------------------------------------------------------------- the contract

/// Runs every case; each uses its own users (prefixed with `run`), so cases cannot see
/// each other's data even on a shared table.
async fn contract(store: &dyn Store, run: &str) {
    let user = |case: &str| format!("{run}-{case}");
    presence_follows_writes(store, &user("presence")).await;
    readings_upsert_by_identity(store, &user("upsert")).await;
    readings_round_trip_every_field(store, &user("fields")).await;
    readings_filter_by_indicator_and_time(store, &user("filter")).await;
    readings_ordered_by_indicator_then_time(store, &user("order")).await;
    genotypes_upsert_and_lookup_by_rsid(store, &user("rsid")).await;
    genotype_ranges_ordered_and_confined(store, &user("range"), &user("range-other")).await;
    users_are_isolated(store, &user("alice"), &user("bob")).await;
    delete_removes_everything(store, &user("delete"), &user("delete-bystander")).await;
    large_batches_round_trip(store, &user("bulk")).await;

    // Keys-table records carry their own expiry; "now" is passed in, the real clock's
    // (so nothing written here has expired for a real TTL either), and later times
    // stand for "after expiry".
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    accounts_found_by_email_and_id(store, &user("account")).await;
    taken_email_writes_nothing(store, &user("taken-1"), &user("taken-2")).await;
    shares_follow_owner_and_grantee(store, &user("owner"), &user("grantee"), &user("third")).await;
    url_grants_expire(store, &user("grant"), now).await;
    personal_url_is_claimed_once(store, &user("claim"), now).await;
    racing_claims_get_one_url(store, &user("race"), now).await;
    expired_personal_url_is_replaced(store, &user("expired-url"), now).await;
    revoked_personal_url_stops_resolving(store, &user("revoke"), now).await;
    login_state_completes_once(store, &user("login"), now).await;

    clients_are_registered_once(store, &user("client")).await;
    codes_are_taken_once(store, &user("code"), now).await;
    racing_takes_get_one_code(store, &user("code-race"), now).await;
    expired_code_is_refused(store, &user("code-expired"), now).await;
    refresh_tokens_are_used_once(store, &user("refresh"), now).await;
    racing_refresh_uses_get_one_fresh(store, &user("refresh-race"), now).await;
    revoked_family_reads_as_reused(store, &user("family"), now).await;

    mcp_servers_round_trip_in_name_order(store, &user("mcp")).await;
    mcp_server_names_and_urls_are_taken_once(store, &user("mcp-taken")).await;
    mcp_server_replace_keeps_its_url(store, &user("mcp-replace")).await;
    mcp_connections_are_recorded(store, &user("mcp-connect")).await;
    mcp_server_delete_frees_its_url(store, &user("mcp-delete")).await;
    mcp_servers_are_per_user(store, &user("mcp-alice"), &user("mcp-bob")).await;
    mcp_servers_are_not_user_data(store, &user("mcp-data")).await;
    presence_and_servers_come_in_one_read(store, &user("mcp-both"), &user("mcp-next")).await;
}

async fn presence_follows_writes(store: &dyn Store, user: &str) {
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "empty user has nothing"
    );
    store.put_readings(user, &[]).await.unwrap();
    store.put_genotypes(user, &[]).await.unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "empty writes change nothing"
    );

    store
        .put_readings(
            user,
            &[reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0)],
        )
        .await
        .unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: true,
            genotype: false
        }
    );

    store
        .put_genotypes(user, &[genotype("rs1", "1", 100, "AG")])
        .await
        .unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: true,
            genotype: true
        }
    );
}

async fn readings_upsert_by_identity(store: &dyn Store, user: &str) {
    let first = reading("Hemoglobin A1c", "2024-02-01T09:00:00", "lab-a", 5.9);
    let report = store
        .put_readings(user, std::slice::from_ref(&first))
        .await
        .unwrap();
    assert_eq!(report.written, 1);

    // Same identity (indicator key, time, source), new value and spelling: replaced in place.
    let mut again = reading("hemoglobin  a1c ", "2024-02-01T09:00:00", "lab-a", 6.1);
    again.unit = Some("%".to_string());
    let report = store
        .put_readings(user, std::slice::from_ref(&again))
        .await
        .unwrap();
    assert_eq!(report.written, 1);
    assert_eq!(
        store.readings(user, &all()).await.unwrap(),
        vec![again.clone()],
        "re-upload replaces"
    );

    // Another source is another reading.
    let other_source = reading("Hemoglobin A1c", "2024-02-01T09:00:00", "lab-b", 6.0);
    store
        .put_readings(user, std::slice::from_ref(&other_source))
        .await
        .unwrap();
    let rows = store.readings(user, &all()).await.unwrap();
    assert_eq!(rows.len(), 2, "different source, two rows");

    // A batch naming one identity twice keeps one row: the last one.
    let dup_a = reading("LDL", "2024-02-02T09:00:00", "lab-a", 100.0);
    let dup_b = reading("ldl", "2024-02-02T09:00:00", "lab-a", 101.0);
    store
        .put_readings(user, &[dup_a, dup_b.clone()])
        .await
        .unwrap();
    assert_eq!(
        store.readings(user, &keys(&["ldl"])).await.unwrap(),
        vec![dup_b],
        "last of a repeated identity wins"
    );
}

async fn readings_round_trip_every_field(store: &dyn Store, user: &str) {
    let text = Reading {
        indicator: "Urine Protein (dipstick)".to_string(),
        value: ReadingValue::Text("trace, see note: ±".to_string()),
        unit: None,
        time: "2024-03-01T10:00:00".to_string(),
        code_system: None,
        code: None,
        source: "report.pdf#page=2".to_string(),
    };
    let tiny = reading(
        "Troponin",
        "2024-03-01T10:00:00",
        "lab",
        0.000_123_456_789_012_345_6,
    );
    let negative = reading("Base Excess", "2024-03-01T10:00:00", "lab", -2.5);
    let integer = reading("Platelets", "2024-03-01T10:00:00", "lab", 250_000.0);
    let written = vec![text, tiny, negative, integer];
    store.put_readings(user, &written).await.unwrap();
    let mut expected = written.clone();
    expected.sort_by_key(|r| Reading::indicator_key(&r.indicator));
    assert_eq!(
        store.readings(user, &all()).await.unwrap(),
        expected,
        "every field reads back exactly"
    );
}

async fn readings_filter_by_indicator_and_time(store: &dyn Store, user: &str) {
    let data = [
        reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0),
        reading("Glucose", "2024-01-15T08:00:00", "lab", 95.0),
        reading("Glucose", "2024-01-31T23:00:00", "lab", 99.0),
        reading("Glucose", "2024-02-01T00:00:00", "lab", 101.0),
        reading("LDL", "2024-01-15T08:00:00", "lab", 120.0),
        reading("HDL", "2024-01-15T08:00:00", "lab", 50.0),
    ];
    store.put_readings(user, &data).await.unwrap();

    let picked = store
        .readings(user, &keys(&["glucose", "hdl"]))
        .await
        .unwrap();
    let names: Vec<&str> = picked.iter().map(|r| r.indicator.as_str()).collect();
    assert_eq!(
        names,
        ["Glucose", "Glucose", "Glucose", "Glucose", "HDL"],
        "only the asked indicators"
    );
    assert!(
        store.readings(user, &keys(&[])).await.unwrap().is_empty(),
        "no keys, no readings"
    );
    assert!(
        store
            .readings(user, &keys(&["unknown"]))
            .await
            .unwrap()
            .is_empty()
    );

    // Bounds are inclusive at both ends, compared as text.
    let exact = ReadingQuery {
        indicator_keys: Some(vec!["glucose".to_string()]),
        from: Some("2024-01-15T08:00:00".to_string()),
        to: Some("2024-01-31T23:00:00".to_string()),
    };
    assert_eq!(
        times(&store.readings(user, &exact).await.unwrap()),
        ["2024-01-15T08:00:00", "2024-01-31T23:00:00"]
    );

    // A date as `to` covers that whole day.
    let january = store
        .readings(user, &window(Some("2024-01-01"), Some("2024-01-31")))
        .await
        .unwrap();
    assert_eq!(january.len(), 5, "all of January, every indicator");
    assert!(january.iter().all(|r| r.time.starts_with("2024-01")));
    let glucose_january = ReadingQuery {
        to: Some("2024-01-31".to_string()),
        ..keys(&["glucose"])
    };
    assert_eq!(
        store.readings(user, &glucose_january).await.unwrap().len(),
        3
    );

    let from_feb = store
        .readings(user, &window(Some("2024-02-01"), None))
        .await
        .unwrap();
    assert_eq!(times(&from_feb), ["2024-02-01T00:00:00"]);
    assert!(
        store
            .readings(user, &window(Some("2024-03-01"), Some("2024-02-01")))
            .await
            .unwrap()
            .is_empty(),
        "empty window"
    );
    let swapped = ReadingQuery {
        from: Some("2024-03-01".to_string()),
        to: Some("2024-02-01".to_string()),
        ..keys(&["glucose"])
    };
    assert!(
        store.readings(user, &swapped).await.unwrap().is_empty(),
        "empty window by key"
    );
}

async fn readings_ordered_by_indicator_then_time(store: &dyn Store, user: &str) {
    // Written out of order; "a b" and "a" are the pair a `#`-separated sort key orders wrongly.
    let data = [
        reading("Zinc", "2024-01-02T00:00:00", "lab", 1.0),
        reading("A", "2024-01-03T00:00:00", "lab", 2.0),
        reading("A B", "2024-01-01T00:00:00", "lab", 3.0),
        reading("A", "2024-01-01T00:00:00", "lab", 4.0),
        reading("Zinc", "2024-01-01T00:00:00", "lab", 5.0),
        reading("A", "2024-01-02", "lab", 6.0),
        reading("A", "2024-01-02T00:00:00", "lab", 7.0),
    ];
    store.put_readings(user, &data).await.unwrap();
    let expected = [
        ("a", "2024-01-01T00:00:00"),
        ("a", "2024-01-02"),
        ("a", "2024-01-02T00:00:00"),
        ("a", "2024-01-03T00:00:00"),
        ("a b", "2024-01-01T00:00:00"),
        ("zinc", "2024-01-01T00:00:00"),
        ("zinc", "2024-01-02T00:00:00"),
    ];
    for query in [all(), keys(&["zinc", "a b", "a"])] {
        let got = store.readings(user, &query).await.unwrap();
        let got: Vec<(String, &str)> = got
            .iter()
            .map(|r| (Reading::indicator_key(&r.indicator), r.time.as_str()))
            .collect();
        let want: Vec<(String, &str)> = expected.iter().map(|(k, t)| (k.to_string(), *t)).collect();
        assert_eq!(got, want, "ordered by indicator key, then time ({query:?})");
    }
}

async fn genotypes_upsert_and_lookup_by_rsid(store: &dyn Store, user: &str) {
    let report = store
        .put_genotypes(
            user,
            &[
                genotype("rs42", "7", 117_559_590, "AG"),
                genotype("i5000", "X", 5, "--"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(report.written, 2);
    // Same rsid again: replaced, not duplicated.
    store
        .put_genotypes(user, &[genotype("rs42", "7", 117_559_590, "GG")])
        .await
        .unwrap();

    let ask: Vec<String> = ["rs42", "rs999999", "i5000", "rs42"]
        .map(String::from)
        .to_vec();
    let mut found = store.genotypes_by_rsid(user, &ask).await.unwrap();
    found.sort_by(|a, b| a.rsid.cmp(&b.rsid));
    assert_eq!(
        found,
        vec![
            genotype("i5000", "X", 5, "--"),
            genotype("rs42", "7", 117_559_590, "GG")
        ],
        "unknown rsids absent"
    );

    // Hostile input is data, never query text.
    let hostile: Vec<String> = [
        "rs1' OR 1=1 --",
        "rs42\" OR \"1\"=\"1",
        "%",
        "*",
        "",
        "g#rs42",
        "rs42#",
    ]
    .map(String::from)
    .to_vec();
    assert!(
        store
            .genotypes_by_rsid(user, &hostile)
            .await
            .unwrap()
            .is_empty(),
        "injection finds nothing"
    );
    let odd = genotype("rs1' or 1=1 --", "1", 1, "AA");
    store
        .put_genotypes(user, std::slice::from_ref(&odd))
        .await
        .unwrap();
    assert_eq!(
        store
            .genotypes_by_rsid(user, &["rs1' or 1=1 --".to_string()])
            .await
            .unwrap(),
        vec![odd]
    );
    assert_eq!(
        store
            .genotypes_by_rsid(user, &["rs42".to_string()])
            .await
            .unwrap()
            .len(),
        1,
        "other rows untouched"
    );
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: false,
            genotype: true
        }
    );
}

async fn genotype_ranges_ordered_and_confined(store: &dyn Store, user: &str, other: &str) {
    let data = [
        genotype("rs300", "1", 300, "CC"),
        genotype("rs100", "1", 100, "AA"),
        genotype("rs250", "1", 250, "AT"),
        genotype("rs200", "1", 200, "AG"),
        genotype("rs150x", "11", 150, "GG"),
        genotype("rs150y", "X", 150, "TT"),
        genotype("rs150z", "10", 200, "TT"),
    ];
    store.put_genotypes(user, &data).await.unwrap();
    store
        .put_genotypes(
            other,
            &[
                genotype("rs999", "1", 150, "CC"),
                genotype("rs250", "1", 250, "GG"),
            ],
        )
        .await
        .unwrap();

    let got = store.genotypes_in_range(user, "1", 100, 250).await.unwrap();
    assert_eq!(
        positions(&got),
        [100, 200, 250],
        "inclusive, ordered by position"
    );
    assert!(got.iter().all(|g| g.chromosome == "1"));
    assert_eq!(
        got[2],
        genotype("rs250", "1", 250, "AT"),
        "the user's own call, not the other user's"
    );

    assert_eq!(
        positions(
            &store
                .genotypes_in_range(user, "1", 0, u64::MAX)
                .await
                .unwrap()
        ),
        [100, 200, 250, 300]
    );
    assert_eq!(
        positions(&store.genotypes_in_range(user, "1", 101, 199).await.unwrap()),
        Vec::<u64>::new()
    );
    assert!(
        store
            .genotypes_in_range(user, "1", 300, 100)
            .await
            .unwrap()
            .is_empty(),
        "from > to is empty"
    );
    assert_eq!(
        sorted_rsids(&store.genotypes_in_range(user, "11", 0, 1000).await.unwrap()),
        ["rs150x"]
    );
    assert!(
        store
            .genotypes_in_range(user, "2", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // Moving a SNP (new build coordinates) moves it in range queries too.
    store
        .put_genotypes(user, &[genotype("rs100", "1", 400, "AA")])
        .await
        .unwrap();
    assert_eq!(
        positions(
            &store
                .genotypes_in_range(user, "1", 0, u64::MAX)
                .await
                .unwrap()
        ),
        [200, 250, 300, 400]
    );
}

async fn users_are_isolated(store: &dyn Store, alice: &str, bob: &str) {
    let shared_reading = reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0);
    store
        .put_readings(alice, std::slice::from_ref(&shared_reading))
        .await
        .unwrap();
    store
        .put_genotypes(alice, &[genotype("rs1", "1", 1, "AA")])
        .await
        .unwrap();

    assert_eq!(
        store.data_presence(bob).await.unwrap(),
        DataPresence::default()
    );
    assert!(store.readings(bob, &all()).await.unwrap().is_empty());
    assert!(
        store
            .genotypes_by_rsid(bob, &["rs1".to_string()])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .genotypes_in_range(bob, "1", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // Bob writing the same identities does not touch Alice's rows.
    let mut bobs = shared_reading.clone();
    bobs.value = ReadingValue::Number(200.0);
    store.put_readings(bob, &[bobs]).await.unwrap();
    store
        .put_genotypes(bob, &[genotype("rs1", "1", 1, "TT")])
        .await
        .unwrap();
    assert_eq!(
        store.readings(alice, &all()).await.unwrap(),
        vec![shared_reading]
    );
    assert_eq!(
        store
            .genotypes_by_rsid(alice, &["rs1".to_string()])
            .await
            .unwrap(),
        vec![genotype("rs1", "1", 1, "AA")]
    );
}

async fn delete_removes_everything(store: &dyn Store, user: &str, bystander: &str) {
    let readings: Vec<Reading> = (0..30)
        .map(|i| {
            reading(
                &format!("Indicator {}", i % 3),
                &format!("2024-01-{:02}T00:00:00", i + 1),
                "lab",
                f64::from(i),
            )
        })
        .collect();
    let genotypes: Vec<Genotype> = (0..30)
        .map(|i| genotype(&format!("rs{i}"), "2", 1000 + i, "AG"))
        .collect();
    for who in [user, bystander] {
        store.put_readings(who, &readings).await.unwrap();
        store.put_genotypes(who, &genotypes).await.unwrap();
    }

    store.delete_user_data(user).await.unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "presence off after delete"
    );
    assert!(store.readings(user, &all()).await.unwrap().is_empty());
    let rsids: Vec<String> = genotypes.iter().map(|g| g.rsid.clone()).collect();
    assert!(
        store
            .genotypes_by_rsid(user, &rsids)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .genotypes_in_range(user, "2", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // Others keep theirs; deleting again is harmless; the user can upload again.
    assert_eq!(store.readings(bystander, &all()).await.unwrap().len(), 30);
    assert_eq!(
        store.data_presence(bystander).await.unwrap(),
        DataPresence {
            health: true,
            genotype: true
        }
    );
    store.delete_user_data(user).await.unwrap();
    store.put_genotypes(user, &genotypes[..1]).await.unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: false,
            genotype: true
        }
    );
}

async fn large_batches_round_trip(store: &dyn Store, user: &str) {
    // 1,000 readings: 10 indicators x 100 days, written in one call in scrambled order.
    let mut readings: Vec<Reading> = (0..1000u32)
        .map(|i| {
            let day = i / 10;
            let time = format!("2023-{:02}-{:02}T07:30:00", day / 28 + 1, day % 28 + 1);
            reading(
                &format!("Marker {}", i % 10),
                &time,
                "wearable",
                f64::from(i) / 10.0,
            )
        })
        .collect();
    readings.reverse();
    readings.swap(0, 500);
    let report = store.put_readings(user, &readings).await.unwrap();
    assert_eq!(report.written, 1000);

    let back = store.readings(user, &all()).await.unwrap();
    assert_eq!(back.len(), 1000, "every reading reads back");
    let mut expected = readings.clone();
    expected.sort_by_cached_key(|r| (Reading::indicator_key(&r.indicator), r.time.clone()));
    assert_eq!(back, expected, "complete and ordered");
    let one = store
        .readings(user, &keys(&["marker 3", "marker 7"]))
        .await
        .unwrap();
    assert_eq!(one.len(), 200);

    // 1,000 genotypes: lookups span several BatchGetItem requests, ranges several pages.
    let genotypes: Vec<Genotype> = (0..1000u64)
        .map(|i| genotype(&format!("rs{}", 1_000_000 - i), "3", 10 * i + 1, "CT"))
        .collect();
    assert_eq!(
        store.put_genotypes(user, &genotypes).await.unwrap().written,
        1000
    );
    let rsids: Vec<String> = genotypes
        .iter()
        .step_by(3)
        .map(|g| g.rsid.clone())
        .chain(["rs1".to_string()])
        .collect();
    let found = store.genotypes_by_rsid(user, &rsids).await.unwrap();
    assert_eq!(found.len(), 334, "every stored rsid asked for, none other");
    let range = store
        .genotypes_in_range(user, "3", 1, 10 * 999 + 1)
        .await
        .unwrap();
    assert_eq!(range.len(), 1000);
    assert!(
        range.windows(2).all(|w| w[0].position < w[1].position),
        "ordered by position"
    );

    store.delete_user_data(user).await.unwrap();
    assert!(
        store.readings(user, &all()).await.unwrap().is_empty(),
        "bulk delete pages through everything"
    );
    assert!(
        store
            .genotypes_in_range(user, "3", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default()
    );
}

async fn accounts_found_by_email_and_id(store: &dyn Store, user: &str) {
    let email = format!("{user}@example.com");
    assert_eq!(store.account_by_email(&email).await.unwrap(), None);
    assert_eq!(store.account(user).await.unwrap(), None);

    let ada = account(user, &email, "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA");
    assert_eq!(store.create_account(&ada).await.unwrap(), Created::Created);
    assert_eq!(
        store.account_by_email(&email).await.unwrap(),
        Some(ada.clone()),
        "found by e-mail"
    );
    assert_eq!(
        store.account(user).await.unwrap(),
        Some(ada.clone()),
        "found by id"
    );
    assert_eq!(
        store
            .account_by_email(&format!("other-{email}"))
            .await
            .unwrap(),
        None
    );

    // Deleting the user's data leaves the account.
    store.delete_user_data(user).await.unwrap();
    assert_eq!(store.account(user).await.unwrap(), Some(ada));
}

async fn taken_email_writes_nothing(store: &dyn Store, first: &str, second: &str) {
    let email = format!("{first}@example.com");
    let original = account(first, &email, "hash-of-first");
    assert_eq!(
        store.create_account(&original).await.unwrap(),
        Created::Created
    );

    let intruder = Account {
        created_at: 1_800_000_000,
        ..account(second, &email, "hash-of-second")
    };
    assert_eq!(
        store.create_account(&intruder).await.unwrap(),
        Created::EmailTaken
    );
    assert_eq!(
        store.create_account(&original).await.unwrap(),
        Created::EmailTaken,
        "creating the same account again"
    );
    assert_eq!(
        store.account_by_email(&email).await.unwrap(),
        Some(original.clone()),
        "the first account is unchanged"
    );
    assert_eq!(store.account(first).await.unwrap(), Some(original));
    assert_eq!(
        store.account(second).await.unwrap(),
        None,
        "the refused account was not written"
    );

    // The refused user id is free for another e-mail.
    let retry = account(second, &format!("{second}@example.com"), "hash-of-second");
    assert_eq!(
        store.create_account(&retry).await.unwrap(),
        Created::Created
    );
    assert_eq!(store.account(second).await.unwrap(), Some(retry));
}

async fn shares_follow_owner_and_grantee(
    store: &dyn Store,
    owner: &str,
    grantee: &str,
    third: &str,
) {
    assert_eq!(store.share(owner, grantee).await.unwrap(), None);

    let read = strings(&["read:health"]);
    store.put_share(owner, grantee, &read).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), Some(read));
    assert_eq!(
        store.share(grantee, owner).await.unwrap(),
        None,
        "a share goes one way"
    );
    assert_eq!(store.share(owner, third).await.unwrap(), None);
    assert_eq!(store.share(third, grantee).await.unwrap(), None);

    let wider = strings(&["read:health", "read:genetics"]);
    store.put_share(owner, grantee, &wider).await.unwrap();
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        Some(wider.clone()),
        "put replaces"
    );

    let back = strings(&["read:genetics"]);
    store.put_share(grantee, owner, &back).await.unwrap();
    store.put_share(owner, third, &back).await.unwrap();
    assert_eq!(
        store.share(owner, grantee).await.unwrap(),
        Some(wider.clone()),
        "other pairs are separate"
    );

    // Deleting the user's health data leaves shares.
    store.delete_user_data(owner).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), Some(wider));

    store.delete_share(owner, grantee).await.unwrap();
    assert_eq!(store.share(owner, grantee).await.unwrap(), None);
    assert_eq!(
        store.share(grantee, owner).await.unwrap(),
        Some(back.clone()),
        "the reverse share stays"
    );
    assert_eq!(store.share(owner, third).await.unwrap(), Some(back));
    store.delete_share(owner, grantee).await.unwrap();
}

async fn url_grants_expire(store: &dyn Store, user: &str, now: u64) {
    let temporary = UrlGrant {
        user_id: user.to_string(),
        session_id: Some("session-1".to_string()),
        agent_name: Some("Claude".to_string()),
        expires_at: now + 600,
    };
    let hash = format!("{user}-temporary");
    store.put_url_grant(&hash, &temporary).await.unwrap();
    assert_eq!(
        store.url_grant(&hash, now).await.unwrap(),
        Some(temporary.clone())
    );
    assert_eq!(
        store.url_grant(&hash, now + 599).await.unwrap(),
        Some(temporary.clone())
    );
    assert_eq!(
        store.url_grant(&hash, now + 600).await.unwrap(),
        None,
        "expired at expires_at"
    );
    assert_eq!(store.url_grant(&hash, now + 10 * YEAR).await.unwrap(), None);
    assert_eq!(
        store.url_grant(&hash, now).await.unwrap(),
        Some(temporary),
        "expired reads hide the grant without deleting it"
    );

    let plain = UrlGrant {
        user_id: user.to_string(),
        session_id: None,
        agent_name: None,
        expires_at: now + YEAR,
    };
    let plain_hash = format!("{user}-plain");
    store.put_url_grant(&plain_hash, &plain).await.unwrap();
    assert_eq!(
        store.url_grant(&plain_hash, now).await.unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .url_grant(&format!("{user}-unknown"), now)
            .await
            .unwrap(),
        None
    );
}

async fn personal_url_is_claimed_once(store: &dyn Store, user: &str, now: u64) {
    let first = personal(user, "first", now + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &first, now).await.unwrap(),
        first
    );
    let second = personal(user, "second", now + YEAR + 60);
    assert_eq!(
        store
            .claim_personal_url(user, &second, now + 60)
            .await
            .unwrap(),
        first,
        "a live URL is returned unchanged"
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        Some(personal_grant(user, &first)),
        "the claimed secret resolves to the user"
    );
    assert_eq!(
        store.url_grant(&second.secret_hash, now).await.unwrap(),
        None,
        "the losing candidate wrote nothing"
    );
}

async fn racing_claims_get_one_url(store: &dyn Store, user: &str, now: u64) {
    let a = personal(user, "a", now + YEAR);
    let b = personal(user, "b", now + YEAR);
    let (got_a, got_b) = tokio::join!(
        store.claim_personal_url(user, &a, now),
        store.claim_personal_url(user, &b, now)
    );
    let (got_a, got_b) = (got_a.unwrap(), got_b.unwrap());
    assert_eq!(got_a, got_b, "both callers get the same URL");
    assert!(got_a == a || got_a == b);
    let loser = if got_a == a { &b } else { &a };
    assert_eq!(
        store.url_grant(&got_a.secret_hash, now).await.unwrap(),
        Some(personal_grant(user, &got_a))
    );
    assert_eq!(
        store.url_grant(&loser.secret_hash, now).await.unwrap(),
        None,
        "only the winner's secret resolves"
    );
}

async fn expired_personal_url_is_replaced(store: &dyn Store, user: &str, now: u64) {
    let old = personal(user, "old", now + 100);
    assert_eq!(
        store.claim_personal_url(user, &old, now).await.unwrap(),
        old
    );

    let later = now + 100; // expires_at <= now: expired
    let new = personal(user, "new", later + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &new, later).await.unwrap(),
        new,
        "an expired URL is replaced"
    );
    assert_eq!(
        store.url_grant(&old.secret_hash, now).await.unwrap(),
        None,
        "the old secret's grant is gone, not just expired"
    );
    assert_eq!(
        store.url_grant(&new.secret_hash, later).await.unwrap(),
        Some(personal_grant(user, &new))
    );
    let another = personal(user, "another", later + YEAR + 1);
    assert_eq!(
        store
            .claim_personal_url(user, &another, later + 1)
            .await
            .unwrap(),
        new,
        "the replacement is the live one now"
    );
}

async fn revoked_personal_url_stops_resolving(store: &dyn Store, user: &str, now: u64) {
    assert!(
        !store.revoke_personal_url(user).await.unwrap(),
        "nothing to revoke"
    );
    let first = personal(user, "first", now + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &first, now).await.unwrap(),
        first
    );
    assert!(store.revoke_personal_url(user).await.unwrap());
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None,
        "a revoked secret resolves to nothing"
    );
    assert!(!store.revoke_personal_url(user).await.unwrap());

    let second = personal(user, "second", now + YEAR);
    assert_eq!(
        store.claim_personal_url(user, &second, now).await.unwrap(),
        second,
        "after revoking, a claim gives a new URL"
    );
    assert_eq!(
        store.url_grant(&second.secret_hash, now).await.unwrap(),
        Some(personal_grant(user, &second))
    );
    assert_eq!(
        store.url_grant(&first.secret_hash, now).await.unwrap(),
        None
    );
}

async fn login_state_completes_once(store: &dyn Store, run: &str, now: u64) {
    let state = format!("{run}-state");
    assert_eq!(store.login_state(&state).await.unwrap(), None);
    store
        .put_login_state(&state, &pending(now + 600))
        .await
        .unwrap();
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(pending(now + 600))
    );

    assert!(
        store
            .complete_login_state(&state, "sealed-token-1", now + 10)
            .await
            .unwrap()
    );
    let completed = LoginState {
        status: LoginStatus::Completed {
            sealed_token: "sealed-token-1".to_string(),
        },
        expires_at: now + 600,
    };
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(completed.clone())
    );
    assert!(
        !store
            .complete_login_state(&state, "sealed-token-2", now + 20)
            .await
            .unwrap(),
        "completing twice"
    );
    assert_eq!(
        store.login_state(&state).await.unwrap(),
        Some(completed),
        "the first token stays"
    );

    // Expired while pending: it cannot complete, and still reads back (a 410, not a 404).
    let late = format!("{run}-late");
    store
        .put_login_state(&late, &pending(now + 600))
        .await
        .unwrap();
    assert!(
        !store
            .complete_login_state(&late, "sealed-token", now + 600)
            .await
            .unwrap(),
        "completing at expires_at"
    );
    assert_eq!(
        store.login_state(&late).await.unwrap(),
        Some(pending(now + 600)),
        "an expired state is still returned, with its expiry"
    );

    // An unknown state cannot be completed (and completing does not create it).
    let unknown = format!("{run}-unknown");
    assert!(
        !store
            .complete_login_state(&unknown, "sealed-token", now)
            .await
            .unwrap()
    );
    assert_eq!(store.login_state(&unknown).await.unwrap(), None);
}

async fn clients_are_registered_once(store: &dyn Store, run: &str) {
    let id = format!("{run}-app");
    assert_eq!(store.client(&id).await.unwrap(), None);

    let first = oauth_client(&id, "First App");
    assert!(store.put_client(&first).await.unwrap());
    assert_eq!(
        store.client(&id).await.unwrap(),
        Some(first.clone()),
        "every field reads back"
    );

    let second = OAuthClient {
        created_at: 1_800_000_000,
        ..oauth_client(&id, "Second App")
    };
    assert!(
        !store.put_client(&second).await.unwrap(),
        "a taken id is refused"
    );
    assert_eq!(
        store.client(&id).await.unwrap(),
        Some(first),
        "the first client is unchanged"
    );

    // A public client: no secret, no name, no grant types listed.
    let public = OAuthClient {
        secret_hash: None,
        client_name: None,
        grant_types: Vec::new(),
        token_endpoint_auth_method: "none".to_string(),
        ..oauth_client(&format!("{run}-public"), "unused")
    };
    assert!(store.put_client(&public).await.unwrap());
    assert_eq!(store.client(&public.client_id).await.unwrap(), Some(public));
    assert_eq!(store.client(&format!("{run}-unknown")).await.unwrap(), None);
}

async fn codes_are_taken_once(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-code");
    let code = auth_code(run, Some("https://mcp.example/mcp"), now + 600);
    store.put_code(&hash, &code).await.unwrap();
    assert_eq!(
        store.take_code(&hash, now).await.unwrap(),
        Some(code),
        "the first take gets the grant"
    );
    assert_eq!(
        store.take_code(&hash, now).await.unwrap(),
        None,
        "a second take gets nothing"
    );

    let plain_hash = format!("{run}-plain");
    let plain = auth_code(run, None, now + 600);
    store.put_code(&plain_hash, &plain).await.unwrap();
    assert_eq!(
        store.take_code(&plain_hash, now + 599).await.unwrap(),
        Some(plain)
    );
    assert_eq!(
        store
            .take_code(&format!("{run}-unknown"), now)
            .await
            .unwrap(),
        None
    );
}

async fn racing_takes_get_one_code(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-code");
    let code = auth_code(run, None, now + 600);
    store.put_code(&hash, &code).await.unwrap();
    let (a, b) = tokio::join!(store.take_code(&hash, now), store.take_code(&hash, now));
    let got: Vec<AuthCode> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(got, vec![code], "exactly one racing take wins");
}

async fn expired_code_is_refused(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-code");
    let code = auth_code(run, None, now + 600);
    store.put_code(&hash, &code).await.unwrap();
    assert_eq!(
        store.take_code(&hash, now + 600).await.unwrap(),
        None,
        "expired at expires_at"
    );
    assert_eq!(
        store.take_code(&hash, now).await.unwrap(),
        None,
        "the expired take deleted it"
    );
}

async fn refresh_tokens_are_used_once(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-token");
    let record = refresh_record(run, &format!("{run}-family"), now + 3600);
    store.put_refresh(&hash, &record).await.unwrap();
    assert_eq!(
        store.use_refresh(&hash, now).await.unwrap(),
        RefreshUse::Fresh(record.clone()),
        "first use"
    );
    assert_eq!(
        store.use_refresh(&hash, now + 1).await.unwrap(),
        RefreshUse::Reused(record.clone()),
        "second use is a replay"
    );
    assert_eq!(
        store.use_refresh(&hash, now + 2).await.unwrap(),
        RefreshUse::Reused(record),
        "and stays one"
    );
    assert_eq!(
        store.use_refresh(&hash, now + 3600).await.unwrap(),
        RefreshUse::Unknown,
        "a used token past its expiry is unknown"
    );
    assert_eq!(
        store
            .use_refresh(&format!("{run}-unknown"), now)
            .await
            .unwrap(),
        RefreshUse::Unknown
    );

    // Expired before its first use: unknown, and not marked used.
    let late = format!("{run}-late");
    let no_resource = RefreshRecord {
        resource: None,
        ..refresh_record(run, &format!("{run}-family"), now + 100)
    };
    store.put_refresh(&late, &no_resource).await.unwrap();
    assert_eq!(
        store.use_refresh(&late, now + 100).await.unwrap(),
        RefreshUse::Unknown,
        "expired at expires_at"
    );
    assert_eq!(
        store.use_refresh(&late, now + 99).await.unwrap(),
        RefreshUse::Fresh(no_resource),
        "the expired read wrote nothing"
    );
}

/// One race, not many: moto applies a conditional write as an unlocked read, check and
/// write, so two racing requests can both pass its condition now and then (measured: a
/// few races in a thousand for this update, none for the delete of `take_code`), which
/// DynamoDB itself never allows.
async fn racing_refresh_uses_get_one_fresh(store: &dyn Store, run: &str, now: u64) {
    let hash = format!("{run}-token");
    let record = refresh_record(run, &format!("{run}-family"), now + 3600);
    store.put_refresh(&hash, &record).await.unwrap();
    let (a, b) = tokio::join!(store.use_refresh(&hash, now), store.use_refresh(&hash, now));
    let mut got = [a.unwrap(), b.unwrap()];
    got.sort_by_key(|u| !matches!(u, RefreshUse::Fresh(_)));
    assert_eq!(
        got,
        [
            RefreshUse::Fresh(record.clone()),
            RefreshUse::Reused(record)
        ],
        "exactly one racing use is fresh"
    );
}

async fn revoked_family_reads_as_reused(store: &dyn Store, run: &str, now: u64) {
    let family = format!("{run}-family");
    let bystander_family = format!("{run}-bystander");
    let used = refresh_record(run, &family, now + 3600);
    let unused = refresh_record(run, &family, now + 3600);
    let long_lived = refresh_record(run, &family, now + 3 * YEAR);
    let bystander = refresh_record(run, &bystander_family, now + 3600);
    for (hash, record) in [
        ("used", &used),
        ("unused", &unused),
        ("long", &long_lived),
        ("bystander", &bystander),
    ] {
        store
            .put_refresh(&format!("{run}-{hash}"), record)
            .await
            .unwrap();
    }
    let hash = |name: &str| format!("{run}-{name}");
    assert_eq!(
        store.use_refresh(&hash("used"), now).await.unwrap(),
        RefreshUse::Fresh(used.clone())
    );

    store
        .revoke_refresh_family(&family, now + YEAR)
        .await
        .unwrap();
    // Revoking again with an earlier end does not shorten it.
    store
        .revoke_refresh_family(&family, now + 10)
        .await
        .unwrap();
    assert_eq!(
        store.use_refresh(&hash("unused"), now + 20).await.unwrap(),
        RefreshUse::Reused(unused),
        "an unused token of a revoked family is a replay"
    );
    assert_eq!(
        store.use_refresh(&hash("used"), now + 20).await.unwrap(),
        RefreshUse::Reused(used)
    );
    assert_eq!(
        store
            .use_refresh(&hash("bystander"), now + 20)
            .await
            .unwrap(),
        RefreshUse::Fresh(bystander),
        "another family is unaffected"
    );
    // The revocation ends at its expiry; a token still unused then is usable again
    // (callers revoke until the family's last token expires).
    assert_eq!(
        store.use_refresh(&hash("long"), now + YEAR).await.unwrap(),
        RefreshUse::Fresh(long_lived)
    );
}

async fn mcp_servers_round_trip_in_name_order(store: &dyn Store, user: &str) {
    assert!(store.mcp_servers(user).await.unwrap().is_empty());
    assert_eq!(store.mcp_server(user, "weather").await.unwrap(), None);

    // Written out of name order; a header credential and a plain one.
    let weather = mcp_server("weather", "https://weather.example/mcp?region=eu&x=1");
    let alpha = plain_mcp_server("alpha", "https://alpha.example/mcp");
    let bearer = McpServerRecord {
        auth: McpAuth::Bearer,
        allowed_tools: Some(Vec::new()),
        last_connected_at: Some(1_700_000_200),
        last_connect_error: Some("timed out".to_string()),
        ..mcp_server("beta_2", "https://beta.example/mcp")
    };
    for server in [&weather, &alpha, &bearer] {
        assert_eq!(
            store.create_mcp_server(user, server).await.unwrap(),
            McpServerWrite::Written
        );
    }
    assert_eq!(
        store.mcp_server(user, "weather").await.unwrap(),
        Some(weather.clone()),
        "every field reads back"
    );
    assert_eq!(
        store.mcp_server(user, "alpha").await.unwrap(),
        Some(alpha.clone())
    );
    assert_eq!(
        store.mcp_server(user, "beta_2").await.unwrap(),
        Some(bearer.clone()),
        "an empty allow-list is not every tool"
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap(),
        vec![alpha, bearer, weather],
        "listed by name"
    );
    assert_eq!(store.mcp_server(user, "weath").await.unwrap(), None);
}

async fn mcp_server_names_and_urls_are_taken_once(store: &dyn Store, user: &str) {
    let original = mcp_server("weather", "https://weather.example/mcp");
    assert_eq!(
        store.create_mcp_server(user, &original).await.unwrap(),
        McpServerWrite::Written
    );

    let same_name = mcp_server("weather", "https://other.example/mcp");
    assert_eq!(
        store.create_mcp_server(user, &same_name).await.unwrap(),
        McpServerWrite::NameTaken
    );
    let same_url = mcp_server("forecast", "https://weather.example/mcp");
    assert_eq!(
        store.create_mcp_server(user, &same_url).await.unwrap(),
        McpServerWrite::UrlTaken
    );
    assert_eq!(
        store.create_mcp_server(user, &original).await.unwrap(),
        McpServerWrite::NameTaken,
        "the same server again: the name is reported"
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap(),
        vec![original.clone()],
        "refused creates wrote nothing"
    );

    // Neither refused create claimed anything: the other name and url are both free.
    let other = mcp_server("forecast", "https://other.example/mcp");
    assert_eq!(
        store.create_mcp_server(user, &other).await.unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(
        names(&store.mcp_servers(user).await.unwrap()),
        ["forecast", "weather"]
    );
}

async fn mcp_server_replace_keeps_its_url(store: &dyn Store, user: &str) {
    let original = mcp_server("weather", "https://weather.example/mcp");
    assert_eq!(
        store.create_mcp_server(user, &original).await.unwrap(),
        McpServerWrite::Written
    );

    let moved = McpServerRecord {
        updated_at: 1_800_000_000,
        ..mcp_server("weather", "https://weather.example/v2/mcp")
    };
    assert_eq!(
        store.replace_mcp_server(user, &moved).await.unwrap(),
        McpServerWrite::UrlChanged
    );
    assert_eq!(
        store.mcp_server(user, "weather").await.unwrap(),
        Some(original.clone()),
        "a changed url writes nothing"
    );

    let unknown = mcp_server("unknown", "https://unknown.example/mcp");
    assert_eq!(
        store.replace_mcp_server(user, &unknown).await.unwrap(),
        McpServerWrite::Missing
    );
    assert_eq!(
        store.mcp_server(user, "unknown").await.unwrap(),
        None,
        "replace never creates"
    );

    let edited = McpServerRecord {
        auth: McpAuth::Bearer,
        sealed_credential: Some("resealed".to_string()),
        enabled: false,
        order: 7,
        allowed_tools: None,
        tools: vec![McpToolSnapshot {
            name: "forecast_v2".to_string(),
            description: Some("New.".to_string()),
        }],
        server_name: None,
        updated_at: 1_800_000_000,
        last_connected_at: Some(1_800_000_000),
        ..original.clone()
    };
    assert_eq!(
        store.replace_mcp_server(user, &edited).await.unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(
        store.mcp_server(user, "weather").await.unwrap(),
        Some(edited.clone())
    );
    assert_eq!(store.mcp_servers(user).await.unwrap(), vec![edited]);
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("other", &original.url))
            .await
            .unwrap(),
        McpServerWrite::UrlTaken,
        "the replaced server still holds its url"
    );
}

async fn mcp_connections_are_recorded(store: &dyn Store, user: &str) {
    let server = mcp_server("weather", "https://weather.example/mcp");
    store.create_mcp_server(user, &server).await.unwrap();

    store
        .record_mcp_connection(user, "weather", 1_800_000_000, None)
        .await
        .unwrap();
    let connected = McpServerRecord {
        last_connected_at: Some(1_800_000_000),
        ..server.clone()
    };
    assert_eq!(
        store.mcp_server(user, "weather").await.unwrap(),
        Some(connected.clone()),
        "success sets the time and touches nothing else"
    );

    store
        .record_mcp_connection(user, "weather", 1_800_000_100, Some("HTTP 503 from server"))
        .await
        .unwrap();
    let failed = McpServerRecord {
        last_connect_error: Some("HTTP 503 from server".to_string()),
        ..connected
    };
    assert_eq!(
        store.mcp_server(user, "weather").await.unwrap(),
        Some(failed),
        "failure sets the error and keeps the last success"
    );

    store
        .record_mcp_connection(user, "weather", 1_800_000_200, None)
        .await
        .unwrap();
    let recovered = McpServerRecord {
        last_connected_at: Some(1_800_000_200),
        ..server
    };
    assert_eq!(
        store.mcp_server(user, "weather").await.unwrap(),
        Some(recovered.clone()),
        "success clears the error"
    );

    // A server that is gone (or never was) stays gone.
    for error in [None, Some("refused")] {
        store
            .record_mcp_connection(user, "gone", 1_800_000_300, error)
            .await
            .unwrap();
    }
    assert_eq!(store.mcp_server(user, "gone").await.unwrap(), None);
    assert_eq!(store.mcp_servers(user).await.unwrap(), vec![recovered]);
}

async fn mcp_server_delete_frees_its_url(store: &dyn Store, user: &str) {
    let url = "https://weather.example/mcp";
    let first = mcp_server("weather", url);
    let bystander = mcp_server("other", "https://other.example/mcp");
    for server in [&first, &bystander] {
        store.create_mcp_server(user, server).await.unwrap();
    }

    assert!(store.delete_mcp_server(user, "weather").await.unwrap());
    assert_eq!(store.mcp_server(user, "weather").await.unwrap(), None);
    assert!(
        !store.delete_mcp_server(user, "weather").await.unwrap(),
        "deleting again"
    );
    assert!(!store.delete_mcp_server(user, "never").await.unwrap());
    assert_eq!(
        store.mcp_servers(user).await.unwrap(),
        vec![bystander.clone()],
        "other servers stay"
    );

    // The url is free again, under another name (and its old name is free too).
    let renamed = mcp_server("forecast", url);
    assert_eq!(
        store.create_mcp_server(user, &renamed).await.unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("weather", "https://new.example/mcp"))
            .await
            .unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(
        names(&store.mcp_servers(user).await.unwrap()),
        ["forecast", "other", "weather"]
    );
}

async fn mcp_servers_are_per_user(store: &dyn Store, alice: &str, bob: &str) {
    let alices = mcp_server("weather", "https://weather.example/mcp");
    store.create_mcp_server(alice, &alices).await.unwrap();
    assert!(store.mcp_servers(bob).await.unwrap().is_empty());
    assert_eq!(store.mcp_server(bob, "weather").await.unwrap(), None);

    // The same name and url under another account.
    let bobs = McpServerRecord {
        sealed_credential: Some("bobs-credential".to_string()),
        ..alices.clone()
    };
    assert_eq!(
        store.create_mcp_server(bob, &bobs).await.unwrap(),
        McpServerWrite::Written
    );
    store
        .record_mcp_connection(bob, "weather", 1_800_000_000, Some("refused"))
        .await
        .unwrap();
    assert_eq!(
        store.mcp_server(alice, "weather").await.unwrap(),
        Some(alices.clone()),
        "another user's writes leave Alice's server alone"
    );

    assert!(store.delete_mcp_server(bob, "weather").await.unwrap());
    assert!(store.mcp_servers(bob).await.unwrap().is_empty());
    assert_eq!(
        store.mcp_servers(alice).await.unwrap(),
        vec![alices.clone()]
    );
    assert_eq!(
        store
            .create_mcp_server(alice, &mcp_server("again", &alices.url))
            .await
            .unwrap(),
        McpServerWrite::UrlTaken,
        "Alice's url claim survives Bob's delete"
    );
}

async fn mcp_servers_are_not_user_data(store: &dyn Store, user: &str) {
    let server = mcp_server("weather", "https://weather.example/mcp");
    store.create_mcp_server(user, &server).await.unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "a server alone is no health or genotype data"
    );
    assert!(store.readings(user, &all()).await.unwrap().is_empty());

    store
        .put_readings(
            user,
            &[reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0)],
        )
        .await
        .unwrap();
    store
        .put_genotypes(user, &[genotype("rs1", "1", 1, "AA")])
        .await
        .unwrap();
    assert_eq!(store.readings(user, &all()).await.unwrap().len(), 1);
    store.delete_user_data(user).await.unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default()
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap(),
        vec![server],
        "deleting the user's data leaves their servers"
    );
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("other", "https://weather.example/mcp"))
            .await
            .unwrap(),
        McpServerWrite::UrlTaken,
        "and their url claims"
    );
}

// ---------------------------------------------------------------- backends

fn unique(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{label}-{}-{nanos}", std::process::id())
}

/// Removes the SQLite file and its WAL companions when the test ends, pass or fail.
struct TempDb(PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_meets_the_contract() {
    let db = TempDb(
        std::env::temp_dir()
            .join(unique("mirobody-store"))
            .join("nested")
            .join("store.sqlite3"),
    );
    let started = Instant::now();
    let store =
        EmbeddedStore::open(&db.0).expect("open a fresh database (parent directories created)");
    contract(&store, "embedded").await;
    eprintln!("store contract, embedded: {:.2?}", started.elapsed());

    // A second handle on the same file (another process, in effect) sees the same data,
    // and re-opening an existing file keeps it.
    let second = EmbeddedStore::open(&db.0).expect("open the same file again");
    assert_eq!(
        second.data_presence("embedded-presence").await.unwrap(),
        DataPresence {
            health: true,
            genotype: true
        }
    );
}

/// A client for the local moto server only: fixed test credentials and region, so the
/// SDK never consults the environment, profiles or the instance metadata address.
fn moto_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .endpoint_url(endpoint)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamo_store_meets_the_contract() {
    let moto = Moto::start();
    let client = moto_client(&moto.endpoint);
    let suffix = unique("t");
    let tables = DynamoTables {
        keys: format!("mirobody-keys-{suffix}"),
        data: format!("mirobody-data-{suffix}"),
    };

    let started = Instant::now();
    DynamoStore::create_tables(&client, &tables)
        .await
        .expect("create tables");
    DynamoStore::create_tables(&client, &tables)
        .await
        .expect("creating existing tables is a no-op");
    let ttl = client
        .describe_time_to_live()
        .table_name(&tables.keys)
        .send()
        .await
        .expect("describe TTL");
    let ttl = ttl.time_to_live_description().expect("TTL description");
    assert_eq!(ttl.attribute_name(), Some("expires_at"));
    let tables_ready = started.elapsed();

    // Small pages make pagination real: 1,000 readings take 10 pages.
    let store = DynamoStore::new(client, tables).with_page_limit(100);
    contract(&store, "dynamo").await;
    eprintln!(
        "store contract, dynamodb (moto): {:.2?} (tables {:.2?})",
        started.elapsed(),
        tables_ready
    );
    drop(moto);
}

/// The combined read answers exactly what the two separate reads answer, whatever else
/// the user (or the user sorted next) holds.
async fn presence_and_servers_come_in_one_read(store: &dyn Store, user: &str, next: &str) {
    let both = |user: String| async move {
        let combined = store.presence_and_mcp_servers(&user).await.unwrap();
        let separate = (
            store.data_presence(&user).await.unwrap(),
            store.mcp_servers(&user).await.unwrap(),
        );
        assert_eq!(combined, separate, "{user}");
        combined
    };
    assert_eq!(
        both(user.to_string()).await,
        (DataPresence::default(), vec![])
    );

    let weather = mcp_server("weather", "https://weather.example/mcp");
    let atlas = mcp_server("atlas", "https://atlas.example/mcp");
    store.create_mcp_server(user, &weather).await.unwrap();
    store.create_mcp_server(user, &atlas).await.unwrap();
    store
        .put_share(user, next, &["chat".to_string()])
        .await
        .unwrap();
    store
        .create_mcp_server(next, &mcp_server("other", "https://other.example/mcp"))
        .await
        .unwrap();
    let (presence, servers) = both(user.to_string()).await;
    assert_eq!(presence, DataPresence::default());
    assert_eq!(servers, vec![atlas.clone(), weather.clone()]);

    store
        .put_readings(
            user,
            &[reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0)],
        )
        .await
        .unwrap();
    store
        .put_genotypes(user, &[genotype("rs1", "1", 1, "AA")])
        .await
        .unwrap();
    let (presence, servers) = both(user.to_string()).await;
    assert_eq!(
        presence,
        DataPresence {
            health: true,
            genotype: true
        }
    );
    assert_eq!(servers, vec![atlas, weather]);
    assert_eq!(both(next.to_string()).await.1.len(), 1);
}
