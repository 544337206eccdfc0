//! A POST to an app: one message, answered by the app (`initialize`,
//! `ping`, the listings) or routed to the member it concerns.

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::member::{self, Answer, session_of};
use super::{oauth, stream};
use crate::combine::names::collision_message;
use crate::combine::{AppState, Kind, Owner, cursor, ids, init, list};
use crate::gateway::Gateway;
use crate::jsonrpc::{self, Kind as MessageKind, code};
use crate::outcome::Failure;
use crate::relay::context::SESSION_HEADER;
use crate::reply::{self, Body};
use crate::session::app::{AppSession, MemberSession};

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
        return initialize(gw, app, headers, body, id).await;
    }
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
        MessageKind::Response => x.answer_member(&body).await,
        MessageKind::Request => x.request(&method, &params, body).await,
    }
}

/// `initialize`: every member's session opened at once, their results
/// united, the sessions sealed into the app's id.
async fn initialize(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &HeaderMap,
    body: Bytes,
    id: Value,
) -> Response<Body> {
    let asks = app.config.members.iter().map(|m| {
        let h = member::headers_for(headers, &MemberSession::Sessionless, None);
        let body = body.clone();
        async move {
            match gw.mounts.get(m.mount) {
                Some(mount) => Some(member::ask(gw, mount, h, body).await),
                None => None,
            }
        }
    });
    let answers = futures_util::future::join_all(asks).await;
    // A member that wants the client to sign in: the client signs in to the
    // app (one token for every member) and initializes again.
    if let Some(a) = answers
        .iter()
        .flatten()
        .find(|a| oauth::is_refusal(a.status))
    {
        return oauth::answer_refusal(oauth::prm_url(gw, app, headers).as_deref(), a);
    }
    let mut sessions = Vec::new();
    let mut results = Vec::new();
    let mut problems = Vec::new();
    for (m, answer) in app.config.members.iter().zip(&answers) {
        match answer.as_ref().filter(|a| a.result().is_some()) {
            Some(a) => {
                let sid = a
                    .headers
                    .get(SESSION_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                sessions.push(sid.map_or(MemberSession::Sessionless, MemberSession::Id));
                results.push((m.upstream.as_str(), a.result().cloned().unwrap_or_default()));
            }
            None => {
                let why = answer
                    .as_ref()
                    .map_or("no such mount".into(), |a| a.problem());
                tracing::warn!(app = %app.config.name, member = %m.upstream, error = %why,
                    "app member not initialized: its tools are unavailable in this session");
                problems.push(format!("{}: {why}", m.upstream));
                sessions.push(MemberSession::Failed);
            }
        }
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
    let sid = AppSession {
        app: app.config.name.clone(),
        members: sessions,
    }
    .seal(&gw.key);
    let mut r = answer(&id, &result);
    if let Ok(v) = http::HeaderValue::from_str(&sid) {
        r.headers_mut().insert(SESSION_HEADER, v);
    }
    r
}

impl Exchange<'_> {
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
                self.broadcast(&body).await;
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
        let mut at = match cursor::decode(given, members.len()) {
            Ok(p) => p,
            Err(e) => return self.error(code::INVALID_PARAMS, &e),
        };
        let mut items = Vec::new();
        let mut next = None;
        while at.member < members.len() {
            let i = at.member;
            match self
                .member_page(i, kind, method, params, at.upstream.as_deref())
                .await
            {
                Ok(page) => {
                    let uris = if kind == Kind::Tools {
                        list::widget_uris(&page.items)
                    } else {
                        Vec::new()
                    };
                    let first = at.upstream.is_none();
                    if let Err(c) = self.app.record(kind, i, first, &page.names, &uris) {
                        let message = collision_message(
                            &self.app.config.name,
                            kind.noun(),
                            &c.name,
                            self.app.member_name(c.first),
                            self.app.member_name(c.second),
                        );
                        tracing::error!("{message}");
                        return self.error(code::SERVER_ERROR, &message);
                    }
                    items.extend(page.items);
                    if let Some(n) = page.next {
                        next = Some(cursor::encode(&cursor::Position {
                            member: i,
                            upstream: Some(n),
                        }));
                        break;
                    }
                }
                Err(Miss::Refused(a)) => {
                    let prm = oauth::prm_url(self.gw, self.app, self.headers);
                    return oauth::answer_refusal(prm.as_deref(), &a);
                }
                Err(Miss::Problem(why)) => {
                    tracing::debug!(app = %self.app.config.name, member = %members[i].upstream, error = %why, "{method}: member left out");
                }
            }
            at = cursor::Position {
                member: i + 1,
                upstream: None,
            };
        }
        let mut result = json!({ kind.key(): items });
        if let Some(n) = next {
            result["nextCursor"] = Value::String(n);
        }
        answer(&self.id, &result)
    }

    /// One member's page of a listing, prefixed.
    async fn member_page(
        &self,
        i: usize,
        kind: Kind,
        method: &str,
        params: &Value,
        at: Option<&str>,
    ) -> Result<list::Page, Miss> {
        let m = &self.app.config.members[i];
        let session = self.member_session(i).map_err(Miss::Problem)?;
        let mount = self
            .gw
            .mounts
            .get(m.mount)
            .ok_or_else(|| Miss::Problem("no such mount".into()))?;
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
        let h = member::headers_for(self.headers, session, None);
        let a = member::ask(self.gw, mount, h, Bytes::from(body.to_string())).await;
        if oauth::is_refusal(a.status) {
            return Err(Miss::Refused(a));
        }
        let result = a.result().ok_or_else(|| Miss::Problem(a.problem()))?;
        list::page(result, kind, &m.prefix).ok_or_else(|| Miss::Problem("not a listing".into()))
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
            && let Some(a) = refused
        {
            let prm = oauth::prm_url(self.gw, self.app, self.headers);
            if kind == Kind::Tools
                && self.app.config.auth_challenge == "in-band"
                && let (Some(id), Some(prm)) = (raw(&self.id), prm.as_deref())
            {
                return Err(oauth::in_band_refusal(&id, prm, &a));
            }
            return Err(oauth::answer_refusal(prm.as_deref(), &a));
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
    async fn learn(&self, kind: Kind) -> Option<Answer> {
        let method = kind.list_method();
        let mut refused = None;
        for i in 0..self.app.config.members.len() {
            let mut at: Option<String> = None;
            for _ in 0..MAX_LEARN_PAGES {
                let page = match self
                    .member_page(i, kind, method, &json!({}), at.as_deref())
                    .await
                {
                    Ok(page) => page,
                    Err(Miss::Refused(a)) => {
                        refused.get_or_insert(a);
                        break;
                    }
                    Err(Miss::Problem(_)) => break,
                };
                let uris = list::widget_uris(&page.items);
                if let Err(c) = self.app.record(kind, i, at.is_none(), &page.names, &uris) {
                    tracing::error!(
                        "{}",
                        collision_message(
                            &self.app.config.name,
                            kind.noun(),
                            &c.name,
                            self.app.member_name(c.first),
                            self.app.member_name(c.second),
                        )
                    );
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

    /// The member's session, or why it has none.
    fn member_session(&self, i: usize) -> Result<&MemberSession, String> {
        match self.session.members.get(i) {
            Some(MemberSession::Failed) | None => Err(format!(
                "app `{}`: member `{}` is not available in this session (it could not be initialized when the session began; initialize again to retry)",
                self.app.config.name,
                self.app.member_name(i)
            )),
            Some(s) => Ok(s),
        }
    }

    /// The request relayed to member `i` (its name as the member knows it
    /// when `rename` says (listed, own)), its answer passed on.
    async fn routed(
        &self,
        i: usize,
        rename: Option<(&str, &str)>,
        params: &Value,
        body: Bytes,
    ) -> Response<Body> {
        let session = match self.member_session(i) {
            Ok(s) => s,
            Err(why) => return self.error(code::SERVER_ERROR, &why),
        };
        let Some(mount) = self.gw.mounts.get(self.app.config.members[i].mount) else {
            return self.error(code::SERVER_ERROR, "no such mount");
        };
        let (body, name) = match rename {
            Some((listed, own)) if listed != own => {
                let mut p = params.clone();
                p["name"] = Value::String(own.to_owned());
                (with_params(&body, &p), Some(own))
            }
            _ => (body, None),
        };
        let h = member::headers_for(self.headers, session, name);
        let mut resp = member::post(self.gw, mount, h, body).await;
        if oauth::is_refusal(resp.status()) {
            let prm = oauth::prm_url(self.gw, self.app, self.headers);
            return oauth::relay_refusal(prm.as_deref(), resp);
        }
        if !resp.status().is_success() {
            let a = member::read(self.gw, resp).await;
            let message = format!(
                "app `{}`: member `{}` failed: {}",
                self.app.config.name,
                self.app.member_name(i),
                a.problem()
            );
            return self.error(code::SERVER_ERROR, &message);
        }
        resp.headers_mut().remove(SESSION_HEADER);
        let challenges = self
            .gw
            .auth
            .base(self.headers)
            .zip(oauth::prm_url(self.gw, self.app, self.headers))
            .map(|(base, prm)| (prm, base));
        if stream::is_event_stream(&resp) {
            return stream::tagged(self.gw, i, challenges, resp);
        }
        if rename.is_some() {
            // A tool result may carry an in-band challenge.
            return oauth::in_band(self.gw, self.app, self.headers, resp).await;
        }
        resp
    }

    /// A request no listing names an owner for: each member in turn, the
    /// first result answering.
    async fn in_turn(&self, body: Bytes, what: &str) -> Response<Body> {
        let mut last = None;
        let mut refused: Option<Answer> = None;
        for (i, m) in self.app.config.members.iter().enumerate() {
            let (Ok(session), Some(mount)) = (self.member_session(i), self.gw.mounts.get(m.mount))
            else {
                continue;
            };
            let h = member::headers_for(self.headers, session, None);
            let a = member::ask(self.gw, mount, h, body.clone()).await;
            if let Some(result) = a.result() {
                return answer(&self.id, result);
            }
            last = Some(format!("{}: {}", m.upstream, a.problem()));
            if oauth::is_refusal(a.status) && refused.is_none() {
                refused = Some(a);
            }
        }
        if let Some(a) = refused {
            let prm = oauth::prm_url(self.gw, self.app, self.headers);
            return oauth::answer_refusal(prm.as_deref(), &a);
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

    /// A notification, to every member with a session.
    async fn broadcast(&self, body: &Bytes) {
        let sends = self
            .app
            .config
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let session = self.member_session(i).ok()?;
                let mount = self.gw.mounts.get(m.mount)?;
                let h = member::headers_for(self.headers, session, None);
                Some(member::ask(self.gw, mount, h, body.clone()))
            });
        futures_util::future::join_all(sends).await;
    }

    /// The client's answer to a member's request, back to that member.
    async fn answer_member(&self, body: &Bytes) -> Response<Body> {
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
        let (Ok(session), Some(mount)) = (
            self.member_session(i),
            self.app
                .config
                .members
                .get(i)
                .and_then(|m| self.gw.mounts.get(m.mount)),
        ) else {
            return reply::status(StatusCode::ACCEPTED);
        };
        let h = member::headers_for(self.headers, session, None);
        member::post(self.gw, mount, h, Bytes::from(own)).await
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
    Refused(Answer),
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
