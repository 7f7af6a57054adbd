//! The MCP wire vocabulary, written once for both sides: the server (`mcp/`) and the
//! outbound client (`remote::mcp_client`).
//!
//! Owns the protocol version strings, the `_meta` keys, the header names and how a
//! mirrored header value is written, the `resultType` values, and the JSON-RPC error
//! codes the client must recognise. Imports nothing from the rest of the crate and
//! decides nothing: which versions a side accepts, and what it does with a request,
//! stay with that side.

use base64::Engine;
use http::HeaderName;

/// The stateless revision: requests carry `_meta`, results carry `resultType`.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

/// The revisions negotiated with the `initialize` handshake, newest first.
pub(crate) const HANDSHAKE_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Every revision this server speaks, newest first.
pub(crate) const SUPPORTED_VERSIONS: [&str; 5] = [
    MODERN_VERSION,
    HANDSHAKE_VERSIONS[0],
    HANDSHAKE_VERSIONS[1],
    HANDSHAKE_VERSIONS[2],
    HANDSHAKE_VERSIONS[3],
];

/// Revisions served statelessly, per request (the `supported` list of the
/// unsupported-version error and of `server/discover`).
pub(crate) const MODERN_VERSIONS: [&str; 1] = [MODERN_VERSION];

/// The handshake revisions that use the Streamable HTTP transport (2024-11-05 used the
/// older HTTP+SSE one), newest first.
pub(crate) const STREAMABLE_HANDSHAKE_VERSIONS: [&str; 3] = [
    HANDSHAKE_VERSIONS[0],
    HANDSHAKE_VERSIONS[1],
    HANDSHAKE_VERSIONS[2],
];

/// `_meta` keys of a 2026-07-28 request.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The log level a 2026-07-28 request asks notifications for.
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The progress token of a request (every revision).
pub(crate) const META_PROGRESS_TOKEN: &str = "progressToken";

/// `_meta` key of a 2026-07-28 result (and of `server/discover` in every revision).
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// This product's `_meta` key on a `tools/list` result: the caller's external servers
/// that did not answer, each `{"server", "error"}`.
pub(crate) const META_UNAVAILABLE_SERVERS: &str = "io.mirobody/unavailableServers";

/// Headers a 2026-07-28 request mirrors from its body.
pub(crate) const PROTOCOL_VERSION_HEADER: HeaderName =
    HeaderName::from_static("mcp-protocol-version");
pub(crate) const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");
/// A tool parameter mirrored into a header: this prefix, then the name its schema gives
/// in [`PARAM_HEADER_ANNOTATION`].
pub(crate) const PARAM_HEADER_PREFIX: &str = "mcp-param-";
/// The input-schema keyword that names a parameter's mirrored header.
pub(crate) const PARAM_HEADER_ANNOTATION: &str = "x-mcp-header";

/// The session id a handshake-era server may hand out.
pub(crate) const SESSION_ID_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// `resultType` of a finished 2026-07-28 result.
pub(crate) const RESULT_COMPLETE: &str = "complete";
/// `resultType` of a 2026-07-28 result that asks the client for input first.
pub(crate) const RESULT_INPUT_REQUIRED: &str = "input_required";

/// The JSON-RPC error code of `UnsupportedProtocolVersionError` (2026-07-28).
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// JSON-RPC's "method not found": a peer that has no such method.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params", also what 2026-07-28 answers for an unknown resource.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// "Resource not found" as servers of the earlier revisions answer it.
pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;

/// A mirrored header value: as it is when it is plain visible ASCII (inner spaces
/// allowed), else the `=?base64?…?=` sentinel form.
pub(crate) fn encode_header_value(text: &str) -> String {
    let printable = !text.is_empty() && text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let looks_encoded = text.starts_with("=?") && text.ends_with("?=");
    if printable && !padded && !looks_encoded {
        text.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }
}

/// Reads a mirrored header value back: the sentinel form decoded, anything else as it
/// is; `None` when the sentinel does not hold base64 of UTF-8 text.
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        None => Some(value.to_string()),
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_round_trip() {
        for text in [
            "plain",
            "with inner space",
            " padded",
            "Hello, 世界",
            "=?x?=",
        ] {
            assert_eq!(
                decode_header_value(&encode_header_value(text)).as_deref(),
                Some(text)
            );
        }
        assert_eq!(encode_header_value("plain"), "plain");
        assert!(encode_header_value(" padded").starts_with("=?base64?"));
    }
}
