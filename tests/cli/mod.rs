//! The `check` and `init` commands, run as the built binary in temporary
//! directories: `check` finds every problem class in one run and passes clean
//! overlays (the repository's own included); `init` writes stubs that `check`
//! accepts, over every transport, and never replaces a file unasked.
//!
//! Every server listens on 127.0.0.1, and every run of the binary is bounded.

mod bare_binary;
mod challenge;
mod check;
mod commands;
mod heights;
mod init;
mod serve;
mod widgets;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use support::upstreams::{self, HttpFlavor};

use crate::support;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-ui-gateway");
/// Generous: a run starts stdio servers and waits for their handshakes.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// Keeps a hung upstream from using up `RUN_TIMEOUT`.
const LIMITS: &str = "[limits]\nrequest_timeout_secs = 20\nconnect_timeout_secs = 5\n";

/// Runs the binary in `dir`; environment that could change its
/// configuration or log output is removed.
async fn run(dir: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new(BIN);
    command.args(args).current_dir(dir).kill_on_drop(true);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("`mcp-ui-gateway {}` took too long", args.join(" ")))
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// stdout, and both streams for assertion messages.
fn streams(out: &Output) -> (String, String) {
    let stdout = text(&out.stdout);
    let both = format!("--- stdout\n{stdout}--- stderr\n{}", text(&out.stderr));
    (stdout, both)
}

fn write(path: impl AsRef<Path>, contents: &str) {
    let path = path.as_ref();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// A TOML `[[upstream]]` running the bundled demo over stdio.
fn demo_upstream(name: &str) -> String {
    format!("[[upstream]]\nname = \"{name}\"\ncommand = {BIN:?}\nargs = [\"demo-server\"]\n\n")
}

/// `serve` in `dir` in front of the demo server (mounted as `upstream`) with `overlays`,
/// logging at info, with no `MCP_UI_GATEWAY_*` variable of this process.
fn serve_demo_with_overlays(dir: &Path, overlays: &Path) -> support::process::Proc {
    serve_demo_logging(dir, overlays, "info")
}

/// [`serve_demo_with_overlays`], logging as `rust_log` says.
fn serve_demo_logging(dir: &Path, overlays: &Path, rust_log: &str) -> support::process::Proc {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--config", "/dev/null", "--listen", "127.0.0.1:0"])
        .arg("--overlays")
        .arg(overlays)
        .args(["--", BIN, "demo-server"])
        .current_dir(dir)
        .env("RUST_LOG", rust_log);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    support::process::Proc::spawn("gateway", &mut cmd)
}

// Commands run as a user runs them, with the binary on the PATH.

/// The line of `text` that starts with `prefix` (after indentation).
fn line_starting(text: &str, prefix: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .map(str::to_owned)
}

/// Runs `line` with `sh -c` in `dir`, with the binary on the PATH as
/// `mcp-ui-gateway`, as a user who ran `cargo install --path .` would.
async fn shell(dir: &Path, line: &str) -> Output {
    let bin_dir = dir.join(".bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let link = bin_dir.join("mcp-ui-gateway");
    if !link.exists() {
        std::os::unix::fs::symlink(BIN, &link).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = tokio::process::Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .kill_on_drop(true);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") || key == "RUST_LOG" {
            command.env_remove(key);
        }
    }
    tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("`{line}` took too long"))
        .expect("sh runs")
}
