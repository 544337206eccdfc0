//! Micro-benchmarks of the sealed session ids every request opens (and
//! every `initialize` seals), as bytes per second.
//!
//! `cargo bench --bench session_ids`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_ui_model::session_id::{Owner, Route, SessionKey, Token};
use mcp_ui_overlay::host::HostKind;

/// The gateway binary's allocator, so the figures are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn session_ids(c: &mut Criterion) {
    let key = SessionKey::random();
    let token = Token {
        mount: "everything".into(),
        route: Route::Http {
            upstream_session: Some("6f1c2b9e-5d0a-4c3e-9a57-0b2f8e1d4c6a".into()),
        },
        owner: Owner::Open,
        host: Some(HostKind::ChatGpt),
        started: Some(1_790_000_000_000),
        hello: None,
    };
    let id = key.seal(&token);
    let mut g = c.benchmark_group("session id");
    g.throughput(Throughput::Bytes(id.len() as u64));
    g.bench_function("seal", |b| b.iter(|| key.seal(black_box(&token))));
    g.bench_function("open", |b| b.iter(|| key.open(black_box(&id)).unwrap()));
    g.finish();
}

criterion_group!(benches, session_ids);
criterion_main!(benches);
