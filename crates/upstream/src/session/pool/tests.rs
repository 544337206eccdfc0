//! The pool: a place started once and again when ended, places chosen by
//! load, lanes reaped by their idle limits, the limits on connections and
//! what is ended to make room, and the handshakes kept; over message
//! sessions with no upstream behind them.

use super::handshakes::MAX_HANDSHAKES;
use super::*;

fn conn(name: &str) -> Conn {
    Conn {
        session: MessageSession::new(name.into(), None),
        handshake: None,
    }
}

#[tokio::test]
async fn a_slot_starts_once_and_again_when_its_connection_ended() {
    let pool = Pool::new(1);
    let key = pool.pick(Era::Handshake, 0, Caps::default());
    let a = pool.connect(key, 0, |again| async move {
        assert!(!again);
        Ok(conn("a"))
    });
    let a = a.await.unwrap();
    let same = pool
        .connect(key, 0, |_| async { panic!("started twice") })
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&a.session, &same.session));
    a.session.close("exited");
    let b = pool
        .connect(key, 0, |again| async move {
            assert!(again);
            Ok(conn("b"))
        })
        .await
        .unwrap();
    assert!(!Arc::ptr_eq(&a.session, &b.session));
    assert_eq!(pool.counts(), (1, 2, 1));
}

#[tokio::test]
async fn a_pool_spreads_requests_over_its_places() {
    let pool = Pool::new(2);
    let none = Caps::default();
    let first = pool.pick(Era::Handshake, 0, none);
    let c = pool
        .connect(first, 0, |_| async { Ok(conn("a")) })
        .await
        .unwrap();
    // Idle: the started place is taken.
    assert_eq!(pool.pick(Era::Handshake, 0, none), first);
    assert_eq!(pool.pick_any(Era::Handshake, 0), first);
    let _waiting = c
        .session
        .request(
            br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
            &RawValueOf::one(),
            None,
        )
        .await
        .unwrap();
    // Busy: the second place.
    assert_eq!(pool.pick(Era::Handshake, 0, none).lane, Lane::Pool(1));
    // Other credentials, other places; other capabilities too.
    assert_ne!(pool.pick(Era::Handshake, 9, none), first);
    assert_ne!(pool.pick(Era::Handshake, 0, Caps::ALL), first);
}

#[tokio::test(start_paused = true)]
async fn idle_connections_end_by_their_lane() {
    let pool = Pool::new(1);
    let shared = pool.pick(Era::Handshake, 0, Caps::default());
    let talk = SlotKey {
        lane: Lane::Conversation(5),
        ..shared
    };
    let s = pool
        .connect(shared, 0, |_| async { Ok(conn("s")) })
        .await
        .unwrap();
    let t = pool
        .connect(talk, 0, |_| async { Ok(conn("t")) })
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(120)).await;
    pool.reap(Duration::from_secs(3600), Duration::from_secs(60));
    assert!(t.session.is_closed(), "a quiet conversation ends");
    assert!(!s.session.is_closed(), "the pool stays");
}

fn room(per_mount: usize, per_caller: usize) -> Room {
    Room {
        per_mount,
        per_caller,
        ..Room::unlimited()
    }
}

fn talk(n: u64) -> SlotKey {
    SlotKey {
        era: Era::Handshake,
        creds: 0,
        caps: Caps::default(),
        lane: Lane::Conversation(n),
    }
}

async fn open(pool: &Pool, n: u64, owner: u64) -> Result<Conn, Failure> {
    pool.connect(
        talk(n),
        owner,
        |_| async move { Ok(conn(&format!("c{n}"))) },
    )
    .await
}

