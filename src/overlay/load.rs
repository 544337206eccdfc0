//! Reading an overlay directory into an [`OverlaySet`]: the only code of the
//! overlay module that touches the filesystem. It reports every problem at
//! once (file, line when known, key path, reason) so one edit-check cycle
//! fixes them all, and refuses any file whose real path leaves the directory.
//!
//! Layout: `<dir>/<mount>.toml` or `.json` (tool overlays of the upstream
//! mounted under that name), `<dir>/widgets/<widget>/` (one folder per
//! widget). Anything else (`README.md`, `schema/`, dot files) is ignored.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::format::{RenderTool, ToolOverlay, WidgetManifest};
use super::set::{MountOverlays, OverlaySet, Widgets};
use super::validate;
use super::widget::{self, Widget};

/// The folder holding one sub-folder per widget.
pub const WIDGETS_DIR: &str = "widgets";
/// Manifest file names in a widget folder, either one (or none).
const MANIFESTS: [&str; 2] = ["widget.toml", "widget.json"];

/// One problem in the overlay directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file (or folder) at fault.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Key path inside the file (`tools.get_time.invoking`) or the HTML
    /// element at fault.
    pub place: Option<String>,
    pub reason: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(place) = &self.place {
            write!(f, "{place}: ")?;
        }
        write!(f, "{}", self.reason)
    }
}

impl std::error::Error for LoadError {}

/// Every problem found, in file then line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadErrors(pub Vec<LoadError>);

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "{n} problem{} in the overlays:",
            if n == 1 { "" } else { "s" }
        )?;
        for error in &self.0 {
            write!(f, "\n  {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

/// Reads and compiles the overlay directory `dir`.
pub fn load_dir(dir: &Path) -> Result<OverlaySet, LoadErrors> {
    let inspection = inspect_dir(dir);
    if inspection.errors.is_empty() {
        Ok(inspection.set)
    } else {
        Err(LoadErrors(inspection.errors))
    }
}

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
}

/// Where one render tool is written.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderSite {
    pub file: PathBuf,
    /// Line where the render tool's table starts.
    pub line: Option<usize>,
    pub mount: String,
    pub name: String,
    pub render: RenderTool,
}

/// A mount file and the mount (upstream name) it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountFileSite {
    pub file: PathBuf,
    pub mount: String,
    /// Whether a top-level `upstream` key names the mount (else the file
    /// name does), and the line of that key when known.
    pub upstream_key: bool,
    pub upstream_line: Option<usize>,
}

/// Where one tool overlay is written.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSite {
    pub file: PathBuf,
    /// Line where the tool's table starts.
    pub line: Option<usize>,
    pub mount: String,
    pub tool: String,
    /// The overlay as parsed, even if it broke a rule; `None` when it did not
    /// parse.
    pub overlay: Option<ToolOverlay>,
}

/// Reads the overlay directory `dir`, reporting every problem instead of
/// stopping at the first; [`load_dir`] is this, all or nothing.
pub fn inspect_dir(dir: &Path) -> Inspection {
    let mut loader = Loader {
        root: dir.to_path_buf(),
        real_root: PathBuf::new(),
        errors: Vec::new(),
        mount_files: Vec::new(),
        tools: Vec::new(),
        renders: Vec::new(),
    };
    match fs::canonicalize(dir) {
        Ok(real) => loader.real_root = real,
        Err(e) => {
            loader.error(
                dir,
                None,
                None,
                format!("cannot open the overlay directory: {e}"),
            );
            return Inspection {
                errors: loader.errors,
                ..Inspection::default()
            };
        }
    }
    let (widgets, widget_names) = loader.widgets();
    let mounts = loader.mounts(&|name| widget_names.iter().any(|n| n == name));
    let mut errors = loader.errors;
    errors.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    Inspection {
        set: OverlaySet::new(mounts, Widgets::new(widgets)),
        errors,
        mount_files: loader.mount_files,
        tools: loader.tools,
        renders: loader.renders,
    }
}

