//! Certificates and keys read from PEM files, with errors that name the
//! file and say what it should hold.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Largest PEM file read: a bundle of every public root is ~250 KiB.
const MAX_PEM_BYTES: u64 = 8 * 1024 * 1024;

/// Why a PEM file could not be used; each names the file (as shown) and
/// says what it should hold. The operator's: the file is a setting, read
/// at startup or when it changes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PemError {
    /// The file could not be read.
    #[error("{file}: {error}")]
    Unreadable { file: String, error: String },
    #[error("{file}: {bytes} bytes, larger than any PEM file should be ({max})", max = MAX_PEM_BYTES)]
    TooLarge { file: String, bytes: u64 },
    #[error("{file}: not a PEM certificate file ({error})")]
    NotCertificates { file: String, error: String },
    #[error("{file}: holds no certificate (no \"-----BEGIN CERTIFICATE-----\")")]
    NoCertificate { file: String },
    #[error("{file}: holds no private key in PEM (PKCS#8, RSA or EC) ({error})")]
    NoKey { file: String, error: String },
}

/// The bytes of a PEM file, refusing one too large to be one.
pub fn read(path: &Path) -> Result<Vec<u8>, PemError> {
    let file = || path.display().to_string();
    let unreadable = |e: std::io::Error| PemError::Unreadable {
        file: file(),
        error: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.len() > MAX_PEM_BYTES {
        return Err(PemError::TooLarge {
            file: file(),
            bytes: meta.len(),
        });
    }
    std::fs::read(path).map_err(unreadable)
}

/// Every certificate in a PEM file (a chain, leaf first, or a bundle of
/// authorities); at least one.
pub fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    parse_certs(&read(path)?, path)
}

/// [`certs`] of the bytes read from `path`.
pub fn parse_certs(text: &[u8], path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let certs = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PemError::NotCertificates {
            file: path.display().to_string(),
            error: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(PemError::NoCertificate {
            file: path.display().to_string(),
        });
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn key(path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    parse_key(&read(path)?, path)
}

/// [`key`] of the bytes read from `path`.
pub fn parse_key(text: &[u8], path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    PrivateKeyDer::from_pem_slice(text).map_err(|e| PemError::NoKey {
        file: path.display().to_string(),
        error: e.to_string(),
    })
}
