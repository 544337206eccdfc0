//! What one exchange carries through the relay: the gateway, the mount it
//! was sent to, the client's headers and the session they name, resolved
//! once at the start.

use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::gateway::{Gateway, Ids, MountState};
use crate::oauth::resource_server::Access;
use mcp_ui_model::config::SessionMode;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::session_id::{Hello, Owner, Route};
use mcp_ui_overlay::host::{self, HostKind, Target};
use mcp_ui_upstream::telemetry::Traced;
use mcp_ui_wire::jsonrpc::Message;

pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
pub const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// One client exchange on its way through the relay.
pub struct Ctx<'a> {
    pub gw: &'a Arc<Gateway>,
    pub mount: &'a MountState,
    /// The client's request headers.
    pub headers: &'a HeaderMap,
    /// The session the headers name.
    pub session: SessionRef,
    /// The host that initialized that session, when its id says.
    pub(crate) session_host: Option<HostKind>,
    /// What the client said at `initialize`, when its id says.
    pub hello: Option<Hello>,
    /// The host the exchange is for: the session's, until
    /// [`Ctx::judge_host`] reads the request.
    pub host: HostKind,
    /// The request's trace, when tracing is on and it is a single message
    /// (boxed: an exchange's future carries only a pointer when it is off).
    pub trace: Option<Box<Traced>>,
    /// The headers a request under the 2026-07-28 envelope goes upstream
    /// with, when the client's do not say what its body does.
    pub envelope: Option<EnvelopeHeaders>,
    /// Claude's widget domain of the app the client connected to, when the
    /// exchange is an app's with this mount as its member: it is used in
    /// place of the mount's own.
    pub(crate) app_claude_domain: Option<Arc<str>>,
    /// The client capabilities a request of the 2026-07-28 revision
    /// declares in its `_meta` (`None` for a request of the handshake era).
    pub declared: Option<mcp_ui_wire::protocol::Caps>,
    /// The caller the gateway verified (`[auth]`), as a digest of its
    /// issuer and subject: what its conversations and held sessions are
    /// keyed by.
    pub caller: Option<u64>,
    /// When the session its id names started (Unix milliseconds), when the
    /// id says: an id older than a forgotten end is treated as ended.
    pub session_started: Option<u64>,
    /// Who the request is to an endpoint that asks for tokens (`[auth]`):
    /// what [`crate::oauth::resource_server::gate`] lets it reach.
    pub access: Access,
    /// Whom the sessions this exchange opens are for: the caller of
    /// `access`, the one a session id it names must have been made for.
    pub owner: Owner,
    /// [`Ctx::credentials`], worked out at its first use: the caller, the
    /// mount and the headers it depends on do not change within an exchange.
    pub(crate) credentials: std::sync::OnceLock<u64>,
}

/// The headers of a 2026-07-28 request, as its body says them: hosts send
/// the envelope in `_meta` under a header of the 2025 revisions, which an
/// upstream of that revision refuses as a mismatch (-32020).
#[derive(Debug, Clone)]
pub struct EnvelopeHeaders {
    method: HeaderValue,
    name: Option<HeaderValue>,
}

impl EnvelopeHeaders {
    /// For `m`, when its `_meta` names the envelope and the client's headers
    /// say otherwise (or nothing); `None` when they agree already.
    pub fn of(headers: &HeaderMap, m: &Message<'_>) -> Option<EnvelopeHeaders> {
        let header = headers.get(PROTOCOL_HEADER).and_then(|v| v.to_str().ok());
        let body = mcp_ui_wire::protocol::meta_version(m.params)?;
        if !mcp_ui_wire::protocol::is_envelope(&body) {
            return None;
        }
        let method = HeaderValue::from_str(m.method.as_deref()?).ok()?;
        let view = mcp_ui_wire::jsonrpc::params_view(m.params);
        let name = match m.method.as_deref() {
            Some("tools/call" | "prompts/get") => view.name.as_deref().map(name_header),
            Some("resources/read") => view.uri.as_deref().map(name_header),
            _ => None,
        };
        let agree = header == Some(body.as_str())
            && headers.get(METHOD_HEADER) == Some(&method)
            && (name.is_none() || headers.get(NAME_HEADER) == name.as_ref());
        (!agree).then_some(EnvelopeHeaders { method, name })
    }

    /// Set them on an upstream request.
    pub fn apply(&self, out: &mut HeaderMap) {
        out.insert(
            PROTOCOL_HEADER,
            HeaderValue::from_static(mcp_ui_wire::protocol::ENVELOPE),
        );
        out.insert(METHOD_HEADER, self.method.clone());
        match &self.name {
            Some(n) => {
                out.insert(NAME_HEADER, n.clone());
            }
            None => {
                out.remove(NAME_HEADER);
            }
        }
    }
}

