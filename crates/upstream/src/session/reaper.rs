//! Ends owned sessions idle beyond `limits.session_idle_secs`, and stdio
//! sessions with nothing open idle beyond `limits.stdio_quiet_session_secs`;
//! ends the pools' connections unused beyond their lane's limit
//! (`limits.conversation_idle_secs` for a conversation's) and forgets their
//! idle client sessions; checking every `limits.session_reap_interval_secs`.

use std::sync::Weak;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::owned::{Held, Owned};
use super::pool::Pool;

/// How long what is reaped may stay idle.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Any session, and a pool's connections and client sessions.
    pub ttl: Duration,
    /// By mount index: the shorter limit of an owned session with nothing
    /// open (`None`: only `ttl`).
    pub quiet: Vec<Option<Duration>>,
    /// A conversation's connection, and the other connections of one client
    /// or one request.
    pub conversation: Duration,
}

/// Reap `sessions` and `pools` every `interval` until `stop` fires or they
/// are gone.
pub fn spawn<S: Held + 'static>(
    sessions: Weak<Owned<S>>,
    pools: Weak<Vec<Pool>>,
    interval: Duration,
    limits: Limits,
    stop: CancellationToken,
) {
    // Detached on purpose: it holds only weak references and ends with `stop`.
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.cancelled() => return,
            }
            let (Some(sessions), Some(pools)) = (sessions.upgrade(), pools.upgrade()) else {
                return;
            };
            sessions.reap(limits.ttl, &limits.quiet);
            for pool in pools.iter() {
                pool.reap(limits.ttl, limits.conversation);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::upstream::messages::MessageSession;

    /// Time is paused: the reaper runs on the test's clock, not the wall's.
    #[tokio::test(start_paused = true)]
    async fn idle_sessions_are_ended_on_the_next_round() {
        let owned = Arc::new(Owned::new(1, 8));
        let pools = Arc::new(vec![Pool::new(1)]);
        let idle = MessageSession::new("a".into(), None);
        let busy = MessageSession::new("a".into(), None);
        owned.insert(0, idle.clone());
        owned.insert(0, busy.clone());
        let stop = CancellationToken::new();
        let (interval, ttl) = (Duration::from_secs(10), Duration::from_secs(60));
        let limits = Limits {
            ttl,
            quiet: vec![None],
            conversation: ttl,
        };
        spawn(
            Arc::downgrade(&owned),
            Arc::downgrade(&pools),
            interval,
            limits,
            stop.clone(),
        );

        tokio::time::sleep(Duration::from_secs(55)).await;
        assert!(!idle.is_closed(), "not idle long enough yet");
        // The busy one makes a request now; the idle one says nothing.
        let _ = busy
            .notify(
                bytes::Bytes::from_static(b"{}"),
                mcp_ui_wire::jsonrpc::Kind::Notification,
                Some("notifications/x"),
                None,
            )
            .await;
        // 60 s of silence pass at 60; the round at 70 s ends it.
        tokio::time::sleep(Duration::from_secs(16)).await;
        assert!(idle.is_closed(), "idle beyond its time: reaped");
        assert!(!busy.is_closed(), "active within its time: kept");
        assert_eq!(owned.len(), 1);
        stop.cancel();
    }

    /// Time is paused. Mount 0 is a stdio mount (a quiet limit of 10 min),
    /// mount 1 is not: only sessions of mount 0 with nothing open end early.
    #[tokio::test(start_paused = true)]
    async fn stdio_sessions_with_nothing_open_end_after_the_quiet_limit() {
        let owned = Arc::new(Owned::new(2, 8));
        let pools = Arc::new(vec![Pool::new(1), Pool::new(1)]);
        let quiet = MessageSession::new("stdio".into(), None);
        let streaming = MessageSession::new("stdio".into(), None);
        let other_mount = MessageSession::new("sse".into(), None);
        owned.insert(0, quiet.clone());
        owned.insert(0, streaming.clone());
        owned.insert(1, other_mount.clone());
        // A client holding its GET stream open is not gone.
        let _stream = streaming.attach_stream().expect("a GET stream");
        let stop = CancellationToken::new();
        let interval = Duration::from_secs(15);
        let (ttl, quiet_ttl) = (Duration::from_secs(3600), Duration::from_secs(600));
        let limits = Limits {
            ttl,
            quiet: vec![Some(quiet_ttl), None],
            conversation: ttl,
        };
        spawn(
            Arc::downgrade(&owned),
            Arc::downgrade(&pools),
            interval,
            limits,
            stop.clone(),
        );

        tokio::time::sleep(Duration::from_secs(590)).await;
        assert!(!quiet.is_closed(), "not quiet long enough yet");
        // 600 s pass; the next round (at most 15 s later) ends it.
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(quiet.is_closed(), "quiet beyond the stdio limit: reaped");
        assert!(!streaming.is_closed(), "a GET stream is open: kept");
        assert!(!other_mount.is_closed(), "not a stdio mount: kept");
        assert_eq!(owned.len(), 2);
        // The general limit still ends the rest.
        tokio::time::sleep(Duration::from_secs(3000)).await;
        assert!(streaming.is_closed() && other_mount.is_closed());
        stop.cancel();
    }
}
