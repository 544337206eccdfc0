//! Ends owned sessions idle beyond `limits.session_idle_secs`, checking every
//! `limits.session_reap_interval_secs`.

use std::sync::Weak;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::owned::Owned;

/// Reap `sessions` every `interval` until `stop` fires or the table is gone.
pub fn spawn(sessions: Weak<Owned>, interval: Duration, ttl: Duration, stop: CancellationToken) {
    // Detached on purpose: it holds only a weak reference and ends with `stop`.
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.cancelled() => return,
            }
            let Some(sessions) = sessions.upgrade() else {
                return;
            };
            sessions.reap(ttl).await;
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
        let idle = MessageSession::new("a".into(), false);
        let busy = MessageSession::new("a".into(), false);
        owned.insert(0, idle.clone());
        owned.insert(0, busy.clone());
        let stop = CancellationToken::new();
        let (interval, ttl) = (Duration::from_secs(10), Duration::from_secs(60));
        spawn(Arc::downgrade(&owned), interval, ttl, stop.clone());

        tokio::time::sleep(Duration::from_secs(55)).await;
        assert!(!idle.is_closed(), "not idle long enough yet");
        // The busy one makes a request now; the idle one says nothing.
        let _ = busy
            .notify(
                bytes::Bytes::from_static(b"{}"),
                crate::jsonrpc::Kind::Notification,
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
}
