//! What a 2025 upstream asks of its client (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) while serving a request of the
//! 2026-07-28 revision, which has no server-to-client requests: the request
//! is answered with an `input_required` result (SEP-2322) naming what the
//! upstream asked and carrying a sealed `requestState`, while the
//! upstream's request waits here ("parked", in the rounds table of
//! `pending::Pending`). The client's retry, with its `inputResponses`, is
//! matched to it by that state; its answers go to the upstream as the
//! answers to its requests, and whatever the upstream says next (another
//! round, or the result) answers the retry.
//!
//! A state opens only here, only for the request it was given for (method
//! and name or URI), and only once; a state tampered with, replayed or
//! expired gets `-32602` (`invalid_request_state`). A parked request whose
//! client never comes back is dropped at its deadline, which cancels it
//! upstream. Parked requests live in this process: with several replicas,
//! a retry must reach the one that gave the state (docs/hosts.md).
//!
//! A parked request keeps the connection it waits on: the upstream's next
//! question, after its answers, says on the wire neither which request it
//! is for nor whose, so a request that may be asked never shares its
//! connection with another's round (`relay::pooled`). What that costs is
//! bounded: each caller has at most `limits.max_rounds_per_caller` rounds
//! open (past it, 429 with `Retry-After`), and a connection whose requests
//! are all parked is ended for another caller's connection when a limit
//! leaves no room (after the idle ones: its rounds' clients are told so
//! when they come back), so open rounds never keep another caller out.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::context::Ctx;
use super::deliver::{self, Interrupt};
use crate::gateway::Gateway;
use crate::pending::Rounds;
use crate::pending::parked::Full;
use crate::pending::waiting::{Next, Waiting};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_model::session_id::SessionKey;
use mcp_ui_rewrite::bridge;
use mcp_ui_upstream::upstream::messages::Mux;
use mcp_ui_wire::jsonrpc::{self, Kind, code};
use mcp_ui_wire::protocol::Caps;
use state::{bound, open, seal};

mod state;

use crate::pending::round::{Asked, Parked};

/// The longest a parked request waits for its retry.
const MAX_WAIT: Duration = Duration::from_secs(600);
/// How long the gateway waits for more requests of the upstream once it
/// asked one, so that requests asked together go out in one round.
const GATHER: Duration = Duration::from_millis(25);

/// What answers the request a round was to be given for: the round, or
/// the error that ends it (with `Retry-After` for a bound reached).
struct Given {
    status: StatusCode,
    body: Bytes,
    retry_after: Option<u64>,
}

impl Given {
    fn of(status: StatusCode, body: Bytes) -> Given {
        Given {
            status,
            body,
            retry_after: None,
        }
    }

    fn response(self) -> http::Response<Body> {
        let mut r = reply::json(self.status, self.body);
        if let Some(secs) = self.retry_after {
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
        }
        r
    }
}

/// The answer to a request sent upstream: as [`deliver::answer`] gives
/// it, except that for a request of the revision the gateway stands in
/// for, a request of the upstream's ends it with a round.
pub(super) async fn answer(cx: &Ctx<'_>, mut waiting: Waiting) -> http::Response<Body> {
    let Some(park) = Parking::of(cx, &waiting) else {
        return deliver::answer(cx, waiting, false).await;
    };
    let first = waiting.next().await;
    if let Next::Related(b) = &first
        && is_request(b)
    {
        return park.input_required(b.clone(), waiting).await.response();
    }
    let interrupt = Interrupt {
        takes: is_request,
        then: Box::new(move |b, w| Box::pin(async move { park.input_required(b, w).await.body })),
    };
    deliver::respond_until(cx, first, waiting, None, false, Some(interrupt))
}

/// What puts a request's round in place: where it waits, what the request
/// is and declared, and whose it is.
struct Parking {
    place: Place,
    bound: u64,
    caps: Caps,
    owner: u64,
}

