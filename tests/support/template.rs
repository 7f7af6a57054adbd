//! `template.yaml` as JSON, for the template tests (`template_routes.rs`,
//! `template_ops.rs`): YAML short-form intrinsics (`!Ref`, `!GetAtt`, `!Sub`…) turned into
//! their long forms (`Ref`, `Fn::GetAtt` as a pair, `Fn::Sub`…), and look-ups of its
//! resources.

use serde_json::{Value, json};

use crate::root;

/// The template as JSON, with YAML short-form intrinsics (`!Ref`, `!GetAtt`, `!Sub`…)
/// turned into their long forms (`Ref`, `Fn::GetAtt` as a pair, `Fn::Sub`…).
pub fn template() -> Value {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    let yaml: serde_norway::Value = serde_norway::from_str(&text).expect("template.yaml parses");
    to_json(yaml)
}

fn to_json(value: serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).expect("a YAML number is a JSON number"),
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s,
                        other => panic!("a non-string key in template.yaml: {other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Y::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            let name = tag.trim_start_matches('!');
            let inner = to_json(tagged.value);
            match (name, inner) {
                ("Ref", inner) => json!({ "Ref": inner }),
                ("GetAtt", Value::String(dotted)) => {
                    let (resource, attribute) =
                        dotted.split_once('.').expect("!GetAtt Resource.Attribute");
                    json!({ "Fn::GetAtt": [resource, attribute] })
                }
                (other, inner) => {
                    let mut long = serde_json::Map::new();
                    long.insert(format!("Fn::{other}"), inner);
                    Value::Object(long)
                }
            }
        }
    }
}

/// The template's resources by logical id.
pub fn resources(template: &Value) -> &serde_json::Map<String, Value> {
    template["Resources"].as_object().expect("Resources")
}

/// The resources of one type (`AWS::CloudWatch::Alarm`), with their logical ids.
pub fn of_type<'t>(template: &'t Value, kind: &str) -> Vec<(&'t String, &'t Value)> {
    resources(template)
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .collect()
}
