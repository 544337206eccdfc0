use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::super::{Delivery, MessageSession, Mux, Peer, Peers};
use mcp_ui_wire::jsonrpc;
use mcp_ui_wire::protocol::Caps;

fn shared() -> (Arc<MessageSession>, Arc<Mux>) {
    let mux = Mux::new(Arc::new(Peers::default()));
    (MessageSession::new("shared".into(), Some(mux.clone())), mux)
}

fn peer(mux: &Mux, key: u64, caps: Value) -> Arc<Peer> {
    mux.peers.get_or_insert(key, Caps::of(Some(&caps)))
}

async fn next(rx: &mut mpsc::Receiver<Delivery>) -> Delivery {
    tokio::time::timeout(std::time::Duration::from_secs(2), rx.recv())
        .await
        .unwrap()
        .unwrap()
}

async fn written(s: &MessageSession) -> Value {
    let b = tokio::time::timeout(std::time::Duration::from_secs(2), s.outgoing())
        .await
        .expect("something written to the upstream");
    serde_json::from_slice(&b).unwrap()
}

fn related(d: Delivery) -> Value {
    match d {
        Delivery::Related(b) => serde_json::from_slice(&b).unwrap(),
        other => panic!("not related: {other:?}"),
    }
}

/// Send `message` as `peer`'s request; the id and token as found in it.
async fn ask(
    s: &Arc<MessageSession>,
    message: &'static [u8],
    peer: Option<&Arc<Peer>>,
) -> (
    mpsc::Receiver<Delivery>,
    crate::upstream::messages::PendingGuard,
) {
    let m = jsonrpc::classify_one(message).unwrap();
    let token = jsonrpc::params_view(m.params).request_progress_token;
    s.request_as(message, m.id.unwrap(), token, peer)
        .await
        .unwrap()
}

#[tokio::test]
async fn ids_and_progress_tokens_of_two_clients_do_not_meet() {
    let (s, mux) = shared();
    let (a, b) = (peer(&mux, 1, json!({})), peer(&mux, 2, json!({})));
    let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"t"}}}"#;
    let (mut ra, _ga) = ask(&s, call, Some(&a)).await;
    let (mut rb, _gb) = ask(&s, call, Some(&b)).await;
    let wa = written(&s).await;
    let wb = written(&s).await;
    assert_ne!(wa["id"], wb["id"]);
    assert_ne!(
        wa["params"]["_meta"]["progressToken"],
        wb["params"]["_meta"]["progressToken"]
    );
    // Progress for b's call reaches b under b's own token.
    let progress = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken": wb["params"]["_meta"]["progressToken"], "progress": 1}});
    s.deliver(Bytes::from(progress.to_string())).await;
    assert_eq!(related(next(&mut rb).await)["params"]["progressToken"], "t");
    let answer = json!({"jsonrpc":"2.0","id": wa["id"], "result": {"for": "a"}});
    s.deliver(Bytes::from(answer.to_string())).await;
    let Delivery::Final(b) = next(&mut ra).await else {
        panic!()
    };
    let v: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(
        (v["id"].clone(), v["result"]["for"].clone()),
        (json!(7), json!("a"))
    );
    assert!(rb.try_recv().is_err(), "b got nothing of a's");
}

#[tokio::test]
async fn a_server_request_reaches_the_client_whose_call_caused_it_and_its_answer_comes_back() {
    let (s, mux) = shared();
    let a = peer(&mux, 1, json!({"sampling": {}}));
    let (mut ra, _g) = ask(
        &s,
        br#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"sample"}}"#,
        Some(&a),
    )
    .await;
    written(&s).await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}"#,
    ))
    .await;
    let asked = related(next(&mut ra).await);
    let ours = asked["id"].as_str().unwrap().to_owned();
    assert!(ours.starts_with("mcp-ui-gateway/"), "{ours}");
    // The client answers under the id it got; the upstream gets its own.
    let reply = format!(r#"{{"jsonrpc":"2.0","id":"{ours}","result":{{"role":"assistant"}}}}"#);
    let m = jsonrpc::classify_one(reply.as_bytes()).unwrap();
    assert!(mux.answer(reply.as_bytes(), m.id.unwrap()).unwrap());
    assert_eq!(written(&s).await["id"], 0);
    // Answered once: the id is spent.
    assert!(!mux.answer(reply.as_bytes(), m.id.unwrap()).unwrap());
}

