//! "Ask me first" (a server's `ask_first` control): a call of a tool the server does
//! not annotate read-only runs only once the person said yes to that very call, asked
//! through form-mode elicitation in a multi-round request (2026-07-28 `input_required`).
//!
//! Owns the question, the request state that binds the answer to the account, the
//! exposed tool name and the arguments for [`VALID_SECS`] (sealed with the keys
//! secret's AES-GCM key, so any instance can read it back), and the reading of the
//! answer. A client that cannot be asked is refused in words the model can pass on.
//! Must not: call the tool, read the store, or log the arguments (health data).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::identity::Sealer;
use crate::tools::{Retry, ToolOutput};

/// The key of the one question in `inputRequests` and of its answer.
const QUESTION: &str = "approve";

/// How long a question may wait for its answer.
const VALID_SECS: u64 = 600;

/// At most this much of the arguments is shown in the question.
const MAX_SHOWN_ARGUMENTS: usize = 1_000;

/// What the caller's approval allows.
#[derive(Debug)]
pub(super) enum Approval {
    /// The person said yes to this call: run it.
    Granted,
    /// Ask (the `input_required` result), or refused: answer this instead of running.
    Answer(ToolOutput),
}

/// The call being approved: who, which tool under which name, with what.
pub(super) struct Pending<'a> {
    pub user: &'a str,
    pub server: &'a str,
    /// The remote tool's own name (what the person recognises).
    pub tool: &'a str,
    /// The name the model called (what the answer is bound to).
    pub exposed: &'a str,
    pub arguments: &'a Map<String, Value>,
}

/// What the request state holds: the call it was asked for and until when.
#[derive(Serialize, Deserialize)]
struct Asked {
    tool: String,
    arguments: String,
    until: u64,
}

fn binding(user: &str) -> String {
    format!("mcp-approval:v1:{user}")
}

/// The arguments' digest: a retry must carry exactly the arguments that were approved.
fn digest(arguments: &Map<String, Value>) -> String {
    let bytes = serde_json::to_vec(arguments).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// The decision for `call`: granted by a valid yes, else the question (when the client
/// can be asked) or a refusal.
pub(super) fn decide(
    sealer: &Sealer,
    call: &Pending<'_>,
    can_ask: bool,
    retry: Result<Retry<'_>, String>,
    now: u64,
) -> Approval {
    let retry = match retry {
        Ok(retry) => retry,
        Err(why) => return Approval::Answer(ToolOutput::InvalidParams(why)),
    };
    let answer = retry
        .input_responses
        .and_then(|answers| answers.get(QUESTION));
    let Some(answer) = answer else {
        return if can_ask {
            Approval::Answer(question(sealer, call, now))
        } else {
            Approval::Answer(ToolOutput::Error(cannot_ask(call)))
        };
    };
    let asked = retry
        .request_state
        .and_then(|state| sealer.open(state, &binding(call.user)))
        .and_then(|plain| serde_json::from_slice::<Asked>(&plain).ok());
    let Some(asked) = asked else {
        return Approval::Answer(ToolOutput::InvalidParams(
            "requestState integrity check failed".into(),
        ));
    };
    if asked.tool != call.exposed || asked.arguments != digest(call.arguments) {
        return Approval::Answer(ToolOutput::InvalidParams(
            "the answer is for another call: call the tool again to be asked anew".into(),
        ));
    }
    if now > asked.until {
        // Too old to count: asked again, if the client can be.
        return Approval::Answer(if can_ask {
            question(sealer, call, now)
        } else {
            ToolOutput::Error(cannot_ask(call))
        });
    }
    if said_yes(answer) {
        Approval::Granted
    } else {
        Approval::Answer(ToolOutput::Error(format!(
            "The user said no to running {:?} on their MCP server {:?}; it was not run. Do not call it again unless the user asks you to.",
            call.tool, call.server
        )))
    }
}

/// Only an accepted form with `approve: true` is a yes.
fn said_yes(answer: &Value) -> bool {
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer
            .get("content")
            .and_then(|content| content.get(QUESTION))
            .and_then(Value::as_bool)
            == Some(true)
}

fn shown_arguments(arguments: &Map<String, Value>) -> String {
    let text = Value::Object(arguments.clone()).to_string();
    if text.chars().count() <= MAX_SHOWN_ARGUMENTS {
        return text;
    }
    let cut: String = text.chars().take(MAX_SHOWN_ARGUMENTS).collect();
    format!("{cut}…")
}

/// The `input_required` result: one form question, and the sealed state of the call.
fn question(sealer: &Sealer, call: &Pending<'_>, now: u64) -> ToolOutput {
    let asked = Asked {
        tool: call.exposed.to_string(),
        arguments: digest(call.arguments),
        until: now + VALID_SECS,
    };
    let plain = serde_json::to_vec(&asked).unwrap_or_default();
    let state = sealer.seal(&plain, &binding(call.user));
    let message = format!(
        "Your AI wants to run {:?} on your MCP server {:?}. The server does not mark it read-only, so it may change something there. Arguments: {}",
        call.tool,
        call.server,
        shown_arguments(call.arguments)
    );
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    QUESTION: {
                        "type": "boolean",
                        "title": "Run it",
                        "description": "Yes runs this one call; no leaves it unrun.",
                        "default": false
                    }
                },
                "required": [QUESTION]
            }
        }
    });
    let mut requests = Map::new();
    requests.insert(QUESTION.into(), request);
    ToolOutput::InputRequired {
        input_requests: requests,
        request_state: Some(state),
    }
}

