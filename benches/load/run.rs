//! One measured point: N concurrent sessions × M calls against one target,
//! bounded in count and time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::{Session, Target};
use crate::procs::Proc;
use crate::tls::{Handshakes, Scrape};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `tools/call` of `echo`: a small request and result.
    Small,
    /// `tools/call` of `big`: a 1 MiB result.
    Big,
    /// `tools/list` (as many tools as the upstream has).
    List,
    /// A request given on the command line (`--call`, `--params`).
    Given {
        method: &'static str,
        params: &'static str,
    },
}

impl Call {
    pub fn message(self) -> (&'static str, &'static str) {
        match self {
            Call::Small => (
                "tools/call",
                r#"{"name":"echo","arguments":{"message":"hello"}}"#,
            ),
            Call::Big => (
                "tools/call",
                r#"{"name":"big","arguments":{"message":"x"}}"#,
            ),
            Call::List => ("tools/list", "{}"),
            Call::Given { method, params } => (method, params),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Point {
    pub scenario: String,
    pub target: String,
    pub concurrency: usize,
    pub calls: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub per_sec: f64,
    /// CPU seconds of the measured proxy per 1,000 calls.
    pub cpu_per_1k: Option<f64>,
    /// Peak RSS of the measured proxy during the point, KiB.
    pub peak_rss_kib: Option<u64>,
    /// TLS handshakes of the measured gateway (when its `/metrics` is
    /// read, [`Proc::scraped`]) during the measured calls…
    pub handshakes: Option<Handshakes>,
    /// … and while the point's sessions were opened and warmed up.
    pub opening: Option<Handshakes>,
}

pub struct Budget {
    pub calls_per_session: usize,
    pub max_time: Duration,
    pub warmup_calls: usize,
}

/// Open `concurrency` sessions, warm them up, then run the calls.
pub async fn point(
    scenario: &str,
    label: &str,
    target: &Target,
    concurrency: usize,
    call: Call,
    budget: &Budget,
    proc: Option<&Proc>,
) -> Point {
    let sample = measure(target, concurrency, call, budget, proc).await;
    summarize(scenario, label, concurrency, vec![sample])
}

/// One point per target, measured in `rounds` turns that go through the
/// targets in order, each turn a share of `budget`: a slow spell of this
/// shared machine then falls on every target alike, not on one.
pub async fn interleaved(
    scenario: &str,
    targets: &[(&str, Target, Option<&Proc>)],
    concurrency: usize,
    call: Call,
    budget: &Budget,
    rounds: usize,
) -> Vec<Point> {
    let each: Vec<_> = targets
        .iter()
        .map(|(label, target, proc)| (*label, target.clone(), *proc, call))
        .collect();
    interleaved_calls(scenario, &each, concurrency, budget, rounds).await
}

/// [`interleaved`], each target with a call of its own (the same tool under
/// the name a proxy that prefixes names gives it).
pub async fn interleaved_calls(
    scenario: &str,
    targets: &[(&str, Target, Option<&Proc>, Call)],
    concurrency: usize,
    budget: &Budget,
    rounds: usize,
) -> Vec<Point> {
    let rounds = rounds.max(1);
    let share = Budget {
        calls_per_session: budget.calls_per_session.div_ceil(rounds),
        max_time: budget.max_time / rounds as u32,
        warmup_calls: budget.warmup_calls,
    };
    let mut samples: Vec<Vec<Sample>> = targets.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for (i, (_, target, proc, call)) in targets.iter().enumerate() {
            samples[i].push(measure(target, concurrency, *call, &share, *proc).await);
        }
    }
    targets
        .iter()
        .zip(samples)
        .map(|((label, ..), s)| summarize(scenario, label, concurrency, s))
        .collect()
}

/// What one run of calls against a target saw.
pub struct Sample {
    /// Latency of each successful call, ns.
    lat: Vec<u64>,
    errors: usize,
    first_error: Option<String>,
    wall: f64,
    cpu: Option<f64>,
    peak: Option<u64>,
    /// Handshakes while opening, and during the calls.
    handshakes: Option<(Handshakes, Handshakes)>,
}

impl Sample {
    /// A sample of requests made elsewhere (the OAuth scenarios' own):
    /// latencies in ns, errors, wall time, the server's CPU seconds and
    /// peak RSS (KiB).
    pub fn of(
        lat: Vec<u64>,
        (errors, first_error): (usize, Option<String>),
        wall: f64,
        cpu: Option<f64>,
        peak: Option<u64>,
    ) -> Sample {
        Sample {
            lat,
            errors,
            first_error,
            wall,
            cpu,
            peak,
            handshakes: None,
        }
    }
}

/// One point from the samples of its turns: latencies pooled, times summed.
pub fn summarize(scenario: &str, label: &str, concurrency: usize, samples: Vec<Sample>) -> Point {
    let mut lat = Vec::new();
    let (mut errors, mut wall, mut first_error) = (0, 0.0, None);
    let (mut cpu, mut peak): (Option<f64>, Option<u64>) = (None, None);
    let mut handshakes: Option<(Handshakes, Handshakes)> = None;
    let mut unread = false;
    for s in samples {
        match (s.handshakes, handshakes) {
            (Some((o, c)), Some((o0, c0))) => handshakes = Some((o.add(o0), c.add(c0))),
            (Some(h), None) => handshakes = Some(h),
            (None, _) => unread = true,
        }
        lat.extend(s.lat);
        errors += s.errors;
        wall += s.wall;
        first_error = first_error.or(s.first_error);
        cpu = match (cpu, s.cpu) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        peak = peak.max(s.peak);
    }
    lat.sort_unstable();
    let pct = |q: f64| -> f64 {
        if lat.is_empty() {
            return f64::NAN;
        }
        let i = ((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i] as f64 / 1000.0
    };
    let calls = lat.len();
    Point {
        scenario: scenario.into(),
        target: label.into(),
        concurrency,
        calls,
        errors,
        first_error,
        p50_us: pct(0.50),
        p90_us: pct(0.90),
        p99_us: pct(0.99),
        per_sec: calls as f64 / wall,
        cpu_per_1k: cpu.filter(|_| calls > 0).map(|c| c / calls as f64 * 1000.0),
        peak_rss_kib: peak,
        // Every sample's, or none: a sum with a reading missing would
        // understate them.
        handshakes: handshakes.filter(|_| !unread).map(|h| h.1),
        opening: handshakes.filter(|_| !unread).map(|h| h.0),
    }
}

async fn measure(
    target: &Target,
    concurrency: usize,
    call: Call,
    budget: &Budget,
    proc: Option<&Proc>,
) -> Sample {
    let mut errors = 0;
    let mut first_error = None;
    // The gateway's TLS handshakes, over one connection of its own opened
    // before the readings.
    let mut scrape = match proc.and_then(|p| p.scraped()) {
        Some((addr, tls)) => match Scrape::open(addr, tls).await {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("warning: no TLS handshake counts: {e}");
                None
            }
        },
        None => None,
    };
    let mut readings = Vec::with_capacity(3);
    if let Some(s) = scrape.as_mut() {
        readings.push(s.read().await);
    }
    let mut sessions = Vec::with_capacity(concurrency);
    let opens =
        futures_util::future::join_all((0..concurrency).map(|_| Session::open(target))).await;
    for s in opens {
        match s {
            Ok(s) => sessions.push(s),
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("open: {e}"));
            }
        }
    }
    let (method, params) = call.message();
    // Every session warms up at once, each with at most `warmup_calls`
    // calls, all within `max_time`: one after the other, a slow target
    // (tens of ms a call) would spend sessions × calls × its latency here.
    let warm_until = Instant::now() + budget.max_time;
    let warmed = futures_util::future::join_all(sessions.iter_mut().map(|s| async move {
        let (mut errs, mut first) = (0, None);
        for _ in 0..budget.warmup_calls {
            if Instant::now() >= warm_until {
                break;
            }
            if let Err(e) = s.request(method, params).await {
                errs += 1;
                first.get_or_insert(e);
            }
        }
        (errs, first)
    }))
    .await;
    for (errs, first) in warmed {
        errors += errs;
        if let Some(e) = first {
            first_error.get_or_insert(format!("warm-up: {e}"));
        }
    }
    if let Some(s) = scrape.as_mut() {
        readings.push(s.read().await);
    }
    if let Some(p) = proc {
        p.reset_peak();
    }
    let cpu0 = proc.map(|p| p.cpu_secs());
    let start = Instant::now();
    let deadline = start + budget.max_time;
    let start_gate = Arc::new(tokio::sync::Barrier::new(sessions.len() + 1));
    let mut tasks = Vec::with_capacity(sessions.len());
    for mut s in sessions {
        let gate = start_gate.clone();
        let n = budget.calls_per_session;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(n);
            let mut errs = 0usize;
            let mut first = None;
            gate.wait().await;
            for _ in 0..n {
                if Instant::now() >= deadline {
                    break;
                }
                let t = Instant::now();
                match s.request(method, params).await {
                    Ok(_) => lat.push(t.elapsed().as_nanos() as u64),
                    Err(e) => {
                        errs += 1;
                        first.get_or_insert(e);
                        // One error for a connection the server closed, not
                        // one per call left in the budget.
                        if s.closed() {
                            break;
                        }
                    }
                }
            }
            (s, lat, errs, first)
        }));
    }
    start_gate.wait().await;
    let t0 = Instant::now();
    let mut lat = Vec::new();
    let mut open = Vec::new();
    for t in tasks {
        match t.await {
            Ok((s, l, e, f)) => {
                lat.extend(l);
                errors += e;
                if let Some(f) = f {
                    first_error.get_or_insert(f);
                }
                open.push(s);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("task: {e}"));
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (proc, cpu0) {
        (Some(p), Some(c0)) => Some(p.cpu_secs() - c0),
        _ => None,
    };
    let peak = proc.map(|p| p.rss_kib().1);
    if let Some(s) = scrape.as_mut() {
        readings.push(s.read().await);
    }
    let handshakes = match readings.as_slice() {
        [Ok(a), Ok(b), Ok(c)] => Some((b.since(*a), c.since(*b))),
        _ => {
            if let Some(Err(e)) = readings.iter().find(|r| r.is_err()) {
                eprintln!("warning: no TLS handshake counts: {e}");
            }
            None
        }
    };
    futures_util::future::join_all(open.into_iter().map(|s| s.close())).await;
    Sample {
        lat,
        errors,
        first_error,
        wall,
        cpu,
        peak,
        handshakes,
    }
}
