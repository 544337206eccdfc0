//! Each inline widget's height, for Claude's widget-height rule
//! ([`directory::claude`](super::directory::claude)): every widget a tool or
//! render tool of a configured mount shows, with a `sample`, is rendered as
//! a host renders it and its reported height read back.
//!
//! Rendered as a host renders it: the widget's resource is what the gateway
//! answers to `resources/read` for Claude (`rewrite::read_result` over the
//! compiled overlays, built-in and custom widgets alike), under the policy
//! `/preview` gives it (`preview::widget_csp`), in a sandboxed frame of a
//! measuring page that speaks the host side of the `ui/*` bridge
//! ([`page`]); the tool's input is the sample's arguments, its result the
//! sample's `structured_content` (with its JSON as text), or for a render
//! tool the gateway's own answer to a call with the sample's arguments.
//! All widgets are measured in one headless browser run ([`browser`]),
//! bounded in time; offline too, since nothing leaves the machine but what
//! the widgets themselves load.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::directory::{Height, Measured};
use super::init::table::toml_key;
use mcp_ui_model::config::Mount;
use mcp_ui_overlay::host::{HostKind, Target};
use mcp_ui_overlay::overlay::{Inspection, OverlaySet, RenderSite, Sample, ToolSite, Widget};
use mcp_ui_proxy::preview::{DeclaredCsp, widget_csp};

mod browser;
mod page;
#[cfg(test)]
mod tests;

use page::{Job, Outcome};

/// How `check` measures (`--browser`, `--browser-timeout`).
#[derive(Debug, Clone)]
pub struct Options {
    /// The browser named on the command line.
    pub browser: Option<PathBuf>,
    /// How long one run of the browser may take.
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            browser: None,
            timeout: Duration::from_secs(60),
        }
    }
}

/// What to do when no browser measured a widget.
const MEASURE_IT: &str = "install Chromium (or name a Chromium or Chrome with --browser PATH or $CHROMIUM) and check again, or open /preview, call the tool with its sample and compare the widget's height with 500 px";

/// Each widget a tool or render tool of a configured mount shows, and its
/// height: measured in one browser run for those with a sample.
pub async fn measure(
    inspection: &Inspection,
    mounts: &[Mount],
    options: &Options,
    progress: &mut dyn Write,
) -> Vec<Height> {
    let mut planned = plan(inspection, mounts);
    let jobs: Vec<(usize, Job)> = planned
        .iter_mut()
        .enumerate()
        .filter_map(|(i, (_, job))| Some((i, job.take()?)))
        .collect();
    if jobs.is_empty() {
        return planned.into_iter().map(|(height, _)| height).collect();
    }
    let (at, jobs): (Vec<usize>, Vec<Job>) = jobs.into_iter().unzip();
    let measured = match browser::find(
        options.browser.as_deref(),
        std::env::var_os("CHROMIUM"),
        std::env::var_os("PATH"),
    ) {
        Ok(found) => run(&found, &jobs, options.timeout, progress).await,
        Err(why) => Err(why),
    };
    let measured: Vec<Measured> = match measured {
        Ok(outcomes) => outcomes.into_iter().map(measured_of).collect(),
        Err(why) => {
            let not = Measured::NotMeasured {
                why,
                fix: MEASURE_IT.to_owned(),
            };
            vec![not; jobs.len()]
        }
    };
    for (i, m) in at.into_iter().zip(measured) {
        let height = &mut planned[i].0;
        if let Measured::Px(px) = m {
            let _ = writeln!(
                progress,
                "  {}.sample: `{}` {px} px",
                height.place, height.widget
            );
        }
        height.measured = m;
    }
    planned.into_iter().map(|(height, _)| height).collect()
}

