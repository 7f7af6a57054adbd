//! Agent scoping (A8): a URL secret that names an agent narrows the tools to that
//! agent's `ALLOWED_TOOLS_{NAME}` list, then removes its `DISALLOWED_TOOLS_{NAME}`
//! list. With neither configured, an agent URL sees no tools (documented: agent URLs
//! must configure at least one). Applies to `tools/list` and `tools/call` alike.

use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub(crate) struct AgentPolicy {
    allowed: HashMap<String, Vec<String>>,
    disallowed: HashMap<String, Vec<String>>,
}

impl AgentPolicy {
    /// Lists keyed by the upper-cased agent name (as `Config` reads them).
    pub(crate) fn new(
        allowed: HashMap<String, Vec<String>>,
        disallowed: HashMap<String, Vec<String>>,
    ) -> Self {
        AgentPolicy {
            allowed,
            disallowed,
        }
    }

    /// May `agent` (none: an ordinary caller) see and call `tool`?
    pub(crate) fn allows(&self, agent: Option<&str>, tool: &str) -> bool {
        let Some(agent) = agent else { return true };
        let key = agent.trim().to_uppercase();
        let allowed = self.allowed.get(&key);
        let disallowed = self.disallowed.get(&key);
        let base = match (allowed, disallowed) {
            (Some(list), _) => list.iter().any(|t| t == tool),
            (None, Some(_)) => true,
            (None, None) => false,
        };
        base && !disallowed.is_some_and(|list| list.iter().any(|t| t == tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> AgentPolicy {
        let lists = |pairs: &[(&str, &[&str])]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect()
        };
        AgentPolicy::new(
            lists(&[("ALLOWONLY", &["a", "b"]), ("BOTH", &["a", "b"])]),
            lists(&[("DENYONLY", &["a"]), ("BOTH", &["b"])]),
        )
    }

    #[test]
    fn allow_then_deny_and_nothing_without_lists() {
        let p = policy();
        assert!(p.allows(None, "a"));
        assert!(p.allows(Some(" allowonly "), "a") && !p.allows(Some("allowonly"), "c"));
        assert!(!p.allows(Some("denyonly"), "a") && p.allows(Some("denyonly"), "c"));
        assert!(
            p.allows(Some("both"), "a")
                && !p.allows(Some("both"), "b")
                && !p.allows(Some("both"), "c")
        );
        assert!(!p.allows(Some("unconfigured"), "a"));
    }
}
