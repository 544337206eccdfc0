//! The compiled overlays, immutable once built: per mount, its tool
//! overlays and render tools; across mounts, the widgets (current and
//! retained versions). [`OverlaySet`] is the unit a reload swaps.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::format::{RenderTool, ToolOverlay, ToolsList};
use super::site::Sources;
use super::widget::{Asset, Widget};

/// How many superseded versions of each widget stay readable after a reload
/// (see [`OverlaySet::retain_previous_versions`]).
pub(crate) const RETAINED_VERSIONS: usize = 8;

// === impl MountOverlays ===

/// The tool overlays and render tools of one mount (one upstream).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MountOverlays {
    /// Hashed: a `tools/list` page looks up every tool it lists.
    tools: HashMap<String, ToolOverlay, foldhash::fast::RandomState>,
    render: BTreeMap<String, RenderTool>,
    /// The freshness its tool listing announces, when its file sets one.
    tools_list: Option<ToolsList>,
}

impl MountOverlays {
    pub fn new(tools: impl IntoIterator<Item = (String, ToolOverlay)>) -> Self {
        MountOverlays {
            tools: tools.into_iter().collect(),
            render: BTreeMap::new(),
            tools_list: None,
        }
    }

    /// With the freshness its tool listing announces.
    pub fn with_tools_list(mut self, tools_list: Option<ToolsList>) -> Self {
        self.tools_list = tools_list;
        self
    }

    /// The freshness its file sets for its tool listing, if any.
    pub fn tools_list(&self) -> Option<ToolsList> {
        self.tools_list
    }

    /// Adds gateway-owned render tools.
    pub fn with_render(mut self, render: impl IntoIterator<Item = (String, RenderTool)>) -> Self {
        self.render.extend(render);
        self
    }

    /// The render tool called `name`, if any.
    pub fn render_tool(&self, name: &str) -> Option<&RenderTool> {
        self.render.get(name)
    }

    /// Every render tool, by name.
    pub fn render_tools(&self) -> impl Iterator<Item = (&str, &RenderTool)> {
        self.render.iter().map(|(name, tool)| (name.as_str(), tool))
    }

    /// The input schema of `render`: its own, or else the `output_schema` of
    /// the first data tool whose overlay declares one.
    pub fn render_input_schema<'a>(
        &'a self,
        render: &'a RenderTool,
    ) -> Option<&'a Map<String, Value>> {
        render.input_schema.as_ref().or_else(|| {
            render
                .data_tools
                .iter()
                .find_map(|t| self.tools.get(t)?.output_schema.as_ref())
        })
    }

    /// The overlay of the tool called `name`, if any.
    pub fn tool(&self, name: &str) -> Option<&ToolOverlay> {
        self.tools.get(name)
    }

    /// Every overlaid tool, by name.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ToolOverlay)> {
        let mut tools: Vec<_> = self.tools.iter().map(|(n, t)| (n.as_str(), t)).collect();
        tools.sort_unstable_by_key(|(name, _)| *name);
        tools.into_iter()
    }

    /// The widgets this mount's tools and render tools render.
    pub(crate) fn widget_names(&self) -> BTreeSet<&str> {
        let render = self.render.values().map(|r| r.widget.as_str());
        self.tools
            .values()
            .filter_map(|tool| tool.widget.as_deref())
            .chain(render)
            .collect()
    }
}

// === impl Widgets ===

/// The compiled widgets: the current version of each, by name, plus a few
/// superseded versions that stay readable by URI (hosts cache by URI and may
/// still ask for a version a conversation rendered earlier).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Widgets {
    current: BTreeMap<String, Arc<Widget>>,
    /// Superseded versions per widget name, oldest first, none equal to the
    /// current URI.
    history: BTreeMap<String, Vec<Arc<Widget>>>,
    by_uri: BTreeMap<String, Arc<Widget>>,
}

impl Widgets {
    pub fn new(widgets: impl IntoIterator<Item = Widget>) -> Self {
        let current: BTreeMap<_, _> = widgets
            .into_iter()
            .map(|widget| (widget.name.clone(), Arc::new(widget)))
            .collect();
        let mut widgets = Widgets {
            current,
            history: BTreeMap::new(),
            by_uri: BTreeMap::new(),
        };
        widgets.index();
        widgets
    }

    /// The current version of the widget called `name`.
    pub fn get(&self, name: &str) -> Option<&Widget> {
        self.current.get(name).map(Arc::as_ref)
    }

    /// The widget version served at `uri`, current or retained.
    pub fn by_uri(&self, uri: &str) -> Option<&Widget> {
        self.by_uri.get(uri).map(Arc::as_ref)
    }

