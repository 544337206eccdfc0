//! A stdio upstream: one child process per session, messages one per line on
//! its stdin and stdout, its stderr copied into our logs. The child ends with
//! its session; a child that exits fails the requests it had in flight.
//!
//! A [`Supervisor`] caps the children running at once and holds back a
//! command that keeps crashing: each crash (an exit or a broken pipe the
//! gateway did not cause, within [`STABLE_AFTER`] of the start) doubles the
//! wait before the next start, from [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`];
//! a child that stays up that long clears the record.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};

use super::error::UpstreamError;
use super::messages::MessageSession;
use crate::config::{Limits, StdioCommand};
use crate::jsonrpc;

/// Wait before restarting after the first crash.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between restarts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A child up this long is healthy: its mount's crash record is cleared.
pub const STABLE_AFTER: Duration = Duration::from_secs(10);

/// The stdio children running at once, across every stdio mount.
#[derive(Debug)]
pub struct Children {
    running: AtomicUsize,
    max: usize,
}

impl Children {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Children {
            running: AtomicUsize::new(0),
            max,
        })
    }

    pub fn running(&self) -> usize {
        self.running.load(Ordering::Relaxed)
    }

    fn acquire(self: &Arc<Self>) -> Option<ChildSlot> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| ChildSlot(self.clone()))
    }
}

/// One running child's place in [`Children`], given back on drop.
struct ChildSlot(Arc<Children>);

impl Drop for ChildSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A mount's record of consecutive crashes, and when it may start again.
#[derive(Debug, Default)]
pub struct Restarts {
    state: Mutex<RestartState>,
}

#[derive(Debug, Default)]
struct RestartState {
    crashes: u32,
    retry_at: Option<Instant>,
    last: Option<String>,
}

/// A mount whose command has been crashing, as health reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Crashes in a row, none since followed by a child that stayed up.
    pub crashes: u32,
    /// How the last one ended.
    pub last: String,
    /// Time left before the next start is allowed (`None`: allowed now).
    pub retry_in: Option<Duration>,
}

/// The wait after `crashes` crashes in a row.
pub fn backoff(crashes: u32) -> Duration {
    let doublings = crashes.saturating_sub(1).min(16);
    (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

impl Restarts {
    /// Whether a child may start now; during backoff, the error says when.
    fn check(&self, upstream: &str) -> Result<(), UpstreamError> {
        let st = self.state.lock().unwrap();
        match st.retry_at {
            Some(at) if at > Instant::now() => Err(UpstreamError::Backoff {
                upstream: upstream.to_owned(),
                crashes: st.crashes,
                last: st.last.clone().unwrap_or_default(),
                retry_in_ms: at.saturating_duration_since(Instant::now()).as_millis() as u64,
            }),
            _ => Ok(()),
        }
    }

    fn crashed(&self, upstream: &str, how: &str) {
        let mut st = self.state.lock().unwrap();
        st.crashes = st.crashes.saturating_add(1);
        let wait = backoff(st.crashes);
        st.retry_at = Some(Instant::now() + wait);
        st.last = Some(how.to_owned());
        tracing::warn!(
            upstream,
            crashes = st.crashes,
            retry_in_ms = wait.as_millis() as u64,
            "stdio upstream crashed ({how}); holding off restarts"
        );
    }

    fn stable(&self, upstream: &str) {
        let mut st = self.state.lock().unwrap();
        if st.crashes > 0 {
            tracing::info!(upstream, after = st.crashes, "stdio upstream recovered");
        }
        *st = RestartState::default();
    }

    /// The crash record, when there is one.
    pub fn fault(&self) -> Option<Fault> {
        let st = self.state.lock().unwrap();
        (st.crashes > 0).then(|| Fault {
            crashes: st.crashes,
            last: st.last.clone().unwrap_or_default(),
            retry_in: st
                .retry_at
                .map(|at| at.saturating_duration_since(Instant::now()))
                .filter(|d| !d.is_zero()),
        })
    }
}

/// What a stdio mount's children answer to: the gateway-wide child count and
/// the mount's restart record.
#[derive(Debug, Clone)]
pub struct Supervisor {
    pub children: Arc<Children>,
    pub restarts: Arc<Restarts>,
}

impl Supervisor {
    /// One with its own count (for one-off use, outside a gateway).
    pub fn standalone(limits: &Limits) -> Self {
        Supervisor {
            children: Children::new(limits.max_stdio_children),
            restarts: Arc::default(),
        }
    }
}

/// Start the child and the tasks that move its messages.
pub fn spawn(
    name: &str,
    cmd: &StdioCommand,
    limits: &Limits,
    shared: bool,
) -> Result<Arc<MessageSession>, UpstreamError> {
    spawn_supervised(name, cmd, limits, shared, &Supervisor::standalone(limits))
}

/// [`spawn`], counted against `sup`'s child limit and restart backoff.
pub fn spawn_supervised(
    name: &str,
    cmd: &StdioCommand,
    limits: &Limits,
    shared: bool,
    sup: &Supervisor,
) -> Result<Arc<MessageSession>, UpstreamError> {
    sup.restarts.check(name)?;
    let Some(slot) = sup.children.acquire() else {
        return Err(UpstreamError::ChildLimit {
            upstream: name.to_owned(),
            max: sup.children.max,
        });
    };
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(&cmd.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &cmd.cwd {
        command.current_dir(cwd);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let detail = format!("`{}`: {e}", cmd.program);
            sup.restarts
                .crashed(name, &format!("could not start: {detail}"));
            return Err(UpstreamError::Spawn {
                upstream: name.to_owned(),
                detail,
            });
        }
    };
    let pid = child.id();
    let started = Instant::now();
    tracing::info!(upstream = name, pid, program = %cmd.program, "started stdio upstream");

    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let session = MessageSession::new(name.into(), tx, shared);
    // Set when the session ends because of the child (a broken pipe, an
    // oversized line) rather than the gateway.
    let child_fault = Arc::new(AtomicBool::new(false));

    tokio::spawn(write_lines(stdin, rx, session.clone(), child_fault.clone()));
    tokio::spawn(log_stderr(name.to_owned(), pid, stderr));
    tokio::spawn(read_lines(
        stdout,
        session.clone(),
        limits.max_message_bytes,
        child_fault.clone(),
    ));
    // Supervisor: reaps the child, and kills it when the session ends first.
    let s = session.clone();
    let restarts = sup.restarts.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let stable = tokio::time::sleep(STABLE_AFTER);
        tokio::pin!(stable);
        let mut marked = false;
        let (status, on_its_own) = loop {
            tokio::select! {
                status = child.wait() => break (status, !s.is_closed()),
                _ = s.closed().cancelled() => {
                    let _ = child.start_kill();
                    break (child.wait().await, false);
                }
                _ = &mut stable, if !marked => {
                    marked = true;
                    restarts.stable(s.upstream());
                }
            }
        };
        let reason = match status {
            Ok(st) => format!("exited ({st})"),
            Err(e) => format!("could not be waited for: {e}"),
        };
        let crashed = on_its_own || child_fault.load(Ordering::Acquire);
        if crashed && started.elapsed() < STABLE_AFTER {
            restarts.crashed(s.upstream(), &reason);
        }
        tracing::info!(upstream = %s.upstream(), pid, %reason, "stdio upstream ended");
        s.close(reason);
    });
    Ok(session)
}

