//! Overlays: what an operator adds to an unmodified upstream, as typed data.
//! Per mount, the UI metadata of some of its tools ([`ToolOverlay`]); across
//! mounts, the widgets those tools render, compiled into one HTML resource
//! each ([`Widget`]). Everything here is immutable once built: a reload builds
//! a new [`OverlaySet`] and the caller swaps it in whole.
//!
//! - [`builtin`]: the built-in widgets (`widget = "builtin:table"`),
//!   compiled from a tool's options, pure;
//! - `format`: the file format as `Deserialize` types ([`ToolOverlay`],
//!   [`RenderTool`], [`WidgetManifest`], ..): unknown keys are errors, so a
//!   typo cannot silently disable a setting;
//! - `set`: the compiled set ([`OverlaySet`], [`MountOverlays`], [`Widgets`]);
//! - `site`: where each tool overlay is written, as written ([`Sources`]);
//! - [`load`] reads an overlay directory (the only filesystem code);
//! - [`validate`] holds the rules every overlay must pass, pure;
//! - [`widget`] turns a widget folder's content into its resource, pure.
//!
//! Overlays know nothing of the rewrites that apply them
//! (the rewrite crate depends on this one, not the reverse).

pub mod builtin;
mod domain;
mod format;
pub mod load;
mod memo;
mod set;
mod site;
pub mod validate;
pub mod widget;

pub use format::{
    Annotations, Audience, BridgeKind, CacheScope, Csp, DisplayMode, HostDomains,
    MAX_TOOLS_LIST_TTL_MS, Permissions, RENDER_TOOL_META, RenderTool, ResultShaping, Sample,
    SecurityScheme, ToolOverlay, ToolsList, WidgetDomain, WidgetManifest, merge_meta,
};
pub use load::{
    AppScope, Inspection, LoadError, LoadErrors, LoadOptions, MountFileSite, WidgetSite,
    inspect_dir, inspect_dir_with, inspect_dir_within, load_dir, load_dir_with,
};
pub use memo::Memo;
pub use set::{MountOverlays, OverlaySet, Widgets};
pub use site::{RenderSite, Sources, ToolSite};
pub use widget::Widget;
