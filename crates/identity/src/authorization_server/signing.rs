//! The keys the gateway signs its access tokens with (RFC 9068): read from
//! PEM (EC P-256 or P-384, RSA, Ed25519), each known by its RFC 7638
//! thumbprint; the first signs, all are published, so a key being retired
//! still verifies the tokens it signed until they expire.

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Map, Value, json};

/// Why a private key cannot sign the gateway's tokens. The operator's: a
/// signing key is a setting, read at startup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("not PEM text")]
    NotText,
    #[error("no PEM private key (-----BEGIN … PRIVATE KEY-----) in it")]
    NoPrivateKey,
    #[error("not an EC (P-256, P-384), Ed25519 or RSA private key")]
    UnknownKind,
    /// It read as a key of one or more kinds, none of which signs: why, for
    /// each algorithm tried (`ES256: …`).
    #[error("{}", .0.join("; "))]
    Unusable(Vec<String>),
}

/// One signing key.
pub struct Signer {
    alg: Algorithm,
    kid: String,
    key: EncodingKey,
    jwk: Jwk,
}

impl std::fmt::Debug for Signer {
    // The private key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A private key in PEM (PKCS#8 for EC and Ed25519; PKCS#1 or PKCS#8 for
    /// RSA, at least 2048 bits), signing with ES256, ES384, RS256 or EdDSA.
    pub fn from_pem(pem: &[u8]) -> Result<Signer, KeyError> {
        let text = std::str::from_utf8(pem).map_err(|_| KeyError::NotText)?;
        if !text.contains("PRIVATE KEY-----") {
            return Err(KeyError::NoPrivateKey);
        }
        let mut tried = Vec::new();
        if let Ok(key) = EncodingKey::from_ec_pem(pem) {
            for alg in [Algorithm::ES256, Algorithm::ES384] {
                match Signer::new(key.clone(), alg) {
                    Ok(s) => return Ok(s),
                    Err(e) => tried.push(e),
                }
            }
        }
        if let Ok(key) = EncodingKey::from_ed_pem(pem) {
            match Signer::new(key, Algorithm::EdDSA) {
                Ok(s) => return Ok(s),
                Err(e) => tried.push(e),
            }
        }
        if let Ok(key) = EncodingKey::from_rsa_pem(pem) {
            match Signer::new(key, Algorithm::RS256) {
                Ok(s) => return Ok(s),
                Err(e) => tried.push(e),
            }
        }
        Err(match tried.is_empty() {
            true => KeyError::UnknownKind,
            false => KeyError::Unusable(tried),
        })
    }

    /// An EC P-256 private key in PKCS#8 DER, signing with ES256.
    pub fn from_ec_pkcs8_der(der: &[u8]) -> Result<Signer, KeyError> {
        Signer::new(EncodingKey::from_ec_der(der), Algorithm::ES256)
            .map_err(|e| KeyError::Unusable(vec![e]))
    }

    fn new(key: EncodingKey, alg: Algorithm) -> Result<Signer, String> {
        let mut jwk = Jwk::from_encoding_key(&key, alg).map_err(|e| format!("{alg:?}: {e}"))?;
        let kid = jwk
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|e| format!("{alg:?}: {e}"))?;
        jwk.common.key_id = Some(kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        jwk.common.key_algorithm = Some(key_algorithm(alg));
        // A signature with the key proves it is whole (a public part that
        // does not match its private part would sign tokens nobody can check).
        let probe = jsonwebtoken::encode(&Header::new(alg), &json!({"probe": true}), &key)
            .map_err(|e| format!("{alg:?}: the key does not sign: {e}"))?;
        let decoding =
            jsonwebtoken::DecodingKey::from_jwk(&jwk).map_err(|e| format!("{alg:?}: {e}"))?;
        let mut v = jsonwebtoken::Validation::new(alg);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        jsonwebtoken::decode::<Value>(&probe, &decoding, &v)
            .map_err(|e| format!("{alg:?}: the key's signature does not verify: {e}"))?;
        Ok(Signer { alg, kid, key, jwk })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The public key, as the key set publishes it.
    pub fn jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// `claims` signed as an access token: `typ` `at+jwt` (RFC 9068 §2.1),
    /// this key's `kid`. An error is the gateway's: its key, checked when
    /// read, failed to sign.
    pub fn sign(&self, claims: &Map<String, Value>) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(self.alg);
        header.typ = Some("at+jwt".into());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key)
    }
}

