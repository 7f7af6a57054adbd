//! The console's data pages over HTTP against `mirobody-local`: a person signs
//! up through the console's form (a cookie session), uploads readings and a small genome
//! through the JSON API, and sees them: the catalogue's rows and values, an indicator's
//! chart (its points, the reference band) and latest readings, the genome summary and
//! the rsid look-up. Another person's session never sees any of it; unknown indicators
//! are 404 pages; invalid rsids are answered in words; every page is under 50 KB.
//!
//! The pages show what `query_health_indicators` answers, by the measure's
//! kind: steps as daily totals, sleep by the night in hours, glucose in mg/dL whatever
//! unit it was sent in, and a CGM's glucose with its time in range.

use e2e::{Reply, Server, form_of, get, post_json, send};
use serde_json::json;

pub(super) const PASSWORD: &str = "correct horse battery staple";
const MAX_PAGE: usize = 50 * 1024;

/// Two years of glucose (two month points before the last year's twelve months, then
/// five days of two readings each; one sent in mmol/L: 5.5 × 18.016 = 99.088 mg/dL,
/// one series with the 99 mg/dL of 2024-06-05) and one vitamin D reading.
const READINGS: &str = "indicator,value,unit,time\n\
Glucose,80,mg/dL,2024-03-10T08:00:00\n\
Glucose,5.5,mmol/L,2024-03-20T08:00:00\n\
Glucose,99,mg/dL,2024-06-05T08:00:00\n\
Glucose,85,mg/dL,2026-01-01T07:00:00\n\
Glucose,105,mg/dL,2026-01-01T19:00:00\n\
Glucose,86,mg/dL,2026-01-02T07:00:00\n\
Glucose,106,mg/dL,2026-01-02T19:00:00\n\
Glucose,87,mg/dL,2026-01-03T07:00:00\n\
Glucose,107,mg/dL,2026-01-03T19:00:00\n\
Glucose,88,mg/dL,2026-01-04T07:00:00\n\
Glucose,108,mg/dL,2026-01-04T19:00:00\n\
Glucose,89,mg/dL,2026-01-05T07:00:00\n\
Glucose,109,mg/dL,2026-01-05T19:00:00\n\
Vitamin D (25-OH),31.5,ng/mL,2025-11-20T09:00:00\n";

/// Steps: 10 hourly readings of 500 on 2026-03-01 (a day total of 5,000) and 12 hourly
/// readings of 800 on 2026-03-02, 08:00 to 19:00 (12 × 800 = 9,600, never "800 steps").
/// Sleep: two nights dated by the morning they end, 420 min (7 h 00 min) and 7.5 h
/// (7.5 × 60 = 450 min, 7 h 30 min).
fn steps_and_sleep() -> String {
    let mut csv = String::from("indicator,value,unit,time\n");
    for hour in 8..18 {
        csv.push_str(&format!("Steps,500,steps,2026-03-01T{hour:02}:00:00\n"));
    }
    for hour in 8..20 {
        csv.push_str(&format!("Steps,800,steps,2026-03-02T{hour:02}:00:00\n"));
    }
    csv.push_str("Sleep asleep,420,min,2026-03-01T07:00:00\n");
    csv.push_str("Sleep asleep,7.5,h,2026-03-02T07:00:00\n");
    csv
}

/// A CGM's `days` (`YYYY-MM-DD`), a reading every 15 minutes: 96 readings a day, of each
/// 8 one at 200 mg/dL, one at 60 and six at 120 (12 above 180, 12 below 70, 72 in range).
pub(super) fn cgm(days: &[String]) -> String {
    let mut csv = String::from("indicator,value,unit,time\n");
    for day in days {
        for i in 0..96 {
            let value = match i % 8 {
                0 => 200,
                1 => 60,
                _ => 120,
            };
            let (hour, minute) = (i / 4, (i % 4) * 15);
            csv.push_str(&format!(
                "Glucose,{value},mg/dL,{day}T{hour:02}:{minute:02}:00\n"
            ));
        }
    }
    csv
}

const GENOME: &str = "# 23andMe-style raw data\n\
# rsid\tchromosome\tposition\tgenotype\n\
rs429358\t19\t44908684\tTC\n\
rs7412\t19\t44908822\tCC\n\
rs1801133\t1\t11796321\tAG\n\
rs999\t19\t45900000\tAA\n";

