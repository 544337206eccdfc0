//! Processes, ports and files of the integration tests, the load bench and the soak
//! example: [`Proc`], a child process killed with everything below it when dropped,
//! whose output is kept and read line by line; signals by PID (the crate forbids
//! `unsafe`, so kill(1), not libc) and the process tree from /proc; ports without a
//! bind-then-release race; directory copies.
//!
//! Ports. A server in this process binds `127.0.0.1:0` itself and keeps the listener.
//! A child is started on port 0 and its port read from the line it prints once bound:
//! the gateway's `MCP endpoint: http://127.0.0.1:PORT/…` ([`endpoint_url`]), the demo
//! server's `demo server: http://…`, node under `tests/peers/loopback.cjs`
//! (`[loopback] listening on 127.0.0.1:PORT`), the load bench's own `listening PORT`.
//! Only a child whose port must be known before it starts goes through
//! [`with_fresh_port`], which retries on a fresh port when the child fails to bind.
//! [`ClosedPort`] is a port nothing listens on, held so nothing else can take it.
//!
//! Benches and examples include this file by `#[path]`: it uses std and tokio only.
#![allow(dead_code)] // each includer uses a different part

use std::fmt;
use std::io::{BufRead as _, BufReader, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the async waits poll.
const POLL: Duration = Duration::from_millis(10);
/// How long the output readers may take to drain after the exit (a grandchild may keep
/// a pipe open).
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------
// Signals and the process tree

/// Sends `sig` (a name such as `TERM` or `KILL`) to `pids` with kill(1); whether kill(1)
/// succeeded (every process was signalled).
pub fn signal(sig: &str, pids: &[u32]) -> bool {
    if pids.is_empty() {
        return true;
    }
    Command::new("kill")
        .args(["-s", sig, "--"])
        .args(pids.iter().map(u32::to_string))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// (pid, ppid, state) of every process, from /proc.
pub fn process_table() -> Vec<(u32, u32, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // pid (comm) state ppid …: comm may hold spaces, so split after ')'.
            let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
            let state = rest.next()?.chars().next()?;
            let ppid = rest.next()?.parse().ok()?;
            Some((pid, ppid, state))
        })
        .collect()
}

/// The processes whose parent is `pid`, zombies included.
pub fn children(pid: u32) -> Vec<u32> {
    process_table()
        .into_iter()
        .filter(|&(_, ppid, _)| ppid == pid)
        .map(|(p, _, _)| p)
        .collect()
}

/// Every live (not zombie) process below `root`.
pub fn descendants(root: u32) -> Vec<u32> {
    let table = process_table();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, state) in &table {
            if ppid == parent && !found.contains(&pid) && state != 'Z' && state != 'X' {
                found.push(pid);
                frontier.push(pid);
            }
        }
    }
    found
}

/// Whether `pid` is running (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The command line of `pid`, its arguments joined by spaces (empty once it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The children of a gateway process that are stdio upstreams: all but the
/// guardian it starts beside them (`mcp-ui-gateway guard-children`).
pub fn stdio_children(gateway: u32) -> Vec<u32> {
    children(gateway)
        .into_iter()
        .filter(|&p| !cmdline(p).ends_with(" guard-children"))
        .collect()
}

