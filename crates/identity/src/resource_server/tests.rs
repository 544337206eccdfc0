//! Tokens signed here with keys made here: every refusal a resource server
//! owes (RFC 9068 §4, RFC 8725 §3) and the challenges that answer them.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
use base64::Engine as _;
use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::{Value, json};

use super::*;

const ISSUER: &str = "https://idp.example.com";
const AUDIENCE: &str = "https://gw.example.com/notes/mcp";
const NOW: u64 = 1_800_000_000;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A signing key made here, and its public JWK.
struct Key {
    encoding: EncodingKey,
    jwk: Value,
    alg: Algorithm,
}

fn ec_key(kid: &str) -> Key {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref()).unwrap();
    let point = pair.public_key().as_ref();
    Key {
        encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty":"EC","crv":"P-256","kid":kid,"use":"sig","alg":"ES256",
            "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
        alg: Algorithm::ES256,
    }
}

fn ed_key(kid: &str) -> Key {
    let rng = SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    Key {
        encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty":"OKP","crv":"Ed25519","kid":kid,"x": b64(pair.public_key().as_ref())}),
        alg: Algorithm::EdDSA,
    }
}

fn set(keys: &[&Key]) -> JwkSet {
    serde_json::from_value(json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}))
        .unwrap()
}

fn policy() -> Policy {
    Policy {
        issuer: ISSUER.into(),
        audiences: vec![AUDIENCE.into()],
        algorithms: DEFAULT_ALGORITHMS.to_vec(),
        leeway_secs: 60,
        required_scopes: vec!["notes:read".into()],
    }
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "client_id": "chatgpt",
        "exp": NOW + 300, "iat": NOW - 10, "scope": "notes:read notes:write"})
}

fn sign(key: &Key, kid: Option<&str>, typ: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(key.alg);
    header.kid = kid.map(str::to_owned);
    header.typ = typ.map(str::to_owned);
    encode(&header, claims, &key.encoding).unwrap()
}

fn verdict(token: &str, keys: &JwkSet) -> Result<Verified, Rejection> {
    jwt::verify(token, keys, &policy(), NOW)
}

fn invalid(r: Result<Verified, Rejection>, says: &str) {
    match r {
        Err(Rejection::Invalid(why)) if why.contains(says) => {}
        other => panic!("expected invalid_token saying {says:?}, got {other:?}"),
    }
}

#[test]
fn a_good_token_names_its_caller_and_scopes() {
    let k = ec_key("k1");
    let keys = set(&[&k]);
    for typ in [
        Some("at+jwt"),
        Some("application/at+jwt"),
        Some("JWT"),
        None,
    ] {
        let v = verdict(&sign(&k, Some("k1"), typ, &claims()), &keys).unwrap();
        assert_eq!(v.subject, "user-1");
        assert_eq!(v.issuer, ISSUER);
        assert_eq!(v.scopes, ["notes:read", "notes:write"]);
        assert_eq!(v.client_id.as_deref(), Some("chatgpt"));
        assert_eq!(v.expires_at, Some(NOW + 300));
    }
    // EdDSA, an audience among several, `scp` as an array, no kid with one key.
    let e = ed_key("e1");
    let mut c = claims();
    c["aud"] = json!(["https://other.example.com", AUDIENCE]);
    c.as_object_mut().unwrap().remove("scope");
    c["scp"] = json!(["notes:read"]);
    let v = verdict(&sign(&e, None, Some("at+jwt"), &c), &set(&[&e])).unwrap();
    assert_eq!(v.scopes, ["notes:read"]);
    // A client acting for itself: its client_id is the subject.
    let mut c = claims();
    c.as_object_mut().unwrap().remove("sub");
    let v = verdict(&sign(&k, Some("k1"), None, &c), &keys).unwrap();
    assert_eq!(v.subject, "chatgpt");
}