/// A person signed in to the console: their session cookie.
pub(super) struct Person {
    pub(super) cookie: String,
}

impl Person {
    /// Signs up through the console's form: GET the form (its CSRF token and nonce
    /// cookie), POST it; the answer sets the session cookie.
    pub(super) async fn sign_up(server: &Server, email: &str) -> Person {
        let form = get(&server.url("/console/signup")).await;
        assert_eq!(form.status, 200, "{}", form.body);
        let (fields, nonce) = form_of(&form);
        let mut pairs: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        pairs.extend([("email", email), ("password", PASSWORD)]);
        let reply = e2e::form_with_cookie(server, "/console/signup", &pairs, Some(&nonce)).await;
        assert_eq!(reply.status, 303, "{}", reply.body);
        let cookie = reply
            .headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("mirobody_session="))
            .expect("the session cookie")
            .split(';')
            .next()
            .unwrap()
            .to_string();
        Person { cookie }
    }

    pub(super) async fn get(&self, server: &Server, path: &str) -> Reply {
        let headers = vec![("cookie".to_string(), self.cookie.clone())];
        let reply = send("GET", &server.url(path), &headers, None).await;
        assert!(
            reply.body.len() < MAX_PAGE,
            "{path}: {} bytes",
            reply.body.len()
        );
        reply
    }
}

/// A bearer token for the JSON API (`/auth/signin`).
pub(super) async fn api_token(server: &Server, email: &str) -> String {
    let body = json!({ "email": email, "password": PASSWORD });
    let reply = post_json(&server.url("/auth/signin"), &[], &body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["data"]["token"].as_str().unwrap().to_string()
}

/// `body` to `path` with the caller's token, from `source` (the `x-source` header: a
/// genome's file name).
pub(super) async fn upload(
    server: &Server,
    token: &str,
    path: &str,
    content_type: &str,
    body: &str,
    source: &str,
) {
    let headers = vec![
        ("authorization".to_string(), format!("Bearer {token}")),
        ("content-type".to_string(), content_type.to_string()),
        ("x-source".to_string(), source.to_string()),
    ];
    let reply = send("POST", &server.url(path), &headers, Some(body.to_string())).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
}

/// The text of the first element opened by `open` (e.g. `<td class="count">`, which
/// also finds `<td class="count" data-label="Readings">`), up to its next `<`.
pub(super) fn text_after<'b>(body: &'b str, open: &str) -> &'b str {
    let head = open.strip_suffix('>').unwrap_or(open);
    let found = body
        .find(head)
        .unwrap_or_else(|| panic!("{open} in the page: {body}"));
    let rest = &body[found + head.len()..];
    let start = found + head.len() + rest.find('>').map_or(0, |end| end + 1);
    let rest = &body[start..];
    &rest[..rest.find('<').unwrap_or(rest.len())]
}

/// The part of the page from `open` to the end of that element's row or table.
pub(super) fn slice_from<'b>(body: &'b str, open: &str, close: &str) -> &'b str {
    let start = body
        .find(open)
        .unwrap_or_else(|| panic!("{open} in the page: {body}"));
    let rest = &body[start..];
    &rest[..rest.find(close).map_or(rest.len(), |end| end + close.len())]
}

