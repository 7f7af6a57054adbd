//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`; never in a default
//! or deployed build). Thin wrappers over crate-private parsers and the address guard, so
//! the targets reach them without widening their visibility. Each answers whether the
//! input was accepted; what matters to the fuzzer is that it returns at all.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::remote::{AddressGuard, GuardPolicy, Resolver};

/// The health-readings JSON upload parser (E4).
pub fn upload_health_json(body: &[u8]) -> bool {
    crate::upload::parse_health_json(body, "fuzz").is_ok()
}

/// The health-readings CSV upload parser (E4).
pub fn upload_health_csv(body: &[u8]) -> bool {
    crate::upload::parse_health_csv(body, "fuzz").is_ok()
}

/// The genotype raw-file parser (23andMe, AncestryDNA).
pub fn upload_genotype(body: &[u8]) -> bool {
    crate::upload::parse_genotype_file(body).is_ok()
}

/// The Apple Health export parser, on the input as `export.xml` and as `export.zip`.
pub fn upload_apple_health(body: &[u8]) -> bool {
    let xml = crate::upload::stream_apple_health_xml(body, &mut |_| Ok(())).is_ok();
    let zip = crate::upload::stream_apple_health_zip(body, &mut |_| Ok(())).is_ok();
    xml || zip
}

/// A resolver that answers every name with the same addresses.
struct FixedResolver(Vec<IpAddr>);

impl Resolver for FixedResolver {
    fn resolve<'a>(&'a self, _host: &'a str, _port: u16) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        let ips = self.0.clone();
        Box::pin(async move { Ok(ips) })
    }
}

/// The address guard (D3, D9) on `raw`, a name resolving to `resolved`; with the
/// development setting (`http` to loopback) when `insecure_loopback`. Never waits: the
/// resolver answers at once.
pub async fn address_guard(raw: &str, resolved: Vec<IpAddr>, insecure_loopback: bool) -> bool {
    let policy = if insecure_loopback {
        GuardPolicy::insecure_loopback(crate::config::Runtime::Local).unwrap_or_default()
    } else {
        GuardPolicy::strict()
    };
    let guard = AddressGuard::new(policy, Arc::new(FixedResolver(resolved)));
    guard.check(raw).await.is_ok()
}
