//! Deployed mail: Amazon SES v2 `SendEmail` from the verified identity
//! `MIROBODY_MAIL_FROM`, with the configuration set `MIROBODY_SES_CONFIGURATION_SET`
//! when given (where bounces and complaints are published; see README "E-mail").
//! The client is built once per cold start, like the store's.

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_sesv2::Client;
use aws_sdk_sesv2::error::ProvideErrorMetadata;
use aws_sdk_sesv2::types::{Body, Content, Destination, EmailContent, Message as SesMessage};

use super::{MailError, MailFuture, MailSender, Message};

pub struct SesSender {
    client: Client,
    from: String,
    configuration_set: Option<String>,
}

impl SesSender {
    /// Builds the client from the environment (region, credentials, and the
    /// `AWS_ENDPOINT_URL_SESV2` the SDK reads itself).
    pub fn from_config(
        shared: &SdkConfig,
        from: String,
        configuration_set: Option<String>,
    ) -> Self {
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_attempt_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(10))
            .build();
        let config = aws_sdk_sesv2::config::Builder::from(shared)
            .timeout_config(timeouts)
            .build();
        SesSender {
            client: Client::from_conf(config),
            from,
            configuration_set,
        }
    }
}

fn content(text: &str) -> Result<Content, MailError> {
    Content::builder()
        .data(text)
        .charset("UTF-8")
        .build()
        .map_err(|_| MailError("ses: the message could not be built".into()))
}

impl MailSender for SesSender {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a> {
        Box::pin(async move {
            let body = SesMessage::builder()
                .subject(content(&message.subject)?)
                .body(Body::builder().text(content(&message.text)?).build())
                .build();
            self.client
                .send_email()
                .from_email_address(&self.from)
                .destination(Destination::builder().to_addresses(&message.to).build())
                .content(EmailContent::builder().simple(body).build())
                .set_configuration_set_name(self.configuration_set.clone())
                .send()
                .await
                // Only the error's code: SES's message may name the recipient.
                .map_err(|e| {
                    MailError(format!(
                        "ses: SendEmail failed: {}",
                        e.code().unwrap_or("no error code (a network failure?)")
                    ))
                })?;
            Ok(())
        })
    }

    fn describe(&self) -> String {
        format!("Amazon SES from {}", self.from)
    }
}
