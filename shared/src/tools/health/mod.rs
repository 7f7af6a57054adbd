//! Health-indicator tools: `query_health_indicators` and its keyword matching; the
//! reference ranges the console shades behind a chart; the ambulatory profile both
//! answer and draw.

mod answers;
mod cgm;
mod matching;
mod profile;
mod query;
mod reference;

/// The console shows the numbers the tool answers: its number and night
/// wording, what a converted reading was sent as, the CGM report and the profile.
pub(crate) use answers::{as_sent, format_number, hours_and_minutes};
pub(crate) use cgm::report as cgm_report;
pub(crate) use profile::{HourProfile, hours as profile_hours, window as profile_window};
pub(super) use query::QueryHealthIndicators;
pub(crate) use reference::reference_range;
