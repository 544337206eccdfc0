//! A POST to an app: one message, answered by the app (`initialize`,
//! `ping`, the listings) or routed to the member it concerns.

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::member::{self, raw_result_of, result_of, session_of};
use super::{oauth, stream};
use crate::combine::names::{Collision, collision_message};
use crate::combine::{AppState, Kind, Owner, cursor, ids, init, list};
use crate::gateway::Gateway;
use crate::jsonrpc::{self, Kind as MessageKind, code};
use crate::outcome::Failure;
use crate::relay::context::SESSION_HEADER;
use crate::relay::deliver::{self, Next, Reply, Shape};
use crate::relay::member::Member;
use crate::reply::{self, Body};
use crate::session::Hello;
use crate::session::app::AppSession;
use crate::upstream::budget::Permit;

/// Most pages of one member read to learn its names.
const MAX_LEARN_PAGES: usize = 100;

/// One exchange with an app.
struct Exchange<'a> {
    gw: &'a Arc<Gateway>,
    app: &'a AppState,
    headers: &'a HeaderMap,
    session: AppSession,
    /// The request's id, as JSON.
    id: Value,
}

pub async fn post(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let message = match jsonrpc::classify(&body) {
        Ok(jsonrpc::Body::Single(m)) => m,
        Ok(jsonrpc::Body::Batch(_)) => {
            return reply::json(
                StatusCode::BAD_REQUEST,
                jsonrpc::error_response(
                    None,
                    code::INVALID_REQUEST,
                    "Invalid Request: an app endpoint takes one message per POST, not a batch",
                ),
            );
        }
        Err(e) => return Failure::from(e).respond(None),
    };
    let id: Value = message
        .id
        .and_then(|id| serde_json::from_str(id.get()).ok())
        .unwrap_or(Value::Null);
    let method = message.method.as_deref().unwrap_or_default().to_owned();
    let params: Value = message
        .params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    let kind = message.kind;
    if kind == MessageKind::Request && method == "initialize" {
        let hello = Hello::of_initialize(Some(&params));
        let agent = headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        let host = crate::host::detect(None, Some("initialize"), message.params, agent);
        return initialize(gw, app, headers, body, id, hello, host).await;
    }
    // A session's requests waiting upstream are bounded, as on a mount.
    let _in_flight = match headers.get(SESSION_HEADER) {
        Some(sid) if kind == MessageKind::Request => {
            let max = gw.limits.max_in_flight_per_session;
            match gw.in_flight.try_enter(sid.as_bytes(), max) {
                Some(guard) => Some(guard),
                None => return Failure::TooManyInFlight { max }.respond(message.id),
            }
        }
        _ => None,
    };
    let session = match session_of(gw, app, headers) {
        Ok(s) => s,
        Err(f) => return f.respond(None),
    };
    let x = Exchange {
        gw,
        app,
        headers,
        session,
        id,
    };
    match kind {
        MessageKind::Notification => {
            x.broadcast(&body).await;
            reply::status(StatusCode::ACCEPTED)
        }
        MessageKind::Response => x.answer_member(&body),
        MessageKind::Request => x.request(&method, &params, body).await,
    }
}

