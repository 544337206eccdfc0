//! Widget folders read into compiled widgets: manifest, entry document and
//! local assets.

use std::path::{Path, PathBuf};

use super::inspection::WidgetSite;
use super::loader::Loader;
use super::parse::{Located, key_line, line_of};
use crate::overlay::format::{BridgeKind, INLINE_LIMIT, WidgetManifest};
use crate::overlay::validate;
use crate::overlay::widget::{self, Widget};

/// The folder holding one sub-folder per widget.
pub const WIDGETS_DIR: &str = "widgets";
/// Manifest file names in a widget folder, either one (or none).
const MANIFESTS: [&str; 2] = ["widget.toml", "widget.json"];

impl Loader {
    /// Compiles every widget folder; also returns the names of all folders
    /// that look like widgets, compiled or not, so a tool naming a broken
    /// widget is not reported a second time as naming a missing one.
    pub(super) fn widgets(&mut self) -> (Vec<Widget>, Vec<String>) {
        let dir = self.root.join(WIDGETS_DIR);
        if !dir.exists() {
            return (Vec::new(), Vec::new());
        }
        let mut compiled = Vec::new();
        let mut names = Vec::new();
        for path in self.entries(&dir) {
            let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            if name.starts_with('.') || !path.is_dir() {
                continue;
            }
            names.push(name.clone());
            if let Err(reason) = validate::widget_name(&name) {
                self.error(&path, None, None, reason.to_string());
                continue;
            }
            if let Some(widget) = self.widget(&path, &name) {
                compiled.push(widget);
            }
        }
        for (widget, missing) in widget::link::link(&mut compiled) {
            let reason = format!(
                "{{{{widget:{missing}}}}} names no widget; the widgets are the folders of {}",
                dir.display()
            );
            self.error(&dir.join(&widget), None, None, reason);
        }
        (compiled, names)
    }

    /// The reason of a tool's or render tool's `problem`, with, for a
    /// missing widget folder found one level down (a folder copied into
    /// the overlay directory instead of its content), where it is; or else
    /// the folder whose name is close (a typo).
    pub(super) fn widget_reason(
        &self,
        problem: &validate::Problem,
        widget: Option<&str>,
    ) -> String {
        let Some(name) = widget.filter(|_| problem.place == "widget") else {
            return problem.reason.clone();
        };
        if let Some(found) = self.nested_widget(name) {
            return format!(
                "{}; but {} exists, one level down: was a folder copied into {} instead of its content? Move its files up (`cp -r SRC/. {}/` copies a folder's content)",
                problem.reason,
                found.display(),
                self.root.display(),
                self.root.display(),
            );
        }
        let names: Vec<&str> = self.widget_names.iter().map(String::as_str).collect();
        match validate::nearest(name, &names) {
            Some(near) => format!("{}; did you mean `{near}`?", problem.reason),
            None => problem.reason.clone(),
        }
    }

