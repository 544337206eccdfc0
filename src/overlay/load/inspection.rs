//! [`Inspection`]: everything reading an overlay directory found, with
//! where each part is written.

use std::path::PathBuf;

use super::error::LoadError;
use crate::overlay::format::{RenderTool, ToolOverlay};
use crate::overlay::set::OverlaySet;

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
