//! Operations endpoints and request ids, against real upstreams on 127.0.0.1:
//!
//! - `/metrics` after a known sequence in front of the rmcp fixture as a stdio
//!   upstream (initialize, notifications/initialized, tools/list, three
//!   tools/call, a call to an unknown tool answered with a JSON-RPC error, a
//!   request with a forged session id answered 404, a DELETE): exact counter
//!   values, histogram `_count`/`_sum`/bucket consistency, the open sessions
//!   and stdio children gauges, and text that parses as Prometheus exposition
//!   format 0.0.4 (a small parser below);
//! - outcomes read from a streamable HTTP upstream's answers: an SSE result and
//!   an SSE JSON-RPC error, and a JSON upstream silent past the request timeout;
//! - a client that goes away before its answer counted as `cancelled`;
//! - overlay reloads counted by result;
//! - `/readyz`: 200 with a live upstream, 503 naming an upstream at a closed
//!   loopback port;
//! - `x-request-id`: echoed when sane, generated when absent or not sane,
//!   present on error responses;
//! - the gateway binary's log lines of a request carry its `request_id`, with
//!   `--log-format json` and in text.
//!
//! Every request and wait is bounded; children end with the test (kill on drop).

mod endpoints;
mod metrics;
mod request_ids;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use support::clients::{body_json, post_json, request_raw};
use support::gateway::{self as gw, TestGateway};
use support::process::{ClosedPort, Proc, Stream, endpoint_url};
use support::upstreams::{self, HttpFlavor, STDIO_COMMAND};

use crate::support;

const PROTOCOL: &str = "2025-11-25";
/// A condition that settles asynchronously (a child reaped).
const SETTLE_LIMIT: Duration = Duration::from_secs(15);
/// The gateway binary printing its endpoint line.
const START_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Prometheus text exposition (0.0.4), parsed strictly enough to catch format errors

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the exposition; panics naming the line that does not parse. Checks
/// that every sample belongs to a family declared by a `# TYPE` line before it,
/// that a family is declared once, and that `# HELP`/`# TYPE` name valid metrics.
fn parse_exposition(text: &str) -> Vec<Sample> {
    assert!(
        text.ends_with('\n'),
        "the exposition must end with a newline"
    );
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("line {}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let keyword = words.next().unwrap_or("");
            let name = words.next().unwrap_or("");
            let tail = words.next().unwrap_or("");
            match keyword {
                "HELP" => assert!(valid_name(name), "{}", at()),
                "TYPE" => {
                    assert!(valid_name(name), "{}", at());
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&tail),
                        "unknown type, {}",
                        at()
                    );
                    assert!(
                        types.insert(name.to_owned(), tail.to_owned()).is_none(),
                        "family declared twice, {}",
                        at()
                    );
                }
                _ => {}
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let sample = parse_sample(line).unwrap_or_else(|e| panic!("{e}, {}", at()));
        let family = family_of(&sample.name, &types)
            .unwrap_or_else(|| panic!("sample of an undeclared family, {}", at()));
        if types[&family] == "histogram" {
            assert!(
                sample.name != family,
                "a histogram has only _bucket, _sum and _count samples, {}",
                at()
            );
        }
        samples.push(sample);
    }
    samples
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn family_of(name: &str, types: &BTreeMap<String, String>) -> Option<String> {
    if types.contains_key(name) {
        return Some(name.to_owned());
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let base = name.strip_suffix(suffix)?;
        (types.get(base).map(String::as_str) == Some("histogram")).then(|| base.to_owned())
    })
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(['{', ' '])
        .ok_or("no value after the metric name")?;
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err(format!("invalid metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices().peekable();
        let end;
        loop {
            // label name
            let start = chars.peek().map(|(i, _)| *i).ok_or("unterminated labels")?;
            if inner[start..].starts_with('}') {
                end = start + 1;
                break;
            }
            let eq = inner[start..].find('=').ok_or("label without '='")? + start;
            let label = &inner[start..eq];
            if !valid_name(label) || label.contains(':') {
                return Err(format!("invalid label name {label:?}"));
            }
            while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                chars.next();
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err("label value must be quoted".into());
            }
            let mut value = String::new();
            loop {
                match chars.next().map(|(_, c)| c) {
                    Some('\\') => match chars.next().map(|(_, c)| c) {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        other => return Err(format!("bad escape {other:?} in a label value")),
                    },
                    Some('"') => break,
                    Some('\n') | None => return Err("unterminated label value".into()),
                    Some(c) => value.push(c),
                }
            }
            if labels.insert(label.to_owned(), value).is_some() {
                return Err(format!("label {label:?} given twice"));
            }
            match chars.next() {
                Some((_, ',')) => continue,
                Some((i, '}')) => {
                    end = i + 1;
                    break;
                }
                _ => return Err("expected ',' or '}' after a label".into()),
            }
        }
        rest = &inner[end..];
    }
    let mut fields = rest
        .strip_prefix(' ')
        .ok_or("expected one space before the value")?
        .split(' ');
    let value = fields.next().ok_or("no value")?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().map_err(|_| format!("invalid value {v:?}"))?,
    };
    if let Some(ts) = fields.next() {
        ts.parse::<i64>()
            .map_err(|_| format!("invalid timestamp {ts:?}"))?;
    }
    if fields.next().is_some() {
        return Err("trailing fields".into());
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// The value of the one sample named `name` with exactly these labels.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let found: Vec<f64> = samples
        .iter()
        .filter(|s| s.name == name && s.labels == want)
        .map(|s| s.value)
        .collect();
    assert!(
        found.len() <= 1,
        "{name}{labels:?} appears {} times",
        found.len()
    );
    found.first().copied()
}

