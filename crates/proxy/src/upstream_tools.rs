//! What each upstream last listed, as seen in the `tools/list` responses
//! passing through (and the probe at start): render tools yield to the
//! upstream's names, and the overlays are compared with the listing as
//! `check` compares them ([`mcp_ui_rewrite::rewrite::listing`]). Each finding is
//! logged once per overlay snapshot and listing: on the first whole listing,
//! after each reload, and when the upstream's tools change.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::live::Live;
use mcp_ui_model::config::{Limits, Mount};
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_rewrite::rewrite::listing::{self, Findings, Listed, ListedPage};
use mcp_ui_upstream::probe::{self, Prober};

/// The tools each upstream last listed, by mount.
#[derive(Debug, Default)]
pub struct UpstreamTools {
    by_mount: Mutex<HashMap<String, Known>>,
    /// By mount: what was last compared, so that each finding is said once.
    compared: Mutex<HashMap<String, Compared>>,
}

/// One upstream's last listing.
#[derive(Debug, Default)]
struct Known {
    /// Hashed: a `tools/list` page asks for every render tool's name.
    names: HashSet<String, foldhash::fast::RandomState>,
    /// The names in the order listed (messages list them so).
    order: Vec<String>,
    /// The overlaid tools, each as sent.
    overlaid: Vec<String>,
}

/// An overlay snapshot compared with a listing (names and overlaid tools).
#[derive(Debug)]
struct Compared {
    overlays: Arc<OverlaySet>,
    order: Vec<String>,
    overlaid: Vec<String>,
}

impl UpstreamTools {
    /// Whether `mount`'s upstream listed a tool called `name`.
    pub fn has(&self, mount: &str, name: &str) -> bool {
        let map = self.by_mount.lock().unwrap_or_else(|e| e.into_inner());
        map.get(mount).is_some_and(|k| k.names.contains(name))
    }

    /// Records one `tools/list` page; the first page replaces what was known.
    pub fn record(&self, mount: &str, first_page: bool, page: ListedPage) {
        let mut map = self.by_mount.lock().unwrap_or_else(|e| e.into_inner());
        let known = map.entry(mount.to_owned()).or_default();
        if first_page {
            // The same listing again (the usual case): nothing to change.
            if known.order == page.names && known.overlaid == page.overlaid {
                return;
            }
            known.names.clear();
            known.order.clear();
            known.overlaid.clear();
        }
        known.names.extend(page.names.iter().cloned());
        known.order.extend(page.names);
        known.overlaid.extend(page.overlaid);
    }

    /// Records a whole listing (every tool as sent), as the probe at start
    /// fetched it.
    pub(crate) fn record_listing(&self, mount: &str, tools: &[Value], overlays: &OverlaySet) {
        let page = ListedPage::of(tools, overlays.mount(mount));
        self.record(mount, true, page);
    }

    /// Compares `overlays` for `mount` with the upstream's last whole
    /// listing and logs what is found, unless this snapshot and this
    /// listing were compared already. Returns what was said.
    pub fn compare(&self, mount: &str, overlays: &Arc<OverlaySet>) -> Option<Findings> {
        let sources = overlays.sources();
        if !sources.has(mount) {
            return None;
        }
        let found = {
            let map = self.by_mount.lock().unwrap_or_else(|e| e.into_inner());
            let known = map.get(mount)?;
            let mut compared = self.compared.lock().unwrap_or_else(|e| e.into_inner());
            let same = compared.get(mount).is_some_and(|c| {
                Arc::ptr_eq(&c.overlays, overlays)
                    && c.order == known.order
                    && c.overlaid == known.overlaid
            });
            if same {
                return None;
            }
            compared.insert(
                mount.to_owned(),
                Compared {
                    overlays: overlays.clone(),
                    order: known.order.clone(),
                    overlaid: known.overlaid.clone(),
                },
            );
            let listed = Listing::of(known);
            listing::findings(sources.tools_of(mount), sources.renders_of(mount), &listed)
        };
        say(mount, &found);
        Some(found)
    }
}

/// At start, beside serving: each upstream that overlays apply to is
/// listed once (as `check` lists it) and the overlays compared with its
/// listing, so that their problems are said before any client lists. An
/// upstream that does not answer (yet) is compared on the first listing a
/// client asks for.
pub async fn compare_at_start(
    mounts: &[&Mount],
    limits: &Limits,
    live: &Live,
    tools: &UpstreamTools,
) {
    let overlays = live.load();
    let overlaid = mounts.iter().filter(|m| overlays.sources().has(&m.name));
    // Each wait of a probe is bounded by the configured limits.
    let listings = overlaid.map(|mount| async move {
        (
            mount,
            probe::list_tools(mount, limits, Prober::Startup).await,
        )
    });
    for (mount, listed) in futures_util::future::join_all(listings).await {
        match listed {
            Ok(listing) => {
                tools.record_listing(&mount.name, &listing.tools, &overlays);
                tools.compare(&mount.name, &live.load());
            }
            Err(e) => tracing::info!(
                upstream = %mount.name,
                "overlays not compared with the upstream's tools yet ({e}); they will be on the first listing a client asks for"
            ),
        }
    }
}

/// Logs each finding as `check` prints it: problems, then warnings.
pub fn say(mount: &str, found: &Findings) {
    for problem in &found.problems {
        tracing::warn!(upstream = %mount, "{problem}");
    }
    for warning in &found.warnings {
        tracing::warn!(upstream = %mount, "warning: {warning}");
    }
}

/// A [`Known`] listing as the rules read it: every name, and the overlaid
/// tools parsed.
struct Listing<'a> {
    known: &'a Known,
    tools: Vec<Value>,
}

impl<'a> Listing<'a> {
    fn of(known: &'a Known) -> Self {
        let tools = known
            .overlaid
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect();
        Listing { known, tools }
    }
}

impl Listed for Listing<'_> {
    fn names(&self) -> Vec<&str> {
        self.known.order.iter().map(String::as_str).collect()
    }

    fn has(&self, name: &str) -> bool {
        self.known.names.contains(name)
    }

    fn tool(&self, name: &str) -> Option<&Value> {
        self.tools.tool(name)
    }
}
