use super::*;

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
    let (out_tx, mut out_rx) = mpsc::channel(8);
    let s = MessageSession::new("t".into(), out_tx, false);
    let req = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}}"#;
    let (mut rx, _g) = s.request(req, raw("5"), Some(raw("\"p\""))).await.unwrap();
    assert_eq!(&out_rx.recv().await.unwrap()[..], &req[..]);
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
    let (out_tx, _out_rx) = mpsc::channel(8);
    let s = MessageSession::new("t".into(), out_tx, false);
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
    let (out_tx, mut out_rx) = mpsc::channel(8);
    let s = MessageSession::new("t".into(), out_tx, true);
    let a = br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#;
    let id = jsonrpc::classify_one(a).unwrap().id.unwrap();
    let (mut ra, _ga) = s.request(a, id, None).await.unwrap();
    let (mut rb, _gb) = s.request(a, id, None).await.unwrap();
    assert_eq!(
        &out_rx.recv().await.unwrap()[..],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
    );
    assert_eq!(
        &out_rx.recv().await.unwrap()[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#
    );
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":2,"result":{"b":1}}"#,
    ))
    .await;
    s.deliver(Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#,
    ))
    .await;
    assert!(
        matches!(next(&mut ra).await, Delivery::Final(m) if &m[..] == br#"{"jsonrpc":"2.0","id":"x","result":{"a":1}}"#)
    );
    assert!(
        matches!(next(&mut rb).await, Delivery::Final(m) if &m[..] == br#"{"jsonrpc":"2.0","id":"x","result":{"b":1}}"#)
    );
}

#[tokio::test]
async fn close_fails_requests_in_flight() {
    let (out_tx, _out_rx) = mpsc::channel(8);
    let s = MessageSession::new("stdio-x".into(), out_tx, false);
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
    let (out_tx, mut out_rx) = mpsc::channel(8);
    let s = MessageSession::new("t".into(), out_tx, false);
    let req = br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#;
    let (mut rx, guard) = s.request(req, raw("5"), None).await.unwrap();
    let again = s.request(req, raw("5"), None).await;
    assert!(
        matches!(again, Err(Failure::IdInUse { ref id }) if id == "5"),
        "{:?}",
        again.err()
    );
    assert_eq!(out_rx.try_recv().ok().as_deref(), Some(&req[..]));
    assert!(out_rx.try_recv().is_err(), "the second was not sent");
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
