//! The console's summary (`/console/data`), issue 29: one card per measure, grouped as a
//! person looks for them, with figures worked out by hand from the uploaded readings and
//! the same latest figure `query_health_indicators` answers.
//!
//! The last day of every daily series is 2026-03-31: the 7 recent days are 03-25 to
//! 03-31, the 30-day baseline 02-23 to 03-24.

use serde_json::{Value, json};

use super::console_data::{Person, api_token, cgm, slice_from, text_after, upload};
use e2e::{Server, rpc};

/// Steps, two readings a day: 4,000 + 4,000 = 8,000 a day from 02-23 to 03-24 (the
/// baseline), 5,000 + 5,000 = 10,000 from 03-25 to 03-30 and 6,000 + 6,000 = 12,000 on
/// 03-31, and 99,999 on 2026-01-01, outside both windows. Resting heart rate: 60 /min on
/// the 12 days 02-23 to 03-06, then 62, 63 and 64 on 03-29 to 03-31. Sleep: three nights
/// (7 h, 7 h 30 min, 8 h). HbA1c 6.1 % from a lab on 03-12.
pub(super) fn daily_series() -> String {
    let mut csv =
        String::from("indicator,value,unit,time\nSteps,99999,steps,2026-01-01T12:00:00\n");
    let days = (23..=28)
        .map(|d| format!("2026-02-{d:02}"))
        .chain((1..=31).map(|d| format!("2026-03-{d:02}")));
    for (i, day) in days.enumerate() {
        let half = match i {
            0..30 => 4000,
            30..36 => 5000,
            _ => 6000,
        };
        csv.push_str(&format!("Steps,{half},steps,{day}T09:00:00\n"));
        csv.push_str(&format!("Steps,{half},steps,{day}T18:00:00\n"));
        if i < 12 {
            csv.push_str(&format!("Resting heart rate,60,/min,{day}T07:00:00\n"));
        }
    }
    for (day, rate) in [(29, 62), (30, 63), (31, 64)] {
        csv.push_str(&format!(
            "Resting heart rate,{rate},/min,2026-03-{day}T07:00:00\n"
        ));
    }
    for (day, minutes) in [(29, 420), (30, 450), (31, 480)] {
        csv.push_str(&format!(
            "Sleep asleep,{minutes},min,2026-03-{day}T07:00:00\n"
        ));
    }
    csv.push_str("HbA1c,6.1,%,2026-03-12T09:00:00\n");
    csv
}

/// A CGM fortnight, 03-18 to 03-31 (`console_data::cgm`: 96 readings a day, 1,344 in
/// all; of each 8, one at 200 mg/dL, one at 60 and six at 120): 75 % in 70 to 180,
/// 12.5 % below 70, none below 54.
pub(super) fn cgm_fortnight() -> String {
    let days: Vec<String> = (18..=31).map(|d| format!("2026-03-{d:02}")).collect();
    cgm(&days)
}

/// The tool's catalogue row of `name` (`name|code|kind|unit|latest|latest day|…`).
async fn catalogue_row(server: &Server, token: &str, name: &str) -> Vec<String> {
    let params = json!({ "name": "query_health_indicators", "arguments": {} });
    let reply = rpc(&server.url("/mcp"), Some(token), "tools/call", params).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let rows: Value = reply.json()["result"]["structuredContent"]["rows"].clone();
    let row = rows
        .as_array()
        .expect("catalogue rows")
        .iter()
        .filter_map(Value::as_str)
        .find(|row| row.starts_with(&format!("{name}|")))
        .unwrap_or_else(|| panic!("{name} in {rows}"));
    row.split('|').map(str::to_string).collect()
}

