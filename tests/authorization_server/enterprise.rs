//! Enterprise-managed authorization: an enterprise identity provider (a second
//! oidc-provider, standing in for Okta, signing each identity assertion with its own
//! published keys through its `/admin/mint`) asserts a user for one endpoint and one
//! client; the client redeems the ID-JAG at the gateway's token endpoint with the JWT
//! bearer grant and calls a tool with the access token, with no browser. And the
//! attacks: a replay (at the same and at another replica sharing Redis), another
//! audience, another resource, another client, expired or long-lived assertions,
//! `typ` and `alg` confusion, an untrusted issuer, a forged signature, a public client.

use super::*;
use mcp_ui_model::config::authorization::EnterpriseIssuerConfig;
use support::idp::decode_jwt;

const GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TYP: &str = "oauth-id-jag+jwt";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn trusting(issuer: &str, clients: &[&str]) -> EnterpriseIssuerConfig {
    EnterpriseIssuerConfig {
        issuer: issuer.to_owned(),
        clients: clients.iter().map(|c| c.to_string()).collect(),
        subject_claim: Some("email".into()),
        ..EnterpriseIssuerConfig::default()
    }
}

/// A confidential client registered for the JWT bearer grant: its id and secret.
async fn confidential_client(w: &World) -> (String, String) {
    let (status, reg) = register(
        w,
        json!({"client_name": "Enterprise Host", "redirect_uris": [REDIRECT],
               "token_endpoint_auth_method": "client_secret_basic",
               "grant_types": ["authorization_code", GRANT]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{reg}");
    (
        reg["client_id"].as_str().unwrap().to_owned(),
        reg["client_secret"].as_str().unwrap().to_owned(),
    )
}

/// The claims of an assertion of `idp` for Ada, for the world's endpoint and `client`.
fn assertion_claims(idp: &str, w: &World, client: &str, jti: &str) -> Value {
    let now = now();
    json!({"iss": idp, "sub": "00u-ada", "email": "ada@acme.example", "aud": w.issuer,
        "client_id": client, "jti": jti, "iat": now - 5, "exp": now + 240,
        "resource": w.resource(), "scope": "tools:call notes:write",
        "auth_time": now - 60, "amr": ["pwd", "mfa"]})
}

async fn redeem_at(
    url: &str,
    assertion: &str,
    client: (&str, &str),
    extra: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut pairs = vec![("grant_type", GRANT), ("assertion", assertion)];
    pairs.extend_from_slice(extra);
    let (status, _, body) = form(url, &pairs, Some(client)).await;
    (status, body)
}

fn refused(answer: &(StatusCode, Value), error: &str, says: &str, what: &str) {
    let (status, body) = answer;
    assert!(
        status.is_client_error()
            && body["error"] == error
            && body["error_description"]
                .as_str()
                .is_some_and(|d| d.contains(says)),
        "{what}: expected {error} saying {says:?}, got {status} {body}"
    );
}

#[tokio::test]
async fn an_enterprise_assertion_is_an_access_token_once_and_nothing_else_is() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let okta = Idp::start(&peers).await;
    let stranger = Idp::start(&peers).await;
    let trusted = okta.issuer().to_owned();
    let w = world(&peers, |a| {
        a.enterprise_issuers = vec![trusting(&trusted, &["*"])];
    })
    .await;
    let token_url = w.url("/oauth/token");

    // The metadata says the grant and its profile.
    let (_, md) = get_json(&w.url("/.well-known/oauth-authorization-server")).await;
    assert!(
        md["grant_types_supported"]
            .as_array()
            .unwrap()
            .contains(&json!(GRANT)),
        "{md}"
    );
    assert_eq!(
        md["authorization_grant_profiles_supported"],
        json!(["urn:ietf:params:oauth:grant-profile:id-jag"])
    );

    let (id, secret) = confidential_client(&w).await;
    let client = (id.as_str(), secret.as_str());
    let header = json!({"alg": "RS256", "typ": TYP});
    let jag = okta
        .mint(header.clone(), assertion_claims(&trusted, &w, &id, "jti-1"))
        .await;
    let (status, tokens) = redeem_at(&token_url, &jag, client, &[]).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["scope"], "tools:call notes:write");
    assert!(tokens.get("refresh_token").is_none(), "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    let (_, claims) = decode_jwt(access);
    assert_eq!(claims["iss"], w.issuer);
    assert_eq!(claims["sub"], "ada@acme.example", "the subject by `email`");
    assert_eq!(claims["aud"], w.resource());
    assert_eq!(claims["client_id"], id);
    assert!(
        call_echo(&w, access).await.unwrap().contains("signed in"),
        "the access token calls a tool"
    );

    // The same assertion again.
    let again = redeem_at(&token_url, &jag, client, &[]).await;
    refused(&again, "invalid_grant", "already used", "a replay");

    // Each attack a fresh assertion (its own jti), refused.
    let mut n = 0;
    let mut attack = |change: &dyn Fn(&mut Value)| {
        n += 1;
        let mut c = assertion_claims(&trusted, &w, &id, &format!("attack-{n}"));
        change(&mut c);
        c
    };
    let other_audience = attack(&|c| c["aud"] = json!("https://other.example.com"));
    let other_resource = attack(&|c| c["resource"] = json!(w.url("/elsewhere")));
    let other_client = attack(&|c| c["client_id"] = json!("another-client"));
    let expired = attack(&|c| {
        c["iat"] = json!(now() - 600);
        c["exp"] = json!(now() - 300);
    });
    let long_lived = attack(&|c| c["exp"] = json!(now() + 3000));
    let no_resource = attack(&|c| {
        c.as_object_mut().unwrap().remove("resource");
    });
    for (claims, error, says, what) in [
        (
            other_audience,
            "invalid_grant",
            "not for this authorization server",
            "another audience",
        ),
        (
            other_resource,
            "invalid_target",
            "not an endpoint this gateway protects",
            "another resource",
        ),
        (
            other_client,
            "invalid_grant",
            "another client",
            "another client",
        ),
        (expired, "invalid_grant", "expired", "expired"),
        (
            long_lived,
            "invalid_grant",
            "lives longer than 300 s",
            "long-lived",
        ),
        (no_resource, "invalid_grant", "no `resource`", "no resource"),
    ] {
        let jag = okta.mint(header.clone(), claims).await;
        refused(
            &redeem_at(&token_url, &jag, client, &[]).await,
            error,
            says,
            what,
        );
    }

    // The token request's resource must be the assertion's.
    let jag = okta
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &id, "jti-resource"),
        )
        .await;
    let elsewhere = w.url("/stdio");
    let answer = redeem_at(&token_url, &jag, client, &[("resource", &elsewhere)]).await;
    refused(
        &answer,
        "invalid_target",
        "not the resource this grant is for",
        "resource param",
    );

    // `typ` confusion: an access token's type, or none.
    for typ in [json!("at+jwt"), json!("JWT"), Value::Null] {
        let mut h = json!({"alg": "RS256"});
        if !typ.is_null() {
            h["typ"] = typ.clone();
        }
        let claims = assertion_claims(&trusted, &w, &id, &format!("typ-{typ}"));
        let jag = okta.mint(h, claims).await;
        refused(
            &redeem_at(&token_url, &jag, client, &[]).await,
            "invalid_grant",
            "type",
            "typ",
        );
    }

    // `alg` confusion: unsigned, and an HMAC keyed with the published key set.
    let claims = assertion_claims(&trusted, &w, &id, "alg-none");
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": TYP})),
        b64(&claims)
    );
    refused(
        &redeem_at(&token_url, &unsigned, client, &[]).await,
        "invalid_grant",
        "",
        "alg none",
    );
    let hmac = okta
        .mint(
            json!({"alg": "HS256", "typ": TYP}),
            assertion_claims(&trusted, &w, &id, "alg-hmac"),
        )
        .await;
    refused(
        &redeem_at(&token_url, &hmac, client, &[]).await,
        "invalid_grant",
        "not accepted",
        "HS256",
    );

    // An issuer nobody trusts, and one forging the trusted issuer's name.
    let theirs = stranger
        .mint(
            header.clone(),
            assertion_claims(stranger.issuer(), &w, &id, "stranger"),
        )
        .await;
    refused(
        &redeem_at(&token_url, &theirs, client, &[]).await,
        "invalid_grant",
        "not one this server trusts",
        "untrusted issuer",
    );
    let forged = stranger
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &id, "forged"),
        )
        .await;
    refused(
        &redeem_at(&token_url, &forged, client, &[]).await,
        "invalid_grant",
        "does not publish",
        "forged",
    );

    // A public client, and a wrong secret.
    let public = public_client(&w).await;
    let jag = okta
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &public, "public"),
        )
        .await;
    let (status, _, body) = form(
        &token_url,
        &[
            ("grant_type", GRANT),
            ("assertion", &jag),
            ("client_id", &public),
        ],
        None,
    )
    .await;
    refused(
        &(status, body),
        "unauthorized_client",
        "confidential clients",
        "public client",
    );
    let jag = okta
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &id, "wrong-secret"),
        )
        .await;
    let (status, body) = redeem_at(&token_url, &jag, (&id, "not-the-secret"), &[]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );

    // The enterprise rotates its keys: an assertion naming a key the gateway lacks has
    // the set fetched again, at most every 10 s (REFETCH_EVERY) since the last fetch
    // (the forged assertion's, above).
    okta.rotate().await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    let jag = okta
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &id, "after-rotation"),
        )
        .await;
    let (status, tokens) = redeem_at(&token_url, &jag, client, &[]).await;
    assert_eq!(status, StatusCode::OK, "after a rotation: {tokens}");
}

