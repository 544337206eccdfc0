//! `mcp-ui-gateway check`: every problem of an overlay directory in one run,
//! one per line, each naming the file, the line and the key, so that one
//! edit-check cycle fixes them all.
//!
//! Three layers, each reporting everything it finds:
//! 1. what loading reports (syntax, unknown keys, missing widgets, status
//!    text over 64 characters, malformed CSP origins, …), the very errors the
//!    gateway would log on a reload;
//! 2. overlay files naming an upstream that is not configured, which the
//!    gateway would silently never apply;
//! 3. unless offline, each overlaid upstream's live `tools/list`: tools it
//!    does not have, file parameters its input schema cannot carry, result
//!    shaping that cannot work with the tool as it is, and render tools
//!    whose name an upstream tool takes (a collision: the upstream wins).
//!
//! Hazards that only might be problems (it depends on results no listing
//! shows) are warnings: printed, but they do not fail the check. So are the
//! app directories' rules ([`super::directory`]), unless `--strict` makes
//! them problems; for Claude's height rule, the inline widgets with a
//! `sample` are rendered in a headless browser first ([`super::heights`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{describe_transport, directory};
use mcp_ui_model::config::{AuthChallenge, Limits, Mount};
use mcp_ui_overlay::overlay::builtin::is_builtin_name;
use mcp_ui_overlay::overlay::load::WIDGETS_DIR;
use mcp_ui_overlay::overlay::{
    BridgeKind, Inspection, LoadError, LoadOptions, RenderSite, ToolSite, inspect_dir_with,
};
use mcp_ui_rewrite::rewrite::listing::findings;
use mcp_ui_upstream::probe::{self, Listing, Prober};

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Skip the live `tools/list` of the upstreams.
    pub offline: bool,
    /// The app directories' rules are problems, not warnings.
    pub strict: bool,
    /// Whose directories' rules apply (`--host`).
    pub hosts: directory::Hosts,
    /// How hosts sign in to the endpoints that ask them to (gathered from
    /// the configuration, and live from other issuers' metadata).
    pub sign_ins: Vec<directory::SignIn>,
    /// The gateway's `public_url`, when configured.
    pub public_url: Option<String>,
    /// The `[[app]]` endpoints an overlay file may name.
    pub apps: Vec<mcp_ui_overlay::overlay::AppScope>,
    /// The directory was named (`--overlays`): it must exist.
    pub dir_named: bool,
    /// How inline widgets are measured for Claude's height rule.
    pub heights: super::heights::Options,
}

