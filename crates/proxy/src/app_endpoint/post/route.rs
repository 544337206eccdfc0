//! Where a message to an app goes: a call to the member owning its name, a
//! resource's request to the member that listed its URI (else to each in
//! turn), a notification to every member, and the client's answer back to
//! the member whose request it was.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::Value;

use super::context::{Exchange, answer, raw, with_params};
use crate::app_endpoint::member::result_of;
use crate::app_endpoint::{oauth, stream};
use crate::pending::waiting::{Next, Reply};
use crate::relay::deliver::{self, Shape};
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_rewrite::combine::{Kind, Owner, ids};
use mcp_ui_wire::jsonrpc::{self, code};

impl Exchange<'_> {
    /// The member owning `name`, listing the members' names first when it is
    /// not known yet. A request that finds a listing under way waits for it,
    /// and looks again, before it lists (or is refused) itself: a host's
    /// first calls, made at once without a listing, all find their member.
    pub(super) async fn owner(
        &self,
        kind: Kind,
        name: &str,
    ) -> Result<(usize, String), Response<Body>> {
        let mut owner = self.app.owner(kind, name);
        let mut refused = None;
        if owner == Owner::Unknown {
            let _learning = self.app.learning.lock().await;
            owner = self.app.owner(kind, name);
            if owner == Owner::Unknown && self.app.learn_turn(kind, std::time::Instant::now()) {
                refused = self.learn(kind).await;
                owner = self.app.owner(kind, name);
            }
        }
        // A member that could not be asked for its names without signing
        // in: the client signs in, then calls again.
        if owner == Owner::Unknown
            && let Some(f) = refused
        {
            let prm = oauth::prm_url(&self.gw.oauth.passthrough, self.app, self.headers);
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

    /// The request relayed to member `i` (its name as the member knows it
    /// when `rename` says (listed, own)), its answer passed on: JSON, or the
    /// member's messages about it as they come, its requests' ids tagged
    /// and in-band challenges pointed at the app's metadata.
    pub(super) async fn routed(
        &self,
        i: usize,
        rename: Option<(&str, &str)>,
        params: &Value,
        body: Bytes,
    ) -> Response<Body> {
        let body = match rename {
            Some((listed, own)) if listed != own => {
                let mut p = params.clone();
                p["name"] = Value::String(own.to_owned());
                with_params(&body, &p)
            }
            _ => body,
        };
        // A request of the revision is the member's mount's to serve, as
        // it serves its own clients'.
        if self.revision.is_some() {
            let headers = self.member_headers(&body);
            return match self.member_with(i, &headers) {
                Ok(mut member) => member.revision(&body).await,
                Err(why) => self.error(code::SERVER_ERROR, &why),
            };
        }
        let mut member = match self.member(i) {
            Ok(m) => m,
            Err(why) => return self.error(code::SERVER_ERROR, &why),
        };
        let challenges = oauth::in_band_target(&self.gw.oauth.passthrough, self.app, self.headers);
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
    pub(super) async fn in_turn(&self, body: Bytes, what: &str) -> Response<Body> {
        if self.revision.is_some() {
            return self.in_turn_revision(&body, what).await;
        }
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
            let prm = oauth::prm_url(&self.gw.oauth.passthrough, self.app, self.headers);
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
    pub(super) async fn broadcast(&self, body: &Bytes) {
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
    pub(super) async fn ask_all(&self, body: &Bytes) {
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
    pub(super) fn answer_member(&self, body: &Bytes) -> Response<Body> {
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
}
