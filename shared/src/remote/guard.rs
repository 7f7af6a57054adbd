//! The address guard (requirements D3, D9): decides whether a user-supplied URL may be connected
//! to, and to which addresses.
//!
//! Owns the rules, all applied to the *parsed* URL (the `url` crate, which is also what
//! the HTTP client sends), never to the raw string:
//!
//! - scheme `https` only; `http` only with the development setting, and then only to
//!   loopback addresses;
//! - no user information (`user:password@`); a fragment is dropped;
//! - the host is an IP literal (classified as written: the parser has already turned
//!   decimal, octal, hex, short and percent-encoded IPv4 forms into an address, and
//!   refuses IPv6 zone ids) or a name, which is resolved, and then *every* address it
//!   resolves to must be public: one internal address refuses the whole URL;
//! - IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4,
//!   Teredo) are unwrapped and the IPv4 address inside is checked as well;
//! - any port from 1 to 65535 is allowed (hosted peers accept any port on https; the
//!   address check, not the port, is what keeps internal services out).
//!
//! A [`CheckedUrl`] can only be made here; it carries the addresses that were checked so
//! the client connects to those and nothing else (no second resolution, no rebinding).

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use url::{Host, Url};

use crate::config::Runtime;

/// The one error code of every refusal here; the registration API answers it with 422.
pub(crate) const INVALID_URL_CODE: &str = "invalid_mcp_server_url";

/// Turns a host name into addresses. The guard checks whatever this returns, and the
/// client later connects to exactly those addresses; tests inject a fake.
pub(crate) trait Resolver: Send + Sync {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver (`getaddrinfo` through tokio).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, port)).await?;
            Ok(addrs.map(|addr| addr.ip()).collect())
        })
    }
}

/// What the guard lets through. The default is the production policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GuardPolicy {
    allow_insecure_loopback: bool,
}

impl GuardPolicy {
    /// The production policy: `https` only, public addresses only.
    pub(crate) const fn strict() -> Self {
        GuardPolicy {
            allow_insecure_loopback: false,
        }
    }

    /// The development setting, for tests against servers on this machine: also allows
    /// `http`, and loopback addresses (`127.0.0.0/8` and `::1` as written, not inside an
    /// IPv6 wrapper). Every other internal class stays refused, and `http` is allowed
    /// only when every address is loopback.
    ///
    /// `None` when running in Lambda, where `127.0.0.1:9001` is the Runtime API: there
    /// this setting cannot be had at all (and `Config` refuses the variable that asks
    /// for it).
    pub(crate) fn insecure_loopback(runtime: Runtime) -> Option<Self> {
        match runtime {
            Runtime::Lambda => None,
            Runtime::Local => Some(GuardPolicy {
                allow_insecure_loopback: true,
            }),
        }
    }

    pub(crate) fn allows_insecure_loopback(&self) -> bool {
        self.allow_insecure_loopback
    }
}

/// A URL that passed the guard, with the addresses that were checked. Only
/// [`AddressGuard::check`] makes one, so holding one means the check happened.
#[derive(Clone)]
pub(crate) struct CheckedUrl {
    url: Url,
    host: String,
    port: u16,
    addrs: Vec<SocketAddr>,
}

impl CheckedUrl {
    /// The parsed URL (without its fragment): what the request must be sent to.
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// The host as the URL names it: a lower-case (punycode) name, or an IP address
    /// without brackets.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// The port (the scheme's default when the URL has none).
    #[cfg(test)]
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Every checked address with the port: the only places a connection may go.
    pub(crate) fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Whether the host is an IP literal (then there is nothing to resolve).
    pub(crate) fn is_ip_literal(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok()
    }
}

/// Leaves out the path and query: they may carry a secret (a URL-embedded key).
impl fmt::Debug for CheckedUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckedUrl")
            .field("scheme", &self.url.scheme())
            .field("host", &self.host)
            .field("port", &self.port)
            .field("addrs", &self.addrs)
            .finish()
    }
}

