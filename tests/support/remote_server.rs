//! `tests/clients/remote_server.py` (the Python SDK's MCP server: tools `lookup_order`,
//! `create_ticket`, `always_fails`, `stall`; `--metadata` and `--long-name` add the
//! metadata and long-name tools) on a free loopback port, for tests that
//! register a person's own MCP server; killed on drop.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{python, root};

pub struct RemoteServer {
    child: Child,
    pub port: u16,
}

impl RemoteServer {
    /// Starts it with these options (`--token T`, `--header NAME:VALUE`), waiting until
    /// it accepts connections.
    pub fn start(args: &[&str]) -> RemoteServer {
        let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .expect("a free port")
            .local_addr()
            .expect("its address")
            .port();
        let mut child = Command::new(python())
            .arg(root().join("tests/clients/remote_server.py"))
            .arg(port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the Python MCP server starts");
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(stderr) = child.stderr.as_mut() {
                    let _ = stderr.read_to_string(&mut err);
                }
                panic!("remote_server.py exited ({status}): {err}");
            }
            assert!(Instant::now() < deadline, "remote_server.py did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        RemoteServer { child, port }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