async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::Receiver<Bytes>,
    session: Arc<MessageSession>,
    child_fault: Arc<AtomicBool>,
) {
    loop {
        let message = tokio::select! {
            m = rx.recv() => match m { Some(m) => m, None => break },
            _ = session.closed().cancelled() => break,
        };
        let line = jsonrpc::to_single_line(&message);
        let wrote = async {
            stdin.write_all(&line).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        }
        .await;
        if let Err(e) = wrote {
            child_fault.store(true, Ordering::Release);
            // Usually the child has exited: its exit status, which the
            // supervisor reports, says more than the broken pipe.
            let exited = session.closed().cancelled();
            let _ = tokio::time::timeout(Duration::from_secs(1), exited).await;
            session.close(format!("stopped reading its stdin ({e})"));
            break;
        }
    }
}

async fn read_lines(
    stdout: tokio::process::ChildStdout,
    session: Arc<MessageSession>,
    limit: usize,
    child_fault: Arc<AtomicBool>,
) {
    let codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), limit);
    let mut lines = FramedRead::new(stdout, codec);
    while let Some(line) = lines.next().await {
        match line {
            Ok(line) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                session.deliver(line).await;
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                tracing::warn!(upstream = %session.upstream(), limit, "stdio upstream wrote a line over limits.max_message_bytes; ended the session");
                child_fault.store(true, Ordering::Release);
                session.close(format!(
                    "sent a message over the {limit}-byte limit (limits.max_message_bytes)"
                ));
                return;
            }
            Err(e) => {
                child_fault.store(true, Ordering::Release);
                session.close(format!("stdout failed: {e}"));
                return;
            }
        }
    }
}

/// Longest stderr line logged whole; longer ones are cut.
const STDERR_LINE: usize = 16 * 1024;

async fn log_stderr(name: String, pid: Option<u32>, stderr: tokio::process::ChildStderr) {
    let codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), STDERR_LINE);
    let mut lines = FramedRead::new(stderr, codec);
    // Keep reading whatever comes: a child must never block on a full stderr pipe.
    while let Some(line) = lines.next().await {
        match line {
            Ok(line) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                tracing::info!(target: "mcp_ui_gateway::upstream::stderr", upstream = %name, pid, "{text}");
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                tracing::info!(target: "mcp_ui_gateway::upstream::stderr", upstream = %name, pid, "(a stderr line over {STDERR_LINE} bytes was skipped)");
            }
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crashes_hold_off_starts_until_a_child_stays_up() {
        let r = Restarts::default();
        assert!(r.check("x").is_ok() && r.fault().is_none());
        r.crashed("x", "exited (exit status: 3)");
        r.crashed("x", "exited (exit status: 3)");
        let fault = r.fault().expect("on record");
        assert_eq!(fault.crashes, 2);
        assert_eq!(fault.last, "exited (exit status: 3)");
        let wait = fault.retry_in.expect("held off");
        assert!(wait <= backoff(2) && wait > Duration::ZERO, "{wait:?}");
        let e = r.check("x").unwrap_err().to_string();
        assert!(
            e.starts_with("upstream 'x' keeps crashing (2 in a row, last: exited (exit status: 3)); next start allowed in "),
            "{e}"
        );
        r.stable("x");
        assert!(r.fault().is_none() && r.check("x").is_ok());
    }

    #[test]
    fn children_are_counted_and_given_back() {
        let c = Children::new(2);
        let a = c.acquire().unwrap();
        let _b = c.acquire().unwrap();
        assert!(c.acquire().is_none());
        assert_eq!(c.running(), 2);
        drop(a);
        assert_eq!(c.running(), 1);
        assert!(c.acquire().is_some());
    }
}
