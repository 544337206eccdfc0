//! Certificates and keys read from PEM files, with errors that name the
//! file and say what it should hold.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Largest PEM file read: a bundle of every public root is ~250 KiB.
const MAX_PEM_BYTES: u64 = 8 * 1024 * 1024;

/// The bytes of a PEM file, refusing one too large to be one.
pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    if meta.len() > MAX_PEM_BYTES {
        return Err(format!(
            "{shown}: {} bytes, larger than any PEM file should be ({MAX_PEM_BYTES})",
            meta.len()
        ));
    }
    std::fs::read(path).map_err(|e| format!("{shown}: {e}"))
}

/// Every certificate in a PEM file (a chain, leaf first, or a bundle of
/// authorities); at least one.
pub fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    parse_certs(&read(path)?, path)
}

/// [`certs`] of the bytes read from `path`.
pub fn parse_certs(text: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate file ({e})", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: holds no certificate (no \"-----BEGIN CERTIFICATE-----\")",
            path.display()
        ));
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    parse_key(&read(path)?, path)
}

/// [`key`] of the bytes read from `path`.
pub fn parse_key(text: &[u8], path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(text).map_err(|e| {
        format!(
            "{}: holds no private key in PEM (PKCS#8, RSA or EC) ({e})",
            path.display()
        )
    })
}
