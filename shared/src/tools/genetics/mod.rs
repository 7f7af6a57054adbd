//! `get_genetic_data` (E2): the caller's own genotypes by rsid, with nearby variants
//! on the same chromosome. Short keys with a legend keep the output compact. Without
//! genotype data the result points at the upload API instead of failing.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::domain::Genotype;
use crate::store::GenomeStore;
use crate::tools::{DataKind, Tool, ToolCall, ToolOutput, ToolSpec, input_schema};
use crate::upload::is_rsid;

const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 1000;
const DEFAULT_RANGE: u64 = 1_000_000;
const MAX_RANGE: u64 = 10_000_000;
const NEARBY_PER_HIT: usize = 20;
/// Argument bounds, declared in the schema and enforced before any work:
/// rsids per call, one rsid's length, a comma-separated string's length.
const MAX_RSIDS: usize = 1000;
const MAX_RSID_LENGTH: usize = 40;
const MAX_RSID_TEXT: usize = 40_000;

// The tool's arguments: what it reads and, derived from the same declaration, the input
// schema `tools/list` shows and the registry checks (the bounds above). A plain comment:
// a doc comment here would become the schema's `description`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Params {
    /// One rsid, a list, or a comma-separated string
    rsid: Rsids,
    #[schemars(range(min = 1, max = MAX_LIMIT), extend("default" = DEFAULT_LIMIT))]
    limit: Option<u64>,
    #[schemars(extend("default" = true))]
    include_nearby: Option<bool>,
    /// Base pairs each side
    #[schemars(range(min = 0, max = MAX_RANGE), extend("default" = DEFAULT_RANGE))]
    nearby_range: Option<u64>,
}

/// One rsid (or several, comma-separated) or a list of them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "rsid must be a string or a list of strings")]
#[schemars(transform = one_of)]
enum Rsids {
    Text(#[schemars(length(max = MAX_RSID_TEXT))] String),
    List(#[schemars(length(max = MAX_RSIDS), inner(length(max = MAX_RSID_LENGTH)))] Vec<String>),
}

/// An untagged enum's branches as `oneOf` (schemars writes `anyOf`): a string and an
/// array are never both, and `oneOf` is what the listing has always said.
fn one_of(schema: &mut schemars::Schema) {
    if let Some(branches) = schema.remove("anyOf") {
        schema.insert("oneOf".into(), branches);
    }
}

pub(super) struct GetGeneticData {
    pub store: Arc<dyn GenomeStore>,
}

impl Tool for GetGeneticData {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "get_genetic_data",
            "Read the user's own genotype data by rsid (e.g. \"rs429358\" or [\"rs429358\", \"rs7412\"]; \
             a comma-separated string also works). For each variant found, optionally lists up to 20 \
             other variants nearby on the same chromosome, nearest first. Keys are short; see legend.",
            input_schema::<Params>(),
        )
        .read_only()
        .needs_caller()
        .requires(DataKind::Genotype)
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(caller) = call.caller else {
                return ToolOutput::sign_in_first();
            };
            let params: Params = match serde_json::from_value(Value::Object(call.arguments)) {
                Ok(params) => params,
                Err(e) => return ToolOutput::Error(format!("invalid arguments: {e}")),
            };
            ToolOutput::data(self.run(&caller.user_id, params).await)
        })
    }
}

