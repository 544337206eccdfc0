//! The processes under test, all on 127.0.0.1: the bundled demo server over
//! streamable HTTP and the release gateway in front of it (mount `demo`,
//! with a temporary copy of the overlays) and of the fixture server as a
//! stdio upstream (mount `echo`); and the gateway's resident set size.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};

use crate::Args;
use crate::process::{Proc, copy_dir, line_in_file};

/// What [`start`] started; dropping it stops the processes.
pub struct Started {
    /// The temporary directory: the overlays, the configuration, the log.
    pub work: tempfile::TempDir,
    /// The copy of `demo.toml` the reloads rewrite, and its text as copied.
    pub demo_toml: PathBuf,
    pub original: String,
    /// Kept running for the whole soak.
    pub upstream: Proc,
    pub gateway: Proc,
    pub gateway_addr: SocketAddr,
    pub log_path: PathBuf,
}

pub async fn start(args: &Args, stdio_sessions: usize) -> anyhow::Result<Started> {
    for bin in [&args.gateway_bin, &args.fixture_bin] {
        if !bin.is_file() {
            bail!(
                "{} not found; build it first: cargo build --release --bins",
                bin.display()
            );
        }
    }
    let work = tempfile::Builder::new().prefix("mcp-ui-soak-").tempdir()?;
    // Nested one level: the gateway also watches the overlay directory's
    // parent, which must not be where its own log is written.
    let overlays = work.path().join("tree").join("overlays");
    copy_dir(&args.overlays, &overlays);
    let demo_toml = overlays.join("demo.toml");
    let original = std::fs::read_to_string(&demo_toml)
        .with_context(|| format!("{} (the demo overlay)", demo_toml.display()))?;

    // Both on port 0: each prints its address once bound.
    let mut cmd = Command::new(&args.gateway_bin);
    cmd.args(["demo-server", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let upstream = Proc::start("the demo server", &mut cmd).context("start the demo server")?;
    let upstream_addr = upstream
        .look_for_async(Duration::from_secs(30), |_, line| {
            addr_after(line, "demo server: ")
        })
        .await
        .map_err(|e| anyhow!("the demo server printed no address ({e:?})"))?;

    let config = work.path().join("gateway.toml");
    write_config(&config, &overlays, upstream_addr, stdio_sessions, args)?;
    let log_path = work.path().join("gateway.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = Command::new(&args.gateway_bin);
    cmd.arg("serve")
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "info")
        .stdout(log.try_clone()?)
        .stderr(log);
    let mut gateway = Proc::start("the gateway", &mut cmd).context("start the gateway")?;
    let gateway_pid = gateway.pid;
    let gateway_addr = line_in_file(&log_path, &mut gateway, Duration::from_secs(30), |line| {
        addr_after(line, "MCP endpoint: ")
    })
    .await
    .map_err(|e| anyhow!(e))?;
    println!(
        "soak: gateway pid {gateway_pid} on http://{gateway_addr}, demo upstream on {upstream_addr}, log {}",
        log_path.display()
    );
    Ok(Started {
        work,
        demo_toml,
        original,
        upstream,
        gateway,
        gateway_addr,
        log_path,
    })
}

/// The gateway's configuration, at `config`: the demo server at
/// `upstream_addr` as mount `demo`, the fixture server as the stdio mount
/// `echo`, the `overlays` copy, and room for every session.
fn write_config(
    config: &Path,
    overlays: &Path,
    upstream_addr: SocketAddr,
    stdio_sessions: usize,
    args: &Args,
) -> anyhow::Result<()> {
    std::fs::write(
        config,
        format!(
            r#"listen = "127.0.0.1:0"
overlays = {overlays:?}

[limits]
max_sessions = {max}
session_idle_secs = 3600

[[upstream]]
name = "demo"
url = "http://{upstream_addr}/mcp"

[[upstream]]
name = "echo"
command = {fixture:?}
"#,
            overlays = overlays.display().to_string(),
            max = (stdio_sessions + 64).max(1024),
            fixture = args.fixture_bin.canonicalize()?.display().to_string(),
        ),
    )?;
    Ok(())
}

/// The `ADDR` of a `PREFIX http://ADDR/…` line.
fn addr_after(line: &str, prefix: &str) -> Option<SocketAddr> {
    line.trim()
        .strip_prefix(prefix)?
        .strip_prefix("http://")?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// Resident set size of a process, in KiB.
pub fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or_else(|| anyhow!("no VmRSS for {pid}"))?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow!("bad VmRSS line"))?
        .parse()?)
}