async fn busy(
    c: &Conn,
) -> (
    tokio::sync::mpsc::Receiver<crate::upstream::messages::Delivery>,
    crate::upstream::messages::PendingGuard,
) {
    c.session
        .request(
            br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
            &RawValueOf::one(),
            None,
        )
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_caller_at_its_limit_ends_its_own_least_recently_used_connection() {
    let pool = Pool::with_room("u", 1, room(10, 2), usize::MAX);
    let other = open(&pool, 100, 7).await.unwrap();
    let first = open(&pool, 1, 3).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    let second = open(&pool, 2, 3).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    let third = open(&pool, 3, 3).await.unwrap();
    assert!(
        first.session.is_closed(),
        "the caller's least recently used ends"
    );
    assert!(!second.session.is_closed() && !third.session.is_closed());
    assert!(
        !other.session.is_closed(),
        "another caller's is never ended for it"
    );
    // Busy connections are not ended: the caller is refused, with why.
    let _a = busy(&second).await;
    let _b = busy(&third).await;
    let refused = open(&pool, 4, 3).await.err().expect("refused");
    assert!(matches!(
        refused,
        Failure::Crowded {
            who: "the caller",
            max: 2,
            ..
        }
    ));
    assert!(
        refused
            .to_string()
            .contains("limits.max_caller_connections"),
        "{refused}"
    );
    assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    // Another caller still has room.
    assert!(open(&pool, 5, 8).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_full_mount_ends_its_least_recently_used_idle_connection_or_refuses() {
    let pool = Pool::with_room("u", 1, room(2, 2), usize::MAX);
    let a = open(&pool, 1, 1).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    let b = open(&pool, 2, 2).await.unwrap();
    let _b = busy(&b).await;
    let c = open(&pool, 3, 3).await.unwrap();
    assert!(a.session.is_closed(), "the idle one ends");
    let _c = busy(&c).await;
    let refused = open(&pool, 4, 4).await.err().expect("refused");
    assert!(matches!(
        refused,
        Failure::Crowded {
            who: "the mount",
            ..
        }
    ));
    // Every pool of a gateway counts against one cap.
    let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let capped = |name| {
        Pool::with_room(
            name,
            1,
            Room {
                total: total.clone(),
                cap: 2,
                ..Room::unlimited()
            },
            usize::MAX,
        )
    };
    let (p, q) = (capped("p"), capped("q"));
    let x = open(&p, 1, 1).await.unwrap();
    let _x = busy(&x).await;
    let y = open(&q, 1, 1).await.unwrap();
    let _y = busy(&y).await;
    let refused = open(&q, 2, 2).await.err().expect("refused");
    assert!(matches!(
        refused,
        Failure::Crowded {
            who: "the gateway",
            ..
        }
    ));
    drop(_x);
    p.end(&talk(1), "done");
    assert!(open(&q, 2, 2).await.is_ok(), "room again once one is gone");
}

/// A connection whose requests all wait for their client's input (a
/// 2026-07-28 round) is ended for room, after the idle ones: open
/// rounds never keep another caller out. One with a request running
/// is not; nor the mount's shared places.
#[tokio::test(start_paused = true)]
async fn connections_whose_requests_all_wait_for_input_make_room_after_idle_ones() {
    let pool = Pool::with_room("u", 1, room(3, 3), usize::MAX);
    let shared = pool
        .connect(talk(0), 0, |_| async { Ok(conn("shared")) })
        .await
        .unwrap();
    let (_r0, parked_on_shared) = busy(&shared).await;
    parked_on_shared.park(true);
    let rounds = open(&pool, 1, 1).await.unwrap();
    let (_r1, parked) = busy(&rounds).await;
    parked.park(true);
    tokio::time::advance(Duration::from_secs(1)).await;
    let idle = open(&pool, 2, 2).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(pool.idlest().map(|(idle, _)| idle), Some(true));
    let third = open(&pool, 3, 3).await.unwrap();
    assert!(idle.session.is_closed(), "the idle one ends first");
    assert!(!rounds.session.is_closed());
    let _running = busy(&third).await;
    assert_eq!(pool.idlest().map(|(idle, _)| idle), Some(false));
    let fourth = open(&pool, 4, 4).await.unwrap();
    assert!(
        rounds.session.is_closed(),
        "then the one whose requests all wait for their client"
    );
    assert!(!shared.session.is_closed(), "a shared place is nobody's");
    // Taken up again, a round's request runs: its connection is not
    // ended for room.
    let _running = busy(&fourth).await;
    let refused = open(&pool, 5, 5).await.err().expect("refused");
    assert!(matches!(refused, Failure::Crowded { .. }), "{refused}");
}

#[tokio::test]
async fn a_connection_that_failed_to_start_leaves_no_place_behind() {
    let pool = Pool::new(1);
    for n in 0..100 {
        let failed = pool
            .connect(talk(n), 5, |_| async { Err(Failure::Full { max: 1 }) })
            .await;
        assert!(failed.is_err());
    }
    assert_eq!(pool.lock().len(), 0);
    assert_eq!(pool.room.total.load(Ordering::Relaxed), 0);
}

/// One handshake is kept per credentials for local `initialize`s, and
/// no more than [`MAX_HANDSHAKES`] however many callers came and went:
/// past it those with no connection open are forgotten.
#[tokio::test]
async fn the_handshakes_kept_are_bounded() {
    let pool = Pool::new(1);
    let handshake = || {
        let reply = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#;
        let result = serde_json::value::RawValue::from_string(
            r#"{"protocolVersion":"2025-11-25"}"#.to_owned(),
        )
        .unwrap();
        Arc::new(Handshake::new(
            bytes::Bytes::from_static(reply.as_bytes()),
            result,
            "2025-11-25".into(),
        ))
    };
    let open = |creds: u64| {
        let key = pool.pick(Era::Handshake, creds, Caps::default());
        let h = handshake();
        pool.connect(key, creds, move |_| async move {
            Ok(Conn {
                handshake: Some(h),
                ..conn("c")
            })
        })
    };
    let kept = open(1).await.unwrap();
    for creds in 2..=(MAX_HANDSHAKES as u64 + 10) {
        let c = open(creds).await.unwrap();
        c.session.close("its caller went away");
    }
    let init = pool.init.lock().unwrap();
    assert!(init.len() <= MAX_HANDSHAKES, "{} kept", init.len());
    assert!(
        init.contains_key(&1),
        "the one with a connection open stays"
    );
    drop(kept);
}

#[test]
fn digests_tell_parts_apart() {
    assert_eq!(digest([&b"a"[..], b"b"]), digest([&b"a"[..], b"b"]));
    assert_ne!(digest([&b"ab"[..], b""]), digest([&b"a"[..], b"b"]));
    assert_ne!(digest([&b"x"[..]]), 0);
}

struct RawValueOf;
impl RawValueOf {
    fn one() -> Box<serde_json::value::RawValue> {
        serde_json::value::RawValue::from_string("1".into()).unwrap()
    }
}
