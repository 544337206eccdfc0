//! What every grant of the token endpoint ends in: the token answer (an
//! access token signed for the resource granted, and the family's next
//! refresh token when the client may refresh), or why the grant is refused.

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::json;

use super::basics::oauth_error;
use super::sealed::{self, ProviderTokens, Purpose};
use super::state::AuthorizationServer;
use super::store::Unavailable;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::signing::AccessToken;
use mcp_ui_identity::authorization_server::token::Refresh;
use mcp_ui_model::reply::Body;

/// Why a grant is refused: an OAuth error (400, or 503 when the server
/// cannot answer now), or an answer of its own (a 429, a 503 saying when).
pub(super) enum Refused {
    OAuth(OAuthError),
    Answer(Box<Response<Body>>),
}

impl From<OAuthError> for Refused {
    fn from(e: OAuthError) -> Refused {
        Refused::OAuth(e)
    }
}

impl From<Unavailable> for Refused {
    fn from(why: Unavailable) -> Refused {
        let retry = why.retry_after;
        let e = busy(why);
        match retry {
            None => Refused::OAuth(e),
            Some(secs) => {
                let mut r = oauth_error(StatusCode::SERVICE_UNAVAILABLE, &e);
                if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                Refused::Answer(Box::new(r))
            }
        }
    }
}

/// What a token answer is issued for.
pub(super) struct Grant<'a> {
    pub(super) client_id: &'a str,
    pub(super) subject: &'a str,
    pub(super) resource: &'a str,
    /// The access token's scopes.
    pub(super) scopes: &'a [String],
    /// The authorization's: the refresh token keeps them (RFC 6749 §6).
    pub(super) granted: &'a [String],
    pub(super) auth_time: u64,
    pub(super) family: &'a str,
    /// The new refresh token's place in its family.
    pub(super) generation: u64,
    pub(super) upstream: Option<&'a str>,
    pub(super) refresh: bool,
    /// How it was asked for (`grant_type`), for the log.
    pub(super) by: &'static str,
}

/// The token answer: an access token signed for the resource, and a new
/// refresh token of the family when the client may refresh.
pub(super) fn issue(
    a: &AuthorizationServer,
    g: Grant<'_>,
    now: u64,
) -> Result<serde_json::Value, OAuthError> {
    // An access token carrying the provider's lives no longer than it.
    let provider_expiry = g
        .upstream
        .and_then(|u| sealed::open::<ProviderTokens>(&a.key, Purpose::Upstream, u))
        .and_then(|t| t.expires_at);
    let ttl = match provider_expiry {
        Some(exp) => a
            .config
            .access_token_ttl_secs
            .min(exp.saturating_sub(now).max(1)),
        None => a.config.access_token_ttl_secs,
    };
    let id = super::basics::random_text(18);
    let access = AccessToken {
        issuer: &a.config.issuer,
        subject: g.subject,
        audience: g.resource,
        client_id: g.client_id,
        scopes: g.scopes,
        issued_at: now,
        expires_at: now + ttl,
        id: &id,
        auth_time: g.auth_time,
        upstream: g.upstream,
    };
    let signer = a
        .signers
        .first()
        .ok_or_else(|| OAuthError::new("server_error", "no signing key"))?;
    let token = signer.sign(&access.claims()).map_err(|e| {
        tracing::error!("an access token could not be signed: {e}");
        OAuthError::new("server_error", "the access token could not be signed")
    })?;
    let mut body = json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": ttl,
        "scope": g.scopes.join(" "),
    });
    if g.refresh {
        let refresh = Refresh {
            family: g.family.to_owned(),
            generation: g.generation,
            store: a.store.id().to_owned(),
            client_id: g.client_id.to_owned(),
            subject: g.subject.to_owned(),
            resource: g.resource.to_owned(),
            scopes: g.granted.to_vec(),
            auth_time: g.auth_time,
            expires_at: now + a.config.refresh_token_ttl_secs,
            upstream: g.upstream.map(str::to_owned),
        };
        if let serde_json::Value::Object(m) = &mut body {
            m.insert(
                "refresh_token".into(),
                sealed::seal(&a.key, Purpose::Refresh, &refresh).into(),
            );
        }
    }
    tracing::info!(client = %short(g.client_id), resource = %g.resource, grant = g.by, "issued an access token");
    Ok(body)
}

/// A redemption the store cannot record is refused (never allowed twice).
pub(super) fn busy(why: Unavailable) -> OAuthError {
    tracing::warn!("a redemption could not be recorded: {}", why.why);
    OAuthError::new(
        "temporarily_unavailable",
        "this redemption cannot be recorded now; try again",
    )
}

/// A client id short enough for a log line (sealed ids are long; a URL is
/// said whole).
pub(super) fn short(client_id: &str) -> &str {
    if mcp_ui_identity::authorization_server::client::names_a_document(client_id) {
        return client_id;
    }
    let end = client_id
        .char_indices()
        .nth(16)
        .map_or(client_id.len(), |(i, _)| i);
    &client_id[..end]
}
