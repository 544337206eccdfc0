//! An app's listings: the members' pages one after the other, each
//! prefixed, the cursor carrying which member and its own cursor; and the
//! members' whole listings read to learn which member owns a name.

use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};

use super::context::{Exchange, raw, silent};
use crate::app_endpoint::cursor;
use crate::app_endpoint::member::raw_result_of;
use crate::app_endpoint::oauth;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;
use mcp_ui_rewrite::combine::names::{Collision, collision_message};
use mcp_ui_rewrite::combine::{Kind, list};
use mcp_ui_upstream::upstream::budget::Permit;
use mcp_ui_wire::jsonrpc::code;

/// Most pages of one member read to learn its names.
const MAX_LEARN_PAGES: usize = 100;

impl Exchange<'_> {
    /// A listing page: the members' pages from the cursor's position, up to
    /// and including the first that has more.
    pub(super) async fn list(&self, kind: Kind, method: &str, params: &Value) -> Response<Body> {
        let members = &self.app.config.members;
        let given = params.get("cursor").and_then(Value::as_str);
        let app = &self.app.config.name;
        let mut at = match cursor::decode(&self.gw.ids.key, app, given, members.len()) {
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
                            &self.gw.ids.key,
                            app,
                            &cursor::Position {
                                member: i,
                                upstream: Some(n),
                            },
                        ));
                        break;
                    }
                }
                Err(miss) => {
                    let cursor_named = at.upstream.is_some();
                    if let Some(r) = self.missed(miss, i, method, cursor_named, &mut left_out) {
                        return r;
                    }
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
        let r = self.in_form(method, Bytes::from(body));
        drop(held);
        r
    }

    /// What a member's page that could not be had makes of the listing: the
    /// answer when it ends it, else `None` with the member noted in
    /// `left_out`. `cursor_named` says the client's cursor named the page.
    fn missed(
        &self,
        miss: Miss,
        i: usize,
        method: &str,
        cursor_named: bool,
        left_out: &mut Vec<String>,
    ) -> Option<Response<Body>> {
        let (app, members) = (&self.app.config.name, &self.app.config.members);
        match miss {
            Miss::Refused(f) => {
                let prm = oauth::prm_url(&self.gw.oauth.passthrough, self.app, self.headers);
                Some(oauth::refusal(prm.as_deref(), f, raw(&self.id).as_deref()))
            }
            Miss::Full(f) => Some(f.respond(raw(&self.id).as_deref())),
            // The page a client's cursor names could not be read: an
            // error, never an empty page that would end its listing.
            Miss::Problem(why) if cursor_named => Some(self.error(
                code::SERVER_ERROR,
                &format!(
                    "app `{app}`: member `{}` could not give the page this cursor names: {why}",
                    members[i].upstream
                ),
            )),
            Miss::Problem(why) => {
                tracing::debug!(app = %self.app.config.name, member = %members[i].upstream, error = %why, "{method}: member left out");
                left_out.push(format!("`{}`: {why}", members[i].upstream));
                None
            }
        }
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
        let body = Bytes::from(
            json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": p}).to_string(),
        );
        // A listing of the revision is the member's of the revision (its
        // mount stands in for an upstream of the handshake era).
        let answer = match &self.revision {
            Some(_) => self.ask_revision(i, &body).await.map_err(Miss::Problem)?,
            None => {
                let mut member = self.member(i).map_err(Miss::Problem)?;
                self.ask(&mut member, &body, method).await?
            }
        };
        let permit = self.held(m, &answer)?;
        let result = raw_result_of(&answer).map_err(Miss::Problem)?;
        let page = list::page(result, kind, &m.prefix)
            .ok_or_else(|| Miss::Problem("not a listing".into()))?;
        Ok((page, permit))
    }

    /// A member's answer to `body` (a `method` request), within the app's
    /// member bound.
    async fn ask(
        &self,
        member: &mut crate::relay::member::Member<'_>,
        body: &Bytes,
        method: &str,
    ) -> Result<Bytes, Miss> {
        let bound = self.gw.app_member_timeout();
        let asked = async {
            match member.request(body).await {
                Ok(reply) => reply.response().await,
                Err(f) => Err(f),
            }
        };
        let answer = tokio::time::timeout(bound, asked)
            .await
            .map_err(|_| Miss::Problem(silent(bound, method)))?;
        match answer {
            Ok(a) => Ok(a),
            Err(f) if oauth::is_refusal(&f) => Err(Miss::Refused(f)),
            Err(f) => Err(Miss::Problem(f.to_string())),
        }
    }

    /// A member's answer held against the memory budget of answers read
    /// whole, with the page made of it, as on the member's own path.
    fn held(&self, m: &mcp_ui_model::config::Member, answer: &Bytes) -> Result<Permit, Miss> {
        self.gw
            .upstreams
            .buffers
            .try_take(answer.len().saturating_mul(2))
            .ok_or_else(|| {
                Miss::Full(Failure::BufferFull {
                    upstream: m.upstream.clone(),
                    at_least: answer.len(),
                    limit: self.gw.upstreams.buffers.max(),
                })
            })
    }

    /// Read every member's whole listing of `kind`, to learn its names; the
    /// first member's refusal for authorization, if any.
    pub(super) async fn learn(&self, kind: Kind) -> Option<Failure> {
        let method = kind.list_method();
        // Asked as the client asks: of the revision, with its `_meta`.
        let params = match &self.revision {
            Some(r) => json!({ "_meta": r.meta }),
            None => json!({}),
        };
        let mut refused = None;
        for i in 0..self.app.config.members.len() {
            let mut at: Option<String> = None;
            for _ in 0..MAX_LEARN_PAGES {
                let page = match self
                    .member_page(i, kind, method, &params, at.as_deref())
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
    pub(super) fn collision(&self, kind: Kind, c: &Collision) -> String {
        collision_message(
            &self.app.config.name,
            kind.noun(),
            &c.name,
            self.app.member_name(c.first),
            self.app.member_name(c.second),
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
