//! D8 tool names: `mcp__<server>__<tool>`, within the 64 characters of
//! `[A-Za-z0-9_]` that hosted model APIs accept.
//!
//! Owns the mangling only. A mangled name is found again by mangling every tool of the
//! server the same way ([`namespaced_tools`]), never by parsing it back.

use sha2::{Digest, Sha256};

/// The prefix of every external tool name.
pub(super) const PREFIX: &str = "mcp__";

/// The longest name a model API accepts.
pub(super) const MAX_NAME: usize = 64;

/// Letters, digits and underscores as they are; anything else (hyphens included)
/// becomes an underscore.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `name` cut to fit with a short hash of the original `server`/`tool` pair, so two
/// long names that share their first 55 characters still differ.
fn hashed(name: &str, server: &str, tool: &str) -> String {
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME - hash.len() - 1;
    format!("{}_{hash}", &name[..keep.min(name.len())])
}

/// The tool namespace of a server name (`my-shop` → `my_shop`).
pub(super) fn namespace(server: &str) -> String {
    clean(server)
}

/// `mcp__<server>__<tool>`, cut with a hash past 64 characters.
pub(crate) fn namespaced(server: &str, tool: &str) -> String {
    let name = format!("{PREFIX}{}__{}", clean(server), clean(tool));
    if name.len() > MAX_NAME {
        hashed(&name, server, tool)
    } else {
        name
    }
}

/// The exposed name of each of `tools` (a server's tools in its own order): a tool
/// whose name collides with an earlier one once cleaned (`a-b`, `a.b`) gets the
/// hashed form, so every exposed name is unique and stable for the same list.
pub(super) fn namespaced_tools<'t>(
    server: &str,
    tools: impl IntoIterator<Item = &'t str>,
) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    tools
        .into_iter()
        .map(|tool| {
            let name = namespaced(server, tool);
            if seen.insert(name.clone()) {
                return name;
            }
            let unique = hashed(&name, server, tool);
            seen.insert(unique.clone());
            unique
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_d8() {
        assert_eq!(
            namespaced("shop", "lookup_order"),
            "mcp__shop__lookup_order"
        );
        assert_eq!(
            namespaced("my-shop", "lookup_order"),
            "mcp__my_shop__lookup_order"
        );
        assert_eq!(
            namespaced("shop", "get.order/v2 é"),
            "mcp__shop__get_order_v2__"
        );
        let long = namespaced("analytics", &"x".repeat(80));
        assert_eq!(long.len(), MAX_NAME);
        assert!(long.starts_with("mcp__analytics__xxx"), "{long}");
        let other = namespaced("analytics", &format!("{}y", "x".repeat(79)));
        assert_ne!(long, other, "the hash tells long names apart");
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }

    /// A 200-character tool of a longest-named server is exposed
    /// within the spec's 128 characters and charset, the same each time.
    #[test]
    fn long_names_stay_within_the_spec() {
        let server = "s".repeat(32);
        let tool = format!("long.{}", "n-".repeat(100));
        let twin = tool.replace('.', "-");
        let names = namespaced_tools(&server, [tool.as_str(), twin.as_str()]);
        for name in &names {
            assert!(name.len() <= MAX_NAME && MAX_NAME <= 128, "{name}");
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        }
        assert_ne!(names[0], names[1]);
        assert_eq!(
            names,
            namespaced_tools(&server, [tool.as_str(), twin.as_str()])
        );
    }

    #[test]
    fn colliding_tools_get_distinct_stable_names() {
        let names = namespaced_tools("s", ["a-b", "a.b", "c"]);
        assert_eq!(names[0], "mcp__s__a_b");
        assert_ne!(names[1], names[0]);
        assert!(names[1].starts_with("mcp__s__a_b_") && names[1].len() <= MAX_NAME);
        assert_eq!(names[2], "mcp__s__c");
        assert_eq!(names, namespaced_tools("s", ["a-b", "a.b", "c"]));
    }
}
