//! Arbitrary bytes as the body of `POST /mcp` through `App::handle`: the JSON-RPC parse
//! and dispatch path. The first byte picks the variant: anonymous, signed in, or a
//! JSON-RPC envelope around the rest (a method from the list, the rest as `params`), or a
//! tool call (a tool from the list, the rest as its `arguments`), so
//! the fuzzer reaches the methods and tools without having to find the envelope first.

use super::common;

const MODERN: &str = "2026-07-28";

const METHODS: &[&str] = &[
    "initialize",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
];

const TOOLS: &[&str] = &[
    "query_health_indicators",
    "get_genetic_data",
    "no_such_tool",
];

/// The body of the `mcp_request` fuzz target: one input.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let app = common::fuzzed();
    let bearer = app.bearer();
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    if mode & 1 == 1 {
        headers.push(("authorization", &bearer));
    }
    match mode >> 1 & 3 {
        // The bytes as they are, without the modern headers (a 2025 client).
        0 => {
            app.send("POST", "/mcp", &headers, rest);
        }
        // The bytes as they are, with the protocol version header.
        1 => {
            headers.push(("mcp-protocol-version", MODERN));
            app.send("POST", "/mcp", &headers, rest);
        }
        // A tool call: a tool from the list and the rest as its `arguments`.
        3 => {
            let Some((&pick, arguments)) = rest.split_first() else {
                return;
            };
            let tool = TOOLS[usize::from(pick) % TOOLS.len()];
            let mut body = format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{tool}","arguments":"#
            )
            .into_bytes();
            body.extend_from_slice(arguments);
            body.extend_from_slice(b"}}");
            headers.push(("mcp-protocol-version", MODERN));
            headers.push(("mcp-method", "tools/call"));
            headers.push(("mcp-name", tool));
            app.send("POST", "/mcp", &headers, &body);
        }
        // A JSON-RPC envelope: a method from the list and the rest as `params`.
        _ => {
            let Some((&pick, params)) = rest.split_first() else {
                return;
            };
            let method = METHODS[usize::from(pick) % METHODS.len()];
            let mut body =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":"#).into_bytes();
            body.extend_from_slice(params);
            body.push(b'}');
            headers.push(("mcp-protocol-version", MODERN));
            headers.push(("mcp-method", method));
            app.send("POST", "/mcp", &headers, &body);
        }
    }
}
