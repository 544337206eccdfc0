//! The integration tests, in one binary (`cargo test --test gateway`): each file
//! `tests/NAME.rs` or folder `tests/NAME/` is the module `NAME`, and `tests/support/`
//! is the harness they share, compiled once. One binary links the dependency tree
//! once; a binary per file linked it once per file (Cargo.toml, `autotests`).
//! `cargo test --test gateway tls::` runs one module, `cargo test --test gateway
//! revision::listen::` one of its parts.
//!
//! The tests run as threads of one process, so none of them changes what the
//! process shares: no `std::env::set_var`, no `set_current_dir` (a child gets its
//! environment and directory on its `Command`), no global tracing subscriber or
//! logger (`tracing::subscriber::set_default` holds for one thread), no signal
//! handler, no `process::exit`. Ports are bound on `127.0.0.1:0`; files are written
//! under a temporary directory or, for the browser runs, under a name of their own in
//! `target/test-artifacts/`. What is measured is a child's (its RSS, its threads, its
//! file descriptors), never this process's. The tests that start many processes
//! (node peers, Chromium, HAProxy, several gateways) take turns on one lock,
//! `support::peers::HEAVY`, so two of them never share the cores.

mod apps;
mod authorization_server;
mod bad_input;
mod browser;
mod children;
mod cli;
mod configmap;
mod connections;
mod faults;
mod fixtures_selftest;
mod golden;
mod guide;
mod host_replays;
mod hosts;
mod idp_selftest;
mod layout;
mod oauth;
mod ops;
mod parity;
mod peers;
mod preview;
mod proxy_matrix;
mod reload;
mod resource_server;
mod revision;
mod scale_out;
mod security;
mod sessions;
mod shared_sessions;
mod shutdown;
mod streams;
mod support;
mod telemetry;
mod tls;
