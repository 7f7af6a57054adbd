//! The architecture invariants of `ARCHITECTURE.md`, checked by reading the source, so a
//! change that breaks one fails the test run instead of waiting for a reviewer to notice.
//!
//! Each check scans the code lines of a tree (comments are skipped, and so is everything
//! after a file's `#[cfg(test)]` module: tests may speak to fakes in any vocabulary) and
//! names every offending file and line.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, relative to the workspace root, with its code lines.
fn sources(dir: &str) -> Vec<(String, Vec<(usize, String)>)> {
    let root = workspace();
    let mut files = Vec::new();
    // A folder, or one file.
    let mut stack = vec![root.join(dir)];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in fs::read_dir(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
                stack.push(entry.expect("a directory entry").path());
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            let text = fs::read_to_string(&path).expect("readable source");
            files.push((name, code_lines(&text)));
        }
    }
    files.sort();
    assert!(!files.is_empty(), "no sources under {dir}");
    files
}

/// The lines that are code: no `//` comments, nothing from a `#[cfg(test)]` line on, and
/// no files that are test modules of their own (`*_tests.rs`, `tests.rs`, `contract/`).
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match trimmed.find("//") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        if !code.trim().is_empty() {
            lines.push((number + 1, code.to_string()));
        }
    }
    lines
}

fn is_test_file(name: &str) -> bool {
    name.ends_with("_tests.rs") || name.ends_with("/tests.rs") || name.contains("/contract/")
}

/// The places in `dir` (outside `allowed` prefixes and test files) where `matches` holds.
fn offenders(dir: &str, allowed: &[&str], matches: impl Fn(&str) -> bool) -> Vec<String> {
    sources(dir)
        .into_iter()
        .filter(|(name, _)| !is_test_file(name) && !allowed.iter().any(|a| name.starts_with(a)))
        .flat_map(|(name, lines)| {
            lines
                .into_iter()
                .filter(|(_, code)| matches(code))
                .map(move |(number, code)| format!("{name}:{number}: {}", code.trim()))
        })
        .collect()
}

fn assert_none(what: &str, found: Vec<String>) {
    assert!(found.is_empty(), "{what}:\n  {}", found.join("\n  "));
}

/// A JSON-RPC error number: `-32` and three more digits.
fn has_json_rpc_number(code: &str) -> bool {
    let bytes = code.as_bytes();
    bytes.windows(6).enumerate().any(|(at, w)| {
        w.starts_with(b"-32")
            && w[3..].iter().all(u8::is_ascii_digit)
            && !bytes.get(at + 6).is_some_and(u8::is_ascii_digit)
    })
}

#[test]
fn json_rpc_error_numbers_live_only_in_mcp() {
    assert_none(
        "JSON-RPC error numbers outside shared/src/mcp/ (name them through McpError or crate::wire)",
        offenders(
            "shared/src",
            &["shared/src/mcp/", "shared/src/wire.rs"],
            has_json_rpc_number,
        ),
    );
}

#[test]
fn only_remote_makes_outbound_http_clients() {
    assert_none(
        "reqwest outside shared/src/remote/",
        offenders("shared/src", &["shared/src/remote/"], |code| {
            code.contains("reqwest")
        }),
    );
}

#[test]
fn only_store_talks_to_a_database() {
    assert_none(
        "a database client outside shared/src/store/",
        offenders("shared/src", &["shared/src/store/"], |code| {
            code.contains("aws_sdk_dynamodb") || code.contains("rusqlite")
        }),
    );
}

#[test]
fn only_store_and_key_loading_use_the_aws_sdk() {
    assert_none(
        "the AWS SDK outside shared/src/store/, shared/src/identity/keys.rs, shared/src/mail/ses.rs \
         and the configuration they share (shared/src/aws.rs)",
        offenders(
            "shared/src",
            &[
                "shared/src/aws.rs",
                "shared/src/store/",
                "shared/src/identity/keys.rs",
                "shared/src/mail/ses.rs",
            ],
            |code| code.contains("aws_sdk_") || code.contains("aws_config"),
        ),
    );
}