/// `initialize`: every member's session opened at once, their results
/// united, the session sealed into the app's id.
async fn initialize(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &HeaderMap,
    body: Bytes,
    id: Value,
    hello: Hello,
    host: crate::host::HostKind,
) -> Response<Body> {
    let mut session = AppSession {
        app: app.config.name.clone(),
        client: Some(crate::relay::pooled::new_client()),
        host: Some(host),
        started: crate::session::id::now_millis(),
        hello: Some(hello),
        failed: vec![false; app.config.members.len()],
    };
    let bound = gw.app_member_timeout();
    let asks = (0..app.config.members.len()).map(|i| {
        let member = member::of(gw, app, headers, &session, i);
        let body = &body;
        async move {
            match member {
                Some(mut m) => Some(
                    tokio::time::timeout(bound, m.initialize(body))
                        .await
                        .map_err(|_| silent(bound, "initialize")),
                ),
                None => None,
            }
        }
    });
    let answers = futures_util::future::join_all(asks).await;
    let mut results = Vec::new();
    let mut problems = Vec::new();
    let mut refused = None;
    for (i, answer) in answers.into_iter().enumerate() {
        let m = &app.config.members[i];
        let why = match answer {
            None => "no such mount".to_owned(),
            Some(Err(why)) => why,
            Some(Ok(Ok(bytes))) => match result_of(&bytes) {
                Ok(result) => {
                    results.push((m.upstream.as_str(), result));
                    continue;
                }
                Err(why) => why,
            },
            // A member that wants the client to sign in: the client signs
            // in to the app (one token for every member), then initializes
            // again.
            Some(Ok(Err(f))) if oauth::is_refusal(&f) => {
                refused.get_or_insert(f);
                continue;
            }
            Some(Ok(Err(f))) => f.to_string(),
        };
        tracing::warn!(app = %app.config.name, member = %m.upstream, error = %why,
            "app member not initialized: its tools are unavailable in this session");
        problems.push(format!("{}: {why}", m.upstream));
        session.failed[i] = true;
    }
    if let Some(f) = refused {
        let prm = oauth::prm_url(gw, app, headers);
        return oauth::refusal(prm.as_deref(), f, raw(&id).as_deref());
    }
    let borrowed: Vec<(&str, &Value)> = results.iter().map(|(n, r)| (*n, r)).collect();
    let Some(result) = init::initialize(&app.config.name, &borrowed) else {
        let message = format!(
            "app `{}`: no member could be initialized ({})",
            app.config.name,
            problems.join("; ")
        );
        return reply::json(
            StatusCode::OK,
            jsonrpc::error_response(raw(&id).as_deref(), code::SERVER_ERROR, &message),
        );
    };
    let sid = session.seal(&gw.key);
    let mut r = answer(&id, &result);
    if let Ok(v) = http::HeaderValue::from_str(&sid) {
        r.headers_mut().insert(SESSION_HEADER, v);
    }
    r
}

