//! Upload: the page with the file picker and the progress bar (the script creates an
//! upload, PUTs the file with transfer progress, then polls the import), the person's
//! recent uploads, and the two JSON answers the script calls with the session cookie
//! and the CSRF header. Those answer exactly what `POST /api/data/uploads` and
//! `GET /api/data/uploads/{id}` answer: the same typed cores of `api::uploads`, the
//! same envelope.
use bytes::Bytes;
use http::{Request, StatusCode};
use maud::{Markup, html};

use super::layout::{self, Notice};
use super::{Answer, ConsoleApi, Session, html as page};
use crate::api::uploads::{created_response, parse_new_upload, record_response};
use crate::domain::{UploadKind, UploadRecord, UploadStatus};

/// The kinds the picker offers: (wire name, label).
const KINDS: [(UploadKind, &str); 3] = [
    (UploadKind::Health, "Readings (CSV or JSON)"),
    (
        UploadKind::Genotype,
        "Genome (23andMe or AncestryDNA raw file)",
    ),
    (
        UploadKind::AppleHealth,
        "Apple Health export (export.zip or export.xml)",
    ),
];

/// An epoch time as people read it (UTC, to the minute).
pub(crate) fn when(epoch: u64) -> String {
    i64::try_from(epoch)
        .ok()
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .map(|time| time.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

fn kind_label(kind: UploadKind) -> &'static str {
    match kind {
        UploadKind::Health => "Readings",
        UploadKind::Genotype => "Genome",
        UploadKind::AppleHealth => "Apple Health",
    }
}

/// The page that shows what an upload of `kind` brought.
fn where_to_see(kind: UploadKind) -> &'static str {
    match kind {
        UploadKind::Genotype => "/console/genome",
        UploadKind::Health | UploadKind::AppleHealth => "/console/data",
    }
}

/// What became of an upload, in words.
fn outcome(record: &UploadRecord) -> String {
    match (record.status, &record.error) {
        (UploadStatus::Failed, Some(error)) => match error.line {
            Some(line) => format!("Failed at line {line}: {}", error.message),
            None => format!("Failed: {}", error.message),
        },
        (UploadStatus::Failed, None) => "Failed".to_string(),
        (UploadStatus::Done, _) => match record.counts {
            Some(c) => done_in_words(record.rows_written, &c),
            None => format!("{} rows written", record.rows_written),
        },
        (UploadStatus::Importing, _) => format!("Importing: {} rows read", record.rows_read),
        (UploadStatus::Waiting, _) => "Waiting for the file".to_string(),
    }
}

/// A finished import in words: what was new, already there, replaced and merged.
fn done_in_words(written: u64, c: &crate::domain::ReadingCounts) -> String {
    let mut parts = vec![format!("{} new", c.new)];
    if c.unchanged > 0 {
        parts.push(format!("{} already there", c.unchanged));
    }
    if c.replaced > 0 {
        parts.push(format!("{} replaced an earlier value", c.replaced));
    }
    if c.merged > 0 {
        parts.push(format!("{} repeated rows kept once", c.merged));
    }
    format!("{written} rows written: {}", parts.join(", "))
}