/// Everything `check` found. A finding reads `file:line: key.path: reason`,
/// like the gateway's own reload errors.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// What must be fixed; any makes the check fail.
    pub problems: Vec<LoadError>,
    /// What may be wrong, depending on what the upstream returns.
    pub warnings: Vec<LoadError>,
    /// The overlay directory, for the summary.
    dir: PathBuf,
    files: usize,
    tools: usize,
    widgets: usize,
    offline: bool,
    /// Upstreams checked live, with their number of tools.
    checked: Vec<(String, usize)>,
    /// A line per widget folder: the bridge its code speaks, and how the
    /// gateway serves it.
    pub bridges: Vec<String>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// The one-line verdict printed last.
    pub fn summary(&self) -> String {
        let warnings = match self.warnings.len() {
            0 => String::new(),
            1 => ", 1 warning".into(),
            n => format!(", {n} warnings"),
        };
        if !self.is_clean() {
            let n = self.problems.len();
            let s = if n == 1 { "" } else { "s" };
            return format!("{n} problem{s} in {}{warnings}", self.dir.display());
        }
        let live = if self.offline {
            "not checked against the upstreams (--offline)".to_owned()
        } else if self.checked.is_empty() {
            "no upstream to check against".to_owned()
        } else {
            let each: Vec<String> = self
                .checked
                .iter()
                .map(|(name, tools)| format!("'{name}' ({})", plural(*tools, "tool")))
                .collect();
            format!("checked against upstream {}", each.join(", "))
        };
        format!(
            "{} OK: {}, {} overlaid, {}; {live}{warnings}",
            self.dir.display(),
            plural(self.files, "overlay file"),
            plural(self.tools, "tool"),
            plural(self.widgets, "widget"),
        )
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Checks the overlay directory `dir` against the configured `mounts`, and
/// every mount's upstream (overlaid or not) against its live listing.
/// Progress goes to `progress`. `Err` is for a directory that cannot be
/// checked at all (a usage error), not for problems in it; a directory that
/// is not named and does not exist, with upstreams to check, is a warning
/// (the gateway serves them without overlays).
pub async fn run(
    dir: &Path,
    mounts: &[Mount],
    limits: &Limits,
    options: Options,
    progress: &mut dyn Write,
) -> Result<Report, String> {
    let no_dir = !dir.is_dir();
    if no_dir && (mounts.is_empty() || options.offline || options.dir_named) {
        return Err(format!(
            "the overlay directory {} does not exist (set it with --overlays or `overlays` in the configuration)",
            dir.display()
        ));
    }
    let load = LoadOptions {
        max_bytes: limits.max_widget_bytes,
        public_url: options.public_url.clone(),
        apps: options.apps.clone(),
    };
    let inspection = if no_dir {
        Inspection::default()
    } else {
        inspect_dir_with(dir, &load)
    };
    let mut report = Report {
        dir: dir.to_path_buf(),
        files: inspection.mount_files.len(),
        tools: inspection.tools.len(),
        widgets: inspection.set.widgets().iter().count(),
        offline: options.offline,
        ..Report::default()
    };
    report.problems.extend(inspection.errors.iter().cloned());
    if no_dir {
        report.warnings.push(LoadError {
            file: dir.to_path_buf(),
            line: None,
            place: None,
            reason: "does not exist: nothing is overlaid; the upstreams are checked as they are"
                .into(),
        });
    }
    unknown_upstreams(&inspection, mounts, &mut report);
    unused_widgets(dir, &inspection, &mut report);
    report.bridges = bridges(&inspection);
    let mut listings: Vec<(&str, Listing)> = Vec::new();
    if !options.offline {
        for mount in mounts {
            let checked = check_live(dir, mount, &inspection, limits, progress, &mut report);
            if let Some(listing) = checked.await {
                listings.push((&mount.name, listing));
            }
        }
    }
    directory_rules(
        dir,
        &inspection,
        mounts,
        &listings,
        &options,
        progress,
        &mut report,
    )
    .await;
    let order = |a: &LoadError, b: &LoadError| (&a.file, a.line).cmp(&(&b.file, b.line));
    report.problems.sort_by(order);
    report.warnings.sort_by(order);
    Ok(report)
}

/// The overlays of `mount` checked against its live `tools/list` (progress
/// to `progress`): the listing, or `None` (a problem in `report`) when the
/// upstream cannot be listed.
async fn check_live(
    dir: &Path,
    mount: &Mount,
    inspection: &Inspection,
    limits: &Limits,
    progress: &mut dyn Write,
    report: &mut Report,
) -> Option<Listing> {
    let sites: Vec<&ToolSite> = inspection
        .tools
        .iter()
        .filter(|site| site.mount == mount.name)
        .collect();
    let renders: Vec<&RenderSite> = inspection
        .renders
        .iter()
        .filter(|site| site.mount == mount.name)
        .collect();
    // An upstream nothing overlays is still listed: that it answers
    // at all (its TLS, its command, its URL) is what `serve` needs.
    let _ = writeln!(
        progress,
        "checking upstream '{}' ({})",
        mount.name,
        describe_transport(mount)
    );
    match probe::list_tools(mount, limits, Prober::Command).await {
        Ok(listing) => {
            let from = listing
                .server()
                .map(|s| format!(" from {s}"))
                .unwrap_or_default();
            let _ = writeln!(progress, "  {}{from}", plural(listing.tools.len(), "tool"));
            report
                .checked
                .push((mount.name.clone(), listing.tools.len()));
            let found = findings(sites, renders, &listing.tools);
            report.problems.extend(found.problems);
            report.warnings.extend(found.warnings);
            Some(listing)
        }
        Err(e) => {
            let (file, whose) = match (sites.first(), renders.first()) {
                (Some(site), _) => (site.file.clone(), String::new()),
                (None, Some(site)) => (site.file.clone(), String::new()),
                (None, None) => (dir.to_path_buf(), format!("upstream '{}': ", mount.name)),
            };
            report.problems.push(LoadError {
                file,
                line: None,
                place: None,
                reason: format!(
                    "{whose}cannot check against the live tools/list: {e} (fix the upstream, or run with --offline)"
                ),
            });
            None
        }
    }
}

/// The app directories' rules, over the listings `check` obtained and the
/// widget heights it measures for Claude's (progress to `progress`):
/// warnings, or problems with `--strict`; each tagged with the hosts that
/// ask for it.
async fn directory_rules(
    dir: &Path,
    inspection: &Inspection,
    mounts: &[Mount],
    listings: &[(&str, Listing)],
    options: &Options,
    progress: &mut dyn Write,
    report: &mut Report,
) {
    // Only Claude's directory has a height rule.
    let heights = if options.hosts.claude {
        super::heights::measure(inspection, mounts, &options.heights, progress).await
    } else {
        Vec::new()
    };
    // Where a table for a mount's tool goes: the mount file naming it, else
    // the one its name would make.
    let files: Vec<PathBuf> = mounts
        .iter()
        .map(|mount| {
            inspection
                .mount_files
                .iter()
                .find(|f| f.mount == mount.name && !f.app)
                .map(|f| f.file.clone())
                .unwrap_or_else(|| dir.join(format!("{}.toml", mount.name)))
        })
        .collect();
    let upstreams: Vec<directory::Upstream<'_>> = mounts
        .iter()
        .zip(&files)
        .map(|(mount, file)| directory::Upstream {
            mount: &mount.name,
            file,
            in_band_challenges: mount.auth_challenge == AuthChallenge::InBand,
            tools: listings
                .iter()
                .find(|(name, _)| *name == mount.name)
                .map(|(_, listing)| listing.tools.as_slice()),
        })
        .collect();
    let input = directory::Input {
        tools: &inspection.tools,
        renders: &inspection.renders,
        widgets: &inspection.widgets,
        upstreams: &upstreams,
        public_url: options.public_url.as_deref(),
        hosts: options.hosts,
        sign_ins: &options.sign_ins,
        heights: &heights,
    };
    let findings = directory::findings(&input).into_iter().map(|f| LoadError {
        file: f.file,
        line: f.line,
        place: f.place,
        reason: format!("{} {}", f.rule.tag(), f.message),
    });
    if options.strict {
        report.problems.extend(findings);
    } else {
        report.warnings.extend(findings);
    }
}

/// Overlay files whose mount is not a configured upstream: the gateway never
/// applies them, and says nothing, since it looks overlays up by mount.
fn unknown_upstreams(inspection: &Inspection, mounts: &[Mount], report: &mut Report) {
    let configured: Vec<&str> = mounts.iter().map(|m| m.name.as_str()).collect();
    report.problems.extend(inspection.unconfigured(&configured));
}

/// What each widget folder's code speaks, and whether the manifest said so.
fn bridges(inspection: &Inspection) -> Vec<String> {
    inspection
        .widgets
        .iter()
        .filter_map(|site| {
            let widget = inspection.set.widgets().get(&site.name)?;
            let how = if site.manifest.bridge.is_some() {
                "set by bridge in the manifest"
            } else {
                "detected"
            };
            Some(match widget.bridge {
                BridgeKind::OpenAi => format!(
                    "widget {}: window.openai, served with the script that implements it on the MCP Apps ui/* messages ({how}; bridge = \"mcp-apps\" serves it as written)",
                    site.name
                ),
                BridgeKind::McpApps => format!(
                    "widget {}: MCP Apps ui/*, served as written ({how})",
                    site.name
                ),
            })
        })
        .collect()
}

/// A widget no tool names is never listed nor served: most likely a tool's
/// `widget` key misses it, or it is left over.
fn unused_widgets(dir: &Path, inspection: &Inspection, report: &mut Report) {
    // A mount file that could not be read whole may be what names the
    // widget: better nothing than a warning that misleads.
    if report.problems.iter().any(|p| p.file.parent() == Some(dir)) {
        return;
    }
    let used: BTreeSet<&str> = inspection
        .tools
        .iter()
        .filter_map(|site| site.overlay.as_ref()?.widget.as_deref())
        .chain(inspection.renders.iter().map(|r| r.render.widget.as_str()))
        .collect();
    for widget in inspection.set.widgets().iter() {
        if !used.contains(widget.name.as_str()) && !is_builtin_name(&widget.name) {
            report.warnings.push(LoadError {
                file: dir.join(WIDGETS_DIR).join(&widget.name),
                line: None,
                place: None,
                reason: "no tool names this widget, so no host will see it".into(),
            });
        }
    }
}
