//! The address guard (D3, D9): the rest of the input, as text, is the URL a user gives;
//! a name in it resolves to the addresses taken from the first bytes (up to two IPv4 and
//! one IPv6 address), under the strict policy or the development one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    })
}

/// The body of the `address_guard` fuzz target: one input.
pub fn run(data: &[u8]) {
    if data.len() < 25 {
        return;
    }
    let (head, url) = data.split_at(25);
    let mode = head[0];
    let v4 = |b: &[u8]| IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]));
    let mut v6 = [0u8; 16];
    v6.copy_from_slice(&head[9..25]);
    let resolved: Vec<IpAddr> = [
        v4(&head[1..5]),
        v4(&head[5..9]),
        IpAddr::V6(Ipv6Addr::from(v6)),
    ]
    .into_iter()
    .take(usize::from(mode >> 1) % 4)
    .collect();
    let url = String::from_utf8_lossy(url);
    runtime().block_on(mirobody::fuzzing::address_guard(
        &url,
        resolved,
        mode & 1 == 1,
    ));
}