/// What a mount's rounds take of the gateway: the table they wait in, the
/// upstream connection their answers go back on, the key and mount name
/// that seal their state, and how long a request may wait.
struct Place {
    rounds: Arc<Rounds>,
    mux: Arc<Mux>,
    key: SessionKey,
    mount: usize,
    name: String,
    timeout: Duration,
}

impl Place {
    fn of(gw: &Gateway, mount: usize) -> Place {
        Place {
            rounds: gw.pending.rounds.clone(),
            mux: gw.upstreams.pools[mount].mux.clone(),
            key: gw.ids.key.clone(),
            mount,
            name: gw.mounts[mount].config.name.clone(),
            timeout: gw.request_timeout(),
        }
    }
}

/// The capability a request of the upstream needs of the client, as the
/// revision names it, and the method [`Caps::answers`] judges it by.
fn needs(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

fn is_request(b: &[u8]) -> bool {
    jsonrpc::classify_one(b).is_ok_and(|m| m.kind == Kind::Request)
}

fn status(response: &[u8]) -> StatusCode {
    StatusCode::from_u16(bridge::status_of(response)).unwrap_or(StatusCode::OK)
}

impl Parking {
    /// For a waiting request of the revision the gateway stands in for.
    fn of(cx: &Ctx<'_>, waiting: &Waiting) -> Option<Parking> {
        let a = waiting.bridged()?;
        Some(Parking {
            place: Place::of(cx.gw, cx.mount.index),
            bound: bound(&a.method, a.uri.as_deref().or(a.name.as_deref())),
            caps: a.caps,
            owner: cx.credentials(),
        })
    }

    /// The answer to the client for the upstream's request `first` (and
    /// any it asks with it): an `input_required` result, the request
    /// parked; or the error that ends it.
    async fn input_required(self, first: Bytes, mut waiting: Waiting) -> Given {
        let mut asked = Vec::new();
        let mut next = Some(first);
        loop {
            if let Some(b) = next.take() {
                self.take(&b, &mut asked);
            }
            let more = if asked.is_empty() {
                Ok(waiting.next().await)
            } else {
                tokio::time::timeout(GATHER, waiting.next()).await
            };
            match more {
                Ok(Next::Related(b)) if is_request(&b) => next = Some(b),
                // What else the upstream says meanwhile (progress, logs)
                // has no place in an `input_required` result.
                Ok(Next::Related(_)) => {}
                Ok(Next::Response(b)) => return Given::of(status(&b), b),
                Ok(Next::Failed(f)) => {
                    return Given::of(f.status(), f.body(Some(waiting.id())));
                }
                Err(_) => break,
            }
        }
        let mut missing = Map::new();
        for a in &asked {
            if let Some(cap) = needs(&a.method)
                && !self.caps.answers(&a.method)
            {
                missing.insert(cap.to_owned(), json!({}));
            }
        }
        if !missing.is_empty() {
            self.refuse_upstream(&asked, "the client did not declare the capability");
            let names: Vec<&String> = missing.keys().collect();
            let error = json!({
                "code": code::MISSING_CAPABILITY,
                "message": format!("the upstream asks the client for {names:?}, which it did not declare"),
                "data": { "requiredCapabilities": missing },
            });
            return Given::of(
                StatusCode::BAD_REQUEST,
                error_response(waiting.id(), &error),
            );
        }
        self.park(waiting, asked)
    }

    /// Note one request of the upstream's; one the revision has no place
    /// for is answered with an error at once.
    fn take(&self, b: &[u8], asked: &mut Vec<Asked>) {
        let Ok(m) = jsonrpc::classify_one(b) else {
            return;
        };
        let (Some(id), Some(method)) = (m.id, m.method.as_deref()) else {
            return;
        };
        if needs(method).is_none() {
            let refusal = jsonrpc::error_response(
                Some(id),
                code::METHOD_NOT_FOUND,
                &format!("{method}: not asked of a client of the 2026-07-28 revision"),
            );
            answer_upstream(&self.place.mux, &refusal);
            return;
        }
        let key = serde_json::from_str::<String>(id.get()).unwrap_or_else(|_| id.get().to_owned());
        asked.push(Asked {
            key,
            id: id.to_owned(),
            method: method.to_owned(),
            params: m.params.map(RawValue::to_owned),
        });
    }

    fn refuse_upstream(&self, asked: &[Asked], why: &str) {
        for a in asked {
            let refusal = jsonrpc::error_response(Some(&a.id), code::METHOD_NOT_FOUND, why);
            answer_upstream(&self.place.mux, &refusal);
        }
    }

    /// Park the request and give the client its round; past a bound on
    /// open rounds (the caller's, the gateway's), the error that says so.
    fn park(self, waiting: Waiting, asked: Vec<Asked>) -> Given {
        let id = waiting.id().to_owned();
        let wait = self.place.timeout.min(MAX_WAIT);
        let requests = input_requests(&asked);
        waiting.park(true);
        let parked = Box::new(Parked {
            waiting,
            asked,
            mount: self.place.mount,
            bound: self.bound,
            caps: self.caps,
            owner: self.owner,
        });
        let until = tokio::time::Instant::now() + wait;
        let key = match self
            .place
            .rounds
            .insert(self.owner, until, parked, |p| ended(p))
        {
            Ok(key) => key,
            Err((back, full)) => {
                self.refuse_upstream(
                    &back.asked,
                    "its client has too many requests waiting for input",
                );
                return beyond(&id, full);
            }
        };
        // Its deadline: dropped then (which cancels it upstream) unless
        // its retry came.
        let rounds = Arc::downgrade(&self.place.rounds);
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if rounds.upgrade().and_then(|r| r.remove(key)).is_some() {
                tracing::debug!("a request waiting for its client's input expired");
            }
        });
        let result = json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": seal(&self.place.key, &self.place.name, key, self.bound, wait),
        });
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.get());
        Given::of(StatusCode::OK, Bytes::from(body))
    }
}

