//! The store contract: one suite of behaviours a user would notice, run unchanged on
//! both backends. Every case is its own test per backend,
//! `store::contract::embedded::<case>` and `store::contract::dynamo::<case>`, so a
//! failure names its case and backend, and one case runs alone with
//! `cargo nextest run -p mirobody -E 'test(=store::contract::dynamo::<case>)'`.
//!
//! The cases live with their domain (`health`, `accounts`, `oauth`, `mcp_servers`);
//! this file holds the shared fixtures, the list of cases and the two backends' harness.
//! Each embedded case gets a fresh SQLite file; each DynamoDB case gets fresh tables on
//! a local moto server (never the network): one per test process, started on first
//! use, or the one named by `MIROBODY_TEST_MOTO` (see [`moto_endpoint`]).

mod accounts;
mod genome;
mod health;
mod invitations;
mod mcp_servers;
mod oauth;
mod uploads;
mod whole_account;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use super::{DynamoStore, DynamoTables, EmbeddedStore, HealthStore, ReadingQuery, Store};
use crate::domain::{DataPresence, Genome, Genotype, Reading, ReadingValue};
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
        offset: None,
        original: None,
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

/// Makes these genotypes the user's genome (the whole of it).
async fn put_genome(store: &dyn Store, user: &str, genotypes: &[Genotype]) {
    let genome = Genome::from_genotypes(genotypes).expect("valid genotypes");
    store
        .replace_genome(user, &genome, "test", 1)
        .await
        .expect("replace_genome");
}

fn all() -> ReadingQuery {
    ReadingQuery::default()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Seconds in a year (a personal URL's lifetime).
const YEAR: u64 = 365 * 24 * 3600;

/// "Now" for the cases whose records carry their own expiry: the real clock's (so
/// nothing written has expired for a real TTL either); later times stand for "after
/// expiry".
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ---------------------------------------------------------------- the contract

/// Declares every case once: each becomes a test in `embedded` and one in `dynamo`,
/// run on a fresh store of that backend. The header names what a case's arguments may
/// use: the store, `user("…")` (a user named after the case, prefixed with the
/// backend's name as before the split) and `now` ([`now`]).
macro_rules! contract {
    (|$store:ident, $user:ident, $now:ident| $($cases:tt)*) => {
        contract!(@backend embedded |$store, $user, $now| $($cases)*);
        contract!(@backend dynamo |$store, $user, $now| $($cases)*);
    };
    (@backend $backend:ident |$store:ident, $user:ident, $now:ident|
        $($domain:ident::$case:ident($($arg:expr),* $(,)?);)*) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let backend = super::Backend::$backend().await;
                    #[allow(unused_variables)]
                    let ($store, $user, $now) =
                        (backend.store(), |case: &str| backend.user(case), super::now());
                    super::$domain::$case($($arg),*).await;
                }
            )*
        }
    };
}

