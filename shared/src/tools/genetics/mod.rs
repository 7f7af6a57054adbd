//! `get_genetic_data` (E2): the caller's own genotypes by rsid, with nearby variants
//! on the same chromosome. Short keys with a legend keep the output compact. Without
//! genotype data the result points at the upload API instead of failing.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::store::{Genotype, Store};
use crate::tools::{BoxFuture, DataKind, Tool, ToolCall, ToolOutput, ToolSpec};

const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 1000;
const DEFAULT_RANGE: u64 = 1_000_000;
const MAX_RANGE: u64 = 10_000_000;
const NEARBY_PER_HIT: usize = 20;

pub struct GetGeneticData {
    pub store: Arc<dyn Store>,
}

impl Tool for GetGeneticData {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "get_genetic_data",
            "Read the user's own genotype data by rsid (e.g. \"rs429358\" or [\"rs429358\", \"rs7412\"]; \
             a comma-separated string also works). For each variant found, optionally lists up to 20 \
             other variants nearby on the same chromosome, nearest first. Keys are short; see legend.",
            json!({
                "type": "object",
                "properties": {
                    "rsid": {
                        "oneOf": [ { "type": "string" }, { "type": "array", "items": { "type": "string" } } ],
                        "description": "One rsid, a list, or a comma-separated string"
                    },
                    "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT },
                    "include_nearby": { "type": "boolean", "default": true },
                    "nearby_range": { "type": "integer", "minimum": 0, "maximum": MAX_RANGE, "default": DEFAULT_RANGE, "description": "Base pairs each side" }
                },
                "required": ["rsid"],
                "additionalProperties": false
            }),
        )
        .read_only()
        .needs_caller()
        .requires(DataKind::Genotype)
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(caller) = call.caller else {
                return ToolOutput::Error("sign in first: this tool reads your own data".into());
            };
            match self.run(&caller.user_id, &call.arguments).await {
                Ok(data) => ToolOutput::Json(json!({ "success": true, "data": data })),
                Err(message) => ToolOutput::Json(json!({ "success": false, "error": message })),
            }
        })
    }
}

fn integer(
    arguments: &serde_json::Map<String, Value>,
    key: &str,
    default: u64,
    max: u64,
) -> Result<u64, String> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| *n <= max)
            .ok_or_else(|| format!("{key} must be an integer between 0 and {max}")),
    }
}

/// Accepted rsids: `rs` or `i` followed by digits (anything else is reported, never queried).
fn parse_rsids(value: &Value) -> Result<(Vec<String>, Vec<String>), String> {
    let raw: Vec<String> = match value {
        Value::String(s) => s.split(',').map(String::from).collect(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(String::from)
                    .ok_or("rsid list items must be strings")
            })
            .collect::<Result<_, _>>()?,
        _ => return Err("rsid must be a string or a list of strings".into()),
    };
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for id in raw
        .iter()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
    {
        let digits = id.strip_prefix("rs").or_else(|| id.strip_prefix('i'));
        if digits.is_some_and(|d| {
            !d.is_empty() && d.len() <= 12 && d.bytes().all(|b| b.is_ascii_digit())
        }) {
            if !valid.contains(&id) {
                valid.push(id);
            }
        } else {
            invalid.push(id.chars().take(40).collect());
        }
    }
    if valid.is_empty() && invalid.is_empty() {
        return Err("rsid is empty".into());
    }
    Ok((valid, invalid))
}

fn chromosome_rank(chromosome: &str) -> u32 {
    match chromosome.parse::<u32>() {
        Ok(n) => n,
        Err(_) => match chromosome {
            "X" => 23,
            "Y" => 24,
            "MT" | "M" => 25,
            _ => 26,
        },
    }
}

impl GetGeneticData {
    async fn run(
        &self,
        user: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Result<Value, String> {
        let (rsids, invalid) = parse_rsids(arguments.get("rsid").unwrap_or(&Value::Null))?;
        let limit = integer(arguments, "limit", DEFAULT_LIMIT, MAX_LIMIT)?.max(1) as usize;
        let range = integer(arguments, "nearby_range", DEFAULT_RANGE, MAX_RANGE)?;
        let include_nearby = match arguments.get("include_nearby") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("include_nearby must be true or false".into()),
        };
        let unavailable = |e: crate::store::StoreError| {
            tracing::warn!(error = %e, "get_genetic_data: store read failed");
            "your genotype data could not be read right now; try again shortly".to_string()
        };
        let mut hits = self
            .store
            .genotypes_by_rsid(user, &rsids)
            .await
            .map_err(unavailable)?;
        if hits.is_empty() {
            let presence = self.store.data_presence(user).await.map_err(unavailable)?;
            if !presence.genotype {
                return Ok(json!({
                    "variants": [],
                    "message": "No genotype data yet. Upload a raw data file (23andMe or AncestryDNA text) with POST /api/data/genotype, then ask again."
                }));
            }
        }
        hits.sort_by(|a, b| {
            (chromosome_rank(&a.chromosome), a.position)
                .cmp(&(chromosome_rank(&b.chromosome), b.position))
        });
        let found: Vec<&str> = hits.iter().map(|g| g.rsid.as_str()).collect();
        let not_found: Vec<&String> = rsids
            .iter()
            .filter(|r| !found.contains(&r.as_str()))
            .collect();
        let truncated = hits.len().saturating_sub(limit);
        hits.truncate(limit);
        let mut variants = Vec::with_capacity(hits.len());
        for hit in &hits {
            let mut v =
                json!({ "r": hit.rsid, "c": hit.chromosome, "p": hit.position, "g": hit.genotype });
            if include_nearby && range > 0 {
                let from = hit.position.saturating_sub(range);
                let to = hit.position.saturating_add(range);
                let mut near: Vec<Genotype> = self
                    .store
                    .genotypes_in_range(user, &hit.chromosome, from, to)
                    .await
                    .map_err(unavailable)?
                    .into_iter()
                    .filter(|g| g.rsid != hit.rsid)
                    .collect();
                near.sort_by_key(|g| g.position.abs_diff(hit.position));
                near.truncate(NEARBY_PER_HIT);
                let near: Vec<Value> = near
                    .iter()
                    .map(|g| json!({ "r": g.rsid, "p": g.position, "g": g.genotype, "d": g.position as i64 - hit.position as i64 }))
                    .collect();
                v["n"] = near.into();
            }
            variants.push(v);
        }
        let mut out = json!({
            "legend": { "r": "rsid", "c": "chromosome", "p": "position", "g": "genotype", "n": "nearby variants", "d": "distance in base pairs (negative: before)" },
            "variants": variants,
        });
        if !not_found.is_empty() {
            out["not_found"] = json!(not_found);
        }
        if !invalid.is_empty() {
            out["invalid"] = json!(invalid);
        }
        if truncated > 0 {
            out["truncated"] = truncated.into();
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsids_are_parsed_and_odd_input_is_reported_not_queried() {
        let (valid, invalid) = parse_rsids(&json!("rs429358, RS7412,rs1' OR 1=1 --")).unwrap();
        assert_eq!(valid, vec!["rs429358", "rs7412"]);
        assert_eq!(invalid.len(), 1);
        assert!(parse_rsids(&json!(42)).is_err());
    }
}
