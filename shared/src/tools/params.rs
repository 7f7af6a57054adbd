//! A tool's parameters, declared once: its `Params` type derives `Deserialize` (what the
//! tool reads) and `schemars::JsonSchema` (what `tools/list` shows), and the bounds the
//! registry checks before a call (`maxLength`, `maxItems`, `minimum`, `maximum`, `enum`)
//! are the ones that derived schema states, written once as `#[schemars(length(..))]`,
//! `#[schemars(range(..))]` or a serde enum. Descriptions are the fields' doc comments.
//!
//! Owns the one way a schema is derived, [`input_schema`]. Does not check arguments
//! (`registry.rs` walks the schema) or know any tool.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// The JSON Schema of `P` as `tools/list` shows it: draft 2020-12, every subschema inline,
/// and three things schemars adds that the schema a client reads leaves out:
///
/// - `$schema` and the root's `title` (the Rust type's name, `Params`);
/// - `null` in the type of an `Option` field: an argument that is absent and one that is
///   `null` are the same to every tool, and the listing never offered `null`;
/// - an integer's `format` (`uint32`, `uint64`): the Rust width, which the bounds
///   (`minimum`, `maximum`) already state for a client.
pub(crate) fn input_schema<P: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<P>();
    schema.remove("title");
    without_rust_details(&mut schema);
    schema.to_value()
}

/// Removes `null` from type lists and integer formats, in `schema` and every subschema.
fn without_rust_details(schema: &mut Schema) {
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema.insert("type".into(), only);
        }
    }
    if schema.get("type").and_then(Value::as_str) == Some("integer") {
        schema.remove("format");
    }
    schemars::transform::transform_subschemas(&mut without_rust_details, schema);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// Words to look for
        #[schemars(length(max = 3), inner(length(max = 10)))]
        words: Option<Vec<String>>,
        #[schemars(range(min = 1, max = 9))]
        count: Option<u32>,
        name: String,
    }

    #[test]
    fn a_params_type_derives_the_schema_a_client_reads() {
        assert_eq!(
            input_schema::<Example>(),
            json!({
                "type": "object",
                "properties": {
                    "words": { "type": "array", "maxItems": 3, "items": { "type": "string", "maxLength": 10 }, "description": "Words to look for" },
                    "count": { "type": "integer", "minimum": 1, "maximum": 9 },
                    "name": { "type": "string" }
                },
                "required": ["name"],
                "additionalProperties": false
            })
        );
    }
}
