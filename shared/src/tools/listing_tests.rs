//! The built-in tools' `tools/list` entries against `listing.json`, the entries as they
//! were written by hand before the schemas were derived from each tool's `Params` type:
//! a derived schema must say what the hand-written one said.

use std::sync::Arc;

use serde_json::Value;

use super::{Registry, register_builtin};
use crate::store::EmbeddedStore;

/// Every built-in tool's listing, in name order. Key order is no part of the comparison:
/// `serde_json::Value` objects compare as maps.
fn builtin_listing() -> Value {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("mirobody-listing-{}-{nanos}", std::process::id()));
    let store: Arc<dyn crate::store::Store> =
        Arc::new(EmbeddedStore::open(dir.join("db.sqlite")).unwrap());
    let mut registry = Registry::new();
    register_builtin(&mut registry, store);
    let page = registry.page(None, &|_| true).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Value::Array(
        page.tools
            .iter()
            .map(|raw| serde_json::from_str(raw.get()).unwrap())
            .collect(),
    )
}

#[test]
fn builtin_tools_list_what_the_hand_written_schemas_said() {
    let listed = builtin_listing();
    if std::env::var_os("MIROBODY_WRITE_LISTING").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tools/listing.json");
        std::fs::write(path, serde_json::to_string_pretty(&listed).unwrap() + "\n").unwrap();
    }
    let expected: Value = serde_json::from_str(include_str!("listing.json")).unwrap();
    assert_eq!(
        listed,
        expected,
        "derived listing:\n{}",
        serde_json::to_string_pretty(&listed).unwrap()
    );
}