fn key_algorithm(alg: Algorithm) -> KeyAlgorithm {
    match alg {
        Algorithm::ES384 => KeyAlgorithm::ES384,
        Algorithm::RS256 => KeyAlgorithm::RS256,
        Algorithm::EdDSA => KeyAlgorithm::EdDSA,
        _ => KeyAlgorithm::ES256,
    }
}

/// The published key set of `signers`.
pub fn key_set(signers: &[Signer]) -> JwkSet {
    JwkSet {
        keys: signers.iter().map(|s| s.jwk.clone()).collect(),
    }
}

/// What an access token the gateway issues says (RFC 9068 §2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessToken<'a> {
    pub issuer: &'a str,
    pub subject: &'a str,
    /// The resource it is for (`aud`).
    pub audience: &'a str,
    pub client_id: &'a str,
    pub scopes: &'a [String],
    pub issued_at: u64,
    pub expires_at: u64,
    /// Its unique id (`jti`).
    pub id: &'a str,
    pub auth_time: u64,
    /// The identity provider's tokens for the user, sealed for the gateway
    /// alone; absent unless an upstream needs them.
    pub upstream: Option<&'a str>,
}

/// The claim holding the sealed identity-provider tokens.
pub const UPSTREAM_CLAIM: &str = "mcp_ui_upstream";

impl AccessToken<'_> {
    /// Its claims, in RFC 9068's order.
    pub fn claims(&self) -> Map<String, Value> {
        let mut c = Map::new();
        c.insert("iss".into(), self.issuer.into());
        c.insert("exp".into(), self.expires_at.into());
        c.insert("aud".into(), self.audience.into());
        c.insert("sub".into(), self.subject.into());
        c.insert("client_id".into(), self.client_id.into());
        c.insert("iat".into(), self.issued_at.into());
        c.insert("jti".into(), self.id.into());
        c.insert("auth_time".into(), self.auth_time.into());
        c.insert("scope".into(), self.scopes.join(" ").into());
        if let Some(u) = self.upstream {
            c.insert(UPSTREAM_CLAIM.into(), u.into());
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;
    use crate::resource_server::jwt;

    fn ec_key() -> Vec<u8> {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        pair.to_pkcs8v1().unwrap().as_ref().to_vec()
    }

    #[test]
    fn a_token_the_gateway_signs_verifies_as_any_issuers() {
        let old = Signer::from_ec_pkcs8_der(&ec_key()).unwrap();
        let new = Signer::from_ec_pkcs8_der(&ec_key()).unwrap();
        assert_ne!(old.kid(), new.kid());
        let scopes = vec!["notes:read".to_owned()];
        let token = AccessToken {
            issuer: "https://gw.example",
            subject: "alice",
            audience: "https://gw.example/notes",
            client_id: "c1",
            scopes: &scopes,
            issued_at: 100,
            expires_at: 200,
            id: "j1",
            auth_time: 90,
            upstream: None,
        };
        let signed = old.sign(&token.claims()).unwrap();
        // Published beside the new key, the old one still verifies its tokens.
        let keys = key_set(&[new, old]);
        let policy = Policy {
            issuer: "https://gw.example".into(),
            audiences: vec!["https://gw.example/notes".into()],
            algorithms: vec![Algorithm::ES256],
            leeway_secs: 0,
            required_scopes: vec!["notes:read".into()],
        };
        let v = jwt::verify(&signed, &keys, &policy, 150).unwrap();
        assert_eq!(
            (v.subject.as_str(), v.client_id.as_deref()),
            ("alice", Some("c1"))
        );
        assert!(jwt::verify(&signed, &keys, &policy, 250).is_err());
        let header = jsonwebtoken::decode_header(&signed).unwrap();
        assert_eq!(header.typ.as_deref(), Some("at+jwt"));
        // Without the old key, it no longer does.
        let only_new = JwkSet {
            keys: vec![keys.keys[0].clone()],
        };
        assert!(jwt::verify(&signed, &only_new, &policy, 150).is_err());
    }

    #[test]
    fn what_is_not_a_private_key_is_said_plainly() {
        assert!(
            Signer::from_pem(b"hello")
                .unwrap_err()
                .to_string()
                .contains("no PEM private key")
        );
    }
}
