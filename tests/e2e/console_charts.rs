//! An indicator's chart over the span a person picks (issue 29): the range control
//! (week, month, 3 months, year, all) as plain links, the points of that span only, each
//! point's words for the read-out on hover and tap, the legend, and a CGM's time in range
//! over the span; and the series' readings as a CSV download that reads back as the
//! same series. The data is the summary's (`console_summary::daily_series`, its last
//! day 2026-03-31, and the CGM fortnight 03-18 to 03-31), every figure worked out by hand.

use super::console_data::{Person, api_token, slice_from, text_after, upload};
use super::console_summary::{cgm_fortnight, daily_series};
use e2e::Server;

/// Every point's words in the chart (its circles' `data-label`), in time order.
pub(super) fn labels(body: &str) -> Vec<&str> {
    slice_from(body, "<svg class=\"chart\"", "</svg>")
        .split("data-label=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect()
}

/// A person signed up through the console with `files` (CSV, source) uploaded through
/// the JSON API: their session and their bearer token.
async fn person_with(server: &Server, email: &str, files: &[(&str, &str)]) -> (Person, String) {
    let person = Person::sign_up(server, email).await;
    let token = api_token(server, email).await;
    for (csv, source) in files {
        upload(server, &token, "/api/data/health", "text/csv", csv, source).await;
    }
    (person, token)
}

/// The span the range control marks as chosen.
fn chosen(body: &str) -> &str {
    let control = slice_from(body, "<nav class=\"range\"", "</nav>");
    text_after(control, "aria-current=\"true\">")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_shows_the_span_asked_for_with_each_points_value_and_a_legend() {
    let server = Server::start(&[]);
    let (daily, cgm) = (daily_series(), cgm_fortnight());
    let (person, _) = person_with(
        &server,
        "charts@example.com",
        &[(&daily, "iPhone"), (&cgm, "CGM")],
    )
    .await;

    // Steps over a week: 03-25 to 03-31, six days of 5,000 + 5,000 and 03-31's
    // 6,000 + 6,000, each a day's total.
    let week = person.get(&server, "/console/data/Steps?range=week").await;
    assert_eq!(week.status, 200, "{}", week.body);
    assert_eq!(chosen(&week.body), "Week");
    let points = labels(&week.body);
    assert_eq!(points.len(), 7, "{points:?}");
    assert_eq!(points[0], "2026-03-25: 10,000 steps");
    assert_eq!(points[6], "2026-03-31: 12,000 steps");
    assert!(
        week.body.contains("Total of the day"),
        "the legend names the line"
    );
    assert!(
        week.body
            .contains("<p class=\"readout\" aria-live=\"polite\">")
    );
    // Every span links to the same page.
    for id in ["week", "month", "3m", "year", "all"] {
        assert!(
            week.body
                .contains(&format!("href=\"/console/data/Steps?range={id}\"")),
            "{id}"
        );
    }

    // A month: the 30 days 03-02 to 03-31; 03-02 to 03-24 at 4,000 + 4,000.
    let month = person.get(&server, "/console/data/Steps?range=month").await;
    let points = labels(&month.body);
    assert_eq!(points.len(), 30, "{points:?}");
    assert_eq!(points[0], "2026-03-02: 8,000 steps");
    // Three months, 90 days back from 03-31 (31 + 28 + 31): from 01-01 on, so the
    // 99,999 of 01-01 is in, and 02-23 to 03-31 are its other 37 days. A year and the
    // whole history (all in day points: less than a year) are the same 38 points;
    // an unknown span is the whole history.
    for path in [
        "/console/data/Steps?range=3m",
        "/console/data/Steps?range=year",
        "/console/data/Steps",
        "/console/data/Steps?range=decade",
    ] {
        let page = person.get(&server, path).await;
        let points = labels(&page.body);
        assert_eq!(points.len(), 38, "{path}: {points:?}");
        assert_eq!(points[0], "2026-01-01: 99,999 steps", "{path}");
    }
    let all = person.get(&server, "/console/data/Steps").await;
    assert_eq!(chosen(&all.body), "All");

    // Sleep by the night, in hours: the week holds the three nights.
    let sleep = person
        .get(&server, "/console/data/Sleep%20asleep?range=week")
        .await;
    assert_eq!(
        labels(&sleep.body),
        [
            "Night ending 2026-03-29: 7 h 00 min",
            "Night ending 2026-03-30: 7 h 30 min",
            "Night ending 2026-03-31: 8 h 00 min",
        ]
    );

    // Resting heart rate against the person's own baseline, as the summary's card has
    // it: 60 /min on the 12 baseline days (02-23 to 03-06) of the 30 before the last 7
    // (03-25 to 03-31), drawn as a dashed line, in the legend and the description.
    // Steps get none.
    let rhr = person
        .get(&server, "/console/data/Resting%20heart%20rate")
        .await;
    assert!(
        rhr.body.contains("data-value=\"60\""),
        "{}",
        slice_from(&rhr.body, "<svg class=\"chart\"", "</svg>")
    );
    assert!(rhr.body.contains("<line class=\"baseline\""));
    assert!(
        rhr.body
            .contains("Your 30-day baseline, 60 /min (the mean of the 30 days before the last 7)")
    );
    assert!(
        rhr.body
            .contains("The dashed line is your 30-day baseline, 60 /min.")
    );
    assert!(
        !all.body.contains("class=\"baseline\""),
        "steps have no baseline line"
    );

    // A lab result: its one reading, the legend naming the reference range's ends.
    let a1c = person.get(&server, "/console/data/HbA1c").await;
    assert_eq!(labels(&a1c.body), ["2026-03-12: 6.1 %"]);
    assert!(
        a1c.body.contains("Typical adult range, 4 to 5.6 %"),
        "{}",
        a1c.body
    );

    // A CGM day: of each 8 readings one at 200, one at 60 and six at 120, so the day's
    // mean is (200 + 60 + 720) / 8 = 122.5 mg/dL, from 60 to 200. Over the week the
    // time in range covers 03-25 to 03-31, 7 × 96 = 672 readings, 75 % in range, and
    // says that 7 days are too few for the consensus; over everything, the fortnight's
    // 1,344 readings.
    let glucose = person
        .get(&server, "/console/data/Glucose?range=week")
        .await;
    let points = labels(&glucose.body);
    assert_eq!(points.len(), 7, "{points:?}");
    assert_eq!(points[6], "2026-03-31: mean 122.5 mg/dL (60 to 200)");
    let tir = slice_from(&glucose.body, "<section id=\"time-in-range\"", "</section>");
    assert_eq!(text_after(tir, "<span class=\"from\">"), "2026-03-25");
    assert_eq!(text_after(tir, "<span class=\"to\">"), "2026-03-31");
    assert!(tir.contains("672 sensor readings over 7 days"), "{tir}");
    assert_eq!(text_after(tir, "<td class=\"tir-in-range\">"), "75 %");
    assert!(tir.contains("fewer than 14 days"), "{tir}");
    assert!(
        !glucose.body.contains("rect class=\"band\""),
        "no fasting band on a CGM"
    );
    let whole = person.get(&server, "/console/data/Glucose").await;
    let tir = slice_from(&whole.body, "<section id=\"time-in-range\"", "</section>");
    assert_eq!(text_after(tir, "<span class=\"from\">"), "2026-03-18");
    assert!(tir.contains("1,344 sensor readings over 14 days"), "{tir}");
}

/// `path` with the session cookie and `accept-encoding`: the status, the headers and the
/// body as sent (still compressed when it was).
async fn raw(
    server: &Server,
    person: &Person,
    path: &str,
    encoding: &str,
) -> (u16, http::HeaderMap, Vec<u8>) {
    let client = e2e::web_client()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .get(server.url(path))
        .header("cookie", &person.cookie)
        .header("accept-encoding", encoding)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

/// An indicator's readings as CSV (issue 29): a link on its page, an attachment named for
/// it, gzip-compressed for a browser, every reading once, oldest first, in the upload's
/// shape, so it reads back as the same series: into another account the same day totals,
/// into the same account nothing new.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indicators_readings_download_as_csv_and_read_back_the_same() {
    use std::io::Read;

    let server = Server::start(&[]);
    let daily = daily_series();
    let (person, token) =
        person_with(&server, "export-csv@example.com", &[(&daily, "iPhone")]).await;

    let page = person.get(&server, "/console/data/Steps").await;
    assert!(
        page.body
            .contains("<a id=\"export-csv\" href=\"/console/data/Steps/readings.csv\" download>"),
        "{}",
        page.body
    );
    let (status, headers, gz) = raw(
        &server,
        &person,
        "/console/data/Steps/readings.csv",
        "gzip, deflate, br",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-encoding"], "gzip");
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"steps.csv\""
    );
    let mut csv = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut csv)
        .expect("gzip");
    // 1 January's reading and two a day on the 37 days 02-23 to 03-31: 75 rows.
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 75, "{csv}");
    assert_eq!(lines[0], "indicator,value,unit,time,source");
    assert_eq!(lines[1], "Steps,99999,steps,2026-01-01T12:00:00,iPhone");
    assert_eq!(lines[75], "Steps,6000,steps,2026-03-31T18:00:00,iPhone");
    // Without gzip it comes plain, byte for byte the same.
    let (_, headers, plain) = raw(
        &server,
        &person,
        "/console/data/Steps/readings.csv",
        "identity",
    )
    .await;
    assert!(headers.get("content-encoding").is_none());
    assert_eq!(String::from_utf8(plain).unwrap(), csv);

    // Read back into the same account: all 75 already there.
    let again = e2e::send(
        "POST",
        &server.url("/api/data/health"),
        &[
            ("authorization".to_string(), format!("Bearer {token}")),
            ("content-type".to_string(), "text/csv".to_string()),
        ],
        Some(csv.clone()),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.body);
    let counts = &again.json()["data"];
    assert_eq!(
        (counts["new"].as_u64(), counts["already_there"].as_u64()),
        (Some(0), Some(75)),
        "{}",
        again.body
    );
    // Into another account: the same series, 03-31's total 6,000 + 6,000.
    let (other, _) = person_with(&server, "export-reader@example.com", &[(&csv, "ignored")]).await;
    let theirs = other.get(&server, "/console/data/Steps?range=week").await;
    assert_eq!(
        labels(&theirs.body),
        labels(
            &person
                .get(&server, "/console/data/Steps?range=week")
                .await
                .body
        )
    );
    assert_eq!(labels(&theirs.body)[6], "2026-03-31: 12,000 steps");

    // Someone else's series, or none: 404, nothing sent.
    let (status, _, _) = raw(
        &server,
        &other,
        "/console/data/Glucose/readings.csv",
        "gzip",
    )
    .await;
    assert_eq!(status, 404);
}