/// An issuer's `clients` name who may redeem its assertions; replicas sharing Redis
/// refuse an assertion redeemed at the other.
#[tokio::test]
async fn only_listed_clients_redeem_and_a_replica_knows_a_used_assertion() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let shared = Shared::start().await;
    let okta = Idp::start(&peers).await;
    let trusted = okta.issuer().to_owned();
    let w = world(&peers, |a| shared.apply(a)).await;
    // Clients are registered at `w` (sealed with the shared session key), then two
    // replicas trust the enterprise for one of them only.
    let (listed, listed_secret) = confidential_client(&w).await;
    let (unlisted, unlisted_secret) = confidential_client(&w).await;
    let mut config = w.config.clone();
    let server = config.authorization_server.as_mut().unwrap();
    server.enterprise_issuers = vec![trusting(&trusted, &[&listed])];
    let a = TestGateway::start_with(config.clone()).await;
    let b = TestGateway::start_with(config).await;
    let header = json!({"alg": "ES256", "typ": TYP});

    let jag = okta
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &unlisted, "unlisted"),
        )
        .await;
    let answer = redeem_at(
        &a.url_for("/oauth/token"),
        &jag,
        (&unlisted, &unlisted_secret),
        &[],
    )
    .await;
    refused(
        &answer,
        "unauthorized_client",
        "may not redeem",
        "an unlisted client",
    );

    let jag = okta
        .mint(
            header.clone(),
            assertion_claims(&trusted, &w, &listed, "listed"),
        )
        .await;
    let at_a = redeem_at(
        &a.url_for("/oauth/token"),
        &jag,
        (&listed, &listed_secret),
        &[],
    )
    .await;
    assert_eq!(at_a.0, StatusCode::OK, "{}", at_a.1);
    let at_b = redeem_at(
        &b.url_for("/oauth/token"),
        &jag,
        (&listed, &listed_secret),
        &[],
    )
    .await;
    refused(
        &at_b,
        "invalid_grant",
        "already used",
        "a replay at another replica",
    );
}
