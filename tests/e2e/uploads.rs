//! Uploads of any real size: the two-step flow (create, PUT the whole file,
//! poll until done) on the local server, for a readings CSV, the same gzip-compressed,
//! a JSON file and a genotype file; a bad line deep in a large file fails the upload
//! with its line and saves nothing; only the owner sees an upload; a forged, altered or
//! expired URL is refused; a re-upload never duplicates; the small-body endpoints
//! still work. A file cannot blow up the server (a 256 MB line, a gzip bomb of
//! blank rows: failed fast, in flat memory); finding 6: the PUT URL lives 15 minutes
//! and takes exactly the size the upload states.

use std::io::Write;
use std::time::{Duration, Instant};

use e2e::{Reply, Server, TempDir, bearer, bearer_json, in_process, root, rpc, send};
use mirobody::identity::{Jwts, Keys};
use serde_json::{Value, json};

/// `POST /api/data/uploads`: the upload's id and its PUT URL.
async fn create(server: &Server, token: &str, kind: &str, filename: &str) -> (String, String) {
    let reply = bearer_json(
        server,
        "POST",
        "/api/data/uploads",
        token,
        Some(json!({ "kind": kind, "filename": filename })),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let data = reply.json()["data"].clone();
    assert_eq!(data["method"], "PUT", "{data}");
    assert!(data["expires_at"].as_u64().is_some(), "{data}");
    (
        data["id"].as_str().unwrap().to_string(),
        data["upload_url"].as_str().unwrap().to_string(),
    )
}

async fn put(url: &str, body: Vec<u8>) -> Reply {
    let client = e2e::web_client().no_proxy().build().unwrap();
    let response = client
        .put(url)
        .body(body)
        .send()
        .await
        .expect("the server answers");
    Reply {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.text().await.unwrap(),
    }
}

async fn status(server: &Server, token: &str, id: &str) -> Reply {
    send(
        "GET",
        &server.url(&format!("/api/data/uploads/{id}")),
        &bearer(token),
        None,
    )
    .await
}

/// Polls the upload until it is done or failed; its record.
async fn finished(server: &Server, token: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let reply = status(server, token, id).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let record = reply.json()["data"].clone();
        if record["status"] == "done" || record["status"] == "failed" {
            return record;
        }
        assert!(Instant::now() < deadline, "still {record}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Create, PUT, poll: the finished record.
async fn upload_file(server: &Server, token: &str, kind: &str, name: &str, body: Vec<u8>) -> Value {
    let (id, url) = create(server, token, kind, name).await;
    let stored = put(&url, body).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    finished(server, token, &id).await
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// `rows` glucose readings, one every 5 minutes from 2024-01-01 (a CGM's file).
fn cgm_csv(rows: usize, bad_line: Option<usize>) -> String {
    let mut csv = String::from("indicator,value,unit,time,source\n");
    let start = chrono::NaiveDate::from_ymd_opt(2024, 1, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    for i in 0..rows {
        let time = start + chrono::Duration::minutes(5 * i as i64);
        // Line numbers count the header as line 1.
        let value = if bad_line == Some(i + 2) {
            String::new()
        } else {
            format!("{}", 80 + i % 60)
        };
        csv.push_str(&format!(
            "Glucose,{value},mg/dL,{},CGM\n",
            time.format("%Y-%m-%dT%H:%M:%S")
        ));
    }
    csv
}

async fn glucose_count(server: &Server, token: &str) -> Value {
    let reply = rpc(
        &server.url("/mcp"),
        Some(token),
        "tools/call",
        json!({ "name": "query_health_indicators",
                "arguments": { "keywords": ["glucose"], "aggregate": "stats" } }),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = reply.json()["result"].clone();
    result["structuredContent"]["indicators"][0]["count"].clone()
}

async fn summary(server: &Server, token: &str) -> Value {
    let reply = send("GET", &server.url("/api/data"), &bearer(token), None).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readings_csv_gzip_and_json_import_whole_and_never_duplicate() {
    let server = Server::start(&[]);
    let token = server.token("uploader");

    // A readings CSV larger than the small-body endpoint takes (8 MiB).
    let csv = cgm_csv(210_000, None);
    assert!(csv.len() > 8 * 1024 * 1024, "{} bytes", csv.len());
    let done = upload_file(
        &server,
        &token,
        "health",
        "cgm.csv",
        csv.clone().into_bytes(),
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(
        (done["rows_read"].clone(), done["rows_written"].clone()),
        (json!(210_000), json!(210_000)),
        "{done}"
    );
    assert_eq!(done["progress"], 1.0);
    assert_eq!(done["error"], Value::Null);
    assert_eq!(done["kind"], "health");
    assert_eq!(done["filename"], "cgm.csv");
    assert_eq!(done["bytes"], csv.len() as u64);
    assert!(done["finished_at"].as_u64().is_some(), "{done}");
    assert_eq!(glucose_count(&server, &token).await, 210_000);

    // The same file gzip-compressed: imported again, replacing (never duplicating).
    let zipped = gzip(csv.as_bytes());
    let again = upload_file(&server, &token, "health", "cgm.csv.gz", zipped.clone()).await;
    assert_eq!(again["status"], "done", "{again}");
    assert_eq!(again["bytes"], zipped.len() as u64);
    assert_eq!(
        glucose_count(&server, &token).await,
        210_000,
        "no duplicates"
    );

    // A JSON file ({"readings": [...]}), gzip too.
    let json_file = json!({ "readings": [
        { "indicator": "HbA1c", "value": 5.6, "unit": "%", "time": "2025-01-10", "source": "Lab" },
        { "indicator": "HbA1c", "value": "5.8", "unit": "%", "time": "2025-04-10", "source": "Lab" }
    ], "exported": "2025-05-01" });
    let done = upload_file(
        &server,
        &token,
        "health",
        "labs.json",
        gzip(json_file.to_string().as_bytes()),
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_written"], 2);

    // Listed newest first; only the owner's.
    let listed = send(
        "GET",
        &server.url("/api/data/uploads"),
        &bearer(&token),
        None,
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let uploads = listed.json()["data"]["uploads"].clone();
    let names: Vec<&str> = uploads
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["filename"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["labs.json", "cgm.csv.gz", "cgm.csv"]);

    // The small-body endpoint still works beside it.
    let mut headers = bearer(&token);
    headers.push(("content-type".into(), "text/csv".into()));
    let small = send(
        "POST",
        &server.url("/api/data/health"),
        &headers,
        Some("indicator,value,unit,time\nLDL,101,mg/dL,2025-02-01\n".into()),
    )
    .await;
    assert_eq!(small.status, 200, "{}", small.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_genotype_file_imports_and_a_bad_line_deep_in_a_file_saves_nothing() {
    let server = Server::start(&[]);
    let token = server.token("genome");
    let genome = "# 23andMe-style raw data\n# rsid\tchromosome\tposition\tgenotype\n\
                  rs429358\t19\t44908684\tTC\nrs7412\t19\t44908822\tCC\n";
    let done = upload_file(
        &server,
        &token,
        "genotype",
        "genome.txt",
        gzip(genome.as_bytes()),
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_written"], 2);
    let genes = rpc(
        &server.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({ "name": "get_genetic_data", "arguments": { "rsid": "rs7412" } }),
    )
    .await;
    assert!(genes.body.contains("rs7412"), "{}", genes.body);

    // A bad line deep in a large file: failed with that line, nothing saved.
    let other = server.token("careful");
    let bad = cgm_csv(120_000, Some(100_001));
    let failed = upload_file(&server, &other, "health", "bad.csv", bad.into_bytes()).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["line"], 100_001, "{failed}");
    assert_eq!(failed["error"]["message"], "value is missing", "{failed}");
    assert_eq!(failed["rows_written"], 0, "{failed}");
    assert_eq!(
        summary(&server, &other).await["health"],
        false,
        "nothing saved"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_owner_sees_an_upload_and_urls_are_capabilities() {
    let server = Server::start(&[]);
    let owner = server.token("owner");
    let stranger = server.token("stranger");
    let (id, url) = create(&server, &owner, "health", "mine.csv").await;

    // Another user: 404, and not in their list.
    assert_eq!(status(&server, &stranger, &id).await.status, 404);
    assert_eq!(
        status(&server, &owner, "0123456789abcdef0123456789")
            .await
            .status,
        404
    );
    assert_eq!(status(&server, &owner, "../../etc").await.status, 404);
    let listed = send(
        "GET",
        &server.url("/api/data/uploads"),
        &bearer(&stranger),
        None,
    )
    .await;
    assert_eq!(listed.json()["data"]["uploads"], json!([]));
    // No token, no upload.
    let anonymous = send(
        "POST",
        &server.url("/api/data/uploads"),
        &[],
        Some("{}".into()),
    )
    .await;
    assert_eq!(anonymous.status, 401);
    let bad_kind = bearer_json(
        &server,
        "POST",
        "/api/data/uploads",
        &owner,
        Some(json!({ "kind": "photos" })),
    )
    .await;
    assert_eq!(bad_kind.status, 400, "{}", bad_kind.body);

    // A forged signature, an altered expiry, no signature: refused, nothing stored.
    let body = b"indicator,value,unit,time\nLDL,3,mmol/L,2025-01-01\n".to_vec();
    let (base, query) = url.split_once('?').unwrap();
    let forged = query
        .split('&')
        .map(|part| match part.strip_prefix("signature=") {
            Some(sig) => format!("signature={}", sig.chars().rev().collect::<String>()),
            None => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&");
    let later = query
        .split('&')
        .map(|part| match part.strip_prefix("expires=") {
            Some(at) => format!("expires={}", at.parse::<u64>().unwrap() + 3600),
            None => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&");
    for refused in [
        format!("{base}?{forged}"),
        format!("{base}?{later}"),
        base.to_string(),
    ] {
        assert_eq!(put(&refused, body.clone()).await.status, 403, "{refused}");
    }
    // Another upload's URL path with this one's signature.
    let (_, other_url) = create(&server, &owner, "health", "other.csv").await;
    let (other_base, _) = other_url.split_once('?').unwrap();
    assert_eq!(
        put(&format!("{other_base}?{query}"), body.clone())
            .await
            .status,
        403
    );
    assert_eq!(
        status(&server, &owner, &id).await.json()["data"]["status"],
        "waiting"
    );

    // The real URL works once; the file cannot be replaced afterwards.
    assert_eq!(put(&url, body.clone()).await.status, 200);
    assert_eq!(finished(&server, &owner, &id).await["status"], "done");
    assert_eq!(put(&url, body).await.status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_upload_url_is_refused() {
    let app = in_process(&[]);
    let keys = Keys {
        jwt: [1; 32],
        seal: [2; 32],
    };
    let origin = app.app.config().public_origin();
    // Signature checks use the real time (the app's fake clock is ahead of it).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = Jwts::for_origin(&keys.jwt, &origin).mint("late", 3600, now);
    let mut headers = bearer(&token);
    headers.push(("content-type".into(), "application/json".into()));
    let created = app
        .send(
            "POST",
            "/api/data/uploads",
            &headers,
            json!({ "kind": "health", "filename": "late.csv" }).to_string(),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let url = created.json()["data"]["upload_url"]
        .as_str()
        .unwrap()
        .to_string();
    let path = url.strip_prefix(&origin).unwrap().to_string();
    let csv = "indicator,value,unit,time\nLDL,3,mmol/L,2025-01-01\n".to_string();

    app.clock.advance(3601);
    let late = app.send("PUT", &path, &[], csv.clone()).await;
    assert_eq!(late.status, 403, "{}", late.body);

    // A fresh one, in time, through the app's buffered path: stored and imported.
    app.clock.advance(0);
    let created = app
        .send(
            "POST",
            "/api/data/uploads",
            &headers,
            json!({ "kind": "health", "filename": "soon.csv" }).to_string(),
        )
        .await;
    let data = created.json()["data"].clone();
    let path = data["upload_url"]
        .as_str()
        .unwrap()
        .strip_prefix(&origin)
        .unwrap()
        .to_string();
    let stored = app.send("PUT", &path, &[], csv).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    let id = data["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = app
            .send(
                "GET",
                &format!("/api/data/uploads/{id}"),
                &bearer(&token),
                String::new(),
            )
            .await;
        if reply.json()["data"]["status"] == "done" {
            break;
        }
        assert!(Instant::now() < deadline, "{}", reply.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The readings of `name` the user holds, by the stats of `query_health_indicators`.
async fn stats_of(server: &Server, token: &str, name: &str) -> Value {
    let reply = rpc(
        &server.url("/mcp"),
        Some(token),
        "tools/call",
        json!({ "name": "query_health_indicators",
                "arguments": { "indicators": [name], "aggregate": "stats" } }),
    )
    .await;
    reply.json()["result"]["structuredContent"]["indicators"][0].clone()
}

/// An Apple Health export, as `export.xml` or as the Health app's
/// `export.zip`, imports its records of known types with units and LOINC codes; records
/// of unknown types are skipped, not an error; a damaged export fails with its line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apple_health_export_imports_from_xml_and_from_zip() {
    let server = Server::start(&[]);
    let token = server.token("apple");
    let record = |kind: &str, unit: &str, value: &str, at: &str| {
        format!(
            "<Record type=\"HKQuantityTypeIdentifier{kind}\" sourceName=\"Watch\" unit=\"{unit}\" \
             creationDate=\"{at} +0100\" startDate=\"{at} +0100\" endDate=\"{at} +0100\" value=\"{value}\"/>\n"
        )
    };
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_GB\">\n\
         <ExportDate value=\"2024-03-02 08:00:00 +0100\"/>\n",
    );
    xml += &record("HeartRate", "count/min", "61", "2024-03-01 07:00:00");
    xml += &record("HeartRate", "count/min", "64", "2024-03-01 07:05:00");
    xml += &record("BodyMass", "kg", "78.4", "2024-03-01 07:10:00");
    xml += &record("SomethingNew", "count", "3", "2024-03-01 07:15:00");
    xml += "</HealthData>\n";
    let done = upload_file(
        &server,
        &token,
        "apple_health",
        "export.xml",
        xml.into_bytes(),
    )
    .await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_written"], 3, "{done}");
    let heart = stats_of(&server, &token, "Heart rate").await;
    assert_eq!(heart["count"], 2, "{heart}");
    assert_eq!(heart["code"], "LOINC 8867-4", "{heart}");

    // The Health app's zip (data descriptors after the data), from the generator.
    let dir = TempDir::new("apple-zip");
    let generated = std::process::Command::new("python3")
        .arg(root().join("scripts/gen-dataset"))
        .arg("--out")
        .arg(&dir.0)
        .args(["--days", "1", "--genome-rows", "100", "--apple-mb", "0.2"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs scripts/gen-dataset");
    assert!(generated.success());
    let zip = std::fs::read(dir.0.join("export.zip")).unwrap();
    let other = server.token("apple-zip");
    let done = upload_file(&server, &other, "apple_health", "export.zip", zip).await;
    assert_eq!(done["status"], "done", "{done}");
    let written = done["rows_written"].as_u64().unwrap();
    assert!(written > 100, "{done}");

    // A damaged export: the line of the fault, nothing saved.
    let broken = "<?xml version=\"1.0\"?>\n<HealthData>\n<Record type=\"HKQuantityTypeIdentifierHeartRate\"\n value=\"61\" <oops\n";
    let third = server.token("apple-broken");
    let failed = upload_file(&server, &third, "apple_health", "export.xml", broken.into()).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["rows_written"], 0, "{failed}");
    assert!(failed["error"]["message"].as_str().is_some(), "{failed}");
}

/// A gzip file streamed from `head` then `pattern` repeated to `total` bytes, compressed
/// as it is written (the test never holds the plain file).
fn gzip_of_repeats(head: &[u8], pattern: &[u8], total: usize) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(head).unwrap();
    let chunk = pattern.repeat((1 << 20) / pattern.len());
    let mut written = head.len();
    while written < total {
        let n = chunk.len().min(total - written);
        encoder.write_all(&chunk[..n]).unwrap();
        written += n;
    }
    encoder.finish().unwrap()
}

/// Create, PUT, poll, measuring the server: the finished record, how much its peak
/// resident memory grew (KiB) and the CPU time it spent.
async fn upload_measured(
    server: &Server,
    token: &str,
    name: &str,
    body: Vec<u8>,
) -> (Value, u64, Duration) {
    let peak = server.peak_rss_kib();
    let cpu = server.cpu_time();
    let done = upload_file(server, token, "health", name, body).await;
    let grown = server.peak_rss_kib().saturating_sub(peak);
    (done, grown, server.cpu_time().saturating_sub(cpu))
}

/// Over the two-step flow on the debug server: a 261 KB gzip
/// file holding one 256 MB line (before: +790 MB of peak memory) and a 64 KB gzip bomb
/// of 22 million blank rows (before: seconds of CPU) each end `failed` saying what was
/// too large, with the server's peak memory up by less than 16 MiB and its CPU under a
/// second (a margin for the 2-core CI machine: each takes a few tens of ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_line_and_a_gzip_bomb_fail_fast_in_flat_memory() {
    let server = Server::start(&[]);
    let token = server.token("bombs");
    // A small import first: the one-time costs (the store, the import's threads) are paid.
    let warm = upload_file(
        &server,
        &token,
        "health",
        "warm.csv",
        cgm_csv(100, None).into(),
    )
    .await;
    assert_eq!(warm["status"], "done", "{warm}");

    let header = b"indicator,value,time\n";
    let line = gzip_of_repeats(header, b"x", 256 << 20);
    let blank = gzip_of_repeats(header, b",,\n", 66 << 20);
    assert!(line.len() < 300 << 10, "{} bytes", line.len());
    assert!(blank.len() < 72 << 10, "{} bytes", blank.len());
    let expected = [
        (
            "line.csv.gz",
            line,
            json!({ "line": 2, "message": "the row is longer than 64 KiB" }),
        ),
        (
            "blank.csv.gz",
            blank,
            json!({ "line": null, "message": "gzip: the file decompresses to more than 100 times \
                   its compressed size (a decompression bomb?)" }),
        ),
    ];
    for (name, body, error) in expected {
        let (failed, grown_kib, cpu) = upload_measured(&server, &token, name, body).await;
        println!("{name}: peak +{grown_kib} KiB, {cpu:?} of server CPU");
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["error"], error, "{failed}");
        assert_eq!(failed["rows_written"], 0, "{failed}");
        assert!(
            grown_kib < 16 * 1024,
            "{name}: peak memory grew {grown_kib} KiB"
        );
        assert!(
            cpu < Duration::from_secs(1),
            "{name}: {cpu:?} of server CPU"
        );
    }
    assert_eq!(
        glucose_count(&server, &token).await,
        100,
        "nothing else saved"
    );

    // The small-body endpoint's CSV has the same row bound: 400 naming the line.
    let mut headers = bearer(&token);
    headers.push(("content-type".into(), "text/csv".into()));
    let long = format!(
        "indicator,value,unit,time,note\nLDL,101,mg/dL,2025-02-01,\nLDL,102,mg/dL,2025-02-02,{}\n",
        "n".repeat(100_000)
    );
    let small = send(
        "POST",
        &server.url("/api/data/health"),
        &headers,
        Some(long),
    )
    .await;
    assert_eq!(small.status, 400, "{}", small.body);
    assert!(
        small.body.contains("line 3") && small.body.contains("the row is longer than 64 KiB"),
        "{}",
        small.body
    );
}

/// The PUT is bounded. An upload created with its file's `size`
/// takes a body of exactly that size (as S3 checks the signed Content-Length): a larger
/// one is refused with 413, a smaller one with 400, and neither is kept; the URL cannot
/// be altered to another size. A size past the kind's cap is refused at creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stated_size_bounds_the_put() {
    let server = Server::start(&[]);
    let token = server.token("sized");
    let csv = b"indicator,value,unit,time\nLDL,3,mmol/L,2025-01-01\n".to_vec();
    let created = bearer_json(
        &server,
        "POST",
        "/api/data/uploads",
        &token,
        Some(json!({ "kind": "health", "filename": "a.csv", "size": csv.len() })),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let data = created.json()["data"].clone();
    let (id, url) = (
        data["id"].as_str().unwrap().to_string(),
        data["upload_url"].as_str().unwrap().to_string(),
    );
    let expires = data["expires_at"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        expires <= now + 15 * 60 + 5,
        "15 minutes: {expires} vs {now}"
    );

    let mut larger = csv.clone();
    larger.extend_from_slice(b"LDL,4,mmol/L,2025-01-02\n");
    assert_eq!(put(&url, larger.clone()).await.status, 413);
    assert_eq!(put(&url, csv[..csv.len() - 1].to_vec()).await.status, 400);
    let altered = url.replace(
        &format!("size={}", csv.len()),
        &format!("size={}", larger.len()),
    );
    assert_ne!(altered, url);
    assert_eq!(put(&altered, larger).await.status, 403);
    assert_eq!(
        status(&server, &token, &id).await.json()["data"]["status"],
        "waiting",
        "nothing was kept"
    );
    assert_eq!(put(&url, csv).await.status, 200);
    assert_eq!(finished(&server, &token, &id).await["status"], "done");

    for (kind, size) in [
        ("genotype", (128u64 << 20) + 1),
        ("health", (4u64 << 30) + 1),
        ("apple_health", (5u64 << 30) + 1),
    ] {
        let refused = bearer_json(
            &server,
            "POST",
            "/api/data/uploads",
            &token,
            Some(json!({ "kind": kind, "filename": "x", "size": size })),
        )
        .await;
        assert_eq!(refused.status, 413, "{kind}: {}", refused.body);
    }
    let zero = bearer_json(
        &server,
        "POST",
        "/api/data/uploads",
        &token,
        Some(json!({ "kind": "health", "size": 0 })),
    )
    .await;
    assert_eq!(zero.status, 400, "{}", zero.body);
}

/// Issue 29: a file that is not readings is answered with what it is (a PDF, a raw
/// genome, another app's CSV), 400, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_readings_is_named_for_what_it_is() {
    let server = Server::start(&[]);
    let token = server.token("not-readings");
    let mut headers = bearer(&token);
    headers.push(("content-type".into(), "text/csv".into()));
    for (body, says) in [
        ("%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\n", "this is a PDF"),
        (
            "# This data file generated by 23andMe\nrs4680\t22\t19951271\tAG\n",
            "raw genome file",
        ),
        (
            "Date,Steps,Distance (km)\n2026-03-01,9600,7.1\n",
            "this file's first row has \\\"Date\\\", \\\"Steps\\\", \\\"Distance (km)\\\"",
        ),
        (
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_GB\">\n</HealthData>\n",
            "this looks like an Apple Health export (export.xml), not a CSV of readings",
        ),
    ] {
        let reply = send(
            "POST",
            &server.url("/api/data/health"),
            &headers,
            Some(body.to_string()),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.body);
        assert!(reply.body.contains(says), "{says}: {}", reply.body);
    }
    // An Apple Health export.zip chosen as readings (what the console's picker sends as
    // `health`): the import names it and saves nothing.
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00apple_health_export/export.xml".to_vec();
    let failed = upload_file(&server, &token, "health", "export.zip", zip).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with(
                "this is a zip file, not a readings file: if it is the Apple Health export"
            ),
        "{failed}"
    );
    let catalogue = rpc(
        &server.url("/mcp"),
        Some(&token),
        "tools/call",
        json!({ "name": "query_health_indicators", "arguments": {} }),
    )
    .await;
    assert_eq!(
        catalogue.json()["result"]["structuredContent"]["indicator_count"],
        0,
        "{}",
        catalogue.body
    );
}