#[tokio::test]
async fn a_server_request_no_one_client_can_answer_is_refused_at_once() {
    let (s, mux) = shared();
    let (a, b) = (
        peer(&mux, 1, json!({"sampling": {}})),
        peer(&mux, 2, json!({"sampling": {}})),
    );
    // Nobody waiting: a roots/list after the handshake.
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#,
    ))
    .await;
    let v = written(&s).await;
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(1), json!(-32601))
    );
    // Two clients waiting: which one asked cannot be told.
    let (_ra, _ga) = ask(
        &s,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        Some(&a),
    )
    .await;
    let (_rb, _gb) = ask(
        &s,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        Some(&b),
    )
    .await;
    written(&s).await;
    written(&s).await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage"}"#,
    ))
    .await;
    let v = written(&s).await;
    assert_eq!(v["id"], 2);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("shared"),
        "{v}"
    );
    // ping the gateway answers itself.
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    ))
    .await;
    assert_eq!(
        written(&s).await,
        json!({"jsonrpc":"2.0","id":3,"result":{}})
    );
}

#[tokio::test]
async fn a_client_is_asked_only_what_it_declared() {
    let (s, mux) = shared();
    let a = peer(&mux, 1, json!({"roots": {}}));
    let (_ra, _g) = ask(
        &s,
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        Some(&a),
    )
    .await;
    written(&s).await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{}}"#,
    ))
    .await;
    let v = written(&s).await;
    assert_eq!(v["id"], 9);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("capability"),
        "{v}"
    );
}

#[tokio::test]
async fn list_changes_reach_every_client_and_updates_their_subscribers() {
    let (s, mux) = shared();
    let a = peer(&mux, 1, json!({}));
    let b = peer(&mux, 2, json!({}));
    let mut sa = a.attach_stream().unwrap();
    let mut sb = b.attach_stream().unwrap();
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    ))
    .await;
    assert!(sa.recv().await.unwrap().ends_with(b"list_changed\"}"));
    assert!(sb.recv().await.unwrap().ends_with(b"list_changed\"}"));
    s.subscribe(2, "file:///x");
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x"}}"#,
    ))
    .await;
    assert!(sb.recv().await.unwrap().ends_with(b"file:///x\"}}"));
    assert!(sa.try_recv().is_err(), "a is not subscribed");
    assert!(!s.unsubscribe(9, "file:///x"), "b still is");
    assert!(s.unsubscribe(2, "file:///x"), "the last one left");
}

#[tokio::test]
async fn log_messages_follow_each_clients_level() {
    let (s, mux) = shared();
    let quiet = peer(&mux, 1, json!({}));
    let chatty = peer(&mux, 2, json!({}));
    quiet.set_level(crate::upstream::messages::peer::level_rank("error").unwrap());
    chatty.set_level(0);
    assert!(s.lower_level(0), "the upstream is asked for debug");
    assert!(!s.lower_level(4), "already sends more");
    let mut sq = quiet.attach_stream().unwrap();
    let mut sc = chatty.attach_stream().unwrap();
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
    ))
    .await;
    assert!(sc.recv().await.is_some());
    assert!(sq.try_recv().is_err());
}

#[tokio::test]
async fn a_clients_cancellation_reaches_the_upstream_under_its_id() {
    let (s, mux) = shared();
    let a = peer(&mux, 1, json!({}));
    let b = peer(&mux, 2, json!({}));
    let call = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#;
    let (mut ra, _ga) = ask(&s, call, Some(&a)).await;
    let (_rb, _gb) = ask(&s, call, Some(&b)).await;
    let wa = written(&s).await;
    written(&s).await;
    let cancel = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"stop"}}"#;
    let m = jsonrpc::classify_one(cancel).unwrap();
    let id = jsonrpc::params_view(m.params).request_id.unwrap();
    assert!(s.cancel_for(Some(1), cancel, id));
    let v = written(&s).await;
    assert_eq!(v["method"], "notifications/cancelled");
    assert_eq!(v["params"]["requestId"], wa["id"]);
    assert_eq!(v["params"]["reason"], "stop");
    assert!(matches!(next(&mut ra).await, Delivery::Failed(_)));
    assert!(!s.cancel_for(Some(3), cancel, id), "no such client");
}

/// An upstream connection that records what the gateway sends it.
struct Recorded(std::sync::Mutex<Vec<Bytes>>);

