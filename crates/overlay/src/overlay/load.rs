//! Reading an overlay directory into an [`OverlaySet`]: the only code of the
//! overlay module that touches the filesystem. It reports every problem at
//! once (file, line when known, key path, reason) so one edit-check cycle
//! fixes them all, and refuses any file whose real path leaves the directory.
//!
//! Layout: `<dir>/<mount>.toml` or `.json` (tool overlays of the upstream
//! mounted under that name, or of an app's members: [`AppScope`]),
//! `<dir>/widgets/<widget>/` (one folder per widget). Anything else (`README.md`, `schema/`, dot files) is ignored.

mod apps;
mod builtins;
mod error;
mod inspection;
mod loader;
mod mounts;
mod parse;
#[cfg(test)]
mod tests;
mod widgets;

use std::fs;
use std::path::{Path, PathBuf};

use super::set::{OverlaySet, Widgets};
use super::site::Sources;
use loader::Loader;

pub use apps::AppScope;
pub use error::{LoadError, LoadErrors};
pub use inspection::{Inspection, MountFileSite, WidgetSite};
#[cfg(test)]
pub(super) use parse::MountFile;
pub use widgets::WIDGETS_DIR;

/// The default bound on each file read and on each widget with its assets
/// inlined (`limits.max_widget_bytes`): 16 MiB.
pub(crate) const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;

/// How an overlay directory is read.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The bound on each file and on each widget with its files
    /// (`limits.max_widget_bytes`).
    pub max_bytes: usize,
    /// The gateway's `public_url`: widget files it serves are under
    /// `<public_url>/assets/`. Without it, a widget that needs served files
    /// is an error.
    pub public_url: Option<String>,
    /// The `[[app]]` endpoints: a file naming one gives its entries to the
    /// members that own them ([`AppScope`]).
    pub apps: Vec<AppScope>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_bytes: MAX_FILE_BYTES,
            public_url: None,
            apps: Vec::new(),
        }
    }
}

/// Reads and compiles the overlay directory `dir`.
pub fn load_dir(dir: &Path) -> Result<OverlaySet, LoadErrors> {
    load_dir_within(dir, MAX_FILE_BYTES)
}

/// [`load_dir`], with files and widgets over `max_bytes` refused (their
/// size is known before they are read).
pub(crate) fn load_dir_within(dir: &Path, max_bytes: usize) -> Result<OverlaySet, LoadErrors> {
    load_dir_with(
        dir,
        &LoadOptions {
            max_bytes,
            ..LoadOptions::default()
        },
    )
}

/// [`load_dir`], with `options`.
pub fn load_dir_with(dir: &Path, options: &LoadOptions) -> Result<OverlaySet, LoadErrors> {
    let inspection = inspect_dir_with(dir, options);
    if inspection.errors.is_empty() {
        Ok(inspection.set)
    } else {
        Err(LoadErrors(inspection.errors))
    }
}

/// Reads the overlay directory `dir`, reporting every problem instead of
/// stopping at the first; [`load_dir`] is this, all or nothing.
pub fn inspect_dir(dir: &Path) -> Inspection {
    inspect_dir_within(dir, MAX_FILE_BYTES)
}

/// [`inspect_dir`], with files and widgets over `max_bytes` refused.
pub fn inspect_dir_within(dir: &Path, max_bytes: usize) -> Inspection {
    inspect_dir_with(
        dir,
        &LoadOptions {
            max_bytes,
            ..LoadOptions::default()
        },
    )
}

/// [`inspect_dir`], with `options`.
pub fn inspect_dir_with(dir: &Path, options: &LoadOptions) -> Inspection {
    let max_bytes = options.max_bytes;
    let asset_base = options
        .public_url
        .as_deref()
        .map(|url| format!("{}/assets", url.trim_end_matches('/')));
    let mut loader = Loader {
        root: dir.to_path_buf(),
        real_root: PathBuf::new(),
        errors: Vec::new(),
        mount_files: Vec::new(),
        tools: Vec::new(),
        renders: Vec::new(),
        widget_sites: Vec::new(),
        widget_names: Vec::new(),
        builtin_widgets: Vec::new(),
        max_bytes,
        asset_base,
        apps: options.apps.clone(),
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
    let (mut widgets, widget_names) = loader.widgets();
    loader.widget_names.clone_from(&widget_names);
    let mounts = loader.mounts(&|name| widget_names.iter().any(|n| n == name));
    widgets.append(&mut loader.builtin_widgets);
    let mut errors = loader.errors;
    errors.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    let sources = Sources {
        tools: loader.tools.clone(),
        renders: loader.renders.clone(),
    };
    Inspection {
        set: OverlaySet::new(mounts, Widgets::new(widgets)).with_sources(sources),
        errors,
        mount_files: loader.mount_files,
        tools: loader.tools,
        renders: loader.renders,
        widgets: loader.widget_sites,
    }
}