/// Accepted rsids: `rs` or `i` followed by digits (anything else is reported, never queried).
fn parse_rsids(rsids: &Rsids) -> Result<(Vec<String>, Vec<String>), String> {
    let raw: Vec<&str> = match rsids {
        Rsids::Text(text) => text.split(',').collect(),
        Rsids::List(items) => items.iter().map(String::as_str).collect(),
    };
    // A comma-separated text within its `maxLength` may still name more than `maxItems`.
    if raw.len() > MAX_RSIDS {
        return Err(format!("rsid may list at most {MAX_RSIDS} items"));
    }
    let mut valid = Vec::new();
    let mut seen = HashSet::new();
    let mut invalid = Vec::new();
    for id in raw
        .iter()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
    {
        if is_rsid(&id) {
            if seen.insert(id.clone()) {
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

/// Signed distance from `from` to `to` in base pairs (positions are bounded at upload;
/// saturating all the same).
fn distance(from: u64, to: u64) -> i64 {
    let d = i64::try_from(from.abs_diff(to)).unwrap_or(i64::MAX);
    if to < from { -d } else { d }
}

/// The `NEARBY_PER_HIT` variants of `read` (in position order) nearest to `hit` within
/// `from..=to`, nearest first, the lower position first at equal distance: the order of a
/// stable sort by distance, found by walking outwards from the hit (no
/// sort of the whole window per hit).
fn nearest<'g>(read: &'g [Genotype], hit: &Genotype, from: u64, to: u64) -> Vec<&'g Genotype> {
    let lo = read.partition_point(|g| g.position < from);
    let hi = read.partition_point(|g| g.position <= to).max(lo);
    let window = &read[lo..hi];
    let center = window.partition_point(|g| g.position < hit.position);
    // window[..left] lies before the hit, unvisited; window[right..] at or after it.
    let (mut left, mut right) = (center, center);
    let mut near = Vec::with_capacity(NEARBY_PER_HIT + 1);
    while near.len() < NEARBY_PER_HIT {
        let before = left.checked_sub(1).and_then(|i| window.get(i));
        let after = window.get(right);
        let take_before = match (before, after) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(b), Some(a)) => {
                hit.position.abs_diff(b.position) <= a.position.abs_diff(hit.position)
            }
        };
        if let (true, Some(b)) = (take_before, before) {
            // The whole run at that position, in the order the store gave it.
            let start = window[..left].partition_point(|g| g.position < b.position);
            near.extend(window[start..left].iter().filter(|g| g.rsid != hit.rsid));
            left = start;
        } else if let Some(a) = after {
            if a.rsid != hit.rsid {
                near.push(a);
            }
            right += 1;
        }
    }
    near.truncate(NEARBY_PER_HIT);
    near
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
    pub(crate) fn new(store: Arc<dyn GenomeStore>) -> Self {
        GetGeneticData { store }
    }

    /// `params` within the schema's bounds: the registry checked them before the call.
    async fn run(&self, user: &str, params: Params) -> Result<Value, String> {
        let (rsids, invalid) = parse_rsids(&params.rsid)?;
        let limit =
            usize::try_from(params.limit.unwrap_or(DEFAULT_LIMIT).max(1)).unwrap_or(usize::MAX);
        let range = params.nearby_range.unwrap_or(DEFAULT_RANGE);
        let include_nearby = params.include_nearby.unwrap_or(true);
        let unavailable = |e: crate::store::StoreError| {
            tracing::warn!(error = %e, "get_genetic_data: store read failed");
            "your genotype data could not be read right now; try again shortly".to_string()
        };
        let nearby = include_nearby && range > 0;
        // One read: the hits and every variant within `range` of them (a few
        // requests, however many hits).
        let neighbourhood = self
            .store
            .genotypes_near(user, &rsids, if nearby { range } else { 0 })
            .await
            .map_err(unavailable)?;
        let mut hits = neighbourhood.hits;
        if hits.is_empty() {
            let summary = self.store.genome_summary(user).await.map_err(unavailable)?;
            if summary.is_none() {
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
        let found: HashSet<&str> = hits.iter().map(|g| g.rsid.as_str()).collect();
        let not_found: Vec<&String> = rsids
            .iter()
            .filter(|r| !found.contains(&r.as_str()))
            .collect();
        let truncated = hits.len().saturating_sub(limit);
        hits.truncate(limit);
        let window = |g: &Genotype| {
            (
                g.position.saturating_sub(range),
                g.position.saturating_add(range),
            )
        };
        let mut variants = Vec::with_capacity(hits.len());
        // Hits are in chromosome and position order, so hits whose windows overlap are
        // neighbours: one range read serves each run of them.
        for run in hits.chunk_by(|a, b| a.chromosome == b.chromosome && window(b).0 <= window(a).1)
        {
            let read: &[Genotype] = if nearby {
                // The store orders by chromosome then position: this chromosome's run.
                let chromosome = &run[0].chromosome;
                let start = neighbourhood.nearby.partition_point(|g| {
                    chromosome_rank(&g.chromosome) < chromosome_rank(chromosome)
                });
                let end = neighbourhood.nearby.partition_point(|g| {
                    chromosome_rank(&g.chromosome) <= chromosome_rank(chromosome)
                });
                &neighbourhood.nearby[start..end]
            } else {
                &[]
            };
            for hit in run {
                let mut v = json!({ "r": hit.rsid, "c": hit.chromosome, "p": hit.position, "g": hit.genotype });
                if nearby {
                    let (from, to) = window(hit);
                    let near: Vec<Value> = nearest(read, hit, from, to)
                        .iter()
                        .map(|g| json!({ "r": g.rsid, "p": g.position, "g": g.genotype, "d": distance(hit.position, g.position) }))
                        .collect();
                    v["n"] = near.into();
                }
                variants.push(v);
            }
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
        let rsids =
            |value: Value| serde_json::from_value::<Rsids>(value).map_err(|e| e.to_string());
        let (valid, invalid) =
            parse_rsids(&rsids(json!("rs429358, RS7412,rs1' OR 1=1 --")).unwrap()).unwrap();
        assert_eq!(valid, vec!["rs429358", "rs7412"]);
        assert_eq!(invalid.len(), 1);
        assert!(rsids(json!(42)).and_then(|r| parse_rsids(&r)).is_err());
    }

    #[test]
    fn nearest_matches_a_stable_sort_by_distance_with_ties() {
        // Positions with repeats and equal distances on both sides of each hit.
        let mut read: Vec<Genotype> = [10, 20, 20, 30, 40, 40, 40, 50, 60, 60, 70, 80, 90, 100]
            .iter()
            .cycle()
            .take(42)
            .enumerate()
            .map(|(i, p)| Genotype {
                rsid: format!("rs{i}"),
                chromosome: "1".into(),
                position: p + (i as u64 / 14) * 5,
                genotype: "AA".into(),
            })
            .collect();
        read.sort_by(|a, b| (a.position, &a.rsid).cmp(&(b.position, &b.rsid)));
        for hit in &read {
            for range in [0, 5, 10, 20, 35, 1000] {
                let (from, to) = (hit.position.saturating_sub(range), hit.position + range);
                let mut expected: Vec<&Genotype> = read
                    .iter()
                    .filter(|g| (from..=to).contains(&g.position) && g.rsid != hit.rsid)
                    .collect();
                expected.sort_by_key(|g| g.position.abs_diff(hit.position));
                expected.truncate(NEARBY_PER_HIT);
                assert_eq!(nearest(&read, hit, from, to), expected, "{hit:?} {range}");
            }
        }
    }

    #[tokio::test]
    async fn shared_range_reads_give_each_hit_its_own_window() {
        use crate::store::EmbeddedStore;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mirobody-genetics-{}-{nanos}", std::process::id()));
        let store: Arc<dyn crate::store::Store> =
            Arc::new(EmbeddedStore::open(dir.join("db.sqlite")).unwrap());
        let genotypes = crate::demo::genotypes();
        let genome = crate::domain::Genome::from_genotypes(&genotypes).unwrap();
        store.replace_genome("u", &genome, "demo", 0).await.unwrap();
        let tool = GetGeneticData {
            store: store.clone(),
        };
        // Demo filler lies within 900 kb of each known variant: many windows overlap.
        let range = 300_000;
        let rsids: Vec<&str> = genotypes
            .iter()
            .step_by(3)
            .map(|g| g.rsid.as_str())
            .collect();
        let mut arguments = serde_json::Map::new();
        arguments.insert("rsid".into(), json!(rsids));
        arguments.insert("nearby_range".into(), json!(range));
        arguments.insert("limit".into(), json!(MAX_LIMIT));
        let params = serde_json::from_value(Value::Object(arguments)).unwrap();
        let out = tool.run("u", params).await.unwrap();
        let variants = out["variants"].as_array().unwrap();
        assert_eq!(variants.len(), rsids.len());
        for variant in variants {
            let position = variant["p"].as_u64().unwrap();
            let mut near: Vec<Genotype> = store
                .genotypes_in_range(
                    "u",
                    variant["c"].as_str().unwrap(),
                    position.saturating_sub(range),
                    position + range,
                )
                .await
                .unwrap()
                .into_iter()
                .filter(|g| g.rsid != variant["r"])
                .collect();
            near.sort_by_key(|g| g.position.abs_diff(position));
            near.truncate(NEARBY_PER_HIT);
            let expected: Vec<(String, u64)> =
                near.into_iter().map(|g| (g.rsid, g.position)).collect();
            let shown: Vec<(String, u64)> = variant["n"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| (n["r"].as_str().unwrap().into(), n["p"].as_u64().unwrap()))
                .collect();
            assert_eq!(shown, expected, "{variant}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
