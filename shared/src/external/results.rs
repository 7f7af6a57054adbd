//! A forwarded tool result cut down to the gateway's result limit.
//!
//! Owns the rule: a remote `tools/call` result whose content and `structuredContent`
//! serialise to more than the limit (`MCP_REMOTE_RESULT_MAX_BYTES`, 256 KiB by default)
//! keeps its content items in order while they fit, the first text item that does not
//! fit cut at a character boundary, then a text note saying how many bytes were left
//! out. `structuredContent` stays whole when it takes at most half the limit (the
//! content gets the rest), else it is left out; when it is left out of a result whose tool declares an `outputSchema`, the result is an error result
//! (a client that validates structured results would refuse it otherwise). Sizes are the
//! items' JSON bytes as they go on the wire. Never logs a result.

use std::io;

use serde_json::{Value, json};

use crate::tools::ToolOutput;

/// The default of `MCP_REMOTE_RESULT_MAX_BYTES` (a setting, so `config` owns it).
pub(crate) use crate::config::DEFAULT_REMOTE_RESULT_MAX_BYTES as DEFAULT_RESULT_MAX_BYTES;

/// `output` (a forwarded result) within `max` bytes of content; other outputs as they
/// are. `declares_output`: the tool declared an `outputSchema`.
pub(super) fn bounded(output: ToolOutput, max: usize, declares_output: bool) -> ToolOutput {
    let ToolOutput::Forwarded {
        content,
        structured_content,
        is_error,
    } = output
    else {
        return output;
    };
    let sizes: Vec<usize> = content.iter().map(json_len).collect();
    let structured_size = structured_content.as_ref().map_or(0, json_len);
    let total = sizes.iter().sum::<usize>() + structured_size;
    if total <= max {
        return ToolOutput::Forwarded {
            content,
            structured_content,
            is_error,
        };
    }
    let had_structured = structured_content.is_some();
    let structured = structured_content.filter(|_| structured_size <= max / 2);
    let room = max
        - if structured.is_some() {
            structured_size
        } else {
            0
        };
    let mut kept = Vec::new();
    let mut used = 0usize;
    for (item, size) in content.into_iter().zip(sizes) {
        if used + size <= room {
            used += size;
            kept.push(item);
            continue;
        }
        if let Some(cut) = cut_text(&item, room - used) {
            used += json_len(&cut);
            kept.push(cut);
        }
        break;
    }
    if structured.is_some() {
        used += structured_size;
    }
    let dropped_structured = had_structured && structured.is_none();
    let also = if dropped_structured {
        " (its structured content was left out too)"
    } else {
        ""
    };
    kept.push(json!({
        "type": "text",
        "text": format!(
            "[truncated: {} bytes omitted by mirobody; the remote tool's result was larger than {}{also}. If you need the rest, call the tool again asking for less, e.g. a narrower range or fewer items]",
            total - used,
            size_text(max),
        ),
    }));
    ToolOutput::Forwarded {
        content: kept,
        structured_content: structured,
        is_error: is_error || (dropped_structured && declares_output),
    }
}

/// A limit as a person writes it: `256 KB` for whole KiB, else bytes.
pub(super) fn size_text(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// A text content item cut so that it serialises to at most `room` bytes, or `None`
/// (not a text item, or no room for any of its text).
fn cut_text(item: &Value, room: usize) -> Option<Value> {
    if item.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    let text = item.get("text").and_then(Value::as_str)?;
    let mut empty = item.clone();
    empty["text"] = Value::String(String::new());
    let budget = room.checked_sub(json_len(&empty))?;
    let mut end = 0usize;
    let mut size = 0usize;
    for (at, c) in text.char_indices() {
        let width = escaped_len(c);
        if size + width > budget {
            break;
        }
        size += width;
        end = at + c.len_utf8();
    }
    if end == 0 {
        return None;
    }
    let mut cut = empty;
    cut["text"] = Value::String(text[..end].to_string());
    Some(cut)
}

/// How many bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The bytes `value` serialises to, counted without building the text.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(usize::MAX, |()| count.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forwarded(content: Vec<Value>, structured: Option<Value>) -> ToolOutput {
        ToolOutput::Forwarded {
            content,
            structured_content: structured,
            is_error: false,
        }
    }

    fn parts(output: ToolOutput) -> (Vec<Value>, Option<Value>, bool) {
        match output {
            ToolOutput::Forwarded {
                content,
                structured_content,
                is_error,
            } => (content, structured_content, is_error),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_result_within_the_limit_is_untouched() {
        let content = vec![json!({"type": "text", "text": "small"})];
        let (out, structured, is_error) = parts(bounded(
            forwarded(content.clone(), Some(json!({"n": 1}))),
            1024,
            true,
        ));
        assert_eq!(out, content);
        assert_eq!(structured, Some(json!({"n": 1})));
        assert!(!is_error);
    }

    #[test]
    fn a_large_result_is_cut_at_a_character_boundary_with_a_note() {
        // Multi-byte and escaped characters: the cut never splits one.
        let text = "é\"\n".repeat(1000);
        let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
        let content = vec![
            image.clone(),
            json!({"type": "text", "text": text}),
            json!({"type": "text", "text": "after"}),
        ];
        let total: usize = content.iter().map(json_len).sum();
        let (out, structured, is_error) = parts(bounded(
            forwarded(content, Some(json!({"big": text}))),
            1000,
            true,
        ));
        assert_eq!(out[0], image, "items before the cut are kept as they are");
        assert_eq!(out.len(), 3, "{out:?}");
        let cut = out[1]["text"].as_str().unwrap();
        assert!(text.starts_with(cut) && !cut.is_empty());
        let kept = json_len(&out[0]) + json_len(&out[1]);
        assert!(kept <= 1000 && kept > 990, "{kept}");
        let note = out[2]["text"].as_str().unwrap();
        let omitted = total + json_len(&json!({"big": text})) - kept;
        assert!(
            note.starts_with(&format!("[truncated: {omitted} bytes omitted by mirobody")),
            "{note}"
        );
        assert!(note.contains("structured content was left out"), "{note}");
        assert_eq!(structured, None);
        assert!(
            is_error,
            "a declared output schema without structured content"
        );
    }

    #[test]
    fn small_structured_content_stays_whole() {
        let content = vec![json!({"type": "text", "text": "x".repeat(5000)})];
        let (out, structured, is_error) = parts(bounded(
            forwarded(content, Some(json!({"n": 1}))),
            2048,
            false,
        ));
        assert_eq!(structured, Some(json!({"n": 1})));
        assert!(!is_error);
        assert!(
            !out.last().unwrap()["text"]
                .as_str()
                .unwrap()
                .contains("structured")
        );
        assert_eq!(size_text(DEFAULT_RESULT_MAX_BYTES), "256 KB");
    }
}