/// Waits, at most `limit`, for every process of `pids` to end; those still running.
pub fn wait_gone(mut pids: Vec<u32>, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        pids.retain(|&p| alive(p));
        if pids.is_empty() || Instant::now() >= deadline {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`wait_gone`] for async code.
pub async fn wait_gone_async(mut pids: Vec<u32>, limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        pids.retain(|&p| alive(p));
        if pids.is_empty() || Instant::now() >= deadline {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------
// Processes

/// Which output stream a line came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Why a wait for an output line ended without one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NoLine {
    /// Every captured stream closed (the process exited, usually).
    Ended,
    TimedOut,
}

#[derive(Default)]
struct Output {
    stdout: Vec<String>,
    stderr: Vec<String>,
}

/// A process started by a test, bench or example. Dropping it kills it and every process
/// below it (SIGKILL), so nothing outlives a test, panics included. Its piped output is
/// kept in full and also delivered line by line ([`Proc::look_for`] and friends).
pub struct Proc {
    pub name: String,
    pub pid: u32,
    child: Child,
    out: Arc<Mutex<Output>>,
    lines: Receiver<(Stream, String)>,
    readers: Vec<JoinHandle<()>>,
}

impl Proc {
    /// Starts `cmd` with stdin closed and stdout and stderr captured; panics when it
    /// cannot be started.
    pub fn spawn(name: impl Into<String>, cmd: &mut Command) -> Proc {
        let name = name.into();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Proc::start(name.clone(), cmd).unwrap_or_else(|e| panic!("{name}: cannot spawn: {e}"))
    }

    /// Starts `cmd` with the stdio it was given; the streams set to
    /// [`Stdio::piped`] are captured.
    pub fn start(name: impl Into<String>, cmd: &mut Command) -> std::io::Result<Proc> {
        let name = name.into();
        let mut child = cmd
            .spawn()
            .map_err(|e| std::io::Error::new(e.kind(), format!("{cmd:?}: {e}")))?;
        let pid = child.id();
        let out = Arc::new(Mutex::new(Output::default()));
        let (tx, lines) = mpsc::channel();
        let mut readers = Vec::new();
        if let Some(pipe) = child.stdout.take() {
            readers.push(read_lines(pipe, Stream::Stdout, out.clone(), tx.clone()));
        }
        if let Some(pipe) = child.stderr.take() {
            readers.push(read_lines(pipe, Stream::Stderr, out.clone(), tx));
        }
        Ok(Proc {
            name,
            pid,
            child,
            out,
            lines,
            readers,
        })
    }

    /// Its standard input, once, when it was started with one piped.
    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// The next captured line, within `limit`.
    pub fn next_line(&self, limit: Duration) -> Result<(Stream, String), NoLine> {
        self.lines.recv_timeout(limit).map_err(|e| match e {
            RecvTimeoutError::Timeout => NoLine::TimedOut,
            RecvTimeoutError::Disconnected => NoLine::Ended,
        })
    }

    /// The first captured line `pick` accepts, within `limit` (lines before it are
    /// consumed).
    pub fn look_for<T>(
        &self,
        limit: Duration,
        mut pick: impl FnMut(Stream, &str) -> Option<T>,
    ) -> Result<T, NoLine> {
        let deadline = Instant::now() + limit;
        loop {
            let (stream, line) =
                self.next_line(deadline.saturating_duration_since(Instant::now()))?;
            if let Some(value) = pick(stream, &line) {
                return Ok(value);
            }
        }
    }

    /// [`Proc::look_for`] for async code.
    pub async fn look_for_async<T>(
        &self,
        limit: Duration,
        mut pick: impl FnMut(Stream, &str) -> Option<T>,
    ) -> Result<T, NoLine> {
        let deadline = Instant::now() + limit;
        loop {
            match self.lines.try_recv() {
                Ok((stream, line)) => {
                    if let Some(value) = pick(stream, &line) {
                        return Ok(value);
                    }
                }
                Err(TryRecvError::Disconnected) => return Err(NoLine::Ended),
                Err(TryRecvError::Empty) if Instant::now() >= deadline => {
                    return Err(NoLine::TimedOut);
                }
                Err(TryRecvError::Empty) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// [`Proc::look_for`], panicking with the output's tail when no line is found.
    pub fn wait_for<T>(
        &mut self,
        what: &str,
        limit: Duration,
        pick: impl FnMut(Stream, &str) -> Option<T>,
    ) -> T {
        let found = self.look_for(limit, pick);
        self.found_or_panic(what, limit, found)
    }

    /// [`Proc::wait_for`] for async code.
    pub async fn wait_for_async<T>(
        &mut self,
        what: &str,
        limit: Duration,
        pick: impl FnMut(Stream, &str) -> Option<T>,
    ) -> T {
        let found = self.look_for_async(limit, pick).await;
        self.found_or_panic(what, limit, found)
    }

    fn found_or_panic<T>(&mut self, what: &str, limit: Duration, found: Result<T, NoLine>) -> T {
        match found {
            Ok(value) => value,
            Err(NoLine::Ended) => {
                let status = self.wait_exit(Duration::from_secs(5));
                panic!(
                    "{}: output ended before {what} (exit: {status:?})\n{}",
                    self.name,
                    self.tail(40)
                )
            }
            Err(NoLine::TimedOut) => panic!(
                "{}: no {what} within {limit:?}\n{}",
                self.name,
                self.tail(40)
            ),
        }
    }

    /// The exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Polls for the exit for at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => return None,
            }
        }
    }

    /// [`Proc::wait_exit`] for async code.
    pub async fn wait_exit_async(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => tokio::time::sleep(POLL).await,
                _ => return None,
            }
        }
    }

    /// Waits (bounded) for the process to exit by itself; then its status and its full
    /// stdout and stderr. After `limit` it is killed, with its tree.
    pub fn finish(&mut self, limit: Duration) -> Result<(ExitStatus, String, String), String> {
        let status = self.wait_exit(limit);
        self.finished(limit, status)
    }

    /// [`Proc::finish`] for async code.
    pub async fn finish_async(
        &mut self,
        limit: Duration,
    ) -> Result<(ExitStatus, String, String), String> {
        let status = self.wait_exit_async(limit).await;
        self.finished(limit, status)
    }

    fn finished(
        &mut self,
        limit: Duration,
        status: Option<ExitStatus>,
    ) -> Result<(ExitStatus, String, String), String> {
        let Some(status) = status else {
            self.kill_tree();
            return Err(format!(
                "{}: still running after {limit:?}; killed\n{}",
                self.name,
                self.tail(60)
            ));
        };
        self.join_readers();
        Ok((status, self.stdout(), self.stderr()))
    }

    /// The pipes close once every holder has exited: bounded, in case a grandchild
    /// keeps one open.
    fn join_readers(&mut self) {
        let deadline = Instant::now() + DRAIN_LIMIT;
        for reader in self.readers.drain(..) {
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }

    /// SIGTERM, then a bounded wait for the exit (SIGKILL to the tree after it).
    pub fn terminate(&mut self, limit: Duration) -> Result<ExitStatus, String> {
        signal("TERM", &[self.pid]);
        let status = self.wait_exit(limit);
        self.terminated(limit, status)
    }

    /// [`Proc::terminate`] for async code.
    pub async fn terminate_async(&mut self, limit: Duration) -> Result<ExitStatus, String> {
        signal("TERM", &[self.pid]);
        let status = self.wait_exit_async(limit).await;
        self.terminated(limit, status)
    }

    fn terminated(
        &mut self,
        limit: Duration,
        status: Option<ExitStatus>,
    ) -> Result<ExitStatus, String> {
        status.ok_or_else(|| {
            self.kill_tree();
            format!(
                "{}: still running {limit:?} after SIGTERM; killed\n{}",
                self.name,
                self.tail(40)
            )
        })
    }

    /// SIGKILL to every descendant, then to the process itself, and a bounded wait for
    /// all of them to be gone. The process is stopped first, so it cannot start a
    /// replacement for a child killed here (an nginx master respawns a worker that
    /// dies), which would outlive it. Waiting for the descendants too means their
    /// listening sockets are closed on return: a server started next on the same
    /// port is the only one there (an nginx worker still dying would otherwise
    /// accept the readiness probe of its replacement, then refuse what follows).
    pub fn kill_tree(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        signal("STOP", &[self.pid]);
        let tree = descendants(self.pid);
        signal("KILL", &tree);
        let _ = self.child.kill();
        let _ = self.wait_exit(Duration::from_secs(5));
        wait_gone(tree, Duration::from_secs(5));
    }

    /// Everything captured on stdout so far.
    pub fn stdout(&self) -> String {
        self.output().stdout.join("\n")
    }

    /// Everything captured on stderr so far.
    pub fn stderr(&self) -> String {
        self.output().stderr.join("\n")
    }

    fn output(&self) -> std::sync::MutexGuard<'_, Output> {
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last `n` lines of each captured stream, for failure messages.
    pub fn tail(&self, n: usize) -> String {
        let out = self.output();
        let last = |v: &[String]| {
            v[v.len().saturating_sub(n)..]
                .iter()
                .map(|l| format!("    {}", truncate(l, 800)))
                .collect::<Vec<_>>()
                .join("\n")
        };
        format!(
            "  --- {} (pid {}) stdout, last {n} lines:\n{}\n  --- stderr, last {n} lines:\n{}",
            self.name,
            self.pid,
            last(&out.stdout),
            last(&out.stderr)
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill_tree();
    }
}

impl fmt::Debug for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (pid {})", self.name, self.pid)
    }
}

