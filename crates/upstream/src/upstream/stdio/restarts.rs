//! What stdio children answer to: the gateway-wide count of children running
//! ([`Children`], against `limits.max_stdio_children`) and each mount's record
//! of crashes, which holds back a command that keeps crashing ([`Restarts`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_ui_model::config::Limits;
use mcp_ui_model::outcome::UpstreamError;

/// Wait before restarting after the first crash.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between restarts.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A child up this long is healthy: its mount's crash record is cleared.
pub(crate) const STABLE_AFTER: Duration = Duration::from_secs(10);

/// The stdio children running at once, across every stdio mount.
#[derive(Debug)]
pub struct Children {
    running: AtomicUsize,
    pub(super) max: usize,
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

    pub(super) fn acquire(self: &Arc<Self>) -> Option<ChildSlot> {
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| ChildSlot(self.clone()))
    }
}

/// One running child's place in [`Children`], given back on drop.
pub(super) struct ChildSlot(Arc<Children>);

impl Drop for ChildSlot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A mount's record of consecutive crashes, and when it may start again.
#[derive(Debug, Default)]
pub struct Restarts {
    state: Mutex<RestartState>,
    /// Children started for the mount since the gateway started.
    started: std::sync::atomic::AtomicU64,
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
    pub(super) fn check(&self, upstream: &str) -> Result<(), UpstreamError> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match st.retry_at {
            Some(at) if at > Instant::now() => Err(UpstreamError::Backoff {
                upstream: upstream.to_owned(),
                crashes: st.crashes,
                last: st.last.clone().unwrap_or_default(),
                // Rounded up: waiting this long is enough.
                retry_in_ms: at
                    .saturating_duration_since(Instant::now())
                    .as_micros()
                    .div_ceil(1000) as u64,
            }),
            _ => Ok(()),
        }
    }

    pub(super) fn crashed(&self, upstream: &str, how: &str) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
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

    pub(super) fn stable(&self, upstream: &str) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.crashes > 0 {
            tracing::info!(upstream, after = st.crashes, "stdio upstream recovered");
        }
        *st = RestartState::default();
    }

    /// The crash record, when there is one.
    /// Count a child started for the mount.
    pub(crate) fn count_start(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// Children started for the mount since the gateway started.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    pub fn fault(&self) -> Option<Fault> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
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

    /// The wait an error names is enough: after it, the start is allowed
    /// (a wait rounded down left a request refused "in 0.0 s").
    #[test]
    fn the_named_wait_is_enough() {
        let r = Restarts::default();
        r.crashed("x", "killed");
        let Err(UpstreamError::Backoff { retry_in_ms, .. }) = r.check("x") else {
            panic!("held off")
        };
        assert!(retry_in_ms > 0 && retry_in_ms <= 500, "{retry_in_ms}");
        std::thread::sleep(Duration::from_millis(retry_in_ms));
        assert!(r.check("x").is_ok());
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
