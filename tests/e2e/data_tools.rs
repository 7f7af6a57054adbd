//! The user's own data end to end (E1, E2, E4, A5): upload through the data API,
//! see the tools appear in `tools/list`, query every aggregate mode and a synonym,
//! read genotypes with nearby variants, delete, and gating that fails open.

use e2e::{Reply, Server, bearer, listed_tools, rpc, send};
use mirobody::store::{DynamoStore, DynamoTables};
use mirobody::testing::Moto;
use serde_json::{Value, json};

async fn upload(server: &Server, token: &str, path: &str, content_type: &str, body: &str) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), content_type.into()));
    send("POST", &server.url(path), &headers, Some(body.to_string())).await
}

async fn mcp(server: &Server, token: Option<&str>, method: &str, params: Value) -> Value {
    let reply = rpc(&server.url("/mcp"), token, method, params).await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

async fn tool_names(server: &Server, token: Option<&str>) -> Vec<String> {
    listed_tools(&mcp(server, token, "tools/list", json!({})).await)
}

async fn call(server: &Server, token: &str, tool: &str, arguments: Value) -> Value {
    let reply = mcp(
        server,
        Some(token),
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
    .await;
    let result = &reply["result"];
    assert_eq!(result["isError"], false, "{tool} {arguments}: {reply}");
    result["structuredContent"].clone()
}

const CSV: &str = "indicator,value,unit,time,source\n\
HbA1c,6.1,%,2026-01-10,City Lab\n\
HbA1c,5.9,%,2026-02-11,City Lab\n\
HbA1c,5.7,%,2026-03-12T09:30:00,City Lab\n\
\"Glucose, fasting\",101,mg/dL,2026-01-10,City Lab\n\
\"Glucose, fasting\",96,mg/dL,2026-03-12,City Lab\n";

const GENOTYPES: &str = "# 23andMe-style raw data\n\
# rsid\tchromosome\tposition\tgenotype\n\
rs429358\t19\t44908684\tTC\n\
rs7412\t19\t44908822\tCC\n\
rs1801133\t1\t11796321\tAG\n\
rs999\t19\t45900000\tAA\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a5_e1_e2_e4_upload_gate_query_delete() {
    let server = Server::start(&[]);
    let token = server.token("alice");

    // A5: an empty account sees neither data tool; anonymous callers see both.
    let names = tool_names(&server, Some(&token)).await;
    assert!(
        !names.contains(&"query_health_indicators".into())
            && !names.contains(&"get_genetic_data".into()),
        "{names:?}"
    );
    assert!(
        tool_names(&server, None)
            .await
            .contains(&"query_health_indicators".into())
    );

    // E4: CSV and JSON readings; a bad row names its line and nothing is saved.
    let bad = upload(
        &server,
        &token,
        "/api/data/health",
        "text/csv",
        "indicator,value,time\nHbA1c,5.5,2026-04-01\nHbA1c,,2026-04-02\n",
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body.contains("line 3") && bad.body.contains("nothing was saved"),
        "{}",
        bad.body
    );
    assert!(
        !tool_names(&server, Some(&token))
            .await
            .contains(&"query_health_indicators".into()),
        "a refused upload saved rows"
    );
    let ok = upload(&server, &token, "/api/data/health", "text/csv", CSV).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["data"]["written"], 5);
    // Re-uploading the same file does not duplicate rows.
    assert_eq!(
        upload(&server, &token, "/api/data/health", "text/csv", CSV)
            .await
            .status,
        200
    );
    let json_body = json!({ "readings": [
        { "indicator": "LDL Cholesterol", "value": 128, "unit": "mg/dL", "time": "2026-01-10T08:00:00", "code_system": "LOINC", "code": "13457-7", "source": "City Lab" },
        { "indicator": "LDL Cholesterol", "value": "112", "unit": "mg/dL", "time": "2026-03-12", "source": "City Lab" }
    ]});
    assert_eq!(
        upload(
            &server,
            &token,
            "/api/data/health",
            "application/json",
            &json_body.to_string()
        )
        .await
        .status,
        200
    );

    // A5: health data shows the health tool only.
    let names = tool_names(&server, Some(&token)).await;
    assert!(
        names.contains(&"query_health_indicators".into())
            && !names.contains(&"get_genetic_data".into()),
        "{names:?}"
    );

    // E1: the catalogue, then a synonym, each aggregate mode.
    let query_health =
        |arguments: Value| call(&server, &token, "query_health_indicators", arguments);
    let catalogue = query_health(json!({})).await;
    assert_eq!(catalogue["indicator_count"], 3, "{catalogue}");
    let by_synonym = query_health(json!({ "keywords": ["glycated haemoglobin"] })).await;
    let hba1c = &by_synonym["indicators"][0];
    // Uploaded as HbA1c, kept as the catalogue's measure.
    assert_eq!(hba1c["name"], "Hemoglobin A1c", "{by_synonym}");
    assert_eq!(
        hba1c["rows"].as_array().unwrap().len(),
        3,
        "no duplicates after the re-upload: {hba1c}"
    );
    assert_eq!(hba1c["unit"], "%");
    let limited = query_health(json!({ "keywords": ["Hemoglobin A1c"], "limit": 2 })).await;
    assert_eq!(limited["indicators"][0]["truncated"], 1, "{limited}");
    assert!(
        limited["indicators"][0]["rows"][0]
            .as_str()
            .unwrap()
            .starts_with("2026-03-12T09:30:00|5.7"),
        "newest first: {limited}"
    );
    let stats = query_health(json!({ "keywords": ["HbA1c"], "aggregate": "stats" })).await;
    let s = &stats["indicators"][0];
    assert_eq!(
        (s["count"].clone(), s["min"].clone(), s["max"].clone()),
        (json!(3), json!(5.7), json!(6.1)),
        "{stats}"
    );
    assert_eq!(s["first_date"], "2026-01-10");
    assert!(
        s["change"].as_f64().unwrap() + 0.4 < 1e-9,
        "change is a number: {stats}"
    );
    // Uploaded as "Glucose, fasting": the measure Glucose, found by either name.
    let monthly =
        query_health(json!({ "indicators": ["Glucose, fasting"], "aggregate": "month" })).await;
    assert_eq!(monthly["indicators"][0]["name"], "Glucose", "{monthly}");
    assert_eq!(
        monthly["indicators"][0]["rows"],
        json!(["2026-01|101|101|101|1", "2026-03|96|96|96|1"]),
        "{monthly}"
    );
    let weekly = query_health(json!({ "keywords": ["ldl"], "aggregate": "week" })).await;
    assert_eq!(
        weekly["indicators"][0]["rows"][0], "2026-W02|128|128|128|1",
        "{weekly}"
    );
    // Days are the person's local days, so the window is exact (no padding).
    let daily = query_health(json!({ "keywords": ["HbA1c"], "aggregate": "day", "start_time": "2026-02-11", "end_time": "2026-03-12" })).await;
    assert_eq!(
        daily["indicators"][0]["rows"],
        json!(["2026-02-11|5.9|5.9|5.9|1", "2026-03-12|5.7|5.7|5.7|1"]),
        "the window's first and last days: {daily}"
    );
    let inside = query_health(json!({ "keywords": ["HbA1c"], "aggregate": "day", "start_time": "2026-02-12", "end_time": "2026-03-11" })).await;
    assert_eq!(
        inside["indicators"],
        json!([]),
        "nothing between them: {inside}"
    );
    let refused = mcp(
        &server,
        Some(&token),
        "tools/call",
        json!({ "name": "query_health_indicators", "arguments": { "limit": 5000 } }),
    )
    .await;
    assert_eq!(
        refused["result"]["isError"], true,
        "limit has a ceiling: {refused}"
    );

    // E2 and E4: genotypes, then nearby variants nearest first.
    let genotype_reply = upload(
        &server,
        &token,
        "/api/data/genotype",
        "text/plain",
        GENOTYPES,
    )
    .await;
    assert_eq!(genotype_reply.status, 200, "{}", genotype_reply.body);
    assert!(
        tool_names(&server, Some(&token))
            .await
            .contains(&"get_genetic_data".into())
    );
    let genes = call(
        &server,
        &token,
        "get_genetic_data",
        json!({ "rsid": "rs7412, rs429358,rs0000001" }),
    )
    .await;
    let variants = genes["variants"].as_array().unwrap();
    assert_eq!(variants[0]["r"], "rs429358", "ordered by position: {genes}");
    assert_eq!(
        variants[0]["n"][0],
        json!({ "r": "rs7412", "p": 44908822, "g": "CC", "d": 138 })
    );
    assert_eq!(
        variants[0]["n"].as_array().unwrap().len(),
        2,
        "rs999 is within 1 Mb: {genes}"
    );
    assert_eq!(genes["not_found"], json!(["rs0000001"]));

    // Deleting the data hides the tools again.
    let deleted = send("DELETE", &server.url("/api/data"), &bearer(&token), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let names = tool_names(&server, Some(&token)).await;
    assert!(
        !names.contains(&"query_health_indicators".into())
            && !names.contains(&"get_genetic_data".into())
    );
}

#[tokio::test]
async fn e2_without_genotypes_points_at_the_upload_api() {
    let server = Server::start(&[]);
    let token = server.token("bob");
    let out = call(
        &server,
        &token,
        "get_genetic_data",
        json!({ "rsid": ["rs429358"] }),
    )
    .await;
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("/api/data/genotype"),
        "{out}"
    );
}