#[test]
fn forged_tokens_are_refused() {
    let k = ec_key("k1");
    let forger = ec_key("k1");
    let keys = set(&[&k]);
    // Signed by another key claiming the issuer's kid.
    invalid(
        verdict(&sign(&forger, Some("k1"), None, &claims()), &keys),
        "signature",
    );
    // A key the issuer does not publish: fetch the set again.
    assert_eq!(
        verdict(&sign(&forger, Some("k9"), None, &claims()), &keys),
        Err(Rejection::UnknownKey("k9".into()))
    );
    // The payload changed after signing.
    let good = sign(&k, Some("k1"), None, &claims());
    let mut parts: Vec<&str> = good.split('.').collect();
    let mut c = claims();
    c["sub"] = json!("admin");
    let payload = b64(c.to_string().as_bytes());
    parts[1] = &payload;
    invalid(verdict(&parts.join("."), &keys), "signature");
    // `none`, and HMAC with the public key as the secret (RFC 8725 §2.1).
    let header = b64(br#"{"alg":"none","kid":"k1"}"#);
    let unsigned = format!("{header}.{}.", b64(claims().to_string().as_bytes()));
    assert!(matches!(
        verdict(&unsigned, &keys),
        Err(Rejection::Invalid(_))
    ));
    let secret = serde_json::to_vec(&k.jwk).unwrap();
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let hmac = encode(&h, &claims(), &EncodingKey::from_secret(&secret).unwrap()).unwrap();
    invalid(verdict(&hmac, &keys), "not accepted");
    // A token that brings its own key, or a critical extension.
    for extra in [
        r#""jwk":{"kty":"EC"}"#,
        r#""jku":"https://evil.example/keys""#,
        r#""crit":["exp"]"#,
    ] {
        let header = b64(format!(r#"{{"alg":"ES256","kid":"k1",{extra}}}"#).as_bytes());
        let tampered = format!("{header}.{}", good.split_once('.').unwrap().1);
        assert!(
            matches!(verdict(&tampered, &keys), Err(Rejection::Invalid(_))),
            "{extra}"
        );
    }
    // Not a JWT at all.
    invalid(verdict("opaque-token-value", &keys), "not a signed JWT");
}

#[test]
fn claims_are_held_to_the_policy() {
    let k = ec_key("k1");
    let keys = set(&[&k]);
    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = claims();
        f(&mut c);
        verdict(&sign(&k, Some("k1"), Some("at+jwt"), &c), &keys)
    };
    invalid(
        with(&|c| c["iss"] = json!("https://evil.example.com")),
        "another issuer",
    );
    invalid(
        with(&|c| c["aud"] = json!("https://gw.example.com/other/mcp")),
        "another resource",
    );
    invalid(
        with(&|c| {
            c.as_object_mut().unwrap().remove("aud");
        }),
        "another resource",
    );
    invalid(with(&|c| c["exp"] = json!(NOW - 61)), "expired");
    invalid(
        with(&|c| {
            c.as_object_mut().unwrap().remove("exp");
        }),
        "no expiry",
    );
    invalid(with(&|c| c["nbf"] = json!(NOW + 61)), "not valid yet");
    invalid(with(&|c| c["iat"] = json!(NOW + 61)), "in the future");
    invalid(with(&|c| c["exp"] = json!("tomorrow")), "not a time");
    invalid(
        with(&|c| {
            c.as_object_mut().unwrap().remove("sub");
            c.as_object_mut().unwrap().remove("client_id");
        }),
        "no subject",
    );
    // Within the leeway is fine.
    assert!(with(&|c| c["exp"] = json!(NOW - 59)).is_ok());
    // A scope every request needs, missing: 403 naming it.
    assert_eq!(
        with(&|c| c["scope"] = json!("notes:write")),
        Err(Rejection::InsufficientScope(vec!["notes:read".into()]))
    );
    // An ID token's type.
    invalid(
        verdict(
            &sign(&k, Some("k1"), Some("id_token+jwt"), &claims()),
            &keys,
        ),
        "not an access token",
    );
}

#[test]
fn keys_are_chosen_by_kid_or_alone() {
    let (a, b) = (ec_key("a"), ec_key("b"));
    let both = set(&[&a, &b]);
    assert!(verdict(&sign(&b, Some("b"), None, &claims()), &both).is_ok());
    // No kid and two keys of its family: ambiguous.
    invalid(
        verdict(&sign(&a, None, None, &claims()), &both),
        "exactly one",
    );
    // A key published for encryption only is not used to verify.
    let mut enc = ec_key("e");
    enc.jwk["use"] = json!("enc");
    invalid(
        verdict(&sign(&enc, Some("e"), None, &claims()), &set(&[&enc])),
        "not for signing",
    );
    // A key published for another algorithm.
    let mut other = ec_key("o");
    other.jwk["alg"] = json!("ES384");
    invalid(
        verdict(&sign(&other, Some("o"), None, &claims()), &set(&[&other])),
        "not for signing",
    );
    // An algorithm the policy leaves out.
    let e = ed_key("ed");
    let mut p = policy();
    p.algorithms = vec![Algorithm::ES256];
    let r = jwt::verify(&sign(&e, Some("ed"), None, &claims()), &set(&[&e]), &p, NOW);
    invalid(r, "not accepted");
}

#[test]
fn introspection_answers_are_held_to_the_same_rules() {
    let p = policy();
    let active = json!({"active": true, "iss": ISSUER, "aud": AUDIENCE, "sub": "user-2",
        "scope": "notes:read", "exp": NOW + 60, "client_id": "claude"});
    let v = introspection::verdict(&active, &p, NOW).unwrap();
    assert_eq!((v.subject.as_str(), v.scopes.len()), ("user-2", 1));
    let with = |f: &dyn Fn(&mut Value)| {
        let mut a = active.clone();
        f(&mut a);
        introspection::verdict(&a, &p, NOW)
    };
    invalid(with(&|a| a["active"] = json!(false)), "not active");
    invalid(
        with(&|a| {
            a.as_object_mut().unwrap().remove("active");
        }),
        "not active",
    );
    invalid(
        with(&|a| a["aud"] = json!("https://elsewhere")),
        "another resource",
    );
    invalid(
        with(&|a| a["iss"] = json!("https://evil")),
        "another issuer",
    );
    invalid(with(&|a| a["exp"] = json!(NOW - 61)), "expired");
    // What an answer leaves out is the issuer's to decide.
    assert!(
        with(&|a| {
            let o = a.as_object_mut().unwrap();
            o.remove("aud");
            o.remove("iss");
            o.remove("exp");
        })
        .is_ok()
    );
    assert_eq!(
        with(&|a| a["scope"] = json!("other")),
        Err(Rejection::InsufficientScope(vec!["notes:read".into()]))
    );
}

#[test]
fn bearer_tokens_come_from_one_authorization_header() {
    assert_eq!(bearer::token(&[]), Ok(None));
    assert_eq!(
        bearer::token(&[b"Bearer abc.def-_~+/="]),
        Ok(Some("abc.def-_~+/="))
    );
    assert_eq!(bearer::token(&[b"bearer  abc"]), Ok(Some("abc")));
    assert_eq!(bearer::token(&[b"Basic dXNlcjpwYXNz"]), Ok(None));
    for bad in [
        &b"Bearer "[..],
        b"Bearer a b",
        b"Bearer a\"b",
        b"Bearer \xff",
    ] {
        assert!(
            matches!(bearer::token(&[bad]), Err(Rejection::BadRequest(_))),
            "{bad:?}"
        );
    }
    assert!(matches!(
        bearer::token(&[b"Bearer a", b"Bearer b"]),
        Err(Rejection::BadRequest(_))
    ));
}

#[test]
fn challenges_say_where_to_sign_in_and_what_went_wrong() {
    let prm = "https://gw.example.com/.well-known/oauth-protected-resource/notes/mcp";
    assert_eq!(
        challenge::www_authenticate(prm, &["notes:read"], &Rejection::Missing),
        format!(r#"Bearer resource_metadata="{prm}", scope="notes:read""#)
    );
    let expired = Rejection::Invalid("the token has expired".into());
    assert_eq!(
        challenge::www_authenticate(prm, &[], &expired),
        format!(
            r#"Bearer resource_metadata="{prm}", error="invalid_token", error_description="the token has expired""#
        )
    );
    let scope = Rejection::InsufficientScope(vec!["notes:write".into(), "admin".into()]);
    let c = challenge::www_authenticate(prm, &["notes:write", "admin"], &scope);
    assert!(
        c.contains(r#"scope="notes:write admin""#) && c.contains(r#"error="insufficient_scope""#),
        "{c}"
    );
    assert_eq!(scope.status(), 403);
    // A description never breaks the header's quoting.
    let odd = Rejection::Invalid("a \"quoted\" \\ thing\n".into());
    assert!(
        challenge::www_authenticate(prm, &[], &odd)
            .ends_with(r#"error_description="a ?quoted? ? thing?""#)
    );
}

#[test]
fn a_claim_is_written_as_text_that_reads_back_as_it_was() {
    let claims = json!({
        "sub": "alice \"the\" admin",
        "groups": ["Finance Admins", "b", 7, null],
        "one": ["solo"],
        "level": 3,
        "ratio": 2.5,
        "admin": true,
        "profile": {"team": "ops", "tags": ["a b"]},
        "nothing": null,
        "empty": [],
    });
    let v = Verified {
        issuer: ISSUER.into(),
        subject: "alice".into(),
        scopes: Vec::new(),
        expires_at: None,
        client_id: None,
        claims: claims.as_object().cloned().unwrap_or_default(),
    };
    let text = |name: &str| v.claim_text(name);
    // A string as itself; a number or boolean written out.
    assert_eq!(text("sub").as_deref(), Some("alice \"the\" admin"));
    assert_eq!(text("level").as_deref(), Some("3"));
    assert_eq!(text("ratio").as_deref(), Some("2.5"));
    assert_eq!(text("admin").as_deref(), Some("true"));
    // An array or object as its compact JSON: no element lost or split.
    assert_eq!(
        text("groups").as_deref(),
        Some(r#"["Finance Admins","b",7,null]"#)
    );
    assert_eq!(text("one").as_deref(), Some(r#"["solo"]"#));
    assert_eq!(text("empty").as_deref(), Some("[]"));
    assert_eq!(
        text("profile").as_deref(),
        Some(r#"{"team":"ops","tags":["a b"]}"#)
    );
    for name in ["groups", "profile", "empty"] {
        let back: Value = serde_json::from_str(&text(name).unwrap()).unwrap();
        assert_eq!(back, claims[name], "{name}");
    }
    // Null or absent: nothing is set.
    assert_eq!(text("nothing"), None);
    assert_eq!(text("absent"), None);
}
