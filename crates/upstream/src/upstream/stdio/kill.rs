//! Signals to whole process groups, and the way a group is ended: SIGTERM,
//! [`KILL_GRACE`] for it to empty, SIGKILL to whatever is left.

use std::time::{Duration, Instant};

/// Time a group has to end after SIGTERM before it is SIGKILLed.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// How often an ending group is looked at.
pub const POLL: Duration = Duration::from_millis(20);

/// The signals a group is sent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sig {
    Term,
    Kill,
}

/// Send `sig` to every process of group `pgid`; whether the group had any.
#[cfg(unix)]
pub fn signal(pgid: i32, sig: Sig) -> bool {
    use rustix::process::{Pid, Signal, kill_process_group};
    let Some(pid) = Pid::from_raw(pgid) else {
        return false;
    };
    let sig = match sig {
        Sig::Term => Signal::TERM,
        Sig::Kill => Signal::KILL,
    };
    kill_process_group(pid, sig).is_ok()
}

/// Whether group `pgid` has any process left (zombies count).
#[cfg(unix)]
pub fn present(pgid: i32) -> bool {
    use rustix::process::{Pid, test_kill_process_group};
    Pid::from_raw(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

#[cfg(not(unix))]
pub fn signal(_pgid: i32, _sig: Sig) -> bool {
    false
}

#[cfg(not(unix))]
pub fn present(_pgid: i32) -> bool {
    false
}

/// End `groups` at once, blocking: SIGTERM to each, up to [`KILL_GRACE`] for
/// them to empty, SIGKILL to those left.
pub(crate) fn end_groups(mut groups: Vec<i32>) {
    groups.retain(|&g| signal(g, Sig::Term));
    let deadline = Instant::now() + KILL_GRACE;
    while !groups.is_empty() && Instant::now() < deadline {
        std::thread::sleep(POLL);
        groups.retain(|&g| present(g));
    }
    for g in groups {
        signal(g, Sig::Kill);
    }
}
