//! Prompts: `prompts/list` and `prompts/get`. The product itself ships none (A2:
//! the list is empty); a tool pack may register some through the same API.
// Part of the protocol surface that only the fixture pack exercises today (the product's own tools
// and catalogues do not use it yet); kept, not compiled away, so the protocol stays complete.
#![cfg_attr(not(feature = "fixtures"), allow(dead_code))]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

/// One `prompts/get` request, including a multi-round retry's answers.
pub(crate) struct PromptRequest<'a> {
    pub arguments: &'a Map<String, Value>,
    pub input_responses: Option<&'a Map<String, Value>>,
}

/// What rendering a prompt produced.
pub(crate) enum PromptOutput {
    Messages(Value),
    /// The prompt needs the client's input first (MRTR).
    InputRequired {
        input_requests: Map<String, Value>,
        request_state: Option<String>,
    },
    /// Bad arguments or a tampered state: a JSON-RPC -32602.
    Invalid(String),
}

/// Builds a prompt's messages from its request.
pub(crate) type PromptRenderer = Arc<dyn Fn(PromptRequest<'_>) -> PromptOutput + Send + Sync>;

#[derive(Clone)]
pub(crate) struct Prompt {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// `[{name, description, required}]`
    pub arguments: Vec<Value>,
    pub render: PromptRenderer,
}

#[derive(Clone, Default)]
pub(crate) struct Prompts {
    by_name: BTreeMap<String, Prompt>,
}

impl Prompts {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn add(&mut self, prompt: Prompt) -> &mut Self {
        self.by_name.insert(prompt.name.clone(), prompt);
        self
    }

    pub(crate) fn list(&self) -> Vec<Value> {
        self.by_name
            .values()
            .map(|p| {
                let mut v = json!({ "name": p.name });
                if let Some(t) = &p.title {
                    v["title"] = t.clone().into();
                }
                if let Some(d) = &p.description {
                    v["description"] = d.clone().into();
                }
                if !p.arguments.is_empty() {
                    v["arguments"] = p.arguments.clone().into();
                }
                v
            })
            .collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Prompt> {
        self.by_name.get(name)
    }
}
