//! The run's report: a Markdown table of absolute figures, ratios against
//! direct and against each peer, the targets, and an SVG plot of latency
//! against concurrency.

use std::fmt::Write as _;

use crate::run::Point;

pub fn find<'a>(points: &'a [Point], scenario: &str, target: &str, c: usize) -> Option<&'a Point> {
    points
        .iter()
        .find(|p| p.scenario == scenario && p.target == target && p.concurrency == c)
}

fn f1(v: f64) -> String {
    if v.is_nan() {
        "–".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The date and time now, as `2026-12-01 10:50 UTC`.
pub fn date_utc() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|d| d.trim().to_owned())
        .unwrap_or_default()
}

/// One point on one line, as it is measured.
pub fn line(p: &Point) -> String {
    format!(
        "{:<24} {:<16} c={:<3} calls={:<6} err={} p50={:.1}µs p90={:.1}µs p99={:.1}µs {:.0}/s cpu/1k={} peak={}KiB{}{}",
        p.scenario,
        p.target,
        p.concurrency,
        p.calls,
        p.errors,
        p.p50_us,
        p.p90_us,
        p.p99_us,
        p.per_sec,
        p.cpu_per_1k
            .map(|c| format!("{c:.3}s"))
            .unwrap_or_else(|| "-".into()),
        p.peak_rss_kib.unwrap_or(0),
        match (p.opening, p.handshakes) {
            (Some(o), Some(h)) => format!(
                " tls-handshakes(listener/upstream) opening={}/{} calls={}/{}",
                o.listener, o.upstream, h.listener, h.upstream
            ),
            _ => String::new(),
        },
        p.first_error
            .as_deref()
            .map(|e| format!(" first error: {e}"))
            .unwrap_or_default()
    )
}

/// Print every point with errors or no calls; true when there are none.
pub fn errors_ok(points: &[Point]) -> bool {
    let mut ok = true;
    for p in points {
        if p.errors > 0 || p.calls == 0 {
            ok = false;
            eprintln!(
                "ERROR: {} / {} at {}: {} errors, {} calls; first: {}",
                p.scenario,
                p.target,
                p.concurrency,
                p.errors,
                p.calls,
                p.first_error.as_deref().unwrap_or("-")
            );
        }
    }
    ok
}

pub fn table(points: &[Point]) -> String {
    let mut s = String::new();
    s.push_str("| scenario | target | conc. | calls | errors | p50 µs | p90 µs | p99 µs | calls/s | proxy CPU s / 1k calls | proxy peak RSS MiB |\n");
    s.push_str("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for p in points {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.scenario,
            p.target,
            p.concurrency,
            p.calls,
            p.errors,
            f1(p.p50_us),
            f1(p.p90_us),
            f1(p.p99_us),
            f1(p.per_sec),
            p.cpu_per_1k
                .map(|c| format!("{c:.3}"))
                .unwrap_or_else(|| "–".into()),
            p.peak_rss_kib
                .map(|k| format!("{:.1}", k as f64 / 1024.0))
                .unwrap_or_else(|| "–".into()),
        );
    }
    s
}

/// Ratios of `subject` against each reference, per concurrency, from this run.
pub fn ratios(points: &[Point], scenario: &str, subject: &str, refs: &[&str]) -> String {
    let mut s = String::new();
    let mut cs: Vec<usize> = points
        .iter()
        .filter(|p| p.scenario == scenario && p.target == subject)
        .map(|p| p.concurrency)
        .collect();
    cs.dedup();
    for r in refs {
        if !points
            .iter()
            .any(|p| p.scenario == scenario && p.target == *r)
        {
            continue;
        }
        let _ = writeln!(
            s,
            "\n{subject} against {r} ({scenario}):\n\n| conc. | throughput ratio | p50 ratio | p99 ratio | p50 added µs | p99 added µs |\n|--:|--:|--:|--:|--:|--:|"
        );
        for &c in &cs {
            let (Some(a), Some(b)) = (
                find(points, scenario, subject, c),
                find(points, scenario, r, c),
            ) else {
                continue;
            };
            let _ = writeln!(
                s,
                "| {c} | {:.2} | {:.2} | {:.2} | {} | {} |",
                a.per_sec / b.per_sec,
                a.p50_us / b.p50_us,
                a.p99_us / b.p99_us,
                f1(a.p50_us - b.p50_us),
                f1(a.p99_us - b.p99_us),
            );
        }
    }
    s
}

