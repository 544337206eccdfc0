//! A stdio upstream: one child process per session, messages one per line on
//! its stdin and stdout, its stderr copied into our logs. The child ends with
//! its session; a child that exits fails the requests it had in flight.
//!
//! Each child leads a process group of its own ([`group`]), which is ended
//! whole (SIGTERM, then SIGKILL after [`KILL_GRACE`]) when the session ends:
//! on DELETE, idle reaping, shutdown, a crash, or the child closing its
//! stdout while it keeps running. Under `serve`, a [`guardian`] process ends
//! the groups should the gateway be killed.
//!
//! A [`Supervisor`] caps the children running at once and holds back a
//! command that keeps crashing: each crash (an exit or a broken pipe the
//! gateway did not cause, within [`STABLE_AFTER`] of the start) doubles the
//! wait before the next start, from [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`];
//! a child that stays up that long clears the record.

pub mod group;
pub mod guardian;
mod kill;
mod pipes;
mod restarts;

pub use group::Ending;
pub use kill::KILL_GRACE;
pub(crate) use restarts::STABLE_AFTER;
pub use restarts::{Children, Fault, Restarts, Supervisor, backoff};

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::process::{Child, Command};

use super::messages::{EndedBy, MessageSession, Mux};
use group::Group;
use mcp_ui_model::config::{Limits, StdioCommand};
use mcp_ui_model::outcome::UpstreamError;

/// Start the child and the tasks that move its messages.
pub fn spawn(
    name: &str,
    cmd: &StdioCommand,
    limits: &Limits,
    mux: Option<Arc<Mux>>,
) -> Result<Arc<MessageSession>, UpstreamError> {
    spawn_supervised(name, cmd, limits, mux, &Supervisor::standalone(limits))
}

/// [`spawn`], counted against `sup`'s child limit and restart backoff.
pub(crate) fn spawn_supervised(
    name: &str,
    cmd: &StdioCommand,
    limits: &Limits,
    mux: Option<Arc<Mux>>,
    sup: &Supervisor,
) -> Result<Arc<MessageSession>, UpstreamError> {
    sup.restarts.check(name)?;
    let Some(slot) = sup.children.acquire() else {
        return Err(UpstreamError::ChildLimit {
            upstream: name.to_owned(),
            max: sup.children.max,
        });
    };
    let mut child = match command(cmd).spawn() {
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
    sup.restarts.count_start();
    let pid = child.id();
    let group = Group::led_by(pid);
    let started = Instant::now();
    tracing::info!(upstream = name, pid, program = %cmd.program, "started stdio upstream");

    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let session = MessageSession::new(name.into(), mux);
    // Set when the session ends because of the child (a broken pipe, an
    // oversized line) rather than the gateway.
    let child_fault = Arc::new(AtomicBool::new(false));

    tokio::spawn(pipes::write_lines(
        stdin,
        session.clone(),
        child_fault.clone(),
    ));
    let tail = Arc::new(pipes::StderrTail::default());
    let stderr_read = tokio::spawn(pipes::log_stderr(
        name.to_owned(),
        pid,
        stderr,
        tail.clone(),
    ));
    tokio::spawn(pipes::read_lines(
        stdout,
        session.clone(),
        limits.max_message_bytes,
        child_fault.clone(),
    ));
    tokio::spawn(watch(Watch {
        slot,
        child,
        group,
        pid,
        started,
        session: session.clone(),
        restarts: sup.restarts.clone(),
        stderr_read,
        tail,
        child_fault,
    }));
    Ok(session)
}

/// The child's command: its pipes, its own process group, its directory.
fn command(cmd: &StdioCommand) -> Command {
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(&cmd.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    if let Some(cwd) = &cmd.cwd {
        command.current_dir(cwd);
    }
    command
}

/// What the task that watches a child holds.
struct Watch {
    slot: restarts::ChildSlot,
    child: Child,
    group: Group,
    pid: Option<u32>,
    started: Instant,
    session: Arc<MessageSession>,
    restarts: Arc<Restarts>,
    stderr_read: tokio::task::JoinHandle<()>,
    tail: Arc<pipes::StderrTail>,
    child_fault: Arc<AtomicBool>,
}

/// Supervisor: ends the child's group when the session ends first, or
/// what is left of it when the child exits; reaps the child.
async fn watch(w: Watch) {
    let Watch {
        slot,
        mut child,
        mut group,
        pid,
        started,
        session: s,
        restarts,
        stderr_read,
        tail,
        child_fault,
    } = w;
    let _slot = slot;
    let stable = tokio::time::sleep(STABLE_AFTER);
    tokio::pin!(stable);
    let mut marked = false;
    let (status, on_its_own) = loop {
        tokio::select! {
            status = child.wait() => break (status, !s.is_closed()),
            _ = s.closed().cancelled() => break (Err(std::io::ErrorKind::Interrupted.into()), false),
            _ = &mut stable, if !marked => {
                marked = true;
                restarts.stable(s.upstream());
            }
        }
    };
    let mut said = String::new();
    if on_its_own {
        // What it wrote last says why; its final lines may still be in
        // the pipe, so their reader is given a moment to finish.
        let _ = tokio::time::timeout(STDERR_AFTER_EXIT, stderr_read).await;
        said = tail.text();
        // Its requests learn of the exit now, not after its group ends.
        s.close(describe(&status, &said));
    }
    let ending_started = Instant::now();
    let (status, ending) = group.end(&mut child).await;
    let reason = describe(&status, &said);
    let crashed = on_its_own || child_fault.load(Ordering::Acquire);
    if crashed && started.elapsed() < STABLE_AFTER {
        restarts.crashed(s.upstream(), &reason);
    }
    let took_ms = ending_started.elapsed().as_millis() as u64;
    log_ended(&s, pid, &reason, ending, took_ms);
    s.close(reason);
}

/// Log how a child ended: as the probe's own doing when the probe ended it.
fn log_ended(s: &MessageSession, pid: Option<u32>, reason: &str, ending: Ending, took_ms: u64) {
    let probe = (s.ended_by() == Some(EndedBy::Probe)).then(|| s.reason().unwrap_or_default());
    match (probe, ending) {
        // The probe's own doing, however the process took it.
        (Some(probe), Ending::Killed) => {
            tracing::info!(upstream = %s.upstream(), pid, exit = %reason, took_ms, "{probe} (its process group outlived SIGTERM by {} s and was killed)", KILL_GRACE.as_secs());
        }
        (Some(probe), _) => {
            tracing::info!(upstream = %s.upstream(), pid, exit = %reason, ?ending, took_ms, "{probe}");
        }
        (None, Ending::Killed) => {
            tracing::warn!(upstream = %s.upstream(), pid, %reason, took_ms, "stdio upstream ended; its process group outlived SIGTERM by {} s and was killed", KILL_GRACE.as_secs());
        }
        (None, _) => {
            tracing::info!(upstream = %s.upstream(), pid, %reason, ?ending, took_ms, "stdio upstream ended");
        }
    }
}

/// How long the end of a child's stderr is awaited after it exits.
const STDERR_AFTER_EXIT: std::time::Duration = std::time::Duration::from_millis(250);

/// How a child ended, with its last stderr lines when it exited by itself.
fn describe(status: &std::io::Result<std::process::ExitStatus>, said: &str) -> String {
    let how = match status {
        Ok(st) => format!("exited ({st})"),
        Err(e) => format!("could not be waited for: {e}"),
    };
    if said.is_empty() {
        how
    } else {
        format!("{how}; its stderr ended with: {said}")
    }
}