/// One browser run over `jobs`, with progress lines.
async fn run(
    browser: &std::path::Path,
    jobs: &[Job],
    timeout: Duration,
    progress: &mut dyn Write,
) -> Result<Vec<Outcome>, String> {
    let what = match jobs.len() {
        1 => "1 widget's height".to_owned(),
        n => format!("{n} widgets' heights"),
    };
    let _ = writeln!(progress, "measuring {what} in {}", browser.display());
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("mcp-ui-gateway-heights-")
        .tempdir()
        .map_err(|e| format!("no temporary directory for the measuring page: {e}"))?;
    let file = dir.path().join("measure.html");
    std::fs::write(&file, page::html(jobs))
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let url = url::Url::from_file_path(&file)
        .map_err(|()| format!("no file URL for {}", file.display()))?;
    let budget = page::LIMIT_MS + 5_000;
    let dump = browser::dump_dom(browser, url.as_str(), dir.path(), budget, timeout).await?;
    let outcomes = page::parse(&dump, jobs.len())?;
    let _ = writeln!(
        progress,
        "  measured in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(outcomes)
}

/// What the page said of a widget, as the rule takes it.
fn measured_of(outcome: Outcome) -> Measured {
    let rendered = "rendered with its sample in headless Chromium";
    let (why, fix) = match outcome {
        Outcome::Px(px) => return Measured::Px(px),
        Outcome::NoInitialize => (
            format!(
                "{rendered}, it never sent ui/initialize, so it got no data and said no height"
            ),
            "a widget speaks the MCP Apps bridge (ui/initialize, then ui/notifications/size-changed) or window.openai; open /preview to see what it does",
        ),
        Outcome::NotInitialized => (
            format!(
                "{rendered}, it was answered ui/initialize but never sent ui/notifications/initialized, so no host sends it its input and result"
            ),
            "send ui/notifications/initialized once the answer to ui/initialize is in (the App class of @modelcontextprotocol/ext-apps does)",
        ),
        Outcome::NoSize => (
            format!(
                "{rendered}, it reported no height after its result (no ui/notifications/size-changed)"
            ),
            "hosts size an inline widget by the height it reports: send ui/notifications/size-changed with the content's height (the App class of @modelcontextprotocol/ext-apps does with autoResize), then check again",
        ),
    };
    Measured::NotMeasured {
        why,
        fix: fix.to_owned(),
    }
}

/// Each widget a tool or render tool of a configured mount shows: its
/// height as far as known without a browser, and what to render it with
/// when it has a sample.
fn plan(inspection: &Inspection, mounts: &[Mount]) -> Vec<(Height, Option<Job>)> {
    let configured = |mount: &str| mounts.iter().any(|m| m.name == mount);
    let set = &inspection.set;
    let tools = inspection.tools.iter().filter_map(|site| {
        let overlay = site.overlay.as_ref()?;
        let widget = overlay.widget.clone()?;
        let place = format!("tools.{}", toml_key(&site.key));
        configured(&site.mount).then(|| {
            let job = overlay.sample.as_ref().map(|s| tool_job(set, site, s));
            planned(site.file.clone(), site.line, place, widget, job)
        })
    });
    let renders = inspection
        .renders
        .iter()
        .filter(|site| configured(&site.mount))
        .map(|site| {
            let place = format!("render.{}", toml_key(&site.key));
            let job = site
                .render
                .sample
                .as_ref()
                .map(|s| render_job(set, site, s));
            let widget = site.render.widget.clone();
            planned(site.file.clone(), site.line, place, widget, job)
        });
    tools.chain(renders).collect()
}

/// A widget's height before measuring: no sample, a job, or why there is
/// none to run.
fn planned(
    file: PathBuf,
    line: Option<usize>,
    place: String,
    widget: String,
    job: Option<Result<Job, Measured>>,
) -> (Height, Option<Job>) {
    let (measured, job) = match job {
        None => (Measured::NoSample, None),
        // Replaced by what the browser says.
        Some(Ok(job)) => (Measured::NoSample, Some(job)),
        Some(Err(not)) => (not, None),
    };
    let height = Height {
        file,
        line,
        place,
        widget,
        measured,
    };
    (height, job)
}

/// Why a widget that did not load is not measured.
fn unloaded() -> Measured {
    Measured::NotMeasured {
        why: "the overlay did not load (its problems are listed above)".to_owned(),
        fix: "fix them and check again".to_owned(),
    }
}

/// A tool's widget with its sample: the sample's arguments, and a result
/// carrying its `structured_content` and that as JSON text.
fn tool_job(set: &OverlaySet, site: &ToolSite, sample: &Sample) -> Result<Job, Measured> {
    let overlay = set.mount(&site.mount).and_then(|m| m.tool(&site.tool));
    let widget = overlay
        .and_then(|o| o.widget.as_deref())
        .and_then(|name| set.widgets().get(name));
    let (Some(widget), Some(structured)) = (widget, &sample.structured_content) else {
        return Err(unloaded());
    };
    let structured = Value::Object(structured.clone());
    let result = json!({
        "content": [{ "type": "text", "text": structured.to_string() }],
        "structuredContent": structured,
    });
    Ok(job(widget, &site.tool, &sample.arguments, result))
}

/// A render tool's widget with its sample: the result is the gateway's own
/// answer to a call with the sample's arguments, unless it refuses them.
fn render_job(set: &OverlaySet, site: &RenderSite, sample: &Sample) -> Result<Job, Measured> {
    let mount = set.mount(&site.mount);
    let render = mount.and_then(|m| m.render_tool(&site.name));
    let (Some(mount), Some(render)) = (mount, render) else {
        return Err(unloaded());
    };
    let Some(widget) = set.widgets().get(&render.widget) else {
        return Err(unloaded());
    };
    let arguments = Value::Object(sample.arguments.clone());
    let result = mcp_ui_rewrite::rewrite::render::call_result(
        &site.name,
        render,
        mount,
        set.widgets(),
        Some(&arguments),
    );
    if result["isError"] == true {
        let text = result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("an error");
        return Err(Measured::NotMeasured {
            why: format!("the render tool refuses its sample's arguments: {text}"),
            fix: format!(
                "write [render.{}.sample] arguments as its data tool returns them",
                toml_key(&site.key)
            ),
        });
    }
    Ok(job(widget, &site.name, &sample.arguments, result))
}

/// The page's job for `widget` shown by `tool`: its resource as the
/// gateway answers `resources/read` for Claude, and its policy.
fn job(
    widget: &Widget,
    tool: &str,
    arguments: &serde_json::Map<String, Value>,
    result: Value,
) -> Job {
    let read = mcp_ui_rewrite::rewrite::read_result(widget, &Target::new(HostKind::Claude, None));
    let content = &read["contents"][0];
    let html = content["text"].as_str().unwrap_or_default().to_owned();
    let csp = content
        .pointer("/_meta/ui/csp")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let declared: DeclaredCsp = serde_json::from_value(csp.clone()).unwrap_or_default();
    Job {
        html,
        policy: page::meta_policy(&widget_csp(&declared)),
        csp,
        arguments: Value::Object(arguments.clone()),
        result,
        tool: json!({
            "name": tool,
            "inputSchema": { "type": "object" },
            "_meta": { "ui": { "resourceUri": widget.uri } },
        }),
    }
}
