//! Opaque tokens: the introspection answer kept is the provider's, for the client that
//! asked it, and each endpoint holds it to its own policy on every use; the calls to the
//! provider are bounded per issuer in rate and in number at once.

use super::*;

/// `auth` introspecting opaque tokens with the provider's gateway client and `secret`,
/// at `endpoint` when given (else the one the issuer's metadata names).
fn introspecting(secret: &str, endpoint: Option<&str>, scopes: &[&str]) -> AuthConfig {
    AuthConfig {
        introspection: Some(IntrospectionConfig {
            client_id: INTROSPECTION_CLIENT_ID.into(),
            client_secret: Some(secret.into()),
            endpoint: endpoint.map(str::to_owned),
            ..IntrospectionConfig::default()
        }),
        scopes: Some(scopes.iter().map(|s| (*s).to_owned()).collect()),
        ..AuthConfig::default()
    }
}

/// One introspection answer serves every endpoint that asks with the same client, each
/// judging it by its own audience and scopes: a token for `/opaque/a/mcp` (scope
/// `tools:read`) is served there and refused at `/opaque/b/mcp` (another audience, and
/// `admin` required), whichever endpoint sees it first, while the provider is asked once
/// per token. The answer is kept for the client and endpoint that asked: a mount whose
/// client the provider refuses, or whose endpoint cannot be reached, gets no answer
/// another mount's client was given (503, to try again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_answers_are_kept_per_client_and_judged_per_endpoint() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let mount = |name: &str, auth: AuthConfig| {
        let mut m = fixture(name, &format!("/opaque/{name}/mcp"));
        m.auth = own(auth);
        m
    };
    let secret = INTROSPECTION_CLIENT_SECRET;
    // Nothing listens on the discard port: that endpoint cannot be reached.
    let unreachable = "http://127.0.0.1:9/introspect";
    let g = TestGateway::start_public(Config {
        upstreams: vec![
            mount("a", introspecting(secret, None, &["tools:read"])),
            mount("b", introspecting(secret, None, &["admin"])),
            mount("wrong", introspecting("not-the-secret", None, &[])),
            mount("away", introspecting(secret, Some(unreachable), &[])),
        ],
        auth: Some(auth_of(&idp, &[])),
        ..gw::test_config()
    })
    .await;
    let url = |name: &str| g.url_for(&format!("/opaque/{name}/mcp"));
    let metadata = |name: &str| prm_url(&g, &format!("/opaque/{name}/mcp"));
    let asked = async || idp.introspections().await.0;

    // A's token at A, three times: the provider is asked once.
    let token = idp.token(&url("a"), &["tools:read"]).await;
    let before = asked().await;
    for i in 0..3 {
        assert_served(
            &list_with(&url("a"), &token).await,
            &format!("a's token, use {i}"),
        );
    }
    assert_eq!(
        asked().await,
        before + 1,
        "the answer is kept, not asked again"
    );
    // At B it is held to B's policy: another audience.
    let answer = list_with(&url("b"), &token).await;
    assert_invalid(
        &answer,
        &metadata("b"),
        "another resource",
        "a's token at b",
    );
    assert_eq!(
        asked().await,
        before + 1,
        "the same client's answer serves b"
    );
    // B first, then A: the same verdicts.
    let second = idp.token(&url("a"), &["tools:read"]).await;
    let answer = list_with(&url("b"), &second).await;
    assert_invalid(
        &answer,
        &metadata("b"),
        "another resource",
        "a's token at b first",
    );
    assert_served(&list_with(&url("a"), &second).await, "a's token after b");
    assert_eq!(asked().await, before + 2);

    // An answer given to the gateway's client is not one for a client the provider
    // refuses, nor for an endpoint that cannot be reached.
    for name in ["wrong", "away"] {
        let theirs = idp.token(&url(name), &["tools:call"]).await;
        let answer = list_with(&url("a"), &theirs).await;
        assert_invalid(
            &answer,
            &metadata("a"),
            "another resource",
            &format!("{name}'s at a"),
        );
        let (status, headers, body) = list_with(&url(name), &theirs).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{name}: an answer kept for another client or endpoint: {}",
            text(&body)
        );
        assert!(!headers.contains_key("www-authenticate"), "{headers:?}");
        assert!(headers.contains_key("retry-after"), "{headers:?}");
    }

    g.shutdown().await;
    eprintln!(
        "introspection_answers_are_kept_per_client_and_judged_per_endpoint: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

/// Junk opaque tokens cannot make the gateway flood the provider: at most
/// `calls_per_minute` introspection calls a minute to an issuer and at most
/// `max_concurrent_calls` at once (the others wait their turn). Past the rate a token the
/// gateway has no answer for gets 503 with `Retry-After`, never a 401 that would send a
/// valid user to sign in again, while a token already answered is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_calls_are_bounded_per_issuer() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = Instant::now();
    let idp = Idp::start(&peers).await;
    let mut auth = introspecting(INTROSPECTION_CLIENT_SECRET, None, &[]);
    if let Some(i) = auth.introspection.as_mut() {
        i.calls_per_minute = Some(4);
        i.max_concurrent_calls = Some(1);
    }
    let mut up = fixture("bounded", "/opaque/mcp");
    up.auth = own(auth);
    let g = TestGateway::start_public(Config {
        upstreams: vec![up],
        auth: Some(auth_of(&idp, &[])),
        ..gw::test_config()
    })
    .await;
    let url = g.url_for("/opaque/mcp");
    let metadata = prm_url(&g, "/opaque/mcp");

    // Three junk tokens at once, each answer slow: one call at a time.
    idp.slow_introspection(Duration::from_millis(300)).await;
    let junk = |i: usize| format!("junk-opaque-token-{i:04}-0123456789abcdef");
    let at = url.as_str();
    let answers = futures_util::future::join_all(
        (0..3).map(|i| async move { list_with(at, &junk(i)).await }),
    )
    .await;
    for (i, answer) in answers.iter().enumerate() {
        assert_invalid(answer, &metadata, "not active", &format!("junk {i}"));
    }
    let (calls, most_at_once) = idp.introspections().await;
    assert_eq!((calls, most_at_once), (3, 1), "calls, most at once");
    idp.slow_introspection(Duration::ZERO).await;

    // The fourth call of the minute: a real token, served.
    let token = idp.token(&url, &["tools:call"]).await;
    assert_served(&list_with(&url, &token).await, "a real token");
    // Past the rate: 503 with when to try again, no challenge, and no call.
    let mut refused = 0;
    for i in 10..16 {
        let (status, headers, body) = list_with(&url, &junk(i)).await;
        if status == StatusCode::UNAUTHORIZED {
            continue; // the budget refilled meanwhile (one call every 15 s)
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{}", text(&body));
        assert!(!headers.contains_key("www-authenticate"), "{headers:?}");
        let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=15).contains(&retry), "Retry-After {retry}");
        assert!(text(&body).contains("calls_per_minute"), "{}", text(&body));
        refused += 1;
    }
    let (calls, _) = idp.introspections().await;
    assert_eq!(calls, 4 + (6 - refused), "only the refills were spent");
    assert!(refused >= 5, "{refused} of 6 refused");
    // The answer already kept still serves its token.
    assert_served(&list_with(&url, &token).await, "the real token again");

    g.shutdown().await;
    eprintln!(
        "introspection_calls_are_bounded_per_issuer: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
