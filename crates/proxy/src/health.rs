//! Readiness: `/readyz` answers 200 when every upstream answered a real MCP
//! exchange (`initialize` and `tools/list`, through [`mcp_ui_upstream::probe`]) within
//! [`PROBE_TIMEOUT`], 503 naming each one that did not and why. Results are
//! cached for [`CACHE_FOR`], and concurrent checks share one probe, so the
//! endpoint can be polled often without loading the upstreams (a stdio
//! upstream's probe starts a child of its own).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use http::{Response, StatusCode};

use mcp_ui_model::config::{Limits, Mount};
use mcp_ui_model::reply::Body;
use mcp_ui_upstream::upstream::stdio::Fault;

/// How long one upstream may take to answer the probe.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a result is served before probing again.
pub(crate) const CACHE_FOR: Duration = Duration::from_secs(5);

/// One upstream's readiness: `Ok` or why not.
pub(crate) type Verdict = Result<(), String>;

/// The last readiness result, by mount.
pub struct Readiness {
    cached: tokio::sync::Mutex<Option<(Instant, Arc<Vec<Verdict>>)>>,
    /// The last result as up/down, for `mcp_gateway_upstream_up`.
    last: Mutex<Vec<Option<bool>>>,
}

impl Readiness {
    pub fn new(mounts: usize) -> Self {
        Readiness {
            cached: tokio::sync::Mutex::new(None),
            last: Mutex::new(vec![None; mounts]),
        }
    }

    /// Each mount's verdict, probed again when the cached one is older than
    /// [`CACHE_FOR`].
    pub(crate) async fn check(&self, upstreams: &Upstreams<'_>) -> Arc<Vec<Verdict>> {
        let mut cached = self.cached.lock().await;
        if let Some((at, verdicts)) = cached.as_ref()
            && at.elapsed() < CACHE_FOR
        {
            return verdicts.clone();
        }
        let verdicts =
            Arc::new(join_all((0..upstreams.mounts.len()).map(|m| probe(upstreams, m))).await);
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            verdicts.iter().map(|v| Some(v.is_ok())).collect();
        *cached = Some((Instant::now(), verdicts.clone()));
        verdicts
    }

    /// The last verdicts as up (true) or down, `None` before the first check.
    pub fn last(&self) -> Vec<Option<bool>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What readiness probes: the mounts, the limits their sessions use, and
/// each mount's crash record (stdio upstreams), by mount index.
pub struct Upstreams<'a> {
    pub mounts: Vec<&'a Mount>,
    pub limits: &'a Limits,
    pub faults: Vec<Option<Fault>>,
}

/// Whether mount `m`'s upstream answers now.
async fn probe(upstreams: &Upstreams<'_>, m: usize) -> Verdict {
    if let Some(fault) = known_fault(upstreams, m) {
        return Err(fault);
    }
    let mount = upstreams.mounts[m];
    match tokio::time::timeout(
        PROBE_TIMEOUT,
        mcp_ui_upstream::probe::list_tools(
            mount,
            upstreams.limits,
            mcp_ui_upstream::probe::Prober::Readiness,
        ),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        // An upstream that wants a token answers; the probe just has none.
        Ok(Err(e)) if e.requires_authorization() => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "upstream '{}' did not answer within {} s",
            mount.name,
            PROBE_TIMEOUT.as_secs()
        )),
    }
}

/// A fault the gateway already knows of for mount `m`: a stdio upstream
/// that keeps crashing and whose next start is held off.
fn known_fault(upstreams: &Upstreams<'_>, m: usize) -> Option<String> {
    let name = &upstreams.mounts[m].name;
    let fault = upstreams.faults[m]
        .as_ref()
        .filter(|f| f.retry_in.is_some())?;
    Some(format!(
        "upstream '{name}' crashed {} times in a row (last: {}); next start in {} s",
        fault.crashes,
        fault.last,
        fault.retry_in.unwrap_or_default().as_secs().max(1)
    ))
}

/// The `/readyz` response.
pub async fn readyz(readiness: &Readiness, upstreams: &Upstreams<'_>) -> Response<Body> {
    let verdicts = readiness.check(upstreams).await;
    let ready = verdicts.iter().all(Result::is_ok);
    let mut body = String::from(if ready { "ready\n" } else { "not ready\n" });
    for (m, verdict) in verdicts.iter().enumerate() {
        let name = &upstreams.mounts[m].name;
        match verdict {
            Ok(()) => body.push_str(&format!("upstream '{name}': ok\n")),
            Err(why) => body.push_str(&format!(
                "upstream '{name}': not ready: {}\n",
                why.replace('\n', " ")
            )),
        }
    }
    let mut r = Response::new(mcp_ui_model::reply::full(body));
    *r.status_mut() = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    r
}
