//! The token endpoint under load and attack: a refresh token's rotation costs the store
//! nothing (one entry per sign-in, its generation advanced), so one client's flood neither
//! grows memory nor refuses another user; reuse still revokes the family, in memory and in
//! a Redis two replicas share; each sign-in's refreshes and each client's requests at one
//! address are rate limited, answered 429 with `Retry-After` and an OAuth error.

use std::time::Duration;

use hyper::StatusCode;
use serde_json::Value;
use support::browser_agent::Browser;
use support::gateway::TestGateway;
use support::peers::setup;

use super::{World, form, public_client, refresh, signed_in, support, world};

/// The codes and families the memory store of `w`'s gateway holds.
fn remembered(w: &World) -> (usize, usize) {
    let r =
        w.gw.gateway
            .oauth
            .authorization_server
            .as_ref()
            .unwrap()
            .remembered();
    (r.codes, r.families)
}

/// A refresh at `url` (a replica's token endpoint): status, `Retry-After`, body.
async fn refresh_at(url: &str, client_id: &str, token: &str) -> (StatusCode, Option<u64>, Value) {
    let (status, h, body) = form(
        url,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", client_id),
        ],
        None,
    )
    .await;
    let retry = h
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry, body)
}

/// The new refresh token of a refresh that must succeed.
fn rotated(i: usize, status: StatusCode, body: &Value) -> String {
    assert_eq!(status, StatusCode::OK, "rotation {i}: {body}");
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// A signed-in client rotating its refresh token over and over: each rotation replaces the
/// family's one entry, so the store holds as much after 300 rotations as after the first
/// token; another user signs in and refreshes meanwhile; reusing an older token still
/// revokes the family, and the family's entry goes with it.
#[tokio::test]
async fn a_refresh_flood_neither_grows_the_store_nor_locks_another_user_out() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |a| a.token_endpoint.refreshes_per_minute = 100_000).await;
    let flooder = public_client(&w).await;
    let (_, tokens) = signed_in(&w, &mut Browser::new(), &flooder).await;
    let at_start = remembered(&w);
    assert_eq!(at_start, (1, 1), "one code redeemed, one family");
    let mut current = tokens["refresh_token"].as_str().unwrap().to_owned();
    let mut previous = current.clone();
    for i in 0..300 {
        let (status, next) = refresh(&w, &flooder, &current).await;
        previous = std::mem::replace(&mut current, rotated(i, status, &next));
    }
    assert_eq!(
        remembered(&w),
        at_start,
        "300 rotations of one family grew the store"
    );
    let other = public_client(&w).await;
    let (_, theirs) = signed_in(&w, &mut Browser::new(), &other).await;
    let (status, body) = refresh(&w, &other, theirs["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(remembered(&w), (2, 2));
    let (status, reused) = refresh(&w, &flooder, &previous).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (status, after) = refresh(&w, &flooder, &current).await;
    assert_eq!(
        (status, after["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "the family is revoked"
    );
    assert_eq!(remembered(&w), (2, 1), "the revoked family is forgotten");
    w.gw.shutdown().await;
}

/// `token_endpoint.refreshes_per_minute` (60 here): a sign-in refreshing faster gets 429
/// with `Retry-After` and an OAuth error, its refresh token untouched (presented again it is
/// no replay, and good once the wait is over); `token_endpoint.per_minute` (100 here): a
/// client flooding the endpoint from one address gets 429 while another client from the
/// same address is served.
#[tokio::test]
async fn refreshes_and_token_requests_past_their_rate_get_429_with_retry_after() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |a| {
        a.token_endpoint.refreshes_per_minute = 60;
        a.token_endpoint.per_minute = 100;
    })
    .await;
    let token_url = w.url("/oauth/token");
    let busy = public_client(&w).await;
    let (_, tokens) = signed_in(&w, &mut Browser::new(), &busy).await;
    let mut current = tokens["refresh_token"].as_str().unwrap().to_owned();
    for i in 0..60 {
        let (status, _, body) = refresh_at(&token_url, &busy, &current).await;
        current = rotated(i, status, &body);
    }
    for _ in 0..2 {
        let (status, retry, body) = refresh_at(&token_url, &busy, &current).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(retry, Some(1), "one refresh a second: {body}");
        assert_eq!(body["error"], "temporarily_unavailable", "{body}");
        assert!(
            body["error_description"]
                .as_str()
                .is_some_and(|d| d.contains("refreshes_per_minute")),
            "{body}"
        );
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, _, body) = refresh_at(&token_url, &busy, &current).await;
    rotated(60, status, &body);

    // Another client floods the endpoint (with refresh tokens it does not have): past 100
    // requests a minute, 429; the first client, at the same address, is still served.
    let flooder = public_client(&w).await;
    let mut statuses = Vec::new();
    for _ in 0..101 {
        statuses.push(refresh_at(&token_url, &flooder, "not-a-token").await);
    }
    assert!(
        statuses[..100]
            .iter()
            .all(|(s, _, b)| *s == StatusCode::BAD_REQUEST && b["error"] == "invalid_grant"),
        "{statuses:?}"
    );
    let (status, retry, body) = &statuses[100];
    assert_eq!(*status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(retry.is_some_and(|s| s >= 1), "{retry:?}");
    assert!(
        body["error_description"]
            .as_str()
            .is_some_and(|d| d.contains("token_endpoint.per_minute")),
        "{body}"
    );
    let (status, _, body) = refresh_at(&token_url, &busy, &current).await;
    assert_ne!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    w.gw.shutdown().await;
}

/// The number of keys in the Redis at `url` (`unix://…`), by `redis-cli`.
fn redis_keys(url: &str) -> usize {
    let socket = url.strip_prefix("unix://").unwrap();
    let out = std::process::Command::new("redis-cli")
        .args(["-s", socket, "DBSIZE"])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("DBSIZE: {text}"))
}

/// Two replicas sharing a Redis: a family rotated at both in turn stays the same keys, its
/// pace is one for both, and a replay at either ends it at both.
#[tokio::test]
async fn in_redis_a_family_is_the_same_keys_whatever_its_rotations_at_either_replica() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let shared = super::Shared::start().await;
    let url = shared.url.clone();
    let w = world(&peers, |a| {
        shared.apply(a);
        a.token_endpoint.refreshes_per_minute = 40;
    })
    .await;
    let b = TestGateway::start_with(w.config.clone()).await;
    let urls = [w.url("/oauth/token"), b.url_for("/oauth/token")];
    let client_id = public_client(&w).await;
    let (_, tokens) = signed_in(&w, &mut Browser::new(), &client_id).await;
    let at_start = redis_keys(&url);
    let mut current = tokens["refresh_token"].as_str().unwrap().to_owned();
    let mut previous = current.clone();
    for i in 0..40 {
        let (status, _, body) = refresh_at(&urls[i % 2], &client_id, &current).await;
        previous = std::mem::replace(&mut current, rotated(i, status, &body));
    }
    assert_eq!(redis_keys(&url), at_start, "40 rotations added keys");
    // One pace for both replicas: the 41st refresh within the minute waits, at either.
    for at in &urls {
        let (status, retry, body) = refresh_at(at, &client_id, &current).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{at}: {body}");
        assert!(retry.is_some_and(|s| (1..=2).contains(&s)), "{retry:?}");
    }
    // The older token, replayed at B, ends the family at A too.
    let (status, _, body) = refresh_at(&urls[1], &client_id, &previous).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (status, _, body) = refresh_at(&urls[0], &client_id, &current).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "the family is revoked at both"
    );
    assert!(redis_keys(&url) < at_start, "the family's key is gone");
    b.shutdown().await;
    w.gw.shutdown().await;
}