/// Whether a parked request can no longer be answered: its connection
/// ended (ended to make room, or by its upstream).
fn ended(p: &Parked) -> bool {
    p.waiting.session.is_closed()
}

/// The refusal of request `id`'s round past a bound on open rounds: the
/// caller's (429) or the gateway's (503), with when to try again.
fn beyond(id: &RawValue, full: Full) -> Given {
    let (status, message, retry_after) = match full {
        Full::Owner { max, retry_after } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this caller already has {max} requests waiting for their client's input (limits.max_rounds_per_caller); answer one, or try again once one has expired"
            ),
            retry_after,
        ),
        Full::All { max, retry_after } => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the gateway holds {max} requests waiting for their client's input, as many as it keeps; try again later"
            ),
            retry_after,
        ),
    };
    let error = json!({ "code": code::SERVER_ERROR, "message": message });
    Given {
        status,
        body: error_response(id, &error),
        retry_after: Some(retry_after.as_secs_f64().ceil().max(1.0) as u64),
    }
}

/// `inputRequests`: each request of the upstream's by its key, as
/// `{method, params}`.
fn input_requests(asked: &[Asked]) -> Map<String, Value> {
    asked
        .iter()
        .map(|a| {
            let mut r = Map::new();
            r.insert("method".into(), json!(a.method));
            if let Some(p) = a
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
            {
                r.insert("params".into(), p);
            }
            (a.key.clone(), Value::Object(r))
        })
        .collect()
}

fn error_response(id: &RawValue, error: &Value) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#,
        id.get()
    ))
}

