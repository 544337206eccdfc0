//! The authorization endpoint: the request checked (a bad client or
//! redirect URI is shown to the user, never redirected to), the consent
//! page (unless this browser's user consented to this client and redirect
//! URI before), its answer, and the user sent to sign in at the provider.

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use subtle::ConstantTimeEq;

use super::basics::redirect;
use super::endpoints::Endpoint;
use super::page;
use super::sealed::{self, Login, Purpose, Ticket};
use super::state::AuthorizationServer;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::authorize::{self, Refusal, Resource};
use mcp_ui_identity::authorization_server::params::Params;
use mcp_ui_identity::authorization_server::pkce;
use mcp_ui_model::reply::Body;

/// The cookie binding a consent form to the browser shown it.
const BINDING: &str = "mcp_ui_consent_binding";
/// How long the consent page and the login at the provider may take.
const STEP_SECS: u64 = 600;

/// GET: the request checked; the consent page, or straight to the provider.
pub(super) async fn authorize(
    a: &AuthorizationServer,
    resources: &[Resource],
    req: Request<Incoming>,
) -> Response<Body> {
    let params = Params::parse(req.uri().query().unwrap_or_default().as_bytes());
    let client_id = match authorize::client_id(&params) {
        Ok(id) => id,
        Err(r) => return refused(a, r),
    };
    let known = match a.client(client_id).await {
        Ok(k) => k,
        Err(e) => return refused(a, Refusal::Shown(e)),
    };
    let request = match authorize::check(&params, client_id, &known.client, resources) {
        Ok(r) => r,
        Err(r) => return refused(a, r),
    };
    let now = mcp_ui_model::clock::unix_secs();
    if let Some(earlier) = remembered(a, req.headers(), &request, now) {
        return begin(a, request, false, Some(earlier), StatusCode::FOUND).await;
    }
    let binding = super::basics::random_text(24);
    let ticket = sealed::seal(
        &a.key,
        Purpose::Ticket,
        &Ticket {
            request: request.clone(),
            binding: sealed::digest(&binding),
            expires_at: now + STEP_SECS,
        },
    );
    let action = a.endpoints.path(Endpoint::Authorize);
    let mut r = page::consent(&page::Consent {
        client: &known.client,
        client_id,
        request: &request,
        provider: &a.provider.config.name,
        action: &action,
        ticket: &ticket,
        remember_days: a.config.consent_days,
    });
    if let Some(c) = sealed::set_cookie(BINDING, &binding, &action, STEP_SECS, a.secure(), "Strict")
    {
        r.headers_mut().append(http::header::SET_COOKIE, c);
    }
    r
}

/// POST: the consent page's answer, from the browser it was shown in.
pub(super) async fn decide(a: &AuthorizationServer, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = match super::basics::read_body(req, 16 * 1024).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let form = Params::parse(&body);
    let ticket: Option<Ticket> = form
        .one("ticket")
        .ok()
        .flatten()
        .and_then(|t| sealed::open(&a.key, Purpose::Ticket, t));
    let Some(ticket) = ticket.filter(|t| t.expires_at > mcp_ui_model::clock::unix_secs()) else {
        return page::error(
            StatusCode::BAD_REQUEST,
            "This consent form is not one this server showed, or it was left open for more than ten minutes.",
        );
    };
    let bound = sealed::cookie(&parts.headers, BINDING)
        .map(sealed::digest)
        .is_some_and(|d| bool::from(d.as_bytes().ct_eq(ticket.binding.as_bytes())));
    if !bound {
        return page::error(
            StatusCode::FORBIDDEN,
            "This consent form was not opened in this browser (it may have been sent from another site).",
        );
    }
    let request = ticket.request;
    match form.one("decision").ok().flatten() {
        Some("allow") => {
            let remember =
                form.one("remember").ok().flatten() == Some("1") && a.config.consent_days > 0;
            begin(a, request, remember, None, StatusCode::SEE_OTHER).await
        }
        _ => {
            let denied = OAuthError::new("access_denied", "the user denied the request");
            redirect(
                StatusCode::SEE_OTHER,
                &authorize::error_redirect(
                    &request.redirect_uri,
                    request.state.as_deref(),
                    &denied,
                    a.issuer(),
                ),
            )
        }
    }
}

/// Send the user to sign in at the provider, the login under way kept in
/// a cookie named by its state.
pub(super) async fn begin(
    a: &AuthorizationServer,
    request: authorize::Request,
    remember: bool,
    consented_as: Option<String>,
    status: StatusCode,
) -> Response<Body> {
    let endpoints = match a.provider.endpoints().await {
        Ok(e) => e,
        Err(why) => {
            tracing::warn!("a sign-in could not start: {why}");
            let e = OAuthError::new(
                "temporarily_unavailable",
                "the identity provider cannot be reached; try again later",
            );
            return redirect(
                status,
                &authorize::error_redirect(
                    &request.redirect_uri,
                    request.state.as_deref(),
                    &e,
                    a.issuer(),
                ),
            );
        }
    };
    let login = Login {
        request,
        state: super::basics::random_text(24),
        nonce: super::basics::random_text(24),
        verifier: super::basics::random_text(32),
        expires_at: mcp_ui_model::clock::unix_secs() + STEP_SECS,
        remember,
        consented_as,
    };
    let to = a.provider.authorize_url(
        &endpoints,
        &a.callback_url(),
        &login.state,
        &login.nonce,
        &pkce::challenge_of(&login.verifier),
    );
    let sealed_login = sealed::seal(&a.key, Purpose::Login, &login);
    if sealed_login.len() > sealed::MAX_COOKIE {
        return page::error(
            StatusCode::BAD_REQUEST,
            "This sign-in request is too large for the browser to carry (its redirect URI, state or client id): the application should send shorter ones.",
        );
    }
    let mut r = redirect(status, &to);
    let path = a.endpoints.path(Endpoint::Callback);
    if let Some(c) = sealed::set_cookie(
        &sealed::login_cookie(&login.state),
        &sealed_login,
        &path,
        STEP_SECS,
        a.secure(),
        "Lax",
    ) {
        r.headers_mut().append(http::header::SET_COOKIE, c);
    }
    r
}

/// The user a remembered consent to this client and redirect URI names,
/// if this browser remembers one.
fn remembered(
    a: &AuthorizationServer,
    headers: &http::HeaderMap,
    request: &authorize::Request,
    now: u64,
) -> Option<String> {
    let all = sealed::remembered_in(&a.key, headers);
    let client = sealed::digest(&request.client_id);
    all.into_iter()
        .find(|r| r.client == client && r.redirect_uri == request.redirect_uri && r.until > now)
        .map(|r| r.subject)
}

/// The answer to a refused request: shown, or sent back to the client.
fn refused(a: &AuthorizationServer, r: Refusal) -> Response<Body> {
    match r {
        Refusal::Shown(e) => page::error(StatusCode::BAD_REQUEST, &e.description),
        Refusal::Redirected {
            redirect_uri,
            state,
            error,
        } => redirect(
            StatusCode::FOUND,
            &authorize::error_redirect(&redirect_uri, state.as_deref(), &error, a.issuer()),
        ),
    }
}
