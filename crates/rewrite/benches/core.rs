//! Micro-benchmarks of the pure core's hot-path pieces, as bytes per
//! second: envelope classification, the `tools/list` rewrite (full plan +
//! apply, as the relay runs it) at 10, 100 and 1,000 tools, and SSE parsing
//! and framing. They link the pure crates only (`session_ids`, in the
//! upstream crate, measures the sealed session ids).
//!
//! `cargo bench --bench core`; inputs are built from the captured
//! server-everything `tools/list` in tests/golden/input.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::{MountOverlays, OverlaySet, ToolOverlay, Widget, Widgets};
use mcp_ui_rewrite::plan::{self, Rewrite};
use mcp_ui_wire::{jsonrpc, sse};
use serde_json::{Value, json};

/// The gateway binary's allocator, so the figures are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A `tools/list` response of `n` tools cycled from server-everything's real
/// ones (renamed so each is unique), every other tool overlaid.
fn tools_list(n: usize) -> (Vec<u8>, OverlaySet) {
    let captured: Value = serde_json::from_str(include_str!(
        "../../../tests/golden/input/everything-tools-list.json"
    ))
    .unwrap();
    let real = captured["tools"].as_array().unwrap();
    let mut tools = Vec::with_capacity(n);
    let mut overlays = BTreeMap::new();
    for i in 0..n {
        let mut tool = real[i % real.len()].clone();
        let name = format!("{}_{i}", tool["name"].as_str().unwrap());
        tool["name"] = json!(name);
        if i % 2 == 0 {
            let overlay = ToolOverlay {
                widget: Some("board".into()),
                invoking: Some("Working…".into()),
                ..Default::default()
            };
            overlays.insert(name, overlay);
        }
        tools.push(tool);
    }
    let response = json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": tools}});
    let widget = Widget::compile(
        "board",
        &Default::default(),
        "<!doctype html><p>board</p>".into(),
    );
    let mut mounts = BTreeMap::new();
    mounts.insert("everything".to_owned(), MountOverlays::new(overlays));
    (
        serde_json::to_vec(&response).unwrap(),
        OverlaySet::new(mounts, Widgets::new([widget])),
    )
}

fn classify(c: &mut Criterion) {
    let (body, _) = tools_list(100);
    let call = br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"},"_meta":{"progressToken":"p-42"}}}"#;
    let mut g = c.benchmark_group("classify");
    g.throughput(Throughput::Bytes(call.len() as u64));
    g.bench_function("tools/call request", |b| {
        b.iter(|| {
            matches!(
                jsonrpc::classify(black_box(call)).unwrap(),
                jsonrpc::Body::Single(_)
            )
        });
    });
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("tools/list response, 100 tools", |b| {
        b.iter(|| {
            matches!(
                jsonrpc::classify(black_box(&body)).unwrap(),
                jsonrpc::Body::Single(_)
            )
        });
    });
    g.finish();
}

fn rewrite(c: &mut Criterion) {
    let mut g = c.benchmark_group("tools/list rewrite");
    for n in [10, 100, 1000] {
        let (body, overlays) = tools_list(n);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &body, |b, body| {
            b.iter(|| {
                plan::apply(
                    &overlays,
                    "everything",
                    &Rewrite::ToolsListPage { first: true },
                    black_box(body),
                    &Target::default(),
                    &|_| false,
                )
                .body
                .unwrap()
            });
        });
    }
    g.finish();
}

fn sse_events(c: &mut Criterion) {
    let (body, _) = tools_list(100);
    let framed = sse::frame(Some("1_0"), Some("message"), &body);
    let mut stream = Vec::new();
    for _ in 0..10 {
        stream.extend_from_slice(&framed);
    }
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("frame", |b| {
        b.iter(|| sse::frame(None, Some("message"), black_box(&body)));
    });
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.bench_function("parse, 16 KiB chunks", |b| {
        b.iter(|| {
            let mut p = sse::Parser::new(usize::MAX);
            let mut n = 0;
            for chunk in stream.chunks(16 * 1024) {
                p.push(chunk);
                while let Some(ev) = p.next_event().unwrap() {
                    n += ev.raw.len();
                }
            }
            n
        });
    });
    g.finish();
}

criterion_group!(benches, classify, rewrite, sse_events);
criterion_main!(benches);
