//! Mount files read into each mount's overlays, every broken tool reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::apps::AppScope;
use super::inspection::MountFileSite;
use super::loader::Loader;
use super::parse::{
    Format, ParsedTool, key_line, mount_format, parse_json, parse_toml, table_line,
};
use crate::overlay::format::{MAX_TOOLS_LIST_TTL_MS, RenderTool, ToolOverlay, ToolsList};
use crate::overlay::set::MountOverlays;
use crate::overlay::site::{RenderSite, ToolSite};
use crate::overlay::validate;

/// A tool overlay that passed every check, and where it was written.
struct GoodTool {
    /// The mount it belongs to.
    mount: String,
    /// Its name in that mount.
    name: String,
    /// Its name as written (differs in a file naming an app).
    written: String,
    tool: ToolOverlay,
    line: Option<usize>,
}

/// A render tool waiting for its mount's tool overlays (its input schema may
/// come from them): name, table, file and line.
pub(super) type PendingRender = (String, RenderTool, PathBuf, Option<usize>);

/// The file and line of each tool overlay, by (mount, tool).
pub(super) type Origins = BTreeMap<(String, String), (PathBuf, Option<usize>)>;

/// A mount file's render tools: mount, name, table and line.
type RenderTables = Vec<(String, String, RenderTool, Option<usize>)>;

/// What one mount file holds for its mount, once checked.
struct FileParts {
    tools: Vec<GoodTool>,
    render: RenderTables,
    /// Its mount and its `tools_list`, when set.
    tools_list: Option<(String, ToolsList)>,
}

/// Where a mount file's entries go: its mount, and the app it names, if
/// it names one (whose entries go to its members).
struct FileScope {
    mount: String,
    app: Option<AppScope>,
}

impl FileScope {
    /// The mount an entry goes to, and its name there.
    fn owner(&self, name: &str) -> Result<(String, String), String> {
        match &self.app {
            None => Ok((self.mount.clone(), name.to_owned())),
            Some(app) => app
                .member_of(name)
                .map(|(member, own)| (member.to_owned(), own)),
        }
    }
}

/// The mount files read so far, by mount.
#[derive(Default)]
struct Gathered {
    mounts: BTreeMap<String, BTreeMap<String, ToolOverlay>>,
    /// Render tools with the file and line that declare them.
    renders: BTreeMap<String, Vec<PendingRender>>,
    /// Where each (mount, tool) was first defined, to name both files of a
    /// duplicate.
    defined: BTreeMap<(String, String), PathBuf>,
    /// The file and line of each (mount, tool), for built-in widgets'
    /// problems found once the whole mount is known.
    origins: Origins,
    /// Each mount's `tools_list`, with the file that set it.
    listings: BTreeMap<String, (ToolsList, PathBuf)>,
}

impl Loader {
    pub(super) fn mounts(
        &mut self,
        widget_exists: &dyn Fn(&str) -> bool,
    ) -> BTreeMap<String, MountOverlays> {
        let mut all = Gathered::default();
        let root = self.root.clone();
        for path in self.entries(&root) {
            let Some(format) = mount_format(&path) else {
                continue;
            };
            if let Some(parts) = self.mount_file(&path, format, widget_exists) {
                self.gather(&path, parts, &mut all);
            }
        }
        let Gathered {
            mut mounts,
            mut renders,
            origins,
            mut listings,
            ..
        } = all;
        for mount in renders.keys().chain(listings.keys()) {
            mounts.entry(mount.clone()).or_default();
        }
        mounts
            .into_iter()
            .map(|(mount, mut tools)| {
                let pending = renders.remove(&mount).unwrap_or_default();
                self.wire_builtins(&mount, &mut tools, &pending, &origins);
                let overlays = MountOverlays::new(tools);
                let good = self.check_renders(&mount, pending, &overlays, widget_exists);
                let listing = listings.remove(&mount).map(|(l, _)| l);
                (mount, overlays.with_render(good).with_tools_list(listing))
            })
            .collect()
    }

    /// What the mount file at `path` holds, added to `all`: a second
    /// `tools_list` of a mount, or a second overlay of a tool, is reported
    /// naming the first file.
    fn gather(&mut self, path: &Path, parts: FileParts, all: &mut Gathered) {
        let FileParts {
            tools,
            render,
            tools_list,
        } = parts;
        if let Some((mount, listing)) = tools_list {
            match all.listings.get(&mount) {
                Some((_, first)) => {
                    let line = key_line(&self.read(path).unwrap_or_default(), "tools_list");
                    let reason = format!(
                        "mount `{mount}` has its tools_list in {} already",
                        first.display()
                    );
                    self.error(path, line, Some("tools_list".into()), reason);
                }
                None => {
                    all.listings.insert(mount, (listing, path.to_path_buf()));
                }
            }
        }
        for (mount, name, tool, line) in render {
            let entry = (name, tool, path.to_path_buf(), line);
            all.renders.entry(mount).or_default().push(entry);
        }
        for GoodTool {
            mount,
            name,
            written,
            tool,
            line,
        } in tools
        {
            let key = (mount.clone(), name.clone());
            if let Some(first) = all.defined.get(&key) {
                let reason = format!(
                    "mount `{mount}` already has this tool in {}",
                    first.display()
                );
                self.error(path, line, Some(format!("tools.{written}")), reason);
                continue;
            }
            all.defined.insert(key.clone(), path.to_path_buf());
            all.origins.insert(key, (path.to_path_buf(), line));
            all.mounts
                .entry(mount.clone())
                .or_default()
                .insert(name, tool);
        }
    }