impl<'a> Exchange<'a> {
    async fn request(&self, method: &str, params: &Value, body: Bytes) -> Response<Body> {
        if let Some(kind) = Kind::of_list(method) {
            return self.list(kind, method, params).await;
        }
        match method {
            "ping" => answer(&self.id, &json!({})),
            "tools/call" | "prompts/get" => {
                let kind = if method == "tools/call" {
                    Kind::Tools
                } else {
                    Kind::Prompts
                };
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match self.owner(kind, name).await {
                    Ok((m, own)) => self.routed(m, Some((name, &own)), params, body).await,
                    Err(r) => r,
                }
            }
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                let uri = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match self.app.resource_owner(uri) {
                    Some(m) => self.routed(m, None, params, body).await,
                    None => self.in_turn(body, uri).await,
                }
            }
            "completion/complete" => {
                let r = params.get("ref");
                let prompt = r
                    .filter(|r| r.get("type").and_then(Value::as_str) == Some("ref/prompt"))
                    .and_then(|r| r.get("name"))
                    .and_then(Value::as_str);
                match prompt {
                    Some(name) => match self.owner(Kind::Prompts, name).await {
                        Ok((m, own)) => {
                            let mut p = params.clone();
                            p["ref"]["name"] = Value::String(own);
                            self.routed(m, None, &p, with_params(&body, &p)).await
                        }
                        Err(r) => r,
                    },
                    None => self.in_turn(body, "").await,
                }
            }
            "logging/setLevel" => {
                self.ask_all(&body).await;
                answer(&self.id, &json!({}))
            }
            _ => self.error(
                code::METHOD_NOT_FOUND,
                &format!(
                    "Method not found: {method} (app `{}`)",
                    self.app.config.name
                ),
            ),
        }
    }

    /// A listing page: the members' pages from the cursor's position, up to
    /// and including the first that has more.
    async fn list(&self, kind: Kind, method: &str, params: &Value) -> Response<Body> {
        let members = &self.app.config.members;
        let given = params.get("cursor").and_then(Value::as_str);
        let app = &self.app.config.name;
        let mut at = match cursor::decode(&self.gw.key, app, given, members.len()) {
            Ok(p) => p,
            Err(e) => return self.error(code::INVALID_PARAMS, &e),
        };
        let mut items = Vec::new();
        // The members' pages' bytes, held against the memory budget until
        // the answer is written.
        let mut held = Vec::new();
        let mut next = None;
        let (mut asked, mut left_out) = (0, Vec::new());
        while at.member < members.len() {
            asked += 1;
            let i = at.member;
            match self
                .member_page(i, kind, method, params, at.upstream.as_deref())
                .await
            {
                Ok((page, permit)) => {
                    held.push(permit);
                    let first = at.upstream.is_none();
                    if let Err(c) = self
                        .app
                        .record(kind, i, first, &page.names, &page.widget_uris)
                    {
                        let message = self.collision(kind, &c);
                        tracing::error!("{message}");
                        return self.error(code::SERVER_ERROR, &message);
                    }
                    items.extend(page.items);
                    if let Some(n) = page.next {
                        next = Some(cursor::encode(
                            &self.gw.key,
                            app,
                            &cursor::Position {
                                member: i,
                                upstream: Some(n),
                            },
                        ));
                        break;
                    }
                }
                Err(Miss::Refused(f)) => {
                    let prm = oauth::prm_url(self.gw, self.app, self.headers);
                    return oauth::refusal(prm.as_deref(), f, raw(&self.id).as_deref());
                }
                Err(Miss::Full(f)) => return f.respond(raw(&self.id).as_deref()),
                // The page a client's cursor names could not be read: an
                // error, never an empty page that would end its listing.
                Err(Miss::Problem(why)) if at.upstream.is_some() => {
                    return self.error(
                        code::SERVER_ERROR,
                        &format!(
                            "app `{app}`: member `{}` could not give the page this cursor names: {why}",
                            members[i].upstream
                        ),
                    );
                }
                Err(Miss::Problem(why)) => {
                    tracing::debug!(app = %self.app.config.name, member = %members[i].upstream, error = %why, "{method}: member left out");
                    left_out.push(format!("`{}`: {why}", members[i].upstream));
                }
            }
            at = cursor::Position {
                member: i + 1,
                upstream: None,
            };
        }
        // Nothing but failures is no listing: an empty page would say the
        // members have nothing.
        if items.is_empty() && next.is_none() && !left_out.is_empty() && left_out.len() == asked {
            return self.error(
                code::SERVER_ERROR,
                &format!(
                    "app `{app}`: no member could give its {method} page ({})",
                    left_out.join("; ")
                ),
            );
        }
        let body = list::response_text(&self.id.to_string(), kind, &items, next.as_deref());
        drop(items);
        let r = reply::json(StatusCode::OK, Bytes::from(body));
        drop(held);
        r
    }

    /// One member's page of a listing, prefixed.
    async fn member_page(
        &self,
        i: usize,
        kind: Kind,
        method: &str,
        params: &Value,
        at: Option<&str>,
    ) -> Result<(list::Page, Permit), Miss> {
        let m = &self.app.config.members[i];
        let mut member = self.member(i).map_err(Miss::Problem)?;
        let mut p = match params {
            Value::Object(_) => params.clone(),
            _ => json!({}),
        };
        match at {
            Some(c) => p["cursor"] = Value::String(c.to_owned()),
            None => {
                if let Some(o) = p.as_object_mut() {
                    o.remove("cursor");
                }
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": p});
        let bound = self.gw.app_member_timeout();
        let asked = async {
            match member.request(&Bytes::from(body.to_string())).await {
                Ok(reply) => reply.response().await,
                Err(f) => Err(f),
            }
        };
        let answer = tokio::time::timeout(bound, asked)
            .await
            .map_err(|_| Miss::Problem(silent(bound, method)))?;
        let answer = match answer {
            Ok(a) => a,
            Err(f) if oauth::is_refusal(&f) => return Err(Miss::Refused(f)),
            Err(f) => return Err(Miss::Problem(f.to_string())),
        };
        // The answer and the page made of it count against the memory
        // budget of answers read whole, as on the member's own path.
        let permit = self
            .gw
            .buffers
            .try_take(answer.len().saturating_mul(2))
            .ok_or_else(|| {
                Miss::Full(Failure::BufferFull {
                    upstream: m.upstream.clone(),
                    at_least: answer.len(),
                    limit: self.gw.buffers.max(),
                })
            })?;
        let result = raw_result_of(&answer).map_err(Miss::Problem)?;
        let page = list::page(result, kind, &m.prefix)
            .ok_or_else(|| Miss::Problem("not a listing".into()))?;
        Ok((page, permit))
    }

    /// The member owning `name`, listing the members' names first when it is
    /// not known yet.
    async fn owner(&self, kind: Kind, name: &str) -> Result<(usize, String), Response<Body>> {
        let mut owner = self.app.owner(kind, name);
        let mut refused = None;
        if owner == Owner::Unknown && self.app.learn_turn(kind, std::time::Instant::now()) {
            refused = self.learn(kind).await;
            owner = self.app.owner(kind, name);
        }
        // A member that could not be asked for its names without signing
        // in: the client signs in, then calls again.
        if owner == Owner::Unknown
            && let Some(f) = refused
        {
            let prm = oauth::prm_url(self.gw, self.app, self.headers);
            if kind == Kind::Tools
                && self.app.config.auth_challenge == "in-band"
                && let (Some(id), Some(prm)) = (raw(&self.id), prm.as_deref())
            {
                return Err(oauth::in_band_refusal(&id, prm, &f));
            }
            return Err(oauth::refusal(prm.as_deref(), f, raw(&self.id).as_deref()));
        }
        match owner {
            Owner::Member(m, own) => Ok((m, own)),
            Owner::Ambiguous(ms) => {
                let names: Vec<String> = ms
                    .iter()
                    .map(|m| format!("`{}`", self.app.member_name(*m)))
                    .collect();
                Err(self.error(
                    code::INVALID_PARAMS,
                    &format!(
                        "app `{}`: {} `{name}` is the own name of a {0} of {}; call it by the name the app lists",
                        self.app.config.name,
                        kind.noun(),
                        names.join(" and ")
                    ),
                ))
            }
            Owner::Collided(c) => {
                let message = self.collision(kind, &c);
                Err(self.error(code::SERVER_ERROR, &message))
            }
            // A name under the prefix of a member this session left out:
            // that member is named, not an unknown tool.
            Owner::Unknown
                if let Some(i) = self.app.config.members.iter().position(|m| {
                    !m.prefix.is_empty() && name.starts_with(m.prefix.as_str())
                }) && self.session.failed.get(i).copied().unwrap_or(false) =>
            {
                Err(self.error(
                    code::SERVER_ERROR,
                    &format!(
                        "app `{}`: {} `{name}` belongs to member `{}`, which is not available in this session (it could not be initialized when the session began; initialize again to retry)",
                        self.app.config.name,
                        kind.noun(),
                        self.app.member_name(i)
                    ),
                ))
            }
            Owner::Unknown => Err(self.error(
                code::INVALID_PARAMS,
                &format!(
                    "Unknown {}: {name} (no member of app `{}` lists it)",
                    kind.noun(),
                    self.app.config.name
                ),
            )),
        }
    }

    /// Read every member's whole listing of `kind`, to learn its names; the
    /// first member's refusal for authorization, if any.
    async fn learn(&self, kind: Kind) -> Option<Failure> {
        let method = kind.list_method();
        let mut refused = None;
        for i in 0..self.app.config.members.len() {
            let mut at: Option<String> = None;
            for _ in 0..MAX_LEARN_PAGES {
                let page = match self
                    .member_page(i, kind, method, &json!({}), at.as_deref())
                    .await
                {
                    Ok((page, _permit)) => page,
                    Err(Miss::Refused(f)) => {
                        refused.get_or_insert(f);
                        break;
                    }
                    Err(Miss::Problem(_) | Miss::Full(_)) => break,
                };
                if let Err(c) =
                    self.app
                        .record(kind, i, at.is_none(), &page.names, &page.widget_uris)
                {
                    tracing::error!("{}", self.collision(kind, &c));
                    break;
                }
                match page.next {
                    Some(n) => at = Some(n),
                    None => break,
                }
            }
        }
        refused
    }

    /// What the app says of two members listing one name.
    fn collision(&self, kind: Kind, c: &Collision) -> String {
        collision_message(
            &self.app.config.name,
            kind.noun(),
            &c.name,
            self.app.member_name(c.first),
            self.app.member_name(c.second),
        )
    }

    /// The session with member `i`, or why there is none.
    fn member(&self, i: usize) -> Result<Member<'a>, String> {
        member::of(self.gw, self.app, self.headers, &self.session, i).ok_or_else(|| {
            format!(
                "app `{}`: member `{}` is not available in this session (it could not be initialized when the session began; initialize again to retry)",
                self.app.config.name,
                self.app.member_name(i)
            )
        })
    }

    /// A member's failure, as the app answers it: a refusal for
    /// authorization relayed (pointed at the app's metadata), anything else
    /// an error naming the member.
    fn member_failed(&self, i: usize, f: Failure) -> Response<Body> {
        if oauth::is_refusal(&f) {
            let prm = oauth::prm_url(self.gw, self.app, self.headers);
            return oauth::refusal(prm.as_deref(), f, raw(&self.id).as_deref());
        }
        let message = format!(
            "app `{}`: member `{}` failed: {f}",
            self.app.config.name,
            self.app.member_name(i),
        );
        self.error(code::SERVER_ERROR, &message)
    }

    /// The request relayed to member `i` (its name as the member knows it
    /// when `rename` says (listed, own)), its answer passed on: JSON, or the
    /// member's messages about it as they come, its requests' ids tagged
    /// and in-band challenges pointed at the app's metadata.
    async fn routed(
        &self,
        i: usize,
        rename: Option<(&str, &str)>,
        params: &Value,
        body: Bytes,
    ) -> Response<Body> {
        let mut member = match self.member(i) {
            Ok(m) => m,
            Err(why) => return self.error(code::SERVER_ERROR, &why),
        };
        let body = match rename {
            Some((listed, own)) if listed != own => {
                let mut p = params.clone();
                p["name"] = Value::String(own.to_owned());
                with_params(&body, &p)
            }
            _ => body,
        };
        let challenges = oauth::in_band_target(self.gw, self.app, self.headers);
        let shape: Shape = Arc::new(move |message: Bytes, _last: bool| {
            let message = stream::tagged(i, message);
            match &challenges {
                Some((prm, base)) => oauth::in_band(&message, prm, base).unwrap_or(message),
                None => message,
            }
        });
        let mut waiting = match member.request(&body).await {
            Ok(Reply::Now(b)) => return reply::json(StatusCode::OK, shape(b, true)),
            Ok(Reply::Waiting(w)) => *w,
            Err(f) => return self.member_failed(i, f),
        };
        match waiting.next().await {
            Next::Failed(f) => self.member_failed(i, f),
            first => deliver::respond(member.context(), first, waiting, Some(shape), false),
        }
    }

    /// A request no listing names an owner for: each member in turn, the
    /// first result answering.
    async fn in_turn(&self, body: Bytes, what: &str) -> Response<Body> {
        let mut last = None;
        let mut refused: Option<Failure> = None;
        for i in 0..self.app.config.members.len() {
            let Ok(mut member) = self.member(i) else {
                continue;
            };
            let said = match member.request(&body).await {
                Ok(reply) => reply.response().await,
                Err(f) => Err(f),
            };
            let why = match said.as_deref().map(result_of) {
                Ok(Ok(result)) => return answer(&self.id, &result),
                Ok(Err(why)) => why,
                Err(f) => f.to_string(),
            };
            last = Some(format!("{}: {why}", self.app.member_name(i)));
            if let Err(f) = said
                && oauth::is_refusal(&f)
            {
                refused.get_or_insert(f);
            }
        }
        if let Some(f) = refused {
            let prm = oauth::prm_url(self.gw, self.app, self.headers);
            return oauth::refusal(prm.as_deref(), f, raw(&self.id).as_deref());
        }
        self.error(
            code::RESOURCE_NOT_FOUND,
            &format!(
                "no member of app `{}` answered for {what} ({})",
                self.app.config.name,
                last.unwrap_or_else(|| "no member available".into())
            ),
        )
    }

    /// A notification, to every member in the session.
    async fn broadcast(&self, body: &Bytes) {
        let sends = (0..self.app.config.members.len()).filter_map(|i| {
            let member = self.member(i).ok()?;
            Some(async move {
                if let Err(f) = member.notify(body).await {
                    tracing::debug!(app = %self.app.config.name, member = %self.app.member_name(i), error = %f, "a notification did not reach a member");
                }
            })
        });
        futures_util::future::join_all(sends).await;
    }

    /// A request every member in the session is asked (`logging/setLevel`),
    /// their answers awaited.
    async fn ask_all(&self, body: &Bytes) {
        let asks = (0..self.app.config.members.len()).filter_map(|i| {
            let mut member = self.member(i).ok()?;
            Some(async move {
                let answer = match member.request(body).await {
                    Ok(reply) => reply.response().await,
                    Err(f) => Err(f),
                };
                if let Err(f) = answer {
                    tracing::debug!(app = %self.app.config.name, member = %self.app.member_name(i), error = %f, "a member did not answer");
                }
            })
        });
        futures_util::future::join_all(asks).await;
    }

    /// The client's answer to a member's request, back to that member.
    fn answer_member(&self, body: &Bytes) -> Response<Body> {
        let Some((i, own)) = ids::untag_response(body) else {
            return reply::json(
                StatusCode::BAD_REQUEST,
                jsonrpc::error_response(
                    None,
                    code::INVALID_REQUEST,
                    "Invalid Request: this response answers no request of this app's members",
                ),
            );
        };
        let Ok(member) = self.member(i) else {
            return reply::status(StatusCode::ACCEPTED);
        };
        match member.answer(&Bytes::from(own)) {
            Ok(()) => reply::status(StatusCode::ACCEPTED),
            Err(f) => f.respond(None),
        }
    }

    fn error(&self, code: i64, message: &str) -> Response<Body> {
        reply::json(
            StatusCode::OK,
            jsonrpc::error_response(raw(&self.id).as_deref(), code, message),
        )
    }
}

/// Why a member's page is missing: a problem (the member is left out), or
/// its refusal for authorization (relayed: the client must sign in).
enum Miss {
    Problem(String),
    Refused(Failure),
    /// The page does not fit in the memory budget: 503, as on a mount.
    Full(Failure),
}

/// Why a member silent for `bound` on `what` was left out.
fn silent(bound: std::time::Duration, what: &str) -> String {
    format!(
        "it did not answer {what} within {} s (limits.app_member_timeout_secs)",
        bound.as_secs()
    )
}

/// A JSON-RPC result for `id`.
fn answer(id: &Value, result: &Value) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    reply::json(StatusCode::OK, Bytes::from(body.to_string()))
}

fn raw(id: &Value) -> Option<Box<serde_json::value::RawValue>> {
    (!id.is_null())
        .then(|| serde_json::value::RawValue::from_string(id.to_string()).ok())
        .flatten()
}

/// The message `body` with `params` in place of its own.
fn with_params(body: &Bytes, params: &Value) -> Bytes {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            v["params"] = params.clone();
            Bytes::from(v.to_string())
        }
        Err(_) => body.clone(),
    }
}
