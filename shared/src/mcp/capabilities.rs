//! The one capabilities declaration (A2): `initialize` and `server/discover` both
//! read it, so what the two announce cannot drift.

use serde_json::{Map, Value, json};

use crate::wire::{META_SERVER_INFO, MODERN_VERSIONS};

/// What the server announces about itself. Built once per process.
#[derive(Debug, Clone)]
pub(crate) struct Declaration {
    pub capabilities: Value,
    pub server_info: Value,
    pub instructions: Option<&'static str>,
}

pub(super) const INSTRUCTIONS: &str = "Reads the signed-in user's own health data. \
Call tools/list to see which tools are available for this account.";

impl Declaration {
    pub(crate) fn new(server_name: &str, with_completions: bool) -> Self {
        let mut capabilities = json!({
            "tools": { "listChanged": false },
            "resources": {},
            "prompts": {},
        });
        if with_completions {
            capabilities["completions"] = json!({});
        }
        Declaration {
            capabilities,
            server_info: json!({ "name": server_name, "version": env!("CARGO_PKG_VERSION") }),
            instructions: Some(INSTRUCTIONS),
        }
    }

    /// The legacy handshake's result body.
    pub(crate) fn initialize_result(&self, version: &str) -> Map<String, Value> {
        let mut result = Map::new();
        result.insert("protocolVersion".into(), version.into());
        result.insert("capabilities".into(), self.capabilities.clone());
        result.insert("serverInfo".into(), self.server_info.clone());
        if let Some(instructions) = self.instructions {
            result.insert("instructions".into(), instructions.into());
        }
        result.insert(
            "_meta".into(),
            json!({ META_SERVER_INFO: self.server_info }),
        );
        result
    }

    /// `server/discover`'s result body (caching fields are added by the dispatcher).
    pub(crate) fn discover_result(&self) -> Map<String, Value> {
        let mut result = Map::new();
        result.insert("supportedVersions".into(), json!(MODERN_VERSIONS));
        result.insert("capabilities".into(), self.capabilities.clone());
        if let Some(instructions) = self.instructions {
            result.insert("instructions".into(), instructions.into());
        }
        result
    }
}
