//! [`Inspection`]: everything reading an overlay directory found, with
//! where each part is written.

use std::path::PathBuf;

use super::error::LoadError;
use crate::overlay::format::WidgetManifest;
use crate::overlay::set::OverlaySet;
use crate::overlay::site::{RenderSite, ToolSite};

/// Everything reading an overlay directory found, kept even when some of it
/// is broken: `check` reports the errors and still compares the tools that
/// parsed with the live upstream, pointing back into the files.
#[derive(Debug, Clone, Default)]
pub struct Inspection {
    /// The parts that passed every check (all of it when `errors` is empty).
    pub set: OverlaySet,
    /// Every problem, in file then line order.
    pub errors: Vec<LoadError>,
    /// Every mount file that parsed, in name order.
    pub mount_files: Vec<MountFileSite>,
    /// Every tool table of those files, broken or not.
    pub tools: Vec<ToolSite>,
    /// Every render tool table of those files that parsed.
    pub renders: Vec<RenderSite>,
    /// Every widget folder whose manifest parsed and passed its checks.
    pub widgets: Vec<WidgetSite>,
}

/// Where one widget's manifest is written, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct WidgetSite {
    /// The folder name.
    pub name: String,
    /// `widget.toml` or `widget.json`; where one would go when the folder
    /// has none.
    pub manifest_file: PathBuf,
    /// The manifest (the defaults when the folder has none).
    pub manifest: WidgetManifest,
}

/// A mount file and the mount (upstream name) it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountFileSite {
    pub file: PathBuf,
    pub mount: String,
    /// Whether a top-level `upstream` key names the mount (else the file
    /// name does), and the line of that key when known.
    pub(crate) upstream_key: bool,
    pub(crate) upstream_line: Option<usize>,
    /// Whether `mount` is an app's name: the file's entries went to the
    /// app's members.
    pub app: bool,
}

impl Inspection {
    /// Mount files whose mount is none of `configured`: the gateway never
    /// applies them (it looks overlays up by mount). `check` reports these as
    /// problems; `serve` warns of them at start and after each reload.
    pub fn unconfigured(&self, configured: &[&str]) -> Vec<LoadError> {
        let names = if configured.is_empty() {
            "(none)".to_owned()
        } else {
            let quoted: Vec<String> = configured.iter().map(|n| format!("'{n}'")).collect();
            quoted.join(", ")
        };
        self.mount_files
            .iter()
            .filter(|site| !site.app && !configured.contains(&site.mount.as_str()))
            .map(|site| {
                let (line, place, reason) = if site.upstream_key {
                    (
                        site.upstream_line,
                        Some("upstream".to_owned()),
                        format!(
                            "no upstream named '{}' is configured (configured: {names})",
                            site.mount
                        ),
                    )
                } else {
                    (
                        None,
                        None,
                        format!(
                            "the file name makes these the tools of upstream '{}', which is not configured (configured: {names}); rename the file or set `upstream = \"…\"`",
                            site.mount
                        ),
                    )
                };
                LoadError {
                    file: site.file.clone(),
                    line,
                    place,
                    reason,
                }
            })
            .collect()
    }

    /// One line on what applies to `mount`: its overlay files, and how many
    /// tools, render tools and widgets they give it.
    pub fn mount_summary(&self, mount: &str) -> String {
        let files: Vec<String> = self
            .mount_files
            .iter()
            .filter(|site| site.mount == mount || (site.app && self.gives(&site.file, mount)))
            .map(|site| {
                site.file.file_name().map_or_else(
                    || site.file.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                )
            })
            .collect();
        if files.is_empty() {
            return format!("upstream '{mount}': no overlay file applies; served unchanged");
        }
        let overlays = self.set.mount(mount);
        let tools = overlays.map_or(0, |m| m.tools().count());
        let renders = overlays.map_or(0, |m| m.render_tools().count());
        let widgets = self.set.widgets_for(mount).len();
        format!(
            "upstream '{mount}': overlays from {} ({tools} tool{}, {renders} render tool{}, {widgets} widget{})",
            files.join(", "),
            plural(tools),
            plural(renders),
            plural(widgets)
        )
    }
}

impl Inspection {
    /// Whether the file `file` has a tool or render tool for `mount`.
    fn gives(&self, file: &std::path::Path, mount: &str) -> bool {
        let tools = self.tools.iter().map(|t| (&t.file, &t.mount));
        let renders = self.renders.iter().map(|r| (&r.file, &r.mount));
        tools.chain(renders).any(|(f, m)| f == file && m == mount)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