/// The text of the element opened by `open`, its markup stripped.
fn words(body: &str, open: &str, close: &str) -> String {
    let part = slice_from(body, open, close);
    let mut text = String::new();
    let mut in_tag = false;
    for c in part.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&nbsp;", " ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_shows_each_measure_with_its_latest_figure_trend_baseline_and_flags() {
    let server = Server::start(&[]);
    let person = Person::sign_up(&server, "summary@example.com").await;
    let token = api_token(&server, "summary@example.com").await;
    upload(
        &server,
        &token,
        "/api/data/health",
        "text/csv",
        &daily_series(),
        "iPhone",
    )
    .await;
    upload(
        &server,
        &token,
        "/api/data/health",
        "text/csv",
        &cgm_fortnight(),
        "CGM",
    )
    .await;

    let page = person.get(&server, "/console/data").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = page.body.as_str();
    assert!(body.contains("5 measures."), "{body}");
    assert!(body.contains("href=\"/console/data?view=table\""));
    assert!(
        !body.contains("id=\"catalogue\""),
        "the table is one click away"
    );

    // The sections in order, each card in its own.
    let order: Vec<usize> = [
        "group-activity",
        "group-heart",
        "group-sleep",
        "group-metabolic",
    ]
    .iter()
    .map(|id| {
        body.find(&format!("<h3 id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}: {body}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    let section = |id: &str| slice_from(body, &format!("aria-labelledby=\"{id}\""), "</section>");
    assert!(section("group-activity").contains("data-measure=\"Steps\""));
    assert!(section("group-heart").contains("data-measure=\"Resting heart rate\""));
    assert!(section("group-sleep").contains("data-measure=\"Sleep asleep\""));
    assert!(section("group-metabolic").contains("data-measure=\"Glucose\""));
    assert!(section("group-metabolic").contains("data-measure=\"Hemoglobin A1c\""));

    // Steps: the latest day's total, 6,000 + 6,000 = 12,000, as the tool's catalogue
    // has it; the 7-day average (6 × 10,000 + 12,000) / 7 = 10,285.7 → 10,286 a day
    // against the baseline's 8,000: +28.6 % → "29 % above"; the January day is in neither.
    let steps = slice_from(body, "data-measure=\"Steps\"", "</article>");
    assert_eq!(text_after(steps, "<span class=\"value\">"), "12,000 steps");
    assert_eq!(text_after(steps, "<span class=\"date\">"), "2026-03-31");
    let row = catalogue_row(&server, &token, "Steps").await;
    assert_eq!(
        (row[4].as_str(), row[5].as_str()),
        ("12000", "2026-03-31"),
        "{row:?}"
    );
    assert_eq!(
        words(steps, "<p class=\"baseline\">", "</p>"),
        "↑ 7-day average 10,286 steps a day, 29 % above your 30-day baseline of 8,000 steps."
    );
    let label = slice_from(steps, "aria-label=\"", "\" ");
    assert!(
        label.contains("Mar 25 10,000 steps, Mar 26 10,000 steps")
            && label.contains("Mar 31 12,000 steps"),
        "{label}"
    );
    // Seven points, the latest marked.
    assert_eq!(steps.matches("<circle").count(), 7, "{steps}");
    assert_eq!(steps.matches("<circle class=\"latest\"").count(), 1);

    // Resting heart rate: the latest reading; the 7-day average of the 3 days with a
    // reading, (62 + 63 + 64) / 3 = 63, is 5 % above the 12 baseline days' 60. The
    // sparkline has gaps (03-25 to 03-28 have none): three points.
    let rhr = slice_from(body, "data-measure=\"Resting heart rate\"", "</article>");
    assert_eq!(text_after(rhr, "<span class=\"value\">"), "64 /min");
    assert_eq!(
        words(rhr, "<p class=\"baseline\">", "</p>"),
        "↑ 7-day average 63 /min, 5 % above your 30-day baseline of 60 /min."
    );
    assert_eq!(rhr.matches("<circle").count(), 3, "{rhr}");
    assert!(rhr.contains("Mar 25 none"), "{rhr}");
    assert!(!rhr.contains("class=\"flag"), "64 /min is in range: {rhr}");

    // Sleep: the latest night in hours and minutes; three nights and no baseline days
    // are too few for a baseline, and the card says so.
    let sleep = slice_from(body, "data-measure=\"Sleep asleep\"", "</article>");
    assert_eq!(text_after(sleep, "<span class=\"value\">"), "8 h 00 min");
    assert!(sleep.contains("Mar 30 7 h 30 min"), "{sleep}");
    assert!(sleep.contains("No baseline yet"), "{sleep}");

    // HbA1c: a lab result, above 4 to 5.6 %: flagged, no sparkline, no baseline.
    let a1c = slice_from(body, "data-measure=\"Hemoglobin A1c\"", "</article>");
    assert_eq!(text_after(a1c, "<span class=\"value\">"), "6.1 %");
    assert!(
        words(a1c, "<p class=\"flag out-of-range\"", "</p>")
            .contains("Above the typical range of 4 to 5.6 %"),
        "{a1c}"
    );
    assert!(!a1c.contains("<svg") && !a1c.contains("baseline"), "{a1c}");

    // The CGM's glucose: time in range over the fortnight, 75 %, and the lows in words
    // (12.5 % below 70, over the consensus's 4 %); no single-reading flag.
    let glucose = slice_from(body, "data-measure=\"Glucose\"", "</article>");
    assert_eq!(text_after(glucose, "<span class=\"tir-in-range\">"), "75 %");
    assert!(
        words(glucose, "<p class=\"flag low\"", "</p>")
            .contains("12.5 % of readings below 70 mg/dL and 0 % below 54"),
        "{glucose}"
    );
    assert!(!glucose.contains("out-of-range"), "{glucose}");

    // Its page counts one reading in the singular.
    let a1c_page = person.get(&server, "/console/data/Hemoglobin%20A1c").await;
    assert!(
        a1c_page
            .body
            .contains("<span class=\"count\">1</span> reading from "),
        "{}",
        a1c_page.body
    );

    // The table view is still there, one row per measure.
    let table = person.get(&server, "/console/data?view=table").await;
    assert_eq!(table.status, 200);
    assert_eq!(
        table.body.matches("<tr data-indicator=").count(),
        5,
        "{}",
        table.body
    );
    assert!(table.body.contains("href=\"/console/data\""));
}

/// Issue 29: a console address nobody serves is a page in words with the way back (not
/// the API's `{"error":"not found"}`), with the console's headers; API paths stay JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_console_page_is_a_page_a_person_can_read() {
    let server = Server::start(&[]);
    // `/` signed out: the sign-in page, with a sentence on what this is and where the data lives.
    let home = e2e::get(&server.url("/")).await;
    assert_eq!(home.status, 303);
    let signin = e2e::get(&server.url(home.header("location").unwrap())).await;
    assert!(
        signin.body.contains("id=\"about\"")
            && signin
                .body
                .contains("stored in this service's database for your account only"),
        "{}",
        signin.body
    );
    let page = e2e::get(&server.url("/console/dashbord")).await;
    assert_eq!(page.status, 404);
    assert!(
        page.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        page.header("content-type")
    );
    assert!(page.body.contains("<title>Page not found"), "{}", page.body);
    assert!(page.body.contains("/console/data"), "{}", page.body);
    assert!(page.header("content-security-policy").is_some());
    let api = e2e::get(&server.url("/api/nothing-here")).await;
    assert_eq!(api.status, 404);
    assert_eq!(api.json()["error"], "not found", "{}", api.body);
}
