//! `cargo lambda watch` as the README's "Develop with `cargo lambda`" documents it:
//! `infra/local-aws` (moto with the tables, the keys secret and the upload bucket), the
//! README's own `.lambda.env` block (read from README.md, only the two ports moved to free
//! ones), then `cargo lambda watch --env-file … --disable-cors` from cargo-lambda 1.9.2 as
//! `scripts/install-test-deps` installs it from PyPI. Through watch's address only, on the
//! real paths (`CargoLambda.toml`'s router), a person signs up (the `oauth` function),
//! uploads two readings (`data`) and reads them back through `query_health_indicators`
//! (`mcp`), each function built by watch with its own features at its first request, as
//! a developer's are. The OAuth metadata names watch's address (`MCP_PUBLIC_URL`).
//!
//! Everything stays on loopback: moto and watch listen on 127.0.0.1, and the functions'
//! AWS clients reach moto through the endpoint settings of the env file.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::{TempDir, assert_hba1c_answer, person_with_hba1c, root, rpc, send};
use serde_json::json;

/// A first request waits for watch to build its function (a lean debug build of the
/// crate, the longest part of this test on two cores).
const BUILD_WITHIN: Duration = Duration::from_secs(900);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// The README's `.lambda.env` block, as written there.
fn readme_env_file() -> String {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme
        .find("cat > .lambda.env <<'ENV'\n")
        .expect("the README writes .lambda.env")
        + "cat > .lambda.env <<'ENV'\n".len();
    let end = start
        + readme[start..]
            .find("\nENV\n")
            .expect("the .lambda.env block ends with ENV");
    readme[start..end].to_string()
}

/// `infra/local-aws` on its own port, stopped when dropped.
struct LocalAws {
    port: u16,
}

impl LocalAws {
    fn start() -> LocalAws {
        let port = free_port();
        let out = Command::new(root().join("infra/local-aws"))
            .env("MOTO_PORT", port.to_string())
            .output()
            .expect("infra/local-aws runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "infra/local-aws: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("http://127.0.0.1:{port}"),
            "its endpoint alone on stdout"
        );
        for made in [
            "created table mirobody-keys",
            "created table mirobody-data",
            "created secret mirobody-keys",
            "created bucket mirobody-uploads",
        ] {
            assert!(stderr.contains(made), "{made}: {stderr}");
        }
        LocalAws { port }
    }
}

impl Drop for LocalAws {
    fn drop(&mut self) {
        let _ = Command::new(root().join("infra/local-aws"))
            .arg("--stop")
            .env("MOTO_PORT", self.port.to_string())
            .output();
    }
}

/// `cargo lambda watch` and every process it starts (its own process group), killed
/// when dropped.
struct Watch {
    child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl Watch {
    fn start(env_file: &str, port: u16) -> Watch {
        let venv = root().join(".venv/bin");
        assert!(
            venv.join("cargo-lambda").exists(),
            "cargo-lambda is not installed: run scripts/install-test-deps (scripts/test does)"
        );
        let dir = TempDir::new("lambda-watch");
        let env_path = dir.0.join(".lambda.env");
        std::fs::write(&env_path, env_file).unwrap();
        let log = dir.0.join("watch.log");
        let path = std::env::join_paths(std::iter::once(venv).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )))
        .unwrap();
        let child = e2e::cargo()
            .args(["lambda", "watch", "--env-file"])
            .arg(&env_path)
            .args(["--disable-cors", "--invoke-address", "127.0.0.1"])
            .args(["--invoke-port", &port.to_string()])
            .env("PATH", path)
            .env("CARGO_TERM_COLOR", "never")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(&log).unwrap())
            .process_group(0)
            .spawn()
            .expect("cargo lambda watch starts");
        let watch = Watch {
            child,
            log,
            _dir: dir,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "watch did not listen on {port}:\n{}",
                watch.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        watch
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // The whole group: watch, the `cargo run`s it started and the functions.
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status();
}

fn within<T>(what: &str, watch: &Watch, answer: impl std::future::Future<Output = T>) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(async { tokio::time::timeout(BUILD_WITHIN, answer).await })
        .unwrap_or_else(|_| {
            panic!(
                "{what}: no answer within {BUILD_WITHIN:?}:\n{}",
                watch.log()
            )
        })
}

#[test]
fn cargo_lambda_watch_serves_the_real_paths_with_sign_in() {
    let aws = LocalAws::start();
    let port = free_port();
    let readme = readme_env_file();
    for setting in [
        "MIROBODY_KEYS_SECRET=",
        "MCP_PUBLIC_URL=http://127.0.0.1:9000",
        "AWS_ENDPOINT_URL_SECRETS_MANAGER=",
        "MIROBODY_UPLOAD_BUCKET=",
    ] {
        assert!(
            readme.contains(setting),
            "the README's .lambda.env sets {setting}"
        );
    }
    let env_file = readme
        .replace("127.0.0.1:5005", &format!("127.0.0.1:{}", aws.port))
        .replace("127.0.0.1:9000", &format!("127.0.0.1:{port}"));
    let watch = Watch::start(&env_file, port);
    let base = format!("http://127.0.0.1:{port}");
    let url = |path: &str| format!("{base}{path}");

    // Sign up (the oauth function, reached on its real path, with the keys secret) and
    // upload (the data function).
    let token = within(
        "POST /auth/signup, POST /api/data/health",
        &watch,
        person_with_hba1c(&base, "watch@example.com", "correct horse battery"),
    );

    // The metadata names watch's address, not the local server's default.
    let metadata = within(
        "GET /.well-known/oauth-protected-resource/mcp",
        &watch,
        send(
            "GET",
            &url("/.well-known/oauth-protected-resource/mcp"),
            &[],
            None,
        ),
    );
    assert_eq!(metadata.status, 200, "{}", metadata.body);
    assert_eq!(
        metadata.json()["resource"],
        url("/mcp"),
        "{}",
        metadata.body
    );

    // The readings back through MCP: the mcp function, as the signed-in person.
    let called = within(
        "POST /mcp",
        &watch,
        rpc(
            &url("/mcp"),
            Some(&token),
            "tools/call",
            json!({ "name": "query_health_indicators", "arguments": { "keywords": ["HbA1c"] } }),
        ),
    );
    assert_eq!(called.status, 200, "{}\n{}", called.body, watch.log());
    assert_hba1c_answer(&called.json()["result"], "cargo lambda watch");
    drop(watch);
    drop(aws);
}

/// `CargoLambda.toml` is generated from the route table: a row added, changed or removed
/// fails here until `mirobody-local routes-watch` wrote it.
#[test]
fn watchs_router_is_generated_from_the_route_table() {
    let path: &Path = &root().join("CargoLambda.toml");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text == mirobody::routes::watch_router(),
        "CargoLambda.toml is not the route table's: run \
         `cargo run -p mirobody-local -- routes-watch CargoLambda.toml`"
    );
    for line in [
        "\"/mcp\" = [\n  { method = \"POST\", function = \"mcp\" },",
        "\"/auth/signup\" = [\n  { method = \"POST\", function = \"oauth\" },",
        "\"/api/data/health\" = [\n  { method = \"POST\", function = \"data\" },",
        "\"/console/data/{indicator}\" = [\n  { method = \"GET\", function = \"console\" },",
    ] {
        assert!(text.contains(line), "{line}");
    }
}
