//! Agent scoping (A8): a URL secret that names an agent narrows the tools to that
//! agent's `ALLOWED_TOOLS_{NAME}` list, then removes its `DISALLOWED_TOOLS_{NAME}`
//! list. With neither configured, an agent URL sees no tools (documented: agent URLs
//! must configure at least one). An agent with only a deny list sees none of the
//! owner's external tools (`mcp__…`, which no operator's list can foresee) unless an
//! allow list names them, as an allow-listed agent does. Applies to `tools/list` and
//! `tools/call` alike.

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

    /// May `agent` (none: an ordinary caller) see and call `tool` (`external`: one of
    /// the owner's own MCP servers' tools)?
    pub(crate) fn allows(&self, agent: Option<&str>, tool: &str, external: bool) -> bool {
        let Some(agent) = agent else { return true };
        let key = agent.trim().to_uppercase();
        let allowed = self.allowed.get(&key);
        let disallowed = self.disallowed.get(&key);
        let base = match (allowed, disallowed) {
            (Some(list), _) => list.iter().any(|t| t == tool),
            (None, Some(_)) => !external,
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
        let builtin = |agent, tool| p.allows(agent, tool, false);
        assert!(builtin(None, "a"));
        assert!(builtin(Some(" allowonly "), "a") && !builtin(Some("allowonly"), "c"));
        assert!(!builtin(Some("denyonly"), "a") && builtin(Some("denyonly"), "c"));
        assert!(
            builtin(Some("both"), "a")
                && !builtin(Some("both"), "b")
                && !builtin(Some("both"), "c")
        );
        assert!(!builtin(Some("unconfigured"), "a"));
    }

    /// The owner's external tools reach an ordinary caller and an agent whose allow list
    /// names them, never a deny-only agent (its list cannot foresee them).
    #[test]
    fn a_deny_only_agent_sees_no_external_tool() {
        let p = AgentPolicy::new(
            [("NAMED".to_string(), vec!["mcp__shop__lookup".to_string()])].into(),
            [("DENYONLY".to_string(), vec!["a".to_string()])].into(),
        );
        assert!(p.allows(None, "mcp__shop__lookup", true));
        assert!(!p.allows(Some("denyonly"), "mcp__shop__lookup", true));
        assert!(p.allows(Some("denyonly"), "c", false));
        assert!(p.allows(Some("named"), "mcp__shop__lookup", true));
        assert!(!p.allows(Some("named"), "mcp__shop__other", true));
    }
}