contract! { |store, user, now|
    health::presence_follows_writes(store, &user("presence"));
    health::readings_upsert_by_identity(store, &user("upsert"));
    health::readings_round_trip_every_field(store, &user("fields"));
    health::readings_filter_by_indicator_and_time(store, &user("filter"));
    health::readings_ordered_by_indicator_then_time(store, &user("order"));
    health::users_are_isolated(store, &user("alice"), &user("bob"));
    health::delete_removes_everything(store, &user("delete"), &user("delete-bystander"));
    health::large_batches_round_trip(store, &user("bulk"));
    health::rollups_and_catalogue_follow_writes(store, &user("rollups"));
    health::latest_readings_newest_first(store, &user("latest"));
    health::hourly_values_of_one_series_in_a_window(store, &user("hourly"));
    uploads::import_writes_stop_once_the_upload_is_gone(store, &user("import-guard"));
    uploads::a_silent_import_is_failed_and_stays_failed(store, &user("import-stall"));
    health::racing_writers_of_one_day_lose_nothing(store, &user("day-race"));

    genome::genome_is_replaced_as_a_whole(store, &user("genome"));
    genome::genotype_ranges_ordered_and_confined(store, &user("range"), &user("range-other"));
    genome::neighbourhoods_cover_the_radius(store, &user("near"));
    genome::readers_never_see_a_mix_during_a_replacement(store, &user("switch"));
    genome::racing_replacements_leave_one_whole_genome(store, &user("race-genome"));
    genome::delete_genome_clears_it_and_its_presence(
        store,
        &user("genome-delete"),
        &user("genome-bystander"),
    );

    accounts::accounts_found_by_email_and_id(store, &user("account"));
    invitations::addresses_are_confirmed_only_as_mailed(store, &user("confirm"), now);
    invitations::mail_links_are_taken_once_and_expire(store, &user("mail-link"), now);
    invitations::invitations_grant_nothing_until_accepted(
        store,
        &user("invite-owner"),
        &user("invite-grantee"),
        now,
    );
    invitations::deleting_an_account_withdraws_its_invitations(store, &user("invite-gone"), now);
    accounts::taken_email_writes_nothing(store, &user("taken-1"), &user("taken-2"));
    accounts::shares_follow_owner_and_grantee(
        store,
        &user("owner"),
        &user("grantee"),
        &user("third"),
    );
    accounts::url_grants_expire(store, &user("grant"), now);
    accounts::personal_url_is_claimed_once(store, &user("claim"), now);
    accounts::racing_claims_get_one_url(store, &user("race"), now);
    accounts::expired_personal_url_is_replaced(store, &user("expired-url"), now);
    accounts::revoked_personal_url_stops_resolving(store, &user("revoke"), now);
    accounts::login_state_completes_once(store, &user("login"), now);
    accounts::login_token_is_taken_once(store, &user("login-take"), now);
    accounts::counters_count_per_window(store, &user("counter"), now);
    accounts::purging_keeps_what_is_live(store, &user("purge"), now);
    accounts::share_url_is_the_grantees_own_and_needs_the_share(
        store,
        &user("share-url-owner"),
        &user("share-url-grantee"),
        &user("share-url-third"),
        now,
    );
    accounts::revoked_share_url_stops_resolving(
        store,
        &user("share-revoke-owner"),
        &user("share-revoke-grantee"),
        now,
    );
    accounts::delete_share_removes_the_grant_in_the_same_write(
        store,
        &user("unshare-owner"),
        &user("unshare-grantee"),
        now,
    );
    accounts::racing_epoch_bumps_all_count(store, &user("epoch"), now);
    accounts::ended_sessions_are_pruned_and_bounded(store, &user("sessions"), now);
    accounts::client_grants_are_listed_and_withdrawn(store, &user("grants"), now);
    accounts::password_change_ends_every_token(store, &user("password"), now);
    accounts::shares_are_listed_both_ways(
        store,
        &user("list-share-a"),
        &user("list-share-b"),
        &user("list-share-c"),
    );
    accounts::temporary_urls_are_listed_and_revoked(
        store,
        &user("temp-urls"),
        &user("temp-urls-other"),
        now,
    );
    accounts::personal_url_is_read_without_minting(store, &user("personal-read"), now);

    oauth::clients_are_registered_once(store, &user("client"), now);
    oauth::unused_clients_lapse_and_use_extends_them(store, &user("client-lapse"), now);
    oauth::codes_are_taken_once(store, &user("code"), now);
    oauth::racing_takes_get_one_code(store, &user("code-race"), now);
    oauth::expired_code_is_refused(store, &user("code-expired"), now);
    oauth::refresh_tokens_are_used_once(store, &user("refresh"), now);
    oauth::racing_refresh_uses_get_one_fresh(store, &user("refresh-race"), now);
    oauth::revoked_family_reads_as_reused(store, &user("family"), now);

    mcp_servers::mcp_servers_round_trip_in_name_order(store, &user("mcp"));
    mcp_servers::mcp_server_names_and_urls_are_taken_once(store, &user("mcp-taken"));
    mcp_servers::mcp_server_replace_keeps_its_url(store, &user("mcp-replace"));
    mcp_servers::mcp_connections_are_recorded(store, &user("mcp-connect"));
    mcp_servers::mcp_refresh_is_claimed_by_one_until_it_lapses(store, &user("mcp-refresh"));
    mcp_servers::mcp_server_delete_frees_its_url(store, &user("mcp-delete"));
    mcp_servers::mcp_servers_are_per_user(store, &user("mcp-alice"), &user("mcp-bob"));
    mcp_servers::mcp_servers_are_not_user_data(store, &user("mcp-data"));
    mcp_servers::mcp_server_limit_holds_in_the_write(store, &user("mcp-limit"));
    mcp_servers::presence_and_servers_come_in_one_read(
        store,
        &user("mcp-both"),
        &user("mcp-next"),
    );
    mcp_servers::mcp_server_rename_moves_everything_at_once(store, &user("mcp-rename"));
    mcp_servers::mcp_server_saved_without_a_url_gets_one_once(store, &user("mcp-url-later"));

    uploads::upload_records_follow_an_import(store, &user("upload"), &user("upload-other"), now);

    whole_account::deleting_an_account_leaves_nothing_of_it(
        store,
        &user("delete-all"),
        &user("delete-all-kept"),
        now,
    );
    whole_account::delete_uploads_removes_records_and_pointers(
        store,
        &user("delete-uploads"),
        &user("delete-uploads-kept"),
        now,
    );
}