fn read_lines(
    pipe: impl Read + Send + 'static,
    stream: Stream,
    out: Arc<Mutex<Output>>,
    tx: Sender<(Stream, String)>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        // Bytes, not `lines()`: invalid UTF-8 must not stop the draining (a full pipe
        // would block the process).
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf)
                .trim_end_matches(['\n', '\r'])
                .to_owned();
            {
                let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
                match stream {
                    Stream::Stdout => out.stdout.push(line.clone()),
                    Stream::Stderr => out.stderr.push(line.clone()),
                }
            }
            let _ = tx.send((stream, line));
        }
    })
}

/// `s` cut to at most `max` bytes (on a character boundary), with its length.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

// ---------------------------------------------------------------------------------------
// Ports

/// The URL of the gateway's `MCP endpoint: URL -> upstream …` line, printed once it has
/// bound its listener (so `--listen 127.0.0.1:0` gives the real port).
pub fn endpoint_url(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("MCP endpoint: ")?;
    Some(rest.split(" -> ").next()?.trim().to_owned())
}

/// The port of node's `[loopback] listening on 127.0.0.1:PORT` line (the
/// `tests/peers/loopback.cjs` preload, printed once bound: `PORT=0` gives the real port).
pub fn loopback_port(line: &str) -> Option<u16> {
    line.trim()
        .strip_prefix("[loopback] listening on 127.0.0.1:")?
        .parse()
        .ok()
}

