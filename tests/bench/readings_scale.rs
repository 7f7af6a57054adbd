//! Scale figures for readings: three years of 5-minute CGM
//! glucose and heart rate, daily steps, weekly weight and quarterly labs (about 632,000
//! readings, synthetic) on the embedded store, then each `query_health_indicators`
//! shape 20 times through `App::handle`: median and p99. Measures and prints; asserts
//! only that each shape found its indicator.
//!
//! ```text
//! cargo run --release -p e2e --example readings_scale
//! ```

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use chrono::{Duration, NaiveDate};
use mirobody::clock::{Clock, SystemClock};
use mirobody::domain::{Reading, ReadingValue};
use mirobody::identity::{Jwts, Keys};
use mirobody::store::{EmbeddedStore, LocalObjects, Store};
use mirobody::{App, Config, RouteGroup, Runtime, Services};
use serde_json::{Value, json};

const RUNS: usize = 20;
const DAYS: i64 = 3 * 365;

fn reading(indicator: &str, unit: &str, time: String, value: f64, source: &str) -> Reading {
    Reading {
        indicator: indicator.into(),
        value: ReadingValue::Number(value),
        unit: Some(unit.into()),
        time,
        code_system: None,
        code: None,
        source: source.into(),
        offset: None,
        original: None,
    }
}

/// Three years of synthetic data, day by day.
fn dataset() -> Vec<Reading> {
    let start = NaiveDate::from_ymd_opt(2023, 1, 1).unwrap();
    let mut out = Vec::with_capacity(640_000);
    for d in 0..DAYS {
        let day = (start + Duration::days(d)).format("%Y-%m-%d").to_string();
        for slot in 0..288i64 {
            let time = format!("{day}T{:02}:{:02}:00", slot / 12, (slot % 12) * 5);
            let wave = ((slot as f64) / 288.0 * std::f64::consts::TAU).sin();
            out.push(reading(
                "Glucose",
                "mg/dL",
                time.clone(),
                (100.0 + 25.0 * wave + (d % 7) as f64).round(),
                "Dexcom G7",
            ));
            out.push(reading(
                "Heart rate",
                "bpm",
                time,
                (65.0 + 15.0 * wave + (slot % 5) as f64).round(),
                "Apple Watch",
            ));
        }
        out.push(reading(
            "Steps",
            "count",
            format!("{day}T23:59:00"),
            (6000 + (d * 37) % 5000) as f64,
            "Apple Watch",
        ));
        if d % 7 == 0 {
            out.push(reading(
                "Body weight",
                "kg",
                format!("{day}T07:00:00"),
                72.0 + (d % 30) as f64 / 10.0,
                "Scale",
            ));
        }
        if d % 91 == 0 {
            out.push(reading(
                "HbA1c",
                "%",
                format!("{day}T09:00:00"),
                5.4 + (d % 5) as f64 / 10.0,
                "City Lab",
            ));
            out.push(reading(
                "LDL Cholesterol",
                "mg/dL",
                format!("{day}T09:00:00"),
                110.0 + (d % 20) as f64,
                "City Lab",
            ));
        }
    }
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("mirobody-readings-scale-{}", std::process::id()));
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.join("db.sqlite3")).unwrap());
    let data = dataset();
    let started = Instant::now();
    for chunk in data.chunks(100_000) {
        store
            .put_readings("bench-user", chunk)
            .await
            .expect("write");
    }
    let write = started.elapsed().as_secs_f64();
    println!(
        "embedded: wrote {} readings in {write:.1} s ({:.0} rows/s, seven 100k-row batches)",
        data.len(),
        data.len() as f64 / write
    );
    let keys = Keys {
        jwt: [3; 32],
        seal: [4; 32],
    };
    let config = Config::from_vars(Runtime::Local, Vec::new()).unwrap();
    let token = Jwts::for_origin(&keys.jwt, &config.public_origin()).mint(
        "bench-user",
        3600,
        SystemClock.now(),
    );
    let objects_dir = std::env::temp_dir().join(format!("mirobody-bench-{}", std::process::id()));
    let objects =
        LocalObjects::open(objects_dir, &config.public_origin()).expect("an objects directory");
    let app = App::new(
        config,
        RouteGroup::All,
        Services {
            mail: None,
            store,
            objects: Arc::new(objects),
            keys: Some(keys),
            clock: Arc::new(SystemClock),
        },
    )
    .unwrap();
    let shapes = [
        ("catalogue", json!({})),
        (
            "stats, all history, 315k readings",
            json!({ "keywords": ["glucose"], "aggregate": "stats" }),
        ),
        (
            "day buckets over a year",
            json!({ "keywords": ["glucose"], "aggregate": "day", "start_time": "2024-01-01", "end_time": "2024-12-31" }),
        ),
        (
            "week buckets over a year",
            json!({ "keywords": ["glucose"], "aggregate": "week", "start_time": "2024-01-01", "end_time": "2024-12-31" }),
        ),
        (
            "month buckets, all history",
            json!({ "keywords": ["heart rate"], "aggregate": "month" }),
        ),
        ("latest 50 readings", json!({ "keywords": ["glucose"] })),
        (
            "12-reading lab by a synonym",
            json!({ "keywords": ["glycated haemoglobin"], "aggregate": "stats" }),
        ),
        (
            "stats over a 40-day window",
            json!({ "keywords": ["glucose"], "aggregate": "stats", "start_time": "2024-02-10", "end_time": "2024-03-20" }),
        ),
    ];
    println!(
        "{:<36} {:>10} {:>10}",
        "query shape (20 runs)", "median ms", "p99 ms"
    );
    for (label, arguments) in shapes {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "query_health_indicators", "arguments": arguments } });
        let mut times = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
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
            let reply: Value = serde_json::from_slice(response.body()).unwrap();
            let content = &reply["result"]["structuredContent"];
            assert!(
                content["indicators"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
                    || content["indicator_count"].as_u64().is_some_and(|n| n > 0),
                "{label}: {reply}"
            );
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{label:<36} {:>10.2} {:>10.2}",
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
