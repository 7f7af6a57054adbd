//! `Success`: what a REST handler answers when it did what was asked, a status and the
//! data, and the one place the success envelopes are rendered (the counterpart of
//! `ApiError`'s refusals).
//!
//! Owns the envelopes: the REST envelope `{"code": 0, "msg": "ok", "data": …}` (accounts,
//! shares, the data and uploads APIs), the registry's seed form `{"success": true, "code":
//! 0, "msg": "ok", "data": …}` and its REST form (the data itself). The data is any
//! `Serialize` value, made a JSON value first: its keys come out as a `json!` object's
//! would, so a struct and the `json!` it replaced answer the same bytes. Must not: know
//! what a handler's data means, or answer anything but JSON (a file, a redirect, a page
//! is the handler's own `Response`).

use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Serialize;
use serde_json::{Value, json};

use super::json;

/// A REST handler's success: rendered by [`Success::into_response`].
#[derive(Debug)]
#[must_use]
pub(crate) struct Success<T = Value> {
    status: StatusCode,
    data: T,
    form: Envelope,
}

/// How a [`Success`] is wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Envelope {
    /// `{"code": 0, "msg": "ok", "data": …}`.
    Rest,
    /// The registry's seed table endpoints: `{"success": true, "code": 0, "msg": "ok",
    /// "data": …}` (always 200).
    Seed,
    /// The registry's REST endpoints: the data itself.
    Bare,
}

impl<T: Serialize> Success<T> {
    /// 200 in the REST envelope.
    pub(crate) fn ok(data: T) -> Self {
        Self::with_status(StatusCode::OK, data)
    }

    /// 201 in the REST envelope.
    pub(crate) fn created(data: T) -> Self {
        Self::with_status(StatusCode::CREATED, data)
    }

    /// 202 in the REST envelope.
    pub(crate) fn accepted(data: T) -> Self {
        Self::with_status(StatusCode::ACCEPTED, data)
    }

    /// `status` in the REST envelope.
    pub(crate) fn with_status(status: StatusCode, data: T) -> Self {
        Success {
            status,
            data,
            form: Envelope::Rest,
        }
    }

    /// 200 in the registry's seed envelope.
    pub(crate) fn seed(data: T) -> Self {
        Success {
            status: StatusCode::OK,
            data,
            form: Envelope::Seed,
        }
    }

    /// `status` with the data as the whole body (the registry's REST form).
    pub(crate) fn bare(status: StatusCode, data: T) -> Self {
        Success {
            status,
            data,
            form: Envelope::Bare,
        }
    }

    /// The answer: `application/json`, the data in its envelope.
    pub(crate) fn into_response(self) -> Response<Bytes> {
        let data = match serde_json::to_value(&self.data) {
            Ok(data) => data,
            Err(error) => {
                // Only a map with non-string keys fails; no handler's data has one.
                tracing::error!(%error, "a success's data did not serialise");
                return super::ApiError::refused(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error: the answer could not be written",
                )
                .into_response();
            }
        };
        let body = match self.form {
            Envelope::Rest => json!({ "code": 0, "msg": "ok", "data": data }),
            Envelope::Seed => json!({"success": true, "code": 0, "msg": "ok", "data": data}),
            Envelope::Bare => data,
        };
        json(self.status, &body)
    }
}
