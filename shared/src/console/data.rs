//! Your data: the catalogue (every indicator with its count, first and last date and
//! unit), one indicator's chart and latest readings, and the genome summary with the
//! rsid look-up. Reads the store's catalogue, rollups and genome; renders with `chart.rs`.
//!
//! Bounds what comes from the request before the store sees it: an indicator name of at
//! most [`MAX_INDICATOR`] bytes, at most [`MAX_RSIDS`] rsids each of the form
//! `rs` and 1 to 12 digits. Never logs a reading or a genotype.

use bytes::Bytes;
use http::{Request, StatusCode};
use maud::{Markup, html};

use super::chart::{self, Chart, ChartPoint};
use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page, query_param};
use crate::domain::{Genotype, Reading, ReadingValue};
use crate::http::ApiError;
use crate::store::{GenomeSummary, Period, ReadingQuery, Rollup};
use crate::tools::reference_range;

/// The longest indicator name a page is asked for (longer: no such indicator).
const MAX_INDICATOR: usize = 300;
/// How many rsids one look-up takes.
pub(crate) const MAX_RSIDS: usize = 50;
/// The longest look-up text read (50 rsids of 14 characters with separators fit).
const MAX_LOOKUP: usize = 1000;
/// How many of the newest readings the indicator page lists.
const LATEST: usize = 20;

/// A path segment percent-encoded (every byte but the unreserved ones), so a name
/// with spaces, slashes or anything else comes back whole through [`super::decode`].
pub(crate) fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The date part of a stored time (`YYYY-MM-DD`), or the time as it is.
fn day_of(time: &str) -> &str {
    time.get(..10).unwrap_or(time)
}

/// A time as shown: `YYYY-MM-DD HH:MM` (seconds dropped), or as it is.
fn when(time: &str) -> String {
    match (time.get(..10), time.get(11..16)) {
        (Some(day), Some(clock)) => format!("{day} {clock}"),
        _ => time.to_string(),
    }
}

fn value_text(value: &ReadingValue) -> String {
    match value {
        ReadingValue::Number(n) => n.to_string(),
        ReadingValue::Text(t) => t.clone(),
    }
}

/// The unit column: the unit, `mixed` when the readings disagree, or nothing.
fn unit_text(summary: &Rollup) -> String {
    match summary.common_unit() {
        Some(unit) => unit.unwrap_or_default().to_string(),
        None => "mixed".to_string(),
    }
}

/// Epoch seconds as a UTC date and time.
fn utc(epoch: u64) -> String {
    i64::try_from(epoch)
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// A rollup as a chart point (its mean, min and max); `None` without numbers.
fn chart_point(rollup: &Rollup) -> Option<ChartPoint> {
    if rollup.numeric_count == 0 {
        return None;
    }
    Some(ChartPoint {
        day: chart::day_number(&rollup.period)?,
        mean: rollup.sum / rollup.numeric_count as f64,
        min: rollup.min,
        max: rollup.max,
    })
}

/// The rsids of a look-up: split on commas and white space, lower-cased; the invalid
/// ones named in words.
pub(crate) fn parse_rsids(text: &str) -> Result<Vec<String>, String> {
    if text.len() > MAX_LOOKUP {
        return Err(format!(
            "That is too long: look up at most {MAX_RSIDS} rsids at a time."
        ));
    }
    let mut rsids: Vec<String> = Vec::new();
    let mut invalid: Vec<&str> = Vec::new();
    for part in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        let rsid = part.to_ascii_lowercase();
        let digits = rsid.strip_prefix("rs").unwrap_or_default();
        if (1..=12).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
            if !rsids.contains(&rsid) {
                rsids.push(rsid);
            }
        } else {
            invalid.push(part);
        }
    }
    if !invalid.is_empty() {
        let shown: Vec<&str> = invalid.iter().take(5).copied().collect();
        return Err(format!(
            "Not an rsid: {}. An rsid is \"rs\" followed by 1 to 12 digits, like rs429358.",
            shown.join(", ")
        ));
    }
    if rsids.len() > MAX_RSIDS {
        return Err(format!(
            "That is {} rsids: look up at most {MAX_RSIDS} at a time.",
            rsids.len()
        ));
    }
    Ok(rsids)
}

/// A count with thousands separators (`230,400`).
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The genome summary: on the data page under "Your genome" with a link to the look-up,
/// on the genome page (already titled so) under "Summary".
fn genome_summary_markup(summary: Option<&GenomeSummary>, on_genome_page: bool) -> Markup {
    html! {
        section id="genome-summary" aria-labelledby="genome-heading" {
            h2 id="genome-heading" { @if on_genome_page { "Summary" } @else { "Your genome" } }
            @match summary {
                Some(s) => p {
                    span.variants { (grouped(s.variants)) } " variants from "
                    span.file { (s.source) } ", imported "
                    span.when { (utc(s.imported_at)) } "."
                },
                None => p.muted {
                    "No genome yet. "
                    a href="/console/upload" { "Upload a 23andMe or AncestryDNA file" } "."
                },
            }
            @if !on_genome_page {
                p { a href="/console/genome" { "Look up your genotypes by rsid" } }
            }
        }
    }
}

