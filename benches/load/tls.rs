//! TLS for the `tls` scenario: a certificate authority and a certificate for
//! 127.0.0.1 made at start (rcgen), the in-tree upstream's server side, the
//! load client's side, and the gateway's TLS handshake counters read from
//! its `/metrics`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// The files of one run's authority and certificate, and a client
/// configuration that trusts the authority.
pub struct Certs {
    /// The authority (PEM): the gateway's `ca_file`.
    pub ca: PathBuf,
    /// The certificate for 127.0.0.1 and localhost, signed by the authority.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The load client's side: trusts the authority, offers HTTP/1.1.
    pub client: Arc<ClientConfig>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Make an authority and a certificate for 127.0.0.1 in `dir`.
pub fn make(dir: &Path) -> Result<Certs, String> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let e = |e: rcgen::Error| e.to_string();
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ca_key = KeyPair::generate().map_err(e)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "mcp-ui-gateway load bench CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().map_err(e)?;
    let mut leaf =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).map_err(e)?;
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = leaf.signed_by(&key, &issuer).map_err(e)?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map(|()| path.clone())
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut roots = RootCertStore::empty();
    roots
        .add(ca_cert.der().clone())
        .map_err(|e| e.to_string())?;
    let mut client = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Certs {
        ca: write("ca.pem", ca_cert.pem())?,
        cert: write("cert.pem", cert.pem())?,
        key: write("key.pem", key.serialize_pem())?,
        client: Arc::new(client),
    })
}

/// The upstream's side: the certificate and key in `cert` and `key`,
/// offering the ALPN protocols in `alpn` (e.g. `h2,http/1.1`).
pub fn server_config(cert: &Path, key: &Path, alpn: &str) -> Result<ServerConfig, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = alpn
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.as_bytes().to_vec())
        .collect();
    Ok(config)
}

/// Connect to `addr`, over TLS when `tls` is given (the name checked is
/// the address), and start HTTP/1.1 on it.
pub async fn connect<B>(
    addr: SocketAddr,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<SendRequest<B>, String>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    match tls {
        None => http1(stream).await,
        Some(tls) => http1(tls_stream(addr, tls, stream).await?).await,
    }
}

async fn http1<I, B>(io: I) -> Result<SendRequest<B>, String>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// The TLS handshake of the load client with `addr`.
pub async fn tls_stream(
    addr: SocketAddr,
    tls: &Arc<ClientConfig>,
    tcp: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let name = ServerName::IpAddress(addr.ip().into());
    tokio_rustls::TlsConnector::from(tls.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake with {addr}: {e}"))
}

/// TLS handshakes the gateway has completed: with clients (at its
/// listener) and with upstreams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handshakes {
    pub listener: u64,
    pub upstream: u64,
}

impl Handshakes {
    pub fn since(self, before: Handshakes) -> Handshakes {
        Handshakes {
            listener: self.listener.saturating_sub(before.listener),
            upstream: self.upstream.saturating_sub(before.upstream),
        }
    }

    pub fn add(self, other: Handshakes) -> Handshakes {
        Handshakes {
            listener: self.listener + other.listener,
            upstream: self.upstream + other.upstream,
        }
    }
}

/// One keep-alive connection to a gateway's `/metrics`, opened once and
/// read before and after a point: it adds no handshake of its own between
/// the two readings.
pub struct Scrape {
    sender: SendRequest<Empty<Bytes>>,
    host: String,
}

impl Scrape {
    pub async fn open(addr: SocketAddr, tls: Option<&Arc<ClientConfig>>) -> Result<Scrape, String> {
        Ok(Scrape {
            sender: connect(addr, tls).await?,
            host: addr.to_string(),
        })
    }

    /// The gateway's TLS handshake counters now.
    pub async fn read(&mut self) -> Result<Handshakes, String> {
        let req = http::Request::get("/metrics")
            .header("host", self.host.as_str())
            .body(Empty::new())
            .map_err(|e| e.to_string())?;
        let got = async {
            self.sender
                .ready()
                .await
                .map_err(|e| format!("/metrics: {e}"))?;
            let resp = self
                .sender
                .send_request(req)
                .await
                .map_err(|e| format!("/metrics: {e}"))?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("/metrics: {e}"))?
                .to_bytes();
            if !status.is_success() {
                return Err(format!("/metrics answered {status}"));
            }
            Ok(String::from_utf8_lossy(&body).into_owned())
        };
        let text = tokio::time::timeout(Duration::from_secs(10), got)
            .await
            .map_err(|_| "/metrics: no answer in 10 s".to_owned())??;
        parse(&text)
    }
}

/// The `mcp_gateway_tls_handshakes_total` samples of a `/metrics` text.
pub fn parse(text: &str) -> Result<Handshakes, String> {
    let value = |side: &str| {
        let name = format!("mcp_gateway_tls_handshakes_total{{side=\"{side}\"}}");
        text.lines()
            .find_map(|l| l.strip_prefix(name.as_str()))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("/metrics has no {name}"))
    };
    Ok(Handshakes {
        listener: value("listener")?,
        upstream: value("upstream")?,
    })
}
