//! Proof Key for Code Exchange (RFC 7636), S256 only: `plain` would let
//! whoever sees the authorization request redeem the code (OAuth 2.1 §7.5.1).

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Whether `verifier` is a code verifier: 43 to 128 characters of
/// `[A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"` (RFC 7636 §4.1).
pub fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `challenge` can be an S256 challenge: the unpadded base64url of a
/// SHA-256 digest, 43 characters (RFC 7636 §4.2).
pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// The S256 challenge of `verifier`: `BASE64URL(SHA256(verifier))`.
pub fn challenge_of(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `verifier` answers `challenge` (RFC 7636 §4.6), compared in
/// constant time.
pub fn verify(verifier: &str, challenge: &str) -> bool {
    valid_verifier(verifier)
        && challenge_of(verifier)
            .as_bytes()
            .ct_eq(challenge.as_bytes())
            .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_7636_example_verifies() {
        // RFC 7636 Appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_challenge(challenge));
        assert!(verify(verifier, challenge));
        assert!(!verify(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj",
            challenge
        ));
        // A verifier sent as its own challenge (`plain`) does not verify.
        assert!(!verify(challenge, challenge));
        assert!(!valid_verifier("short"));
        assert!(!valid_verifier(&"a".repeat(129)));
        assert!(!valid_verifier(&format!("{}+", "a".repeat(43))));
    }
}
