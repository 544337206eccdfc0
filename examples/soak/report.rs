//! The soak's report: sessions, calls, errors, reloads and the gateway's
//! RSS from start to end, and whether the run passed.

use std::sync::atomic::Ordering;

use crate::Args;
use crate::stats::Stats;

/// What the measured run saw, beside the counters.
pub struct Measured {
    pub sessions: usize,
    pub echo_sessions: usize,
    /// One session in this many held a GET stream open.
    pub stream_every: usize,
    pub closed: usize,
    pub secs: f64,
    pub calls_at_start: u64,
    pub errors_at_start: u64,
    pub rss_start: u64,
    pub rss_end: u64,
    pub rss_max: u64,
    pub samples: Vec<u64>,
    pub gateway_alive: bool,
}

/// Prints the report; whether the run passed: no error, RSS growth within
/// `--max-growth-percent`, and the gateway still running.
pub fn print(args: &Args, stats: &Stats, run: &Measured) -> bool {
    let growth = (run.rss_end as f64 - run.rss_start as f64) * 100.0 / run.rss_start as f64;
    let errors = stats.errors.lock().unwrap().clone();
    let total_errors: u64 = errors.values().sum();
    println!("\n== soak report ==");
    print_traffic(args, stats, run);
    println!(
        "errors: {total_errors} ({} during warm-up){}",
        run.errors_at_start,
        if errors.is_empty() {
            String::new()
        } else {
            format!(
                " by kind: {}",
                errors
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    );
    for e in stats.first_errors.lock().unwrap().iter() {
        println!("  first errors: {e}");
    }
    println!(
        "reloads: {} good edits written, {} applied (seen in tools/list); {} broken edits written, {} rejected (last good kept); list_changed announcements received: {}",
        stats.reloads_good.load(Ordering::Relaxed),
        stats.reloads_seen.load(Ordering::Relaxed),
        stats.reloads_bad.load(Ordering::Relaxed),
        stats.reloads_kept.load(Ordering::Relaxed),
        stats.list_changed.load(Ordering::Relaxed),
    );
    println!(
        "gateway RSS: start {} KiB, end {} KiB, growth {growth:+.1} % (max {} KiB; samples {})",
        run.rss_start,
        run.rss_end,
        run.rss_max,
        run.samples
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let pass = total_errors == 0 && growth <= args.max_growth_percent && run.gateway_alive;
    println!(
        "result: {} (errors must be 0, RSS growth at most {} %{})",
        if pass { "PASS" } else { "FAIL" },
        args.max_growth_percent,
        if run.gateway_alive {
            ""
        } else {
            "; the gateway exited"
        }
    );
    pass
}

/// The sessions, the time and the calls of the run.
fn print_traffic(args: &Args, stats: &Stats, run: &Measured) {
    let calls = stats.calls.load(Ordering::Relaxed);
    println!(
        "sessions: {} open ({} HTTP upstream, {} stdio), {} long-lived GET streams, {} closed at the end",
        run.sessions,
        run.sessions - run.echo_sessions,
        run.echo_sessions,
        run.sessions
            .div_ceil(run.stream_every.min(run.sessions).max(1)),
        run.closed
    );
    println!(
        "duration: {:.0} s measured after {} s warm-up; calls: {} in all, {} measured ({:.1}/s); skipped (session busy): {}",
        run.secs,
        args.warmup_secs,
        calls,
        calls - run.calls_at_start,
        (calls - run.calls_at_start) as f64 / run.secs,
        stats.skipped_busy.load(Ordering::Relaxed)
    );
    let ops = stats.by_op.lock().unwrap().clone();
    println!(
        "calls by kind: {}",
        ops.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
}
