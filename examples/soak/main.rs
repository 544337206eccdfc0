//! Soak test: many concurrent MCP sessions through a release gateway for a
//! fixed time, with mixed calls and overlay reloads, checking that nothing
//! fails and that the gateway's memory stays flat.
//!
//! It starts, all on 127.0.0.1: the bundled demo server over streamable HTTP
//! (`mcp-ui-gateway demo-server --http`), and the gateway in front of it
//! (mount `demo`, with a temporary copy of `overlays/`) and of the fixture
//! server as a stdio upstream (mount `echo`, one child per session). It
//! opens `--sessions` sessions (`--stdio-percent` of them on `echo`), warms
//! up, samples the gateway's RSS, then for `--secs` drives calls at
//! `--rate` per second round-robin over the sessions: `tools/list`, small and
//! larger `tools/call`s, `resources/read` of the widget, `ping`, and short
//! GET streams; some sessions also hold a GET stream open throughout and
//! count the `notifications/tools/list_changed` each reload announces.
//! Every `--reload-secs` it rewrites `demo.toml`, alternately a good edit
//! (a new title, which `tools/list` must then show) and a broken one (which
//! must change nothing). At the end it samples RSS again and prints the
//! report; the exit status is non-zero when any error occurred or RSS grew
//! by more than `--max-growth-percent`.
//!
//! `scripts/soak.sh` builds the binaries and runs this; by hand:
//! `cargo build --release --bins && cargo run --release --example soak --
//! --sessions 1000 --secs 600`.

mod load;
mod mcp;
#[path = "../../tests/support/process.rs"]
mod process;
mod processes;
mod reload;
mod report;
mod stats;
mod streams;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use clap::Parser as _;
use serde_json::json;

use mcp::{Mount, Session, call, delete_session, show_tasks_uri};
use processes::{Started, rss_kib};
use stats::Stats;

