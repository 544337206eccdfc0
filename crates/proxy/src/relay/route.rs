//! Where a client's request leaves the gateway, decided once: [`post`] and
//! [`bodyless`] read the mount, its session mode, the session the request
//! names, the protocol revision and the request, and say which way out it
//! takes, with the steps that follow a refusal (a session opened again, a
//! session the gateway holds, its own stream). The relay executes the
//! [`Route`] and decides nothing again. Pure: no IO, and the mount's one
//! runtime fact (whether its upstream is known to be stateful) is given.

use http::Method;
use mcp_ui_rewrite::bridge::Refusal;

use super::context::SessionRef;

/// The way out of one exchange.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    /// A request of the 2026-07-28 revision to an upstream of the handshake
    /// era: the gateway stands in for the revision ([`StandIn`]).
    StandIn(StandIn),
    /// Through connections the gateway shares or holds (`relay::pooled`):
    /// `sessions = "shared"` or `"conversation"`, a stdio or legacy SSE
    /// mount's request without a session, a stateful HTTP upstream's.
    Pooled,
    /// Through the session this process owns with a stdio or legacy SSE
    /// upstream for its client (`relay::owned`, `sessions = "client"`).
    Owned,
    /// To a streamable HTTP upstream as it is, on a pooled connection
    /// (`relay::streamable`).
    Streamable {
        /// The client's session is the upstream's: when the upstream says it
        /// forgot it, it is opened again and the request sent once more
        /// (`relay::revive`).
        revive: bool,
        /// What a refusal for want of a session leads to.
        refused: Refused,
    },
}

/// What the gateway does for a 2026-07-28 request its upstream cannot read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StandIn {
    /// `server/discover`: answered from the upstream's `initialize`.
    Discover,
    /// A method the revision has and the handshake era lacks: refused.
    Beyond(Refusal),
    /// `subscriptions/listen`: the gateway's own stream of what it hears.
    Listen,
    /// Any other request: the retry of a round the gateway gave is answered
    /// from the round; the rest goes through a session the gateway holds,
    /// translated into the handshake era.
    Relay,
}

/// After a streamable HTTP upstream refuses a request for want of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The refusal is the client's answer.
    Answer,
    /// A request without a session refused with 400 goes through a session
    /// the gateway holds instead, and the mount's upstream is known to be
    /// stateful from then on (its next such requests go there at once).
    HeldSession,
    /// A GET without a session refused (4xx) gets the gateway's own stream
    /// (ChatGPT's, after a long idle).
    OwnStream,
}

/// What [`post`] reads of a POST.
#[derive(Clone, Copy)]
pub(crate) struct Post<'a> {
    /// The mount's upstream is reached over streamable HTTP.
    pub http: bool,
    /// The mount's clients own their sessions (`sessions = "client"`).
    pub client_sessions: bool,
    /// The mount's upstream is known to refuse requests without a session.
    pub stateful: bool,
    pub session: &'a SessionRef,
    /// A single message (not a batch).
    pub single: bool,
    /// The message is an `initialize` request.
    pub initialize: bool,
    /// The message, sent without a session, is under the 2026-07-28
    /// envelope (its `_meta` or `MCP-Protocol-Version` names that revision).
    pub envelope: bool,
    /// The 2026-07-28 request's method, when the gateway stands in for the
    /// revision because the upstream is of the handshake era.
    pub stood_in: Option<&'a str>,
}

/// The route of a POST.
pub(crate) fn post(p: &Post<'_>) -> Route {
    if let Some(method) = p.stood_in {
        return Route::StandIn(stand_in(method));
    }
    let sessionless = matches!(p.session, SessionRef::None);
    // A single request without a session, other than `initialize`, may be
    // refused by a stateful upstream and then goes through a held session.
    let held = p.single && sessionless && !p.initialize;
    let streamable = |held| Route::Streamable {
        revive: matches!(
            p.session,
            SessionRef::Http {
                upstream: Some(_),
                ..
            }
        ),
        refused: if held {
            Refused::HeldSession
        } else {
            Refused::Answer
        },
    };
    // A request under the 2026-07-28 envelope needs no session: an HTTP
    // upstream that speaks it answers it as it is, whatever the mode.
    if p.http && p.envelope && sessionless {
        return streamable(held);
    }
    if !p.client_sessions {
        return Route::Pooled;
    }
    if !p.http {
        // A request without a session goes to the mount's pool.
        return match sessionless && !p.initialize {
            true => Route::Pooled,
            false => Route::Owned,
        };
    }
    match held && p.stateful {
        true => Route::Pooled,
        false => streamable(held),
    }
}

fn stand_in(method: &str) -> StandIn {
    if method == "server/discover" {
        return StandIn::Discover;
    }
    if let Some(refusal) = mcp_ui_rewrite::bridge::beyond(method) {
        return StandIn::Beyond(refusal);
    }
    match method {
        "subscriptions/listen" => StandIn::Listen,
        _ => StandIn::Relay,
    }
}

