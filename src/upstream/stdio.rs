//! A stdio upstream: one child process per session, messages one per line on
//! its stdin and stdout, its stderr copied into our logs. The child ends with
//! its session; a child that exits fails the requests it had in flight.

use std::process::Stdio;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, FramedRead};

use super::UpstreamError;
use super::messages::MessageSession;
use crate::config::{Limits, StdioCommand};
use crate::jsonrpc;

/// Start the child and the tasks that move its messages.
pub fn spawn(
    name: &str,
    cmd: &StdioCommand,
    limits: &Limits,
    shared: bool,
) -> Result<Arc<MessageSession>, UpstreamError> {
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
    let mut child = command.spawn().map_err(|e| UpstreamError::Spawn {
        upstream: name.to_owned(),
        detail: format!("`{}`: {e}", cmd.program),
    })?;
    let pid = child.id();
    tracing::info!(upstream = name, pid, program = %cmd.program, "started stdio upstream");

    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let session = MessageSession::new(name.into(), tx, shared);

    tokio::spawn(write_lines(stdin, rx, session.clone()));
    tokio::spawn(log_stderr(name.to_owned(), pid, stderr));
    tokio::spawn(read_lines(
        stdout,
        session.clone(),
        limits.max_message_bytes,
    ));
    // Supervisor: reaps the child, and kills it when the session ends first.
    let s = session.clone();
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status,
            _ = s.closed().cancelled() => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        let reason = match status {
            Ok(st) => format!("exited ({st})"),
            Err(e) => format!("could not be waited for: {e}"),
        };
        tracing::info!(upstream = %s.upstream(), pid, %reason, "stdio upstream ended");
        s.close(reason);
    });
    Ok(session)
}

async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::Receiver<Bytes>,
    session: Arc<MessageSession>,
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
            session.close(format!("stopped reading its stdin ({e})"));
            break;
        }
    }
}

async fn read_lines(
    stdout: tokio::process::ChildStdout,
    session: Arc<MessageSession>,
    limit: usize,
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
                tracing::warn!(upstream = %session.upstream(), limit, "stdio upstream wrote a line over the message limit; ended the session");
                session.close(format!("sent a message over the {limit}-byte limit"));
                return;
            }
            Err(e) => {
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