/// A mount file, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MountFile<T> {
    /// Ignored; lets JSON editors find the schema.
    #[serde(rename = "$schema")]
    #[allow(dead_code)]
    schema: Option<String>,
    /// The mount these tools belong to; default: the file name's stem.
    upstream: Option<String>,
    #[serde(default = "BTreeMap::new")]
    tools: BTreeMap<String, T>,
    /// Gateway-owned render tools, by name.
    #[serde(default = "BTreeMap::new")]
    render: BTreeMap<String, RenderTool>,
}

struct Loader {
    /// The directory as given, for messages.
    root: PathBuf,
    /// Its real path: no file read may resolve outside it.
    real_root: PathBuf,
    errors: Vec<LoadError>,
    mount_files: Vec<MountFileSite>,
    tools: Vec<ToolSite>,
    renders: Vec<RenderSite>,
}

impl Loader {
    fn error(&mut self, file: &Path, line: Option<usize>, place: Option<String>, reason: String) {
        self.errors.push(LoadError {
            file: file.to_path_buf(),
            line,
            place,
            reason,
        });
    }

    /// The entries of `dir`, sorted by name so results and messages do not
    /// depend on the filesystem's order.
    fn entries(&mut self, dir: &Path) -> Vec<PathBuf> {
        match fs::read_dir(dir) {
            Ok(entries) => {
                let mut paths: Vec<PathBuf> =
                    entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
                paths.sort();
                paths
            }
            Err(e) => {
                self.error(dir, None, None, format!("cannot list: {e}"));
                Vec::new()
            }
        }
    }

    /// Reads a text file, refusing one whose real path (symlinks followed)
    /// is outside the overlay directory.
    fn read(&self, path: &Path) -> Result<String, String> {
        let real = fs::canonicalize(path).map_err(|e| format!("cannot open: {e}"))?;
        if !real.starts_with(&self.real_root) {
            return Err(format!(
                "resolves to {}, outside the overlay directory (a symlink?)",
                real.display()
            ));
        }
        let bytes = fs::read(&real).map_err(|e| format!("cannot read: {e}"))?;
        String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
    }

    // === mount files ===

    fn mounts(&mut self, widget_exists: &dyn Fn(&str) -> bool) -> BTreeMap<String, MountOverlays> {
        let mut mounts: BTreeMap<String, BTreeMap<String, ToolOverlay>> = BTreeMap::new();
        // Render tools with the file and line that declare them.
        let mut renders: BTreeMap<String, Vec<PendingRender>> = BTreeMap::new();
        // Where each (mount, tool) was first defined, to name both files of a
        // duplicate.
        let mut defined: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
        let root = self.root.clone();
        for path in self.entries(&root) {
            let Some(format) = mount_format(&path) else {
                continue;
            };
            let Some((mount, tools, render)) = self.mount_file(&path, format, widget_exists) else {
                continue;
            };
            for (name, (tool, line)) in render {
                let entry = (name, tool, path.clone(), line);
                renders.entry(mount.clone()).or_default().push(entry);
            }
            for GoodTool { name, tool, line } in tools {
                let key = (mount.clone(), name.clone());
                if let Some(first) = defined.get(&key) {
                    let reason = format!(
                        "mount `{mount}` already has this tool in {}",
                        first.display()
                    );
                    self.error(&path, line, Some(format!("tools.{name}")), reason);
                    continue;
                }
                defined.insert(key, path.clone());
                mounts.entry(mount.clone()).or_default().insert(name, tool);
            }
        }
        for mount in renders.keys() {
            mounts.entry(mount.clone()).or_default();
        }
        mounts
            .into_iter()
            .map(|(mount, tools)| {
                let overlays = MountOverlays::new(tools);
                let mut good = Vec::new();
                for (name, render, path, line) in renders.remove(&mount).unwrap_or_default() {
                    let problems = validate::render(&name, &render, &overlays, widget_exists);
                    for problem in &problems {
                        let place = match problem.place.as_str() {
                            "" => format!("render.{name}"),
                            key => format!("render.{name}.{key}"),
                        };
                        self.error(&path, line, Some(place), problem.reason.clone());
                    }
                    if problems.is_empty() {
                        good.push((name, render));
                    }
                }
                (mount, overlays.with_render(good))
            })
            .collect()
    }

