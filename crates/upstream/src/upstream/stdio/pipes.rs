//! The tasks that move a child's messages: lines to its stdin, lines from its
//! stdout, and its stderr into the log.
//!
//! A child that stops reading its stdin stalls only its writer: messages
//! wait in the session's bounded outbox, and each request waits no longer
//! than its timeout, queued or not (a line half written cannot be taken
//! back, so the writer waits for the child or the end of the session). A child
//! that closes its stdout, or writes a line that is not UTF-8, is dealt with
//! at once rather than at the request timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};

use crate::upstream::messages::MessageSession;
use mcp_ui_wire::jsonrpc;

/// After the end of a child's stdout, how long its exit (whose status says
/// more) is awaited before the session ends for the closed stdout itself.
const EXIT_AFTER_EOF: Duration = Duration::from_millis(250);

pub(super) async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    session: Arc<MessageSession>,
    child_fault: Arc<AtomicBool>,
) {
    loop {
        let message = tokio::select! {
            m = session.outgoing() => m,
            _ = session.closed().cancelled() => break,
        };
        let line = jsonrpc::to_single_line(&message);
        let write = async {
            stdin.write_all(&line).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        let wrote = tokio::select! {
            w = write => w,
            _ = session.closed().cancelled() => break,
        };
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

pub(super) async fn read_lines(
    stdout: tokio::process::ChildStdout,
    session: Arc<MessageSession>,
    limit: usize,
    child_fault: Arc<AtomicBool>,
) {
    let codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), limit);
    let mut lines = FramedRead::new(stdout, codec);
    loop {
        let line = tokio::select! {
            l = lines.next() => match l { Some(l) => l, None => break },
            _ = session.closed().cancelled() => return,
        };
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
    // The end of stdout: the child exited (its status, which the supervisor
    // reports, says more), or it closed stdout and will answer nothing more.
    let exited = session.closed().cancelled();
    if tokio::time::timeout(EXIT_AFTER_EOF, exited).await.is_err() {
        tracing::warn!(upstream = %session.upstream(), "stdio upstream closed its stdout but keeps running; ended the session");
        child_fault.store(true, Ordering::Release);
        session.close("closed its stdout while still running");
    }
}

/// Longest stderr line logged whole; longer ones are cut.
const STDERR_LINE: usize = 16 * 1024;

/// How many of a child's last stderr lines are kept, each cut to how many
/// characters, to say why it exited.
const TAIL_LINES: usize = 3;
const TAIL_CHARS: usize = 200;

/// A child's last few stderr lines: what a child that exits says of why
/// (`ModuleNotFoundError: No module named …`).
#[derive(Debug, Default)]
pub(super) struct StderrTail(std::sync::Mutex<std::collections::VecDeque<String>>);

impl StderrTail {
    fn push(&self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line.chars().take(TAIL_CHARS).collect());
    }

    /// The lines kept, joined with ` | `; empty when there are none.
    pub(super) fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

/// Logs the child's stderr line by line, keeping the last few in `tail`;
/// returns at its end.
pub(super) async fn log_stderr(
    name: String,
    pid: Option<u32>,
    stderr: tokio::process::ChildStderr,
    tail: Arc<StderrTail>,
) {
    let codec = AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), STDERR_LINE);
    let mut lines = FramedRead::new(stderr, codec);
    // Keep reading whatever comes: a child must never block on a full stderr pipe.
    while let Some(line) = lines.next().await {
        match line {
            Ok(line) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                tracing::info!(target: "mcp_ui_gateway::upstream::stderr", upstream = %name, pid, "{text}");
                tail.push(text);
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => {
                tracing::info!(target: "mcp_ui_gateway::upstream::stderr", upstream = %name, pid, "(a stderr line over {STDERR_LINE} bytes was skipped)");
            }
            Err(_) => break,
        }
    }
}
