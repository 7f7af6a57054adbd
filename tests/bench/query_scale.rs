//! Scale figure for `query_health_indicators`: time and DynamoDB requests
//! for `aggregate: "stats"` over 10 indicators x 1,000 readings, on the embedded store
//! and on DynamoDB (moto). Measures and prints; asserts nothing.
//!
//! ```text
//! infra/local-aws                      # prints the moto endpoint (default http://127.0.0.1:5005)
//! cargo run --release -p e2e --example query_scale -- http://127.0.0.1:5005
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use bytes::Bytes;
use mirobody::clock::{Clock, SystemClock};
use mirobody::domain::{Reading, ReadingValue};
use mirobody::identity::{Jwts, Keys};
use mirobody::store::{DynamoStore, DynamoTables, EmbeddedStore, LocalObjects, Store};
use mirobody::{App, Config, RouteGroup, Runtime, Services};
use serde_json::{Value, json};

const INDICATORS: usize = 10;
const PER_INDICATOR: usize = 1000;
const RUNS: usize = 5;

#[derive(Debug, Clone)]
struct Counter(Arc<AtomicUsize>);

impl Intercept for Counter {
    fn name(&self) -> &'static str {
        "request-counter"
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn readings() -> Vec<Reading> {
    let mut out = Vec::with_capacity(INDICATORS * PER_INDICATOR);
    for i in 0..INDICATORS {
        for n in 0..PER_INDICATOR {
            let day = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).unwrap()
                + chrono::Duration::days((n / 4) as i64);
            out.push(Reading {
                indicator: format!("Indicator {i:02}"),
                value: ReadingValue::Number(50.0 + (n % 37) as f64 / 3.0),
                unit: Some("mg/dL".into()),
                time: format!("{}T{:02}:00:00", day.format("%Y-%m-%d"), (n % 4) * 6),
                code_system: None,
                code: None,
                source: "Bench Lab".into(),
                offset: None,
                original: None,
            });
        }
    }
    out
}

async fn measure(label: &str, store: Arc<dyn Store>, requests: Option<&AtomicUsize>) {
    let keys = Keys {
        jwt: [3; 32],
        seal: [4; 32],
    };
    let origin = Config::from_vars(Runtime::Local, Vec::new())
        .unwrap()
        .public_origin();
    let token = Jwts::for_origin(&keys.jwt, &origin).mint("bench-user", 3600, SystemClock.now());
    let data = readings();
    let started = Instant::now();
    store
        .put_readings("bench-user", &data)
        .await
        .expect("write");
    let write_ms = started.elapsed().as_millis();
    let config = Config::from_vars(Runtime::Local, Vec::new()).unwrap();
    let objects_dir = std::env::temp_dir().join(format!("mirobody-bench-{}", std::process::id()));
    let objects = LocalObjects::open(objects_dir, &origin).expect("an objects directory");
    let app = App::new(
        config,
        RouteGroup::All,
        Services {
            mail: None,
            store,
            keys: Some(keys),
            clock: Arc::new(SystemClock),
            objects: Arc::new(objects),
        },
    )
    .unwrap();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "query_health_indicators",
        "arguments": { "keywords": ["Indicator"], "aggregate": "stats" }
    }});
    let mut times = Vec::new();
    let mut per_call = 0;
    for _ in 0..RUNS {
        let before = requests.map(|r| r.load(Ordering::Relaxed)).unwrap_or(0);
        let request = http::Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {token}"))
            .body(Bytes::from(body.to_string()))
            .unwrap();
        let started = Instant::now();
        let response = app.handle(request).await;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        per_call = requests.map(|r| r.load(Ordering::Relaxed)).unwrap_or(0) - before;
        let reply: Value = serde_json::from_slice(response.body()).unwrap();
        let found = reply["result"]["structuredContent"]["indicators"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(found, INDICATORS, "{reply}");
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{label}: write {} readings {write_ms} ms; stats query median {:.1} ms (min {:.1}, max {:.1}) over {RUNS} runs{}",
        data.len(),
        times[RUNS / 2],
        times[0],
        times[RUNS - 1],
        requests
            .map(|_| format!("; {per_call} DynamoDB requests per call"))
            .unwrap_or_default()
    );
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("mirobody-query-scale-{}", std::process::id()));
    let embedded = Arc::new(EmbeddedStore::open(dir.join("db.sqlite3")).unwrap());
    measure("embedded (SQLite)", embedded, None).await;
    let _ = std::fs::remove_dir_all(&dir);

    let Some(endpoint) = std::env::args().nth(1) else {
        println!("DynamoDB: skipped (pass the moto endpoint printed by infra/local-aws)");
        return;
    };
    let count = Arc::new(AtomicUsize::new(0));
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(mirobody::aws::http_client())
        .endpoint_url(&endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test", "test", None, None, "bench",
        ))
        .load()
        .await;
    let client_config = aws_sdk_dynamodb::config::Builder::from(&config)
        .interceptor(Counter(count.clone()))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(client_config);
    let suffix = std::process::id();
    let tables = DynamoTables {
        keys: format!("bench-keys-{suffix}"),
        data: format!("bench-data-{suffix}"),
    };
    DynamoStore::create_tables(&client, &tables)
        .await
        .expect("tables");
    measure(
        "DynamoDB (moto)",
        Arc::new(DynamoStore::new(client, tables)),
        Some(&count),
    )
    .await;
}
