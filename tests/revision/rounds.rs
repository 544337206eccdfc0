//! The requests a 2025 upstream sends its client while serving a call
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`), which the revision
//! does not have, as `input_required` rounds: the client's retries answer them, a state
//! opens once and only for its call, and a call whose client never comes back is dropped
//! and cancelled upstream.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{
    Answer, Findings, Front, Kind, Servers, all_caps, ask, eventually, post, request,
    revision_headers,
};
use crate::support::peers::setup;

const NAME: &str = "Ada";
const SAMPLED: &str = "sampled by the revision test";
const ROOT: &str = "file:///tmp/revision-test-root";
/// `request_timeout_secs` of the gateway whose rounds expire.
const SHORT_TIMEOUT_S: u64 = 2;

/// An `input_required` round.
struct Round {
    requests: Map<String, Value>,
    state: String,
}

impl Round {
    /// The methods it asks, in key order.
    fn methods(&self) -> Vec<&str> {
        self.requests
            .values()
            .map(|r| r["method"].as_str().unwrap_or_default())
            .collect()
    }

    /// Each request answered as the client answers it, `name` for elicitations.
    fn answered(&self, name: &str) -> Value {
        let answers = self.requests.iter().map(|(key, r)| {
            let answer = match r["method"].as_str().unwrap_or_default() {
                "elicitation/create" => json!({"action": "accept", "content": {"name": name}}),
                "sampling/createMessage" => json!({"role": "assistant",
                    "content": {"type": "text", "text": SAMPLED},
                    "model": "test-model", "stopReason": "endTurn"}),
                "roots/list" => json!({"roots": [{"uri": ROOT, "name": "test root"}]}),
                other => json!({"unexpected": other}),
            };
            (key.clone(), answer)
        });
        Value::Object(answers.collect())
    }
}

/// `tool` called by a client of the revision declaring `caps`, with `extra` params.
fn call(id: u64, tool: &str, extra: Value, caps: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    request(id, "tools/call", params, caps)
}

/// The round an answer gives, or what it is instead.
fn round_of(a: &Answer) -> Result<Round, String> {
    let r = a.ok()?;
    let requests = r["inputRequests"].as_object().cloned().unwrap_or_default();
    let state = r["requestState"].as_str().unwrap_or_default().to_owned();
    if r["resultType"] != "input_required" || requests.is_empty() || state.is_empty() {
        return Err(format!("not an input_required round: {a}"));
    }
    if r.get("ttlMs").is_some() || r.get("cacheScope").is_some() {
        return Err(format!("a round is not cacheable: {a}"));
    }
    Ok(Round { requests, state })
}

/// The text of a complete `tools/call` result, or what it is instead.
fn text_of(a: &Answer) -> Result<String, String> {
    let r = a.ok()?;
    match (r["resultType"].as_str(), r["content"][0]["text"].as_str()) {
        (Some("complete"), Some(text)) => Ok(text.to_owned()),
        _ => Err(format!("not a complete result with text: {a}")),
    }
}

/// Checks that `a` is the refusal of an invalid `requestState`, for request `id`.
fn invalid_state(a: &Answer, id: u64) -> Result<(), String> {
    let error = a.refused(400, -32602, &json!(id))?;
    match error["data"]["reason"] == "invalid_request_state" {
        true => Ok(()),
        false => Err(format!("no data.reason invalid_request_state: {a}")),
    }
}

/// One client of the revision and the mount it calls.
struct Caller {
    url: String,
    next_id: u64,
    /// Its `Authorization`, which tells callers apart on a mount without `[auth]`.
    who: Option<&'static str>,
}

impl Caller {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Calls `tool` (every capability declared); the answer and its id.
    async fn call(&mut self, tool: &str, extra: Value) -> Result<(Answer, u64), String> {
        let id = self.id();
        let body = call(id, tool, extra, all_caps());
        let a = match self.who {
            None => ask(&self.url, &body).await?,
            Some(who) => {
                let mut h = revision_headers(&body);
                h.push(("authorization", who.to_owned()));
                let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
                post(&self.url, &h, &body).await?
            }
        };
        Ok((a, id))
    }

    /// The first round of `tool`, which must ask `method`.
    async fn first(&mut self, tool: &str, method: &str) -> Result<Round, String> {
        let (a, _) = self.call(tool, json!({})).await?;
        let round = round_of(&a)?;
        match round.methods() == [method] {
            true => Ok(round),
            false => Err(format!(
                "{tool}'s first round asks {:?}, not {method}",
                round.methods()
            )),
        }
    }

    /// Retries `tool` with `responses` under `state`.
    async fn retry(
        &mut self,
        tool: &str,
        state: &str,
        responses: Value,
    ) -> Result<(Answer, u64), String> {
        let extra = json!({"inputResponses": responses, "requestState": state});
        self.call(tool, extra).await
    }

    /// Answers `round` of `tool` as the client does.
    async fn answer(&mut self, tool: &str, round: &Round, name: &str) -> Result<Answer, String> {
        Ok(self
            .retry(tool, &round.state, round.answered(name))
            .await?
            .0)
    }
}

/// ask_name: one round, then "Hello, Ada"; its state, used, is refused after.
async fn ask_name(c: &mut Caller) -> Result<(), String> {
    let round = c.first("ask_name", "elicitation/create").await?;
    let asked = round.requests.values().next().unwrap();
    if asked["params"]["message"] != "What is your name?" {
        return Err(format!("the elicitation is not the upstream's: {asked}"));
    }
    let text = text_of(&c.answer("ask_name", &round, NAME).await?)?;
    if text != format!("Hello, {NAME}") {
        return Err(format!("answered {text:?}"));
    }
    let (replayed, id) = c
        .retry("ask_name", &round.state, round.answered("Eve"))
        .await?;
    invalid_state(&replayed, id).map_err(|e| format!("a state used twice: {e}"))
}

/// ask_twice: two rounds with different states, then both names.
async fn ask_twice(c: &mut Caller) -> Result<(), String> {
    let first = c.first("ask_twice", "elicitation/create").await?;
    let second = round_of(&c.answer("ask_twice", &first, NAME).await?)?;
    if second.methods() != ["elicitation/create"] || second.state == first.state {
        return Err(format!(
            "the second round asks {:?} under {} state",
            second.methods(),
            if second.state == first.state {
                "the same"
            } else {
                "another"
            }
        ));
    }
    let text = text_of(&c.answer("ask_twice", &second, "Bob").await?)?;
    match text == format!("first={NAME} second=Bob") {
        true => Ok(()),
        false => Err(format!("answered {text:?}")),
    }
}

/// ask_both: an elicitation round, then a sampling round, then both answers.
async fn ask_both(c: &mut Caller) -> Result<(), String> {
    let first = c.first("ask_both", "elicitation/create").await?;
    let second = round_of(&c.answer("ask_both", &first, NAME).await?)?;
    if second.methods() != ["sampling/createMessage"] {
        return Err(format!("the second round asks {:?}", second.methods()));
    }
    let text = text_of(&c.answer("ask_both", &second, NAME).await?)?;
    match text == format!("name={NAME} model={SAMPLED}") {
        true => Ok(()),
        false => Err(format!("answered {text:?}")),
    }
}

/// list_roots: a roots/list round, then the root.
async fn list_roots(c: &mut Caller) -> Result<(), String> {
    let round = c.first("list_roots", "roots/list").await?;
    let text = text_of(&c.answer("list_roots", &round, NAME).await?)?;
    match text == ROOT {
        true => Ok(()),
        false => Err(format!("answered {text:?}")),
    }
}

/// A state tampered with is refused; the true one still opens.
async fn tampered(c: &mut Caller) -> Result<(), String> {
    let round = c.first("ask_name", "elicitation/create").await?;
    let mut chars: Vec<char> = round.state.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    let forged: String = chars.into_iter().collect();
    let (a, id) = c.retry("ask_name", &forged, round.answered(NAME)).await?;
    invalid_state(&a, id).map_err(|e| format!("a tampered state: {e}"))?;
    let text = text_of(&c.answer("ask_name", &round, NAME).await?)?;
    match text == format!("Hello, {NAME}") {
        true => Ok(()),
        false => Err(format!("the true state, after: answered {text:?}")),
    }
}

/// ask_name's state given in a call of ask_twice is refused; it still opens for ask_name.
async fn another_tool(c: &mut Caller) -> Result<(), String> {
    let round = c.first("ask_name", "elicitation/create").await?;
    let (a, id) = c
        .retry("ask_twice", &round.state, round.answered(NAME))
        .await?;
    invalid_state(&a, id).map_err(|e| format!("ask_name's state for ask_twice: {e}"))?;
    let text = text_of(&c.answer("ask_name", &round, NAME).await?)?;
    match text == format!("Hello, {NAME}") {
        true => Ok(()),
        false => Err(format!("then for ask_name: answered {text:?}")),
    }
}

/// A retry without the answer is asked again, under a new state.
async fn missing_answer(c: &mut Caller) -> Result<(), String> {
    let round = c.first("ask_name", "elicitation/create").await?;
    let (a, _) = c.retry("ask_name", &round.state, json!({})).await?;
    let again = round_of(&a).map_err(|e| format!("a retry without the answer: {e}"))?;
    if again.methods() != ["elicitation/create"] || again.state == round.state {
        return Err(format!("asked again: {a}"));
    }
    let text = text_of(&c.answer("ask_name", &again, NAME).await?)?;
    match text == format!("Hello, {NAME}") {
        true => Ok(()),
        false => Err(format!("answered {text:?}")),
    }
}

/// An answer that is not an object is 400 `-32602`, and the call stays parked.
async fn malformed_answer(c: &mut Caller) -> Result<(), String> {
    let round = c.first("ask_name", "elicitation/create").await?;
    let key = round.requests.keys().next().unwrap().clone();
    let (a, id) = c
        .retry("ask_name", &round.state, json!({key: 12345}))
        .await?;
    a.refused(400, -32602, &json!(id))
        .map_err(|e| format!("an answer of 12345: {e}"))?;
    let text = text_of(&c.answer("ask_name", &round, NAME).await?)?;
    match text == format!("Hello, {NAME}") {
        true => Ok(()),
        false => Err(format!("then a good answer: answered {text:?}")),
    }
}

/// A client that did not declare `sampling` calling ask_model: 400 `-32021`.
async fn undeclared_sampling(c: &mut Caller) -> Result<(), String> {
    let id = c.id();
    let body = call(id, "ask_model", json!({}), json!({"elicitation": {}}));
    let a = ask(&c.url, &body).await?;
    let error = a.refused(400, -32021, &json!(id))?;
    match error["data"]["requiredCapabilities"]["sampling"].is_object() {
        true => Ok(()),
        false => Err(format!("no data.requiredCapabilities.sampling: {a}")),
    }
}

/// How often `legacy_server: cancelled ask_name` appears in `text`.
fn cancellations(text: &str) -> usize {
    text.matches("legacy_server: cancelled ask_name").count()
}

/// A 2025 upstream's elicitation, sampling and roots requests reach a client of the
/// revision as `input_required` rounds, on legacy_server.py over stdio, legacy SSE and
/// streamable HTTP (stateful): ask_name gives a round and the retry "Hello, Ada";
/// ask_twice two rounds under different states; ask_both an elicitation round then a
/// sampling round; list_roots a roots round. A state replayed, tampered with, or given for
/// another tool is 400 `-32602` (`invalid_request_state`), and the true state still opens
/// after the last two; a retry without the answer is asked again; an answer that is not
/// an object is 400 `-32602` and the call waits on; ask_model from a client without
/// `sampling` is 400 `-32021` naming it. A call whose client never retries is dropped
/// after `request_timeout_secs` (2 s here): its state is refused, and the upstream saw
/// the call cancelled.
#[tokio::test]
async fn server_requests_become_input_required_rounds() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [Kind::Stdio, Kind::Sse, Kind::Http];
    let servers = Servers::start(&peers, &kinds).await;
    let front = Front::of(&peers, &servers, &kinds, None, "").await;
    let mut findings = Findings::default();
    for kind in kinds {
        let mut caller = Caller {
            url: front.url(kind),
            next_id: 0,
            who: None,
        };
        let at = kind.label();
        let c = &mut caller;
        let f = &mut findings;
        f.note(
            format!("{at}: ask_name, then its state replayed"),
            ask_name(c).await,
        );
        f.note(format!("{at}: ask_twice, two rounds"), ask_twice(c).await);
        f.note(
            format!("{at}: ask_both, elicitation then sampling"),
            ask_both(c).await,
        );
        f.note(format!("{at}: list_roots"), list_roots(c).await);
        f.note(format!("{at}: a tampered state"), tampered(c).await);
        f.note(
            format!("{at}: ask_name's state for ask_twice"),
            another_tool(c).await,
        );
        f.note(
            format!("{at}: a retry without the answer"),
            missing_answer(c).await,
        );
        f.note(
            format!("{at}: an answer not an object"),
            malformed_answer(c).await,
        );
        f.note(
            format!("{at}: ask_model without sampling"),
            undeclared_sampling(c).await,
        );
    }

    // A gateway whose rounds expire after 2 s, in front of the same servers.
    let limits = format!("[limits]\nrequest_timeout_secs = {SHORT_TIMEOUT_S}\n");
    let short = Front::of(&peers, &servers, &kinds, None, &limits).await;
    let mut parked = Vec::new();
    for kind in kinds {
        let mut caller = Caller {
            url: short.url(kind),
            next_id: 100,
            who: None,
        };
        let before = match servers.proc(kind) {
            Some(p) => cancellations(&p.stderr()),
            None => cancellations(&short.gateway.proc.stderr()),
        };
        let what = format!(
            "{} (request_timeout_secs = {SHORT_TIMEOUT_S})",
            kind.label()
        );
        if let Some(round) =
            findings.note(&what, caller.first("ask_name", "elicitation/create").await)
        {
            parked.push((kind, caller, round, before, what));
        }
    }
    tokio::time::sleep(Duration::from_secs(SHORT_TIMEOUT_S) + Duration::from_millis(1500)).await;
    for (kind, mut caller, round, before, what) in parked {
        let retried = caller
            .retry("ask_name", &round.state, round.answered(NAME))
            .await;
        findings.note(
            format!("{what}: a retry after the limit"),
            retried.and_then(|(a, id)| invalid_state(&a, id)),
        );
        let log = || match servers.proc(kind) {
            Some(p) => p.stderr(),
            None => short.gateway.proc.stderr(),
        };
        let seen = eventually(Duration::from_secs(5), || cancellations(&log()) > before).await;
        findings.check(seen, || {
            format!(
                "{what}: the upstream never saw the dropped call cancelled (no new \
                 \"legacy_server: cancelled ask_name\" on its stderr)"
            )
        });
    }
    short.gateway.stop().await;
    findings.assert_none(&front, "server-to-client requests as input_required rounds");
    front.gateway.stop().await;
}

/// Checks that `a` refuses request `id` for the caller's open rounds: 429 with
/// `Retry-After`, `-32000` naming `limits.max_rounds_per_caller`.
fn beyond_rounds(a: &Answer, id: u64) -> Result<(), String> {
    let error = a.refused(429, -32000, &json!(id))?;
    let named = error["message"]
        .as_str()
        .is_some_and(|m| m.contains("limits.max_rounds_per_caller"));
    let retry = a
        .headers
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    match (named, retry) {
        (true, Some(secs)) if secs >= 1 => Ok(()),
        _ => Err(format!("no limit named, or no Retry-After: {a}")),
    }
}

/// What a round's retry gets once the connection its call waited on was ended for
/// another's: an error saying so, with its id.
fn ended_for_room(a: &Answer, id: u64) -> Result<(), String> {
    let said = a.body["error"]["message"].as_str().unwrap_or_default();
    match a.body["id"] == json!(id) && said.contains("to make room") {
        true => Ok(()),
        false => Err(format!("not an error saying its connection made room: {a}")),
    }
}

/// Rounds left open never keep another caller out, and one caller's are bounded: on
/// a `sessions = "shared"` stdio mount (legacy_server.py) allowed 4 connections, caller
/// A holds 2 rounds (`max_rounds_per_caller = 2`) and its third is refused (429,
/// `Retry-After`, its id, the limit named); caller C's 2 rounds fill the mount; then
/// caller B's call, which may be asked (every capability declared), is served on a
/// connection the least recently used round made room for, whose retry is told so;
/// every other round is answered.
#[tokio::test]
async fn open_rounds_are_bounded_per_caller_and_never_keep_another_out() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [Kind::Stdio];
    let servers = Servers::start(&peers, &kinds).await;
    let limits = "[limits]\nmax_mount_connections = 4\nmax_caller_connections = 4\n\
                  max_rounds_per_caller = 2\n";
    let mount = servers.table(&peers, Kind::Stdio, "stdio", "path = \"/stdio/mcp\"");
    let front = Front::start(&peers, "stdio", None, &format!("{limits}\n{mount}")).await;
    let url = front.url(Kind::Stdio);
    let caller = |who, next_id| Caller {
        url: url.clone(),
        next_id,
        who: Some(who),
    };
    let (mut a, mut b, mut c) = (
        caller("Bearer caller-a", 0),
        caller("Bearer caller-b", 300),
        caller("Bearer caller-c", 600),
    );
    let mut f = Findings::default();
    let mut rounds = Vec::new();
    for i in 1..=2 {
        let round = a.first("ask_name", "elicitation/create").await;
        rounds.extend(
            f.note(format!("caller a's round {i}"), round)
                .map(|r| ("a", i, r)),
        );
    }
    let over = a.call("ask_name", json!({})).await;
    f.note(
        "caller a's third round, past max_rounds_per_caller",
        over.and_then(|(answer, id)| beyond_rounds(&answer, id)),
    );
    for i in 1..=2 {
        let round = c.first("ask_name", "elicitation/create").await;
        rounds.extend(
            f.note(format!("caller c's round {i}"), round)
                .map(|r| ("c", i, r)),
        );
    }
    let plain = b.call("get_time", json!({})).await;
    f.note(
        "caller b's call with every capability declared, the mount full of rounds",
        plain.and_then(|(answer, _)| text_of(&answer)),
    );
    for (who, i, round) in &rounds {
        let asker = if *who == "a" { &mut a } else { &mut c };
        let what = format!("caller {who}'s round {i} answered");
        let answered = asker
            .retry("ask_name", &round.state, round.answered(NAME))
            .await;
        // The least recently used round, caller a's second, made room for b's call.
        let verdict = answered.and_then(|(answer, id)| match (*who, *i) {
            ("a", 2) => ended_for_room(&answer, id),
            _ => text_of(&answer).and_then(|t| match t == format!("Hello, {NAME}") {
                true => Ok(()),
                false => Err(format!("answered {t:?}")),
            }),
        });
        f.note(what, verdict);
    }
    f.assert_none(&front, "open rounds and other callers");
    front.gateway.stop().await;
}
