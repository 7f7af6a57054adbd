//! The cost model (`scripts/cost-model`): the README's "Cost" section is exactly
//! what the model prints for the committed benchmark output (`docs/cost/bench.json`), so a
//! price, profile or measurement change without regenerating the README fails here; and
//! the model's arithmetic on a tiny hand-made benchmark matches numbers worked out by hand.

use std::process::Command;

use e2e::{TempDir, root};
use serde_json::{Value, json};

const BEGIN: &str = "<!-- cost-model:begin -->\n";
const END: &str = "<!-- cost-model:end -->";

fn model(bench: &std::path::Path) -> String {
    let out = Command::new("python3")
        .arg(root().join("scripts/cost-model"))
        .arg(bench)
        .output()
        .expect("python3 runs scripts/cost-model");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_readme_cost_section_is_the_models_output_for_the_committed_benchmark() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("README has the cost-model markers")
        + BEGIN.len();
    let end = start + readme[start..].find(END).expect("and the end marker");
    let printed = model(&root().join("docs/cost/bench.json"));
    assert!(
        readme[start..end] == printed,
        "README's cost section is stale: run scripts/cost-model docs/cost/bench.json --write README.md\n\
         --- README\n{}\n--- scripts/cost-model\n{printed}",
        &readme[start..end]
    );
    let bench: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/cost/bench.json")).unwrap(),
    )
    .unwrap();
    let commit = bench["commit"].as_str().unwrap();
    assert_eq!(commit.len(), 40, "the bench records its commit");
    assert!(printed.contains(&commit[..12]), "the section names it");
    assert!(
        readme.contains("scripts/bench-cost --out docs/cost/bench.json"),
        "the README gives the command that regenerates the numbers"
    );
    for op in [
        "mcp: tools/list, anonymous",
        "mcp: tools/list, signed in",
        "mcp: tools/list, 2 external servers",
        "mcp: query_health_indicators, a week",
        "mcp: query_health_indicators, a year",
        "mcp: get_genetic_data",
        "data: upload a day of wearable readings",
        "data: summary",
        "oauth: sign-in",
        "oauth: token refresh",
        "console: data page",
        "import: a file of readings",
    ] {
        let measured = &bench["operations"][op];
        // An anonymous tools/list reads nothing; every other operation reads or writes.
        let requests = measured["dynamodb"]["requests"].as_f64().unwrap();
        assert_eq!(
            requests > 0.0,
            op != "mcp: tools/list, anonymous",
            "{op}: {requests}"
        );
        assert!(measured["duration_ms"]["median"].as_f64().unwrap() > 0.0);
        assert!(printed.contains(&format!("| {op} |")), "{op} in the table");
    }
}

/// One operation every MCP and user-month row can use: 100 ms at 256 MB, 2 read units,
/// no writes, a log of exactly 1 MiB with Lambda's own lines (330 bytes).
fn op(function: &str, response_bytes: u64) -> Value {
    json!({
        "function": function,
        "samples": 1,
        "duration_ms": { "median": 100.0, "p90": 120.0 },
        "dynamodb": { "requests": 2, "reads": 2, "writes": 0, "other": 0, "request_bytes": 100,
                      "response_bytes": 2048, "rru": 2, "wru": 0, "items_written": 0,
                      "item_bytes_written": 0, "by_kind": { "Query": 2 } },
        "s3": { "requests": 0, "put": 0, "get": 0, "other": 0, "request_bytes": 0, "response_bytes": 0 },
        "secretsmanager": { "requests": 0 },
        "log_bytes": 1024 * 1024 - 330,
        "response_bytes": response_bytes,
        "description": "hand-made",
    })
}

