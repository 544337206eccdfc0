//! The guardian: stdio children die with the gateway, however it dies.
//!
//! A gateway that exits normally ends its children's process groups itself
//! (see [`group`](super::group)). One that is killed (`kill -9`, the OOM
//! killer, a crash) cannot, and a child that does not stop at the end of its
//! input (or one started by a wrapper, which never sees that end) would run
//! on forever. `PR_SET_PDEATHSIG` would need code between `fork` and `exec`
//! (forbidden `unsafe`), fires on the death of the spawning *thread*, and
//! reaches the direct child only, not its group.
//!
//! So `serve` starts one small process next to it: this same executable run
//! with the hidden subcommand [`SUBCOMMAND`], in a process group of its own
//! (a terminal's Ctrl-C does not reach it), its stdin a pipe whose write end
//! only the gateway holds (the standard library opens it close-on-exec, so no
//! child inherits it). The gateway writes `+PGID` as each child's group
//! starts and `-PGID` once it has ended. When the pipe reaches its end, the
//! gateway is gone, whatever the way: the guardian sends every group still
//! listed SIGTERM, gives them [`KILL_GRACE`](super::KILL_GRACE), SIGKILLs what is left and
//! exits. After a normal exit its list is empty and it exits at once.
//!
//! Writes to the pipe never block (a stopped guardian cannot stall the
//! gateway): a line that does not fit is dropped with a warning. The list is
//! process-wide because the guardian guards the process; the library used on
//! its own (tests, `check`) runs without one, and then nothing is sent.
//! `check` starts one for the browser it measures widgets in.

use std::collections::BTreeSet;
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use super::kill::end_groups;

/// The hidden subcommand the guardian runs as.
pub(crate) const SUBCOMMAND: &str = "guard-children";

static LINK: OnceLock<Mutex<Link>> = OnceLock::new();

struct Link {
    pipe: ChildStdin,
    /// Kept so the guardian is not reaped before the gateway exits.
    _guardian: std::process::Child,
    /// A write failed: warned about once.
    warned: bool,
}

/// Start the guardian: `exe` run as [`SUBCOMMAND`]. Its pid. Once per process.
pub fn start(exe: &Path) -> io::Result<u32> {
    if LINK.get().is_some() {
        return Err(io::Error::other("a guardian already runs"));
    }
    let mut cmd = Command::new(exe);
    cmd.arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut guardian = cmd.spawn()?;
    let pid = guardian.id();
    let pipe = guardian.stdin.take().expect("piped");
    #[cfg(unix)]
    rustix::io::ioctl_fionbio(&pipe, true)?;
    let link = Link {
        pipe,
        _guardian: guardian,
        warned: false,
    };
    LINK.set(Mutex::new(link))
        .map_err(|_| io::Error::other("a guardian already runs"))?;
    Ok(pid)
}

/// Put group `pgid` on the guardian's list.
pub fn watch(pgid: i32) {
    tell(&format!("+{pgid}\n"));
}

/// Take group `pgid` off the list (it has ended).
pub fn forget(pgid: i32) {
    tell(&format!("-{pgid}\n"));
}

fn tell(line: &str) {
    let Some(link) = LINK.get() else { return };
    let mut link = link.lock().unwrap_or_else(|p| p.into_inner());
    // One write of a few bytes: a pipe takes it whole or not at all.
    if let Err(e) = link.pipe.write_all(line.as_bytes())
        && !std::mem::replace(&mut link.warned, true)
    {
        tracing::warn!(error = %e, "cannot reach the guardian; stdio children may outlive a killed gateway");
    }
}

/// The guardian's work: follow the list on `input` until it ends, then end
/// every group still on it. How many groups were listed at the end.
pub fn run(input: impl BufRead) -> usize {
    let mut groups = BTreeSet::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        let (op, pgid) = line.split_at(line.len().min(1));
        match (op, pgid.parse::<i32>()) {
            ("+", Ok(p)) if p > 0 => groups.insert(p),
            ("-", Ok(p)) => groups.remove(&p),
            _ => false,
        };
    }
    let listed = groups.len();
    if listed > 0 {
        end_groups(groups.into_iter().collect());
    }
    listed
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::upstream::stdio::kill::{KILL_GRACE, present};

    /// A group that ignores SIGTERM, with a grandchild: the guardian ends both
    /// when its input ends.
    #[cfg(unix)]
    #[test]
    fn ends_the_listed_groups_at_the_end_of_its_input() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; sleep 300 & sleep 300; wait"]);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().unwrap();
        let pgid = child.id() as i32;
        let started = Instant::now();
        let input = format!("+{pgid}\n+999999999\n-999999999\n");
        assert_eq!(run(io::Cursor::new(input)), 1);
        let took = started.elapsed();
        let status = child.wait().unwrap();
        assert!(!status.success(), "{status}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while present(pgid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!present(pgid), "the grandchild is left");
        assert!(took >= KILL_GRACE && took < KILL_GRACE * 5, "{took:?}");
    }
}