/// Why a URL was refused. Messages name the host or address at most: never the URL,
/// its user information, path or query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GuardError {
    /// Not a URL (the parser's reason; it never quotes the input).
    Parse(url::ParseError),
    /// A scheme other than `https` (or `http` under the development setting).
    Scheme { scheme: String },
    /// User information (`name:secret@`) in the URL.
    Userinfo,
    /// No host, or port 0.
    Host(&'static str),
    /// `http` to a non-loopback address under the development setting.
    InsecureNotLoopback { host: String },
    /// The name did not resolve.
    Resolve { host: String, detail: String },
    /// The name resolved to no address.
    NoAddresses { host: String },
    /// An address that is not public. `name` is the host name when the address came
    /// from resolving it, `None` for an IP literal.
    NotPublic {
        name: Option<String>,
        addr: IpAddr,
        reason: String,
    },
}

impl GuardError {
    /// The stable code; the same for every refusal.
    #[cfg(test)]
    pub(crate) fn code(&self) -> &'static str {
        INVALID_URL_CODE
    }
}

impl fmt::Display for GuardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardError::Parse(err) => write!(f, "not a valid URL: {err}"),
            GuardError::Scheme { scheme } => {
                write!(
                    f,
                    "scheme `{scheme}` is not allowed: the URL must use https"
                )
            }
            GuardError::Userinfo => {
                f.write_str("the URL must not carry credentials before the host (`…@`)")
            }
            GuardError::Host(why) => write!(f, "invalid host: {why}"),
            GuardError::InsecureNotLoopback { host } => write!(
                f,
                "plain http is allowed only to loopback addresses (development setting); \
                 {host} is not loopback"
            ),
            GuardError::Resolve { host, detail } => {
                write!(f, "could not resolve {host}: {detail}")
            }
            GuardError::NoAddresses { host } => write!(f, "{host} resolves to no address"),
            GuardError::NotPublic {
                name: Some(name),
                reason,
                ..
            } => write!(f, "{name} resolves to a non-public address ({reason})"),
            GuardError::NotPublic {
                name: None,
                addr,
                reason,
            } => write!(f, "{addr} is not a public address ({reason})"),
        }
    }
}

impl std::error::Error for GuardError {}

/// The guard: a policy and a resolver, built once and shared.
#[derive(Clone)]
pub(crate) struct AddressGuard {
    policy: GuardPolicy,
    resolver: Arc<dyn Resolver>,
}

impl AddressGuard {
    pub(crate) fn new(policy: GuardPolicy, resolver: Arc<dyn Resolver>) -> Self {
        AddressGuard { policy, resolver }
    }

    /// The guard with the operating system's resolver.
    pub(crate) fn system(policy: GuardPolicy) -> Self {
        AddressGuard::new(policy, Arc::new(SystemResolver))
    }

    pub(crate) fn policy(&self) -> GuardPolicy {
        self.policy
    }

