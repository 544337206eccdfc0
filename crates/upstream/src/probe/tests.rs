//! Tests of the probe against scripted stdio and HTTP upstreams.

use std::time::Duration;

use super::round_trip::answer_server_request;
use super::*;
use mcp_ui_model::config::StdioCommand;
use mcp_ui_model::config::{Limits, Mount, Transport};

fn limits(request_timeout_secs: u64) -> Limits {
    Limits {
        request_timeout_secs,
        connect_timeout_secs: 5,
        ..Limits::default()
    }
}

fn sh(name: &str, script: &str) -> Mount {
    Mount {
        name: name.into(),
        path: "/mcp".into(),
        transport: Transport::Stdio(StdioCommand {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: Default::default(),
            cwd: None,
        }),
        forward_headers: Vec::new(),
        auth_challenge: Default::default(),
        tls: Default::default(),
        sessions: Default::default(),
        cache: Default::default(),
        auth: None,
    }
}

/// A stdio server in sh: answers `initialize`, then serves two pages of
/// tools, and pings the client once to see it answered.
const PAGED: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"paged","version":"1.0"}}}\n' "$id" ;;
    *'"cursor":"two"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"second","inputSchema":{"type":"object"}}]}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":"srv","method":"ping"}\n'
      IFS= read -r pong
      case "$pong" in *'"id":"srv","result"'*) ;; *) exit 3 ;; esac
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"first","inputSchema":{"type":"object"}}],"nextCursor":"two"}}\n' "$id" ;;
  esac
done
"#;

#[tokio::test]
async fn stdio_pages_are_followed_and_server_requests_answered() {
    let listing = list_tools(&sh("paged", PAGED), &limits(10), Prober::Command)
        .await
        .unwrap();
    assert_eq!(listing.names().collect::<Vec<_>>(), ["first", "second"]);
    assert_eq!(listing.protocol_version, "2025-06-18");
    assert_eq!(listing.server().as_deref(), Some("paged 1.0"));
}

#[tokio::test]
async fn an_exiting_child_is_named() {
    let err = list_tools(&sh("gone", "exit 7"), &limits(10), Prober::Command)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("upstream 'gone'"), "{err}");
}

#[tokio::test]
async fn a_silent_child_times_out() {
    let err = list_tools(&sh("mute", "sleep 30"), &limits(1), Prober::Command)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(err, "upstream 'mute' did not answer within 1 s");
}

#[tokio::test]
async fn a_looping_cursor_is_refused() {
    let script = r#"
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *initialize*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}\n' "$id" ;;
    *tools/list*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[],"nextCursor":"again"}}\n' "$id" ;;
  esac
done
"#;
    let err = list_tools(&sh("loop", script), &limits(10), Prober::Command)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("upstream 'loop'") && err.contains("twice"),
        "{err}"
    );
}

#[tokio::test]
async fn an_http_refusal_is_named() {
    // A port nothing listens on: bind one, then let it go.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mount = Mount {
        name: "nobody".into(),
        path: "/mcp".into(),
        transport: Transport::Http {
            url: format!("http://{addr}/mcp").parse().unwrap(),
        },
        forward_headers: Vec::new(),
        auth_challenge: Default::default(),
        tls: Default::default(),
        sessions: Default::default(),
        cache: Default::default(),
        auth: None,
    };
    let err = list_tools(&mount, &limits(5), Prober::Command)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("upstream 'nobody' is unreachable"), "{err}");
}

/// An upstream that answers 401 is up: it wants a token the probe lacks.
#[tokio::test]
async fn an_upstream_that_wants_a_token_is_told_apart() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf).await;
        let answer = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let _ = conn.write_all(answer.as_bytes()).await;
    });
    let mount = Mount {
        name: "locked".into(),
        path: "/mcp".into(),
        transport: Transport::Http {
            url: format!("http://{addr}/mcp").parse().unwrap(),
        },
        forward_headers: Vec::new(),
        auth_challenge: Default::default(),
        tls: Default::default(),
        sessions: Default::default(),
        cache: Default::default(),
        auth: None,
    };
    let err = list_tools(&mount, &limits(5), Prober::Command)
        .await
        .unwrap_err();
    assert!(err.requires_authorization(), "{err}");
    assert!(err.to_string().contains("answered 401"), "{err}");
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
}

#[test]
fn server_requests_get_answers() {
    let ping = answer_server_request(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#).unwrap();
    assert_eq!(&ping[..], br#"{"jsonrpc":"2.0","id":4,"result":{}}"#);
    let other =
        answer_server_request(br#"{"jsonrpc":"2.0","id":"a","method":"roots/list"}"#).unwrap();
    assert!(std::str::from_utf8(&other).unwrap().contains("-32601"));
    assert!(answer_server_request(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).is_none());
}

/// An HTTP upstream that sends its answer's head and then trickles the body
/// (a byte every 100 ms, for up to a minute) does not hold the probe past
/// its request timeout.
#[tokio::test]
async fn a_trickling_http_body_times_out() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let Ok((mut s, _)) = listener.accept().await else {
            return;
        };
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = s.write_all(head.as_bytes()).await;
        for _ in 0..600 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if s.write_all(b"1\r\n \r\n").await.is_err() {
                return;
            }
        }
    });
    let mount = Mount {
        name: "slow".into(),
        path: "/mcp".into(),
        transport: Transport::Http {
            url: url.parse().unwrap(),
        },
        forward_headers: Vec::new(),
        auth_challenge: Default::default(),
        tls: Default::default(),
        sessions: Default::default(),
        cache: Default::default(),
        auth: None,
    };
    let started = std::time::Instant::now();
    let err = list_tools(&mount, &limits(1), Prober::Command)
        .await
        .unwrap_err()
        .to_string();
    let took = started.elapsed();
    assert!(err.contains("upstream 'slow'"), "{err}");
    assert!(err.contains("within 1 s"), "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    server.abort();
}
