//! Proves the OpenID provider peer (`tests/peers/oidc_provider.mjs`, panva's
//! `oidc-provider`) and its harness (`tests/support/idp.rs`) without the gateway: OIDC
//! discovery, RFC 9068 JWT access tokens for a resource (RFC 8707) whose key is in the
//! JWKS, opaque tokens introspected (RFC 7662) by the gateway's client, a short-lived token
//! expiring, key rotation, and forged tokens that look real but do not verify.
//!
//! Needs the peers of `scripts/install-peers.sh`; with `MCP_UI_SKIP_PEERS=1` a missing
//! install is a skip.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hyper::StatusCode;
use serde_json::Value;
use support::idp::Idp;
use support::idp::{
    CLIENT_ID, DEFAULT_SCOPES, INTROSPECTION_CLIENT_ID, INTROSPECTION_CLIENT_SECRET,
    SHORT_LIVED_CLIENT_ID, SHORT_LIVED_CLIENT_SECRET, SHORT_LIVED_TTL, TOKEN_TTL, decode_jwt,
};
use support::peers::peers;

use crate::support;

const RESOURCE: &str = "http://127.0.0.1:1/mcp";
const ES256_RESOURCE: &str = "http://127.0.0.1:1/es256/mcp";
const OPAQUE_RESOURCE: &str = "http://127.0.0.1:1/opaque/mcp";
/// How long a short-lived token may take to be reported inactive (2 s, whole seconds).
const EXPIRY_LIMIT: Duration = Duration::from_secs(5);

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn scopes_of(payload: &Value) -> Vec<&str> {
    payload["scope"]
        .as_str()
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .collect()
}

/// The JWKS entry named `kid`, if any.
fn jwk<'a>(jwks: &'a Value, kid: &str) -> Option<&'a Value> {
    jwks["keys"]
        .as_array()
        .expect("JWKS keys")
        .iter()
        .find(|k| k["kid"] == kid)
}