/// Every histogram series: buckets cumulative and ascending in `le`, `+Inf`
/// equal to `_count`, `_sum` non-negative (and at most count × the largest
/// finite bound when everything fell in finite buckets).
fn check_histograms(samples: &[Sample], name: &str) -> usize {
    // labels other than `le` -> (le, cumulative count) in order
    type Buckets = Vec<(f64, f64)>;
    let mut series: BTreeMap<Vec<(String, String)>, Buckets> = BTreeMap::new();
    for s in samples
        .iter()
        .filter(|s| s.name == format!("{name}_bucket"))
    {
        let mut labels = s.labels.clone();
        let le = labels.remove("le").expect("a bucket has le");
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().expect("le is a number")
        };
        series
            .entry(labels.into_iter().collect())
            .or_default()
            .push((le, s.value));
    }
    for (labels, buckets) in &series {
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for w in buckets.windows(2) {
            assert!(w[0].0 < w[1].0, "{name}{labels:?}: le not ascending");
            assert!(w[0].1 <= w[1].1, "{name}{labels:?}: buckets not cumulative");
        }
        let (last_le, last) = *buckets.last().unwrap();
        assert!(last_le.is_infinite(), "{name}{labels:?}: no +Inf bucket");
        let count = value(samples, &format!("{name}_count"), &pairs).expect("_count");
        let sum = value(samples, &format!("{name}_sum"), &pairs).expect("_sum");
        assert_eq!(last, count, "{name}{labels:?}: +Inf bucket != _count");
        assert!(sum >= 0.0, "{name}{labels:?}: negative _sum");
        let finite_max = buckets[buckets.len() - 2].0;
        if buckets[buckets.len() - 2].1 == count {
            assert!(
                sum <= count * finite_max,
                "{name}{labels:?}: _sum {sum} exceeds {count} × {finite_max}"
            );
        }
    }
    series.len()
}

async fn scrape(gateway: &TestGateway) -> (String, Vec<Sample>) {
    let (status, headers, body) =
        request_raw(Method::GET, &gateway.url_for("/metrics"), &[], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = String::from_utf8(body.to_vec()).expect("UTF-8 exposition");
    let samples = parse_exposition(&text);
    (text, samples)
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

// ---------------------------------------------------------------------------------------
