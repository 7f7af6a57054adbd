//! The web console end to end in headless Chromium (issue 15): Debian's `chromium`
//! through playwright-core drives `tests/clients/console_browser.mjs` against
//! `mirobody-local`: sign up, sign out and in, change the password, upload a genome and a
//! readings file (the progress bar to 100 %), the chart, the rsid look-up, the personal URL
//! (minted, copied, used by the Python SDK client), a registered MCP server
//! (`tests/clients/remote_server.py` on loopback) and its tools, an OAuth client authorised
//! and revoked (its refresh token refused), export, and deleting the account (every
//! credential refused afterwards). Every page is shot at desktop and phone width into
//! `target/screenshots/` (`scripts/screenshots` runs just this test).
//!
//! The script reports a step whose page is a stub ("Coming soon.") as SKIPPED (it was
//! written while the pages were); every page is built now, so a skipped step fails here.

use std::path::{Path, PathBuf};

use e2e::remote_server::RemoteServer;
use e2e::{Server, binary, python, root, run_client};
use serde_json::Value;

const CHROMIUM: &str = "/usr/bin/chromium";
const REMOTE_TOKEN: &str = "console-remote-bearer-9d3a61";

/// The pages shot at both widths.
const PAGES: [&str; 11] = [
    "signin",
    "signup",
    "password",
    "data",
    "indicator",
    "genome",
    "upload",
    "connect",
    "servers",
    "access",
    "account",
];
const WIDTHS: [u32; 2] = [1280, 390];

/// `node`, with Chromium and playwright-core in place.
fn node_with_browser() -> PathBuf {
    assert!(
        Path::new(CHROMIUM).exists(),
        "Chromium is missing ({CHROMIUM}): run scripts/install-test-deps (scripts/test does), \
         which installs Debian's chromium"
    );
    assert!(
        root()
            .join("tests/clients/node_modules/playwright-core")
            .exists(),
        "the npm packages are missing (tests/clients/node_modules/playwright-core): \
         run scripts/install-test-deps (scripts/test does)"
    );
    PathBuf::from("node")
}

/// `target/screenshots` of the target directory these tests were built in.
fn screenshot_dir() -> PathBuf {
    let debug = binary("mirobody-local");
    debug
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/mirobody-local")
        .join("screenshots")
}

#[test]
fn chromium_walks_the_console_from_sign_up_to_account_deletion() {
    let node = node_with_browser();
    let remote = RemoteServer::start(&["--token", REMOTE_TOKEN]);
    let server = Server::start(&[
        ("MIROBODY_REMOTE_DEV_LOOPBACK", "true"),
        ("MIROBODY_REMOTE_TIMEOUT_SECS", "10"),
    ]);
    let shots = screenshot_dir();
    let _ = std::fs::remove_dir_all(&shots);
    let script = root().join("tests/clients/console_browser.mjs");
    let python = python();
    let report = run_client(
        &node,
        &[
            script.to_str().unwrap(),
            &server.base,
            "--screenshots",
            shots.to_str().unwrap(),
            "--python",
            python.to_str().unwrap(),
            "--remote",
            &remote.url(),
            "--remote-token",
            REMOTE_TOKEN,
        ],
    );
    println!("console screenshots: {}", shots.display());
    println!("console_browser report: {report}");
    let steps = report["steps"].as_array().expect("steps");
    for step in steps {
        println!(
            "step {}: {}",
            step["name"].as_str().unwrap_or_default(),
            step["status"].as_str().unwrap_or_default().to_uppercase()
        );
    }
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["off_loopback_requests"], Value::Array(vec![]));
    assert_eq!(report["csp_violations"], Value::Array(vec![]));
    let status = |name: &str| -> String {
        steps
            .iter()
            .find(|s| s["name"] == name)
            .and_then(|s| s["status"].as_str())
            .unwrap_or_else(|| panic!("no step {name}: {report}"))
            .to_string()
    };
    // Every step of the flow, each passed (none skipped: every page is built).
    for name in [
        "signup",
        "signout_signin",
        "password",
        "upload_genome",
        "upload_readings",
        "chart",
        "genome_lookup",
        "personal_url",
        "mcp_server",
        "oauth_revoke",
        "screenshots",
        "export",
        "delete_account",
    ] {
        assert_eq!(status(name), "passed", "{name}: {report}");
    }
    for step in steps {
        assert_eq!(step["status"], "passed", "{step}");
    }
    let signup = steps.iter().find(|s| s["name"] == "signup").unwrap();
    assert_eq!(signup["cookie"]["httpOnly"], true);
    assert_eq!(signup["cookie"]["sameSite"], "Lax");
    let again = steps
        .iter()
        .find(|s| s["name"] == "signout_signin")
        .unwrap();
    assert_eq!(again["replayed_cookie_status"], 303, "{again}");
    assert_eq!(again["back_to"], "/console/account", "{again}");
    if status("upload_readings") == "passed" {
        let upload = steps
            .iter()
            .find(|s| s["name"] == "upload_readings")
            .unwrap();
        assert_eq!(upload["progress"], 100, "{upload}");
    }
    if status("delete_account") == "passed" {
        let deleted = steps
            .iter()
            .find(|s| s["name"] == "delete_account")
            .unwrap();
        assert_eq!(deleted["refused"]["password"], 401, "{deleted}");
    }

    // Every page at both widths.
    for page in PAGES {
        for width in WIDTHS {
            let file = shots.join(format!("{page}-{width}.png"));
            let size = std::fs::metadata(&file)
                .unwrap_or_else(|_| panic!("no screenshot {}", file.display()))
                .len();
            assert!(size > 1000, "{}: {size} bytes", file.display());
        }
    }
}