#[tokio::test]
async fn e4_the_data_api_needs_a_valid_token() {
    let server = Server::start(&[]);
    let anonymous = send(
        "POST",
        &server.url("/api/data/health"),
        &[],
        Some(CSV.into()),
    )
    .await;
    assert_eq!(anonymous.status, 401);
    let forged = upload(
        &server,
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        "/api/data/health",
        "text/csv",
        CSV,
    )
    .await;
    assert_eq!(forged.status, 401);
    let on_mcp = mcp_status(&server, "not.a.jwt").await;
    assert_eq!(
        on_mcp, 401,
        "a bad bearer token on /mcp is refused, not treated as anonymous"
    );
}

async fn mcp_status(server: &Server, token: &str) -> u16 {
    rpc(&server.url("/mcp"), Some(token), "tools/list", json!({}))
        .await
        .status
}

#[tokio::test]
async fn a5_gating_fails_open_when_the_store_is_unreachable() {
    // Every presence probe fails (the data table is missing).
    let moto = Moto::start();
    let settings = without_data_table(&moto, "a5").await;
    let settings: Vec<(&str, &str)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let server = Server::start(&settings);
    let token = server.token("carol");
    let names = tool_names(&server, Some(&token)).await;
    assert!(
        names.contains(&"query_health_indicators".into())
            && names.contains(&"get_genetic_data".into()),
        "{names:?}"
    );
}

