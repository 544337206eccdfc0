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

/// Whether group `pgid` has a member still running, zombies aside: a
/// member SIGKILLed is gone once it next runs, which on a busy machine is
/// after the signal was sent.
#[cfg(target_os = "linux")]
pub fn running(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return present(pgid);
    };
    entries.flatten().any(|e| {
        let is_pid = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| runs_in(&stat, pgid))
    })
}

/// Whether a `/proc/<pid>/stat` line is of a process of group `pgid` that
/// is neither a zombie nor dead. Its fields after the command's closing
/// parenthesis: state, parent, group.
#[cfg(target_os = "linux")]
fn runs_in(stat: &str, pgid: i32) -> bool {
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return false;
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next();
    let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
    group == Some(pgid) && !matches!(state, Some("Z" | "X" | "x"))
}

#[cfg(all(unix, not(target_os = "linux")))]
pub fn running(pgid: i32) -> bool {
    present(pgid)
}

#[cfg(not(unix))]
pub fn running(_pgid: i32) -> bool {
    false
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::runs_in;

    #[test]
    fn a_member_runs_until_it_is_a_zombie() {
        // pid (comm) state ppid pgrp ...; a command may hold ") " itself.
        let sleeping = "4242 (sleep) S 1 4200 4200 0 -1 4194560";
        assert!(runs_in(sleeping, 4200));
        assert!(!runs_in(sleeping, 4201));
        assert!(runs_in("4243 (a) b (c)) R 7 4200 4200", 4200));
        assert!(!runs_in("4244 (sleep) Z 1 4200 4200", 4200));
        assert!(!runs_in("4245 (sleep) X 1 4200 4200", 4200));
        assert!(!runs_in("garbled", 4200));
    }

    #[test]
    fn this_process_runs_in_its_own_group() {
        let own = rustix::process::getpgrp().as_raw_nonzero().get();
        assert!(super::running(own));
    }
}
