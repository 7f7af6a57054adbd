//! Truthful answers: a small synthetic golden dataset whose every answer is
//! worked out by hand in the comments (never copied from the program's output), asked of
//! `query_health_indicators` over `/mcp` on both stores (the embedded one and DynamoDB on
//! moto). Each case is a user of its own: step totals from a phone and a watch, glucose
//! in two units and names, weight in two units and names, a night's sleep across midnight
//! from an Apple Health export, UTC offsets around midnight, a CGM fortnight's consensus
//! report, a bad value and colliding rows refused on every upload path. The upload paths:
//! CSV and JSON to `POST /api/data/health`, and the whole-file flow (create, PUT, poll)
//! with a CSV file and with an Apple Health `export.xml`.
//!
//! The console shows the same numbers: each case reads its figures off the summary's
//! card and the indicator page's chart (each point's words) and time in range, as the
//! person's browser gets them (issue 29).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::console_charts::labels;
use super::console_data::{slice_from, text_after};
use e2e::{Reply, Server, bearer, bearer_json, rpc, send};
use mirobody::store::{DynamoStore, DynamoTables};
use mirobody::testing::Moto;
use serde_json::{Value, json};

const HEADER: &str = "indicator,value,unit,time,source\n";

/// `POST /api/data/health` with a CSV (`text/csv`) or JSON body.
async fn post(server: &Server, token: &str, content_type: &str, body: String) -> Reply {
    let mut headers = bearer(token);
    headers.push(("content-type".into(), content_type.into()));
    send(
        "POST",
        &server.url("/api/data/health"),
        &headers,
        Some(body),
    )
    .await
}

/// A console page as the person's browser gets it (the token is a session token, as
/// the console's cookie holds).
async fn console(server: &Server, token: &str, path: &str) -> String {
    let cookie = vec![("cookie".to_string(), format!("mirobody_session={token}"))];
    let page = send("GET", &server.url(path), &cookie, None).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    page.body
}

/// The summary card of `measure`: its latest figure and that figure's day.
async fn card(server: &Server, token: &str, measure: &str) -> (String, String) {
    let page = console(server, token, "/console/data").await;
    let card = slice_from(&page, &format!("data-measure=\"{measure}\""), "</article>");
    (
        text_after(card, "<span class=\"value\">").to_string(),
        text_after(card, "<span class=\"date\">").to_string(),
    )
}

/// A data API upload refused (400) with `message` in its answer.
fn refused(reply: &Reply, message: &str) {
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(
        reply.body.contains(message),
        "{message:?} in {}",
        reply.body
    );
}

