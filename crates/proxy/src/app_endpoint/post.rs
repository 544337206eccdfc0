//! A POST to an app: one message, answered by the app (`initialize`,
//! `ping`, the listings) or routed to the member it concerns.
//!
//! - `context`: the exchange, its sessions with the members, the app's
//!   own answers;
//! - `initialize`: a session opened with every member at once;
//! - `list`: the listings, the members' pages one after the other;
//! - `route`: a message to the member it concerns, or to every member.

mod context;
mod initialize;
mod list;
mod revision;
mod route;

use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::member::session_of;
use crate::apps::AppState;
use crate::gateway::Gateway;
use crate::relay::context::SESSION_HEADER;
use context::{Exchange, answer, with_params};
use initialize::initialize;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_model::session_id::Hello;
use mcp_ui_rewrite::combine::Kind;
use mcp_ui_upstream::session::in_flight::InFlightGuard;
use mcp_ui_wire::jsonrpc::{self, Kind as MessageKind, code};

pub async fn post(
    gw: &Arc<Gateway>,
    app: &AppState,
    headers: &HeaderMap,
    access: crate::oauth::resource_server::Access,
    body: Bytes,
) -> Response<Body> {
    let caller = access.digest();
    let message = match single(&body) {
        Ok(m) => m,
        Err(refused) => return *refused,
    };
    let id: Value = message
        .id
        .and_then(|id| serde_json::from_str(id.get()).ok())
        .unwrap_or(Value::Null);
    let method = message.method.as_deref().unwrap_or_default().to_owned();
    let declared = match revision_of(&message, &method, headers) {
        Ok(declared) => declared,
        Err(refused) => return *refused,
    };
    let raw_params = message.params;
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
        let host = mcp_ui_overlay::host::detect(None, Some("initialize"), message.params, agent);
        return initialize(gw, app, (headers, &access), body, id, hello, host).await;
    }
    let session = match session_of(gw, app, headers, &access) {
        Ok(s) => s,
        Err(f) => return f.respond(None),
    };
    let _in_flight = match enter(gw, headers, &message) {
        Ok(guard) => guard,
        Err(refused) => return *refused,
    };
    let x = Exchange {
        gw,
        app,
        headers,
        session,
        id,
        revision: declared.map(|caps| context::AppRevision::of(caps, &params)),
        caller,
        access,
    };
    // What a caller may reach of an app that asks for tokens; a call's
    // tool is judged once its member is known.
    if kind == MessageKind::Request
        && method != "tools/call"
        && let Some(refused) = x.gate(&method, None, params.get("uri").and_then(Value::as_str))
    {
        return refused;
    }
    match kind {
        MessageKind::Notification => {
            x.broadcast(&body).await;
            reply::status(StatusCode::ACCEPTED)
        }
        MessageKind::Response => x.answer_member(&body),
        MessageKind::Request => match (&x.revision, method.as_str()) {
            (Some(_), "server/discover") => x.discover(&body).await,
            (Some(_), "subscriptions/listen") => x.listen(&body, raw_params).await,
            _ => x.request(&method, &params, body).await,
        },
    }
}

/// The one message of a POST; a batch, or what is not JSON-RPC, refused.
fn single(body: &Bytes) -> Result<jsonrpc::Message<'_>, Box<Response<Body>>> {
    match jsonrpc::classify(body) {
        Ok(jsonrpc::Body::Single(m)) => Ok(m),
        Ok(jsonrpc::Body::Batch(_)) => Err(Box::new(reply::json(
            StatusCode::BAD_REQUEST,
            jsonrpc::error_response(
                None,
                code::INVALID_REQUEST,
                "Invalid Request: an app endpoint takes one message per POST, not a batch",
            ),
        ))),
        Err(e) => Err(Box::new(Failure::from(e).respond(None))),
    }
}

/// What a request of the 2026-07-28 revision declares, once it is held to
/// that revision's rules (first, before anything else); `None` for any
/// other message.
fn revision_of(
    message: &jsonrpc::Message<'_>,
    method: &str,
    headers: &HeaderMap,
) -> Result<Option<mcp_ui_wire::protocol::Caps>, Box<Response<Body>>> {
    let declared = (message.kind == MessageKind::Request)
        .then(|| crate::relay::revision::declared(Some(method), headers, message.params))
        .flatten();
    if declared.is_some() {
        let headers = crate::relay::revision::headers_of(headers);
        let refusal = mcp_ui_rewrite::bridge::check(method, message.params, &headers)
            .err()
            .or_else(|| mcp_ui_rewrite::bridge::beyond(method));
        if let Some(refusal) = refusal {
            return Err(Box::new(crate::relay::revision::refused(
                &refusal, message.id,
            )));
        }
    }
    Ok(declared)
}

/// A session's requests waiting upstream are bounded, as on a mount: the
/// place of this one, if it is a request of a session, or its refusal.
fn enter(
    gw: &Gateway,
    headers: &HeaderMap,
    message: &jsonrpc::Message<'_>,
) -> Result<Option<InFlightGuard>, Box<Response<Body>>> {
    match headers.get(SESSION_HEADER) {
        Some(sid) if message.kind == MessageKind::Request => {
            let max = gw.limits.max_in_flight_per_session;
            match gw.pending.in_flight.try_enter(sid.as_bytes(), max) {
                Some(guard) => Ok(Some(guard)),
                None => Err(Box::new(
                    Failure::TooManyInFlight { max }.respond(message.id),
                )),
            }
        }
        _ => Ok(None),
    }
}

impl Exchange<'_> {
    /// A request: a listing, `ping` and `logging/setLevel` answered by the
    /// app, the others relayed to the member they concern.
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
                    Ok((m, own)) => {
                        if method == "tools/call"
                            && let Some(refused) = self.gate(method, Some((m, &own)), None)
                        {
                            return refused;
                        }
                        self.routed(m, Some((name, &own)), params, body).await
                    }
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
}