#[tokio::test]
async fn seed_demo_loads_an_account_the_tools_answer_for() {
    let server = Server::start(&[]);
    let output = server.command(&["seed-demo", "demo"]);
    let token = output.lines().last().unwrap().trim().to_string();
    let stats = call(
        &server,
        &token,
        "query_health_indicators",
        json!({ "keywords": ["HbA1c"], "aggregate": "stats" }),
    )
    .await;
    assert_eq!(stats["indicators"][0]["count"], 12, "{stats}");
    let apoe = call(
        &server,
        &token,
        "get_genetic_data",
        json!({ "rsid": "rs429358" }),
    )
    .await;
    assert_eq!(apoe["variants"][0]["g"], "TC");
}

/// DynamoDB on moto with the keys table only: every data-table read (presence, readings,
/// servers) fails, while a bearer token's revocation check (the keys table) answers. A
/// store that is wholly unreachable refuses bearer tokens instead (503: a token is never
/// admitted unchecked; `security_revoke::an_unreachable_store_admits_no_token_unchecked`).
async fn without_data_table(moto: &Moto, label: &str) -> Vec<(String, String)> {
    let config = crate::runtime_api::sdk_config(moto).await;
    let tables = DynamoTables {
        keys: format!("{label}-keys"),
        data: format!("{label}-data"),
    };
    DynamoStore::create_tables(&aws_sdk_dynamodb::Client::new(&config), &tables)
        .await
        .expect("tables created in moto");
    vec![
        ("MIROBODY_STORE".into(), "dynamodb".into()),
        ("MIROBODY_KEYS_TABLE".into(), tables.keys),
        ("MIROBODY_DATA_TABLE".into(), format!("{label}-missing")),
        ("AWS_ENDPOINT_URL_DYNAMODB".into(), moto.endpoint.clone()),
    ]
}

