//! The token endpoint (OAuth 2.1 §3.2): the client authenticated as it
//! registered, a code redeemed once (its PKCE verifier, redirect URI and
//! resource checked) or a refresh token rotated (its family's generation
//! advanced once; a token of another generation ends the whole family,
//! OAuth 2.1 §4.3.1, RFC 9700 §4.14.2); access tokens signed for the
//! resource granted. And revocation (RFC 7009) of refresh tokens. Each
//! client at each address, and each family's refreshes, are rate limited
//! (`token_endpoint`): past it, 429 with `Retry-After`.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;

use super::basics::{Peer, oauth_error, read_body, too_many};
use super::grant::{Grant, Refused, busy, issue, short};
use super::sealed::{self, ProviderTokens, Purpose};
use super::state::AuthorizationServer;
use super::store::FamilyRef;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::assertion::GRANT_TYPE as ASSERTION;
use mcp_ui_identity::authorization_server::authorize::Resource;
use mcp_ui_identity::authorization_server::family::Rotation;
use mcp_ui_identity::authorization_server::params::Params;
use mcp_ui_identity::authorization_server::token::{self as rules, Code, Presented, Refresh};
use mcp_ui_model::reply::{self, Body};

/// The largest token or revocation request.
const MAX_BODY: usize = 16 * 1024;