    /// Parses one mount file; `None` when nothing usable came out of it.
    /// Tools with problems are reported and left out.
    fn mount_file(
        &mut self,
        path: &Path,
        format: Format,
        widget_exists: &dyn Fn(&str) -> bool,
    ) -> Option<(String, Vec<GoodTool>, RenderTables)> {
        let source = match self.read(path) {
            Ok(source) => source,
            Err(reason) => {
                self.error(path, None, None, reason);
                return None;
            }
        };
        let parsed = match format {
            Format::Toml => parse_toml(&source),
            Format::Json => parse_json(&source),
        };
        let (upstream, tools, render) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => {
                self.error(path, e.line, e.place, e.reason);
                return None;
            }
        };
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let upstream_key = upstream.is_some();
        let upstream_line = upstream
            .as_ref()
            .and_then(|_| key_line(&source, "upstream"));
        let mount = upstream.unwrap_or_else(|| stem.to_owned());
        if mount.is_empty() {
            self.error(
                path,
                None,
                Some("upstream".into()),
                "empty mount name".into(),
            );
            return None;
        }
        self.mount_files.push(MountFileSite {
            file: path.to_path_buf(),
            mount: mount.clone(),
            upstream_key,
            upstream_line,
        });
        let mut good = Vec::new();
        for parsed in tools {
            let ParsedTool { name, line, tool } = parsed;
            self.tools.push(ToolSite {
                file: path.to_path_buf(),
                line,
                mount: mount.clone(),
                tool: name.clone(),
                overlay: tool.as_ref().ok().cloned(),
            });
            let place = |key: &str| match key {
                "" => format!("tools.{name}"),
                key => format!("tools.{name}.{key}"),
            };
            match tool {
                Err(e) => {
                    self.error(
                        path,
                        e.line.or(line),
                        Some(place(e.place.as_deref().unwrap_or(""))),
                        e.reason,
                    );
                }
                Ok(tool) => {
                    let problems = validate::tool(&tool, widget_exists);
                    for problem in &problems {
                        self.error(
                            path,
                            line,
                            Some(place(&problem.place)),
                            problem.reason.clone(),
                        );
                    }
                    if problems.is_empty() {
                        good.push(GoodTool { name, tool, line });
                    }
                }
            }
        }
        let render = render
            .into_iter()
            .map(|(name, tool)| {
                let line = table_line(&source, "render", &name);
                self.renders.push(RenderSite {
                    file: path.to_path_buf(),
                    line,
                    mount: mount.clone(),
                    name: name.clone(),
                    render: tool.clone(),
                });
                (name, (tool, line))
            })
            .collect();
        Some((mount, good, render))
    }

    // === widgets ===

    /// Compiles every widget folder; also returns the names of all folders
    /// that look like widgets, compiled or not, so a tool naming a broken
    /// widget is not reported a second time as naming a missing one.
    fn widgets(&mut self) -> (Vec<Widget>, Vec<String>) {
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
                self.error(&path, None, None, reason);
                continue;
            }
            if let Some(widget) = self.widget(&path, &name) {
                compiled.push(widget);
            }
        }
        (compiled, names)
    }

    fn widget(&mut self, folder: &Path, name: &str) -> Option<Widget> {
        let manifest = self.manifest(folder)?;
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
        let mut read = |relative: &str| self.read(&folder.join(relative));
        let inlined = widget::inline_assets(&html, &entry_dir, &mut read);
        let inlined = match inlined {
            Ok(inlined) => inlined,
            Err(errors) => {
                for e in errors {
                    self.error(&entry_path, Some(line_of(&html, e.offset)), None, e.reason);
                }
                return None;
            }
        };
        let allowed = self.remote_assets_allowed(&entry_path, &html, &inlined.remote, &manifest);
        allowed.then(|| Widget::compile(name, &manifest, inlined.html))
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

    fn manifest(&mut self, folder: &Path) -> Option<WidgetManifest> {
        let present: Vec<PathBuf> = MANIFESTS
            .iter()
            .map(|m| folder.join(m))
            .filter(|p| p.exists())
            .collect();
        let path = match present.as_slice() {
            [] => return Some(WidgetManifest::default()),
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
        problems.is_empty().then_some(manifest)
    }
}

#[derive(Debug, Clone, Copy)]
enum Format {
    Toml,
    Json,
}

fn mount_format(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with('.') || !path.is_file() {
        return None;
    }
    match path.extension()?.to_str()? {
        "toml" => Some(Format::Toml),
        "json" => Some(Format::Json),
        _ => None,
    }
}

/// A parse problem with whatever location the parser knew.
#[derive(Debug)]
struct Located {
    line: Option<usize>,
    place: Option<String>,
    reason: String,
}

impl Located {
    /// `offset_line` is the line the parsed text started at.
    fn json(e: &serde_json::Error, offset_line: usize) -> Self {
        Located {
            line: (e.line() > 0).then(|| offset_line + e.line() - 1),
            place: None,
            reason: strip_json_position(&e.to_string()),
        }
    }

    fn toml(e: &toml::de::Error, source: &str) -> Self {
        let reason = e.message().trim_end().replace('\n', "; ");
        Located {
            line: e.span().map(|span| line_of(source, span.start)),
            place: None,
            // Some syntax errors (a control character in a comment) come
            // without a message.
            reason: if reason.is_empty() {
                "invalid TOML here (a character TOML does not allow?)".to_owned()
            } else {
                reason
            },
        }
    }

    /// From deserializing a `toml::Value`: no position, but the message ends
    /// with "in `a.b`", the key path inside the value.
    fn toml_value(e: &toml::de::Error) -> Self {
        let text = e.to_string();
        let mut lines: Vec<&str> = text.trim_end().lines().collect();
        let place = lines
            .last()
            .and_then(|l| l.strip_prefix("in `"))
            .and_then(|l| l.strip_suffix('`'))
            .map(str::to_owned);
        if place.is_some() {
            lines.pop();
        }
        Located {
            line: None,
            place,
            reason: lines.join(" "),
        }
    }
}

/// serde_json appends " at line L column C"; the line is reported apart.
fn strip_json_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_owned(),
        None => message.to_owned(),
    }
}

