//! What a tool reports while it runs: progress and log messages for the request's
//! response stream.
//!
//! Owns which notifications are kept (progress only when the request gave a token, log
//! messages only at or above the level it asked for). Must not write them to the wire:
//! `mcp` turns each [`Notification`] into a JSON-RPC notification.
// Part of the protocol surface that only the fixture pack exercises today (the product's own tools
// and catalogues do not use it yet); kept, not compiled away, so the protocol stays complete.
#![cfg_attr(not(feature = "fixtures"), allow(dead_code))]

use std::sync::Mutex;

use serde_json::Value;

/// Collects the notifications a tool sends while it runs (progress, log messages).
/// The transport writes them to the request's event stream before the result.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    progress_token: Option<Value>,
    log_level: Option<String>,
    sent: Mutex<Vec<Notification>>,
}

/// One notification a tool sent, in the order it was sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Notification {
    Progress {
        /// The request's progress token, echoed.
        token: Value,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    Log {
        level: String,
        data: Value,
    },
}

/// Log levels, least severe first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl Notifier {
    /// `progress_token` and `log_level` come from the request's `_meta`: without
    /// them the client asked for no notifications, and none are sent.
    pub(crate) fn new(progress_token: Option<Value>, log_level: Option<String>) -> Self {
        Notifier {
            progress_token,
            log_level,
            sent: Mutex::default(),
        }
    }

    pub(crate) fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        self.push(Notification::Progress {
            token: token.clone(),
            progress,
            total,
            message: message.map(str::to_string),
        });
    }

    /// A log message, sent only when the request asked for this level or a lower one.
    pub(crate) fn log(&self, level: &str, data: Value) {
        let rank = |l: &str| LEVELS.iter().position(|x| *x == l);
        let Some(wanted) = self.log_level.as_deref().and_then(rank) else {
            return;
        };
        if rank(level).is_some_and(|r| r >= wanted) {
            self.push(Notification::Log {
                level: level.to_string(),
                data,
            });
        }
    }

    fn push(&self, notification: Notification) {
        self.sent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(notification);
    }

    pub(crate) fn take(&self) -> Vec<Notification> {
        std::mem::take(
            &mut *self
                .sent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }
}