#[test]
fn the_library_never_sees_a_lambda_type() {
    assert_none(
        "a Lambda crate in shared/src",
        offenders("shared/src", &[], |code| {
            code.contains("lambda_http") || code.contains("lambda_runtime")
        }),
    );
    let manifest = fs::read_to_string(workspace().join("shared/Cargo.toml")).expect("manifest");
    assert!(
        !manifest.contains("lambda"),
        "shared/Cargo.toml depends on a Lambda crate"
    );
}

#[test]
fn tools_and_external_servers_never_speak_the_protocol() {
    for dir in ["shared/src/tools", "shared/src/external"] {
        assert_none(
            &format!("{dir} imports the protocol layer (mcp/ alone shapes JSON-RPC)"),
            offenders(dir, &[], |code| code.contains("crate::mcp")),
        );
    }
}

#[test]
fn binaries_only_open_services_and_serve() {
    assert_none(
        "a binary reaching into the store or identity (use Services::open)",
        offenders("functions", &[], |code| {
            code.contains("mirobody::store") || code.contains("mirobody::identity")
        }),
    );
}

#[test]
fn domain_types_stand_on_nothing() {
    assert_none(
        "shared/src/domain imports the rest of the crate (it is the ground floor)",
        offenders("shared/src/domain", &[], |code| {
            code.contains("crate::") && !code.contains("crate::domain")
        }),
    );
}

#[test]
fn upload_parsers_stay_pure() {
    assert_none(
        "shared/src/upload reaches the store (parsers return domain records; the data API writes them)",
        offenders("shared/src/upload", &[], |code| {
            code.contains("crate::store")
        }),
    );
}

/// Mail leaves only through `mail/` (SES in `mail/ses.rs`), and `mail/` knows
/// nothing of the store, the tools or the domain records: a message can carry a link
/// and an address, never a reading or a genotype.
#[test]
fn only_mail_sends_mail_and_it_never_sees_health_data() {
    assert_none(
        "Amazon SES outside shared/src/mail/ses.rs",
        offenders("shared/src", &["shared/src/mail/ses.rs"], |code| {
            code.contains("aws_sdk_sesv2")
        }),
    );
    assert_none(
        "shared/src/mail reaches the store, the tools or the domain records",
        offenders("shared/src/mail", &[], |code| {
            code.contains("crate::store")
                || code.contains("crate::tools")
                || code.contains("crate::domain")
        }),
    );
}

/// The parts table of `ARCHITECTURE.md` ("The house's parts"): each part of `shared/src`
/// and the parts it may import.
fn parts_table() -> Vec<(String, Vec<String>)> {
    let map = fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("the map");
    let (_, section) = map
        .split_once("## The house's parts")
        .expect("ARCHITECTURE.md has a section \"The house's parts\"");
    let mut parts = Vec::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let part = cells[0].trim_matches('`');
        if part == "part" || part.starts_with("---") {
            continue;
        }
        let allowed = cells[1]
            .split(',')
            .map(|name| name.trim().trim_matches('`').to_string())
            .filter(|name| !name.is_empty() && name != "—")
            .collect();
        parts.push((part.to_string(), allowed));
    }
    assert!(!parts.is_empty(), "the parts table is empty");
    parts
}

/// The part of `shared/src` a source file belongs to: its folder, or its file at the top.
fn part_of(name: &str) -> String {
    let inside = name.strip_prefix("shared/src/").expect("under shared/src");
    let first = inside.split('/').next().unwrap_or(inside);
    first.trim_end_matches(".rs").to_string()
}

/// Every `crate::<part>` a line of code names.
fn parts_named(code: &str) -> Vec<String> {
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // `crate::` itself, not the end of another path (`mirobody_crate::`).
            !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        })
        .map(|(at, _)| {
            code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|part| !part.is_empty())
        .collect()
}