    /// `<dir>/<sub>/widgets/<name>/`, for any folder `<sub>` of the overlay
    /// directory other than `widgets` (dot folders included: they are
    /// ignored too).
    fn nested_widget(&self, name: &str) -> Option<PathBuf> {
        let entries = std::fs::read_dir(&self.root).ok()?;
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().is_some_and(|n| n != WIDGETS_DIR) && p.is_dir())
            .collect();
        subs.sort();
        subs.into_iter()
            .map(|sub| sub.join(WIDGETS_DIR).join(name))
            .find(|candidate| candidate.is_dir())
    }

    fn widget(&mut self, folder: &Path, name: &str) -> Option<Widget> {
        let (manifest, manifest_file) = self.manifest(folder)?;
        self.widget_sites.push(WidgetSite {
            name: name.to_owned(),
            manifest_file,
            manifest: manifest.clone(),
        });
        let entry_path = folder.join(manifest.entry());
        let html = match self.read(&entry_path) {
            Ok(html) => html,
            Err(reason) => {
                self.error(&entry_path, None, None, reason);
                return None;
            }
        };
        let entry_dir = Path::new(manifest.entry())
            .parent()
            .and_then(Path::to_str)
            .unwrap_or_default()
            .to_owned();
        // The document with its files stays within the limit too: every
        // file read counts once.
        let mut taken = html.len();
        let max = self.max_bytes;
        let loader = &*self;
        let mut read = |relative: &str| {
            let room = max.saturating_sub(taken);
            let bytes = loader.read_bytes_within(&folder.join(relative), room, Some(taken))?;
            taken += bytes.len();
            Ok(bytes)
        };
        let options = widget::BundleOptions {
            entry_dir: &entry_dir,
            base: manifest.base(),
            inline_max: manifest.inline_limit.unwrap_or(INLINE_LIMIT),
            asset_base: self.asset_base.as_deref(),
            placeholder: manifest.base_placeholder(),
        };
        let bundled = widget::bundle(&html, &options, &mut read);
        let bundled = match bundled {
            Ok(bundled) => bundled,
            Err(errors) => {
                self.bundle_errors(folder, &entry_path, &html, errors);
                return None;
            }
        };
        let allowed = self.remote_assets_allowed(&entry_path, &html, &bundled.remote, &manifest);
        if !allowed {
            return None;
        }
        let mut manifest = manifest;
        if !bundled.assets.is_empty()
            && let Some(origin) = self.asset_base.as_deref().and_then(validate::url_origin)
        {
            // The host's CSP must let the document load what the gateway
            // serves: its own origin, and nothing else, is added.
            let csp = manifest.csp.get_or_insert_default();
            let domains = csp.resource_domains.get_or_insert_default();
            if !domains.contains(&origin) {
                domains.push(origin);
            }
        }
        let bridge = manifest
            .bridge
            .unwrap_or_else(|| widget::bridge::detect(&bundled.html, &bundled.assets));
        let html = match bridge {
            BridgeKind::OpenAi => widget::bridge::inject(&bundled.html),
            BridgeKind::McpApps => bundled.html,
        };
        let mut widget = Widget::compile(name, &manifest, html);
        widget.bridge = bridge;
        Some(widget.with_assets(bundled.prefix, bundled.assets))
    }

    /// What kept a widget from bundling, each at the file and line it is
    /// in (the entry document's, or the file it names).
    fn bundle_errors(
        &mut self,
        folder: &Path,
        entry_path: &Path,
        html: &str,
        errors: Vec<widget::BundleError>,
    ) {
        for e in errors {
            match e.file {
                None => {
                    let line = line_of(html, e.offset);
                    self.error(entry_path, Some(line), None, e.reason);
                }
                Some(file) => {
                    let path = folder.join(&file);
                    let line = self.read(&path).ok().map(|text| line_of(&text, e.offset));
                    self.error(&path, line, None, e.reason);
                }
            }
        }
    }

    /// Remote scripts and stylesheets stay remote; a host loads them only
    /// from origins in `csp.resource_domains`, so any other is an error now
    /// rather than a widget that silently breaks in the host.
    fn remote_assets_allowed(
        &mut self,
        entry_path: &Path,
        html: &str,
        remote: &[(usize, String)],
        manifest: &WidgetManifest,
    ) -> bool {
        let allowed = manifest
            .csp
            .as_ref()
            .and_then(|csp| csp.resource_domains.as_deref())
            .unwrap_or_default();
        let mut all_allowed = true;
        for (offset, url) in remote {
            let origin = validate::url_origin(url).unwrap_or_else(|| url.clone());
            if !validate::origin_allowed(&origin, allowed) {
                let reason = format!(
                    "\"{url}\" is remote, and its origin {origin} is not in csp.resource_domains of the manifest, so hosts would block it"
                );
                self.error(entry_path, Some(line_of(html, *offset)), None, reason);
                all_allowed = false;
            }
        }
        all_allowed
    }

    /// The folder's manifest and its file (where it would go, when absent).
    fn manifest(&mut self, folder: &Path) -> Option<(WidgetManifest, PathBuf)> {
        let present: Vec<PathBuf> = MANIFESTS
            .iter()
            .map(|m| folder.join(m))
            .filter(|p| p.exists())
            .collect();
        let path = match present.as_slice() {
            [] => return Some((WidgetManifest::default(), folder.join(MANIFESTS[0]))),
            [one] => one.clone(),
            [first, ..] => {
                let reason = "both widget.toml and widget.json exist; keep one".to_owned();
                self.error(first, None, None, reason);
                return None;
            }
        };
        let source = match self.read(&path) {
            Ok(source) => source,
            Err(reason) => {
                self.error(&path, None, None, reason);
                return None;
            }
        };
        let manifest: Result<WidgetManifest, Located> =
            if path.extension().is_some_and(|e| e == "json") {
                serde_json::from_str(&source).map_err(|e| Located::json(&e, 1))
            } else {
                toml::from_str(&source).map_err(|e| Located::toml(&e, &source))
            };
        let manifest = match manifest {
            Ok(manifest) => manifest,
            Err(e) => {
                self.error(&path, e.line, e.place, e.reason);
                return None;
            }
        };
        let problems = validate::manifest(&manifest);
        for problem in &problems {
            let line = key_line(&source, &problem.place);
            self.error(
                &path,
                line,
                Some(problem.place.clone()),
                problem.reason.clone(),
            );
        }
        problems.is_empty().then_some((manifest, path))
    }
}