    /// Parses `raw` and checks it and every address its host stands for.
    pub(crate) async fn check(&self, raw: &str) -> Result<CheckedUrl, GuardError> {
        let mut url = Url::parse(raw).map_err(GuardError::Parse)?;
        let insecure = match url.scheme() {
            "https" => false,
            "http" if self.policy.allow_insecure_loopback => true,
            other => {
                return Err(GuardError::Scheme {
                    scheme: other.to_string(),
                });
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(GuardError::Userinfo);
        }
        url.set_fragment(None);
        let port = url
            .port_or_known_default()
            .ok_or(GuardError::Host("no port"))?;
        if port == 0 {
            return Err(GuardError::Host("port 0"));
        }
        let (host, name, ips) = match url.host() {
            None => return Err(GuardError::Host("the URL has no host")),
            Some(Host::Ipv4(v4)) => (v4.to_string(), None, vec![IpAddr::V4(v4)]),
            Some(Host::Ipv6(v6)) => (v6.to_string(), None, vec![IpAddr::V6(v6)]),
            Some(Host::Domain(domain)) => {
                let domain = domain.to_string();
                let ips = self.resolver.resolve(&domain, port).await.map_err(|err| {
                    GuardError::Resolve {
                        host: domain.clone(),
                        detail: err.to_string(),
                    }
                })?;
                if ips.is_empty() {
                    return Err(GuardError::NoAddresses { host: domain });
                }
                (domain.clone(), Some(domain), ips)
            }
        };
        let mut addrs: Vec<SocketAddr> = Vec::with_capacity(ips.len());
        for ip in ips {
            self.admit(ip, insecure, &host, name.as_deref())?;
            let addr = SocketAddr::new(ip, port);
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        Ok(CheckedUrl {
            url,
            host,
            port,
            addrs,
        })
    }

    fn admit(
        &self,
        ip: IpAddr,
        insecure: bool,
        host: &str,
        name: Option<&str>,
    ) -> Result<(), GuardError> {
        let loopback_allowed = self.policy.allow_insecure_loopback && ip.is_loopback();
        match classify(ip) {
            Some(_) if loopback_allowed => Ok(()),
            Some(reason) => Err(GuardError::NotPublic {
                name: name.map(String::from),
                addr: ip,
                reason,
            }),
            None if insecure => Err(GuardError::InsecureNotLoopback {
                host: host.to_string(),
            }),
            None => Ok(()),
        }
    }
}

/// IPv4 networks that are not public: (network, prefix length, reason).
const IPV4_REFUSED: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this\" network"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private-use"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (
        Ipv4Addr::new(169, 254, 0, 0),
        16,
        "link-local, cloud metadata",
    ),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private-use"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private-use"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved, broadcast"),
];

/// IPv6 networks that are not public: (network, prefix length, reason). Checked before
/// the wrappers below, so `::` and `::1` are not read as IPv4-compatible.
const IPV6_REFUSED: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 128, "unspecified"),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1), 128, "loopback"),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only",
    ),
    (
        Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0),
        48,
        "benchmarking",
    ),
    (
        Ipv6Addr::new(0x2001, 0x10, 0, 0, 0, 0, 0, 0),
        28,
        "deprecated ORCHID",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "documentation",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique local, AWS metadata",
    ),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local"),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local"),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast"),
];

/// Where an IPv6 wrapper keeps its IPv4 address.
#[derive(Clone, Copy)]
enum Embedded {
    /// The last 32 bits.
    Last32,
    /// Bits 16 to 47 (6to4: `2002:AABB:CCDD::`).
    After16,
    /// The bitwise NOT of the last 32 bits (the Teredo client address).
    TeredoClient,
}

impl Embedded {
    fn extract(self, ip: Ipv6Addr) -> Ipv4Addr {
        let bits = u128::from(ip);
        let v4 = match self {
            Embedded::Last32 => bits as u32,
            Embedded::After16 => (bits >> 80) as u32,
            Embedded::TeredoClient => !(bits as u32),
        };
        Ipv4Addr::from(v4)
    }
}

/// IPv6 forms that carry an IPv4 address: (network, prefix length, name, where the
/// IPv4 address is, and `Some(reason)` when the form is refused even around a public
/// address because it is not globally reachable itself).
const IPV6_WRAPPERS: &[(Ipv6Addr, u8, &str, Embedded, Option<&str>)] = &[
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0),
        96,
        "IPv4-mapped",
        Embedded::Last32,
        None,
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0),
        96,
        "NAT64",
        Embedded::Last32,
        None,
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "local-use NAT64",
        Embedded::Last32,
        Some("local-use NAT64 prefix"),
    ),
    (
        Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0),
        16,
        "6to4",
        Embedded::After16,
        None,
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "Teredo",
        Embedded::TeredoClient,
        Some("Teredo tunnel"),
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        96,
        "IPv4-compatible",
        Embedded::Last32,
        Some("deprecated IPv4-compatible form"),
    ),
];

/// `None` for a public address, else why it is refused.
fn classify(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4).map(String::from),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    IPV4_REFUSED
        .iter()
        .find(|(net, prefix, _)| {
            let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
            bits & mask == u32::from(*net) & mask
        })
        .map(|(_, _, reason)| *reason)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