#[test]
fn parts_import_only_what_the_map_allows() {
    let table = parts_table();
    let mut found = Vec::new();
    for (name, lines) in sources("shared/src") {
        if is_test_file(&name) || name == "shared/src/lib.rs" {
            continue;
        }
        let part = part_of(&name);
        let Some((_, allowed)) = table.iter().find(|(p, _)| *p == part) else {
            found.push(format!("{name}: the part `{part}` is not in the table"));
            continue;
        };
        for (number, code) in lines {
            for named in parts_named(&code) {
                if named != part && !allowed.contains(&named) {
                    found.push(format!(
                        "{name}:{number}: {part} -> {named}: {}",
                        code.trim()
                    ));
                }
            }
        }
    }
    assert_none(
        "an import the parts table of ARCHITECTURE.md does not allow",
        found,
    );
}

/// The seven nevers that were once broken, each named (the parts table says them too).
fn part_imports(dir: &str, part: &str) -> Vec<String> {
    let needle = format!("crate::{part}");
    offenders(dir, &[], move |code| {
        parts_named(code).iter().any(|named| named == part) && code.contains(&needle)
    })
}

#[test]
fn the_route_machinery_never_imports_the_console_or_the_app() {
    for part in ["console", "app"] {
        assert_none(
            &format!("shared/src/http imports {part} (rows carry their handlers in app/routes.rs)"),
            part_imports("shared/src/http", part),
        );
    }
    let lib = fs::read_to_string(workspace().join("shared/src/lib.rs")).expect("lib.rs");
    assert!(
        !lib.contains("#[path"),
        "lib.rs points a module at another file (the console is one module, built or not)"
    );
}

#[test]
fn config_stands_on_nothing() {
    assert_none(
        "shared/src/config.rs imports the rest of the crate (a setting's default lives with the setting)",
        offenders("shared/src/config.rs", &[], |code| code.contains("crate::")),
    );
}

#[test]
fn observation_never_imports_the_parts_it_observes() {
    assert_none(
        "shared/src/observe imports the rest of the crate (its contract types live in observe/)",
        offenders("shared/src/observe", &[], |code| {
            code.contains("crate::") && !code.contains("crate::observe")
        }),
    );
}

#[test]
fn imports_never_reach_the_services_or_the_api() {
    assert_none(
        "shared/src/imports takes Services (Services::importer builds the runner)",
        part_imports("shared/src/imports", "services"),
    );
    assert_none(
        "shared/src/imports imports api (the REST side stands on the runner; the envelope is http::Success)",
        part_imports("shared/src/imports", "api"),
    );
}

/// One envelope: the REST success body is written in `http/success.rs` only (handlers
/// answer `Success`), as the refusals are in `http/error.rs`.
#[test]
fn the_success_envelope_is_rendered_once() {
    assert_none(
        "a success envelope written outside shared/src/http/success.rs (return http::Success)",
        offenders("shared/src", &["shared/src/http/success.rs"], |code| {
            code.contains("\"msg\": \"ok\"")
                || code.contains("http::ok(")
                || code.contains("web::ok(")
        }),
    );
}

#[test]
fn the_console_never_calls_the_store() {
    assert_none(
        "shared/src/console reaches the store (it calls the typed cores: AccountApi, DataApi, …)",
        offenders("shared/src/console", &[], |code| {
            code.contains("crate::store") || code.contains(".store") || code.contains("dyn Store")
        }),
    );
}

#[test]
fn the_mcp_client_never_imports_the_server_side() {
    assert_none(
        "shared/src/remote imports mcp/ (the shared vocabulary is crate::wire)",
        part_imports("shared/src/remote", "mcp"),
    );
    assert_none(
        "shared/src/wire.rs imports the rest of the crate (it is shared ground)",
        offenders("shared/src/wire.rs", &[], |code| code.contains("crate::")),
    );
}