// ---------------------------------------------------------------- backends

/// A fresh store of one backend for one case; what it created goes when the case ends,
/// pass or fail.
struct Backend {
    /// The backend's name, the prefix of every user of its cases.
    name: &'static str,
    /// Declared first, so it is dropped (connection closed) before the file goes.
    store: Box<dyn Store>,
    /// The embedded backend's file.
    _db: Option<TempDb>,
    /// The DynamoDB backend's moto server, when this process started it.
    _moto: Option<Arc<Moto>>,
}

impl Backend {
    /// A fresh SQLite file in a directory that does not exist yet.
    async fn embedded() -> Backend {
        let db = fresh_db();
        let store =
            EmbeddedStore::open(&db.0).expect("open a fresh database (parent directories created)");
        Backend {
            name: "embedded",
            store: Box::new(store),
            _db: Some(db),
            _moto: None,
        }
    }

    /// Fresh tables on moto, with small pages: 1,000 readings take 10 pages, so
    /// pagination is real.
    async fn dynamo() -> Backend {
        let (endpoint, moto) = moto_endpoint();
        let client = moto_client(&endpoint);
        let tables = fresh_tables();
        DynamoStore::create_tables(&client, &tables)
            .await
            .expect("create tables");
        let store = DynamoStore::new(client, tables).with_page_limit(100);
        Backend {
            name: "dynamo",
            store: Box::new(store),
            _db: None,
            _moto: moto,
        }
    }

    fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    fn user(&self, case: &str) -> String {
        format!("{}-{case}", self.name)
    }
}

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
        // `<temp>/mirobody-store-…/nested/store.sqlite3`: both directories go.
        for dir in self.0.ancestors().skip(1).take(2) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

fn fresh_db() -> TempDb {
    TempDb(
        std::env::temp_dir()
            .join(unique("mirobody-store"))
            .join("nested")
            .join("store.sqlite3"),
    )
}

pub(crate) fn fresh_tables() -> DynamoTables {
    let suffix = unique("t");
    DynamoTables {
        keys: format!("mirobody-keys-{suffix}"),
        data: format!("mirobody-data-{suffix}"),
    }
}

/// The moto server the DynamoDB cases use, and what keeps it running.
///
/// `MIROBODY_TEST_MOTO` names a running `infra/moto-serial` (its endpoint URL; the
/// racing cases need its one-request-at-a-time semantics), so that many test processes
/// share one: nextest runs each test in its own, and starting moto costs each DynamoDB
/// case more than the case itself. `scripts/test` starts one and sets it. Each case
/// still creates its own tables there. Without it, one moto per process is started on
/// first use and shared by the cases running at the same time (`cargo test` runs them
/// all in one process); it stops when the last of them ends.
pub(crate) fn moto_endpoint() -> (String, Option<Arc<Moto>>) {
    if let Some(endpoint) = std::env::var("MIROBODY_TEST_MOTO")
        .ok()
        .filter(|e| !e.is_empty())
    {
        return (endpoint, None);
    }
    static SHARED: Mutex<Weak<Moto>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    let moto = shared.upgrade().unwrap_or_else(|| {
        let moto = Arc::new(Moto::start());
        *shared = Arc::downgrade(&moto);
        moto
    });
    (moto.endpoint.clone(), Some(moto))
}

/// A client for the local moto server only: fixed test credentials and region, so the
/// SDK never consults the environment, profiles or the instance metadata address.
pub(crate) fn moto_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .http_client(crate::aws::http_client())
        .endpoint_url(endpoint)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

// ---------------------------------------------------------------- backend-specific cases

/// A second handle on the same file (another process, in effect) sees the same data,
/// and re-opening an existing file keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_second_handle_sees_the_same_data() {
    let db = fresh_db();
    let store =
        EmbeddedStore::open(&db.0).expect("open a fresh database (parent directories created)");
    health::presence_follows_writes(&store, "embedded-presence").await;

    let second = EmbeddedStore::open(&db.0).expect("open the same file again");
    assert_eq!(
        second.data_presence("embedded-presence").await.unwrap(),
        DataPresence {
            health: true,
            genotype: true
        }
    );
}

/// Creating the tables again is a no-op, and the keys table expires items by
/// `expires_at`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamo_tables_are_created_once_with_ttl() {
    let (endpoint, _moto) = moto_endpoint();
    let client = moto_client(&endpoint);
    let tables = fresh_tables();
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
}
