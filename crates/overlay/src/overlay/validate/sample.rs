//! `sample`: the call and result a widget is shown with when its height is
//! measured. A tool's sample needs the result's `structuredContent` (the
//! tool is never called for it); a render tool's result is its arguments,
//! so it takes those alone.

use super::problem::Problem;
use crate::overlay::format::{RenderTool, ToolOverlay};

/// A tool's `sample`: it needs a widget to show it and a result to show.
pub(super) fn tool(overlay: &ToolOverlay, problems: &mut Vec<Problem>) {
    let Some(sample) = &overlay.sample else {
        return;
    };
    if overlay.widget.is_none() {
        problems.push(Problem::new(
            "sample",
            "the tool has no widget: a sample is what its widget is shown with when measured; set `widget`, or remove the sample",
        ));
    }
    if sample.structured_content.is_none() {
        problems.push(Problem::new(
            "sample.structured_content",
            "missing: the result's structuredContent the widget renders (a sample is never sent to the upstream, so the result is written here)",
        ));
    }
}

/// A render tool's `sample`: its arguments only.
pub(super) fn render(render: &RenderTool, problems: &mut Vec<Problem>) {
    if render
        .sample
        .as_ref()
        .is_some_and(|s| s.structured_content.is_some())
    {
        problems.push(Problem::new(
            "sample.structured_content",
            "a render tool's result is its arguments: write the data as sample.arguments",
        ));
    }
}
