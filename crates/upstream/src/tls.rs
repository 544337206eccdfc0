//! The TLS side of an `https://` upstream: the trusted roots (the system's,
//! or the upstream's `ca_file`), an optional client certificate, the name
//! verified, ALPN offering HTTP/2 and HTTP/1.1, and failures explained in
//! terms an operator can act on.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use mcp_ui_model::tls::{UpstreamTls, pem};

/// How the gateway connects to one `https://` upstream.
pub(crate) struct Connector {
    connector: TlsConnector,
    /// `tls_server_name`, when the URL's host is not the certificate's name.
    server_name: Option<ServerName<'static>>,
    trust: Trust,
    client_cert: bool,
}

/// Where the trusted authorities come from, for messages.
#[derive(Clone)]
enum Trust {
    System,
    File(PathBuf),
}

/// The system's trusted roots: the platform's bundle, or `SSL_CERT_FILE`
/// and `SSL_CERT_DIR` instead when set (as for curl and Python).
pub(crate) fn system_roots() -> Result<Arc<RootCertStore>, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "no trusted root certificates found on this system{why}: install the ca-certificates package, or set SSL_CERT_FILE or the upstream's ca_file"
        ));
    }
    Ok(Arc::new(roots))
}

impl Connector {
    /// The connector for an upstream's settings; `system` gives the
    /// system's roots when it has no `ca_file`. Reads the files it names.
    pub(crate) fn new(
        settings: &UpstreamTls,
        system: &mut dyn FnMut() -> Result<Arc<RootCertStore>, String>,
    ) -> Result<Self, String> {
        let (roots, trust) = match &settings.ca_file {
            Some(path) => {
                let mut roots = RootCertStore::empty();
                for cert in pem::certs(path).map_err(|e| e.to_string())? {
                    roots.add(cert).map_err(|e| {
                        format!("ca_file: {}: not a CA certificate ({e})", path.display())
                    })?;
                }
                (Arc::new(roots), Trust::File(path.clone()))
            }
            None => (system()?, Trust::System),
        };
        let provider = mcp_ui_model::tls::crypto::provider();
        let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| format!("trusted roots: {e}"))?;
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_webpki_verifier(verifier);
        let mut config = match &settings.client_auth {
            Some((cert, key)) => {
                let chain = pem::certs(cert).map_err(|e| format!("client_cert: {e}"))?;
                let key_der = pem::key(key).map_err(|e| format!("client_key: {e}"))?;
                builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                    format!(
                        "client_cert {} and client_key {}: {e}",
                        cert.display(),
                        key.display()
                    )
                })?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let server_name = match &settings.server_name {
            Some(name) => Some(
                ServerName::try_from(name.clone())
                    .map_err(|_| format!("tls_server_name: \"{name}\" is not a DNS name"))?,
            ),
            None => None,
        };
        Ok(Connector {
            connector: TlsConnector::from(Arc::new(config)),
            server_name,
            trust,
            client_cert: settings.client_auth.is_some(),
        })
    }

    /// The TLS handshake over `tcp` with `host` (the URL's host, unless
    /// `tls_server_name` names another). Whether the upstream chose HTTP/2.
    pub(crate) async fn connect(
        &self,
        host: &str,
        port: u16,
        tcp: TcpStream,
    ) -> Result<(TlsStream<TcpStream>, bool), String> {
        let name = match &self.server_name {
            Some(n) => n.clone(),
            None => ServerName::try_from(host.to_owned())
                .map_err(|_| format!("TLS: \"{host}\" is not a name a certificate can be checked against; set tls_server_name"))?,
        };
        let at = format!("{host}:{port}");
        match self.connector.connect(name.clone(), tcp).await {
            Ok(stream) => {
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                Ok((stream, h2))
            }
            Err(e) => Err(
                match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    Some(tls) => self.explain(tls, &at, &name),
                    None => format!("TLS handshake with {at} failed: {e}"),
                },
            ),
        }
    }

    /// A TLS failure, in words that say what to change.
    pub(crate) fn explain(&self, e: &rustls::Error, at: &str, name: &ServerName<'_>) -> String {
        match e {
            rustls::Error::InvalidCertificate(c) => {
                let why = match c {
                    CertificateError::UnknownIssuer => {
                        let trusted = match &self.trust {
                            Trust::System => "the system's roots (trust another authority with ca_file, or SSL_CERT_FILE)".to_owned(),
                            Trust::File(p) => format!("the authorities in ca_file {}", p.display()),
                        };
                        format!(
                            "is not signed by an authority it trusts (unknown issuer); trusted: {trusted}"
                        )
                    }
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. } => format!(
                        "is not valid for the name {} (name mismatch); set tls_server_name to a name it is issued for",
                        name.to_str()
                    ),
                    CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                        "has expired (certificate expired)".to_owned()
                    }
                    CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                        "is not valid yet (check this machine's clock)".to_owned()
                    }
                    CertificateError::Revoked => "has been revoked".to_owned(),
                    other => certificate_words(other),
                };
                format!("TLS: the certificate of {at} {why}")
            }
            rustls::Error::AlertReceived(alert) => self.alert(*alert, at),
            rustls::Error::InvalidMessage(_) => format!(
                "TLS: what {at} answered is not TLS (a plain HTTP server on this port? then its URL is http://, not https://)"
            ),
            rustls::Error::PeerIncompatible(why) => format!(
                "TLS: {at} and the gateway have no TLS version or cipher suite in common ({why:?}); the gateway speaks TLS 1.3 and 1.2 with current cipher suites"
            ),
            other => format!("TLS handshake with {at} failed: {other}"),
        }
    }

    fn alert(&self, alert: AlertDescription, at: &str) -> String {
        alert_text(alert, at, self.client_cert)
    }

    /// Whether a client certificate is presented.
    pub(crate) fn has_client_cert(&self) -> bool {
        self.client_cert
    }
}

