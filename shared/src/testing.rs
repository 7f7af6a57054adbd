//! Test support shared by the library's own tests and the end-to-end tests (feature
//! `testing`): a local moto server, and the product's MCP client as the conformance
//! suite drives it ([`conformance_client`]). Never compiled into a deployed function.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use crate::remote::conformance::run as conformance_client;

/// A moto server (DynamoDB + Secrets Manager emulator) on a free loopback port,
/// stopped on drop. Fails with the install hint when moto is missing.
pub struct Moto {
    child: Child,
    pub endpoint: String,
    log: PathBuf,
}

impl Moto {
    pub fn start() -> Moto {
        // The serialising wrapper (infra/moto-serial) under the venv's Python, unless
        // MOTO_SERVER names another server executable.
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root")
            .to_path_buf();
        let (binary, script) = match std::env::var_os("MOTO_SERVER") {
            Some(server) => (PathBuf::from(server), None),
            None => (
                root.join(".venv/bin/python"),
                Some(root.join("infra/moto-serial")),
            ),
        };
        assert!(
            binary.is_file(),
            "{} not found: run scripts/install-test-deps (it installs moto[server] into .venv), \
             or set MOTO_SERVER to a moto server executable",
            binary.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let log =
            std::env::temp_dir().join(format!("mirobody-moto-{}-{port}.log", std::process::id()));
        let log_file = std::fs::File::create(&log).expect("moto log file");
        let child = Command::new(&binary)
            .args(script.iter().map(|s| s.as_os_str()))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log handle"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; run scripts/install-test-deps",
                    binary.display()
                )
            });
        let mut moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return moto;
            }
            if let Ok(Some(status)) = moto.child.try_wait() {
                panic!(
                    "moto_server exited ({status}) before listening:\n{}",
                    moto.log_tail()
                );
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen within 30 s:\n{}",
                moto.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}
