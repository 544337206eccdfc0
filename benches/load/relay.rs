//! The bare relay: the least an HTTP/1.1 hop can do, as a floor to measure
//! the gateway against. It reads each request, sends it on to the upstream
//! over a connection of its own for each client connection, and streams the
//! answer back, with the gateway's process model (one single-threaded
//! runtime per CPU, accepting from one socket) and nothing else: no MCP, no
//! sessions, no checks, no logs, no metrics.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::Mutex;

/// Relay to `upstream` on an ephemeral loopback port, printing
/// `listening <port>` on stdout once bound.
pub fn run(upstream: SocketAddr) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    println!("listening {}", listener.local_addr().expect("bound").port());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let socket = listener.try_clone().expect("clone the listener");
            std::thread::spawn(move || worker(socket, upstream))
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
}

fn worker(socket: std::net::TcpListener, upstream: SocketAddr) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(socket).expect("listener");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection(stream, upstream));
        }
    });
}

async fn connection(stream: tokio::net::TcpStream, upstream: SocketAddr) {
    let Ok(up) = tokio::net::TcpStream::connect(upstream).await else {
        return;
    };
    let _ = up.set_nodelay(true);
    let Ok((sender, conn)) = hyper::client::conn::http1::handshake(TokioIo::new(up)).await else {
        return;
    };
    tokio::spawn(conn);
    let sender = Arc::new(Mutex::new(sender));
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let sender = sender.clone();
        async move { Ok::<_, Infallible>(relay(&sender, req).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn relay(
    sender: &Mutex<hyper::client::conn::http1::SendRequest<Full<Bytes>>>,
    req: hyper::Request<Incoming>,
) -> hyper::Response<http_body_util::combinators::BoxBody<Bytes, hyper::Error>> {
    let (parts, body) = req.into_parts();
    let failed = || {
        hyper::Response::builder()
            .status(502)
            .body(Full::new(Bytes::new()).map_err(|e| match e {}).boxed())
            .expect("a response")
    };
    let Ok(body) = body.collect().await.map(|c| c.to_bytes()) else {
        return failed();
    };
    let req = hyper::Request::from_parts(parts, Full::new(body));
    let mut sender = sender.lock().await;
    if sender.ready().await.is_err() {
        return failed();
    }
    match sender.send_request(req).await {
        Ok(resp) => resp.map(|b| b.boxed()),
        Err(_) => failed(),
    }
}
