//! The provider's answer: the login under way found by its state (in the
//! cookie of the browser that started it), the provider's `iss` checked
//! (RFC 9207), its code exchanged, the user named, and the client sent its
//! own code.

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use subtle::ConstantTimeEq;

use super::basics::redirect;
use super::endpoints::Endpoint;
use super::page;
use super::provider::{Endpoints, Tokens};
use super::sealed::{self, Login, MAX_REMEMBERED, Purpose, REMEMBERED, Remembered, login_cookie};
use super::state::AuthorizationServer;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::authorize;
use mcp_ui_identity::authorization_server::params::Params;
use mcp_ui_identity::authorization_server::token::Code;
use mcp_ui_model::reply::Body;

/// How long a code may wait to be redeemed.
const CODE_SECS: u64 = 60;

pub(super) async fn serve(a: &AuthorizationServer, req: Request<Incoming>) -> Response<Body> {
    let params = Params::parse(req.uri().query().unwrap_or_default().as_bytes());
    let one = |k: &str| params.one(k).ok().flatten();
    let Some(state) = one("state") else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "The identity provider's answer has no state.",
        );
    };
    let cookie_name = login_cookie(state);
    let login: Option<Login> = sealed::cookie(req.headers(), &cookie_name)
        .and_then(|c| sealed::open(&a.key, Purpose::Login, c))
        .filter(|l: &Login| bool::from(l.state.as_bytes().ct_eq(state.as_bytes())));
    let Some(login) = login.filter(|l| l.expires_at > mcp_ui_model::clock::unix_secs()) else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started in this browser, or took more than ten minutes.",
        );
    };
    let mut r = finish(a, &login, &params, req.headers()).await;
    let path = a.endpoints.path(Endpoint::Callback);
    if let Some(c) = sealed::set_cookie(&cookie_name, "", &path, 0, a.secure(), "Lax") {
        r.headers_mut().append(http::header::SET_COOKIE, c);
    }
    r
}

async fn finish(
    a: &AuthorizationServer,
    login: &Login,
    params: &Params,
    headers: &http::HeaderMap,
) -> Response<Body> {
    let request = &login.request;
    let to_client = |error: &'static str, why: String| {
        let e = OAuthError::new(error, why);
        redirect(
            StatusCode::FOUND,
            &authorize::error_redirect(
                &request.redirect_uri,
                request.state.as_deref(),
                &e,
                a.issuer(),
            ),
        )
    };
    let endpoints = match a.provider.endpoints().await {
        Ok(e) => e,
        Err(why) => return to_client("temporarily_unavailable", why),
    };
    let code = match provider_code(a, &endpoints, params) {
        Ok(code) => code,
        Err((error, why)) => return to_client(error, why),
    };
    let (subject, tokens) = match signed_in(a, &endpoints, code, login).await {
        Ok(s) => s,
        Err(why) => {
            tracing::warn!(provider = %a.provider.config.name, "a sign-in failed: {why}");
            return to_client(
                "server_error",
                format!("the sign-in at the identity provider failed: {why}"),
            );
        }
    };
    let now = mcp_ui_model::clock::unix_secs();
    // The provider's tokens travel on, sealed, only where an upstream acts
    // as the user there.
    let upstream = match a.config.provider_tokens {
        true => sealed::ProviderTokens::from_answer(&tokens.answer, now, None)
            .map(|t| sealed::seal(&a.key, Purpose::Upstream, &t)),
        false => None,
    };
    let mut remembered = sealed::remembered_in(&a.key, headers);
    if let Some(earlier) = &login.consented_as
        && *earlier != subject
    {
        // The consent this browser remembered was another user's: ask this
        // one.
        let client = sealed::digest(&request.client_id);
        remembered.retain(|r| !(r.client == client && r.redirect_uri == request.redirect_uri));
        let mut r = redirect(StatusCode::FOUND, &a.authorize_again(request));
        set_remembered(a, &mut r, &remembered);
        return r;
    }
    let code = Code {
        id: super::basics::random_text(18),
        request: request.clone(),
        subject: subject.clone(),
        auth_time: now,
        expires_at: now + CODE_SECS,
        upstream,
    };
    let sealed_code = sealed::seal(&a.key, Purpose::Code, &code);
    let mut r = redirect(
        StatusCode::FOUND,
        &authorize::code_redirect(request, &sealed_code, a.issuer()),
    );
    if login.remember {
        remember(a, &mut r, remembered, request, subject, now);
    }
    r
}

