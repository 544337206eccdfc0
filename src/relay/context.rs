//! What one exchange carries through the relay: the gateway, the mount it
//! was sent to, the client's headers and the session they name, resolved
//! once at the start.

use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::SessionMode;
use crate::gateway::{Gateway, MountState};
use crate::host::{self, HostKind, Target};
use crate::jsonrpc::Message;
use crate::outcome::Failure;
use crate::session::{Hello, Route};
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
    /// What the client said at `initialize`, when its id says.
    pub hello: Option<Hello>,
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
        let (session, session_host, hello) = resolve_session(gw, mount, headers)?;
        Ok(Ctx {
            gw,
            mount,
            headers,
            session,
            session_host,
            hello,
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
    /// A session owned by a gateway process (`instance`), numbered `id`
    /// there: this one's, or one whose id outlived the process that issued
    /// it (opened again here on its next request).
    Local {
        instance: [u8; 16],
        id: u64,
    },
    /// A session on connections the gateway shares, by its client number.
    Pooled {
        client: u64,
    },
}

/// The session `headers` name, the host that opened it and what its client
/// said of itself. An id of this mount always leads somewhere: a session
/// whose mode changed since its id was sealed is served in the mount's
/// mode now, as one whose upstream side is gone.
fn resolve_session(
    gw: &Gateway,
    mount: &MountState,
    headers: &HeaderMap,
) -> Result<(SessionRef, Option<HostKind>, Option<Hello>), Failure> {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok((SessionRef::None, None, None));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| gw.opened_ids.open(&gw.key, v))
        .ok_or(Failure::SessionNotFound)?;
    if token.mount != mount.config.name {
        return Err(Failure::SessionNotFound);
    }
    let pooled = mount.config.sessions.mode != SessionMode::Client;
    let session = match (&token.route, pooled, mount.is_message()) {
        (Route::Http { upstream_session }, false, false) => SessionRef::Http {
            upstream: upstream_session.clone(),
            received: value.clone(),
        },
        (Route::Pooled { client }, true, _) => SessionRef::Pooled { client: *client },
        (Route::Http { upstream_session }, true, _) => SessionRef::Pooled {
            client: crate::session::pool::digest([upstream_session
                .as_deref()
                .unwrap_or("")
                .as_bytes()]),
        },
        (Route::Local { instance, id }, true, _) => SessionRef::Pooled {
            client: crate::session::pool::digest([&instance[..], &id.to_be_bytes()]),
        },
        (Route::Local { instance, id }, false, true) => SessionRef::Local {
            instance: *instance,
            id: *id,
        },
        (Route::Pooled { client }, false, true) => SessionRef::Local {
            instance: [0; 16],
            id: *client,
        },
        _ => return Err(Failure::SessionNotFound),
    };
    Ok((session, token.host, token.hello.clone()))
}