/// `Mcp-Name` for `name`: as it is when it is visible ASCII, else in the
/// base64 form 2026-07-28 gives names a header cannot carry.
pub(crate) fn name_header(name: &str) -> HeaderValue {
    use base64::Engine;
    let plain = name.bytes().all(|b| (0x20..0x7f).contains(&b)) && !name.starts_with("=?");
    match plain.then(|| HeaderValue::from_str(name).ok()).flatten() {
        Some(v) => v,
        None => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(name.as_bytes());
            HeaderValue::from_str(&format!("=?base64?{b64}?=")).expect("base64 is visible ASCII")
        }
    }
}

/// Whom a request admitted as `access` opens sessions for.
pub(crate) fn owner_of(access: &Access) -> Owner {
    match access {
        Access::Open => Owner::Open,
        Access::Anonymous => Owner::Anonymous,
        Access::Granted(c) => Owner::caller(&c.verified.issuer, &c.verified.subject),
    }
}

impl<'a> Ctx<'a> {
    /// The credentials the request comes with (`Authorization` and the mount's
    /// `forward_headers`) and the caller the gateway verified, as a digest:
    /// whose a connection is, what a conversation's connection is bound to on
    /// every transport (naming another caller's conversation reaches a
    /// connection of one's own), and what the limits on one caller count by.
    pub(crate) fn credentials(&self) -> u64 {
        *self.credentials.get_or_init(|| self.digest_credentials())
    }

    fn digest_credentials(&self) -> u64 {
        let verified = self.caller.map(u64::to_le_bytes);
        let mut parts: Vec<&[u8]> = Vec::new();
        // The subject the gateway verified, and whatever credentials still go
        // upstream with its requests.
        if let Some(v) = &verified {
            parts.push(b"caller");
            parts.push(v.as_slice());
        }
        for name in
            std::iter::once(&http::header::AUTHORIZATION).chain(&self.mount.config.forward_headers)
        {
            parts.push(name.as_str().as_bytes());
            for v in self.headers.get_all(name) {
                parts.push(v.as_bytes());
            }
        }
        mcp_ui_upstream::session::pool::digest(parts)
    }

    /// The exchange of a request to `mount` with these headers, admitted as
    /// `access`; a session id that is not one of this mount's, or was made
    /// for another caller, is refused as unknown (404, `-32001`): whether
    /// it exists is not said.
    pub fn new(
        gw: &'a Arc<Gateway>,
        mount: &'a MountState,
        headers: &'a HeaderMap,
        access: &Access,
    ) -> Result<Self, Failure> {
        let owner = owner_of(access);
        let (session, session_host, hello, session_started) =
            resolve_session(&gw.ids, mount, headers, owner)?;
        Ok(Ctx {
            gw,
            mount,
            headers,
            session,
            session_host,
            session_started,
            hello,
            host: session_host.unwrap_or_default(),
            trace: None,
            envelope: None,
            app_claude_domain: None,
            declared: None,
            caller: access.digest(),
            access: access.clone(),
            owner,
            credentials: Default::default(),
        })
    }

    /// Sets [`Ctx::host`] from a single request (see [`host::detect`]).
    pub(crate) fn judge_host(&mut self, m: &Message<'_>) {
        let agent = self
            .headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        self.host = host::detect(self.session_host, m.method.as_deref(), m.params, agent);
    }

    /// Whom the exchange's answers are written for.
    pub fn target(&self) -> Target {
        let domain = self
            .app_claude_domain
            .as_ref()
            .or(self.mount.claude_domain.as_ref());
        Target::new(self.host, domain.cloned())
    }

    /// The mount's upstream name.
    pub fn upstream(&self) -> &str {
        &self.mount.config.name
    }
}

/// The client's session, as its header says.
#[derive(Debug)]
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

/// The session a request's id names, with its host, what its client said
/// and when it started.
type Resolved = (SessionRef, Option<HostKind>, Option<Hello>, Option<u64>);

/// The session `headers` name, the host that opened it and what its client
/// said of itself, when its id is this mount's and was made for `owner`.
/// An id of this mount always leads somewhere: a session whose mode changed
/// since its id was sealed is served in the mount's mode now, as one whose
/// upstream side is gone.
fn resolve_session(
    ids: &Ids,
    mount: &MountState,
    headers: &HeaderMap,
    owner: Owner,
) -> Result<Resolved, Failure> {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok((SessionRef::None, None, None, None));
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| ids.opened.open(&ids.key, v))
        .ok_or(Failure::SessionNotFound)?;
    if token.mount != mount.config.name || token.owner != owner {
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
            client: mcp_ui_upstream::session::pool::digest([upstream_session
                .as_deref()
                .unwrap_or("")
                .as_bytes()]),
        },
        (Route::Local { instance, id }, true, _) => SessionRef::Pooled {
            client: mcp_ui_upstream::session::pool::digest([&instance[..], &id.to_be_bytes()]),
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
    Ok((session, token.host, token.hello.clone(), token.started))
}