/// The certificate problems beside the common ones, in words with what to do.
fn certificate_words(e: &CertificateError) -> String {
    match e {
        CertificateError::BadEncoding => "cannot be read (bad encoding)".to_owned(),
        CertificateError::BadSignature => {
            "carries a signature that does not verify (not signed by the key of the authority it names)".to_owned()
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "is not issued for TLS servers (its extended key usage lacks serverAuth); issue a server certificate".to_owned()
        }
        CertificateError::UnhandledCriticalExtension => {
            "carries a critical extension the gateway does not know, so it cannot be trusted".to_owned()
        }
        CertificateError::UnsupportedSignatureAlgorithmContext { .. }
        | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "is signed with an algorithm the gateway does not accept (it accepts ECDSA, Ed25519 and RSA with SHA-256 or stronger)".to_owned()
        }
        CertificateError::UnknownRevocationStatus => {
            "has a revocation status the gateway cannot know".to_owned()
        }
        CertificateError::Other(other) => {
            let what = format!("{other:?}");
            if what.contains("CaUsedAsEndEntity") {
                "is a certificate authority's own certificate (CA:TRUE), not a server's: \
                 issue a server (leaf) certificate for this name, signed by that authority, \
                 and serve it with its key (mkcert, `openssl x509 -req … -extfile` with \
                 basicConstraints=CA:FALSE and subjectAltName, or rcgen)"
                    .to_owned()
            } else if what.contains("EndEntityUsedAsCa") {
                "is signed by a certificate that is not an authority (CA:FALSE); sign it with the authority's certificate".to_owned()
            } else {
                format!("was refused ({other})")
            }
        }
        other => format!("was refused ({other:?})"),
    }
}

/// What an alert from the upstream means: most often a client certificate
/// it requires or refuses.
pub(crate) fn alert_text(alert: AlertDescription, at: &str, client_cert: bool) -> String {
    use AlertDescription as A;
    match alert {
        A::CertificateRequired | A::HandshakeFailure if !client_cert => format!(
            "TLS: {at} requires a client certificate (alert {alert:?}); set client_cert and client_key"
        ),
        A::BadCertificate
        | A::UnknownCA
        | A::CertificateUnknown
        | A::CertificateExpired
        | A::CertificateRevoked
        | A::UnsupportedCertificate
        | A::AccessDenied
        | A::HandshakeFailure
        | A::CertificateRequired => {
            format!("TLS: {at} refused the client certificate (alert {alert:?})")
        }
        other => format!("TLS: {at} ended the connection (alert {other:?})"),
    }
}

/// A TLS failure met after the handshake (TLS 1.3 servers check a client
/// certificate then), as an operator-facing sentence; `None` when `e` has
/// no TLS cause.
pub(crate) fn explain_late(
    e: &(dyn std::error::Error + 'static),
    client_cert: bool,
) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let tls = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(tls) = tls {
            return Some(match tls {
                rustls::Error::AlertReceived(alert) => {
                    alert_text(*alert, "the upstream", client_cert)
                }
                other => format!("TLS: {other}"),
            });
        }
        cur = err.source();
    }
    None
}