/// The provider's code in its answer `params`, once its issuer is checked
/// (RFC 9207); else the error the client is sent, and why.
fn provider_code<'p>(
    a: &AuthorizationServer,
    endpoints: &Endpoints,
    params: &'p Params,
) -> Result<&'p str, (&'static str, String)> {
    let one = |k: &str| params.one(k).ok().flatten();
    if let Some(issuer) = &a.provider.config.issuer {
        match one("iss") {
            Some(iss) if iss != issuer => {
                tracing::warn!(provider = %issuer, "an answer named another issuer (RFC 9207): refused");
                return Err((
                    "access_denied",
                    "the identity provider's answer names another issuer".into(),
                ));
            }
            None if endpoints.iss_supported => {
                return Err((
                    "access_denied",
                    "the identity provider's answer has no issuer (RFC 9207)".into(),
                ));
            }
            _ => {}
        }
    }
    if let Some(error) = one("error") {
        return Err((
            "access_denied",
            format!("the identity provider said: {error}"),
        ));
    }
    one("code").ok_or_else(|| {
        (
            "server_error",
            "the identity provider's answer has no code".into(),
        )
    })
}

/// The user the provider signed in, and its tokens, for `code`.
async fn signed_in(
    a: &AuthorizationServer,
    endpoints: &Endpoints,
    code: &str,
    login: &Login,
) -> Result<(String, Tokens), String> {
    let tokens = a
        .provider
        .exchange(endpoints, code, &a.callback_url(), &login.verifier)
        .await?;
    a.provider
        .subject(endpoints, &tokens, &login.nonce)
        .await
        .map(|s| (s, tokens))
}

/// Remember that `subject` consented to `request`'s client at its redirect
/// URI, for `consent_days`, with the others still valid.
fn remember(
    a: &AuthorizationServer,
    r: &mut Response<Body>,
    mut remembered: Vec<Remembered>,
    request: &authorize::Request,
    subject: String,
    now: u64,
) {
    let client = sealed::digest(&request.client_id);
    remembered.retain(|r| {
        !(r.client == client && r.redirect_uri == request.redirect_uri) && r.until > now
    });
    remembered.push(Remembered {
        client,
        redirect_uri: request.redirect_uri.clone(),
        subject,
        until: now + u64::from(a.config.consent_days) * 86_400,
    });
    remembered.sort_by_key(|r| std::cmp::Reverse(r.until));
    remembered.truncate(MAX_REMEMBERED);
    set_remembered(a, r, &remembered);
}

/// Remember `all` (newest first) in the browser: as many as fit in a cookie.
fn set_remembered(a: &AuthorizationServer, r: &mut Response<Body>, all: &[Remembered]) {
    let mut kept = all.len();
    let mut value = sealed::seal(&a.key, Purpose::Consent, &all);
    while value.len() > sealed::MAX_COOKIE && kept > 0 {
        kept -= 1;
        value = sealed::seal(&a.key, Purpose::Consent, &&all[..kept]);
    }
    let max_age = u64::from(a.config.consent_days) * 86_400;
    let path = a.endpoints.prefix();
    if let Some(c) = sealed::set_cookie(REMEMBERED, &value, &path, max_age, a.secure(), "Lax") {
        r.headers_mut().append(http::header::SET_COOKIE, c);
    }
}
