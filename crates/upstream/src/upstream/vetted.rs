//! A GET of a URL someone else chose (a client's metadata document): its
//! host resolved, every address checked before any connection (no loopback,
//! private, link-local, shared, documentation or multicast address, unless
//! the host is one the operator allows), then a connection to a checked
//! address only, so the name cannot resolve elsewhere in between; HTTPS
//! only, HTTP/1.1, no redirects, bounded in time and size. The URL comes
//! parsed (the WHATWG URL Standard, as the caller checked it), and the
//! request is made of its parts: what was checked is what is fetched.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;

use crate::tls::Connector;
use mcp_ui_model::body::Cut;
use mcp_ui_model::outcome::Side;
use mcp_ui_model::tls::UpstreamTls;

/// How vetted fetches connect.
pub struct Vetted {
    connector: Arc<Connector>,
    /// Hosts that may resolve to addresses that are not public.
    private_hosts: Vec<String>,
    /// Hosts fetched from a given address instead of their DNS answer.
    connect_to: Vec<(String, SocketAddr)>,
}

/// Why vetted fetches could not be set up: the trusted roots (`ca_file`, or
/// the system's) could not be read. A startup error, the operator's.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(String);

/// Why a vetted fetch failed; the message names the URL. The URL is someone
/// else's choice and the failure reaches them: [`FetchError::side`] says
/// whose it is.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL, or what it leads to, is refused: not `https://`, no host, an
    /// address that is not public, an answer other than 200, a body too
    /// large. Whoever chose the URL must change it.
    #[error("{0}")]
    Refused(String),
    /// Its host could not be resolved or reached, or did not answer whole
    /// in time.
    #[error("{0}")]
    Unreachable(String),
}

impl FetchError {
    /// Whose fault it is: the client's for a URL refused, the fetched
    /// host's for one that could not be had.
    pub fn side(&self) -> Side {
        match self {
            FetchError::Refused(_) => Side::Client,
            FetchError::Unreachable(_) => Side::Upstream,
        }
    }
}

impl Vetted {
    /// Trusting the system's roots and those of `ca_file`, if any.
    pub fn new(
        ca_file: Option<std::path::PathBuf>,
        private_hosts: Vec<String>,
    ) -> Result<Vetted, SetupError> {
        Vetted::connecting(ca_file, private_hosts, Vec::new())
    }

    /// [`Vetted::new`], the hosts of `connect_to` fetched from their
    /// address there (their TLS name still theirs, the address still
    /// checked).
    pub fn connecting(
        ca_file: Option<std::path::PathBuf>,
        private_hosts: Vec<String>,
        connect_to: Vec<(String, SocketAddr)>,
    ) -> Result<Vetted, SetupError> {
        let settings = match ca_file {
            Some(f) => UpstreamTls::trusting(f),
            None => UpstreamTls::default(),
        };
        let connector =
            Connector::new(&settings, &mut crate::tls::system_roots).map_err(SetupError)?;
        Ok(Vetted {
            connector: Arc::new(connector),
            private_hosts: private_hosts
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            connect_to: connect_to
                .into_iter()
                .map(|(h, a)| (h.to_ascii_lowercase(), a))
                .collect(),
        })
    }

    /// The body of `url` (`https://` only) when it answers 200 with at most
    /// `max_bytes`, within `timeout` in all.
    pub async fn get(
        &self,
        url: &url::Url,
        accept: &str,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Bytes, FetchError> {
        tokio::time::timeout(timeout, self.fetch(url, accept, max_bytes, timeout))
            .await
            .map_err(|_| {
                FetchError::Unreachable(format!(
                    "{url}: no whole answer within {} s",
                    timeout.as_secs()
                ))
            })?
    }

    async fn fetch(
        &self,
        url: &url::Url,
        accept: &str,
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Bytes, FetchError> {
        use url::Position;
        let unreachable = |e: String| FetchError::Unreachable(format!("{url}: {e}"));
        let (tcp, bare, port) = self.connect(url).await?;
        let (tls, _) = self
            .connector
            .connect(&bare, port, tcp)
            .await
            .map_err(FetchError::Unreachable)?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let path = &url[Position::BeforePath..Position::AfterQuery];
        let authority = &url[Position::BeforeHost..Position::AfterPort];
        let req = http::Request::get(path)
            .header(http::header::HOST, authority)
            .header(http::header::ACCEPT, accept)
            .header(
                http::header::USER_AGENT,
                concat!("mcp-ui-gateway/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::<Bytes>::new())
            .map_err(|e| FetchError::Refused(format!("{url}: {e}")))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        if resp.status() != http::StatusCode::OK {
            return Err(FetchError::Refused(format!(
                "{url}: answered {} (redirects are not followed)",
                resp.status()
            )));
        }
        let bounds = mcp_ui_model::body::Bounds::within(max_bytes, timeout);
        mcp_ui_model::body::read(resp.into_body(), bounds)
            .await
            .map_err(|cut| match cut {
                Cut::TooLarge { .. } => FetchError::Refused(format!("{url}: {cut}")),
                _ => unreachable(cut.to_string()),
            })
    }

    /// A TCP connection to a checked address of `url`'s host (or the one
    /// `connect_to` gives it), with the host's name for TLS and the port.
    async fn connect(
        &self,
        url: &url::Url,
    ) -> Result<(tokio::net::TcpStream, String, u16), FetchError> {
        use url::Host;
        if url.scheme() != "https" {
            return Err(FetchError::Refused(format!(
                "{url}: only https:// is fetched"
            )));
        }
        // The name resolved and the TLS server name: a domain as the parser
        // wrote it (in lower case, IDNA applied), an address without brackets.
        let (host, bare) = match url.host() {
            Some(Host::Domain(d)) => (d.to_owned(), d.to_owned()),
            Some(Host::Ipv4(ip)) => (ip.to_string(), ip.to_string()),
            Some(Host::Ipv6(ip)) => (format!("[{ip}]"), ip.to_string()),
            None => return Err(FetchError::Refused(format!("{url}: no host"))),
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let allowed_private = self.private_hosts.contains(&bare);
        let pinned = self.connect_to.iter().find(|(h, _)| *h == bare);
        let addrs: Vec<SocketAddr> = match pinned {
            Some((_, addr)) => vec![*addr],
            None => tokio::net::lookup_host((bare.as_str(), port))
                .await
                .map_err(|e| {
                    FetchError::Unreachable(format!("{url}: {host} does not resolve ({e})"))
                })?
                .collect(),
        };
        if addrs.is_empty() {
            return Err(FetchError::Unreachable(format!(
                "{url}: {host} does not resolve"
            )));
        }
        if !allowed_private && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
            return Err(FetchError::Refused(format!(
                "{url}: {host} resolves to {}, which is not a public address",
                bad.ip()
            )));
        }
        let tcp = tokio::net::TcpStream::connect(addrs[0])
            .await
            .map_err(|e| {
                FetchError::Unreachable(format!("{url}: cannot connect to {}: {e}", addrs[0]))
            })?;
        Ok((tcp, bare, port))
    }
}

/// Whether `ip` is an address on the public internet: not loopback,
/// unspecified, private (RFC 1918, RFC 4193), link-local, shared
/// (RFC 6598), benchmarking, documentation, multicast, broadcast or
/// reserved; an IPv4-mapped IPv6 address is judged as its IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8
                || first == 0x0064 && v6.segments()[1] == 0xff9b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "192.0.2.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["1.1.1.1", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}