/// The whole-file flow: create the upload, PUT the file, poll until done or failed.
async fn upload_file(server: &Server, token: &str, kind: &str, name: &str, body: String) -> Value {
    let created = json!({ "kind": kind, "filename": name });
    let created = bearer_json(server, "POST", "/api/data/uploads", token, Some(created)).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let data = created.json()["data"].clone();
    let url = data["upload_url"].as_str().unwrap();
    let stored = send("PUT", url, &[], Some(body)).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    let path = format!("/api/data/uploads/{}", data["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let reply = send("GET", &server.url(&path), &bearer(token), None).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let record = reply.json()["data"].clone();
        if record["status"] == "done" || record["status"] == "failed" {
            return record;
        }
        assert!(Instant::now() < deadline, "still {record}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A whole-file upload that ended `status` having written `rows`.
fn ended(record: &Value, status: &str, rows: u64) {
    assert_eq!(record["status"], status, "{record}");
    assert_eq!(record["rows_written"], rows, "{record}");
}

/// `query_health_indicators` with `arguments`: its structured answer.
async fn query(server: &Server, token: &str, arguments: Value) -> Value {
    let params = json!({ "name": "query_health_indicators", "arguments": arguments });
    let reply = rpc(&server.url("/mcp"), Some(token), "tools/call", params).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = reply.json()["result"].clone();
    assert_eq!(result["isError"], false, "{arguments}: {result}");
    result["structuredContent"].clone()
}

/// The one series `arguments` ask for.
async fn ask(server: &Server, token: &str, arguments: Value) -> Value {
    let answer = query(server, token, arguments).await;
    let indicators = answer["indicators"].as_array().expect("indicators");
    assert_eq!(indicators.len(), 1, "{answer}");
    indicators[0].clone()
}

/// The series named exactly `name`, asked with `aggregate` and the `more` arguments.
async fn series(server: &Server, token: &str, name: &str, aggregate: &str, more: Value) -> Value {
    let mut arguments = json!({ "indicators": [name], "aggregate": aggregate });
    for (k, v) in more.as_object().unwrap() {
        arguments[k] = v.clone();
    }
    ask(server, token, arguments).await
}

/// Each `field=value` of `expected` (separated by `;` or lines) in `answer`: a number
/// compared as a number (JSON integers and floats alike), anything else as text.
fn expect(answer: &Value, expected: &str) {
    for pair in expected
        .split([';', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (field, want) = pair.split_once('=').unwrap();
        match &answer[field] {
            Value::Number(n) => assert_eq!(n.as_f64(), want.parse().ok(), "{field} in {answer}"),
            got => assert_eq!(got, want, "{field} in {answer}"),
        }
    }
}

/// `expected` (as [`expect`]) and the `rows` of a series, one a line.
fn table(answer: &Value, expected: &str, rows: &str) {
    expect(answer, expected);
    let rows: Vec<&str> = rows.lines().map(str::trim).collect();
    assert_eq!(answer["rows"], json!(rows), "{answer}");
}

/// Case 1 (CSV to the data API): the phone counts 800 steps each hour 08:00-19:00 of
/// 2026-03-02 (12 × 800 = 9,600) and the watch 1,000 at 10:00 and 1,000 at 10:30 (one hour:
/// 2,000 > the phone's 800 in it), so the day is 11 × 800 + 2,000 = 10,800, never
/// 9,600 + 2,000. 2026-03-03: the phone alone, 700 each hour 09:00-18:00: 10 × 700 = 7,000.
/// 2026-03-09: the phone 1,200 at 12:00 and 13:00, the watch alone 600 at 15:00:
/// 2 × 1,200 + 600 = 3,000 (an hour only one device saw still counts).
async fn steps_from_a_phone_and_a_watch(server: Arc<Server>) {
    let token = server.token("golden-steps");
    let mut csv = HEADER.to_string();
    for h in 8..20 {
        csv += &format!("Steps,800,count,2026-03-02T{h:02}:00:00,iPhone\n");
    }
    csv += "Step count,1000,steps,2026-03-02T10:00:00,Watch\n";
    csv += "Step count,1000,steps,2026-03-02T10:30:00,Watch\n";
    for h in 9..19 {
        csv += &format!("Steps,700,count,2026-03-03T{h:02}:00:00,iPhone\n");
    }
    csv += "Steps,1200,count,2026-03-09T12:00:00,iPhone\n";
    csv += "Steps,1200,count,2026-03-09T13:00:00,iPhone\n";
    csv += "Step count,600,steps,2026-03-09T15:00:00,Watch\n";
    let ok = post(&server, &token, "text/csv", csv).await;
    // Readings: 12 + 2 (03-02) + 10 (03-03) + 2 + 1 (03-09) = 27.
    assert_eq!(ok.json()["data"]["written"], 27, "{}", ok.body);

    let days = series(&server, &token, "Steps", "day", json!({})).await;
    let about = "kind=cumulative; unit=steps; columns=day|total|source";
    let rows = "2026-03-02|10800|several
                2026-03-03|7000|iPhone
                2026-03-09|3000|several";
    table(&days, about, rows);

    // 2026-03-02 is a Monday of ISO week 10 (Monday 2026-01-05 opens W02; 03-02 is 56 days =
    // 8 weeks later). W10: 10,800 + 7,000 = 17,800 over 2 days, 17,800 / 2 = 8,900 a day;
    // W11 (from Monday 03-09): 3,000 on 1 day.
    let weeks = series(&server, &token, "Steps", "week", json!({})).await;
    let about = "kind=cumulative; unit=steps; columns=week|total|days|mean_daily_total";
    table(&weeks, about, "2026-W10|17800|2|8900\n2026-W11|3000|1|3000");

    // Total 17,800 + 3,000 = 20,800 over 3 days: 20,800 / 3 = 6,933.3333 a day; the largest
    // day 10,800 (03-02), the latest 3,000 (03-09).
    let stats = series(&server, &token, "Steps", "stats", json!({})).await;
    let expected = "kind=cumulative; unit=steps; count=27; total=20800; days_with_readings=3
                    mean_daily_total=6933.3333; max_daily_total=10800; max_day=2026-03-02
                    latest_daily_total=3000; latest_day=2026-03-09";
    expect(&stats, expected);
    assert!(stats.get("mean").is_none(), "no per-reading mean: {stats}");

    // The catalogue: one series (both names are Steps), latest = the latest day's total.
    let catalogue = query(&server, &token, json!({})).await;
    let row = "Steps|LOINC 55423-8|cumulative|steps|3000|2026-03-09|27|2026-03-02|2026-03-09";
    assert_eq!(catalogue["rows"], json!([row]), "{catalogue}");

    // The console: the card's latest day total, and the chart's day totals.
    assert_eq!(
        card(&server, &token, "Steps").await,
        ("3,000 steps".to_string(), "2026-03-09".to_string())
    );
    let chart = console(&server, &token, "/console/data/Steps").await;
    assert_eq!(
        labels(&chart),
        [
            "2026-03-02: 10,800 steps",
            "2026-03-03: 7,000 steps",
            "2026-03-09: 3,000 steps"
        ]
    );
}

/// Case 2 (JSON to the data API): "Blood sugar" 5.5 mmol/L from a meter on 2026-03-02
/// 07:30 is 5.5 × 18.016 = 99.088 mg/dL; "Glucose" 99 mg/dL from a lab on 2026-03-04.
async fn glucose_in_two_units(server: Arc<Server>) {
    let token = server.token("golden-glucose");
    let body = json!({ "readings": [
        { "indicator": "Blood sugar", "value": 5.5, "unit": "mmol/L",
          "time": "2026-03-02T07:30:00", "source": "Meter" },
        { "indicator": "Glucose", "value": 99, "unit": "mg/dL", "time": "2026-03-04", "source": "Lab" }
    ]});
    let ok = post(&server, &token, "application/json", body.to_string()).await;
    assert_eq!(ok.json()["data"]["written"], 2, "{}", ok.body);
    let catalogue = query(&server, &token, json!({})).await;
    assert_eq!(catalogue["indicator_count"], 1, "one series: {catalogue}");

    // Asked by the name it was sent under (a keyword), it is Glucose, in mg/dL.
    // Mean (99.088 + 99) / 2 = 198.088 / 2 = 99.044; min 99, max 99.088; population SD
    // |99.088 − 99| / 2 = 0.044; first 99.088 (03-02), last 99 (03-04), change
    // 99 − 99.088 = −0.088; median of two: their mean, 99.044.
    let by_name = json!({ "keywords": ["blood sugar"], "aggregate": "stats" });
    let stats = ask(&server, &token, by_name).await;
    let expected = "name=Glucose; unit=mg/dL; kind=discrete; code=LOINC 2345-7; count=2
                    mean=99.044; median=99.044; min=99; max=99.088; sd=0.044; change=-0.088
                    first=99.088; first_date=2026-03-02; last=99; last_date=2026-03-04";
    expect(&stats, expected);
    assert!(
        stats.get("cgm").is_none(),
        "two readings are no CGM: {stats}"
    );

    // Newest first; one unit (hoisted), two sources; the meter's reading says what was sent.
    let latest = series(&server, &token, "Glucose", "none", json!({})).await;
    let about = "kind=discrete; unit=mg/dL; columns=time|value|source|as_sent";
    let rows = "2026-03-04T00:00:00|99|Lab|
                2026-03-02T07:30:00|99.088|Meter|5.5 mmol/L";
    table(&latest, about, rows);

    // The console: one card and one chart, in mg/dL.
    assert_eq!(card(&server, &token, "Glucose").await.0, "99 mg/dL");
    let chart = console(&server, &token, "/console/data/Blood%20sugar").await;
    assert_eq!(
        labels(&chart),
        ["2026-03-02: 99.088 mg/dL", "2026-03-04: 99 mg/dL"]
    );
}

/// Case 3 (a whole CSV file): `Weight` 150 lb on 2026-03-01 is 150 × 0.45359237 =
/// 68.0388555 kg (68.0389 at four decimals); `Body weight` 68 kg on 2026-03-08.
async fn weight_in_two_units(server: Arc<Server>) {
    let token = server.token("golden-weight");
    let csv =
        format!("{HEADER}Weight,150,lb,2026-03-01,Scale\nBody weight,68,kg,2026-03-08,Scale\n");
    let done = upload_file(&server, &token, "health", "weight.csv", csv).await;
    ended(&done, "done", 2);
    let catalogue = query(&server, &token, json!({})).await;
    assert_eq!(catalogue["indicator_count"], 1, "one series: {catalogue}");

    // Mean (68.0388555 + 68) / 2 = 68.01942775 → 68.0194; SD 0.0388555 / 2 = 0.01942775
    // → 0.0194; change 68 − 68.0388555 = −0.0388555 → −0.0389.
    let by_name = json!({ "keywords": ["weight"], "aggregate": "stats" });
    let stats = ask(&server, &token, by_name).await;
    let expected = "name=Body weight; unit=kg; source=Scale; code=LOINC 29463-7; count=2
                    first=68.0389; last=68; min=68; max=68.0389; mean=68.0194; sd=0.0194
                    change=-0.0389";
    expect(&stats, expected);

    let latest = series(&server, &token, "Body weight", "none", json!({})).await;
    let about = "kind=discrete; unit=kg; columns=time|value|as_sent";
    let rows = "2026-03-08T00:00:00|68|
                2026-03-01T00:00:00|68.0389|150 lb";
    table(&latest, about, rows);

    // The console: one card, one chart, in kg.
    assert_eq!(card(&server, &token, "Body weight").await.0, "68 kg");
    let chart = console(&server, &token, "/console/data/Weight").await;
    assert_eq!(
        labels(&chart),
        ["2026-03-01: 68.0389 kg", "2026-03-08: 68 kg"]
    );
}

/// Case 4's export: Apple Health sleep records (source, stage, start, end; `+0100`).
const SLEEP: &str = "\
    Watch InBed 2026-03-02 23:00:00 2026-03-03 07:00:00
    Watch AsleepCore 2026-03-02 23:10:00 2026-03-02 23:55:00
    Watch AsleepDeep 2026-03-02 23:55:00 2026-03-03 01:25:00
    Watch Awake 2026-03-03 01:25:00 2026-03-03 01:45:00
    Watch AsleepREM 2026-03-03 01:45:00 2026-03-03 02:45:00
    Watch AsleepCore 2026-03-03 02:45:00 2026-03-03 06:50:00
    Watch AsleepCore 2026-03-04 00:30:00 2026-03-04 06:30:00
    iPhone Asleep 2026-03-04 00:40:00 2026-03-04 06:00:00";

/// Case 4 (an Apple Health export through the whole-file flow). The night of 2026-03-02
/// to 03, the Watch: in bed 23:00-07:00 (480 min); core 23:10-23:55 (45; it ends before
/// midnight but after 18:00, so it is the next morning's night), deep 23:55-01:25 (90),
/// awake 01:25-01:45 (20), REM 01:45-02:45 (60), core 02:45-06:50 (245). Asleep =
/// 45 + 90 + 60 + 245 = 440 min (and 440 + 20 awake = 460 = 23:10 to 06:50). The night
/// to 2026-03-04: the Watch core 00:30-06:30 (360), the iPhone asleep 00:40-06:00 (320):
/// the night counts the source that recorded the most, 360 (never 360 + 320 = 680).
async fn a_night_across_midnight(server: Arc<Server>) {
    let token = server.token("golden-sleep");
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<HealthData locale=\"en_GB\">\n\
         <ExportDate value=\"2026-03-05 08:00:00 +0100\"/>\n",
    );
    for record in SLEEP.lines() {
        let f: Vec<&str> = record.split_whitespace().collect();
        let (source, stage) = (f[0], f[1]);
        let (start, end) = (
            format!("{} {} +0100", f[2], f[3]),
            format!("{} {} +0100", f[4], f[5]),
        );
        xml += &format!(
            "<Record type=\"HKCategoryTypeIdentifierSleepAnalysis\" sourceName=\"{source}\" \
             creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\" \
             value=\"HKCategoryValueSleepAnalysis{stage}\"/>\n"
        );
    }
    xml += "</HealthData>\n";
    // Night 1 (Watch): asleep, core, deep, REM, awake, in bed = 6; night 2: the Watch's
    // asleep and core, the iPhone's asleep = 3; 6 + 3 = 9 readings.
    let done = upload_file(&server, &token, "apple_health", "export.xml", xml).await;
    ended(&done, "done", 9);
    let about = "kind=sleep; unit=min; columns=night|total|source";

    let nights = series(&server, &token, "Sleep asleep", "day", json!({})).await;
    table(&nights, about, "2026-03-03|440|Watch\n2026-03-04|360|Watch");
    // The console: the latest night on the card, each night on the chart, in hours.
    assert_eq!(
        card(&server, &token, "Sleep asleep").await,
        ("6 h 00 min".to_string(), "2026-03-04".to_string())
    );
    let chart = console(&server, &token, "/console/data/Sleep%20asleep").await;
    assert_eq!(
        labels(&chart),
        [
            "Night ending 2026-03-03: 7 h 20 min",
            "Night ending 2026-03-04: 6 h 00 min"
        ]
    );

    // Mean (440 + 360) / 2 = 400 min = 6 h 40 min; the longest 440 (03-03), the latest 360.
    let stats = series(&server, &token, "Sleep asleep", "stats", json!({})).await;
    let expected = "kind=sleep; unit=min; count=3; nights=2; mean_per_night=400
                    mean_per_night_text=6 h 40 min; longest_night=440
                    longest_night_date=2026-03-03; latest_night=360
                    latest_night_date=2026-03-04";
    expect(&stats, expected);

    // The stages of the first night: core 45 + 245 = 290, deep 90, REM 60, awake 20, in bed 480.
    let first = json!({ "end_time": "2026-03-03" });
    for (name, minutes) in [
        ("Sleep core", 290),
        ("Sleep deep", 90),
        ("Sleep REM", 60),
        ("Sleep awake", 20),
        ("Sleep in bed", 480),
    ] {
        let night = series(&server, &token, name, "day", first.clone()).await;
        table(&night, about, &format!("2026-03-03|{minutes}|Watch"));
    }
}

/// Case 5 (JSON to the data API): 400 steps at 2026-03-05T23:30:00-08:00 (UTC 03-06
/// 07:30) and 300 at 2026-03-06T00:30:00+09:00 (UTC 03-05 15:30). In UTC the days would
/// swap; each counts on its own local day: 03-05 has 400, 03-06 has 300.
async fn offsets_around_midnight(server: Arc<Server>) {
    let token = server.token("golden-offsets");
    let body = json!([
        { "indicator": "Steps", "value": 400, "unit": "steps",
          "time": "2026-03-05T23:30:00-08:00", "source": "Phone" },
        { "indicator": "Steps", "value": 300, "unit": "steps",
          "time": "2026-03-06T00:30:00+09:00", "source": "Phone" }
    ]);
    let ok = post(&server, &token, "application/json", body.to_string()).await;
    assert_eq!(ok.json()["data"]["written"], 2, "{}", ok.body);
    let days = series(&server, &token, "Steps", "day", json!({})).await;
    let about = "kind=cumulative; unit=steps; columns=day|total|source";
    table(&days, about, "2026-03-05|400|Phone\n2026-03-06|300|Phone");
    // The local day 03-06 alone: 300.
    let day = json!({ "start_time": "2026-03-06", "end_time": "2026-03-06" });
    let stats = series(&server, &token, "Steps", "stats", day).await;
    expect(&stats, "count=1; total=300; days_with_readings=1");
    // Newest first by local time, each with its offset.
    let latest = series(&server, &token, "Steps", "none", json!({})).await;
    let about = "kind=cumulative; unit=steps; columns=time|value";
    let rows = "2026-03-06T00:30:00+09:00|300
                2026-03-05T23:30:00-08:00|400";
    table(&latest, about, rows);
}

/// Case 6 (a whole CSV file): a CGM fortnight, 2026-01-25 to 2026-02-07 (7 days of
/// January, 7 of February: 14), 288 five-minute readings a day: 200 at 120, 40 at 200, 20
/// at 260, 20 at 60, 8 at 50 mg/dL (200 + 40 + 20 + 20 + 8 = 288).
async fn a_cgm_fortnight(server: Arc<Server>) {
    let token = server.token("golden-cgm");
    let mut csv = HEADER.to_string();
    let first = chrono::NaiveDate::from_ymd_opt(2026, 1, 25).unwrap();
    for d in 0..14 {
        let day = (first + chrono::Duration::days(d)).format("%Y-%m-%d");
        for i in 0..288 {
            let value = match i {
                0..200 => 120,
                200..240 => 200,
                240..260 => 260,
                260..280 => 60,
                _ => 50,
            };
            let (h, m) = (i / 12, i % 12 * 5);
            csv += &format!("Glucose,{value},mg/dL,{day}T{h:02}:{m:02}:00,Libre\n");
        }
    }
    // 14 × 288 = 4,032 readings.
    let done = upload_file(&server, &token, "health", "cgm.csv", csv).await;
    ended(&done, "done", 4032);

    // Every day alike, so any window's shares are a day's:
    // in range 200/288 = 69.44 % → 69.4; below 70 (20 + 8)/288 = 9.72 % → 9.7; below 54
    // 8/288 = 2.78 % → 2.8; above 180 (40 + 20)/288 = 20.83 % → 20.8; above 250 20/288 =
    // 6.94 % → 6.9. Mean (200×120 + 40×200 + 20×260 + 20×60 + 8×50)/288 = (24,000 + 8,000
    // + 5,200 + 1,200 + 400)/288 = 38,800/288 = 134.7222 → 134.7; GMI 3.31 + 0.02392 ×
    // 134.7222 = 3.31 + 3.2226 = 6.5326 → 6.5. E[x²] = (200×14,400 + 40×40,000 + 20×67,600
    // + 20×3,600 + 8×2,500)/288 = 5,924,000/288 = 20,569.4444; mean² = 18,150.0772; SD =
    // √2,419.3673 = 49.1871; CV 49.1871/134.7222 = 36.51 % → 36.5. Median: sorted, 50 holds
    // ranks 1-112 (8 × 14), 60 ranks 113-392 (20 × 14), 120 ranks 393-3,192 (200 × 14); the
    // middle two of 4,032 (ranks 2,016 and 2,017) are both 120.
    let shares = "time_in_range_70_180_pct=69.4; time_below_70_pct=9.7; time_below_54_pct=2.8
                  time_above_180_pct=20.8; time_above_250_pct=6.9; mean_mg_dl=134.7
                  gmi_pct=6.5; cv_pct=36.5";
    let fortnight = json!({ "start_time": "2026-01-25", "end_time": "2026-02-07" });
    let stats = series(&server, &token, "Glucose", "stats", fortnight.clone()).await;
    expect(
        &stats,
        "count=4032; mean=134.7222; median=120; sd=49.1871; min=50; max=260",
    );
    expect(&stats["cgm"], shares);
    // 14 days of 288 expected: 4,032 of 4,032 = 100 %.
    let expected = "period_days=14; days_with_readings=14; readings=4032; expected_per_day=288
                    readings_present_pct=100";
    expect(&stats["cgm"], expected);
    assert!(
        stats["cgm"].get("note").is_none(),
        "a full fortnight is reliable: {stats}"
    );

    // The ambulatory profile of the fortnight, by hour (nearest-rank percentiles over
    // 12 readings × 14 days = 168 an hour). Hour 00: all 120. Hour 16 holds i = 192..203:
    // 8 at 120 and 4 at 200 a day, so 112 × 120 then 56 × 200: p5 (rank 9), p25 (42) and
    // the median (84) are 120, p75 (rank 126 > 112) and p95 (160) are 200. Hour 23 holds
    // i = 276..287: 4 at 60 and 8 at 50 a day, so 112 × 50 then 56 × 60: 50, 50, 50, 60, 60.
    let profile = series(&server, &token, "Glucose", "profile", fortnight).await;
    assert_eq!(
        profile["columns"], "hour|p5|p25|median|p75|p95|n",
        "{profile}"
    );
    let rows = profile["rows"].as_array().expect("profile rows");
    assert_eq!(rows.len(), 24, "{profile}");
    assert_eq!(rows[0], "00|120|120|120|120|120|168", "{profile}");
    assert_eq!(rows[16], "16|120|120|120|200|200|168", "{profile}");
    assert_eq!(rows[23], "23|50|50|50|60|60|168", "{profile}");
    // Without a window: the last 14 days with data, the same fortnight.
    let default = series(&server, &token, "Glucose", "profile", json!({})).await;
    assert_eq!(
        (&default["from"], &default["to"]),
        (&json!("2026-01-25"), &json!("2026-02-07"))
    );

    // A week (2026-02-01..07): 7 × 288 = 2,016 readings, all present, but 7 < 14 days.
    let week = json!({ "start_time": "2026-02-01", "end_time": "2026-02-07" });
    let cgm = series(&server, &token, "Glucose", "stats", week).await["cgm"].clone();
    expect(&cgm, shares);
    expect(
        &cgm,
        "period_days=7; readings=2016; readings_present_pct=100",
    );
    assert!(
        cgm["note"].as_str().is_some_and(|n| n.contains("14 days")),
        "{cgm}"
    );

    // 2026-02-01..14: 14 days asked, 7 with readings: 2,016 of 14 × 288 = 4,032 = 50 %.
    let half = json!({ "start_time": "2026-02-01", "end_time": "2026-02-14" });
    let cgm = series(&server, &token, "Glucose", "stats", half).await["cgm"].clone();
    expect(
        &cgm,
        "period_days=14; days_with_readings=7; readings_present_pct=50",
    );
    assert!(
        cgm["note"].as_str().is_some(),
        "half the readings is unreliable: {cgm}"
    );

    // A day's bucket across the month's end: avg 134.7222, min 50, max 260, n 288, 69.4 %.
    let two_days = json!({ "start_time": "2026-01-31", "end_time": "2026-02-01" });
    let days = series(&server, &token, "Glucose", "day", two_days).await;
    let about = "kind=discrete; unit=mg/dL; columns=day|avg|min|max|n|in_range_70_180_pct";
    let rows = "2026-01-31|134.7222|50|260|288|69.4
                2026-02-01|134.7222|50|260|288|69.4";
    table(&days, about, rows);

    // The console: the indicator page's time in range over the whole fortnight, and
    // each day's point (mean 134.7222 → 134.7222, from 50 to 260).
    let page = console(&server, &token, "/console/data/Glucose").await;
    let tir = slice_from(&page, "<section id=\"time-in-range\"", "</section>");
    assert!(
        tir.contains("4,032 sensor readings over 14 days (100 % of those expected)"),
        "{tir}"
    );
    for (class, shown) in [
        ("tir-in-range", "69.4 %"),
        ("tir-below", "9.7 %"),
        ("tir-above", "20.8 %"),
        ("tir-mean", "134.7 mg/dL"),
        ("tir-gmi", "6.5 %"),
    ] {
        assert_eq!(
            text_after(tir, &format!("<td class=\"{class}\">")),
            shown,
            "{class}"
        );
    }
    // Lows past the targets (9.7 % below 70, 2.8 % below 54), said in words.
    assert!(
        tir.contains(
            "Lows: 9.7 % of readings below 70 mg/dL and 2.8 % below 54 (the consensus targets \
             are under 4 % and under 1 %)."
        ),
        "{tir}"
    );
    let points = labels(&page);
    assert_eq!(points.len(), 14, "{points:?}");
    assert_eq!(points[0], "2026-01-25: mean 134.7222 mg/dL (50 to 260)");
}

/// The user holds no health data (the data summary, and an empty catalogue).
async fn holds_nothing(server: &Server, token: &str) {
    let summary = send("GET", &server.url("/api/data"), &bearer(token), None).await;
    assert_eq!(summary.json()["data"]["health"], false, "{}", summary.body);
    let catalogue = query(server, token, json!({})).await;
    assert_eq!(catalogue["indicator_count"], 0, "{catalogue}");
}

/// Glucose `(value, time)` rows from a meter, as CSV and as JSON.
fn glucose_files(rows: &[(&str, &str)]) -> (String, String) {
    let mut csv = HEADER.to_string();
    let mut readings = Vec::new();
    for (value, time) in rows {
        csv += &format!("Glucose,{value},mg/dL,{time},Meter\n");
        readings.push(json!({
            "indicator": "Glucose", "value": value, "unit": "mg/dL", "time": time, "source": "Meter"
        }));
    }
    (csv, json!({ "readings": readings }).to_string())
}

/// Case 7, on every path: `1O4` (a letter O) on the file's second reading (CSV line 3,
/// JSON `readings[1]`) refuses the file naming it; nothing is saved.
async fn a_bad_value_saves_nothing(server: Arc<Server>) {
    let token = server.token("golden-typo");
    let (csv, json) = glucose_files(&[
        ("99", "2026-03-02T08:00:00"),
        ("1O4", "2026-03-02T12:00:00"),
    ]);
    let problem = "Glucose takes a number in mg/dL (or a bound such as <5); the value is not one";
    let reply = post(&server, &token, "text/csv", csv.clone()).await;
    refused(&reply, &format!("nothing was saved: line 3: {problem}"));
    let reply = post(&server, &token, "application/json", json).await;
    refused(
        &reply,
        &format!("nothing was saved: readings[1]: {problem}"),
    );
    let failed = upload_file(&server, &token, "health", "typo.csv", csv).await;
    ended(&failed, "failed", 0);
    assert_eq!(
        failed["error"],
        json!({ "line": 3, "message": problem }),
        "{failed}"
    );
    holds_nothing(&server, &token).await;
}

/// Case 8, on every path: three glucose values on 2026-03-02 without a time of day from
/// one meter are one reading with three values: refused naming the second and the first
/// (line 3 and line 2, `readings[1]` and `readings[0]`). An identical repeat counts once.
async fn colliding_rows_are_refused(server: Arc<Server>) {
    let token = server.token("golden-collide");
    let day = "2026-03-02";
    let (csv, json) = glucose_files(&[("99", day), ("140", day), ("180", day)]);
    let both = "line 3 is the same reading as line 2 (Glucose from the same source at the same \
                time) with another value: give each reading its time of day";
    refused(&post(&server, &token, "text/csv", csv.clone()).await, both);
    let reply = post(&server, &token, "application/json", json).await;
    refused(&reply, "readings[1] is the same reading as readings[0]");
    let failed = upload_file(&server, &token, "health", "collide.csv", csv).await;
    ended(&failed, "failed", 0);
    assert_eq!(failed["error"]["line"], 3, "{failed}");
    assert!(
        failed["error"]["message"].as_str().unwrap().contains(both),
        "{failed}"
    );
    holds_nothing(&server, &token).await;

    // 99 twice at the same time (one reading) and 140 at noon: 3 rows received, the
    // identical repeat merged (1), 2 readings written, both new; mean (99 + 140) / 2 = 119.5,
    // on each path alike (each replaces the last in place).
    let (csv, json) = glucose_files(&[("99", day), ("99", day), ("140", "2026-03-02T12:00:00")]);
    let ok = post(&server, &token, "text/csv", csv.clone()).await;
    assert_eq!(
        ok.json()["data"],
        json!({ "received": 3, "written": 2, "new": 2, "already_there": 0, "replaced": 0,
                "merged_in_file": 1 }),
        "{}",
        ok.body
    );
    // The same three rows again as JSON: 3 received, 1 merged, 2 written, both already
    // there with the same value.
    let ok = post(&server, &token, "application/json", json).await;
    assert_eq!(
        ok.json()["data"],
        json!({ "received": 3, "written": 2, "new": 0, "already_there": 2, "replaced": 0,
                "merged_in_file": 1 }),
        "{}",
        ok.body
    );
    ended(
        &upload_file(&server, &token, "health", "repeat.csv", csv).await,
        "done",
        2,
    );
    let stats = series(&server, &token, "Glucose", "stats", json!({})).await;
    expect(&stats, "count=2; mean=119.5; min=99; max=140");
}

/// The text of a case's panic.
fn panic_text(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
        Err(error) => error.to_string(),
    }
}

/// Every case against one server, each to its end: the failures are listed together.
async fn every_case(server: Server) {
    let server = Arc::new(server);
    let mut failed = Vec::new();
    macro_rules! run {
        ($($case:ident),*) => {$(
            if let Err(error) = tokio::spawn($case(server.clone())).await {
                failed.push(format!("{}: {}", stringify!($case), panic_text(error)));
            }
        )*};
    }
    run!(
        steps_from_a_phone_and_a_watch,
        glucose_in_two_units,
        weight_in_two_units,
        a_night_across_midnight,
        offsets_around_midnight,
        a_cgm_fortnight,
        a_bad_value_saves_nothing,
        colliding_rows_are_refused
    );
    assert!(
        failed.is_empty(),
        "{} case(s) failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_answers_on_the_embedded_store() {
    every_case(Server::start(&[])).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_answers_on_dynamodb() {
    let moto = Moto::start();
    let config = crate::runtime_api::sdk_config(&moto).await;
    let tables = DynamoTables {
        keys: "golden-keys".into(),
        data: "golden-data".into(),
    };
    DynamoStore::create_tables(&aws_sdk_dynamodb::Client::new(&config), &tables)
        .await
        .expect("tables created in moto");
    let settings = [
        ("MIROBODY_STORE", "dynamodb"),
        ("MIROBODY_KEYS_TABLE", tables.keys.as_str()),
        ("MIROBODY_DATA_TABLE", tables.data.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", moto.endpoint.as_str()),
    ];
    every_case(Server::start(&settings)).await;
    drop(moto);
}