fn refused(id: &RawValue, message: &str, data: Option<Value>) -> http::Response<Body> {
    let mut error = json!({ "code": code::INVALID_PARAMS, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    reply::json(StatusCode::BAD_REQUEST, error_response(id, &error))
}

fn invalid_state(id: &RawValue) -> http::Response<Body> {
    refused(
        id,
        "Invalid or expired requestState",
        Some(json!({ "reason": "invalid_request_state" })),
    )
}

/// `answer` (a response under the id the gateway gave a request of the
/// upstream's) to the connection that asked, under the upstream's id.
fn answer_upstream(mux: &Mux, answer: &[u8]) {
    let Some(id) = jsonrpc::classify_one(answer).ok().and_then(|m| m.id) else {
        return;
    };
    match mux.answer(answer, id) {
        Ok(true) => {}
        Ok(false) => tracing::debug!("an answer for the upstream found its request gone"),
        Err(e) => tracing::debug!("an answer could not reach the upstream: {e}"),
    }
}

/// The parked request `key` of `mount`, taken when `responses` are
/// answers it can use; malformed answers leave it parked, for a retry that
/// is not. `Err`: why the retry is refused, `None` for a state that names
/// no request of the mount's (`invalid_request_state`).
fn take(
    rounds: &Rounds,
    mount: usize,
    key: u64,
    responses: &Map<String, Value>,
) -> Result<Box<Parked>, Option<String>> {
    let taken = rounds.take_if(key, |p| {
        if p.mount != mount {
            return Err(None);
        }
        match p
            .asked
            .iter()
            .find(|a| responses.get(&a.key).is_some_and(|r| !r.is_object()))
        {
            Some(a) => Err(Some(format!(
                "inputResponses['{}'] must be the result of {}",
                a.key, a.method
            ))),
            None => Ok(()),
        }
    });
    match taken {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(None),
        Err(why) => Err(why),
    }
}

/// A retry of a request the gateway gave a round for (its params carry
/// `requestState`): the client's answers go upstream, and what the
/// upstream says next answers it. `None` when it carries no state (a new
/// request).
pub(super) async fn resume(
    cx: &Ctx<'_>,
    m: &jsonrpc::Message<'_>,
    method: &str,
    name: Option<&str>,
) -> Option<http::Response<Body>> {
    #[derive(serde::Deserialize)]
    struct Retry {
        #[serde(rename = "requestState")]
        state: Option<Value>,
        #[serde(rename = "inputResponses", default)]
        responses: Option<Value>,
    }
    let id = m.id?;
    let retry: Retry = serde_json::from_str(m.params?.get()).ok()?;
    let state = retry.state?;
    let gw = cx.gw;
    let Some(key) = state
        .as_str()
        .and_then(|s| open(&gw.ids.key, &cx.mount.config.name, s, bound(method, name)))
    else {
        return Some(invalid_state(id));
    };
    let responses = match retry.responses {
        Some(Value::Object(r)) => r,
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Some(refused(id, "inputResponses must be an object", None)),
    };
    let parked = match take(&gw.pending.rounds, cx.mount.index, key, &responses) {
        Ok(p) => p,
        Err(None) => return Some(invalid_state(id)),
        Err(Some(why)) => return Some(refused(id, &why, None)),
    };
    let Parked {
        mut waiting,
        asked,
        mount,
        bound,
        caps,
        owner,
    } = *parked;
    waiting.park(false);
    waiting.resume(id, gw.request_timeout());
    let mut unanswered = Vec::new();
    for a in asked {
        match responses.get(&a.key) {
            Some(result) => {
                let answer = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
                    a.id.get()
                );
                answer_upstream(&gw.upstreams.pools[mount].mux, answer.as_bytes());
            }
            None => unanswered.push(a),
        }
    }
    if !unanswered.is_empty() {
        // What the client left unanswered is asked again.
        let park = Parking {
            place: Place::of(gw, mount),
            bound,
            caps,
            owner,
        };
        return Some(park.park(waiting, unanswered).response());
    }
    Some(answer(cx, waiting).await)
}