impl ConsoleApi {
    fn signed_in_page(
        &self,
        session: &Session,
        title: &str,
        notice: Option<&Notice<'_>>,
        content: Markup,
    ) -> Answer {
        Ok(page(
            StatusCode::OK,
            layout::page(session, "/console/data", title, notice, content),
        ))
    }

    pub(super) async fn data_page(&self, session: &Session) -> Answer {
        let user = session.user_id.as_str();
        let (catalogue, genome) =
            tokio::join!(self.store.catalogue(user), self.store.genome_summary(user));
        let (catalogue, genome) = (catalogue?, genome?);
        let content = html! {
            section aria-labelledby="readings-heading" {
                h2 id="readings-heading" { "Your readings" }
                @if catalogue.is_empty() {
                    p id="no-readings" {
                        "You have no readings yet. "
                        a href="/console/upload" { "Upload a file" }
                        " (CSV or JSON readings, or an Apple Health export) to see them here."
                    }
                } @else {
                    div.table-wrap {
                        table id="catalogue" {
                            caption.muted { (catalogue.len()) " indicators" }
                            thead { tr {
                                th scope="col" { "Indicator" } th scope="col" { "Readings" }
                                th scope="col" { "First" } th scope="col" { "Last" }
                                th scope="col" { "Latest value" } th scope="col" { "Unit" }
                            } }
                            tbody {
                                @for entry in &catalogue {
                                    @let s = &entry.summary;
                                    tr data-indicator=(s.name) {
                                        th scope="row" {
                                            a href={ "/console/data/" (path_segment(&s.name)) } { (s.name) }
                                        }
                                        td.count { (grouped(s.count)) }
                                        td.first { (day_of(&s.first.time)) }
                                        td.last { (day_of(&s.last.time)) }
                                        td.latest { (value_text(&s.last.value)) }
                                        td.unit { (unit_text(s)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (genome_summary_markup(genome.as_ref(), false))
        };
        self.signed_in_page(session, "Your data", None, content)
    }

    pub(super) async fn indicator_page(&self, session: &Session, indicator: &str) -> Answer {
        let not_found = || {
            ApiError::refused(
                StatusCode::NOT_FOUND,
                "You have no readings of that indicator.",
            )
        };
        if indicator.is_empty() || indicator.len() > MAX_INDICATOR {
            return Err(not_found());
        }
        let user = session.user_id.as_str();
        let key = Reading::indicator_key(indicator);
        let catalogue = self.store.catalogue(user).await?;
        let Some(entry) = catalogue.into_iter().find(|e| e.key == key) else {
            return Err(not_found());
        };
        let summary = entry.summary;
        // Day points for the last twelve months or so, month points before them.
        let cutoff = chart::day_points_from(&summary.last.time).unwrap_or_default();
        let cutoff_month = cutoff.get(..7).unwrap_or_default().to_string();
        let all = ReadingQuery::default();
        let (months, days, latest) = tokio::join!(
            self.store
                .rollups(user, &key, Period::Month, "", &cutoff_month),
            self.store
                .rollups(user, &key, Period::Day, &cutoff, crate::store::TIME_MAX),
            self.store.latest_readings(user, &key, LATEST, &all),
        );
        let (months, days, latest) = (months?, days?, latest?);
        let month_points = months
            .iter()
            .filter(|m| m.period < cutoff_month)
            .filter_map(chart_point);
        let day_points = days.iter().filter_map(chart_point);
        let points: Vec<ChartPoint> = month_points.chain(day_points).collect();
        let month_count = months.iter().filter(|m| m.period < cutoff_month).count();
        let unit = summary.common_unit().flatten();
        let band = reference_range(&summary.name, summary.code.as_deref(), unit);
        let chart = Chart {
            title: &summary.name,
            unit,
            points: &points,
            band,
        };
        let content = html! {
            p.facts {
                span.count { (grouped(summary.count)) } " readings from "
                span.first { (day_of(&summary.first.time)) } " to "
                span.last { (day_of(&summary.last.time)) }
                @if let Some(unit) = unit { ", in " span.unit { (unit) } }
                "."
            }
            figure.chart {
                (chart::draw(&chart))
                figcaption.chart-summary {
                    (chart::describe(&chart))
                    @if month_count > 0 {
                        " Points before " (cutoff) " are month means; from then on, day means."
                    } @else {
                        " Each point is one day's mean; the lighter area spans each day's lowest to highest reading."
                    }
                    @if band.is_some() {
                        " The reference range is a typical adult range, a guide and not a diagnosis."
                    }
                }
            }
            h2 id="latest-heading" { "Latest readings" }
            div.table-wrap {
                table id="latest" aria-labelledby="latest-heading" {
                    thead { tr {
                        th scope="col" { "When" } th scope="col" { "Value" }
                        th scope="col" { "Unit" } th scope="col" { "Source" }
                    } }
                    tbody {
                        @for r in &latest {
                            tr {
                                td.when { (when(&r.time)) }
                                td.value { (value_text(&r.value)) }
                                td.unit { (r.unit.as_deref().unwrap_or_default()) }
                                td.source { (r.source) }
                            }
                        }
                    }
                }
            }
            p { a href="/console/data" { "Back to all your data" } }
        };
        self.signed_in_page(session, &summary.name, None, content)
    }

    pub(super) async fn genome_page(&self, session: &Session, request: &Request<Bytes>) -> Answer {
        let user = session.user_id.as_str();
        let asked = query_param(request, "rsid").unwrap_or_default();
        let asked = asked.trim();
        let parsed = (!asked.is_empty()).then(|| parse_rsids(asked));
        let summary = self.store.genome_summary(user).await?;
        let found: Option<Vec<String>> = match &parsed {
            Some(Ok(rsids)) if !rsids.is_empty() => Some(rsids.clone()),
            _ => None,
        };
        let genotypes: Vec<Genotype> = match (&found, &summary) {
            (Some(rsids), Some(_)) => self.store.genotypes_by_rsid(user, rsids).await?,
            _ => Vec::new(),
        };
        let problem = match &parsed {
            Some(Err(words)) => Some(words.clone()),
            _ => None,
        };
        let notice = problem.as_deref().map(Notice::Problem);
        // The form keeps what was typed, cut to the bound so a long query is not echoed whole.
        let typed: String = asked.chars().take(MAX_LOOKUP).collect();
        let content = html! {
            (genome_summary_markup(summary.as_ref(), true))
            form.lookup method="get" action="/console/genome" role="search" {
                label for="rsid" { "rsids (up to " (MAX_RSIDS) ", separated by commas or spaces)" }
                input id="rsid" name="rsid" type="search" value=(typed)
                    placeholder="rs429358, rs7412" autocomplete="off" spellcheck="false";
                button id="lookup" type="submit" { "Look up" }
            }
            @if let Some(rsids) = &found {
                @if summary.is_none() {
                    p.muted { "You have no genome to look these up in yet." }
                } @else {
                    h2 id="genotypes-heading" { "Your genotypes" }
                    div.table-wrap {
                        table id="genotypes" aria-labelledby="genotypes-heading" {
                            thead { tr {
                                th scope="col" { "rsid" } th scope="col" { "Chromosome" }
                                th scope="col" { "Position" } th scope="col" { "Genotype" }
                            } }
                            tbody {
                                @for rsid in rsids {
                                    tr data-rsid=(rsid) {
                                        th scope="row" { (rsid) }
                                        @match genotypes.iter().find(|g| &g.rsid == rsid) {
                                            Some(g) => {
                                                td.chromosome { (g.chromosome) }
                                                td.position { (g.position) }
                                                td.genotype { (g.genotype) }
                                            },
                                            None => td.missing colspan="3" { "not in your genome" },
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            p { a href="/console/data" { "Back to all your data" } }
        };
        let mut response = self.signed_in_page(session, "Your genome", notice.as_ref(), content)?;
        if problem.is_some() {
            *response.status_mut() = StatusCode::BAD_REQUEST;
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_round_trip_through_decode() {
        for name in [
            "Glucose",
            "Vitamin D (25-OH)",
            "a/b c+d%e",
            "糖化血红蛋白",
            "x?y#z",
        ] {
            let encoded = path_segment(name);
            assert!(!encoded.contains(['/', ' ', '?', '#', '+']), "{encoded}");
            assert_eq!(super::super::decode(&encoded), name);
        }
    }

    #[test]
    fn rsids_are_checked_before_the_store() {
        assert_eq!(
            parse_rsids("rs429358, RS7412  rs429358").unwrap(),
            vec!["rs429358", "rs7412"]
        );
        let words = parse_rsids("rs1, i3000, rs, rs1234567890123").unwrap_err();
        assert!(
            words.contains("Not an rsid: i3000, rs, rs1234567890123"),
            "{words}"
        );
        let many: Vec<String> = (1..=51).map(|n| format!("rs{n}")).collect();
        assert!(
            parse_rsids(&many.join(","))
                .unwrap_err()
                .contains("at most 50")
        );
        assert!(
            parse_rsids(&"rs1,".repeat(400))
                .unwrap_err()
                .contains("too long")
        );
        assert_eq!(parse_rsids(" , ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn times_and_values_are_shown_plainly() {
        assert_eq!(when("2026-01-02T08:30:00"), "2026-01-02 08:30");
        assert_eq!(when("2026-01-02"), "2026-01-02");
        assert_eq!(value_text(&ReadingValue::Number(118.0)), "118");
        assert_eq!(value_text(&ReadingValue::Number(5.6)), "5.6");
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(230_400), "230,400");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(utc(u64::MAX), "");
    }
}