    /// The render tools of `mount` that pass their checks against its
    /// overlays (their built-in widgets compiled); the others reported.
    fn check_renders(
        &mut self,
        mount: &str,
        pending: Vec<PendingRender>,
        overlays: &MountOverlays,
        widget_exists: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, RenderTool)> {
        let mut good = Vec::new();
        for (name, mut render, path, line) in pending {
            let problems = validate::render(&name, &render, overlays, widget_exists);
            for problem in &problems {
                let place = match problem.place.as_str() {
                    "" => format!("render.{name}"),
                    key => format!("render.{name}.{key}"),
                };
                let reason = self.widget_reason(problem, Some(&render.widget));
                self.error(&path, line, Some(place), reason);
            }
            if problems.is_empty() {
                self.compile_render_builtin(mount, &name, &mut render, overlays);
                good.push((name, render));
            }
        }
        good
    }

    /// Parses one mount file; `None` when nothing usable came out of it.
    /// Tools with problems are reported and left out. The entries of a file
    /// naming an app go to its members ([`super::AppScope`]).
    fn mount_file(
        &mut self,
        path: &Path,
        format: Format,
        widget_exists: &dyn Fn(&str) -> bool,
    ) -> Option<FileParts> {
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
        let (upstream, tools, render, tools_list) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => {
                self.error(path, e.line, e.place, e.reason);
                return None;
            }
        };
        let scope = self.file_scope(path, &source, upstream)?;
        let good = self.file_tools(path, &scope, tools, widget_exists);
        let renders = self.file_renders(path, &source, &scope, render);
        let tools_list = self.file_tools_list(path, &source, &scope, tools_list);
        Some(FileParts {
            tools: good,
            render: renders,
            tools_list,
        })
    }

    /// The mount a file's entries go to: its `upstream`, else its name; and
    /// the app that is, if it is one. Recorded for `check`.
    fn file_scope(
        &mut self,
        path: &Path,
        source: &str,
        upstream: Option<String>,
    ) -> Option<FileScope> {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let upstream_key = upstream.is_some();
        let upstream_line = upstream.as_ref().and_then(|_| key_line(source, "upstream"));
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
        let app = self.apps.iter().find(|a| a.name == mount).cloned();
        self.mount_files.push(MountFileSite {
            file: path.to_path_buf(),
            mount: mount.clone(),
            upstream_key,
            upstream_line,
            app: app.is_some(),
        });
        Some(FileScope { mount, app })
    }

    /// A file's tool overlays that pass their checks; the others reported.
    fn file_tools(
        &mut self,
        path: &Path,
        scope: &FileScope,
        tools: Vec<ParsedTool>,
        widget_exists: &dyn Fn(&str) -> bool,
    ) -> Vec<GoodTool> {
        let mut good = Vec::new();
        for parsed in tools {
            let ParsedTool { name, line, tool } = parsed;
            let (target, own) = match scope.owner(&name) {
                Ok(found) => found,
                Err(reason) => {
                    self.error(path, line, Some(format!("tools.{name}")), reason);
                    continue;
                }
            };
            self.tools.push(ToolSite {
                file: path.to_path_buf(),
                line,
                mount: target.clone(),
                tool: own.clone(),
                key: name.clone(),
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
                        let reason = self.widget_reason(problem, tool.widget.as_deref());
                        self.error(path, line, Some(place(&problem.place)), reason);
                    }
                    if problems.is_empty() {
                        good.push(GoodTool {
                            mount: target,
                            name: own,
                            written: name,
                            tool,
                            line,
                        });
                    }
                }
            }
        }
        good
    }

    /// A file's render tools, each with its mount (an app's `data_tools`
    /// named as its members know them), recorded for `check`.
    fn file_renders(
        &mut self,
        path: &Path,
        source: &str,
        scope: &FileScope,
        render: BTreeMap<String, RenderTool>,
    ) -> RenderTables {
        let mut renders = Vec::new();
        for (name, mut tool) in render {
            let line = table_line(source, "render", &name);
            let (target, own) = match scope.owner(&name) {
                Ok(found) => found,
                Err(reason) => {
                    self.error(path, line, Some(format!("render.{name}")), reason);
                    continue;
                }
            };
            if let Some(app) = &scope.app {
                match app.member_names(&target, &tool.data_tools) {
                    Ok(names) => tool.data_tools = names,
                    Err(reason) => {
                        let place = Some(format!("render.{name}.data_tools"));
                        self.error(path, line, place, reason);
                        continue;
                    }
                }
            }
            self.renders.push(RenderSite {
                file: path.to_path_buf(),
                line,
                mount: target.clone(),
                name: own.clone(),
                key: name.clone(),
                render: tool.clone(),
            });
            renders.push((target, own, tool, line));
        }
        renders
    }

    /// A file's `tools_list`: never an app's, and kept no longer than a day.
    fn file_tools_list(
        &mut self,
        path: &Path,
        source: &str,
        scope: &FileScope,
        tools_list: Option<ToolsList>,
    ) -> Option<(String, ToolsList)> {
        match tools_list {
            None => None,
            Some(_) if scope.app.is_some() => {
                let line = key_line(source, "tools_list");
                let reason =
                    "an app's listing is its members': set tools_list in each member's own file"
                        .to_owned();
                self.error(path, line, Some("tools_list".into()), reason);
                None
            }
            Some(l) if l.ttl_ms > MAX_TOOLS_LIST_TTL_MS => {
                let line = key_line(source, "ttl_ms");
                let reason = format!(
                    "{} ms is longer than a day ({MAX_TOOLS_LIST_TTL_MS} ms), the longest a client keeps a listing",
                    l.ttl_ms
                );
                self.error(path, line, Some("tools_list.ttl_ms".into()), reason);
                None
            }
            Some(l) => Some((scope.mount.clone(), l)),
        }
    }
}