#[test]
fn the_models_arithmetic_matches_numbers_worked_out_by_hand() {
    let mut operations = serde_json::Map::new();
    for name in [
        "mcp: tools/list, anonymous",
        "mcp: tools/list, signed in",
        "mcp: tools/list, 2 external servers",
        "mcp: query_health_indicators, a week",
        "mcp: query_health_indicators, a year",
        "data: upload a day of wearable readings",
        "data: summary",
        "oauth: sign-in",
        "oauth: token refresh",
        "console: data page",
    ] {
        operations.insert(name.into(), op("mcp", 1000));
    }
    // 600,000 bytes is two of API Gateway's 512 KB metering steps.
    operations.insert("mcp: get_genetic_data".into(), op("mcp", 600_000));
    let bench = json!({
        "operations": operations,
        "memory_size_mb": { "mcp": 256 },
        "memory_peak_mb": { "mcp": 30.0 },
        "storage": { "item_bytes": 1000, "items": 1, "readings": 100 },
        "machine": { "host_arch": "x86_64", "cpus": 2, "cpu": "hand", "python": "3" },
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "commit_dirty": false,
        "date": "2026-12-01",
        "reps": 1,
    });
    let dir = TempDir::new("cost-model");
    let path = dir.0.join("bench.json");
    std::fs::write(&path, bench.to_string()).unwrap();
    let printed = model(&path);

    // Per 1,000 calls: Lambda 1000 x ($0.20/M + 0.25 GB x 0.1 s x $0.0000133334) = $0.000533335;
    // API Gateway 1000 x $1/M = $0.001; DynamoDB 1000 x 2 x $0.125/M = $0.00025; logs
    // 1000 x 1 MiB = 1000/1024 GB x $0.50 = $0.48828125; X-Ray 1000 x 5% x $5/M = $0.00025;
    // total $0.490314585.
    assert!(
        printed.contains(
            "| tools/list, signed in | $0.000533 | $0.00100 | $0.000250 | $0.488 | $0.000250 | $0.490 |"
        ),
        "{printed}"
    );
    // Two metering steps: API Gateway $0.002, total $0.491314585.
    assert!(
        printed.contains(
            "| get_genetic_data | $0.000533 | $0.00200 | $0.000250 | $0.488 | $0.000250 | $0.491 |"
        ),
        "{printed}"
    );
    // Storage: 10 bytes a reading x 30 x 288 x 5 readings a month x 12 months = 5,184,000
    // bytes = 4.94 MiB = 0.0048279 GB x $0.25 = $0.00120699.
    assert!(
        printed.contains(
            "| DynamoDB storage | 12 months of history | 10.0 bytes a reading (measured), 4.9 MB | $0.00121 |"
        ),
        "{printed}"
    );
    // A month: 290 operations of the profile, 289 x $0.000490314585 + 1 x $0.000491314585
    // (the genome lookup) + storage $0.00120699 = $0.143399.
    assert!(
        printed.contains("| **Total** | | | **$0.143** |"),
        "{printed}"
    );
    // One token refresh: 0.000490314585 each, 20 a month = $0.00980629.
    assert!(
        printed.contains(
            "| oauth: token refresh | 20 | one per MCP session (20 sessions) | $0.00981 |"
        ),
        "{printed}"
    );
}

/// `scripts/bench-cost` itself in its smallest form, on the debug binaries the suite built:
/// every operation of the month runs through the Lambda binaries and the counting proxy,
/// the counts are the ones a user's data implies, and the model prices the result.
#[test]
fn the_benchmark_runs_every_operation_in_a_reduced_mode() {
    let _python = e2e::python(); // .venv with moto: scripts/install-test-deps
    let dir = TempDir::new("bench-cost");
    let out = dir.0.join("bench.json");
    let bins = e2e::binary("mcp").parent().unwrap().to_path_buf();
    let run = Command::new(root().join("scripts/bench-cost"))
        .args([
            "--profile",
            "debug",
            "--no-build",
            "--reps",
            "1",
            "--year-days",
            "2",
        ])
        .arg("--bin-dir")
        .arg(&bins)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("scripts/bench-cost runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bench: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let ops = &bench["operations"];
    let ddb = |op: &str, field: &str| ops[op]["dynamodb"][field].as_f64().unwrap();
    assert_eq!(ops.as_object().unwrap().len(), 12, "{ops}");
    // An anonymous listing touches no table; a signed-in one reads (the token's account).
    assert_eq!(ddb("mcp: tools/list, anonymous", "requests"), 0.0);
    assert!(ddb("mcp: tools/list, signed in", "reads") > 0.0);
    // Reads only: a query, the summary, the console page.
    for op in [
        "mcp: query_health_indicators, a week",
        "data: summary",
        "console: data page",
    ] {
        assert!(
            ddb(op, "rru") > 0.0 && ddb(op, "writes") == 0.0,
            "{op}: {}",
            ops[op]
        );
    }
    // An upload of 1,440 readings and the import of 576 write items, in units.
    for op in [
        "data: upload a day of wearable readings",
        "import: a file of readings",
    ] {
        assert!(
            ddb(op, "wru") >= 1.0 && ddb(op, "items_written") >= 1.0,
            "{op}: {}",
            ops[op]
        );
    }
    assert_eq!(ops["import: a file of readings"]["rows"], 576);
    assert_eq!(ops["import: a file of readings"]["function"], "import");
    assert!(
        ops["import: a file of readings"]["s3"]["get"]
            .as_f64()
            .unwrap()
            >= 1.0
    );
    // A refresh rotates its token: a write.
    assert!(ddb("oauth: token refresh", "writes") > 0.0);
    for function in ["mcp", "personal", "oauth", "data", "console", "import"] {
        assert!(bench["memory_peak_mb"][function].as_f64().unwrap() > 1.0);
    }
    assert_eq!(
        bench["init"]["secretsmanager_requests"], 5,
        "the import reads no keys"
    );
    let printed = model(&out);
    assert!(printed.contains("| **Total** |"), "{printed}");
}
