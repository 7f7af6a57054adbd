//! End to end: `mirobody-local` says where it is. The banner shows the
//! listening address, the public URL, the MCP endpoint and the console; with
//! `HTTP_HOST=0.0.0.0` and no `MCP_PUBLIC_URL` it warns that the URLs it hands out read
//! `http://0.0.0.0:…` and LAN names are refused, and says what to set; with
//! `MCP_PUBLIC_URL` set to a LAN address there is no warning and requests naming that
//! host work. (It binds every interface; the tests connect through 127.0.0.1 and name
//! the LAN host in `Host`.)

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use e2e::{Reply, TempDir, binary, modern, post_json, send};
use serde_json::json;

const LAN: &str = "192.168.1.50:18060";

struct Started {
    child: Child,
    /// The first line and the banner lines after it.
    banner: Vec<String>,
    port: u16,
    _data: TempDir,
}

impl Started {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Stops the server and returns everything it wrote to stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        stderr
    }
}

fn start(env: &[(&str, &str)]) -> Started {
    let data = TempDir::new("lan");
    let mut command = Command::new(binary("mirobody-local"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .env("HTTP_HOST", "0.0.0.0")
        .env("HTTP_PORT", "0")
        .env("MIROBODY_DATA_DIR", &data.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("mirobody-local starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut banner = Vec::new();
    for _ in 0..4 {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a banner line");
        banner.push(line.trim_end().to_string());
    }
    let port = banner[0]
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {:?}", banner[0]));
    Started {
        child,
        banner,
        port,
        _data: data,
    }
}

async fn tools_list(server: &Started, host: Option<&str>) -> Reply {
    let (mut headers, body) = modern(1, "tools/list", json!({}));
    if let Some(host) = host {
        headers.push(("host".into(), host.into()));
    }
    post_json(&server.url("/mcp"), &headers, &body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_interfaces_without_a_public_url_warn_and_say_what_to_set() {
    let server = start(&[]);
    let port = server.port;
    assert_eq!(
        server.banner[0],
        format!("mirobody-local listening on http://0.0.0.0:{port}")
    );
    let banner = server.banner[1..].join("\n");
    assert!(
        banner.contains(&format!("public URL:   http://0.0.0.0:{port}")),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("MCP endpoint: http://0.0.0.0:{port}/mcp")),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("web console:  http://0.0.0.0:{port}/")),
        "{banner}"
    );

    // What the warning says is what happens: the URLs handed out name 0.0.0.0, and a
    // request naming this machine by a LAN address is refused.
    let metadata = send(
        "GET",
        &server.url("/.well-known/oauth-authorization-server"),
        &[],
        None,
    )
    .await;
    assert_eq!(
        metadata.json()["issuer"],
        json!(format!("http://0.0.0.0:{port}"))
    );
    let lan = tools_list(&server, Some(&format!("192.168.1.50:{port}"))).await;
    assert_eq!(lan.status, 403, "{}", lan.body);
    let local = tools_list(&server, None).await;
    assert_eq!(local.status, 200, "{}", local.body);

    let stderr = server.stop();
    let warning = stderr
        .lines()
        .find(|l| l.contains("warning"))
        .unwrap_or_else(|| panic!("no warning in {stderr}"));
    assert!(warning.contains("HTTP_HOST=0.0.0.0"), "{warning}");
    assert!(
        warning.contains(&format!("http://0.0.0.0:{port}/...")),
        "{warning}"
    );
    assert!(warning.contains("refused with 403"), "{warning}");
    assert!(
        warning.contains(&format!("MCP_PUBLIC_URL=http://<your-lan-ip>:{port}")),
        "{warning}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_lan_public_url_the_banner_shows_it_and_that_host_works() {
    let public = format!("http://{LAN}");
    let server = start(&[("MCP_PUBLIC_URL", &public)]);
    let banner = server.banner[1..].join("\n");
    assert!(
        banner.contains(&format!("public URL:   {public}   (MCP_PUBLIC_URL)")),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("MCP endpoint: {public}/mcp")),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("web console:  {public}/")),
        "{banner}"
    );

    // A client on the LAN names the public URL's host (and a browser page on it, its origin).
    let answer = tools_list(&server, Some(LAN)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.json()["result"]["tools"].is_array());
    let page = send(
        "GET",
        &server.url("/console/signin"),
        &[
            ("host".into(), LAN.into()),
            ("origin".into(), public.clone()),
        ],
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let metadata = send(
        "GET",
        &server.url("/.well-known/oauth-authorization-server"),
        &[("host".into(), LAN.into())],
        None,
    )
    .await;
    assert_eq!(metadata.json()["issuer"], json!(public));
    // Another LAN name is still refused.
    let other = tools_list(&server, Some("192.168.1.51:18060")).await;
    assert_eq!(other.status, 403, "{}", other.body);

    let stderr = server.stop();
    assert!(
        !stderr.contains("warning"),
        "no warning with MCP_PUBLIC_URL: {stderr}"
    );
}