/// `pairs` posted to the revocation endpoint the metadata names: the status and body.
async fn revoke(w: &World, pairs: &[(&str, &str)]) -> (StatusCode, Value) {
    let (_, meta) = super::get_json(&w.url("/.well-known/oauth-authorization-server")).await;
    let endpoint = meta["revocation_endpoint"]
        .as_str()
        .expect("a revocation endpoint");
    let (status, _, body) = form(endpoint, pairs, None).await;
    (status, body)
}

/// Revocation (RFC 7009): another client presenting a client's refresh token revokes
/// nothing (200, and the owner refreshes as before); tokens the server does not know, and
/// access tokens, are answered 200 (§2.2); the owner revoking its refresh token ends the
/// sign-in: its next refresh is refused `invalid_grant`. A client that does not
/// authenticate is refused.
#[tokio::test]
async fn a_client_revokes_its_own_refresh_tokens_and_no_one_elses() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |_| {}).await;
    let (owner, other) = (public_client(&w).await, public_client(&w).await);
    let (_, tokens) = signed_in(&w, &mut Browser::new(), &owner).await;
    let first = tokens["refresh_token"].as_str().unwrap();
    let (status, body) = revoke(&w, &[("token", first), ("client_id", &other)]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, renewed) = refresh(&w, &owner, first).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "another client revoked the owner's sign-in: {renewed}"
    );
    let current = renewed["refresh_token"].as_str().unwrap();
    let access = renewed["access_token"].as_str().unwrap();
    for token in ["not-a-token-of-this-server", access] {
        let (status, body) = revoke(&w, &[("token", token), ("client_id", &owner)]).await;
        assert_eq!(status, StatusCode::OK, "{token}: {body}");
    }
    let (status, body) = revoke(&w, &[("token", current), ("client_id", "made-up-client")]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );
    let (status, renewed) = refresh(&w, &owner, current).await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    let current = renewed["refresh_token"].as_str().unwrap();
    let (status, body) = revoke(
        &w,
        &[
            ("token", current),
            ("token_type_hint", "refresh_token"),
            ("client_id", &owner),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, after) = refresh(&w, &owner, current).await;
    assert_eq!(
        (status, after["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "the owner's revocation revoked nothing"
    );
    w.gw.shutdown().await;
}

/// Scopes end to end: a client asking for a scope the resource does not offer is granted
/// only what it offers (the token answer's `scope` and the token's claim agree); the
/// resource server enforces exactly that (`tools:call` is required: a token granted only
/// `notes:write` is refused 403 `insufficient_scope`, one granted `tools:call` is served);
/// a refresh asking for more than was granted is refused `invalid_scope`, one asking for
/// less gets less, and the sign-in keeps what it was granted.
#[tokio::test]
async fn scopes_granted_are_what_the_resource_offers_and_enforces() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |_| {}).await;
    let client_id = public_client(&w).await;
    let granted = |scope: &'static str| {
        let url = super::authorize_url(&w, &client_id, &[("scope", scope)]);
        let w = &w;
        let client_id = client_id.clone();
        async move {
            let back = super::sign_in(w, &mut Browser::new(), &url, "allow").await;
            let code = super::param(&back, "code").unwrap_or_else(|| panic!("{back}"));
            let (status, tokens) = super::redeem(w, &client_id, &code).await;
            assert_eq!(status, StatusCode::OK, "{tokens}");
            let claim = super::claims(tokens["access_token"].as_str().unwrap())["scope"].clone();
            assert_eq!(claim, tokens["scope"], "the claim and the answer agree");
            tokens
        }
    };
    let offered = granted("tools:call admin").await;
    assert_eq!(offered["scope"], "tools:call", "admin is not offered");
    let access = offered["access_token"].as_str().unwrap();
    assert!(super::call_echo(&w, access).await.is_ok());

    let narrow = granted("notes:write").await;
    assert_eq!(narrow["scope"], "notes:write");
    assert_eq!(
        super::call_echo(&w, narrow["access_token"].as_str().unwrap()).await,
        Err(StatusCode::FORBIDDEN),
        "the resource requires tools:call, which this token was not granted"
    );

    let both = granted("tools:call notes:write").await;
    assert_eq!(both["scope"], "tools:call notes:write");
    let token = both["refresh_token"].as_str().unwrap();
    for more in ["tools:call notes:write admin", "openid"] {
        let (status, _, body) = form(
            &w.url("/oauth/token"),
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", token),
                ("client_id", &client_id),
                ("scope", more),
            ],
            None,
        )
        .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_scope")),
            "{more}: {body}"
        );
    }
    let (status, _, less) = form(
        &w.url("/oauth/token"),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", &client_id),
            ("scope", "tools:call"),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{less}");
    assert_eq!(less["scope"], "tools:call");
    assert_eq!(
        super::claims(less["access_token"].as_str().unwrap())["scope"],
        "tools:call"
    );
    let (status, again) = refresh(&w, &client_id, less["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        again["scope"], "tools:call notes:write",
        "the grant is kept"
    );
    w.gw.shutdown().await;
}