/// A genotype file replaces the user's genome as a whole (a new
/// version, then one switch), whatever the backend; a bigger file (100,000 rows) reads
/// back with neighbours; deleting the data removes the genome.
async fn a_genotype_file_replaces_the_genome(server: &Server) {
    let token = server.token("gene");
    let first = upload(
        server,
        &token,
        "/api/data/genotype",
        "text/plain",
        GENOTYPES,
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["data"], json!({ "received": 4, "written": 4 }));
    let second = "rs429358\t19\t44908684\tCC\nrs4680\t22\t19951271\tAG\nrs4680\t22\t19951271\tGG\n";
    let reply = upload(server, &token, "/api/data/genotype", "text/plain", second).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json()["data"],
        json!({ "received": 2, "written": 2 }),
        "a repeated rsid counts once, the last row wins"
    );
    let genes = call(
        server,
        &token,
        "get_genetic_data",
        json!({ "rsid": "rs429358, rs7412, rs4680" }),
    )
    .await;
    let variants = genes["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2, "{genes}");
    assert_eq!(variants[0]["r"], "rs429358");
    assert_eq!(variants[0]["g"], "CC", "the new file's call: {genes}");
    assert_eq!(
        variants[0]["n"],
        json!([]),
        "the old file's neighbours are gone"
    );
    assert_eq!(variants[1]["g"], "GG");
    assert_eq!(
        genes["not_found"],
        json!(["rs7412"]),
        "no merge with the old file"
    );

    // 100,000 rows on three chromosomes: every asked rsid found, its 20 nearest shown.
    let mut big = String::from("# rsid\tchromosome\tposition\tgenotype\n");
    for i in 0..100_000u64 {
        let chromosome = ["1", "2", "X"][(i % 3) as usize];
        big.push_str(&format!(
            "rs{}\t{chromosome}\t{}\tAG\n",
            10_000 + i,
            1_000 + i * 900
        ));
    }
    let reply = upload(server, &token, "/api/data/genotype", "text/plain", &big).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let rsids: Vec<String> = (0..100_000u64)
        .step_by(9_973)
        .map(|i| format!("rs{}", 10_000 + i))
        .collect();
    let genes = call(server, &token, "get_genetic_data", json!({ "rsid": rsids })).await;
    let variants = genes["variants"].as_array().unwrap();
    assert_eq!(variants.len(), rsids.len(), "{genes}");
    assert!(
        variants
            .iter()
            .all(|v| v["n"].as_array().unwrap().len() == 20)
    );
    assert_eq!(genes["not_found"], Value::Null);

    let deleted = send("DELETE", &server.url("/api/data"), &bearer(&token), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let gone = call(
        server,
        &token,
        "get_genetic_data",
        json!({ "rsid": "rs429358" }),
    )
    .await;
    assert!(
        gone["message"]
            .as_str()
            .unwrap()
            .contains("/api/data/genotype"),
        "{gone}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e4_a_genotype_file_replaces_the_genome_embedded() {
    a_genotype_file_replaces_the_genome(&Server::start(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e4_a_genotype_file_replaces_the_genome_dynamodb() {
    let moto = Moto::start();
    let mut settings = without_data_table(&moto, "genome").await;
    // This time the data table exists too.
    for (name, value) in settings.iter_mut() {
        if name == "MIROBODY_DATA_TABLE" {
            *value = "genome-data".into();
        }
    }
    let settings: Vec<(&str, &str)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    a_genotype_file_replaces_the_genome(&Server::start(&settings)).await;
}

/// Readings stored on DynamoDB in the per-reading layout before it (`h#`
/// items) are moved by `mirobody-local migrate`; the tool then finds all of them, and
/// a second run moves nothing.
#[tokio::test]
async fn migrate_moves_readings_of_the_old_layout() {
    let moto = Moto::start();
    let config = crate::runtime_api::sdk_config(&moto).await;
    let client = aws_sdk_dynamodb::Client::new(&config);
    let tables = DynamoTables {
        keys: "migrate-keys".into(),
        data: "migrate-data".into(),
    };
    DynamoStore::create_tables(&client, &tables)
        .await
        .expect("tables created in moto");
    use aws_sdk_dynamodb::types::AttributeValue::{Bool, N, S};
    for month in 1..=12 {
        let time = format!("2025-{month:02}-15T08:00:00");
        client
            .put_item()
            .table_name(&tables.data)
            .item("pk", S("olga".into()))
            .item("sk", S(format!("h#hba1c#{time}#City Lab")))
            .item("indicator", S("HbA1c".into()))
            .item("time", S(time))
            .item("source", S("City Lab".into()))
            .item("value", N(format!("5.{month}")))
            .item("unit", S("%".into()))
            .send()
            .await
            .expect("legacy item written");
    }
    client
        .put_item()
        .table_name(&tables.data)
        .item("pk", S("olga".into()))
        .item("sk", S("presence".into()))
        .item("health", Bool(true))
        .send()
        .await
        .expect("presence written");
    let settings = [
        ("MIROBODY_STORE", "dynamodb"),
        ("MIROBODY_KEYS_TABLE", tables.keys.as_str()),
        ("MIROBODY_DATA_TABLE", tables.data.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", moto.endpoint.as_str()),
    ];
    let server = Server::start(&settings);
    assert_eq!(
        server.command(&["migrate"]).trim(),
        "12 readings moved to the current layout\n0 users' genotypes moved into a genome\n\
         12 readings made canonical by the measures catalogue"
    );
    let token = server.token("olga");
    let stats = call(
        &server,
        &token,
        "query_health_indicators",
        json!({ "keywords": ["HbA1c"], "aggregate": "stats" }),
    )
    .await;
    let s = &stats["indicators"][0];
    assert_eq!(
        (s["count"].clone(), s["first"].clone(), s["last"].clone()),
        (json!(12), json!(5.1), json!(5.12)),
        "{stats}"
    );
    // The readings moved to their measure's key; nothing is left under the old one.
    let catalogue = call(&server, &token, "query_health_indicators", json!({})).await;
    assert_eq!(catalogue["indicator_count"], json!(1), "{catalogue}");
    assert!(
        catalogue["rows"][0]
            .as_str()
            .is_some_and(|row| row.starts_with("Hemoglobin A1c|LOINC 4548-4|discrete|%|")),
        "{catalogue}"
    );
    assert_eq!(
        server.command(&["migrate"]).trim(),
        "0 readings moved to the current layout\n0 users' genotypes moved into a genome\n\
         0 readings made canonical by the measures catalogue"
    );
}