pub(super) async fn serve(
    a: &AuthorizationServer,
    resources: &[Resource],
    req: Request<Incoming>,
) -> Response<Body> {
    let (form, presented, client) = match authenticated(a, req).await {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let now = mcp_ui_model::clock::unix_secs();
    let grant = match form.one("grant_type") {
        Ok(g) => g,
        Err(e) => return bad(&e),
    };
    let result = match grant {
        Some("authorization_code") => by_code(a, &form, &presented, &client, now).await,
        Some("refresh_token") if client.client.refresh => {
            by_refresh(a, &form, &presented, now).await
        }
        Some("refresh_token") => Err(Refused::OAuth(OAuthError::new(
            "unauthorized_client",
            "the client did not register the refresh_token grant",
        ))),
        Some(ASSERTION) if a.enterprise.offered() => {
            super::assertion::redeem(a, &form, &presented, &client, resources, now).await
        }
        Some(other) => Err(Refused::OAuth(OAuthError::new(
            "unsupported_grant_type",
            format!(
                "the grant type `{other}` is not supported ({})",
                a.grant_types().join(", ")
            ),
        ))),
        None => Err(Refused::OAuth(OAuthError::request(
            "`grant_type` is missing",
        ))),
    };
    match result {
        Ok(body) => reply::json(StatusCode::OK, Bytes::from(body.to_string())),
        Err(Refused::OAuth(e)) if e.error == "temporarily_unavailable" => {
            oauth_error(StatusCode::SERVICE_UNAVAILABLE, &e)
        }
        Err(Refused::OAuth(e)) => bad(&e),
        Err(Refused::Answer(r)) => *r,
    }
}

/// The form of a token or revocation request and its authenticated client;
/// or the answer refusing it.
async fn authenticated(
    a: &AuthorizationServer,
    req: Request<Incoming>,
) -> Result<(Params, Presented, super::clients::Known), Box<Response<Body>>> {
    let peer = req.extensions().get::<Peer>().map(|p| p.0.ip());
    let (parts, body) = read_body(req, MAX_BODY).await?;
    if !super::basics::content_type_is(&parts, "application/x-www-form-urlencoded") {
        return Err(Box::new(bad(&OAuthError::request(
            "the request is a form (Content-Type: application/x-www-form-urlencoded)",
        ))));
    }
    let form = Params::parse(&body);
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    let basic = authorization.is_some();
    let presented =
        rules::presented(authorization, &form).map_err(|e| Box::new(unauthorized(&e, basic)))?;
    a.rate_token_request(&presented.client_id, peer)?;
    let known = a
        .client(&presented.client_id)
        .await
        .map_err(|e| Box::new(unauthorized(&e, basic)))?;
    rules::authenticate(&presented, &known.client, known.secret.as_deref())
        .map_err(|e| Box::new(unauthorized(&e, basic)))?;
    Ok((form, presented, known))
}

async fn by_code(
    a: &AuthorizationServer,
    form: &Params,
    presented: &Presented,
    client: &super::clients::Known,
    now: u64,
) -> Result<serde_json::Value, Refused> {
    let grant = |why: &str| OAuthError::new("invalid_grant", why);
    let Some(text) = form.one("code")? else {
        return Err(OAuthError::request("`code` is missing").into());
    };
    let code: Code = sealed::open(&a.key, Purpose::Code, text)
        .ok_or_else(|| grant("the code is not one this server issued"))?;
    rules::redeem_code(form, &presented.client_id, &code, now)?;
    let user = sealed::digest(&code.subject);
    let family = FamilyRef {
        id: &code.id,
        user: &user,
        until: now + a.config.refresh_token_ttl_secs,
    };
    if !a
        .store
        .first_use(&format!("code:{}", code.id), code.expires_at, now)
        .await?
    {
        // RFC 6749 §4.1.2: a code used twice revokes what it gave.
        a.store.end(&family, a.store.id(), now).await?;
        tracing::warn!(client = %short(&presented.client_id), "an authorization code was redeemed twice: its refresh tokens are revoked");
        return Err(grant("the code was already used; the tokens it gave are revoked").into());
    }
    if client.client.refresh {
        a.store
            .open(
                &family,
                a.config.sign_ins_per_user,
                mcp_ui_model::clock::unix_millis(),
            )
            .await?;
    }
    let request = &code.request;
    Ok(issue(
        a,
        Grant {
            client_id: &presented.client_id,
            subject: &code.subject,
            resource: &request.resource,
            scopes: &request.scopes,
            granted: &request.scopes,
            auth_time: code.auth_time,
            family: &code.id,
            generation: 0,
            upstream: code.upstream.as_deref(),
            refresh: client.client.refresh,
            by: "authorization_code",
        },
        now,
    )?)
}

async fn by_refresh(
    a: &AuthorizationServer,
    form: &Params,
    presented: &Presented,
    now: u64,
) -> Result<serde_json::Value, Refused> {
    let grant = |why: &str| OAuthError::new("invalid_grant", why);
    let Some(text) = form.one("refresh_token")? else {
        return Err(OAuthError::request("`refresh_token` is missing").into());
    };
    let refresh: Refresh = sealed::open(&a.key, Purpose::Refresh, text)
        .ok_or_else(|| grant("the refresh token is not one this server issued"))?;
    let scopes = rules::redeem_refresh(form, &presented.client_id, &refresh, now)?;
    let user = sealed::digest(&refresh.subject);
    let family = FamilyRef {
        id: &refresh.family,
        user: &user,
        until: now + a.config.refresh_token_ttl_secs,
    };
    let limits = (
        a.config.token_endpoint.refreshes_per_minute,
        a.config.sign_ins_per_user,
    );
    let rotation = a
        .store
        .rotate(
            &family,
            refresh.generation,
            &refresh.store,
            limits,
            mcp_ui_model::clock::unix_millis(),
        )
        .await?;
    let generation = match rotation {
        Rotation::Rotated(f) => f.generation,
        Rotation::TooSoon(ms) => {
            let per_minute = limits.0;
            return Err(Refused::Answer(Box::new(too_many(
                std::time::Duration::from_millis(ms),
                &format!(
                    "this sign-in refreshed more than {per_minute} times a minute (authorization_server.token_endpoint.refreshes_per_minute); the refresh token stays good"
                ),
            ))));
        }
        Rotation::Reused => {
            tracing::warn!(client = %short(&presented.client_id), "a refresh token was used twice: its family is revoked");
            return Err(grant(
                "the refresh token was already used: every token of its family is revoked",
            )
            .into());
        }
        Rotation::Ended => {
            return Err(grant(
                "the refresh token's sign-in has ended (revoked, replaced or forgotten); sign in again",
            )
            .into());
        }
    };
    let upstream = match &refresh.upstream {
        Some(sealed_tokens) => Some(provider_tokens(a, sealed_tokens, now).await?),
        None => None,
    };
    Ok(issue(
        a,
        Grant {
            client_id: &presented.client_id,
            subject: &refresh.subject,
            resource: &refresh.resource,
            scopes: &scopes,
            granted: &refresh.scopes,
            auth_time: refresh.auth_time,
            family: &refresh.family,
            generation,
            upstream: upstream.as_deref(),
            refresh: true,
            by: "refresh_token",
        },
        now,
    )?)
}

/// The provider's tokens for the user, refreshed at the provider when its
/// access token would expire before a new access token of the gateway's:
/// sealed again.
async fn provider_tokens(
    a: &AuthorizationServer,
    sealed_tokens: &str,
    now: u64,
) -> Result<String, OAuthError> {
    let again = |why: &str| OAuthError::new("invalid_grant", format!("{why}; sign in again"));
    let tokens: ProviderTokens = sealed::open(&a.key, Purpose::Upstream, sealed_tokens)
        .ok_or_else(|| again("the identity provider's tokens cannot be read"))?;
    let fresh_enough = tokens
        .expires_at
        .is_none_or(|exp| exp > now + a.config.access_token_ttl_secs);
    if fresh_enough {
        return Ok(sealed_tokens.to_owned());
    }
    let Some(refresh_token) = &tokens.refresh_token else {
        return match tokens.expires_at.is_some_and(|exp| exp > now) {
            true => Ok(sealed_tokens.to_owned()),
            false => Err(again(
                "the identity provider's access token has expired and cannot be refreshed",
            )),
        };
    };
    let endpoints = a.provider.endpoints().await.map_err(|why| {
        tracing::warn!("the provider's tokens could not be refreshed: {why}");
        OAuthError::new(
            "temporarily_unavailable",
            "the identity provider cannot be reached",
        )
    })?;
    match a.provider.refresh(&endpoints, refresh_token).await {
        Ok(answer) => {
            let renewed = ProviderTokens::from_answer(&answer.answer, now, Some(&tokens))
                .ok_or_else(|| again("the identity provider's answer has no access token"))?;
            Ok(sealed::seal(&a.key, Purpose::Upstream, &renewed))
        }
        Err(why) => {
            tracing::info!("the identity provider did not refresh a user's tokens: {why}");
            Err(again(
                "the identity provider no longer accepts this sign-in",
            ))
        }
    }
}

/// Revocation (RFC 7009): a refresh token revokes its family; anything
/// else is answered 200 as well (§2.2: an invalid token is no error).
pub(super) async fn revoke(a: &AuthorizationServer, req: Request<Incoming>) -> Response<Body> {
    let (form, presented, _) = match authenticated(a, req).await {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let now = mcp_ui_model::clock::unix_secs();
    if let Ok(Some(token)) = form.one("token")
        && let Some(refresh) = sealed::open::<Refresh>(&a.key, Purpose::Refresh, token)
        && refresh.client_id == presented.client_id
    {
        let user = sealed::digest(&refresh.subject);
        let family = FamilyRef {
            id: &refresh.family,
            user: &user,
            until: refresh.expires_at.max(now),
        };
        if let Err(e) = a.store.end(&family, &refresh.store, now).await {
            return oauth_error(StatusCode::SERVICE_UNAVAILABLE, &busy(e));
        }
        tracing::info!(client = %short(&presented.client_id), "a refresh token family was revoked");
    }
    reply::status(StatusCode::OK)
}

fn bad(e: &OAuthError) -> Response<Body> {
    oauth_error(StatusCode::BAD_REQUEST, e)
}

/// `invalid_client` is 401, with a Basic challenge when the client tried
/// Basic (RFC 6749 §5.2).
fn unauthorized(e: &OAuthError, basic: bool) -> Response<Body> {
    if e.error != "invalid_client" {
        return bad(e);
    }
    let mut r = oauth_error(StatusCode::UNAUTHORIZED, e);
    if basic {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"token\""),
        );
    }
    r
}