/// The TLS cases of `scenario` against `plain`: latency, throughput, the
/// added p50, and the gateway's TLS handshakes per 1,000 calls during the
/// calls and in all while the sessions were opened.
pub fn tls(points: &[Point], scenario: &str, plain: &str) -> String {
    let mut s = String::new();
    let ours: Vec<&Point> = points.iter().filter(|p| p.scenario == scenario).collect();
    if ours.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nTLS ({scenario}; handshakes from the gateway's /metrics, listener / upstream):\n\n| case | conc. | calls | p50 µs | p99 µs | calls/s | p50 added µs | throughput / plain | handshakes per 1k calls, during the calls | handshakes opening the sessions |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    );
    for p in ours {
        let base = find(points, scenario, plain, p.concurrency);
        let per_1k = |n: u64| n as f64 * 1000.0 / p.calls.max(1) as f64;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.target,
            p.concurrency,
            p.calls,
            f1(p.p50_us),
            f1(p.p99_us),
            f1(p.per_sec),
            base.map(|b| format!("{:+.1}", p.p50_us - b.p50_us))
                .unwrap_or_else(|| "–".into()),
            base.map(|b| format!("{:.2}", p.per_sec / b.per_sec))
                .unwrap_or_else(|| "–".into()),
            p.handshakes
                .map(|h| format!("{:.2} / {:.2}", per_1k(h.listener), per_1k(h.upstream)))
                .unwrap_or_else(|| "?".into()),
            p.opening
                .map(|h| format!("{} / {}", h.listener, h.upstream))
                .unwrap_or_else(|| "?".into()),
        );
    }
    s
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Latency (p50 solid, p99 dashed; log scale) against concurrency (log2)
/// for each series `(scenario, target)`; empty when none has a point.
pub fn svg(points: &[Point], series: &[(&str, &str)], title: &str) -> String {
    let (w, h) = (900.0, 560.0);
    let (left, right, top, bottom) = (80.0, 230.0, 50.0, 60.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    let mut all: Vec<&Point> = Vec::new();
    for (sc, t) in series {
        all.extend(
            points
                .iter()
                .filter(|p| p.scenario == *sc && p.target == *t && p.calls > 0),
        );
    }
    // No point to draw (`--only` without these series): no plot, rather
    // than an axis from infinity.
    if all.is_empty() {
        return String::new();
    }
    let cmax = all.iter().map(|p| p.concurrency).max().unwrap_or(1).max(2) as f64;
    let lmin = all
        .iter()
        .map(|p| p.p50_us)
        .fold(f64::INFINITY, f64::min)
        .max(1.0);
    let lmax = all.iter().map(|p| p.p99_us).fold(1.0, f64::max);
    let (y0, y1) = (
        lmin.log10().floor(),
        lmax.log10().ceil().max(lmin.log10().floor() + 1.0),
    );
    let x = |c: usize| left + (c as f64).log2() / cmax.log2() * pw;
    let y = |us: f64| top + ph - (us.max(1.0).log10() - y0) / (y1 - y0) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="16">{}</text>"#,
        left + pw / 2.0,
        esc(title)
    );
    // Axes and grid.
    let mut c = 1usize;
    while (c as f64) <= cmax {
        let xc = x(c);
        let _ = writeln!(
            s,
            r##"<line x1="{xc:.1}" y1="{top}" x2="{xc:.1}" y2="{}" stroke="#ddd"/><text x="{xc:.1}" y="{}" text-anchor="middle">{c}</text>"##,
            top + ph,
            top + ph + 18.0
        );
        c *= 2;
    }
    let mut e = y0 as i32;
    while e as f64 <= y1 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if v.log10() > y1 + 1e-9 {
                break;
            }
            let yv = y(v);
            let label = if v >= 1000.0 {
                format!("{} ms", v / 1000.0)
            } else {
                format!("{v} µs")
            };
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{yv:.1}" x2="{}" y2="{yv:.1}" stroke="{}"/><text x="{}" y="{:.1}" text-anchor="end">{label}</text>"##,
                left + pw,
                if m == 1.0 { "#bbb" } else { "#eee" },
                left - 6.0,
                yv + 4.0
            );
        }
        e += 1;
    }
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">concurrent sessions</text>"#,
        left + pw / 2.0,
        h - 15.0
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">latency per call (p50 solid, p99 dashed)</text>"#,
        top + ph / 2.0,
        top + ph / 2.0
    );
    for (i, (sc, t)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<&&Point> = all
            .iter()
            .filter(|p| p.scenario == *sc && p.target == *t)
            .collect();
        if pts.is_empty() {
            continue;
        }
        for (dash, get) in [
            ("", (|p: &Point| p.p50_us) as fn(&Point) -> f64),
            ("6,4", |p: &Point| p.p99_us),
        ] {
            let path: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.concurrency), y(get(p))))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
                path.join(" ")
            );
        }
        for p in &pts {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                x(p.concurrency),
                y(p.p50_us)
            );
        }
        let ly = top + 10.0 + i as f64 * 22.0;
        let lx = left + pw + 15.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            esc(t)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