fn recent_table(records: &[UploadRecord]) -> Markup {
    html! {
        @if records.is_empty() {
            p.muted id="no-uploads" { "No uploads yet." }
        } @else {
            div.table-wrap {
                table.stack id="uploads" {
                    thead { tr { th scope="col" { "File" } th scope="col" { "Kind" } th scope="col" { "Started" } th scope="col" { "Status" } th scope="col" { "Result" } } }
                    tbody {
                        @for record in records {
                            tr data-upload=(record.id) data-status=(record.status.as_str()) {
                                td.file data-label="File" { @if record.filename.is_empty() { span.muted { "(unnamed)" } } @else { (record.filename) } }
                                td.kind data-label="Kind" { (kind_label(record.kind)) }
                                td.started data-label="Started" { (when(record.created_at)) }
                                td.status data-label="Status" { (record.status.as_str()) }
                                td.result data-label="Result" {
                                    (outcome(record))
                                    @if record.status == UploadStatus::Done {
                                        " " a href=(where_to_see(record.kind)) { "See it" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

impl ConsoleApi {
    pub(crate) async fn upload_page(&self, session: &Session) -> Answer {
        let recent = self.uploads.recent(&session.user_id).await?;
        let content = html! {
            p { "Bring a file of readings, a genome, or an Apple Health export. The file goes straight to storage (any size), then the server imports it; nothing is saved if a line is wrong." }
            form id="upload-form" method="get" action="/console/upload" {
                label for="upload-kind" { "What the file holds" }
                select id="upload-kind" name="kind" aria-describedby="upload-formats" {
                    @for (kind, label) in KINDS {
                        option value=(kind.as_str()) { (label) }
                    }
                }
                ul.muted id="upload-formats" {
                    li {
                        "Readings: CSV with the columns " code { "indicator,value,unit,time,source" }
                        ", or JSON; gzip-compressed files are fine. "
                        a id="readings-template" href="/console/assets/readings-template.csv" download {
                            "Download a template"
                        }
                        " with one row for each common measure."
                    }
                    li { "Genome: the raw data file from 23andMe or AncestryDNA; it replaces the genome you had." }
                    li { "Apple Health: the " code { "export.zip" } " (or its " code { "export.xml" } ") from the Health app's “Export All Health Data”." }
                }
                label for="upload-file" { "File" }
                input id="upload-file" name="file" type="file" required;
                button id="upload-start" type="submit" { "Upload" }
            }
            noscript {
                p.notice.problem id="upload-needs-js" {
                    "Uploading from this page needs JavaScript. Without it, use the curl flow in the README (“Upload a whole file”): create the upload, PUT the file, poll its status."
                }
            }
            label for="upload-progress" { "Progress" }
            progress id="upload-progress" max="100" value="0" data-state="idle" { "0 %" }
            p id="upload-status" aria-live="polite" data-state="idle" {
                "Choose a file, then Upload. The bar shows two steps: sending the file (0–50 %), then importing it (50–100 %)."
            }
            section id="recent-uploads" aria-labelledby="recent-uploads-heading" {
                h2 id="recent-uploads-heading" { "Recent uploads" }
                (recent_table(&recent))
            }
        };
        Ok(page(
            StatusCode::OK,
            layout::page(
                session,
                "/console/upload",
                "Upload",
                None::<&Notice<'_>>,
                content,
            ),
        ))
    }

    /// `POST /console/uploads` for the page's script: what `POST /api/data/uploads`
    /// answers (the body is bounded by the route's cap before it gets here).
    pub(crate) async fn upload_create(
        &self,
        session: &Session,
        request: &Request<Bytes>,
    ) -> Answer {
        let upload = parse_new_upload(request.body())?;
        let created = self.uploads.new_upload(&session.user_id, upload).await?;
        Ok(created_response(created).into_response())
    }

    /// `GET /console/uploads/{id}` for the page's script: what
    /// `GET /api/data/uploads/{id}` answers (another person's id is 404).
    pub(crate) async fn upload_status(&self, session: &Session, id: &str) -> Answer {
        let record = self.uploads.upload_record(&session.user_id, id).await?;
        Ok(record_response(&record).into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::UploadFailure;

    fn record(status: UploadStatus, error: Option<UploadFailure>) -> UploadRecord {
        let mut record = UploadRecord::waiting(
            "0123456789abcdef0123456789".into(),
            "user".into(),
            UploadKind::Health,
            "<b>readings</b>.csv".into(),
            "uploads/x".into(),
            1_735_689_600,
            1_735_689_600 + 60,
        );
        record.status = status;
        record.rows_read = 7;
        record.rows_written = 5;
        record.error = error;
        record
    }

    #[test]
    fn console_upload_outcomes_read_as_words() {
        assert_eq!(outcome(&record(UploadStatus::Done, None)), "5 rows written");
        let mut counted = record(UploadStatus::Done, None);
        counted.counts = Some(crate::domain::ReadingCounts {
            new: 3,
            unchanged: 1,
            replaced: 1,
            merged: 2,
        });
        assert_eq!(
            outcome(&counted),
            "5 rows written: 3 new, 1 already there, 1 replaced an earlier value, 2 repeated rows kept once"
        );
        assert_eq!(
            outcome(&record(UploadStatus::Importing, None)),
            "Importing: 7 rows read"
        );
        let at_line = UploadFailure {
            line: Some(3),
            message: "value is missing".into(),
        };
        assert_eq!(
            outcome(&record(UploadStatus::Failed, Some(at_line))),
            "Failed at line 3: value is missing"
        );
        let whole = UploadFailure {
            line: None,
            message: "not a zip".into(),
        };
        assert_eq!(
            outcome(&record(UploadStatus::Failed, Some(whole))),
            "Failed: not a zip"
        );
        assert_eq!(when(1_735_689_600), "2025-01-01 00:00 UTC");
        assert_eq!(when(u64::MAX), "");
    }

    #[test]
    fn console_upload_table_escapes_the_file_name() {
        let html = recent_table(&[record(UploadStatus::Done, None)]).into_string();
        assert!(html.contains("&lt;b&gt;readings&lt;/b&gt;.csv"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(html.contains("data-upload=\"0123456789abcdef0123456789\""));
        assert!(recent_table(&[]).into_string().contains("No uploads yet."));
    }
}