    /// The current versions, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Widget> {
        self.current.values().map(Arc::as_ref)
    }

    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }

    /// The served file at `path` of the widget version whose files are under
    /// `prefix`, current or retained (a host may still load a chunk of a
    /// version it rendered earlier).
    pub fn asset(&self, prefix: &str, path: &str) -> Option<&Asset> {
        if prefix.is_empty() {
            return None;
        }
        self.by_uri
            .values()
            .filter(|w| w.asset_prefix == prefix)
            .find_map(|w| w.asset(path))
    }

    /// Keeps `previous`'s versions readable, at most `per_widget` superseded
    /// versions per name (the newest ones).
    pub(crate) fn retain_previous(&mut self, previous: &Widgets, per_widget: usize) {
        let names: BTreeSet<&String> = previous
            .current
            .keys()
            .chain(previous.history.keys())
            .collect();
        for name in names {
            let current_uri = self.current.get(name).map(|w| w.uri.as_str());
            let mut kept: Vec<Arc<Widget>> = Vec::new();
            let older = previous.history.get(name).into_iter().flatten();
            for widget in older.chain(previous.current.get(name)) {
                let stale = Some(widget.uri.as_str()) != current_uri;
                if stale && !kept.iter().any(|k| k.uri == widget.uri) {
                    kept.push(Arc::clone(widget));
                }
            }
            let excess = kept.len().saturating_sub(per_widget);
            kept.drain(..excess);
            if !kept.is_empty() {
                self.history.insert(name.clone(), kept);
            }
        }
        self.index();
    }

    fn index(&mut self) {
        let all = self.history.values().flatten().chain(self.current.values());
        self.by_uri = all.map(|w| (w.uri.clone(), Arc::clone(w))).collect();
    }
}

// === impl OverlaySet ===

/// Everything the overlay directory says, compiled: the unit a reload swaps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OverlaySet {
    mounts: BTreeMap<String, MountOverlays>,
    widgets: Widgets,
    /// Where each tool overlay and render tool is written, as written.
    sources: Arc<Sources>,
}

impl OverlaySet {
    pub fn new(mounts: BTreeMap<String, MountOverlays>, widgets: Widgets) -> Self {
        OverlaySet {
            mounts,
            widgets,
            sources: Arc::default(),
        }
    }

    /// Records where each overlay is written, for messages and for the
    /// comparison with each upstream's live listing.
    pub(crate) fn with_sources(mut self, sources: Sources) -> Self {
        self.sources = Arc::new(sources);
        self
    }

    /// Where each tool overlay and render tool is written, as written.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The overlays of the upstream mounted as `name`.
    pub fn mount(&self, name: &str) -> Option<&MountOverlays> {
        self.mounts.get(name)
    }

    /// One line per key a widget manifest's `meta` sets over a key the
    /// gateway writes itself (tools are told per listing).
    pub fn meta_overrides(&self) -> Vec<String> {
        self.widgets
            .iter()
            .flat_map(|w| {
                w.meta_overrides.iter().map(move |key| {
                    format!(
                        "widget `{}`: meta sets _meta[\"{key}\"], which the gateway writes itself; the meta value is used",
                        w.name
                    )
                })
            })
            .collect()
    }

    /// Every mount that has overlays, by name.
    pub fn mounts(&self) -> impl Iterator<Item = (&str, &MountOverlays)> {
        self.mounts.iter().map(|(name, m)| (name.as_str(), m))
    }

    pub fn widgets(&self) -> &Widgets {
        &self.widgets
    }

    /// The current widgets rendered by `mount`'s tools: what its
    /// `resources/list` gains.
    pub fn widgets_for(&self, mount: &str) -> Vec<&Widget> {
        let Some(overlays) = self.mounts.get(mount) else {
            return Vec::new();
        };
        let names = overlays.widget_names();
        names
            .into_iter()
            .filter_map(|n| self.widgets.get(n))
            .collect()
    }

    /// After a reload: keep the widget versions `previous` served readable
    /// (bounded by [`RETAINED_VERSIONS`]).
    pub fn retain_previous_versions(&mut self, previous: &OverlaySet) {
        self.widgets
            .retain_previous(&previous.widgets, RETAINED_VERSIONS);
    }

    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.widgets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::format::WidgetManifest;

    fn version(html: &str) -> Widget {
        Widget::compile("clock", &WidgetManifest::default(), html.into())
    }

    #[test]
    fn superseded_versions_stay_readable_within_a_bound() {
        let mut set = OverlaySet::new(Default::default(), Widgets::new([version("v0")]));
        let mut uris = vec![set.widgets().get("clock").unwrap().uri.clone()];
        for i in 1..=RETAINED_VERSIONS + 2 {
            let mut next = OverlaySet::new(
                Default::default(),
                Widgets::new([version(&format!("v{i}"))]),
            );
            next.retain_previous_versions(&set);
            uris.push(next.widgets().get("clock").unwrap().uri.clone());
            set = next;
        }
        let readable: Vec<bool> = uris
            .iter()
            .map(|u| set.widgets().by_uri(u).is_some())
            .collect();
        let dropped = uris.len() - 1 - RETAINED_VERSIONS;
        assert!(readable[..dropped].iter().all(|r| !r), "{readable:?}");
        assert!(readable[dropped..].iter().all(|r| *r), "{readable:?}");
        assert_eq!(
            set.widgets().iter().count(),
            1,
            "only the current version is listed"
        );

        // An unchanged reload adds no history.
        let mut same = OverlaySet::new(
            Default::default(),
            Widgets::new([version(&format!("v{}", RETAINED_VERSIONS + 2))]),
        );
        same.retain_previous_versions(&set);
        assert_eq!(same, set);
    }
}