/// A JWT access token's header and claims as the provider writes them.
fn assert_access_token(idp: &Idp, token: &str, resource: &str, alg: &str, scopes: &[&str]) {
    let (header, payload) = decode_jwt(token);
    assert_eq!(header["typ"], "at+jwt", "header {header}");
    assert_eq!(header["alg"], alg, "header {header}");
    assert!(header["kid"].is_string(), "header {header}");
    assert_eq!(payload["iss"], idp.issuer(), "payload {payload}");
    assert_eq!(payload["aud"], resource, "payload {payload}");
    assert_eq!(payload["client_id"], CLIENT_ID, "payload {payload}");
    assert_eq!(payload["sub"], CLIENT_ID, "payload {payload}");
    assert!(payload["jti"].is_string(), "payload {payload}");
    assert_eq!(scopes_of(&payload), scopes, "payload {payload}");
    let (iat, exp) = (
        payload["iat"].as_u64().expect("iat"),
        payload["exp"].as_u64().expect("exp"),
    );
    assert!(iat.abs_diff(now()) <= 5, "iat {iat} is not now");
    assert_eq!(exp - iat, TOKEN_TTL.as_secs(), "payload {payload}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openid_provider_issues_verifiable_and_forged_tokens() {
    let Some(peers) = peers() else { return };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let issuer = idp.issuer().to_owned();
    assert!(!issuer.ends_with('/'), "issuer {issuer}");

    // Discovery names this issuer and every endpoint the gateway and clients use.
    let conf = idp.discovery().await;
    assert_eq!(conf["issuer"], issuer.as_str());
    for (field, path) in [
        ("jwks_uri", "/jwks"),
        ("token_endpoint", "/token"),
        ("introspection_endpoint", "/token/introspection"),
        ("revocation_endpoint", "/token/revocation"),
        ("registration_endpoint", "/reg"),
        ("authorization_endpoint", "/auth"),
    ] {
        assert_eq!(conf[field], format!("{issuer}{path}"), "{field} in {conf}");
    }
    assert_eq!(
        conf["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    let grants = conf["grant_types_supported"].to_string();
    assert!(grants.contains("client_credentials") && grants.contains("authorization_code"));

    // A JWT access token (RFC 9068) for a resource, signed by a key of the JWKS.
    let jwks = idp.jwks().await;
    assert_eq!(jwks["keys"].as_array().map(Vec::len), Some(2), "{jwks}");
    let answer = idp.token_response(RESOURCE, &["tools:call"]).await;
    assert_eq!(answer["token_type"], "Bearer", "{answer}");
    assert_eq!(answer["expires_in"], TOKEN_TTL.as_secs(), "{answer}");
    assert_eq!(answer["scope"], "tools:call", "{answer}");
    let jwt = answer["access_token"]
        .as_str()
        .expect("access_token")
        .to_owned();
    assert_access_token(&idp, &jwt, RESOURCE, "RS256", &["tools:call"]);
    let (header, _) = decode_jwt(&jwt);
    let key = jwk(&jwks, header["kid"].as_str().unwrap()).expect("the token's kid is in the JWKS");
    assert_eq!(key["kty"], "RSA");
    assert!(
        key.get("d").is_none(),
        "the JWKS publishes a private key: {key}"
    );
    assert_eq!(idp.verify(&jwt).await["valid"], true);

    // `es256` in the path: the EC key signs. Unknown scopes are dropped, not refused.
    let es = idp
        .token(ES256_RESOURCE, &["tools:read", "admin", "nope"])
        .await;
    assert_access_token(&idp, &es, ES256_RESOURCE, "ES256", &["tools:read", "admin"]);
    let (header, _) = decode_jwt(&es);
    assert_eq!(
        jwk(&jwks, header["kid"].as_str().unwrap()).expect("in the JWKS")["kty"],
        "EC"
    );
    let all = idp.token(RESOURCE, &DEFAULT_SCOPES).await;
    assert_eq!(scopes_of(&decode_jwt(&all).1), DEFAULT_SCOPES);

    // A resource that is not a loopback http URL is refused.
    let refused = idp
        .token_response("https://example.com/mcp", &["tools:call"])
        .await;
    assert_eq!(refused["error"], "invalid_target", "{refused}");

    // Opaque tokens: introspected by the gateway's client; other clients see only their own.
    let opaque = idp
        .token(OPAQUE_RESOURCE, &["tools:call", "notes:write"])
        .await;
    assert!(!opaque.contains('.'), "not opaque: {opaque}");
    let intro = idp.introspect(&opaque).await;
    assert_eq!(intro["active"], true, "{intro}");
    assert_eq!(intro["aud"], OPAQUE_RESOURCE, "{intro}");
    assert_eq!(intro["iss"], issuer.as_str(), "{intro}");
    assert_eq!(intro["client_id"], CLIENT_ID, "{intro}");
    assert_eq!(intro["scope"], "tools:call notes:write", "{intro}");
    assert_eq!(intro["token_type"], "Bearer", "{intro}");
    let exp = intro["exp"].as_u64().expect("exp");
    assert!(exp > now() + 3000, "{intro}");
    let (status, other) = idp
        .introspect_as(SHORT_LIVED_CLIENT_ID, SHORT_LIVED_CLIENT_SECRET, &opaque)
        .await;
    assert_eq!(
        (status, &other),
        (StatusCode::OK, &serde_json::json!({"active": false}))
    );
    let (status, wrong) = idp
        .introspect_as(INTROSPECTION_CLIENT_ID, "not-the-secret", &opaque)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{wrong}");
    assert_eq!(wrong["error"], "invalid_client", "{wrong}");
    // JWTs are not introspectable (oidc-provider says so).
    let (status, jwt_intro) = idp
        .introspect_as(INTROSPECTION_CLIENT_ID, INTROSPECTION_CLIENT_SECRET, &jwt)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{jwt_intro}");
    assert_eq!(jwt_intro["error"], "unsupported_token_type", "{jwt_intro}");
    // Revoked: inactive.
    let revoked = idp.token(OPAQUE_RESOURCE, &["tools:call"]).await;
    idp.revoke(&revoked).await;
    assert_eq!(idp.introspect(&revoked).await["active"], false);

    // A short-lived token is active, then inactive about two seconds later.
    let short_jwt = idp.short_lived_token(RESOURCE, &["tools:call"]).await;
    let (_, claims) = decode_jwt(&short_jwt);
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        SHORT_LIVED_TTL.as_secs(),
        "{claims}"
    );
    let issued = Instant::now();
    let short = idp
        .short_lived_token(OPAQUE_RESOURCE, &["tools:call"])
        .await;
    assert_eq!(idp.introspect(&short).await["active"], true);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if idp.introspect(&short).await["active"] == false {
            break;
        }
        assert!(
            issued.elapsed() < EXPIRY_LIMIT,
            "the short-lived token is still active after {EXPIRY_LIMIT:?}"
        );
    }
    let lived = issued.elapsed();
    assert!(
        lived >= SHORT_LIVED_TTL - Duration::from_secs(1),
        "expired after only {lived:?}"
    );

    // Rotation: the old keys leave the JWKS, new tokens name a new key, the old JWT no
    // longer verifies, and opaque tokens issued before stay valid.
    let old_kids = idp.kids().await;
    let new_kids = idp.rotate().await;
    let kids = idp.kids().await;
    assert_eq!(kids, new_kids);
    assert!(
        old_kids.iter().all(|k| !kids.contains(k)),
        "{old_kids:?} vs {kids:?}"
    );
    let rotated = idp.token(RESOURCE, &["tools:call"]).await;
    let (header, _) = decode_jwt(&rotated);
    assert!(kids.iter().any(|k| header["kid"] == k.as_str()), "{header}");
    assert_eq!(idp.verify(&rotated).await["valid"], true);
    let stale = idp.verify(&jwt).await;
    assert_eq!(stale["valid"], false, "{stale}");
    assert_eq!(stale["error"], "ERR_JWKS_NO_MATCHING_KEY", "{stale}");
    assert_eq!(idp.introspect(&opaque).await["active"], true);

    // Forgeries: real-looking header and claims, a key outside the JWKS.
    let forged = idp.foreign_token(RESOURCE, &["tools:call"], None).await;
    assert_access_token(&idp, &forged, RESOURCE, "RS256", &["tools:call"]);
    let (header, payload) = decode_jwt(&forged);
    let (_, real) = decode_jwt(&rotated);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&payload),
        keys(&real),
        "the claims differ from a real token's"
    );
    assert!(
        !kids.iter().any(|k| header["kid"] == k.as_str()),
        "{header}"
    );
    assert_eq!(
        idp.verify(&forged).await["error"],
        "ERR_JWKS_NO_MATCHING_KEY"
    );
    for kid in &kids {
        let forged = idp.foreign_token(RESOURCE, &["admin"], Some(kid)).await;
        let (header, _) = decode_jwt(&forged);
        assert_eq!(header["kid"], kid.as_str());
        let alg = if jwk(&idp.jwks().await, kid).unwrap()["kty"] == "EC" {
            "ES256"
        } else {
            "RS256"
        };
        assert_access_token(&idp, &forged, RESOURCE, alg, &["admin"]);
        let check = idp.verify(&forged).await;
        assert_eq!(check["valid"], false, "{check}");
        assert_eq!(
            check["error"], "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
            "{check}"
        );
    }

    eprintln!(
        "oidc-provider at {issuer}: every check passed in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
