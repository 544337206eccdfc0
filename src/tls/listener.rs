//! HTTPS at the listener: the certificate and key from `tls_cert` and
//! `tls_key`, HTTP/2 and HTTP/1.1 offered by ALPN, and rotation without a
//! restart: the files are looked at every second and a changed pair that
//! loads replaces the one in force for new connections (a pair that does
//! not load is logged, and the one in force stays).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::pem;

/// How often the certificate files are looked at for a change.
pub const ROTATION_CHECK: Duration = Duration::from_secs(1);

/// The listener's TLS: what every new connection's handshake uses.
pub struct ListenerTls {
    acceptor: TlsAcceptor,
    current: Arc<Current>,
}

/// The pair in force, and what its files looked like when it was read.
#[derive(Debug)]
struct Current {
    key: ArcSwap<CertifiedKey>,
    cert_path: PathBuf,
    key_path: PathBuf,
    seen: Mutex<Stamp>,
}

/// What identifies a version of the two files: their modification times
/// and sizes, through symbolic links (a Kubernetes Secret's files change by
/// a link swap).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Stamp(Option<(SystemTime, u64)>, Option<(SystemTime, u64)>);

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let of = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
    };
    Stamp(of(cert), of(key))
}

/// Read a certificate chain and its key, checking that they belong together.
pub fn load_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, String> {
    let chain = pem::certs(cert).map_err(|e| format!("tls_cert: {e}"))?;
    let der = pem::key(key).map_err(|e| format!("tls_key: {e}"))?;
    CertifiedKey::from_der(chain, der, &super::crypto::provider()).map_err(|e| {
        format!(
            "tls_cert {} and tls_key {} are not a pair: {e}",
            cert.display(),
            key.display()
        )
    })
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key.load_full())
    }
}

impl ListenerTls {
    /// Read the pair; an error names the file and what is wrong with it.
    pub fn load(cert: &Path, key: &Path) -> Result<Self, String> {
        let seen = stamp(cert, key);
        let pair = load_pair(cert, key)?;
        let current = Arc::new(Current {
            key: ArcSwap::from_pointee(pair),
            cert_path: cert.to_path_buf(),
            key_path: key.to_path_buf(),
            seen: Mutex::new(seen),
        });
        let mut config = ServerConfig::builder_with_provider(super::crypto::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(ListenerTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            current,
        })
    }

    /// What accepts a new connection's handshake.
    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Read the pair again if either file changed since it was last read.
    /// `Ok(true)` when a new pair is in force; an error keeps the old one.
    pub fn reload_if_changed(&self) -> Result<bool, String> {
        let c = &self.current;
        let now = stamp(&c.cert_path, &c.key_path);
        {
            let mut seen = c.seen.lock().unwrap_or_else(|e| e.into_inner());
            if *seen == now {
                return Ok(false);
            }
            // A failed read is reported once per version of the files.
            *seen = now;
        }
        let pair = load_pair(&c.cert_path, &c.key_path)?;
        c.key.store(Arc::new(pair));
        Ok(true)
    }

    /// Look at the files every [`ROTATION_CHECK`] until `stop`, logging each
    /// rotation and each pair that does not load.
    pub fn watch(self: &Arc<Self>, stop: CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(ROTATION_CHECK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    _ = stop.cancelled() => return,
                }
                match this.reload_if_changed() {
                    Ok(false) => {}
                    Ok(true) => tracing::info!(
                        cert = %this.current.cert_path.display(),
                        key = %this.current.key_path.display(),
                        "TLS certificate reloaded; new connections use it"
                    ),
                    Err(why) => tracing::warn!(
                        "TLS certificate files changed but do not load; keeping the one in use: {why}"
                    ),
                }
            }
        });
    }
}
