//! Load and soak, long form: the `e2e::load` mix against a running server for a
//! number of seconds at a number of connections; prints requests, status classes, p50/p99
//! and, given the server's pid, its resident size at the start and the end. Measures and
//! prints; asserts nothing. `scripts/load` starts a release server and runs this.
//!
//! ```text
//! cargo run --release -p e2e --example load -- BASE_URL [SECONDS] [CONNECTIONS] [PID]
//! ```

use std::time::Duration;

use e2e::load::{prepare, rss_kib, run};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let base = args
        .first()
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:18060".into());
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(300);
    let connections: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(300);
    let pid: Option<u32> = args.get(3).and_then(|s| s.parse().ok());
    let email = format!("load-{}@example.com", std::process::id());
    let actors = prepare(&base, &email).await;
    let (token, url) = (actors.token.clone(), actors.personal_url.clone());
    // Warm up at full concurrency, so the start figure already has every connection's buffers.
    let warm = run(actors, connections, Duration::from_secs(10)).await;
    println!("warm-up: {}", warm.summary(10.0));
    let start = pid.map(rss_kib);
    let actors = e2e::load::Actors {
        base: base.clone(),
        token,
        personal_url: url,
    };
    let report = run(actors, connections, Duration::from_secs(seconds)).await;
    println!(
        "{connections} connections: {}",
        report.summary(seconds as f64)
    );
    if let (Some(start), Some(pid)) = (start, pid) {
        println!(
            "server RSS: {start} KiB at the start, {} KiB at the end",
            rss_kib(pid)
        );
    }
}
