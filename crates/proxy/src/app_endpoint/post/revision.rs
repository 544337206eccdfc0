//! A request of the 2026-07-28 revision to an app. The app checks it as
//! the revision requires and answers what it answers for every member in
//! the revision's form (`server/discover`, the listings,
//! `subscriptions/listen`); a request it routes reaches the member as a
//! request of the revision, which the member's mount serves as it serves
//! its own clients': an upstream of the handshake era is stood in for,
//! rounds and answers included.

use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use http::header::HeaderMap;
use http::{Response, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::context::{Exchange, raw, silent};
use crate::app_endpoint::member;
use crate::relay::context::{METHOD_HEADER, NAME_HEADER, SESSION_HEADER, name_header};
use crate::relay::member::Member;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_rewrite::bridge::{self, Answering, Filter, Hints};
use mcp_ui_rewrite::combine::init;
use mcp_ui_wire::jsonrpc;
use mcp_ui_wire::sse;

impl<'a> Exchange<'a> {
    /// What the app's answers to `method` announce: the strictest of its
    /// members' freshness.
    pub(super) fn hints(&self, method: &str) -> Hints {
        let overlays = self.gw.live.load();
        self.app
            .config
            .members
            .iter()
            .filter_map(|m| self.gw.mounts.get(m.mount))
            .map(|mount| crate::relay::revision::hints(mount, &overlays, method))
            .reduce(Hints::strictest)
            .unwrap_or_default()
    }

    /// An answer the app wrote (`response`) to `method`, in the revision's
    /// form when the request is of the revision.
    pub(super) fn in_form(&self, method: &str, response: Bytes) -> Response<Body> {
        let Some(r) = &self.revision else {
            return reply::json(StatusCode::OK, response);
        };
        let answering = Answering {
            method: method.to_owned(),
            uri: None,
            name: None,
            caps: r.caps,
            hints: self.hints(method),
            bridged: false,
        };
        let response = bridge::answer(&answering, &response).map_or(response, Bytes::from);
        let status = StatusCode::from_u16(bridge::status_of(&response)).unwrap_or(StatusCode::OK);
        reply::json(status, response)
    }

    /// The headers a member's request of the revision (`body`) carries:
    /// the client's, without the app's session, with `Mcp-Method` and
    /// `Mcp-Name` saying what `body` says (the member's own name for a
    /// tool the app lists under a prefix, the app's own requests' methods).
    pub(super) fn member_headers(&self, body: &Bytes) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.remove(SESSION_HEADER);
        let Ok(m) = jsonrpc::classify_one(body) else {
            return headers;
        };
        let method = m.method.as_deref().unwrap_or_default();
        if let Ok(v) = http::HeaderValue::from_str(method) {
            headers.insert(METHOD_HEADER, v);
        }
        let view = jsonrpc::params_view(m.params);
        let name = match bridge::check::named_by(method) {
            Some("uri") => view.uri,
            Some(_) => view.name,
            None => None,
        };
        match name {
            Some(name) => headers.insert(NAME_HEADER, name_header(&name)),
            None => headers.remove(NAME_HEADER),
        };
        headers
    }

    /// Member `i` reached with `headers`, or why it cannot be.
    pub(super) fn member_with<'h>(
        &'h self,
        i: usize,
        headers: &'h HeaderMap,
    ) -> Result<Member<'h>, String> {
        member::of(self.gw, self.app, headers, &self.session, i, self.caller)
            .ok_or_else(|| format!("member `{}` is not available", self.app.member_name(i)))
    }

    /// A request of the revision (`body`) served by member `i`, its answer
    /// read whole within the app's member bound (the member's JSON-RPC
    /// response).
    pub(super) async fn ask_revision(&self, i: usize, body: &Bytes) -> Result<Bytes, String> {
        let headers = self.member_headers(body);
        let mut member = self.member_with(i, &headers)?;
        let bound = self.gw.app_member_timeout();
        let limit = self.gw.limits.max_message_bytes;
        let asked = async {
            let resp = member.revision(body).await;
            Messages::of(resp, limit).answer().await
        };
        tokio::time::timeout(bound, asked)
            .await
            .map_err(|_| silent(bound, "a request of the revision"))?
    }

    /// A request of the revision no listing names an owner for (`what`):
    /// each member in turn, the first result answering; else the
    /// revision's "not found" (`-32602` naming the URI).
    pub(super) async fn in_turn_revision(&self, body: &Bytes, what: &str) -> Response<Body> {
        let mut last = None;
        for i in 0..self.app.config.members.len() {
            let why = match self.ask_revision(i, body).await {
                Ok(answer) => match crate::app_endpoint::member::result_of(&answer) {
                    Ok(_) => return reply::json(StatusCode::OK, answer),
                    Err(why) => why,
                },
                Err(why) => why,
            };
            last = Some(format!("{}: {why}", self.app.member_name(i)));
        }
        let message = format!(
            "no member of app `{}` answered for {what} ({})",
            self.app.config.name,
            last.unwrap_or_else(|| "no member available".into())
        );
        let error = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": jsonrpc::code::INVALID_PARAMS, "message": message, "data": {"uri": what}},
        });
        reply::json(StatusCode::BAD_REQUEST, Bytes::from(error.to_string()))
    }

    /// `server/discover`: every member's, united into the app's.
    pub(super) async fn discover(&self, body: &Bytes) -> Response<Body> {
        let asks = (0..self.app.config.members.len())
            .map(|i| async move { (i, self.ask_revision(i, body).await) });
        let mut results = Vec::new();
        for (i, said) in futures_util::future::join_all(asks).await {
            match said
                .as_deref()
                .map_err(String::as_str)
                .and_then(|a| crate::app_endpoint::member::result_of(a).map_err(|_| "no result"))
            {
                Ok(result) => results.push((self.app.member_name(i), result)),
                Err(why) => {
                    tracing::warn!(app = %self.app.config.name, member = %self.app.member_name(i), error = %why,
                        "server/discover: member left out");
                }
            }
        }
        let borrowed: Vec<(&str, &Value)> = results.iter().map(|(n, r)| (*n, r)).collect();
        match init::discover(
            &self.app.config.name,
            &borrowed,
            self.hints("server/discover"),
        ) {
            Some(result) => {
                let body = json!({"jsonrpc": "2.0", "id": self.id, "result": result});
                reply::json(StatusCode::OK, Bytes::from(body.to_string()))
            }
            None => self.error(
                jsonrpc::code::SERVER_ERROR,
                &format!(
                    "app `{}`: no member could answer server/discover",
                    self.app.config.name
                ),
            ),
        }
    }

    /// `subscriptions/listen`: every member's subscription opened with the
    /// client's filter (the resources each member serves), their
    /// acknowledgements united into the app's, then what each delivers,
    /// already tagged with the subscription's id, as it comes.
    pub(super) async fn listen(&self, body: &Bytes, params: Option<&RawValue>) -> Response<Body> {
        let Some(id) = raw(&self.id) else {
            return reply::status(StatusCode::ACCEPTED);
        };
        let asked = match Filter::of(params) {
            Ok(f) => f,
            Err(refusal) => return crate::relay::revision::refused(&refusal, Some(&id)),
        };
        let bound = self.gw.app_member_timeout();
        let limit = self.gw.limits.max_message_bytes;
        let opens = (0..self.app.config.members.len()).map(|i| {
            let asked = &asked;
            async move {
                let mine = Filter {
                    resource_subscriptions: asked
                        .resource_subscriptions
                        .iter()
                        .filter(|u| self.app.resource_owner(u).is_none_or(|m| m == i))
                        .cloned()
                        .collect(),
                    ..asked.clone()
                };
                let body = with_filter(body, &mine);
                let headers = self.member_headers(&body);
                let mut member = self.member_with(i, &headers).ok()?;
                let resp = member.revision(&body).await;
                let mut messages = Messages::of(resp, limit);
                let first = tokio::time::timeout(bound, messages.next()).await.ok()??;
                let ack = Filter::acknowledged(&first)?;
                Some((ack, messages))
            }
        });
        let mut honored = Filter::default();
        let mut streams = Vec::new();
        for (i, opened) in futures_util::future::join_all(opens)
            .await
            .into_iter()
            .enumerate()
        {
            match opened {
                Some((ack, messages)) => {
                    honored.unite(&ack);
                    streams.push(messages.into_stream());
                }
                None => {
                    tracing::debug!(app = %self.app.config.name, member = %self.app.member_name(i),
                    "subscriptions/listen: member left out (no acknowledgement)");
                }
            }
        }
        let ack = honored.acknowledgement(&id);
        let rest = futures_util::stream::select_all(streams);
        let stream = futures_util::stream::once(std::future::ready(ack)).chain(rest);
        crate::relay::deliver::event_stream(&self.gw.shutdown, None, Box::pin(stream))
    }
}

