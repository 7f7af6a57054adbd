//! Health-indicator tools: `query_health_indicators` and its keyword matching; the
//! reference ranges the console shades behind a chart.

mod answers;
mod cgm;
mod matching;
mod query;
mod reference;

pub(super) use query::QueryHealthIndicators;
pub(crate) use reference::reference_range;
