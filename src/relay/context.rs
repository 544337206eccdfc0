//! What one exchange carries through the relay: the gateway, the mount it
//! was sent to, the client's headers and the session they name, resolved
//! once at the start.

use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::gateway::{Gateway, MountState};
use crate::host::{self, HostKind, Target};
use crate::jsonrpc::Message;
use crate::outcome::Failure;
use crate::session::Route;
use crate::telemetry::Traced;

pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// One client exchange on its way through the relay.
pub struct Ctx<'a> {
    pub gw: &'a Arc<Gateway>,
    pub mount: &'a MountState,
    /// The client's request headers.
    pub headers: &'a HeaderMap,
    /// The session the headers name.
    pub session: SessionRef,
    /// The host that initialized that session, when its id says.
    pub session_host: Option<HostKind>,
    /// The host the exchange is for: the session's, until
    /// [`Ctx::judge_host`] reads the request.
    pub host: HostKind,
    /// The request's trace, when tracing is on and it is a single message
    /// (boxed: an exchange's future carries only a pointer when it is off).
    pub trace: Option<Box<Traced>>,
}

impl<'a> Ctx<'a> {
    /// The exchange of a request to `mount` with these headers; a session id
    /// that is not one of this mount's is refused.
    pub fn new(
        gw: &'a Arc<Gateway>,
        mount: &'a MountState,
        headers: &'a HeaderMap,
    ) -> Result<Self, Failure> {
        let (session, session_host) = resolve_session(gw, mount, headers)?;
        Ok(Ctx {
            gw,
            mount,
            headers,
            session,
            session_host,
            host: session_host.unwrap_or_default(),
            trace: None,
        })
    }

    /// Sets [`Ctx::host`] from a single request (see [`host::detect`]).
    pub fn judge_host(&mut self, m: &Message<'_>) {
        let agent = self
            .headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        self.host = host::detect(self.session_host, m.method.as_deref(), m.params, agent);
    }

    /// Whom the exchange's answers are written for.
    pub fn target(&self) -> Target {
        Target::new(self.host, self.mount.claude_domain.clone())
    }

    /// The mount's upstream name.
    pub fn upstream(&self) -> &str {
        &self.mount.config.name
    }
}

/// The client's session, as its header says.
pub enum SessionRef {
    None,
    /// An HTTP-upstream session; `received` is the client's id, reused when
    /// the upstream repeats its own.
    Http {
        upstream: Option<String>,
        received: HeaderValue,
    },
    /// A session this process owns, by number.
    Local(u64),
}

fn resolve_session(
    gw: &Gateway,
    mount: &MountState,
    headers: &HeaderMap,
) -> Result<(SessionRef, Option<HostKind>), Failure> {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok((SessionRef::None, None));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| gw.opened_ids.open(&gw.key, v))
        .ok_or(Failure::SessionNotFound)?;
    if token.mount != mount.config.name {
        return Err(Failure::SessionNotFound);
    }
    let session = match (&token.route, mount.is_message()) {
        (Route::Http { upstream_session }, false) => SessionRef::Http {
            upstream: upstream_session.clone(),
            received: value.clone(),
        },
        (Route::Local { instance, id }, true) if *instance == gw.instance => SessionRef::Local(*id),
        (Route::Local { .. }, true) => return Err(Failure::SessionElsewhere),
        _ => return Err(Failure::SessionNotFound),
    };
    Ok((session, token.host))
}