/// A tool overlay that passed every check, and where it was written.
struct GoodTool {
    name: String,
    tool: ToolOverlay,
    line: Option<usize>,
}

struct ParsedTool {
    name: String,
    /// Line where the tool's table starts.
    line: Option<usize>,
    tool: Result<ToolOverlay, Located>,
}

type Parsed = (
    Option<String>,
    Vec<ParsedTool>,
    BTreeMap<String, RenderTool>,
);

/// A render tool waiting for its mount's tool overlays (its input schema may
/// come from them): name, table, file and line.
type PendingRender = (String, RenderTool, PathBuf, Option<usize>);

/// A mount file's render tools, each with the line of its table.
type RenderTables = BTreeMap<String, (RenderTool, Option<usize>)>;

/// A TOML mount file: the file's syntax and top-level keys first, then each
/// tool on its own so that every broken tool is reported.
fn parse_toml(source: &str) -> Result<Parsed, Located> {
    // Plain values, not spans: a tool table that is only implied (by
    // `[tools.x.result]` or dotted keys) has no span of its own.
    let file: MountFile<toml::Value> =
        toml::from_str(source).map_err(|e| Located::toml(&e, source))?;
    let tools = file
        .tools
        .into_iter()
        .map(|(name, value)| {
            let line = tool_line(source, &name);
            let tool = ToolOverlay::deserialize(value).map_err(|e| Located::toml_value(&e));
            ParsedTool { name, line, tool }
        })
        .collect();
    Ok((file.upstream, tools, file.render))
}

/// The first line that names tool `name` under `tools` (a table header or a
/// dotted key), for error messages.
fn tool_line(source: &str, name: &str) -> Option<usize> {
    table_line(source, "tools", name)
}

