//! A mount's client session reached in process, without HTTP: how an app
//! endpoint ([`crate::app_endpoint`]) reaches its members. It is the typed
//! exchange the mount's own sessions that own no connection go through
//! ([`super::pooled`]): each message is planned from the overlay snapshot as
//! on the mount's path (a widget answered by the gateway, a listing
//! rewritten), goes to the connection its session, conversation and
//! credentials pick, and comes back as the messages the upstream says about
//! it, ids and progress routed to this session alone.
//!
//! A member whose own clients each own a connection (`sessions =
//! "client"`) gives each app session one of its own, opened on its first
//! request and ended with the app session.

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;

use super::context::{Ctx, SessionRef};
use super::pooled::{self, Mailbox};
use crate::gateway::{Gateway, MountState};
use crate::metrics::MethodId;
use crate::pending::waiting::Reply;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::session_id::Hello;
use mcp_ui_overlay::host::HostKind;
use mcp_ui_wire::jsonrpc::{self, Kind, Message};

/// Who holds a member's session.
#[derive(Debug, Clone, Default)]
pub struct Seat {
    /// The app session's client (`None`: a client without a session).
    pub client: Option<u64>,
    /// What the client said at `initialize`.
    pub hello: Option<Hello>,
    /// The host the client is.
    pub host: Option<HostKind>,
    /// The caller the gateway verified (`[auth]`), as [`Ctx::caller`].
    pub caller: Option<u64>,
}

/// One client session of a mount, as an app endpoint holds it.
pub struct Member<'a> {
    cx: Ctx<'a>,
}

impl<'a> Member<'a> {
    /// A session of `mount` held by `seat` (its client, what it said at
    /// `initialize`, its host and verified caller), its request carrying
    /// `headers` (its credentials and revision), connected to an endpoint
    /// whose Claude widget domain is `claude_domain` (an app's, not the
    /// mount's own).
    pub fn new(
        gw: &'a Arc<Gateway>,
        mount: &'a MountState,
        headers: &'a HeaderMap,
        seat: Seat,
        claude_domain: Option<Arc<str>>,
    ) -> Member<'a> {
        let Seat {
            client,
            hello,
            host,
            caller,
        } = seat;
        let session = client.map_or(SessionRef::None, |client| SessionRef::Pooled { client });
        Member {
            cx: Ctx {
                gw,
                mount,
                headers,
                session,
                session_host: host,
                session_started: None,
                hello,
                host: host.unwrap_or_default(),
                trace: None,
                envelope: None,
                app_claude_domain: claude_domain,
                declared: None,
                caller,
                // The app judged what its caller may reach, and holds the
                // session its id names.
                access: Default::default(),
                owner: Default::default(),
                credentials: Default::default(),
            },
        }
    }

    /// The session opened: the answer to the client's `initialize` (`body`),
    /// as the mount answers its own clients'.
    pub async fn initialize(&mut self, body: &Bytes) -> Result<Bytes, Failure> {
        let m = request_in(body)?;
        let (SessionRef::Pooled { client }, Some(hello)) =
            (&self.cx.session, self.cx.hello.clone())
        else {
            return Err(Failure::SessionNotFound);
        };
        let client = *client;
        self.cx.judge_host(&m);
        let id = m.id.expect("requests have ids");
        match super::prepare::prepare(&self.cx, &m) {
            Err(answer) => Ok(answer),
            Ok(finisher) => pooled::open(&self.cx, client, &hello, id, finisher).await,
        }
    }

    /// A request (`body`): answered at once, or waiting for the upstream.
    pub async fn request(&mut self, body: &Bytes) -> Result<Reply, Failure> {
        let m = request_in(body)?;
        self.cx.judge_host(&m);
        let method = MethodId::of(m.method.as_deref().unwrap_or_default());
        let exchange = self.cx.gw.metrics.exchange(self.cx.mount.index, method);
        let finisher = match super::prepare::prepare(&self.cx, &m) {
            Err(answer) => {
                exchange.finish(mcp_ui_model::outcome::Outcome::Ok);
                return Ok(Reply::Now(answer));
            }
            Ok(f) => f,
        };
        match pooled::exchange(&self.cx, body, &m, finisher).await {
            Ok(Reply::Waiting(w)) => Ok(Reply::Waiting(Box::new(w.counted(exchange)))),
            Ok(now) => {
                exchange.finish(mcp_ui_model::outcome::Outcome::Ok);
                Ok(now)
            }
            Err(f) => {
                exchange.finish(f.outcome());
                Err(f)
            }
        }
    }

    /// A request of the 2026-07-28 revision (`body`), served as the mount
    /// serves its own: validated, stood in for where the upstream speaks
    /// only the handshake era (rounds and subscriptions included), and
    /// answered in the revision's form.
    pub async fn revision(&mut self, body: &Bytes) -> http::Response<mcp_ui_model::reply::Body> {
        let parsed = match jsonrpc::classify(body) {
            Ok(p) => p,
            Err(e) => return Failure::from(e).respond(None),
        };
        if let jsonrpc::Body::Single(m) = &parsed {
            self.cx.judge_host(m);
            let http = matches!(
                self.cx.mount.config.transport,
                mcp_ui_model::config::Transport::Http { .. }
            );
            if http && matches!(self.cx.session, SessionRef::None) {
                self.cx.envelope = super::context::EnvelopeHeaders::of(self.cx.headers, m);
            }
            if m.kind == Kind::Request {
                self.cx.declared =
                    super::revision::declared(m.method.as_deref(), self.cx.headers, m.params);
            }
        }
        let method = MethodId::of_body(&parsed);
        let exchange = self.cx.gw.metrics.exchange(self.cx.mount.index, method);
        exchange.finish_body(super::post_exchange(&self.cx, body, parsed).await)
    }

    /// A notification (`body`).
    pub async fn notify(&self, body: &Bytes) -> Result<(), Failure> {
        let m = jsonrpc::classify_one(body).map_err(Failure::from)?;
        if m.kind != Kind::Notification {
            return Err(not("expected a notification"));
        }
        pooled::not_ended(&self.cx)?;
        pooled::notify(&self.cx, body, &m).await
    }

    /// The client's answer (`body`) to a request the upstream sent it.
    pub fn answer(&self, body: &Bytes) -> Result<(), Failure> {
        let m = jsonrpc::classify_one(body).map_err(Failure::from)?;
        if m.kind != Kind::Response {
            return Err(not("expected a response"));
        }
        pooled::answer_server(&self.cx, body, &m)
    }

    /// What the upstream says to this session on its own, as it comes.
    pub fn mailbox(&self) -> Result<Mailbox, Failure> {
        pooled::mailbox(&self.cx)
    }

    /// The session ended by its client: forgotten, its own connection ended.
    pub fn end(&self) -> Result<(), Failure> {
        pooled::end(&self.cx)
    }

    /// Whether its client ended it.
    pub fn ended(&self) -> bool {
        pooled::not_ended(&self.cx).is_err()
    }

    /// The exchange's context (for what an answer is written for).
    pub fn context(&self) -> &Ctx<'a> {
        &self.cx
    }
}

/// The request `body` holds.
fn request_in(body: &Bytes) -> Result<Message<'_>, Failure> {
    let m = jsonrpc::classify_one(body).map_err(Failure::from)?;
    match (m.kind, m.id) {
        (Kind::Request, Some(_)) => Ok(m),
        _ => Err(not("expected a request")),
    }
}

/// A message that is not what the call takes.
fn not(expected: &'static str) -> Failure {
    Failure::from(jsonrpc::ClassifyError::Invalid(expected))
}
