//! Assertions signed here with a key made here: each rule of the ID-JAG
//! profile refuses what it must, and a good assertion names its user,
//! endpoint and scopes.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};

use super::*;
use crate::resource_server::DEFAULT_ALGORITHMS;

const IDP: &str = "https://acme.okta.example";
const GATEWAY: &str = "https://mcp.example.com";
const RESOURCE: &str = "https://mcp.example.com/notes";
const CLIENT: &str = "claude-client";
const NOW: u64 = 1_800_000_000;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

struct Key {
    encoding: EncodingKey,
    set: JwkSet,
}

fn key() -> Key {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref()).unwrap();
    let point = pair.public_key().as_ref();
    let jwk = json!({"kty":"EC","crv":"P-256","kid":"k1","use":"sig","alg":"ES256",
        "x": b64(&point[1..33]), "y": b64(&point[33..65])});
    Key {
        encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
        set: serde_json::from_value(json!({ "keys": [jwk] })).unwrap(),
    }
}

fn clients() -> Vec<String> {
    vec![CLIENT.to_owned()]
}

fn trust(clients: &[String]) -> Trust<'_> {
    Trust {
        issuer: IDP,
        clients,
        subject_claim: "sub",
        max_lifetime_secs: 600,
        leeway_secs: 30,
        algorithms: &DEFAULT_ALGORITHMS,
    }
}

fn claims() -> Value {
    json!({"iss": IDP, "sub": "ada", "aud": GATEWAY, "client_id": CLIENT,
        "jti": "j-1", "exp": NOW + 300, "iat": NOW - 5, "resource": RESOURCE,
        "scope": "notes:read notes:write", "email": "ada@acme.example"})
}

fn sign(key: &Key, typ: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("k1".into());
    header.typ = typ.map(str::to_owned);
    encode(&header, claims, &key.encoding).unwrap()
}

/// The whole check, as the token endpoint makes it.
fn redeem(key: &Key, typ: Option<&str>, claims: &Value) -> Result<Assertion, OAuthError> {
    let clients = clients();
    let t = trust(&clients);
    let token = sign(key, typ, claims);
    assert_eq!(
        named_issuer(&token).unwrap(),
        claims["iss"].as_str().unwrap()
    );
    let signed = signed(&token, &key.set, &t).map_err(refusal)?;
    judge(&signed, &t, CLIENT, GATEWAY, NOW)
}

fn refused<T: std::fmt::Debug>(r: Result<T, OAuthError>, error: &str, says: &str) {
    match r {
        Err(e) if e.error == error && e.description.contains(says) => {}
        other => panic!("expected {error} saying {says:?}, got {other:?}"),
    }
}

#[test]
fn a_good_assertion_names_its_user_endpoint_and_scopes() {
    let k = key();
    let a = redeem(&k, Some(TYP), &claims()).unwrap();
    assert_eq!(a.subject, "ada");
    assert_eq!(a.resource, RESOURCE);
    assert_eq!(a.jti, "j-1");
    assert_eq!(a.expires_at, NOW + 300);
    assert_eq!(a.auth_time, NOW - 5);
    let scopes = a.scopes.clone().unwrap();
    assert_eq!(scopes, ["notes:read", "notes:write"]);
    // The media type with its prefix, in any case, is the same type.
    redeem(&k, Some("application/OAUTH-ID-JAG+JWT"), &claims()).unwrap();
    // The subject by another claim.
    let clients = clients();
    let by_email = Trust {
        subject_claim: "email",
        ..trust(&clients)
    };
    let signed = signed(&sign(&k, Some(TYP), &claims()), &k.set, &by_email).unwrap();
    let a = judge(&signed, &by_email, CLIENT, GATEWAY, NOW).unwrap();
    assert_eq!(a.subject, "ada@acme.example");
    // Whichever claim names the user, the grant names its subject (RFC 7523 §3).
    let mut c = claims();
    c.as_object_mut().unwrap().remove("sub");
    let no_sub = super::signed(&sign(&k, Some(TYP), &c), &k.set, &by_email).unwrap();
    refused(
        judge(&no_sub, &by_email, CLIENT, GATEWAY, NOW),
        "invalid_grant",
        "no `sub`",
    );
}

#[test]
fn only_an_id_jag_is_one() {
    let k = key();
    for typ in [None, Some("JWT"), Some("at+jwt"), Some("id_token+jwt")] {
        refused(redeem(&k, typ, &claims()), "invalid_grant", "type");
    }
}

#[test]
fn an_assertion_is_for_this_server_alone() {
    let k = key();
    for aud in [
        json!("https://other.example.com"),
        json!([GATEWAY, "https://other.example.com"]),
        json!(format!("{GATEWAY}/token")),
        json!(null),
    ] {
        let mut c = claims();
        c["aud"] = aud;
        refused(redeem(&k, Some(TYP), &c), "invalid_grant", "aud");
    }
    let mut c = claims();
    c["aud"] = json!([GATEWAY]);
    redeem(&k, Some(TYP), &c).unwrap();
}