fn classify_v6(ip: Ipv6Addr) -> Option<String> {
    if let Some((_, _, reason)) = IPV6_REFUSED
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
    {
        return Some((*reason).to_string());
    }
    if let Some((_, _, name, embedded, refused)) = IPV6_WRAPPERS
        .iter()
        .find(|(net, prefix, ..)| in_v6(ip, *net, *prefix))
    {
        return match (classify_v4(embedded.extract(ip)), refused) {
            (Some(inner), _) => Some(format!("{name} form of {inner}")),
            (None, Some(reason)) => Some((*reason).to_string()),
            (None, None) => None,
        };
    }
    // Everything public in IPv6 is global unicast, 2000::/3.
    if !in_v6(ip, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
        return Some("not global unicast".to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Answers from a fixed table; any other name fails. Never touches real DNS.
    struct FakeResolver {
        answers: HashMap<&'static str, Vec<IpAddr>>,
        asked: Mutex<Vec<String>>,
    }

    impl FakeResolver {
        fn new() -> Self {
            let ips = |list: &[&str]| list.iter().map(|s| s.parse().unwrap()).collect();
            let answers = HashMap::from([
                ("example.com", ips(&["93.184.216.34", "2606:4700::1111"])),
                ("public-only.test", ips(&["93.184.216.34", "93.184.216.34"])),
                ("mixed.test", ips(&["93.184.216.34", "10.0.0.5"])),
                ("mixed6.test", ips(&["2606:4700::1111", "fd00::1"])),
                ("metadata.test", ips(&["169.254.169.254"])),
                ("aws-metadata6.test", ips(&["fd00:ec2::254"])),
                ("rebind.test", ips(&["127.0.0.1"])),
                ("localhost", ips(&["127.0.0.1", "::1"])),
                ("mapped.test", ips(&["::ffff:10.1.2.3"])),
                ("nat64-public.test", ips(&["64:ff9b::5db8:d822"])),
                ("cgnat.test", ips(&["100.64.1.1"])),
                ("loopback-and-private.test", ips(&["127.0.0.1", "10.0.0.1"])),
                ("empty.test", vec![]),
            ]);
            FakeResolver {
                answers,
                asked: Mutex::new(Vec::new()),
            }
        }
    }

    impl Resolver for FakeResolver {
        fn resolve<'a>(
            &'a self,
            host: &'a str,
            _port: u16,
        ) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
            self.asked.lock().unwrap().push(host.to_string());
            let answer = self.answers.get(host).cloned().ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, "name not known to the test")
            });
            Box::pin(async move { answer })
        }
    }

    enum Want {
        /// Allowed, pinned to exactly these socket addresses.
        Allow(&'static [&'static str]),
        /// Refused, the message containing this text.
        Refuse(&'static str),
    }
    use Want::{Allow, Refuse};

    const EXAMPLE: &[&str] = &["93.184.216.34:443", "[2606:4700::1111]:443"];

    /// The strict (production) policy.
    #[rustfmt::skip]
    const STRICT: &[(&str, Want)] = &[
        // IPv4 notations: the parser normalises them, the guard sees the address.
        ("https://127.0.0.1/", Refuse("loopback")),
        ("https://2130706433/", Refuse("127.0.0.1 is not a public address (loopback)")),
        ("https://0177.0.0.1/", Refuse("127.0.0.1 is not a public address (loopback)")),
        ("https://0x7f.0.0.1/", Refuse("127.0.0.1 is not a public address (loopback)")),
        ("https://0x7f000001/", Refuse("127.0.0.1 is not a public address (loopback)")),
        ("https://127.1/", Refuse("127.0.0.1 is not a public address (loopback)")),
        ("https://%31%32%37.0.0.1/", Refuse("127.0.0.1 is not a public address")),
        ("https://%30x7f.1/", Refuse("127.0.0.1 is not a public address")),
        ("https://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", Refuse("127.0.0.1 is not a public")),
        ("https://127.0.0.1./", Refuse("127.0.0.1 is not a public address")),
        ("https://0251.0376.0251.0376/", Refuse("169.254.169.254 is not a public")),
        ("https://169.254.169.254/latest/meta-data/", Refuse("link-local")),
        ("https://0/", Refuse("0.0.0.0 is not a public address (\"this\" network)")),
        ("https://0.0.0.0/", Refuse("\"this\" network")),
        ("https://10.0.0.1/", Refuse("private-use")),
        ("https://172.16.0.1/", Refuse("private-use")),
        ("https://172.31.255.255/", Refuse("private-use")),
        ("https://172.32.0.1/", Allow(&["172.32.0.1:443"])),
        ("https://192.168.1.1/", Refuse("private-use")),
        ("https://100.64.0.1/", Refuse("shared address space")),
        ("https://100.127.255.254/", Refuse("shared address space")),
        ("https://100.128.0.1/", Allow(&["100.128.0.1:443"])),
        ("https://192.0.0.8/", Refuse("IETF protocol assignments")),
        ("https://192.0.2.1/", Refuse("documentation")),
        ("https://192.88.99.1/", Refuse("6to4 relay anycast")),
        ("https://198.18.0.1/", Refuse("benchmarking")),
        ("https://198.19.255.255/", Refuse("benchmarking")),
        ("https://198.20.0.1/", Allow(&["198.20.0.1:443"])),
        ("https://198.51.100.7/", Refuse("documentation")),
        ("https://203.0.113.9/", Refuse("documentation")),
        ("https://224.0.0.1/", Refuse("multicast")),
        ("https://239.255.255.250/", Refuse("multicast")),
        ("https://240.0.0.1/", Refuse("reserved")),
        ("https://255.255.255.255/", Refuse("broadcast")),
        ("https://93.184.216.34/", Allow(&["93.184.216.34:443"])),
        // IPv6 literals.
        ("https://[::1]/", Refuse("::1 is not a public address (loopback)")),
        ("https://[0:0:0:0:0:0:0:1]/", Refuse("(loopback)")),
        ("https://[::]/", Refuse("unspecified")),
        ("https://[fd00:ec2::254]/", Refuse("unique local")),
        ("https://[fc00::1]/", Refuse("unique local")),
        ("https://[fe80::1]/", Refuse("link-local")),
        ("https://[fec0::1]/", Refuse("site-local")),
        ("https://[ff02::1]/", Refuse("multicast")),
        ("https://[100::1]/", Refuse("discard-only")),
        ("https://[2001:db8::1]/", Refuse("documentation")),
        ("https://[3fff::1]/", Refuse("documentation")),
        ("https://[2001:2::1]/", Refuse("benchmarking")),
        ("https://[4000::1]/", Refuse("not global unicast")),
        ("https://[2606:4700::1111]/", Allow(&["[2606:4700::1111]:443"])),
        // IPv6 wrappers around IPv4.
        ("https://[::ffff:127.0.0.1]/", Refuse("IPv4-mapped form of loopback")),
        ("https://[::ffff:7f00:1]/", Refuse("IPv4-mapped form of loopback")),
        ("https://[::ffff:a9fe:a9fe]/", Refuse("IPv4-mapped form of link-local")),
        ("https://[::ffff:0.0.0.0]/", Refuse("IPv4-mapped form of \"this\" network")),
        ("https://[::ffff:93.184.216.34]/", Allow(&["[::ffff:93.184.216.34]:443"])),
        ("https://[::127.0.0.1]/", Refuse("IPv4-compatible form of loopback")),
        ("https://[::93.184.216.34]/", Refuse("deprecated IPv4-compatible")),
        ("https://[64:ff9b::a9fe:a9fe]/", Refuse("NAT64 form of link-local")),
        ("https://[64:ff9b::7f00:1]/", Refuse("NAT64 form of loopback")),
        ("https://[64:ff9b::5db8:d822]/", Allow(&["[64:ff9b::5db8:d822]:443"])),
        ("https://[64:ff9b:1::a00:1]/", Refuse("local-use NAT64 form of private-use")),
        ("https://[64:ff9b:1::5db8:d822]/", Refuse("local-use NAT64 prefix")),
        ("https://[2002:a9fe:a9fe::]/", Refuse("6to4 form of link-local")),
        ("https://[2002:7f00:1::1]/", Refuse("6to4 form of loopback")),
        ("https://[2002:c0a8:101::1]/", Refuse("6to4 form of private-use")),
        ("https://[2002:5db8:d822::1]/", Allow(&["[2002:5db8:d822::1]:443"])),
        // Teredo: the client is NOT(last 32 bits); f5ff:fffe is 10.0.0.1.
        ("https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", Refuse("Teredo form of private")),
        ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", Refuse("Teredo form of loopback")),
        ("https://[2001:0:4136:e378:8000:63bf:a247:27dd]/", Refuse("Teredo tunnel")),
        // IPv6 zone ids: the parser refuses them.
        ("https://[fe80::1%25eth0]/", Refuse("invalid IPv6 address")),
        ("https://[fe80::1%eth0]/", Refuse("invalid IPv6 address")),
        ("https://[::1%251]/", Refuse("invalid IPv6 address")),
        // Names: every resolved address is checked, and pinned when all are public.
        ("https://example.com/", Allow(EXAMPLE)),
        ("https://EXAMPLE.com/mcp", Allow(EXAMPLE)),
        ("https://public-only.test/", Allow(&["93.184.216.34:443"])),
        ("https://mixed.test/", Refuse("mixed.test resolves to a non-public address (private")),
        ("https://mixed6.test/", Refuse("(unique local")),
        ("https://metadata.test/", Refuse("link-local")),
        ("https://aws-metadata6.test/", Refuse("unique local")),
        ("https://rebind.test/", Refuse("rebind.test resolves to a non-public address (loop")),
        ("https://localhost/", Refuse("loopback")),
        ("https://mapped.test/", Refuse("IPv4-mapped form of private-use")),
        ("https://nat64-public.test/", Allow(&["[64:ff9b::5db8:d822]:443"])),
        ("https://cgnat.test/", Refuse("shared address space")),
        ("https://empty.test/", Refuse("empty.test resolves to no address")),
        ("https://nxdomain.test/", Refuse("could not resolve nxdomain.test")),
        ("https://localhost./", Refuse("could not resolve localhost.")),
        ("https://127.0.0.1.nip.test/", Refuse("could not resolve 127.0.0.1.nip.test")),
        ("https://127.0.0.1.5/", Refuse("invalid IPv4 address")),
        // User information, in every spelling.
        ("https://a@b@127.0.0.1/", Refuse("must not carry credentials")),
        ("https://user:pass@example.com/", Refuse("must not carry credentials")),
        ("https://:pass@example.com/", Refuse("must not carry credentials")),
        ("https://user@example.com/", Refuse("must not carry credentials")),
        ("https://127.0.0.1:443@example.com/", Refuse("must not carry credentials")),
        ("https://example.com%40127.0.0.1/", Refuse("not a valid URL")),
        // A backslash ends the authority for https: the host is example.com.
        ("https://example.com\\@127.0.0.1/", Allow(EXAMPLE)),
        ("https://@example.com/", Allow(EXAMPLE)),
        // Schemes.
        ("http://example.com/", Refuse("scheme `http` is not allowed")),
        ("http://127.0.0.1:8080/", Refuse("scheme `http` is not allowed")),
        ("ftp://example.com/", Refuse("scheme `ftp` is not allowed")),
        ("file:///etc/passwd", Refuse("scheme `file` is not allowed")),
        ("javascript:alert(1)", Refuse("scheme `javascript` is not allowed")),
        ("data:text/plain,hi", Refuse("scheme `data` is not allowed")),
        ("wss://example.com/", Refuse("scheme `wss` is not allowed")),
        ("HTTPS://EXAMPLE.COM/", Allow(EXAMPLE)),
        // Ports: any from 1 to 65535.
        ("https://example.com:8443/mcp", Allow(&["93.184.216.34:8443", "[2606:4700::1111]:8443"])),
        ("https://example.com:443/", Allow(EXAMPLE)),
        ("https://example.com:1/", Allow(&["93.184.216.34:1", "[2606:4700::1111]:1"])),
        ("https://93.184.216.34:65535/", Allow(&["93.184.216.34:65535"])),
        ("https://example.com:0/", Refuse("port 0")),
        ("https://example.com:99999/", Refuse("invalid port number")),
        ("https://example.com:-1/", Refuse("invalid port number")),
        ("https://10.0.0.1:8443/", Refuse("private-use")),
        // Not URLs.
        ("", Refuse("not a valid URL")),
        ("example.com", Refuse("not a valid URL: relative URL without a base")),
        ("https://", Refuse("not a valid URL: empty host")),
        ("https://exa mple.com/", Refuse("not a valid URL")),
        ("  https://example.com/  ", Allow(EXAMPLE)),
        ("https://example.com/mcp?x=1#frag", Allow(EXAMPLE)),
    ];

    /// The development setting: http and loopback, nothing else internal.
    #[rustfmt::skip]
    const DEVELOPMENT: &[(&str, Want)] = &[
        ("http://127.0.0.1:8080/", Allow(&["127.0.0.1:8080"])),
        ("http://127.0.0.2/mcp", Allow(&["127.0.0.2:80"])),
        ("http://[::1]:9/", Allow(&["[::1]:9"])),
        ("http://localhost:3000/", Allow(&["127.0.0.1:3000", "[::1]:3000"])),
        ("https://127.0.0.1/", Allow(&["127.0.0.1:443"])),
        ("https://example.com/", Allow(EXAMPLE)),
        ("http://10.0.0.1/", Refuse("private-use")),
        ("http://169.254.169.254/", Refuse("link-local")),
        ("http://0.0.0.0:8080/", Refuse("\"this\" network")),
        ("http://[::ffff:127.0.0.1]/", Refuse("IPv4-mapped form of loopback")),
        ("http://[fd00:ec2::254]/", Refuse("unique local")),
        ("http://loopback-and-private.test/", Refuse("private-use")),
        ("http://example.com/", Refuse("plain http is allowed only to loopback")),
        ("http://93.184.216.34/", Refuse("plain http is allowed only to loopback")),
        ("http://user:pw@127.0.0.1/", Refuse("must not carry credentials")),
        ("ftp://127.0.0.1/", Refuse("scheme `ftp` is not allowed")),
        ("ws://127.0.0.1/", Refuse("scheme `ws` is not allowed")),
    ];

    async fn run(policy: GuardPolicy, corpus: &[(&str, Want)]) -> Vec<String> {
        let guard = AddressGuard::new(policy, Arc::new(FakeResolver::new()));
        let mut failures = Vec::new();
        for (raw, want) in corpus {
            let got = guard.check(raw).await;
            match (want, &got) {
                (Allow(addrs), Ok(checked)) => {
                    let got: Vec<String> = checked.addrs().iter().map(|a| a.to_string()).collect();
                    if got != *addrs {
                        failures.push(format!("{raw:?}: pinned {got:?}, want {addrs:?}"));
                    }
                    if checked.url().fragment().is_some() {
                        failures.push(format!("{raw:?}: fragment kept"));
                    }
                }
                (Refuse(text), Err(err)) => {
                    let message = err.to_string();
                    if !message.contains(text) {
                        failures.push(format!("{raw:?}: message {message:?} lacks {text:?}"));
                    }
                    if err.code() != INVALID_URL_CODE {
                        failures.push(format!("{raw:?}: code {}", err.code()));
                    }
                    for secret in ["pass", ":pw"] {
                        if message.contains(secret) || format!("{err:?}").contains(secret) {
                            failures.push(format!("{raw:?}: {message:?} echoes a credential"));
                        }
                    }
                }
                (Allow(_), Err(err)) => failures.push(format!("{raw:?}: refused: {err}")),
                (Refuse(_), Ok(checked)) => failures.push(format!("{raw:?}: allowed: {checked:?}")),
            }
        }
        failures
    }

    #[tokio::test]
    async fn strict_policy_corpus() {
        assert!(STRICT.len() >= 100, "the corpus shrank: {}", STRICT.len());
        let failures = run(GuardPolicy::strict(), STRICT).await;
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[tokio::test]
    async fn development_policy_corpus() {
        let policy = GuardPolicy::insecure_loopback(Runtime::Local).unwrap();
        let failures = run(policy, DEVELOPMENT).await;
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[tokio::test]
    async fn the_default_policy_is_strict_and_development_is_never_had_in_lambda() {
        assert_eq!(GuardPolicy::default(), GuardPolicy::strict());
        assert!(!GuardPolicy::default().allows_insecure_loopback());
        assert_eq!(GuardPolicy::insecure_loopback(Runtime::Lambda), None);
        let guard = AddressGuard::new(GuardPolicy::default(), Arc::new(FakeResolver::new()));
        assert!(guard.check("http://127.0.0.1:8080/").await.is_err());
        assert!(guard.check("https://[::1]/").await.is_err());
    }

    #[tokio::test]
    async fn literals_and_early_refusals_never_reach_the_resolver() {
        let resolver = Arc::new(FakeResolver::new());
        let guard = AddressGuard::new(GuardPolicy::strict(), resolver.clone());
        for raw in [
            "https://93.184.216.34/",
            "https://[2606:4700::1111]/",
            "https://user:pass@example.com/",
            "http://example.com/",
            "https://example.com:0/",
        ] {
            let _ = guard.check(raw).await;
        }
        assert!(resolver.asked.lock().unwrap().is_empty());
        guard.check("https://Example.COM./x").await.unwrap_err();
        assert_eq!(*resolver.asked.lock().unwrap(), ["example.com."]);
    }

    #[tokio::test]
    async fn a_checked_url_keeps_the_parsed_form_and_hides_path_and_query() {
        let guard = AddressGuard::new(GuardPolicy::strict(), Arc::new(FakeResolver::new()));
        let checked = guard
            .check("HTTPS://Example.COM:8443/mcp/s3cr3t?key=k3y#frag")
            .await
            .unwrap();
        assert_eq!(
            checked.url().as_str(),
            "https://example.com:8443/mcp/s3cr3t?key=k3y"
        );
        assert_eq!(checked.host(), "example.com");
        assert_eq!(checked.port(), 8443);
        assert!(!checked.is_ip_literal());
        let debug = format!("{checked:?}");
        assert!(
            !debug.contains("s3cr3t") && !debug.contains("k3y"),
            "{debug}"
        );

        let literal = guard.check("https://[2606:4700::1111]/").await.unwrap();
        assert_eq!(literal.host(), "2606:4700::1111");
        assert!(literal.is_ip_literal());
    }

    #[tokio::test]
    async fn refusals_never_echo_user_information() {
        let guard = AddressGuard::new(GuardPolicy::strict(), Arc::new(FakeResolver::new()));
        for raw in [
            "https://user:pass@example.com/",
            "https://admin:s3cr3t@127.0.0.1/",
            "https://t0ken@example.com/",
            "http://admin:s3cr3t@example.com/",
        ] {
            let err = guard.check(raw).await.unwrap_err();
            let shown = format!("{err} {err:?}");
            for secret in ["pass", "s3cr3t", "t0ken", "admin"] {
                assert!(!shown.contains(secret), "{raw}: {shown}");
            }
        }
    }

    #[test]
    fn the_tables_are_well_formed() {
        for (net, prefix, _) in IPV4_REFUSED {
            assert!(*prefix <= 32);
            let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
            assert_eq!(u32::from(*net) & !mask, 0, "{net}/{prefix} has host bits");
        }
        let v6 = IPV6_REFUSED.iter().map(|(net, prefix, _)| (*net, *prefix));
        let wrappers = IPV6_WRAPPERS
            .iter()
            .map(|(net, prefix, ..)| (*net, *prefix));
        for (net, prefix) in v6.chain(wrappers) {
            assert!(prefix <= 128);
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            assert_eq!(u128::from(net) & !mask, 0, "{net}/{prefix} has host bits");
        }
    }
}