fn attr<'b>(body: &'b str, open: &str, name: &str) -> &'b str {
    let tag = slice_from(body, open, ">");
    let at = tag
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("{name} in {tag}"))
        + name.len()
        + 3;
    &tag[at..at + tag[at..].find('"').unwrap()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_pages_show_a_persons_readings_and_genome_and_nobody_elses() {
    let server = Server::start(&[]);

    // Not signed in: to the sign-in page, coming back to the data page.
    let anonymous = get(&server.url("/console/data/Glucose")).await;
    assert_eq!(anonymous.status, 303);
    assert!(
        anonymous
            .header("location")
            .unwrap()
            .starts_with("/console/signin?next=")
    );

    let alice = Person::sign_up(&server, "alice@example.com").await;

    // A new person: the empty state tells them to upload, and no genome yet.
    let empty = alice.get(&server, "/console/data").await;
    assert_eq!(empty.status, 200);
    assert!(empty.body.contains("id=\"no-readings\""), "{}", empty.body);
    assert!(empty.body.contains("href=\"/console/upload\""));
    assert!(!empty.body.contains("id=\"catalogue\""));
    assert!(empty.body.contains("No genome yet"));
    assert!(empty.body.contains("href=\"/console/genome\""));

    let token = api_token(&server, "alice@example.com").await;
    upload(
        &server,
        &token,
        "/api/data/health",
        "text/csv",
        READINGS,
        "City Lab",
    )
    .await;
    upload(
        &server,
        &token,
        "/api/data/health",
        "text/csv",
        &steps_and_sleep(),
        "iPhone",
    )
    .await;
    upload(
        &server,
        &token,
        "/api/data/genotype",
        "text/plain",
        GENOME,
        "my-genome.txt",
    )
    .await;

    // The catalogue: one row per indicator with its latest figure as its kind reads
    // (with its unit and date), its count and dates.
    let data = alice.get(&server, "/console/data?view=table").await;
    assert_eq!(data.status, 200);
    assert!(data.body.contains("4 indicators"), "{}", data.body);
    assert!(
        !data.body.contains("mixed"),
        "every catalogue measure has one unit"
    );
    let glucose = slice_from(&data.body, "<tr data-indicator=\"Glucose\">", "</tr>");
    assert!(
        glucose.contains("href=\"/console/data/Glucose\""),
        "{glucose}"
    );
    assert_eq!(
        text_after(glucose, "<td class=\"count\" data-label=\"Readings\">"),
        "13"
    );
    assert_eq!(
        text_after(glucose, "<td class=\"first\" data-label=\"First\">"),
        "2024-03-10"
    );
    assert_eq!(
        text_after(glucose, "<td class=\"last\" data-label=\"Last\">"),
        "2026-01-05"
    );
    // Glucose is discrete: its latest reading.
    assert_eq!(text_after(glucose, "<span class=\"value\">"), "109 mg/dL");
    assert_eq!(
        text_after(glucose, "<span class=\"basis muted\">"),
        "(reading)"
    );
    assert_eq!(
        text_after(glucose, "<td class=\"date\" data-label=\"On\">"),
        "2026-01-05"
    );
    // Steps: the latest day's total, 12 × 800 = 9,600 (not the last reading's 800).
    let steps = slice_from(&data.body, "<tr data-indicator=\"Steps\">", "</tr>");
    assert_eq!(text_after(steps, "<span class=\"value\">"), "9,600 steps");
    assert_eq!(
        text_after(steps, "<span class=\"basis muted\">"),
        "(daily total)"
    );
    assert_eq!(
        text_after(steps, "<td class=\"date\" data-label=\"On\">"),
        "2026-03-02"
    );
    // 10 + 12 readings.
    assert_eq!(
        text_after(steps, "<td class=\"count\" data-label=\"Readings\">"),
        "22"
    );
    // Sleep: the latest night, 7.5 h = 450 min = 7 h 30 min, dated by its morning.
    let sleep = slice_from(&data.body, "<tr data-indicator=\"Sleep asleep\">", "</tr>");
    assert_eq!(text_after(sleep, "<span class=\"value\">"), "7 h 30 min");
    assert_eq!(text_after(sleep, "<span class=\"basis muted\">"), "(night)");
    assert_eq!(
        text_after(sleep, "<td class=\"date\" data-label=\"On\">"),
        "2026-03-02"
    );
    let vitamin = slice_from(
        &data.body,
        "<tr data-indicator=\"Vitamin D (25-OH)\">",
        "</tr>",
    );
    assert!(
        vitamin.contains("href=\"/console/data/Vitamin%20D%20%2825-OH%29\""),
        "{vitamin}"
    );
    assert_eq!(
        text_after(vitamin, "<td class=\"count\" data-label=\"Readings\">"),
        "1"
    );
    assert_eq!(text_after(vitamin, "<span class=\"value\">"), "31.5 ng/mL");
    // The genome summary: how many variants, from which file, when.
    let genome = slice_from(&data.body, "<section id=\"genome-summary\"", "</section>");
    assert_eq!(text_after(genome, "<span class=\"variants\">"), "4");
    assert_eq!(text_after(genome, "<span class=\"file\">"), "my-genome.txt");
    assert!(text_after(genome, "<span class=\"when\">").ends_with("UTC"));
    assert!(genome.contains("href=\"/console/genome\""));

    // The indicator page: a chart of two month points then five day points, the
    // min–max range, the reference band of glucose in mg/dL (a lab's few readings are
    // no CGM: no time in range), and the latest readings.
    let page = alice.get(&server, "/console/data/Glucose").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<svg class=\"chart\" role=\"img\""));
    assert!(
        page.body
            .contains("<title id=\"chart-title\">Glucose (mg/dL)</title>")
    );
    assert_eq!(attr(&page.body, "<path class=\"line\"", "data-points"), "7");
    let d = attr(&page.body, "<path class=\"line\"", "d");
    assert_eq!(d.matches(['M', 'L']).count(), 7, "{d}");
    assert!(page.body.contains("<path class=\"range\""));
    assert_eq!(attr(&page.body, "<rect class=\"band\"", "data-low"), "70");
    assert_eq!(attr(&page.body, "<rect class=\"band\"", "data-high"), "99");
    assert!(
        page.body
            .contains("Points before 2025-01-01 are month means")
    );
    assert!(page.body.contains("reference range, 70 to 99 mg/dL"));
    assert!(!page.body.contains("id=\"time-in-range\""));
    // March 2024's month point is the mean of 80 and 99.088: 89.544; the last day point
    // (2026-01-05) is the mean of 89 and 109: 99; values span 80 to 109.
    assert!(
        page.body.contains(
            "7 points from 2024-03-15 to 2026-01-05, values from 80 mg/dL to 109 mg/dL; \
             the last point's mean is 99 mg/dL."
        ),
        "{}",
        page.body
    );
    let latest = slice_from(
        &page.body,
        "<table class=\"compact\" id=\"latest\"",
        "</table>",
    );
    assert_eq!(
        latest
            .matches("<td class=\"when\" data-label=\"When\">")
            .count(),
        13
    );
    assert_eq!(
        text_after(latest, "<td class=\"when\" data-label=\"When\">"),
        "2026-01-05 19:00"
    );
    assert_eq!(
        text_after(latest, "<td class=\"value\" data-label=\"Value\">"),
        "109"
    );
    assert_eq!(
        text_after(latest, "<td class=\"unit\" data-label=\"Unit\">"),
        "mg/dL"
    );
    assert_eq!(
        text_after(latest, "<td class=\"source\" data-label=\"Source\">"),
        "City Lab"
    );
    // The reading sent in mmol/L is stored in mg/dL: 5.5 × 18.016 = 99.088.
    let converted = slice_from(
        latest,
        "<td class=\"when\" data-label=\"When\">2024-03-20 08:00</td>",
        "</tr>",
    );
    assert_eq!(
        text_after(converted, "<td class=\"value\" data-label=\"Value\">"),
        "99.088"
    );
    assert_eq!(
        text_after(converted, "<td class=\"unit\" data-label=\"Unit\">"),
        "mg/dL"
    );
    // What was sent is shown when the store gives it back (the embedded store's reads do
    // not yet).
    if converted.contains("<td class=\"sent\" data-label=\"As sent\">") {
        assert_eq!(
            text_after(converted, "<td class=\"sent\" data-label=\"As sent\">"),
            "5.5 mmol/L"
        );
    }
    assert!(
        !latest.contains("<td class=\"unit\" data-label=\"Unit\">mmol/L"),
        "one unit"
    );

    // Steps chart daily totals: one point per day, 5,000 then 9,600, no min–max range
    // and no reference band.
    let steps = alice.get(&server, "/console/data/Steps").await;
    assert_eq!(steps.status, 200, "{}", steps.body);
    assert!(
        steps
            .body
            .contains("<title id=\"chart-title\">Steps, daily total (steps)</title>"),
        "{}",
        steps.body
    );
    assert_eq!(
        attr(&steps.body, "<path class=\"line\"", "data-points"),
        "2"
    );
    assert!(!steps.body.contains("<path class=\"range\""));
    assert!(!steps.body.contains("<rect class=\"band\""));
    assert!(
        steps.body.contains(
            "2 points from 2026-03-01 to 2026-03-02, values from 5000 steps to 9600 steps"
        ),
        "{}",
        steps.body
    );
    assert!(
        steps
            .body
            .contains("Each point is one day's total, every source counted once.")
    );
    let facts = slice_from(&steps.body, "<p class=\"facts\">", "</p>");
    assert_eq!(text_after(facts, "<span class=\"latest\">"), "9,600 steps");
    assert_eq!(text_after(facts, "<span class=\"date\">"), "2026-03-02");

    // Sleep charts one value per night in hours: 7 h (420 min), then 7.5 h (450 min).
    let sleep = alice.get(&server, "/console/data/Sleep%20asleep").await;
    assert_eq!(sleep.status, 200, "{}", sleep.body);
    assert!(
        sleep
            .body
            .contains("<title id=\"chart-title\">Sleep asleep, per night (h)</title>"),
        "{}",
        sleep.body
    );
    assert_eq!(
        attr(&sleep.body, "<path class=\"line\"", "data-points"),
        "2"
    );
    assert!(
        sleep
            .body
            .contains("values from 7 h 00 min to 7 h 30 min; the last night is 7 h 30 min."),
        "{}",
        sleep.body
    );
    // The latest readings are the stored minutes.
    let nights = slice_from(
        &sleep.body,
        "<table class=\"compact\" id=\"latest\"",
        "</table>",
    );
    assert_eq!(
        text_after(nights, "<td class=\"value\" data-label=\"Value\">"),
        "450"
    );
    assert_eq!(
        text_after(nights, "<td class=\"unit\" data-label=\"Unit\">"),
        "min"
    );
    // Any spelling of the name finds it; the encoded name with brackets too.
    assert_eq!(
        alice.get(&server, "/console/data/glucose").await.status,
        200
    );
    let vitamin = alice
        .get(&server, "/console/data/Vitamin%20D%20%2825-OH%29")
        .await;
    assert_eq!(vitamin.status, 200, "{}", vitamin.body);
    assert_eq!(
        attr(&vitamin.body, "<path class=\"line\"", "data-points"),
        "1"
    );
    assert_eq!(
        attr(&vitamin.body, "<rect class=\"band\"", "data-low"),
        "30"
    );

    // Unknown, absurd and over-long indicators: a 404 page in words.
    for path in [
        "/console/data/Cortisol",
        "/console/data/%00%FF",
        &format!("/console/data/{}", "a".repeat(400)),
    ] {
        let missing = alice.get(&server, path).await;
        assert_eq!(missing.status, 404, "{path}");
        assert!(
            missing
                .body
                .contains("You have no readings of that indicator.")
        );
    }

    // The genome look-up: hits with chromosome, position and genotype; misses in words.
    let lookup = alice
        .get(&server, "/console/genome?rsid=rs429358%2C+RS7412+rs12345")
        .await;
    assert_eq!(lookup.status, 200, "{}", lookup.body);
    assert!(lookup.body.contains("id=\"rsid\"") && lookup.body.contains("id=\"lookup\""));
    let table = slice_from(
        &lookup.body,
        "<table class=\"compact\" id=\"genotypes\"",
        "</table>",
    );
    let apoe = slice_from(table, "<tr data-rsid=\"rs429358\">", "</tr>");
    assert_eq!(text_after(apoe, "<td class=\"chromosome\">"), "19");
    assert_eq!(text_after(apoe, "<td class=\"position\">"), "44908684");
    assert_eq!(text_after(apoe, "<td class=\"genotype\">"), "TC");
    let cc = slice_from(table, "<tr data-rsid=\"rs7412\">", "</tr>");
    assert_eq!(text_after(cc, "<td class=\"genotype\">"), "CC");
    let miss = slice_from(table, "<tr data-rsid=\"rs12345\">", "</tr>");
    assert!(miss.contains("not in your genome"), "{miss}");
    // Invalid rsids are refused in words before the store; too many too.
    let invalid = alice
        .get(&server, "/console/genome?rsid=rs1%2Cbanana%3Cb%3E")
        .await;
    assert_eq!(invalid.status, 400);
    assert!(
        invalid
            .body
            .contains("Not an rsid: banana&lt;b&gt;. An rsid is"),
        "{}",
        invalid.body
    );
    assert!(!invalid.body.contains("id=\"genotypes\""));
    let many: Vec<String> = (1..=51).map(|n| format!("rs{n}")).collect();
    let too_many = alice
        .get(&server, &format!("/console/genome?rsid={}", many.join("+")))
        .await;
    assert_eq!(too_many.status, 400);
    assert!(too_many.body.contains("look up at most 50"));

    // A CGM's day of glucose: the time-in-range figures instead of the fasting band.
    let carol = Person::sign_up(&server, "carol@example.com").await;
    let carol_token = api_token(&server, "carol@example.com").await;
    upload(
        &server,
        &carol_token,
        "/api/data/health",
        "text/csv",
        &cgm(&["2026-03-01".to_string()]),
        "Sensor",
    )
    .await;
    let cgm = carol.get(&server, "/console/data/Glucose").await;
    assert_eq!(cgm.status, 200, "{}", cgm.body);
    assert!(
        !cgm.body.contains("<rect class=\"band\""),
        "no fasting band"
    );
    let tir = slice_from(&cgm.body, "<section id=\"time-in-range\"", "</section>");
    // In range 72/96 = 75 %; below 70: 12/96 = 12.5 %; above 180: 12/96 = 12.5 %.
    assert_eq!(text_after(tir, "<td class=\"tir-in-range\">"), "75 %");
    assert_eq!(text_after(tir, "<td class=\"tir-below\">"), "12.5 %");
    assert_eq!(text_after(tir, "<td class=\"tir-above\">"), "12.5 %");
    // Mean (72 × 120 + 12 × 200 + 12 × 60) / 96 = 11,760 / 96 = 122.5 mg/dL;
    // GMI = 3.31 + 0.02392 × 122.5 = 6.2402, 6.2 %.
    assert_eq!(text_after(tir, "<td class=\"tir-mean\">"), "122.5 mg/dL");
    assert_eq!(text_after(tir, "<td class=\"tir-gmi\">"), "6.2 %");
    assert_eq!(text_after(tir, "<span class=\"from\">"), "2026-03-01");
    // One day of 96 readings a day: 96 of 96 expected, but under the consensus' 14 days.
    assert!(
        tir.contains("96 sensor readings over 1 day (100 % of those expected)"),
        "{tir}"
    );
    assert!(tir.contains("fewer than 14 days"), "{tir}");
    // The day point is the day's mean, 122.5, spanning 60 to 200.
    assert_eq!(attr(&cgm.body, "<path class=\"line\"", "data-points"), "1");
    assert!(
        cgm.body.contains("values from 60 mg/dL to 200 mg/dL"),
        "{}",
        cgm.body
    );

    // Another person sees none of it: an empty catalogue, no genome, 404 on the
    // indicator, and no genotypes from the look-up.
    let bob = Person::sign_up(&server, "bob@example.com").await;
    let theirs = bob.get(&server, "/console/data").await;
    assert_eq!(theirs.status, 200);
    assert!(theirs.body.contains("id=\"no-readings\""));
    assert!(!theirs.body.contains("Glucose") && !theirs.body.contains("my-genome.txt"));
    assert!(theirs.body.contains("No genome yet"));
    assert_eq!(bob.get(&server, "/console/data/Glucose").await.status, 404);
    let bob_lookup = bob.get(&server, "/console/genome?rsid=rs429358").await;
    assert_eq!(bob_lookup.status, 200);
    // Alice's genotype cell and position are not on Bob's page (a bare "TC" could be in
    // the page's random CSRF token).
    assert!(
        !bob_lookup.body.contains("<td class=\"genotype\">")
            && !bob_lookup.body.contains("44908684")
    );
    assert!(bob_lookup.body.contains("You have no genome"));

    // A POST without the CSRF token changes nothing (here: sign-out keeps the session).
    let headers = vec![
        ("cookie".to_string(), alice.cookie.clone()),
        (
            "content-type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
    ];
    let forged = send(
        "POST",
        &server.url("/console/signout"),
        &headers,
        Some(String::new()),
    )
    .await;
    assert_eq!(forged.status, 403);
    assert_eq!(alice.get(&server, "/console/data").await.status, 200);
}
