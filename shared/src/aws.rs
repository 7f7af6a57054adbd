//! The AWS SDK's configuration, loaded once per process: region and credentials from the
//! environment (Lambda's own, or the test's), and one HTTP client (hyper 1 and rustls on
//! ring, the platform's root certificates, connections pooled), shared by every service
//! client the process makes. Each client adds its own timeouts and endpoint override.
//!
//! Owns no service client and sends nothing: the stores, the keys and the mail sender
//! build their clients from [`AwsConfig::shared`].

use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use tokio::sync::OnceCell;

/// The process's SDK configuration, loaded the first time a client needs it (a local
/// server on the embedded store never does).
#[derive(Debug, Default)]
pub struct AwsConfig {
    loaded: OnceCell<SdkConfig>,
}

impl AwsConfig {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared configuration: the environment read once, whoever asks first.
    pub async fn shared(&self) -> &SdkConfig {
        self.loaded
            .get_or_init(|| {
                aws_config::defaults(BehaviorVersion::latest())
                    .http_client(http_client())
                    .load()
            })
            .await
    }
}

/// The SDK's HTTP client: hyper 1 with rustls on ring, trusting the platform's roots
/// (loaded when a client first connects). The builds enable no default client, so a
/// client made without this one fails its first call rather than picking another TLS.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