#[test]
fn an_assertion_is_redeemed_by_its_client_only() {
    let k = key();
    let mut c = claims();
    c["client_id"] = json!("someone-else");
    refused(redeem(&k, Some(TYP), &c), "invalid_grant", "another client");
    c.as_object_mut().unwrap().remove("client_id");
    refused(
        redeem(&k, Some(TYP), &c),
        "invalid_grant",
        "names no client",
    );
    // Its client, but not one the issuer may assert for.
    let none: Vec<String> = Vec::new();
    let t = trust(&none);
    let signed = signed(&sign(&k, Some(TYP), &claims()), &k.set, &t).unwrap();
    refused(
        judge(&signed, &t, CLIENT, GATEWAY, NOW),
        "unauthorized_client",
        "may not redeem",
    );
    // Any client, but still the one the assertion names.
    let any = vec!["*".to_owned()];
    let t = trust(&any);
    judge(&signed, &t, CLIENT, GATEWAY, NOW).unwrap();
    refused(
        judge(&signed, &t, "someone-else", GATEWAY, NOW),
        "invalid_grant",
        "another client",
    );
}

#[test]
fn an_assertion_lives_briefly_and_now() {
    let k = key();
    let at = |exp: u64, iat: u64| {
        let mut c = claims();
        c["exp"] = json!(exp);
        c["iat"] = json!(iat);
        redeem(&k, Some(TYP), &c)
    };
    refused(at(NOW - 31, NOW - 300), "invalid_grant", "expired");
    at(NOW - 29, NOW - 300).unwrap();
    refused(at(NOW + 600, NOW + 31), "invalid_grant", "future");
    refused(at(NOW + 700, NOW), "invalid_grant", "longer than 600 s");
    for missing in ["exp", "iat", "jti", "resource", "sub"] {
        let mut c = claims();
        c.as_object_mut().unwrap().remove(missing);
        refused(redeem(&k, Some(TYP), &c), "invalid_grant", missing);
    }
    let mut c = claims();
    c["nbf"] = json!(NOW + 60);
    refused(redeem(&k, Some(TYP), &c), "invalid_grant", "not valid yet");
    c["resource"] = json!([RESOURCE]);
    c["nbf"] = json!(NOW);
    refused(redeem(&k, Some(TYP), &c), "invalid_grant", "not one URL");
}

#[test]
fn an_assertion_is_checked_with_its_issuers_keys_only() {
    let k = key();
    let other = key();
    let token = sign(&other, Some(TYP), &claims());
    let clients = clients();
    // Signed by a key of the same id that the issuer does not hold.
    refused(
        signed(&token, &k.set, &trust(&clients)).map_err(refusal),
        "invalid_grant",
        "signature",
    );
    // Another issuer's claims under the trusted issuer's keys.
    let mut c = claims();
    c["iss"] = json!("https://evil.example");
    refused(
        redeem(&k, Some(TYP), &c),
        "invalid_grant",
        "not from the issuer",
    );
    // An HMAC made with the published key as its secret.
    let hmac = encode(
        &Header {
            typ: Some(TYP.into()),
            kid: Some("k1".into()),
            ..Header::new(jsonwebtoken::Algorithm::HS256)
        },
        &claims(),
        &EncodingKey::from_secret(serde_json::to_string(&k.set).unwrap().as_bytes()).unwrap(),
    )
    .unwrap();
    refused(
        signed(&hmac, &k.set, &trust(&clients)).map_err(refusal),
        "invalid_grant",
        "not accepted",
    );
    assert!(named_issuer("a.b").is_err());
    assert!(named_issuer("e30.e30.x").is_err());
}

#[test]
fn scopes_are_those_asked_the_endpoint_offers_and_the_assertion_grants() {
    let k = key();
    let a = redeem(&k, Some(TYP), &claims()).unwrap();
    let offered: Vec<String> = ["notes:read", "notes:write", "admin"]
        .map(String::from)
        .into();
    let default = vec!["notes:read".to_owned()];
    let grant = |asked| grant_scopes(asked, &a, &offered, &default);
    assert_eq!(grant(None).unwrap(), ["notes:read", "notes:write"]);
    assert_eq!(grant(Some("notes:write admin")).unwrap(), ["notes:write"]);
    assert_eq!(grant(Some("admin")).unwrap(), ["notes:read"]);
    let narrow = Assertion {
        scopes: Some(vec!["other".into()]),
        ..a.clone()
    };
    refused(
        grant_scopes(None, &narrow, &offered, &default),
        "invalid_scope",
        "does not grant",
    );
    let open = Assertion { scopes: None, ..a };
    assert_eq!(
        grant_scopes(Some("admin"), &open, &offered, &default).unwrap(),
        ["admin"]
    );
}
