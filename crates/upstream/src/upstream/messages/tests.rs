use super::outbox::{MAX_QUEUED, MAX_QUEUED_BYTES};
use super::*;
use mcp_ui_model::outcome::UpstreamError;

fn raw(s: &str) -> &RawValue {
    serde_json::from_str(s).unwrap()
}

async fn next(rx: &mut mpsc::Receiver<Delivery>) -> Delivery {
    tokio::time::timeout(std::time::Duration::from_secs(2), rx.recv())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn routes_response_progress_and_server_requests() {
    let s = MessageSession::new("t".into(), None);
    let req = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}}"#;
    let (mut rx, _g) = s.request(req, raw("5"), Some(raw("\"p\""))).await.unwrap();
    assert_eq!(&s.outgoing().await[..], &req[..]);
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}"#,
    ))
    .await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage"}"#,
    ))
    .await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
    ))
    .await;
    assert!(
        matches!(next(&mut rx).await, Delivery::Related(b) if b.starts_with(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress"))
    );
    assert!(
        matches!(next(&mut rx).await, Delivery::Related(b) if b.ends_with(b"createMessage\"}"))
    );
    assert!(
        matches!(next(&mut rx).await, Delivery::Final(b) if &b[..] == br#"{"jsonrpc":"2.0","id":5,"result":{}}"#)
    );
}

#[tokio::test]
async fn unrelated_messages_wait_for_a_stream() {
    let s = MessageSession::new("t".into(), None);
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    ))
    .await;
    let mut get = s.attach_stream().unwrap();
    assert!(s.attach_stream().is_none(), "one GET stream at a time");
    assert!(get.recv().await.unwrap().ends_with(b"list_changed\"}"));
}

#[tokio::test]
async fn shared_sessions_rewrite_ids_both_ways() {
    let s = MessageSession::new("t".into(), Some(Mux::new(Default::default())));
    let a = br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#;
    let id = jsonrpc::classify_one(a).unwrap().id.unwrap();
    let (mut ra, _ga) = s.request(a, id, None).await.unwrap();
    let (mut rb, _gb) = s.request(a, id, None).await.unwrap();
    // Each client's request gets one of the connection's own ids.
    assert_eq!(
        &s.outgoing().await[..],
        br#"{"jsonrpc":"2.0","id":"mcp-ui-gateway/1","method":"ping"}"#
    );
    assert_eq!(
        &s.outgoing().await[..],
        br#"{"jsonrpc":"2.0","id":"mcp-ui-gateway/2","method":"ping"}"#
    );
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":"mcp-ui-gateway/2","result":{"b":1}}"#,
    ))
    .await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":"mcp-ui-gateway/1","result":{"a":1}}"#,
    ))
    .await;
    assert!(
        matches!(next(&mut ra).await, Delivery::Final(m) if &m[..] == br#"{"jsonrpc":"2.0","id":"x","result":{"a":1}}"#)
    );
    assert!(
        matches!(next(&mut rb).await, Delivery::Final(m) if &m[..] == br#"{"jsonrpc":"2.0","id":"x","result":{"b":1}}"#)
    );
}

/// Ids and progress tokens a server takes for equal (`0` and `-0`) never
/// reach it from two clients of one connection: each client's answer and
/// progress reach that client alone.
#[tokio::test]
async fn look_alike_ids_of_two_clients_stay_apart() {
    let s = MessageSession::new("t".into(), Some(Mux::new(Default::default())));
    let a =
        br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"_meta":{"progressToken":0}}}"#;
    let b = br#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"_meta":{"progressToken":-0}}}"#;
    let (ma, mb) = (
        jsonrpc::classify_one(a).unwrap(),
        jsonrpc::classify_one(b).unwrap(),
    );
    let (ta, tb) = (
        jsonrpc::params_view(ma.params).request_progress_token,
        jsonrpc::params_view(mb.params).request_progress_token,
    );
    let (mut ra, _ga) = s.request(a, ma.id.unwrap(), ta).await.unwrap();
    let (mut rb, _gb) = s.request(b, mb.id.unwrap(), tb).await.unwrap();
    let wa: serde_json::Value = serde_json::from_slice(&s.outgoing().await).unwrap();
    let wb: serde_json::Value = serde_json::from_slice(&s.outgoing().await).unwrap();
    assert_ne!(wa["id"], wb["id"]);
    assert_ne!(
        wa["params"]["_meta"]["progressToken"],
        wb["params"]["_meta"]["progressToken"]
    );
    // The upstream's progress and answer for B reach B, as B wrote its id.
    let progress = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{},"progress":1}}}}"#,
        wb["params"]["_meta"]["progressToken"]
    );
    s.deliver(Bytes::from(progress)).await;
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"b":1}}}}"#,
        wb["id"]
    );
    s.deliver(Bytes::from(answer)).await;
    let Delivery::Related(p) = next(&mut rb).await else {
        panic!("B's progress")
    };
    assert!(
        p.windows(18).any(|w| w == br#""progressToken":-0"#),
        "{}",
        String::from_utf8_lossy(&p)
    );
    assert!(
        matches!(next(&mut rb).await, Delivery::Final(m) if &m[..] == br#"{"jsonrpc":"2.0","id":-0,"result":{"b":1}}"#)
    );
    let nothing = tokio::time::timeout(std::time::Duration::from_millis(20), ra.recv());
    assert!(nothing.await.is_err(), "A got nothing of B's");
}

/// A lone client's `-0`, answered `0` by its server (which parses it), is
/// answered, with the id as the client wrote it.
#[tokio::test]
async fn a_number_the_server_writes_otherwise_is_still_its_answer() {
    let s = MessageSession::new("t".into(), None);
    let req = br#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#;
    let (mut rx, _g) = s.request(req, raw("-0"), None).await.unwrap();
    assert!(
        matches!(
            s.request(
                br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
                raw("0"),
                None
            )
            .await,
            Err(Failure::IdInUse { .. })
        ),
        "0 and -0 cannot be told apart by the server"
    );
    s.outgoing().await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
    ))
    .await;
    assert!(
        matches!(next(&mut rx).await, Delivery::Final(m) if &m[..] == br#"{"jsonrpc":"2.0","id":-0,"result":{}}"#)
    );
}

