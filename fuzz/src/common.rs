//! The app the request targets drive: built once per process (a fuzz process, or one
//! replay test of `tests/e2e/fuzz_corpus.rs`), in process (no socket), on an embedded
//! store in a temporary directory, with fixed test keys and a fake clock, like the
//! end-to-end tests' `in_process`. A signed-in user has the demo data, so the data tools
//! have readings and genotypes to work on.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use chrono::NaiveDate;
use mirobody::clock::FakeClock;
use mirobody::identity::{Jwts, Keys};
use mirobody::store::{EmbeddedStore, LocalObjects};
use mirobody::{App, Config, RouteGroup, Runtime, Services};

pub const USER: &str = "fuzz-user";
const NOW: u64 = 1_800_000_000;

pub struct Fuzzed {
    pub app: App,
    pub runtime: tokio::runtime::Runtime,
    /// A bearer token for [`USER`].
    pub token: String,
}

/// The temporary directory of this process's app (its store and uploaded files).
pub fn scratch_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("mirobody-fuzz-{}", std::process::id()))
}

pub fn fuzzed() -> &'static Fuzzed {
    static APP: OnceLock<Fuzzed> = OnceLock::new();
    APP.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let dir = scratch_dir();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let store = Arc::new(EmbeddedStore::open(dir.join("db.sqlite3")).expect("a store"));
        let config = Config::from_vars(Runtime::Local, std::iter::empty()).expect("settings");
        let keys = Keys {
            jwt: [1; 32],
            seal: [2; 32],
        };
        let token =
            Jwts::for_origin(&keys.jwt, &config.public_origin()).mint(USER, 3600 * 24 * 365, NOW);
        let services = Services {
            mail: None,
            store,
            keys: Some(keys),
            clock: Arc::new(FakeClock::at(NOW)),
            objects: Arc::new(
                LocalObjects::open(dir.join("uploads"), &config.public_origin()).expect("objects"),
            ),
        };
        let first_day = NaiveDate::from_ymd_opt(2026, 10, 1).expect("a date");
        runtime
            .block_on(services.seed_demo(USER, first_day))
            .expect("the demo data");
        let app = App::new(config, RouteGroup::All, services).expect("the app");
        Fuzzed {
            app,
            runtime,
            token,
        }
    })
}

impl Fuzzed {
    /// One request through `App::handle`; `None` when `http` refuses to build it (an
    /// invalid header value or URI: no server would hand such a request over).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Option<http::Response<Bytes>> {
        let mut request = http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let request = request.body(Bytes::copy_from_slice(body)).ok()?;
        let response = self.runtime.block_on(self.app.handle(request));
        // The panic boundary answers a panic inside the request with 500 and keeps going,
        // so a crash would never reach the fuzzer (or the seeds' replay) as one. On this
        // app (an embedded store in a temporary directory, no outbound calls) nothing
        // answers 500 but a bug: count it as the crash it is.
        assert_ne!(
            response.status(),
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "{method} {path} answered 500: a panic inside the request, or a store failure"
        );
        Some(response)
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}
