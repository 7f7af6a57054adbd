//! Contract cases for [`McpServerStore`](crate::store::McpServerStore): server records,
//! their name and url uniqueness, connections, and the combined read with presence.
//!
//! Each case speaks only through the `Store` trait, never a backend's own API, so both
//! backends run it unchanged; its users are its own, so no case sees another's data.

use super::{all, genotype, reading, strings};
use crate::domain::{
    DataPresence, MAX_MCP_SERVERS, McpAuth, McpServerRecord, McpServerWrite, McpToolSnapshot,
    ToolControls,
};
use crate::store::Store;

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
        controls: ToolControls {
            denied_tools: strings(&["alerts"]),
            read_only: true,
            ask_first: true,
        },
        tools: vec![
            McpToolSnapshot {
                name: "forecast".to_string(),
                description: Some("Weather \"forecast\", ±5 days.".to_string()),
                read_only: true,
            },
            McpToolSnapshot {
                name: "alerts".to_string(),
                description: None,
                read_only: false,
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
        controls: Default::default(),
        tools: Vec::new(),
        server_name: None,
        ..mcp_server(name, url)
    }
}

fn names(servers: &[McpServerRecord]) -> Vec<&str> {
    servers.iter().map(|s| s.name.as_str()).collect()
}

pub(super) async fn mcp_servers_round_trip_in_name_order(store: &dyn Store, user: &str) {
    assert!(store.mcp_servers(user).await.unwrap().is_empty());
    assert_eq!(store.mcp_server(user, "weather").await.unwrap(), None);

    // Written out of name order; a header credential and a plain one.
    let weather = mcp_server("weather", "https://weather.example/mcp?region=eu&x=1");
    let alpha = plain_mcp_server("alpha", "https://alpha.example/mcp");
    let bearer = McpServerRecord {
        auth: McpAuth::Bearer,
        allowed_tools: Some(Vec::new()),
        controls: Default::default(),
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

pub(super) async fn mcp_server_names_and_urls_are_taken_once(store: &dyn Store, user: &str) {
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

pub(super) async fn mcp_server_replace_keeps_its_url(store: &dyn Store, user: &str) {
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
        controls: Default::default(),
        tools: vec![McpToolSnapshot {
            name: "forecast_v2".to_string(),
            description: Some("New.".to_string()),
            read_only: false,
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

pub(super) async fn mcp_refresh_is_claimed_by_one_until_it_lapses(store: &dyn Store, user: &str) {
    let server = mcp_server("docs", "https://docs.example/mcp");
    store.create_mcp_server(user, &server).await.unwrap();
    let claim = |now: u64, until: u64| store.claim_mcp_refresh(user, "docs", now, until);
    assert!(claim(1_000, 1_030).await.unwrap(), "the first claim holds");
    assert!(!claim(1_010, 1_040).await.unwrap(), "a second one waits");
    assert!(
        !claim(1_029, 1_059).await.unwrap(),
        "until the first lapses"
    );
    assert!(
        claim(1_030, 1_060).await.unwrap(),
        "a lapsed claim is taken over"
    );
    // A replace (the claimant keeping what it refreshed) ends the claim.
    assert_eq!(
        store.replace_mcp_server(user, &server).await.unwrap(),
        McpServerWrite::Written
    );
    assert!(claim(1_031, 1_061).await.unwrap(), "after a replace");
    assert_eq!(
        store.mcp_server(user, "docs").await.unwrap(),
        Some(server),
        "a claim touches nothing of the record"
    );
    assert!(
        !store
            .claim_mcp_refresh(user, "gone", 1_000, 1_030)
            .await
            .unwrap(),
        "no server, no claim"
    );
    assert_eq!(store.mcp_server(user, "gone").await.unwrap(), None);
}

pub(super) async fn mcp_connections_are_recorded(store: &dyn Store, user: &str) {
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

pub(super) async fn mcp_server_delete_frees_its_url(store: &dyn Store, user: &str) {
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

pub(super) async fn mcp_servers_are_per_user(store: &dyn Store, alice: &str, bob: &str) {
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

pub(super) async fn mcp_servers_are_not_user_data(store: &dyn Store, user: &str) {
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
    super::put_genome(store, user, &[genotype("rs1", "1", 1, "AA")]).await;
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

/// The combined read answers exactly what the two separate reads answer, whatever else
/// the user (or the user sorted next) holds.
pub(super) async fn presence_and_servers_come_in_one_read(
    store: &dyn Store,
    user: &str,
    next: &str,
) {
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
    super::put_genome(store, user, &[genotype("rs1", "1", 1, "AA")]).await;
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

/// The server limit is part of the create's write: the last free places go to exactly
/// as many of several racing creates, the others (and every later one, checked before
/// its name) read `LimitReached` with nothing written, and a delete frees a place.
pub(super) async fn mcp_server_limit_holds_in_the_write(store: &dyn Store, user: &str) {
    let server =
        |i: usize| plain_mcp_server(&format!("s{i:02}"), &format!("https://s{i}.example/mcp"));
    for i in 0..MAX_MCP_SERVERS - 2 {
        assert_eq!(
            store.create_mcp_server(user, &server(i)).await.unwrap(),
            McpServerWrite::Written,
            "server {i}"
        );
    }
    // Two places left, three racers.
    let (a, b, c) = (
        server(MAX_MCP_SERVERS - 2),
        server(MAX_MCP_SERVERS - 1),
        server(MAX_MCP_SERVERS),
    );
    let racers = tokio::join!(
        store.create_mcp_server(user, &a),
        store.create_mcp_server(user, &b),
        store.create_mcp_server(user, &c),
    );
    let mut outcomes = vec![racers.0.unwrap(), racers.1.unwrap(), racers.2.unwrap()];
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(
        outcomes,
        vec![
            McpServerWrite::LimitReached,
            McpServerWrite::Written,
            McpServerWrite::Written
        ]
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap().len(),
        MAX_MCP_SERVERS
    );
    let late = server(MAX_MCP_SERVERS + 1);
    assert_eq!(
        store.create_mcp_server(user, &late).await.unwrap(),
        McpServerWrite::LimitReached
    );
    assert_eq!(store.mcp_server(user, &late.name).await.unwrap(), None);
    // At the limit the limit is the answer, even for a name already taken.
    assert_eq!(
        store.create_mcp_server(user, &server(0)).await.unwrap(),
        McpServerWrite::LimitReached
    );
    assert!(store.delete_mcp_server(user, "s00").await.unwrap());
    assert_eq!(
        store.create_mcp_server(user, &late).await.unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap().len(),
        MAX_MCP_SERVERS
    );
}

pub(super) async fn mcp_server_rename_moves_everything_at_once(store: &dyn Store, user: &str) {
    let url = "https://weather.example/mcp";
    let original = McpServerRecord {
        last_connected_at: Some(1_800_000_000),
        last_connect_error: Some("HTTP 503 from server".to_string()),
        ..mcp_server("weather", url)
    };
    let bystander = mcp_server("other", "https://other.example/mcp");
    for server in [&original, &bystander] {
        store.create_mcp_server(user, server).await.unwrap();
    }

    // Renamed: every field (the sealed credential as given) under the new name.
    let renamed = McpServerRecord {
        name: "forecast".to_string(),
        updated_at: 1_800_000_100,
        ..original.clone()
    };
    assert_eq!(
        store
            .rename_mcp_server(user, "weather", &renamed)
            .await
            .unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(store.mcp_server(user, "weather").await.unwrap(), None);
    assert_eq!(
        store.mcp_server(user, "forecast").await.unwrap(),
        Some(renamed.clone()),
        "everything kept"
    );
    assert_eq!(
        names(&store.mcp_servers(user).await.unwrap()),
        ["forecast", "other"]
    );
    // The url stays claimed (by the new name), the old name is free.
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("third", url))
            .await
            .unwrap(),
        McpServerWrite::UrlTaken
    );
    assert_eq!(
        store.replace_mcp_server(user, &renamed).await.unwrap(),
        McpServerWrite::Written,
        "the renamed record is replaced like any other"
    );

    // Missing old, another url, a taken new name: nothing written.
    let ghost = McpServerRecord {
        name: "anything".to_string(),
        ..mcp_server("ghost", "https://ghost.example/mcp")
    };
    assert_eq!(
        store
            .rename_mcp_server(user, "ghost", &ghost)
            .await
            .unwrap(),
        McpServerWrite::Missing
    );
    let moved = McpServerRecord {
        name: "elsewhere".to_string(),
        url: "https://moved.example/mcp".to_string(),
        ..renamed.clone()
    };
    assert_eq!(
        store
            .rename_mcp_server(user, "forecast", &moved)
            .await
            .unwrap(),
        McpServerWrite::UrlChanged
    );
    let onto = McpServerRecord {
        name: "other".to_string(),
        ..renamed.clone()
    };
    assert_eq!(
        store
            .rename_mcp_server(user, "forecast", &onto)
            .await
            .unwrap(),
        McpServerWrite::NameTaken
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap(),
        vec![renamed.clone(), bystander.clone()],
        "refused renames wrote nothing"
    );

    // Two racing renames of one server: one wins, the other finds it gone.
    let to_a = McpServerRecord {
        name: "alpha".to_string(),
        ..renamed.clone()
    };
    let to_b = McpServerRecord {
        name: "bravo".to_string(),
        ..renamed.clone()
    };
    let (a, b) = tokio::join!(
        store.rename_mcp_server(user, "forecast", &to_a),
        store.rename_mcp_server(user, "forecast", &to_b),
    );
    let mut outcomes = [a.unwrap(), b.unwrap()];
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(outcomes, [McpServerWrite::Missing, McpServerWrite::Written]);
    let left = store.mcp_servers(user).await.unwrap();
    assert_eq!(left.len(), 2, "one copy, not two: {:?}", names(&left));
    let winner = left.iter().find(|s| s.name != "other").unwrap();
    assert!(["alpha", "bravo"].contains(&winner.name.as_str()));
    assert_eq!(winner.url, url);

    // Deleting the winner frees the url: its claim moved with it.
    assert!(
        store
            .delete_mcp_server(user, &winner.name.clone())
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("weather", url))
            .await
            .unwrap(),
        McpServerWrite::Written
    );
}

pub(super) async fn mcp_server_saved_without_a_url_gets_one_once(store: &dyn Store, user: &str) {
    let blank = plain_mcp_server("later", "");
    let taken = mcp_server("taken", "https://taken.example/mcp");
    for server in [&blank, &taken] {
        assert_eq!(
            store.create_mcp_server(user, server).await.unwrap(),
            McpServerWrite::Written
        );
    }
    assert_eq!(
        store.mcp_server(user, "later").await.unwrap(),
        Some(blank.clone())
    );

    // A url another server holds, a missing server: nothing written.
    let onto_taken = McpServerRecord {
        url: taken.url.clone(),
        ..blank.clone()
    };
    assert_eq!(
        store.set_mcp_server_url(user, &onto_taken).await.unwrap(),
        McpServerWrite::UrlTaken
    );
    let ghost = plain_mcp_server("ghost", "https://ghost.example/mcp");
    assert_eq!(
        store.set_mcp_server_url(user, &ghost).await.unwrap(),
        McpServerWrite::Missing
    );
    assert_eq!(
        store.mcp_servers(user).await.unwrap(),
        vec![blank.clone(), taken.clone()],
        "refused writes wrote nothing"
    );

    // Given its url (and the rest of the record): claimed, and the empty url free again.
    let url = "https://later.example/mcp";
    let given = McpServerRecord {
        url: url.to_string(),
        enabled: true,
        sealed_credential: Some("resealed".to_string()),
        ..blank.clone()
    };
    assert_eq!(
        store.set_mcp_server_url(user, &given).await.unwrap(),
        McpServerWrite::Written
    );
    assert_eq!(
        store.mcp_server(user, "later").await.unwrap(),
        Some(given.clone())
    );
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("copy", url))
            .await
            .unwrap(),
        McpServerWrite::UrlTaken
    );
    assert_eq!(
        store
            .create_mcp_server(user, &plain_mcp_server("blank2", ""))
            .await
            .unwrap(),
        McpServerWrite::Written,
        "the empty url is free again"
    );
    // Once it has a url, it keeps it.
    let again = McpServerRecord {
        url: "https://again.example/mcp".to_string(),
        ..given.clone()
    };
    assert_eq!(
        store.set_mcp_server_url(user, &again).await.unwrap(),
        McpServerWrite::UrlChanged
    );
    assert_eq!(store.mcp_server(user, "later").await.unwrap(), Some(given));
    // Deleting it frees its url.
    assert!(store.delete_mcp_server(user, "later").await.unwrap());
    assert_eq!(
        store
            .create_mcp_server(user, &mcp_server("copy", url))
            .await
            .unwrap(),
        McpServerWrite::Written
    );
}
