//! A bounded loopback load run against a running server ("Load and soak"):
//! `connections` clients each send requests back to back for `duration`, a mix of
//! anonymous and signed-in MCP calls, data-tool calls through a token and through the
//! personal URL, the data summary, and discovery. Counts answers by status class and
//! transport errors, and keeps every latency for the percentiles.
//!
//! Used by the short form in the test command (`tests/e2e/load.rs`) and the long form
//! (`cargo run --release -p e2e --example load`); measures, decides nothing itself.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{bearer, modern, post_json, send};

/// What one run saw.
#[derive(Debug, Default)]
pub struct LoadReport {
    pub requests: usize,
    pub ok: usize,
    /// 4xx answers (none expected: every request of the mix is valid).
    pub client_errors: usize,
    pub server_errors: usize,
    /// Connections refused, reset or timed out.
    pub transport_errors: usize,
    latencies_us: Vec<u64>,
}

impl LoadReport {
    /// The `p`th percentile latency (0 to 100).
    pub fn percentile(&self, p: f64) -> Duration {
        if self.latencies_us.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.latencies_us.clone();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        Duration::from_micros(sorted[rank.min(sorted.len() - 1)])
    }

    fn merge(&mut self, other: LoadReport) {
        self.requests += other.requests;
        self.ok += other.ok;
        self.client_errors += other.client_errors;
        self.server_errors += other.server_errors;
        self.transport_errors += other.transport_errors;
        self.latencies_us.extend(other.latencies_us);
    }

    pub fn summary(&self, seconds: f64) -> String {
        format!(
            "{} requests in {seconds:.0} s ({:.0}/s): {} ok, {} 4xx, {} 5xx, {} transport errors; \
             p50 {:?}, p99 {:?}, max {:?}",
            self.requests,
            self.requests as f64 / seconds.max(0.001),
            self.ok,
            self.client_errors,
            self.server_errors,
            self.transport_errors,
            self.percentile(50.0),
            self.percentile(99.0),
            self.percentile(100.0),
        )
    }
}

/// Who the run acts as: a signed-in user with data, and their personal URL.
pub struct Actors {
    pub base: String,
    pub token: String,
    pub personal_url: String,
}

/// Signs up `email`, uploads a few readings and genotypes, and takes the personal URL.
pub async fn prepare(base: &str, email: &str) -> Actors {
    let signed = post_json(
        &format!("{base}/auth/signup"),
        &[],
        &json!({ "email": email, "password": "a long enough password" }),
    )
    .await;
    assert_eq!(signed.status, 201, "{}", signed.body);
    let token = signed.json()["data"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let upload = |path: &str, content_type: &str, body: &str| {
        let mut headers = bearer(&token);
        headers.push(("content-type".into(), content_type.into()));
        let (url, body) = (format!("{base}{path}"), body.to_string());
        async move { send("POST", &url, &headers, Some(body)).await }
    };
    let readings = upload(
        "/api/data/health",
        "text/csv",
        "indicator,value,unit,time,source\nHbA1c,6.1,%,2026-01-10,Lab\nHbA1c,5.9,%,2026-02-11,Lab\n\
         Glucose,101,mg/dL,2026-01-10,Lab\nGlucose,96,mg/dL,2026-03-12,Lab\n",
    )
    .await;
    assert_eq!(readings.status, 200, "{}", readings.body);
    let genotypes = upload(
        "/api/data/genotype",
        "text/plain",
        "rs53576\t3\t8804371\tAG\nrs429358\t19\t44908684\tTC\n",
    )
    .await;
    assert_eq!(genotypes.status, 200, "{}", genotypes.body);
    let mut headers = bearer(&token);
    headers.push(("content-type".into(), "application/json".into()));
    let url = send(
        "POST",
        &format!("{base}/personal/mcp"),
        &headers,
        Some("{}".into()),
    )
    .await;
    assert_eq!(url.status, 200, "{}", url.body);
    let personal_url = url.json()["data"]["url"]
        .as_str()
        .expect("a personal URL")
        .to_string();
    Actors {
        base: base.to_string(),
        token,
        personal_url,
    }
}

/// The request mix, by step number.
fn request(actors: &Actors, step: usize) -> (String, Vec<(String, String)>, Option<Value>) {
    let bearer = (
        "authorization".to_string(),
        format!("Bearer {}", actors.token),
    );
    let mcp = |token: bool, url: &str, method: &str, params: Value| {
        let (mut headers, body) = modern(step as i64, method, params);
        headers.push(("content-type".into(), "application/json".into()));
        if token {
            headers.push(bearer.clone());
        }
        (url.to_string(), headers, Some(body))
    };
    let endpoint = format!("{}/mcp", actors.base);
    match step % 6 {
        0 => mcp(false, &endpoint, "tools/list", json!({})),
        1 => mcp(true, &endpoint, "tools/list", json!({})),
        2 => mcp(
            true,
            &endpoint,
            "tools/call",
            json!({"name": "query_health_indicators", "arguments": {}}),
        ),
        3 => mcp(
            false,
            &actors.personal_url,
            "tools/call",
            json!({"name": "get_genetic_data", "arguments": {"rsid": "rs53576"}}),
        ),
        4 => (
            format!("{}/api/data", actors.base),
            vec![bearer.clone()],
            None,
        ),
        _ => (
            format!("{}/.well-known/oauth-authorization-server", actors.base),
            Vec::new(),
            None,
        ),
    }
}

/// Runs the mix with `connections` concurrent clients for `duration`.
pub async fn run(actors: Actors, connections: usize, duration: Duration) -> LoadReport {
    let actors = std::sync::Arc::new(actors);
    let client = crate::web_client()
        .no_proxy()
        .pool_max_idle_per_host(connections)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client");
    let deadline = Instant::now() + duration;
    let tasks: Vec<_> = (0..connections)
        .map(|worker| {
            let (client, actors) = (client.clone(), actors.clone());
            tokio::spawn(async move {
                let mut report = LoadReport::default();
                let mut step = worker;
                while Instant::now() < deadline {
                    let (url, headers, body) = request(&actors, step);
                    step += 1;
                    let mut builder = match &body {
                        Some(body) => client.post(&url).body(body.to_string()),
                        None => client.get(&url),
                    };
                    for (k, v) in &headers {
                        builder = builder.header(k, v);
                    }
                    let started = Instant::now();
                    let answer = match builder.send().await {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            response.bytes().await.map(|_| status)
                        }
                        Err(e) => Err(e),
                    };
                    report.requests += 1;
                    match answer {
                        Ok(status) => {
                            report
                                .latencies_us
                                .push(started.elapsed().as_micros() as u64);
                            match status {
                                200..=299 => report.ok += 1,
                                400..=499 => report.client_errors += 1,
                                _ => report.server_errors += 1,
                            }
                        }
                        Err(_) => report.transport_errors += 1,
                    }
                }
                report
            })
        })
        .collect();
    let mut total = LoadReport::default();
    for task in tasks {
        total.merge(task.await.expect("a load worker"));
    }
    total
}

/// The resident set size (`VmRSS`) of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