/// The first line that names `name` under the top-level `table`, in TOML
/// (`[render.x]`, `render.x.title = …`) or JSON (`"x": {` after `"render"`).
fn table_line(source: &str, table: &str, name: &str) -> Option<usize> {
    let json = format!("\"{name}\"");
    if source.trim_start().starts_with('{') {
        let start = source.find(&format!("\"{table}\""))?;
        let at = start + source[start..].find(&json)?;
        return Some(line_of(source, at));
    }
    let forms = [
        format!("{table}.{name}"),
        format!("{table}.\"{name}\""),
        format!("{table}.'{name}'"),
    ];
    source.lines().enumerate().find_map(|(i, line)| {
        let line = line.trim_start().trim_start_matches('[').trim_start();
        forms.iter().find_map(|form| {
            let rest = line.strip_prefix(form.as_str())?;
            let next = rest.trim_start().chars().next();
            matches!(next, None | Some(']' | '.' | '=')).then_some(i + 1)
        })
    })
}

/// A JSON mount file. Each tool is parsed from its own slice of the text, so
/// its errors keep their line.
fn parse_json(source: &str) -> Result<Parsed, Located> {
    let file: MountFile<&RawValue> =
        serde_json::from_str(source).map_err(|e| Located::json(&e, 1))?;
    let tools = file
        .tools
        .into_iter()
        .map(|(name, raw)| {
            // `raw` borrows from `source`: its address gives its offset.
            let offset = (raw.get().as_ptr() as usize).saturating_sub(source.as_ptr() as usize);
            let first = line_of(source, offset.min(source.len()));
            let tool = serde_json::from_str(raw.get()).map_err(|e| Located::json(&e, first));
            ParsedTool {
                name,
                line: Some(first),
                tool,
            }
        })
        .collect();
    Ok((file.upstream, tools, file.render))
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A best-effort line for a manifest key path such as `csp.frame_domains[0]`:
/// the first line that assigns its last key.
fn key_line(source: &str, place: &str) -> Option<usize> {
    let key = place.rsplit('.').next()?.split('[').next()?;
    source
        .lines()
        .position(|line| {
            let line = line.trim_start().trim_start_matches('"');
            line.strip_prefix(key).is_some_and(|rest| {
                rest.trim_start()
                    .trim_start_matches('"')
                    .trim_start()
                    .starts_with(['=', ':'])
            })
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_key_lines() {
        let text = "a = 1\n[csp]\nframe_domains = [\"x\"]\n";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 6), 2);
        assert_eq!(key_line(text, "csp.frame_domains[0]"), Some(3));
        assert_eq!(key_line("{\n  \"domain\": \"x\"\n}", "domain"), Some(2));
        assert_eq!(key_line(text, "entry"), None);
    }

    #[test]
    fn json_position_is_reported_apart() {
        let e = serde_json::from_str::<ToolOverlay>("{\n \"widgt\": 1}").unwrap_err();
        let located = Located::json(&e, 10);
        assert_eq!(located.line, Some(11));
        assert!(
            located.reason.starts_with("unknown field `widgt`"),
            "{}",
            located.reason
        );
        assert!(!located.reason.contains("at line"));
    }

    #[test]
    fn toml_errors_always_have_a_reason() {
        // Found by fuzzing (overlay_load): a control character in a comment
        // gave an error with an empty message.
        let source = "#:schema x\x0fy\nentry = \"index.html\"\n";
        let e = toml::from_str::<WidgetManifest>(source).unwrap_err();
        let located = Located::toml(&e, source);
        assert!(!located.reason.is_empty(), "{e:?}");
        assert_eq!(located.line, Some(1));
    }

    #[test]
    fn implied_and_dotted_tool_tables_parse() {
        let text = "# x\n[tools.add_task.result]\nstructured_from_text = true\n\n[tools]\nlist_tasks.title = \"List\"\n";
        let (_, tools, _) = parse_toml(text).unwrap();
        let by_name = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
        let add = by_name("add_task");
        assert!(add.tool.as_ref().unwrap().result.structured_from_text);
        assert_eq!(add.line, Some(2));
        let list = by_name("list_tasks");
        assert_eq!(list.tool.as_ref().unwrap().title.as_deref(), Some("List"));
        assert_eq!(
            tool_line("[tools.add]\n[tools.add_task]\n", "add_task"),
            Some(2)
        );
    }
}