/// `body` (a `subscriptions/listen`) asking for `filter`.
fn with_filter(body: &Bytes, filter: &Filter) -> Bytes {
    let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
        return body.clone();
    };
    let mut notifications = serde_json::Map::new();
    for (key, on) in [
        ("toolsListChanged", filter.tools_list_changed),
        ("promptsListChanged", filter.prompts_list_changed),
        ("resourcesListChanged", filter.resources_list_changed),
    ] {
        if on {
            notifications.insert(key.into(), json!(true));
        }
    }
    if !filter.resource_subscriptions.is_empty() {
        notifications.insert(
            "resourceSubscriptions".into(),
            json!(filter.resource_subscriptions),
        );
    }
    v["params"]["notifications"] = Value::Object(notifications);
    Bytes::from(v.to_string())
}

/// The JSON-RPC messages of an HTTP answer: its JSON body, or its SSE
/// stream's events one by one.
struct Messages {
    body: Body,
    /// `None` for a JSON body.
    events: Option<sse::Parser>,
    limit: usize,
    done: bool,
}

impl Messages {
    fn of(resp: Response<Body>, limit: usize) -> Messages {
        let sse = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        Messages {
            body: resp.into_body(),
            events: sse.then(|| sse::Parser::new(limit)),
            limit,
            done: false,
        }
    }

