//! TLS on both sides of the gateway, with real parts: certificates made here (rcgen),
//! nginx and HAProxy from Debian terminating TLS in front of server-everything, the
//! gateway's own HTTPS listener reached by the Python and TypeScript SDK clients over
//! HTTP/1.1 and HTTP/2, and a certificate rotated under load.
//!
//! Like `tests/peers.rs`, these need the peers of `scripts/install-peers.sh` (nginx and
//! haproxy among them); `MCP_UI_SKIP_PEERS=1` turns their absence into a skip. Every
//! process is started on 127.0.0.1 and killed by PID when its test ends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use support::clients::post_json;
use support::peers::*;
use support::pki::{Ca, Validity};
use support::process::{Proc, start_haproxy, wait_listening};

use crate::support;

/// How long nginx and HAProxy get to listen.
const LISTEN_LIMIT: Duration = Duration::from_secs(20);

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tls-test","version":"1"}}}"#;

// ---------------------------------------------------------------------------------------
// Parts

/// A port free on 127.0.0.1 a moment ago, for a server that cannot be told to pick one.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().unwrap().port()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// nginx terminating TLS on each `(port, cert, key, http2)` in front of `backend`
/// (server-everything over streamable HTTP), with SSE passed through unbuffered.
async fn start_nginx(dir: &Path, backend: u16, servers: &[(u16, &Path, &Path, bool)]) -> Proc {
    let mut blocks = String::new();
    for (port, cert, key, h2) in servers {
        let h2 = if *h2 { " http2" } else { "" };
        blocks.push_str(&format!(
            "  server {{\n    listen 127.0.0.1:{port} ssl{h2};\n    ssl_certificate {};\n    ssl_certificate_key {};\n    location / {{\n      proxy_pass http://backend;\n      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_buffering off;\n      proxy_request_buffering off;\n      proxy_read_timeout 120s;\n    }}\n  }}\n",
            cert.display(),
            key.display()
        ));
    }
    let d = dir.display();
    let user = if is_root() { "user root;\n" } else { "" };
    let conf = format!(
        "{user}worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/nginx-error.log warn;\nevents {{ worker_connections 512; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  upstream backend {{ server 127.0.0.1:{backend}; keepalive 16; }}\n{blocks}}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .arg("-c")
        .arg(&path);
    let mut nginx = Proc::spawn("nginx", &mut cmd);
    for (port, ..) in servers {
        wait_listening(&mut nginx, *port, LISTEN_LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    nginx
}

/// HAProxy terminating TLS on `port` and requiring a client certificate signed by
/// `client_ca`, passing the bytes to `backend` (HTTP/1.1: no ALPN is offered).
async fn start_mtls_haproxy(
    dir: &Path,
    port: u16,
    combined: &Path,
    client_ca: &Path,
    backend: u16,
) -> Proc {
    let conf = format!(
        "global\n  maxconn 256\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 120s\n  timeout server 120s\nfrontend mtls\n  bind 127.0.0.1:{port} ssl crt {} ca-file {} verify required\n  default_backend everything\nbackend everything\n  server s1 127.0.0.1:{backend}\n",
        combined.display(),
        client_ca.display()
    );
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, conf).unwrap();
    start_haproxy(&path, port, LISTEN_LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn backend_port(url: &str) -> u16 {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .expect("a loopback URL");
    rest.split('/').next().unwrap().parse().unwrap()
}

/// `scheme://127.0.0.1:PORT` of a gateway's endpoint URL.
fn origin(url: &str) -> String {
    let after = url.find("://").unwrap() + 3;
    let end = url[after..].find('/').map_or(url.len(), |i| after + i);
    url[..end].to_owned()
}

/// A gateway configuration file: `overlays` plus the given `[[upstream]]` tables.
fn write_config(dir: &Path, upstreams: &str) -> PathBuf {
    let overlays = dir.join("overlays");
    std::fs::create_dir_all(&overlays).unwrap();
    let path = dir.join("gateway.toml");
    std::fs::write(
        &path,
        format!("overlays = \"{}\"\n{upstreams}", overlays.display()),
    )
    .unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The JSON-RPC message of an answer: its JSON body, or its first SSE event's data.
fn rpc_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|_| {
        support::clients::parse_sse(body)
            .first()
            .and_then(|e| e.json().ok())
            .unwrap_or(Value::Null)
    })
}

/// The JSON-RPC error message of an answer, or the whole answer.
fn error_message(body: &[u8]) -> String {
    rpc_of(body)
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

// ---------------------------------------------------------------------------------------
// HTTPS upstream and HTTPS listener, with the SDK clients

/// The gateway reaches server-everything through nginx over `https://` (HTTP/2 by ALPN,
/// and HTTP/1.1 on a second listener), and serves HTTPS itself: the Python client over
/// HTTP/2 and HTTP/1.1, the TypeScript client over HTTP/1.1 and HTTP/2, each run the
/// same as direct against the server. Upstream connections are pooled: a handful of
/// handshakes for every call of the runs.
#[tokio::test]
async fn https_upstream_behind_nginx_and_https_listener_serve_sdk_clients_like_direct() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("mcp-ui-gateway test CA");
    let ca_pem = dir.path().join("ca.pem");
    std::fs::write(&ca_pem, &ca.pem).unwrap();
    let (cert, key) = ca
        .server(&["localhost", "127.0.0.1"], Validity::Now)
        .write(dir.path(), "server");

    let (_server, direct_url) = start_everything(&peers, "streamableHttp").await;
    let (h2_port, h1_port) = (free_port(), free_port());
    let nginx = start_nginx(
        dir.path(),
        backend_port(&direct_url),
        &[(h2_port, &cert, &key, true), (h1_port, &cert, &key, false)],
    )
    .await;
    let config = write_config(
        dir.path(),
        &format!(
            "[[upstream]]\nname = \"everything\"\npath = \"/mcp\"\nurl = \"https://localhost:{h2_port}/mcp\"\nca_file = \"{}\"\n\n[[upstream]]\nname = \"everything-h1\"\npath = \"/h1/mcp\"\nurl = \"https://127.0.0.1:{h1_port}/mcp\"\nca_file = \"{}\"\n",
            s(&ca_pem),
            s(&ca_pem)
        ),
    );
    let gateway = Gateway::start_with(
        &peers,
        "https upstream",
        Upstream::Configured,
        &[
            "--config",
            s(&config),
            "--tls-cert",
            s(&cert),
            "--tls-key",
            s(&key),
        ],
        &[],
    )
    .await;
    assert!(
        gateway.url.starts_with("https://"),
        "the endpoint line should say https://, not {}",
        gateway.url
    );
    let base = origin(&gateway.url);
    let h1_url = format!("{base}/h1/mcp");

    let mut failures = Vec::new();
    let runs: [(ClientKind, &str, &[&str]); 4] = [
        (ClientKind::Python, gateway.url.as_str(), &["--http2"]),
        (ClientKind::TypeScript, gateway.url.as_str(), &[]),
        (ClientKind::Python, h1_url.as_str(), &[]),
        (ClientKind::TypeScript, h1_url.as_str(), &["--http2"]),
    ];
    let mut directs = std::collections::HashMap::new();
    for kind in ClientKind::ALL {
        let d = run_client_direct(&peers, kind, Target::Streamable(&direct_url), &[]).await;
        directs.insert(kind, d);
    }
    for (kind, url, extra) in runs {
        let direct = &directs[&kind];
        let mut args = vec!["--cafile", s(&ca_pem)];
        args.extend_from_slice(extra);
        let via = run_client(&peers, kind, Target::Streamable(url), &args)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "{} over https://{} FAILED:\n{e}\n{}",
                    kind.label(),
                    url,
                    gateway.proc.tail(40)
                )
            });
        let label = format!("{} {} via {url}", kind.label(), extra.join(" "));
        println!("[tls] {label}: {}", brief(&via));
        let diffs = everything_diffs(direct, &via);
        if !diffs.is_empty() {
            failures.push(format!(
                "{label} differs from direct:\n{}",
                diffs.join("\n")
            ));
        }
        let http2 = extra.contains(&"--http2");
        match kind {
            ClientKind::Python => {
                let versions: Vec<&str> = via["http_log"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e["http_version"].as_str())
                    .collect();
                let want = if http2 { "HTTP/2" } else { "HTTP/1.1" };
                if versions.is_empty() || versions.iter().any(|v| *v != want) {
                    failures.push(format!(
                        "{label}: responses came as {versions:?}, not all {want}"
                    ));
                }
            }
            ClientKind::TypeScript => {
                let alpn = via["alpn"].clone();
                let want = if http2 { "h2" } else { "http/1.1" };
                let ok = alpn
                    .as_array()
                    .is_some_and(|a| !a.is_empty() && a.iter().all(|p| p == want));
                if !ok {
                    failures.push(format!(
                        "{label}: connections agreed on {alpn}, not all {want}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        gateway.proc.tail(40)
    );

    // Every call of the four runs went over pooled upstream connections.
    let client = TlsClient::new(&ca.pem);
    let upstream = client
        .metric(&base, "mcp_gateway_tls_handshakes_total{side=\"upstream\"}")
        .await;
    println!("[tls] upstream TLS handshakes for the four runs: {upstream}");
    assert!(
        upstream <= 40,
        "{upstream} TLS handshakes with the upstreams: connections are not reused"
    );

    // nginx restarts: the pooled connections (the shared HTTP/2 one among them) are
    // closed under the gateway, whose next requests open new ones.
    drop(nginx);
    let _nginx = start_nginx(
        dir.path(),
        backend_port(&direct_url),
        &[(h2_port, &cert, &key, true), (h1_port, &cert, &key, false)],
    )
    .await;
    for url in [gateway.url.as_str(), h1_url.as_str()] {
        let answer = client
            .request("POST", url, INIT)
            .await
            .unwrap_or_else(|e| panic!("POST {url} after the upstream restarted: {e}"));
        let v = rpc_of(&answer.body);
        assert!(
            answer.status == 200 && v.pointer("/result/serverInfo").is_some(),
            "initialize through {url} after the upstream restarted: {} {}\n{}",
            answer.status,
            String::from_utf8_lossy(&answer.body),
            gateway.proc.tail(20)
        );
    }
    gateway.stop().await;
}

// ---------------------------------------------------------------------------------------
// A small HTTPS client that shows which certificate it was served

/// HTTP/1.1 over TLS to the gateway, trusting one authority, a new connection per request.
struct TlsClient {
    config: Arc<rustls::ClientConfig>,
}

/// An answer, and the leaf certificate the connection was served with.
struct Answer {
    status: u16,
    body: Bytes,
    cert: Vec<u8>,
}

impl TlsClient {
    fn new(ca_pem: &str) -> TlsClient {
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.expect("CA PEM")).expect("CA cert");
        }
        let mut config =
            rustls::ClientConfig::builder_with_provider(mcp_ui_model::tls::crypto::provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        // A full handshake each time: a resumed session shows the certificate of the
        // session it resumes, not the one the listener serves now.
        config.resumption = rustls::client::Resumption::disabled();
        TlsClient {
            config: Arc::new(config),
        }
    }

    /// `method` `url` (`https://127.0.0.1:PORT/path`), verified as `localhost`.
    async fn request(&self, method: &str, url: &str, body: &str) -> Result<Answer, String> {
        let rest = url
            .strip_prefix("https://127.0.0.1:")
            .ok_or("not a loopback https URL")?;
        let (port, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let port: u16 = port.parse().map_err(|_| "bad port")?;
        let path = if path.is_empty() { "/" } else { path };
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .map_err(|e| format!("connect: {e}"))?;
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            let tls = tokio_rustls::TlsConnector::from(self.config.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake: {e}"))?;
            let cert = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.to_vec())
                .unwrap_or_default();
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                    .await
                    .map_err(|e| format!("HTTP handshake: {e}"))?;
            tokio::spawn(conn);
            let req = http::Request::builder()
                .method(method)
                .uri(path)
                .header("host", "localhost")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(Full::new(Bytes::from(body.to_owned())))
                .unwrap();
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| format!("request: {e}"))?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("body: {e}"))?
                .to_bytes();
            Ok(Answer { status, body, cert })
        };
        tokio::time::timeout(Duration::from_secs(20), exchange)
            .await
            .map_err(|_| "no answer within 20 s".to_owned())?
    }

    /// A counter of the gateway's `/metrics` at `base` (`https://127.0.0.1:PORT`).
    async fn metric(&self, base: &str, line_start: &str) -> u64 {
        let answer = self
            .request("GET", &format!("{base}/metrics"), "")
            .await
            .unwrap_or_else(|e| panic!("GET {base}/metrics: {e}"));
        let text = String::from_utf8_lossy(&answer.body);
        text.lines()
            .find_map(|l| l.strip_prefix(line_start))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{line_start}` in /metrics:\n{text}"))
    }
}

// ---------------------------------------------------------------------------------------
// Certificate problems, each named

/// One nginx serves server-everything with a good certificate, an expired one, one
/// from another authority, and one issued for another name. The gateway's answer to a
/// request, its `/readyz` and `check` each name the upstream and the reason; the
/// `tls_server_name` setting fixes the name mismatch; `SSL_CERT_FILE` adds the
/// authority for an upstream without `ca_file`.
#[tokio::test]
async fn certificate_problems_are_named_in_the_answer_readyz_and_check() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("mcp-ui-gateway test CA");
    let other = Ca::new("some other CA");
    let ca_pem = d.join("ca.pem");
    std::fs::write(&ca_pem, &ca.pem).unwrap();
    let names = ["localhost", "127.0.0.1"];
    let (good, good_key) = ca.server(&names, Validity::Now).write(d, "good");
    let (expired, expired_key) = ca.server(&names, Validity::Expired).write(d, "expired");
    let (stranger, stranger_key) = other.server(&names, Validity::Now).write(d, "stranger");
    let (named, named_key) = ca
        .server(&["mcp.internal.example"], Validity::Now)
        .write(d, "named");
    // An authority's own certificate served as the server's, and trusted.
    let (authority, authority_key) = Ca::authority_as_server(&names).write(d, "authority");

    let (_server, direct_url) = start_everything(&peers, "streamableHttp").await;
    let ports = [
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    ];
    let _nginx = start_nginx(
        d,
        backend_port(&direct_url),
        &[
            (ports[0], &good, &good_key, true),
            (ports[1], &expired, &expired_key, true),
            (ports[2], &stranger, &stranger_key, true),
            (ports[3], &named, &named_key, true),
            (ports[4], &authority, &authority_key, true),
        ],
    )
    .await;
    let ca_file = format!("ca_file = \"{}\"\n", s(&ca_pem));
    let upstreams = [
        ("good", ports[0], ca_file.clone()),
        ("expired", ports[1], ca_file.clone()),
        ("stranger", ports[2], ca_file.clone()),
        ("misnamed", ports[3], ca_file.clone()),
        (
            "renamed",
            ports[3],
            format!("{ca_file}tls_server_name = \"mcp.internal.example\"\n"),
        ),
        // No ca_file: the system's roots, with SSL_CERT_FILE naming the test CA.
        ("by-env", ports[0], String::new()),
        (
            "authority",
            ports[4],
            format!("ca_file = \"{}\"\n", s(&authority)),
        ),
        // https:// to a port that speaks plain HTTP.
        ("plain", backend_port(&direct_url), String::new()),
    ];
    let mut toml = String::new();
    for (name, port, extra) in &upstreams {
        toml.push_str(&format!(
            "[[upstream]]\nname = \"{name}\"\nurl = \"https://127.0.0.1:{port}/mcp\"\n{extra}\n"
        ));
        // An overlay per upstream, so that `check` compares it with the live tools.
        std::fs::create_dir_all(d.join("overlays")).unwrap();
        std::fs::write(
            d.join("overlays").join(format!("{name}.toml")),
            "[tools.echo]\ntitle = \"Echo\"\n",
        )
        .unwrap();
    }
    let config = write_config(d, &toml);
    let gateway = Gateway::start_with(
        &peers,
        "tls problems",
        Upstream::Configured,
        &["--config", s(&config)],
        &[("SSL_CERT_FILE", s(&ca_pem))],
    )
    .await;
    let base = origin(&gateway.url);
    let reasons = [
        ("expired", "expired"),
        ("stranger", "unknown issuer"),
        ("misnamed", "name mismatch"),
        (
            "authority",
            "is a certificate authority's own certificate (CA:TRUE), not a server's: issue a server (leaf) certificate",
        ),
        ("plain", "is not TLS (a plain HTTP server on this port?"),
    ];
    for (name, why) in reasons {
        let (status, _, body) = post_json(&format!("{base}/{name}/mcp"), &[], INIT).await;
        let message = error_message(&body);
        println!("[tls] {name}: {status} {message}");
        assert!(
            message.contains(&format!("upstream '{name}'")) && message.contains(why),
            "initialize through `{name}` should fail naming the upstream and `{why}`: {status} {message}"
        );
    }
    for name in ["good", "renamed", "by-env"] {
        let (status, _, body) = post_json(&format!("{base}/{name}/mcp"), &[], INIT).await;
        let v = rpc_of(&body);
        assert!(
            status == 200 && v.pointer("/result/serverInfo").is_some(),
            "initialize through `{name}` should succeed: {status} {}\n{}",
            String::from_utf8_lossy(&body),
            gateway.proc.tail(20)
        );
    }
    let (status, _, body) = support::clients::request_raw(
        http::Method::GET,
        &format!("{base}/readyz"),
        &[],
        Bytes::new(),
    )
    .await;
    let readyz = String::from_utf8_lossy(&body).into_owned();
    println!("[tls] /readyz {status}:\n{readyz}");
    assert_eq!(status, 503, "/readyz with five broken upstreams: {readyz}");
    for (name, why) in reasons {
        assert!(
            readyz
                .lines()
                .any(|l| l.starts_with(&format!("upstream '{name}': not ready")) && l.contains(why)),
            "/readyz should say why `{name}` is not ready ({why}):\n{readyz}"
        );
    }
    gateway.stop().await;

    // `check` probes each upstream with the same settings and says the same.
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"))
        .args(["check", "--config", s(&config)])
        .env("SSL_CERT_FILE", &ca_pem)
        .env_remove("MCP_UI_SKIP_PEERS")
        .output()
        .expect("run check");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("[tls] check:\n{report}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "check should find problems:\n{report}"
    );
    for (name, why) in reasons {
        assert!(
            report.lines().any(|l| l.contains(&format!("{name}.toml"))
                && l.contains(&format!("upstream '{name}'"))
                && l.contains(why)),
            "check should name `{name}` and `{why}`:\n{report}"
        );
    }
    for name in ["good", "renamed", "by-env"] {
        assert!(
            !report
                .lines()
                .any(|l| l.contains(&format!("upstream '{name}' is unreachable"))),
            "check should reach `{name}`:\n{report}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Mutual TLS

/// HAProxy requires a client certificate from its own authority in front of
/// server-everything: the upstream with `client_cert` and `client_key` works (over
/// HTTP/1.1, as HAProxy offers no ALPN here); the same upstream without them fails with
/// an error that names the upstream and says a client certificate is required.
#[tokio::test]
async fn mutual_tls_upstream_behind_haproxy_needs_client_cert() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("mcp-ui-gateway test CA");
    let clients = Ca::new("mcp-ui-gateway client CA");
    let ca_pem = d.join("ca.pem");
    let clients_pem = d.join("clients.pem");
    std::fs::write(&ca_pem, &ca.pem).unwrap();
    std::fs::write(&clients_pem, &clients.pem).unwrap();
    let server = ca.server(&["localhost", "127.0.0.1"], Validity::Now);
    let combined = d.join("haproxy.pem");
    std::fs::write(&combined, format!("{}{}", server.cert, server.key)).unwrap();
    let (client_cert, client_key) = clients.client("gateway").write(d, "client");

    let (_server, direct_url) = start_everything(&peers, "streamableHttp").await;
    let port = free_port();
    let _haproxy =
        start_mtls_haproxy(d, port, &combined, &clients_pem, backend_port(&direct_url)).await;
    let config = write_config(
        d,
        &format!(
            "[[upstream]]\nname = \"with-cert\"\nurl = \"https://127.0.0.1:{port}/mcp\"\nca_file = \"{ca}\"\nclient_cert = \"{}\"\nclient_key = \"{}\"\n\n[[upstream]]\nname = \"no-cert\"\nurl = \"https://127.0.0.1:{port}/mcp\"\nca_file = \"{ca}\"\n",
            s(&client_cert),
            s(&client_key),
            ca = s(&ca_pem)
        ),
    );
    let gateway = Gateway::start_with(
        &peers,
        "mutual TLS",
        Upstream::Configured,
        &["--config", s(&config)],
        &[],
    )
    .await;
    let base = origin(&gateway.url);

    let (status, headers, body) = post_json(&format!("{base}/with-cert/mcp"), &[], INIT).await;
    let v = rpc_of(&body);
    assert!(
        status == 200 && v.pointer("/result/serverInfo").is_some(),
        "initialize with a client certificate: {status} {}\n{}",
        String::from_utf8_lossy(&body),
        gateway.proc.tail(20)
    );
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    let version = v["result"]["protocolVersion"].as_str().unwrap().to_owned();
    let h = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", version.as_str()),
    ];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, _) = post_json(&format!("{base}/with-cert/mcp"), &h, note).await;
    assert_eq!(status, 202, "notifications/initialized");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "over mutual TLS"}}})
    .to_string();
    let (status, _, body) = post_json(&format!("{base}/with-cert/mcp"), &h, call).await;
    let text = String::from_utf8_lossy(&body);
    assert!(
        status == 200 && text.contains("over mutual TLS"),
        "tools/call echo with a client certificate: {status} {text}"
    );

    let (status, _, body) = post_json(&format!("{base}/no-cert/mcp"), &[], INIT).await;
    let message = error_message(&body);
    println!("[tls] no client certificate: {status} {message}");
    assert!(
        message.contains("upstream 'no-cert'") && message.contains("client certificate"),
        "without client_cert the error should name the upstream and the missing client certificate: {status} {message}"
    );
    gateway.stop().await;
}

// ---------------------------------------------------------------------------------------
// Certificate rotation

fn der_of(pem: &str) -> Vec<u8> {
    use rustls_pki_types::pem::PemObject;
    rustls_pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .expect("a certificate")
        .expect("PEM")
        .to_vec()
}

/// Replace `path` whole (a new file renamed over it), as deployment tools do.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Clients open a new TLS connection per request, without pause, while the listener's
/// certificate is replaced three times (certificate file first, then key: for a moment
/// they do not match) and once by a file that is not a certificate. No request fails;
/// the certificate served follows the files; the bad file is logged and the pair in use
/// stays.
#[tokio::test]
async fn certificate_rotation_under_load_loses_no_request() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("mcp-ui-gateway test CA");
    let names = ["localhost", "127.0.0.1"];
    let first = ca.server(&names, Validity::Now);
    let (cert, key) = first.write(d, "listener");
    let overlays = d.join("overlays");
    std::fs::create_dir_all(&overlays).unwrap();
    let gateway = Gateway::start_with(
        &peers,
        "rotating",
        Upstream::DemoWithOverlays(&overlays),
        &["--tls-cert", s(&cert), "--tls-key", s(&key)],
        &[],
    )
    .await;
    let healthz = format!("{}/healthz", origin(&gateway.url));
    let client = Arc::new(TlsClient::new(&ca.pem));

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let mut load = Vec::new();
    for _ in 0..4 {
        let (client, url, stop, ok, seen) = (
            client.clone(),
            healthz.clone(),
            stop.clone(),
            ok.clone(),
            seen.clone(),
        );
        load.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            // Bounded in count as well as by `stop`.
            for _ in 0..20_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                match client.request("GET", &url, "").await {
                    Ok(a) if a.status == 200 => {
                        ok.fetch_add(1, Ordering::Relaxed);
                        let mut seen = seen.lock().unwrap();
                        if seen.last() != Some(&a.cert) {
                            seen.push(a.cert);
                        }
                    }
                    Ok(a) => failures.push(format!("status {}", a.status)),
                    Err(e) => failures.push(e),
                }
            }
            failures
        }));
    }
    let settle = Duration::from_millis(2500);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut served = vec![der_of(&first.cert)];
    for _ in 0..3 {
        let next = ca.server(&names, Validity::Now);
        replace(&cert, &next.cert);
        tokio::time::sleep(Duration::from_millis(300)).await;
        replace(&key, &next.key);
        tokio::time::sleep(settle).await;
        served.push(der_of(&next.cert));
    }
    // Not a certificate: logged, and the last good pair stays in use.
    replace(&cert, "not a certificate\n");
    tokio::time::sleep(settle).await;
    let during_bad = client
        .request("GET", &healthz, "")
        .await
        .expect("served with the bad file");
    assert!(
        &during_bad.cert == served.last().unwrap(),
        "after a bad certificate file the last good certificate should still be served; served #{:?} of {}\n{}",
        served.iter().position(|c| *c == during_bad.cert),
        served.len(),
        gateway.proc.tail(40)
    );
    stop.store(true, Ordering::Relaxed);
    let mut failures = Vec::new();
    for task in load {
        failures.extend(task.await.unwrap());
    }
    let total = ok.load(Ordering::Relaxed);
    let seen = seen.lock().unwrap().clone();
    println!(
        "[tls] rotation: {total} requests on new TLS connections, {} failed; {} certificate changes seen by the clients",
        failures.len(),
        seen.len().saturating_sub(1)
    );
    assert!(
        failures.is_empty(),
        "requests failed during rotation: {:?}",
        &failures[..failures.len().min(5)]
    );
    assert!(
        total >= 100,
        "only {total} requests were made during the rotation"
    );
    for (i, cert) in served.iter().enumerate() {
        assert!(
            seen.contains(cert),
            "certificate {i} of the rotation was never served (served {} distinct)",
            seen.len()
        );
    }
    let log = gateway.proc.tail(400);
    assert!(
        log.contains("TLS certificate reloaded"),
        "the log should say the certificate was reloaded:\n{log}"
    );
    assert!(
        log.contains("do not load; keeping the one in use") && log.contains("tls_cert"),
        "the log should say why the bad file was not used:\n{log}"
    );
    gateway.stop().await;
}

// ---------------------------------------------------------------------------------------
// Legacy HTTP+SSE over TLS

/// server-everything's legacy HTTP+SSE transport behind nginx over `https://` (HTTP/2:
/// the long-lived event stream and the POSTs share one connection): the TypeScript client
/// through the gateway runs as it does direct.
#[tokio::test]
async fn legacy_sse_upstream_over_https_serves_the_ts_client_like_direct() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = Ca::new("mcp-ui-gateway test CA");
    let ca_pem = d.join("ca.pem");
    std::fs::write(&ca_pem, &ca.pem).unwrap();
    let (cert, key) = ca
        .server(&["localhost", "127.0.0.1"], Validity::Now)
        .write(d, "server");
    let (_server, direct_url) = start_everything(&peers, "sse").await;
    let port = free_port();
    let _nginx = start_nginx(d, backend_port(&direct_url), &[(port, &cert, &key, true)]).await;
    let config = write_config(
        d,
        &format!(
            "[[upstream]]\nname = \"everything\"\nsse_url = \"https://127.0.0.1:{port}/sse\"\nca_file = \"{}\"\n",
            s(&ca_pem)
        ),
    );
    let gateway = Gateway::start_with(
        &peers,
        "https legacy SSE",
        Upstream::Configured,
        &["--config", s(&config)],
        &[],
    )
    .await;
    let direct = run_client_direct(
        &peers,
        ClientKind::TypeScript,
        Target::Sse(&direct_url),
        &[],
    )
    .await;
    let via = run_client_via(&peers, &gateway, ClientKind::TypeScript, &[]).await;
    println!(
        "[tls] ts_client via the https SSE upstream: {}",
        brief(&via)
    );
    let diffs = fact_diffs(EVERYTHING_FACTS, &direct, &via);
    assert!(
        diffs.is_empty(),
        "through an https:// legacy SSE upstream the run differs from direct:\n{}\n{}",
        diffs.join("\n"),
        gateway.proc.tail(40)
    );
    gateway.stop().await;
}
