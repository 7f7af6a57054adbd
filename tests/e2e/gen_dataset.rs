//! The readings benchmark's dataset (`scripts/gen-dataset`) in a tiny run, through today's
//! upload API: the three-year readings file and the 23andMe genome upload, and the
//! data tools find them (a CGM glucose by a synonym, a quarterly lab, the well-known
//! rsids the benchmark looks up). The Apple Health files are parsed in
//! `upload::apple_health`'s unit tests until the upload flow imports them.

use e2e::{Server, TempDir, bearer, root, rpc, send};
use serde_json::{Value, json};

async fn call(server: &Server, token: &str, tool: &str, arguments: Value) -> Value {
    let reply = rpc(
        &server.url("/mcp"),
        Some(token),
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
    .await;
    assert_eq!(reply.status, 200, "{tool}: {}", reply.body);
    let answer = reply.json();
    assert_eq!(answer["result"]["isError"], false, "{tool}: {answer}");
    answer["result"]["structuredContent"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_readings_and_genome_upload_and_answer() {
    let dir = TempDir::new("gen-dataset");
    let status = std::process::Command::new("python3")
        .arg(root().join("scripts/gen-dataset"))
        .arg("--out")
        .arg(&dir.0)
        .args(["--days", "4", "--genome-rows", "12000", "--apple-mb", "0.2"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs scripts/gen-dataset");
    assert!(status.success());
    let read = |name: &str| std::fs::read_to_string(dir.0.join(name)).unwrap();

    let server = Server::start(&[]);
    let token = server.token("generated");
    let upload = |path: &'static str, content_type: &'static str, body: String| {
        let mut headers = bearer(&token);
        headers.push(("content-type".into(), content_type.into()));
        let url = server.url(path);
        async move { send("POST", &url, &headers, Some(body)).await }
    };

    let readings = read("readings-3y.csv");
    let rows = readings.lines().count() - 1;
    let reply = upload("/api/data/health", "text/csv", readings).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["data"]["written"], rows);

    let glucose = call(
        &server,
        &token,
        "query_health_indicators",
        json!({ "keywords": ["blood sugar"], "aggregate": "stats" }),
    )
    .await;
    assert_eq!(glucose["indicators"][0]["name"], "Glucose", "{glucose}");
    assert_eq!(glucose["indicators"][0]["count"], 4 * 288, "{glucose}");
    let lab = call(
        &server,
        &token,
        "query_health_indicators",
        json!({ "keywords": ["glycated hemoglobin"] }),
    )
    .await;
    assert_eq!(lab["indicators"][0]["name"], "Hemoglobin A1c", "{lab}");

    let reply = upload("/api/data/genotype", "text/plain", read("genome.txt")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let genes = call(
        &server,
        &token,
        "get_genetic_data",
        json!({ "rsid": "rs429358, rs7412, rs1801133, rs4988235" }),
    )
    .await;
    let found: Vec<&str> = genes["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["r"].as_str())
        .collect();
    for rsid in ["rs429358", "rs7412", "rs1801133", "rs4988235"] {
        assert!(found.contains(&rsid), "{rsid}: {genes}");
    }
}
