//! Load and soak, short form (the test command runs it): 64 concurrent
//! clients for 10 s against the debug `mirobody-local` on its embedded store, the mix of
//! `e2e::load` (anonymous and signed-in MCP calls, data tools through a token and through
//! the personal URL, the data summary, discovery). Zero 5xx, zero transport errors, and
//! the server's memory flat (resident size after a warm-up versus at the end). The long
//! form is `scripts/load` (release build, minutes, hundreds of connections).

use std::time::Duration;

use e2e::Server;
use e2e::load::{prepare, rss_kib, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_mixed_load_answers_everything_with_flat_memory() {
    let server = Server::start(&[]);
    let first = prepare(&server.base, "load@example.com").await;
    let (token, personal_url) = (first.token.clone(), first.personal_url.clone());
    let again = || e2e::load::Actors {
        base: server.base.clone(),
        token: token.clone(),
        personal_url: personal_url.clone(),
    };
    // Warm-up: connections, caches and allocator arenas settle first.
    let warm = run(first, 64, Duration::from_secs(2)).await;
    assert_eq!(warm.server_errors, 0, "{}", warm.summary(2.0));
    let start = rss_kib(server.pid());
    let report = run(again(), 64, Duration::from_secs(10)).await;
    let end = rss_kib(server.pid());
    println!(
        "{}; server RSS {start} KiB after warm-up, {end} KiB at the end",
        report.summary(10.0)
    );
    assert!(report.requests > 100, "{}", report.summary(10.0));
    assert_eq!(
        (
            report.server_errors,
            report.transport_errors,
            report.client_errors
        ),
        (0, 0, 0),
        "{}",
        report.summary(10.0)
    );
    assert!(
        end < start + 64 * 1024,
        "memory grew from {start} to {end} KiB"
    );
}