/// The first line of the file at `path` that `pick` accepts, within `limit`, for a child
/// that writes its output to a file; an error when `proc` exits first or time runs out.
pub async fn line_in_file<T>(
    path: &Path,
    proc: &mut Proc,
    limit: Duration,
    mut pick: impl FnMut(&str) -> Option<T>,
) -> Result<T, String> {
    let deadline = Instant::now() + limit;
    loop {
        let exited = proc.try_wait();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(value) = text.lines().find_map(&mut pick) {
            return Ok(value);
        }
        if let Some(status) = exited {
            return Err(format!(
                "{} exited ({status}) before the line awaited in {}:\n{text}",
                proc.name,
                path.display()
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{}: not the line awaited in {} within {limit:?}:\n{text}",
                proc.name,
                path.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `start` with a fresh loopback port, up to `attempts` times, for a child that must
/// be told its port before it starts and cannot report one it picked (port 0). The port
/// is found by binding `127.0.0.1:0` and releasing it, so another process may take it
/// before the child binds: `start` returns an error when the child could not bind (it
/// exited, say), and a new port is tried.
pub async fn with_fresh_port<T>(
    attempts: usize,
    mut start: impl AsyncFnMut(u16) -> Result<T, String>,
) -> Result<T, String> {
    let mut failures = Vec::new();
    for _ in 0..attempts {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("bind 127.0.0.1:0: {e}"))?
            .port();
        match start(port).await {
            Ok(value) => return Ok(value),
            Err(e) => failures.push(format!("port {port}: {e}")),
        }
    }
    Err(format!(
        "no start in {attempts} attempts:\n{}",
        failures.join("\n")
    ))
}

/// A loopback port nothing listens on: a TCP socket bound to `127.0.0.1:0` that never
/// listens, so connections to it are refused, and no other process can bind the port
/// while this is held.
pub struct ClosedPort {
    pub addr: SocketAddr,
    _socket: tokio::net::TcpSocket,
}

impl ClosedPort {
    pub fn new() -> ClosedPort {
        let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("bind 127.0.0.1:0");
        let addr = socket.local_addr().expect("bound");
        ClosedPort {
            addr,
            _socket: socket,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

// ---------------------------------------------------------------------------------------
// Files

/// Copies the directory tree `from` to `to` (created).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copy {}: {e}", entry.path().display()));
        }
    }
}

/// Waits until something accepts connections on 127.0.0.1:`port`, for at
/// most `limit`; fails with `proc`'s last output if it exits first or the
/// time is up.
pub async fn wait_listening(proc: &mut Proc, port: u16, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = proc.try_wait() {
            return Err(format!(
                "{} exited ({status})\n{}",
                proc.name,
                proc.tail(30)
            ));
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} did not listen on 127.0.0.1:{port} within {limit:?}\n{}",
                proc.name,
                proc.tail(30)
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// HAProxy in the foreground with the configuration file `config`, once it
/// listens on `port` (scripts/install-peers.sh installs it).
pub async fn start_haproxy(config: &Path, port: u16, limit: Duration) -> Result<Proc, String> {
    let mut cmd = Command::new("haproxy");
    cmd.arg("-db")
        .arg("-f")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut proc = Proc::start("haproxy", &mut cmd)
        .map_err(|e| format!("cannot start haproxy (scripts/install-peers.sh installs it): {e}"))?;
    wait_listening(&mut proc, port, limit).await?;
    Ok(proc)
}