/// The route of a GET (the client's stream of what the server says on its
/// own) or a DELETE (the end of a session).
pub(crate) fn bodyless(
    http: bool,
    client_sessions: bool,
    session: &SessionRef,
    method: &Method,
) -> Route {
    if http && client_sessions {
        let revive = method != Method::DELETE
            && matches!(
                session,
                SessionRef::Http {
                    upstream: Some(_),
                    ..
                }
            );
        let refused = match (session, method) {
            (SessionRef::None, &Method::GET) => Refused::OwnStream,
            _ => Refused::Answer,
        };
        return Route::Streamable { revive, refused };
    }
    match session {
        SessionRef::Local { .. } => Route::Owned,
        _ => Route::Pooled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn post_of(session: &SessionRef) -> Post<'_> {
        Post {
            http: true,
            client_sessions: true,
            stateful: false,
            session,
            single: true,
            initialize: false,
            envelope: false,
            stood_in: None,
        }
    }

    fn http_session(upstream: Option<&str>) -> SessionRef {
        SessionRef::Http {
            upstream: upstream.map(str::to_owned),
            received: HeaderValue::from_static("sealed"),
        }
    }

    #[test]
    fn a_request_without_a_session_to_an_http_upstream_may_fall_back_to_a_held_session() {
        let none = SessionRef::None;
        let p = post_of(&none);
        assert_eq!(
            post(&p),
            Route::Streamable {
                revive: false,
                refused: Refused::HeldSession
            }
        );
        assert_eq!(
            post(&Post {
                stateful: true,
                ..p
            }),
            Route::Pooled,
            "a stateful upstream's requests without a session go to a held session at once"
        );
        assert_eq!(
            post(&Post {
                initialize: true,
                stateful: true,
                ..p
            }),
            Route::Streamable {
                revive: false,
                refused: Refused::Answer
            },
            "an initialize opens the client's own session"
        );
        assert_eq!(
            post(&Post { single: false, ..p }),
            Route::Streamable {
                revive: false,
                refused: Refused::Answer
            },
            "a batch is relayed as it is"
        );
    }

    #[test]
    fn a_session_the_upstream_gave_is_revived_when_forgotten() {
        let s = http_session(Some("up-1"));
        assert_eq!(
            post(&post_of(&s)),
            Route::Streamable {
                revive: true,
                refused: Refused::Answer
            }
        );
        let s = http_session(None);
        assert_eq!(
            post(&post_of(&s)),
            Route::Streamable {
                revive: false,
                refused: Refused::Answer
            }
        );
    }

    #[test]
    fn the_envelope_goes_to_an_http_upstream_as_it_is_whatever_the_mode() {
        let none = SessionRef::None;
        let p = Post {
            envelope: true,
            client_sessions: false,
            ..post_of(&none)
        };
        assert_eq!(
            post(&p),
            Route::Streamable {
                revive: false,
                refused: Refused::HeldSession
            }
        );
        assert_eq!(post(&Post { http: false, ..p }), Route::Pooled);
    }

    #[test]
    fn shared_modes_and_message_upstreams() {
        let none = SessionRef::None;
        let local = SessionRef::Local {
            instance: [0; 16],
            id: 1,
        };
        let shared = Post {
            client_sessions: false,
            ..post_of(&none)
        };
        assert_eq!(post(&shared), Route::Pooled);
        let stdio = Post {
            http: false,
            ..post_of(&none)
        };
        assert_eq!(post(&stdio), Route::Pooled);
        assert_eq!(
            post(&Post {
                initialize: true,
                ..stdio
            }),
            Route::Owned
        );
        assert_eq!(
            post(&Post {
                session: &local,
                ..stdio
            }),
            Route::Owned
        );
    }

    #[test]
    fn the_revision_is_stood_in_for_before_any_other_way() {
        let none = SessionRef::None;
        let p = |m| Post {
            stood_in: Some(m),
            ..post_of(&none)
        };
        assert_eq!(
            post(&p("server/discover")),
            Route::StandIn(StandIn::Discover)
        );
        assert_eq!(
            post(&p("subscriptions/listen")),
            Route::StandIn(StandIn::Listen)
        );
        assert_eq!(post(&p("tools/call")), Route::StandIn(StandIn::Relay));
    }

    #[test]
    fn bodyless_requests() {
        let none = SessionRef::None;
        let s = http_session(Some("up-1"));
        let local = SessionRef::Local {
            instance: [0; 16],
            id: 1,
        };
        assert_eq!(
            bodyless(true, true, &none, &Method::GET),
            Route::Streamable {
                revive: false,
                refused: Refused::OwnStream
            }
        );
        assert_eq!(
            bodyless(true, true, &s, &Method::GET),
            Route::Streamable {
                revive: true,
                refused: Refused::Answer
            }
        );
        assert_eq!(
            bodyless(true, true, &s, &Method::DELETE),
            Route::Streamable {
                revive: false,
                refused: Refused::Answer
            },
            "a DELETE never opens the session it ends"
        );
        assert_eq!(bodyless(true, false, &s, &Method::GET), Route::Pooled);
        assert_eq!(bodyless(false, true, &local, &Method::DELETE), Route::Owned);
        assert_eq!(bodyless(false, true, &none, &Method::GET), Route::Pooled);
    }
}