/// A large page goes compressed to a browser that takes gzip (a chart's points carry
/// their words), the same page byte for byte; a small one, or a client that takes no
/// gzip (`gzip;q=0`), gets it as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_pages_are_sent_compressed_to_browsers_that_take_gzip() {
    use std::io::Read;

    let server = Server::start(&[]);
    let cgm = cgm_fortnight();
    let (person, _) = person_with(&server, "gzip-pages@example.com", &[(&cgm, "CGM")]).await;

    let path = "/console/data/Glucose";
    let (status, headers, plain) = raw(&server, &person, path, "identity").await;
    assert_eq!(status, 200);
    assert!(headers.get("content-encoding").is_none());
    assert!(
        plain.len() >= 8 * 1024,
        "{} bytes: large enough to compress",
        plain.len()
    );
    let (status, headers, gz) = raw(&server, &person, path, "gzip, deflate, br, zstd").await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-encoding"], "gzip");
    assert_eq!(headers["vary"], "accept-encoding");
    assert!(
        headers.contains_key("content-security-policy"),
        "the page headers stay"
    );
    assert!(
        gz.len() * 3 < plain.len(),
        "{} of {} bytes",
        gz.len(),
        plain.len()
    );
    let mut page = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut page)
        .expect("gzip");
    assert_eq!(page, plain);
    let (_, headers, _) = raw(&server, &person, path, "gzip;q=0, identity").await;
    assert!(headers.get("content-encoding").is_none());
    let (_, headers, small) = raw(&server, &person, "/console/password", "gzip").await;
    assert!(
        headers.get("content-encoding").is_none(),
        "{} bytes",
        small.len()
    );
}
