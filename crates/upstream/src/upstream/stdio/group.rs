//! A stdio child's process group. Every child leads a group of its own, so
//! that what it starts in turn (the real server behind `sh -c`, `npx` or
//! `uvx`, and that server's helpers) ends with it, and so that a signal from
//! the gateway's terminal (Ctrl-C) reaches the gateway alone, which then
//! drains its calls before ending the children.
//!
//! [`Group::end`] sends the whole group SIGTERM, waits up to [`KILL_GRACE`]
//! for it to empty (reaping the leader meanwhile), then SIGKILLs whatever is
//! left. A group whose task is dropped before that (the runtime ended) is
//! SIGKILLed on drop. While it may have members, the group is on the
//! [`guardian`](super::guardian)'s list, which ends it should the gateway die
//! without doing so.
//!
//! A descendant that leaves the group on purpose (`setsid`, a daemon) is out
//! of reach, as with any process supervisor that does not use cgroups.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::Child;
use tokio::time::Instant;

use super::guardian;
use super::kill::{KILL_GRACE, POLL, Sig, present, running, signal};

/// Bound on the wait for the leader, and for the group to stop running,
/// after SIGKILL.
const AFTER_KILL: Duration = Duration::from_secs(3);

/// How a group ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Nothing of it was left (the leader and every member had exited).
    Empty,
    /// Every member exited after SIGTERM.
    Terminated,
    /// Something was still there after [`KILL_GRACE`] and was SIGKILLed.
    Killed,
}

/// The process group a child leads, until it is ended.
pub(crate) struct Group {
    /// `None` once ended, or when the child had no pid.
    pgid: Option<i32>,
}

impl Group {
    /// The group led by the child `pid` (started with `process_group(0)`),
    /// put on the guardian's list.
    pub(crate) fn led_by(pid: Option<u32>) -> Group {
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0);
        if let Some(p) = pgid {
            guardian::watch(p);
        }
        Group { pgid }
    }

    /// End the group and reap its leader `child`: SIGTERM to every member,
    /// up to [`KILL_GRACE`] for them to go, SIGKILL to those left. The
    /// leader's exit status, and how the group ended.
    pub async fn end(&mut self, child: &mut Child) -> (io::Result<ExitStatus>, Ending) {
        let Some(pgid) = self.pgid else {
            let _ = child.start_kill();
            return (child.wait().await, Ending::Empty);
        };
        let deadline = Instant::now() + KILL_GRACE;
        let mut ending = Ending::Empty;
        if signal(pgid, Sig::Term) {
            ending = Ending::Terminated;
        } else {
            // No group (any more): the leader alone, if it is still there.
            let _ = child.start_kill();
        }
        let mut status = None;
        while ending == Ending::Terminated {
            if status.is_none() {
                tokio::select! {
                    s = child.wait() => status = Some(s),
                    _ = tokio::time::sleep(POLL) => {}
                }
            } else {
                tokio::time::sleep(POLL).await;
            }
            // The leader counts while it is a zombie: look once it is reaped.
            if status.is_some() && !present(pgid) {
                break;
            }
            if Instant::now() >= deadline {
                signal(pgid, Sig::Kill);
                ending = Ending::Killed;
            }
        }
        let status = match status {
            Some(s) => s,
            None => match tokio::time::timeout(AFTER_KILL, child.wait()).await {
                Ok(s) => s,
                Err(_) => Err(io::Error::other("still running after SIGKILL")),
            },
        };
        if ending == Ending::Killed {
            // A member goes at SIGKILL once it next runs: the group has
            // ended when none is left running.
            // (Reading `/proc` blocks: off the runtime's threads.)
            let until = Instant::now() + AFTER_KILL;
            let running = || tokio::task::spawn_blocking(move || running(pgid));
            while running().await.unwrap_or(false) && Instant::now() < until {
                tokio::time::sleep(POLL).await;
            }
        }
        self.close(pgid);
        (status, ending)
    }

    fn close(&mut self, pgid: i32) {
        self.pgid = None;
        guardian::forget(pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            signal(pgid, Sig::Kill);
            self.close(pgid);
        }
    }
}
