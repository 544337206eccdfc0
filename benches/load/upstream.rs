//! The fast in-tree upstreams the load benchmark measures against: a minimal
//! streamable HTTP MCP server (JSON responses at `/mcp`, SSE responses at
//! `/sse`; plain, or over TLS with HTTP/2 or HTTP/1.1 by ALPN) and a minimal stdio MCP server (one message per line). Both give
//! the same answers: `initialize`, notifications, `ping`, `tools/list` (a
//! configurable number of tools) and `tools/call` (`echo`: a small result;
//! `big`: a 1 MiB text result).

use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Size of the `big` tool's text result.
pub const BIG_BYTES: usize = 1024 * 1024;

/// Precomputed answers, shared by both transports.
pub struct Answers {
    tools_list: String,
    big: String,
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
}

#[derive(Deserialize)]
struct InitParams {
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
}

impl Answers {
    /// `tools` tools: `echo`, `big`, then `tool_2` … up to the count.
    pub fn new(tools: usize) -> Self {
        let mut list = String::with_capacity(tools * 260);
        for i in 0..tools.max(2) {
            if i > 0 {
                list.push(',');
            }
            let name = match i {
                0 => "echo".to_owned(),
                1 => "big".to_owned(),
                n => format!("tool_{n}"),
            };
            list.push_str(&format!(
                r#"{{"name":"{name}","description":"Benchmark tool {i}: answers at once with a fixed result.","inputSchema":{{"type":"object","properties":{{"message":{{"type":"string","description":"Any text"}}}},"required":["message"]}}}}"#
            ));
        }
        Answers {
            tools_list: format!(r#"{{"tools":[{list}]}}"#),
            big: format!(
                r#"{{"content":[{{"type":"text","text":"{}"}}],"isError":false}}"#,
                "x".repeat(BIG_BYTES)
            ),
        }
    }

    /// The response to one message, or `None` for a notification or a
    /// response.
    pub fn answer(&self, msg: &[u8]) -> Option<Vec<u8>> {
        let msg: Msg<'_> = match serde_json::from_slice(msg) {
            Ok(m) => m,
            Err(_) => {
                return Some(
                    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#
                        .to_vec(),
                );
            }
        };
        let id = msg.id?.get();
        let method = msg.method?;
        let result: std::borrow::Cow<'_, str> = match method.as_str() {
            "initialize" => {
                let version = msg
                    .params
                    .and_then(|p| serde_json::from_str::<InitParams>(p.get()).ok())
                    .and_then(|p| p.protocol_version)
                    .unwrap_or_else(|| "2025-06-18".to_owned());
                format!(
                    r#"{{"protocolVersion":"{version}","capabilities":{{"tools":{{"listChanged":false}}}},"serverInfo":{{"name":"bench-upstream","version":"0.0.0"}}}}"#
                )
                .into()
            }
            "ping" => "{}".into(),
            "tools/list" => self.tools_list.as_str().into(),
            "tools/call" => {
                let name = msg
                    .params
                    .and_then(|p| serde_json::from_str::<CallParams>(p.get()).ok())
                    .map(|p| p.name)
                    .unwrap_or_default();
                if name == "big" {
                    self.big.as_str().into()
                } else {
                    r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#.into()
                }
            }
            _ => {
                return Some(
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found"}}}}"#
                    )
                    .into_bytes(),
                );
            }
        };
        let mut out = Vec::with_capacity(result.len() + id.len() + 40);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(result.as_bytes());
        out.push(b'}');
        Some(out)
    }
}

/// Serve stdio until stdin closes: one message per line in, one per line out.
pub fn run_stdio(tools: usize) {
    let answers = Answers::new(tools);
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let msg = line.trim_ascii();
        if msg.is_empty() {
            continue;
        }
        if let Some(resp) = answers.answer(msg) {
            if out.write_all(&resp).is_err() || out.write_all(b"\n").is_err() {
                return;
            }
            if out.flush().is_err() {
                return;
            }
        }
    }
}

/// Serve streamable HTTP on an ephemeral loopback port, printing
/// `listening <port>` on stdout once bound.
pub fn run_http(tools: usize) {
    serve(tools, None);
}

/// The same over TLS (`__upstream-https CERT KEY ALPN`): the certificate
/// chain and key (PEM), and the ALPN protocols offered, e.g. `h2,http/1.1`;
/// a connection that agrees on `h2` is served HTTP/2, any other HTTP/1.1.
pub fn run_https(args: &[String], tools: usize) {
    let [cert, key, alpn, ..] = args else {
        eprintln!("usage: __upstream-https CERT KEY ALPN");
        std::process::exit(2);
    };
    match crate::tls::server_config(cert.as_ref(), key.as_ref(), alpn) {
        Ok(config) => serve(
            tools,
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
        ),
        Err(e) => {
            eprintln!("__upstream-https: {e}");
            std::process::exit(2);
        }
    }
}

fn serve(tools: usize, tls: Option<tokio_rustls::TlsAcceptor>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let answers = Arc::new(Answers::new(tools));
        let sessions = Arc::new(AtomicU64::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("listening {}", listener.local_addr().unwrap().port());
        let mut accepted = 0u64;
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            accepted += 1;
            // Connection reuse is visible in the log: one line per connection.
            eprintln!("connection {accepted}");
            let _ = stream.set_nodelay(true);
            let answers = answers.clone();
            let sessions = sessions.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let answers = answers.clone();
                    let sessions = sessions.clone();
                    async move { Ok::<_, Infallible>(handle(&answers, &sessions, req).await) }
                });
                let Some(tls) = tls else {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                    return;
                };
                let stream = match tls.accept(stream).await {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("connection {accepted}: TLS handshake failed: {e}");
                        return;
                    }
                };
                if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                    eprintln!("connection {accepted}: HTTP/2");
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                } else {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                }
            });
        }
    });
}

async fn handle(
    answers: &Answers,
    sessions: &AtomicU64,
    req: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let sse = req.uri().path() == "/sse";
    match *req.method() {
        hyper::Method::POST => {}
        hyper::Method::DELETE => return status(StatusCode::OK),
        _ => return status(StatusCode::METHOD_NOT_ALLOWED),
    }
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return status(StatusCode::BAD_REQUEST),
    };
    let is_init = memchr::memmem::find(&body, br#""method":"initialize""#).is_some();
    let Some(resp) = answers.answer(&body) else {
        return status(StatusCode::ACCEPTED);
    };
    let mut builder = Response::builder().status(StatusCode::OK);
    if is_init {
        let n = sessions.fetch_add(1, Ordering::Relaxed);
        builder = builder.header("mcp-session-id", format!("bench-session-{n}"));
    }
    if sse {
        let mut framed = Vec::with_capacity(resp.len() + 24);
        framed.extend_from_slice(b"event: message\ndata: ");
        framed.extend_from_slice(&resp);
        framed.extend_from_slice(b"\n\n");
        builder
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(Full::new(framed.into()))
            .unwrap()
    } else {
        builder
            .header("content-type", "application/json")
            .body(Full::new(resp.into()))
            .unwrap()
    }
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .body(Full::new(Bytes::new()))
        .unwrap()
}
