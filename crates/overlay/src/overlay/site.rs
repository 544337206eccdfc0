//! Where each tool overlay and render tool is written ([`ToolSite`],
//! [`RenderSite`]), as parsed: what messages point at, and what the rules
//! that need an upstream's live `tools/list` read ([`Sources`]).

use std::path::PathBuf;

use super::format::{RenderTool, ToolOverlay};

/// Where one tool overlay is written.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSite {
    pub file: PathBuf,
    /// Line where the tool's table starts.
    pub line: Option<usize>,
    pub mount: String,
    pub tool: String,
    /// The key of its table as written (`tools.<key>`): `tool`, or in a
    /// file naming an app, the name the app lists.
    pub key: String,
    /// The overlay as parsed, even if it broke a rule; `None` when it did not
    /// parse.
    pub overlay: Option<ToolOverlay>,
}

/// Where one render tool is written.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderSite {
    pub file: PathBuf,
    /// Line where the render tool's table starts.
    pub line: Option<usize>,
    pub mount: String,
    pub name: String,
    /// The key of its table as written (`render.<key>`): `name`, or in a
    /// file naming an app, the name the app lists.
    pub key: String,
    pub render: RenderTool,
}

/// Every tool overlay and render tool of a compiled set, where it is written
/// and as written (before built-in widgets are compiled into it): `serve`
/// compares them with each upstream's live listing, as `check` does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    pub tools: Vec<ToolSite>,
    pub renders: Vec<RenderSite>,
}

impl Sources {
    /// The tool overlays of `mount`.
    pub fn tools_of<'a>(&'a self, mount: &'a str) -> impl Iterator<Item = &'a ToolSite> + 'a {
        self.tools.iter().filter(move |site| site.mount == mount)
    }

    /// The render tools of `mount`.
    pub fn renders_of<'a>(&'a self, mount: &'a str) -> impl Iterator<Item = &'a RenderSite> + 'a {
        self.renders.iter().filter(move |site| site.mount == mount)
    }

    /// Whether anything is written for `mount`.
    pub fn has(&self, mount: &str) -> bool {
        self.tools_of(mount).next().is_some() || self.renders_of(mount).next().is_some()
    }
}
