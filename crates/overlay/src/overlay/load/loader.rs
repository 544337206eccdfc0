//! [`Loader`]: the state of one directory read, and the file access every
//! part of it goes through (confined to the overlay directory).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::LoadError;
use super::inspection::{MountFileSite, WidgetSite};
use crate::overlay::site::{RenderSite, ToolSite};

pub(super) struct Loader {
    /// The directory as given, for messages.
    pub(super) root: PathBuf,
    /// Its real path: no file read may resolve outside it.
    pub(super) real_root: PathBuf,
    pub(super) errors: Vec<LoadError>,
    pub(super) mount_files: Vec<MountFileSite>,
    pub(super) tools: Vec<ToolSite>,
    pub(super) renders: Vec<RenderSite>,
    pub(super) widget_sites: Vec<WidgetSite>,
    /// The widget folders' names, for "did you mean".
    pub(super) widget_names: Vec<String>,
    /// The built-in widgets compiled for the tools that name one.
    pub(super) builtin_widgets: Vec<crate::overlay::widget::Widget>,
    /// Largest file read, and largest widget with its assets inlined
    /// (`limits.max_widget_bytes`).
    pub(super) max_bytes: usize,
    /// Where widget files the gateway serves are: `<public_url>/assets`.
    pub(super) asset_base: Option<String>,
    /// The apps a file may name instead of an upstream.
    pub(super) apps: Vec<super::apps::AppScope>,
}

impl Loader {
    pub(super) fn error(
        &mut self,
        file: &Path,
        line: Option<usize>,
        place: Option<String>,
        reason: String,
    ) {
        self.errors.push(LoadError {
            file: file.to_path_buf(),
            line,
            place,
            reason,
        });
    }

    /// The entries of `dir`, sorted by name so results and messages do not
    /// depend on the filesystem's order.
    pub(super) fn entries(&mut self, dir: &Path) -> Vec<PathBuf> {
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
    /// is outside the overlay directory, that is not a regular file, or
    /// whose size is over the limit (known before reading it).
    pub(super) fn read(&self, path: &Path) -> Result<String, String> {
        self.read_within(path, self.max_bytes, None)
    }

    /// [`Loader::read`], with at most `room` bytes left of the limit: the
    /// rest of it was taken by `taken` bytes of other files (a widget's).
    pub(super) fn read_within(
        &self,
        path: &Path,
        room: usize,
        taken: Option<usize>,
    ) -> Result<String, String> {
        let bytes = self.read_bytes_within(path, room, taken)?;
        String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())
    }

    /// [`Loader::read_within`] for any file, text or not.
    pub(super) fn read_bytes_within(
        &self,
        path: &Path,
        room: usize,
        taken: Option<usize>,
    ) -> Result<Vec<u8>, String> {
        let real = fs::canonicalize(path).map_err(|e| format!("cannot open: {e}"))?;
        if !real.starts_with(&self.real_root) {
            return Err(format!(
                "resolves to {}, outside the overlay directory (a symlink?)",
                real.display()
            ));
        }
        let meta = fs::metadata(&real).map_err(|e| format!("cannot open: {e}"))?;
        if !meta.is_file() {
            return Err("not a regular file".to_owned());
        }
        let over = |size: u64| {
            let max = self.max_bytes;
            match taken {
                Some(taken) if size <= max as u64 => format!(
                    "is {size} bytes; with the {taken} bytes of the widget's other files that is over the {max}-byte limit (limits.max_widget_bytes)"
                ),
                _ => {
                    format!("is {size} bytes, over the {max}-byte limit (limits.max_widget_bytes)")
                }
            }
        };
        if meta.len() > room as u64 {
            return Err(over(meta.len()));
        }
        // Bounded here too: the file may have grown since.
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        fs::File::open(&real)
            .and_then(|f| f.take(room as u64 + 1).read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read: {e}"))?;
        if bytes.len() > room {
            return Err(over(bytes.len() as u64));
        }
        Ok(bytes)
    }
}