fn cannot_ask(call: &Pending<'_>) -> String {
    format!(
        "{:?} on the MCP server {:?} was not run: the user wants to approve each call of this server's tools that can change things, and this AI app cannot ask them (it does not support MCP form elicitation). Tell the user; they can allow these calls by turning off \"Ask me before a tool that can change things runs\" for {:?} in their MCP server settings, or use an app that can ask.",
        call.tool, call.server, call.server
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::new(&[7u8; 32])
    }

    fn args() -> Map<String, Value> {
        json!({"title": "refund"}).as_object().cloned().unwrap()
    }

    fn pending<'a>(arguments: &'a Map<String, Value>) -> Pending<'a> {
        Pending {
            user: "u1",
            server: "shop",
            tool: "create_ticket",
            exposed: "mcp__shop__create_ticket",
            arguments,
        }
    }

    fn ask(sealer: &Sealer, call: &Pending<'_>, now: u64) -> String {
        match decide(sealer, call, true, Ok(Retry::default()), now) {
            Approval::Answer(ToolOutput::InputRequired {
                input_requests,
                request_state,
            }) => {
                let params = &input_requests[QUESTION]["params"];
                assert_eq!(params["mode"], "form");
                let message = params["message"].as_str().unwrap();
                assert!(message.contains("\"create_ticket\""), "{message}");
                assert!(message.contains("refund"), "{message}");
                request_state.unwrap()
            }
            other => panic!("expected a question, got {other:?}"),
        }
    }

    fn answer(
        sealer: &Sealer,
        call: &Pending<'_>,
        state: &str,
        reply: Value,
        now: u64,
    ) -> Approval {
        let answers = json!({ QUESTION: reply }).as_object().cloned().unwrap();
        let retry = Retry {
            input_responses: Some(&answers),
            request_state: Some(state),
        };
        decide(sealer, call, true, Ok(retry), now)
    }

    #[test]
    fn only_an_accepted_yes_to_the_same_call_in_time_runs_it() {
        let sealer = sealer();
        let arguments = args();
        let call = pending(&arguments);
        let state = ask(&sealer, &call, 1_000);
        let yes = json!({"action": "accept", "content": {"approve": true}});
        assert!(matches!(
            answer(&sealer, &call, &state, yes.clone(), 1_100),
            Approval::Granted
        ));
        for no in [
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"action": "accept", "content": {"approve": "true"}}),
        ] {
            match answer(&sealer, &call, &state, no, 1_100) {
                Approval::Answer(ToolOutput::Error(text)) => assert!(text.contains("said no")),
                other => panic!("{other:?}"),
            }
        }
        // Other arguments, another tool, another user, a forged state: not this yes.
        let other_args = json!({"title": "delete everything"})
            .as_object()
            .cloned()
            .unwrap();
        let changed = pending(&other_args);
        assert!(matches!(
            answer(&sealer, &changed, &state, yes.clone(), 1_100),
            Approval::Answer(ToolOutput::InvalidParams(_))
        ));
        let other_user = Pending {
            user: "u2",
            ..pending(&arguments)
        };
        assert!(matches!(
            answer(&sealer, &other_user, &state, yes.clone(), 1_100),
            Approval::Answer(ToolOutput::InvalidParams(_))
        ));
        let other_key = Sealer::new(&[8u8; 32]);
        assert!(matches!(
            answer(&other_key, &call, &state, yes.clone(), 1_100),
            Approval::Answer(ToolOutput::InvalidParams(_))
        ));
        // Past its time, the question is asked again.
        assert!(matches!(
            answer(&sealer, &call, &state, yes, 1_000 + VALID_SECS + 1),
            Approval::Answer(ToolOutput::InputRequired { .. })
        ));
    }

    #[test]
    fn a_client_that_cannot_ask_is_told_why_nothing_ran() {
        let arguments = args();
        match decide(
            &sealer(),
            &pending(&arguments),
            false,
            Ok(Retry::default()),
            0,
        ) {
            Approval::Answer(ToolOutput::Error(text)) => {
                assert!(text.contains("was not run"), "{text}");
                assert!(text.contains("Ask me before"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }
}
