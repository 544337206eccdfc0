//! HTTPS at the listener: the certificate and key from `tls_cert` and
//! `tls_key`, HTTP/2 and HTTP/1.1 offered by ALPN, and rotation without a
//! restart: the files are read every second (a few kilobytes; their
//! contents are compared, which no timestamp granularity can fool) and a
//! changed pair that loads replaces the one in force for new connections (a
//! pair that does not load is logged, and the one in force stays).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use mcp_ui_model::tls::pem;

/// How often the certificate files are looked at for a change.
pub(crate) const ROTATION_CHECK: Duration = Duration::from_secs(1);

/// The listener's TLS: what every new connection's handshake uses.
pub struct ListenerTls {
    acceptor: TlsAcceptor,
    current: Arc<Current>,
}

/// The pair in force, and the contents of its files when they were last read.
#[derive(Debug)]
struct Current {
    key: ArcSwap<CertifiedKey>,
    cert_path: PathBuf,
    key_path: PathBuf,
    seen: Mutex<Contents>,
}

/// A version of the two files, read through symbolic links (a Kubernetes
/// Secret's files change by a link swap); a file that cannot be read is
/// its error.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Contents {
    cert: Result<Vec<u8>, String>,
    key: Result<Vec<u8>, String>,
}

fn read(cert: &Path, key: &Path) -> Contents {
    Contents {
        cert: pem::read(cert).map_err(|e| e.to_string()),
        key: pem::read(key).map_err(|e| e.to_string()),
    }
}

fn pair(files: &Contents, cert: &Path, key: &Path) -> Result<CertifiedKey, String> {
    let chain = files
        .cert
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|text| pem::parse_certs(text, cert).map_err(|e| e.to_string()))
        .map_err(|e| format!("tls_cert: {e}"))?;
    let der = files
        .key
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|text| pem::parse_key(text, key).map_err(|e| e.to_string()))
        .map_err(|e| format!("tls_key: {e}"))?;
    CertifiedKey::from_der(chain, der, &mcp_ui_model::tls::crypto::provider()).map_err(|e| {
        format!(
            "tls_cert {} and tls_key {} are not a pair: {e}",
            cert.display(),
            key.display()
        )
    })
}

/// Why the listener's certificate and key could not be loaded: a file that
/// cannot be read or is not PEM, or a certificate and key that are not a
/// pair; the message names the setting and the file. A startup error, the
/// operator's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerTlsError(String);

impl std::fmt::Display for ListenerTlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ListenerTlsError {}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key.load_full())
    }
}

impl ListenerTls {
    /// Read the pair; an error names the file and what is wrong with it.
    pub fn load(cert: &Path, key: &Path) -> Result<Self, ListenerTlsError> {
        let seen = read(cert, key);
        let pair = pair(&seen, cert, key).map_err(ListenerTlsError)?;
        let current = Arc::new(Current {
            key: ArcSwap::from_pointee(pair),
            cert_path: cert.to_path_buf(),
            key_path: key.to_path_buf(),
            seen: Mutex::new(seen),
        });
        let mut config = ServerConfig::builder_with_provider(mcp_ui_model::tls::crypto::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| ListenerTlsError(e.to_string()))?
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
    pub(crate) fn reload_if_changed(&self) -> Result<bool, String> {
        let c = &self.current;
        let now = read(&c.cert_path, &c.key_path);
        let pair = {
            let mut seen = c.seen.lock().unwrap_or_else(|e| e.into_inner());
            if *seen == now {
                return Ok(false);
            }
            let pair = pair(&now, &c.cert_path, &c.key_path);
            // A failed read is reported once per version of the files.
            *seen = now;
            pair?
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_changed_pair_is_reloaded_and_a_bad_one_keeps_the_pair_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let (c1, k1) = pair();
        std::fs::write(&cert, &c1).unwrap();
        std::fs::write(&key, &k1).unwrap();
        let tls = ListenerTls::load(&cert, &key).unwrap();
        let first = tls.current.key.load_full();
        assert_eq!(tls.reload_if_changed(), Ok(false));

        // A new certificate with the old key: not a pair.
        let (c2, k2) = pair();
        std::fs::write(&cert, &c2).unwrap();
        let err = tls.reload_if_changed().unwrap_err();
        assert!(err.contains("are not a pair"), "{err}");
        assert!(Arc::ptr_eq(&first, &tls.current.key.load_full()));
        // Reported once per version of the files.
        assert_eq!(tls.reload_if_changed(), Ok(false));

        std::fs::write(&key, &k2).unwrap();
        assert_eq!(tls.reload_if_changed(), Ok(true));
        assert_eq!(tls.current.key.load().cert[0].as_ref(), {
            use rustls::pki_types::pem::PemObject;
            rustls::pki_types::CertificateDer::from_pem_slice(c2.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec()
        });

        std::fs::write(&key, "not a key").unwrap();
        let err = tls.reload_if_changed().unwrap_err();
        assert!(err.starts_with("tls_key: "), "{err}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = ListenerTls::load(Path::new("/nonexistent/tls.crt"), Path::new("/x.key"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("tls_cert: /nonexistent/tls.crt: "), "{err}");
    }
}
