//! Counts the DynamoDB requests a store makes and the bytes it receives, so a benchmark
//! can read them before and after a query (a query's cost must follow its
//! answer). An SDK interceptor on the store's one client; counts only, never content.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

/// Requests sent (every attempt) and response bytes received since the store was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub requests: u64,
    pub bytes_received: u64,
}

impl IoCounters {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: IoCounters) -> IoCounters {
        IoCounters {
            requests: self.requests.saturating_sub(earlier.requests),
            bytes_received: self.bytes_received.saturating_sub(earlier.bytes_received),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Counts {
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl Counts {
    pub(super) fn snapshot(&self) -> IoCounters {
        IoCounters {
            requests: self.requests.load(Ordering::Relaxed),
            bytes_received: self.bytes.load(Ordering::Relaxed),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Counter(pub(super) Arc<Counts>);

impl Intercept for Counter {
    fn name(&self) -> &'static str {
        "io-counter"
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.requests.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn read_before_deserialization(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let response = context.response();
        let length = response
            .headers()
            .get("content-length")
            .and_then(|v| v.parse::<u64>().ok())
            .or_else(|| response.body().bytes().map(|b| b.len() as u64))
            .unwrap_or(0);
        self.0.bytes.fetch_add(length, Ordering::Relaxed);
        Ok(())
    }
}
