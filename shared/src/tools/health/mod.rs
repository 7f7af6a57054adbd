//! Health-indicator tools: `query_health_indicators` and its keyword matching.

mod matching;
mod query;
mod synonyms;

pub(super) use query::QueryHealthIndicators;