#[tokio::test]
async fn close_fails_requests_in_flight() {
    let s = MessageSession::new("stdio-x".into(), None);
    let (mut rx, _g) = s
        .request(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#, raw("1"), None)
        .await
        .unwrap();
    s.close("exited with status 1");
    let Delivery::Failed(failure) = next(&mut rx).await else {
        panic!()
    };
    assert_eq!(
        failure.to_string(),
        "upstream 'stdio-x' exited with status 1"
    );
    assert!(s.request(b"{}", raw("2"), None).await.is_err());
}

/// A second request with the id of one still waiting is refused; it cannot
/// take the first one's answer or its routing entry, and once answered the
/// id is free again.
#[tokio::test]
async fn an_id_still_waiting_is_not_taken_twice() {
    let s = MessageSession::new("t".into(), None);
    let req = br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
    let (mut rx, guard) = s.request(req, raw("5"), None).await.unwrap();
    let again = s.request(req, raw("5"), None).await;
    assert!(
        matches!(again, Err(Failure::IdInUse { ref id }) if id == "5"),
        "{:?}",
        again.err()
    );
    assert_eq!(&s.outgoing().await[..], &req[..]);
    let second = tokio::time::timeout(std::time::Duration::from_millis(20), s.outgoing());
    assert!(second.await.is_err(), "the second was not sent");
    let answer = br#"{"jsonrpc":"2.0","id":5,"result":{}}"#;
    s.deliver(Bytes::from_static(answer)).await;
    assert!(matches!(next(&mut rx).await, Delivery::Final(b) if &b[..] == answer));

    // The id is free again; the first request's guard, dropped late, leaves
    // the new request's entry alone.
    let (mut rx2, _g2) = s.request(req, raw("5"), None).await.unwrap();
    drop(guard);
    s.deliver(Bytes::from_static(answer)).await;
    assert!(matches!(next(&mut rx2).await, Delivery::Final(b) if &b[..] == answer));
}

#[tokio::test]
async fn a_request_given_up_before_it_is_written_is_taken_back() {
    let s = MessageSession::new("t".into(), None);
    let (_rx, g) = s
        .request(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#, raw("1"), None)
        .await
        .unwrap();
    g.timed_out(2);
    let (_rx, _g) = s
        .request(br#"{"jsonrpc":"2.0","id":2,"method":"y"}"#, raw("2"), None)
        .await
        .unwrap();
    // The first never reaches the upstream, nor does a cancellation of it.
    assert_eq!(
        &s.outgoing().await[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"y"}"#
    );
}

#[tokio::test]
async fn a_written_request_that_times_out_is_cancelled_upstream() {
    let s = MessageSession::new("t".into(), Some(Mux::new(Default::default())));
    let req = br#"{"jsonrpc":"2.0","id":"c","method":"tools/call"}"#;
    // The id as found in the message: a shared session splices it.
    let id = jsonrpc::classify_one(req).unwrap().id.unwrap();
    let (_first, _fg) = s.request(req, id, None).await.unwrap();
    // Another client's request with the same id: each has the connection's
    // own.
    let (_rx, g) = s.request(req, id, None).await.unwrap();
    s.outgoing().await;
    let written = s.outgoing().await;
    assert_eq!(
        &written[..],
        br#"{"jsonrpc":"2.0","id":"mcp-ui-gateway/2","method":"tools/call"}"#
    );
    g.timed_out(7);
    let cancel = s.outgoing().await;
    let v: serde_json::Value = serde_json::from_slice(&cancel).unwrap();
    assert_eq!(v["method"], "notifications/cancelled");
    assert_eq!(
        v["params"]["requestId"], "mcp-ui-gateway/2",
        "the id the upstream saw"
    );
    assert_eq!(
        v["params"]["reason"],
        "no answer within 7 s (the gateway's request timeout)"
    );
    // A client going away cancels too; an initialize is never cancelled.
    let (_rx, g) = s.request(req, id, None).await.unwrap();
    s.outgoing().await;
    drop(g);
    let v: serde_json::Value = serde_json::from_slice(&s.outgoing().await).unwrap();
    assert_eq!(v["params"]["requestId"], "mcp-ui-gateway/3");
    let init = br#"{"jsonrpc":"2.0","id":9,"method":"initialize"}"#;
    let id = jsonrpc::classify_one(init).unwrap().id.unwrap();
    let (_rx, g) = s.request(init, id, None).await.unwrap();
    s.outgoing().await;
    drop(g);
    let none = tokio::time::timeout(std::time::Duration::from_millis(20), s.outgoing());
    assert!(none.await.is_err(), "initialize is not cancelled");
}

#[tokio::test]
async fn a_full_outbox_refuses_with_an_error_naming_the_upstream() {
    let s = MessageSession::with_outbox("slow".into(), None, Outbox::new(1, 1024));
    let (_rx, _g) = s
        .request(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#, raw("1"), None)
        .await
        .unwrap();
    let Err(e) = s
        .request(br#"{"jsonrpc":"2.0","id":2,"method":"x"}"#, raw("2"), None)
        .await
    else {
        panic!("queued past the bound")
    };
    assert!(
        e.to_string().starts_with(
            "upstream 'slow' is not reading its input: 1 messages (37 bytes) already wait"
        ),
        "{e}"
    );
    assert_eq!(e.code(), mcp_ui_wire::jsonrpc::code::SERVER_ERROR);
    let text = UpstreamError::Backlog {
        upstream: "x".into(),
        messages: 0,
        bytes: 0,
    }
    .to_string();
    let bounds = format!(
        "at most {MAX_QUEUED} messages or {} MiB",
        MAX_QUEUED_BYTES >> 20
    );
    assert!(text.contains(&bounds), "{text}");
}

#[tokio::test]
async fn a_response_that_is_not_utf8_fails_its_request_only() {
    let s = MessageSession::new("bad".into(), None);
    let (mut rx1, _g1) = s
        .request(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#, raw("1"), None)
        .await
        .unwrap();
    let (mut rx2, _g2) = s
        .request(br#"{"jsonrpc":"2.0","id":2,"method":"x"}"#, raw("2"), None)
        .await
        .unwrap();
    s.deliver(Bytes::from_static(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}",
    ))
    .await;
    let Delivery::Failed(f) = next(&mut rx1).await else {
        panic!("not failed")
    };
    assert_eq!(
        f.to_string(),
        "upstream 'bad' sent an invalid reply: its answer is not valid UTF-8 (byte 39 of 43)"
    );
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
    ))
    .await;
    assert!(matches!(next(&mut rx2).await, Delivery::Final(_)));
    assert!(!s.is_closed());
}
