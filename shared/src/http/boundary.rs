//! The panic boundary: a panic while one request is handled ends
//! that request, not the process. `App::handle` polls each request's handling through
//! [`catch_panic`] and answers 500; the local server keeps serving and a Lambda
//! instance keeps its other invocations. Needs `panic = "unwind"` (the release profile).
//!
//! A panic inside the boundary is logged with its source location only: its message
//! may quote input (a slice out of a string quotes the string), and nothing personal is
//! logged. A panic anywhere else goes to the hook that was there before.

use std::cell::Cell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    /// Set while a request's future is polled on this thread.
    static IN_REQUEST: Cell<bool> = const { Cell::new(false) };
}

/// The request panicked; what it said is not kept (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Panicked;

/// Runs `work`; a panic while it is polled becomes `Err(Panicked)`. The request's future
/// is large (its deepest handler's state, kilobytes): it is moved once, into the box, and
/// every wrapper around the boundary (the request's context, its log span) moves only the
/// box.
pub(crate) fn catch_panic<F: Future>(work: F) -> CatchPanic<F> {
    install_hook();
    CatchPanic(Box::pin(work))
}

/// The future [`catch_panic`] returns: `work`, boxed, polled inside `catch_unwind`.
pub(crate) struct CatchPanic<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let outer = IN_REQUEST.with(|flag| flag.replace(true));
        let polled = catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx)));
        IN_REQUEST.with(|flag| flag.set(outer));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(_) => Poll::Ready(Err(Panicked)),
        }
    }
}

fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_REQUEST.with(Cell::get) {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                tracing::error!(%location, "a request panicked; it was answered 500");
            } else {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_is_caught_and_the_next_request_runs() {
        let answer = catch_panic(async {
            tokio::task::yield_now().await;
            // The date overflow of finding 1, after the request's first await.
            chrono::NaiveDate::MAX + chrono::Duration::days(std::hint::black_box(1))
        })
        .await;
        assert_eq!(answer, Err(Panicked));
        assert!(!IN_REQUEST.with(Cell::get));
        assert_eq!(catch_panic(async { 7 }).await, Ok(7));
    }
}
