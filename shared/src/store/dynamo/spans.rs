//! The spans of the store's AWS calls: an SDK interceptor on the DynamoDB and
//! S3 clients records each attempt as a [`SpanRecord`](crate::observe::SpanRecord) of the
//! request it was made for (`DynamoDB.Query`, `S3.PutObject`), with whether it failed and
//! whether it was throttled. Names and status only, never a key, an item or a body.

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};

use crate::observe::{self, Outcome, SpanKind, Started};

/// The error codes AWS answers a throttled call with (DynamoDB's and S3's).
const THROTTLE_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
    "SlowDown",
];

/// An error answer is looked at up to this many bytes for its code.
const ERROR_PEEK: usize = 4096;

/// Records every attempt of the client's operations on the current request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallSpans;

/// The attempt in flight (replaced by the next attempt's).
#[derive(Debug)]
struct Attempt(Option<Started>);

impl Storable for Attempt {
    type Storer = StoreReplace<Self>;
}

impl Intercept for CallSpans {
    fn name(&self) -> &'static str {
        "call-spans"
    }

    fn read_before_attempt(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let name = cfg
            .load::<Metadata>()
            .map(|m| format!("{}.{}", service_name(m.service()), m.name()))
            .unwrap_or_else(|| "AWS.call".into());
        let started = observe::start(name, SpanKind::Store);
        cfg.interceptor_state().store_put(Attempt(started));
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(Attempt(Some(started))) = cfg.load::<Attempt>() else {
            return Ok(());
        };
        let response = context.response();
        let status = response.map(|r| r.status().as_u16());
        let failed = status.is_none_or(|s| s >= 400);
        let throttled = failed
            && response
                .and_then(|r| r.body().bytes())
                .is_some_and(|body| is_throttle(&body[..body.len().min(ERROR_PEEK)]));
        started.finish(Outcome {
            error: failed,
            throttled,
            remote_host: None,
            http_status: status,
        });
        cfg.interceptor_state().unset::<Attempt>();
        Ok(())
    }
}

/// `DynamoDB`, `S3` (the SDK's service names, as X-Ray names the AWS services).
fn service_name(service: &str) -> &str {
    match service {
        "dynamodb" | "DynamoDB" => "DynamoDB",
        "s3" | "S3" => "S3",
        other => other,
    }
}

fn is_throttle(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    THROTTLE_CODES.iter().any(|code| text.contains(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_answers_are_recognised() {
        let dynamo = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}"#;
        assert!(is_throttle(dynamo));
        assert!(is_throttle(b"<Error><Code>SlowDown</Code></Error>"));
        let conditional =
            br#"{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"}"#;
        assert!(!is_throttle(conditional));
    }
}
