//! [`Loader`]: the state of one directory read, and the file access every
//! part of it goes through (confined to the overlay directory).

use std::fs;
use std::path::{Path, PathBuf};

use super::error::LoadError;
use super::inspection::{MountFileSite, RenderSite, ToolSite};

pub(super) struct Loader {
    /// The directory as given, for messages.
    pub(super) root: PathBuf,
    /// Its real path: no file read may resolve outside it.
    pub(super) real_root: PathBuf,
    pub(super) errors: Vec<LoadError>,
    pub(super) mount_files: Vec<MountFileSite>,
    pub(super) tools: Vec<ToolSite>,
    pub(super) renders: Vec<RenderSite>,
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
    /// is outside the overlay directory.
    pub(super) fn read(&self, path: &Path) -> Result<String, String> {
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
}