/// Command-line options.
#[derive(clap::Parser, Debug, Clone)]
pub struct Args {
    /// Sessions held open for the whole run.
    #[arg(long, default_value_t = 1000)]
    pub sessions: usize,
    /// Duration of the measured run, after warm-up.
    #[arg(long, default_value_t = 600)]
    pub secs: u64,
    /// Warm-up under the same load before the first RSS sample.
    #[arg(long, default_value_t = 60)]
    pub warmup_secs: u64,
    /// Calls started per second, over all sessions.
    #[arg(long, default_value_t = 100)]
    pub rate: u64,
    /// Share of sessions on the stdio mount (each is a child process).
    #[arg(long, default_value_t = 5)]
    pub stdio_percent: usize,
    /// Share of sessions that hold a GET stream open throughout.
    #[arg(long, default_value_t = 10)]
    pub stream_percent: usize,
    /// Seconds between overlay rewrites (good and broken alternately).
    #[arg(long, default_value_t = 5)]
    pub reload_secs: u64,
    /// Largest RSS growth, start to end, that passes.
    #[arg(long, default_value_t = 10.0)]
    pub max_growth_percent: f64,
    /// The release gateway binary.
    #[arg(long, default_value = "target/release/mcp-ui-gateway")]
    pub gateway_bin: PathBuf,
    /// The fixture server binary (the stdio upstream).
    #[arg(long, default_value = "target/release/mcp-fixture-server")]
    pub fixture_bin: PathBuf,
    /// Overlay directory copied for the run.
    #[arg(long, default_value = "overlays")]
    pub overlays: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<bool> {
    let stdio_sessions = args.sessions * args.stdio_percent / 100;
    let Started {
        work,
        demo_toml,
        original,
        upstream,
        gateway,
        gateway_addr,
        log_path,
    } = processes::start(&args, stdio_sessions).await?;
    let gateway_pid = gateway.pid;
    let client = mcp::client(load::MAX_IN_FLIGHT);
    let stats = Arc::new(Stats::default());

    // Open every session.
    let sessions =
        load::open_sessions(&client, gateway_addr, args.sessions, stdio_sessions, &stats).await?;
    let echo_sessions = sessions.iter().filter(|s| s.mount == Mount::Echo).count();
    if sessions.is_empty() {
        bail!("no session could be opened");
    }
    let (first_demo, widget_uri) = prime(&client, &sessions, &stats).await?;

    let stop = tokio_util::sync::CancellationToken::new();
    let shared = Shared {
        client: client.clone(),
        stats: stats.clone(),
        widget_uri: widget_uri.clone(),
        stop: stop.clone(),
    };
    let load = shared.start_load(&args, &sessions, &first_demo, demo_toml, original);
    let stream_every = load.stream_every;

    println!("soak: warming up for {} s", args.warmup_secs);
    tokio::time::sleep(Duration::from_secs(args.warmup_secs)).await;
    let rss_start = rss_kib(gateway_pid)?;
    let calls_at_start = stats.calls.load(Ordering::Relaxed);
    let errors_at_start = stats.error_count();
    println!(
        "soak: RSS at start {rss_start} KiB; running {} s at {} calls/s",
        args.secs, args.rate
    );
    let (samples, secs) = sample_rss(&args, gateway_pid, &stats, rss_start).await?;
    stop.cancel();
    load.join().await;
    let rss_end = rss_kib(gateway_pid)?;
    stats.measuring.store(false, Ordering::Relaxed);

    let closed = close_sessions(&client, &sessions).await;
    let gateway_alive = std::fs::metadata(format!("/proc/{gateway_pid}")).is_ok();
    drop(gateway);

    let measured = report::Measured {
        sessions: sessions.len(),
        echo_sessions,
        stream_every,
        closed,
        secs,
        calls_at_start,
        errors_at_start,
        rss_start,
        rss_end,
        rss_max: samples.iter().copied().max().unwrap_or(rss_start),
        samples,
        gateway_alive,
    };
    let pass = report::print(&args, &stats, &measured);
    if !pass {
        println!("gateway log: {}", log_path.display());
        // Keep the log for a failed run.
        let _ = work.keep();
    }
    drop(upstream);
    Ok(pass)
}

/// The first session on the demo mount, the widget URI its `tools/list`
/// names, and every session primed.
async fn prime(
    client: &mcp::HttpClient,
    sessions: &[Arc<Session>],
    stats: &Arc<Stats>,
) -> anyhow::Result<(Arc<Session>, Arc<Mutex<String>>)> {
    let widget_uri = Arc::new(Mutex::new(String::new()));
    let first_demo = sessions
        .iter()
        .find(|s| s.mount == Mount::Demo)
        .cloned()
        .ok_or_else(|| anyhow!("no demo session"))?;
    let tools = call(client, &first_demo, "tools/list", json!({})).await?;
    *widget_uri.lock().unwrap() = show_tasks_uri(&tools)?;
    load::prime(client, sessions, stats, &widget_uri).await;
    Ok((first_demo, widget_uri))
}

/// What the load tasks share.
struct Shared {
    client: mcp::HttpClient,
    stats: Arc<Stats>,
    /// The widget's current URI, which each good reload changes.
    widget_uri: Arc<Mutex<String>>,
    stop: tokio_util::sync::CancellationToken,
}

/// The tasks loading the gateway until `stop`: the streams held open, the
/// calls and the reloads.
struct Load {
    streams: Vec<tokio::task::JoinHandle<()>>,
    driver: tokio::task::JoinHandle<()>,
    reloader: tokio::task::JoinHandle<()>,
    /// Every how many sessions one holds a stream.
    stream_every: usize,
}

impl Shared {
    /// Long-lived GET streams on some sessions, counting announcements;
    /// then, measured, the calls over `sessions` and the reloads of
    /// `demo_toml` (first `original`) through `first_demo`.
    fn start_load(
        &self,
        args: &Args,
        sessions: &[Arc<Session>],
        first_demo: &Arc<Session>,
        demo_toml: PathBuf,
        original: String,
    ) -> Load {
        let stream_every = 100usize
            .checked_div(args.stream_percent)
            .map_or(usize::MAX, |n| n.max(1));
        let mut streams = Vec::new();
        for session in sessions.iter().step_by(stream_every) {
            let (client, session, stats, stop) = (
                self.client.clone(),
                session.clone(),
                self.stats.clone(),
                self.stop.clone(),
            );
            streams.push(tokio::spawn(async move {
                streams::hold_stream(&client, &session, &stats, stop).await;
            }));
        }

        // Load, reloads and RSS sampling.
        self.stats.measuring.store(true, Ordering::Relaxed);
        let driver = {
            let (client, sessions, stats, stop, uri) = (
                self.client.clone(),
                sessions.to_vec(),
                self.stats.clone(),
                self.stop.clone(),
                self.widget_uri.clone(),
            );
            let rate = args.rate.max(1);
            tokio::spawn(async move {
                load::drive(client, sessions, stats, stop, uri, rate, stream_every).await;
            })
        };
        let reloader = {
            let (client, session, stats, stop, uri) = (
                self.client.clone(),
                first_demo.clone(),
                self.stats.clone(),
                self.stop.clone(),
                self.widget_uri.clone(),
            );
            let period = Duration::from_secs(args.reload_secs.max(1));
            let path = demo_toml;
            tokio::spawn(async move {
                reload::reload_loop(
                    &client, &session, &stats, stop, &uri, &path, &original, period,
                )
                .await;
            })
        };
        Load {
            streams,
            driver,
            reloader,
            stream_every,
        }
    }
}

impl Load {
    /// Waits a while for each task to end, once stopped.
    async fn join(self) {
        let _ = tokio::time::timeout(Duration::from_secs(60), self.driver).await;
        let _ = tokio::time::timeout(Duration::from_secs(60), self.reloader).await;
        for stream in self.streams {
            let _ = tokio::time::timeout(Duration::from_secs(10), stream).await;
        }
    }
}

/// Samples the gateway's RSS every 30 s (and at the end) of the measured
/// run; the samples, `start` first, and the seconds measured so far.
async fn sample_rss(
    args: &Args,
    gateway_pid: u32,
    stats: &Stats,
    start: u64,
) -> anyhow::Result<(Vec<u64>, f64)> {
    let run_start = Instant::now();
    let mut samples = vec![start];
    while run_start.elapsed() < Duration::from_secs(args.secs) {
        let left = Duration::from_secs(args.secs).saturating_sub(run_start.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(30))).await;
        let rss = rss_kib(gateway_pid)?;
        samples.push(rss);
        println!(
            "soak: t={:>4} s calls={} errors={} rss={} KiB",
            run_start.elapsed().as_secs(),
            stats.calls.load(Ordering::Relaxed),
            stats.error_count(),
            rss
        );
    }
    Ok((samples, run_start.elapsed().as_secs_f64()))
}

/// Closes the sessions as a host would; how many closed.
async fn close_sessions(client: &mcp::HttpClient, sessions: &[Arc<Session>]) -> usize {
    let mut closed = 0;
    for session in sessions {
        if delete_session(client, session).await.is_ok() {
            closed += 1;
        }
    }
    closed
}