    /// The next message; `None` at the end.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        let Some(parser) = &mut self.events else {
            // A JSON body is one message, read whole within the limit.
            self.done = true;
            let mut whole = bytes::BytesMut::new();
            while let Some(Ok(frame)) = self.body.frame().await {
                if let Some(data) = frame.data_ref() {
                    if whole.len() + data.len() > self.limit {
                        return None;
                    }
                    whole.extend_from_slice(data);
                }
            }
            return Some(whole.freeze());
        };
        loop {
            match parser.next_event() {
                Ok(Some(e)) if e.has_data && !e.data.is_empty() => {
                    return Some(Bytes::from(e.data));
                }
                Ok(Some(_)) => continue,
                Ok(None) => {}
                Err(_) => {
                    self.done = true;
                    return None;
                }
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        parser.push(data);
                    }
                }
                _ => {
                    self.done = true;
                    return parser.finish().map(|e| Bytes::from(e.data));
                }
            }
        }
    }

    /// The JSON-RPC response among the messages (the last JSON message when
    /// none is).
    async fn answer(mut self) -> Result<Bytes, String> {
        let mut last = None;
        while let Some(m) = self.next().await {
            if let Ok(msg) = jsonrpc::classify_one(&m)
                && msg.kind == jsonrpc::Kind::Response
            {
                return Ok(m);
            }
            last = Some(m);
        }
        last.ok_or_else(|| "no answer".to_owned())
    }

    fn into_stream(self) -> Pin<Box<dyn Stream<Item = Bytes> + Send>> {
        Box::pin(futures_util::stream::unfold(self, |mut m| async move {
            m.next().await.map(|b| (b, m))
        }))
    }
}