impl super::Sink for Recorded {
    fn send_raw(&self, message: Bytes) -> Result<(), mcp_ui_model::outcome::Failure> {
        self.0.lock().unwrap().push(message);
        Ok(())
    }
    fn is_closed(&self) -> bool {
        false
    }
}

fn raw(s: &str) -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(s.to_owned()).unwrap()
}

/// A client flooding the mount with server requests it never answers drops its own
/// oldest, never another client's (whose answer still reaches its connection), and the
/// upstream is told of each one dropped; a request whose client's call is gone is the
/// first to go.
#[test]
fn one_client_cannot_push_out_another_clients_server_requests() {
    let mux = Mux::new(Arc::new(Peers::default()));
    let up = Arc::new(Recorded(std::sync::Mutex::default()));
    let sink: Arc<dyn super::Sink> = up.clone();
    let weak = Arc::downgrade(&sink);
    let (theirs_tx, _theirs_rx) = mpsc::channel(1);
    let theirs = mux.remember(weak.clone(), &raw("\"b-1\""), Some(2), Some(theirs_tx));
    let (flood_tx, flood_rx) = mpsc::channel(1);
    for i in 0..300 {
        mux.remember(
            weak.clone(),
            &raw(&i.to_string()),
            Some(1),
            Some(flood_tx.clone()),
        );
    }
    let count = |peer: u64| mux.lock().values().filter(|a| a.peer == Some(peer)).count();
    assert_eq!(count(1), super::MAX_ASKED_PER_CLIENT);
    assert_eq!(count(2), 1, "the other client's request stays");
    let dropped = up.0.lock().unwrap().len();
    assert_eq!(dropped, 300 - super::MAX_ASKED_PER_CLIENT);
    let first: Value = serde_json::from_slice(&up.0.lock().unwrap()[0]).unwrap();
    assert_eq!(
        first["id"], 0,
        "the oldest went first, answered upstream: {first}"
    );
    assert_eq!(first["error"]["code"], -32000);
    // The other client's answer reaches the upstream under the upstream's id.
    let answer = format!(r#"{{"jsonrpc":"2.0","id":{theirs},"result":{{}}}}"#);
    let id = jsonrpc::classify_one(answer.as_bytes())
        .unwrap()
        .id
        .unwrap();
    assert!(matches!(mux.answer(answer.as_bytes(), id), Ok(true)));
    let last: Value = serde_json::from_slice(up.0.lock().unwrap().last().unwrap()).unwrap();
    assert_eq!(last["id"], "b-1");
    // The flooding client's call goes away: its requests are dropped at the next
    // request of its own, not kept until they expire.
    drop(flood_rx);
    let (tx, _rx) = mpsc::channel(1);
    mux.remember(weak, &raw("\"again\""), Some(1), Some(tx));
    assert_eq!(count(1), 1);
}

/// A request set aside for its client's input (a 2026-07-28 round) reads
/// nothing until its client comes back: what the upstream says of it meanwhile
/// is given what fits and never holds up the connection's other clients.
#[tokio::test]
async fn a_request_set_aside_for_its_clients_input_holds_up_nobody() {
    let (s, mux) = shared();
    let (a, b) = (peer(&mux, 1, json!({})), peer(&mux, 2, json!({})));
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","_meta":{"progressToken":"t"}}}"#;
    let (_ra, parked) = ask(&s, call, Some(&a)).await;
    let token = written(&s).await["params"]["_meta"]["progressToken"].clone();
    parked.park(true);
    assert!(s.only_parked());
    let (mut rb, _gb) = ask(&s, call, Some(&b)).await;
    let wb = written(&s).await;
    assert!(!s.only_parked());
    let said = async {
        for n in 0..200 {
            let progress = json!({"jsonrpc":"2.0","method":"notifications/progress",
                "params":{"progressToken": token, "progress": n}});
            s.deliver(Bytes::from(progress.to_string())).await;
        }
        let answer = json!({"jsonrpc":"2.0","id": wb["id"], "result": {"for": "b"}});
        s.deliver(Bytes::from(answer.to_string())).await;
    };
    tokio::time::timeout(std::time::Duration::from_secs(2), said)
        .await
        .expect("the upstream's messages went on while a's request was set aside");
    assert!(matches!(next(&mut rb).await, Delivery::Final(_)));
    parked.park(false);
}
