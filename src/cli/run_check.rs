//! The `check` command end to end: the configuration loaded as `serve` loads
//! it, the overlay directory checked (against the live upstreams unless
//! `--offline`), the `[[app]]` endpoints' members looked at, and the verdict
//! printed on stdout, progress on stderr.

use std::process::ExitCode;

use super::args::CheckArgs;
use super::loaded::{Loaded, load_config, overlay_apps};
use super::output::{say, usage_fail};
use mcp_ui_model::config::Overrides;
use mcp_ui_overlay::host::WidgetOrigins;

/// Run `check`: exit 0 when clean, 1 when problems were found, and
/// [`USAGE_ERROR`](super::output::USAGE_ERROR) for a usage or configuration
/// error.
pub async fn run(args: CheckArgs) -> ExitCode {
    let one = match args.one.upstream("/mcp") {
        Ok(one) => one,
        Err(message) => return usage_fail(&message),
    };
    let dir_named = args.overlays.is_some();
    let overrides = Overrides {
        overlays: args.overlays,
        upstreams: one.map(|u| vec![u]),
        ..Default::default()
    };
    let mut loaded = match load_config(args.config.as_deref(), &overrides) {
        Ok(loaded) => loaded,
        Err(message) => return usage_fail(&message),
    };
    let resolved = &mut loaded.resolved;
    let mounts = std::mem::take(&mut resolved.mounts);
    resolved.mounts = match super::upstreams::for_check(&args.one, mounts, args.offline) {
        Ok(mounts) => mounts,
        Err(message) => return usage_fail(&message),
    };
    // An app is checked when every member is among the upstreams checked.
    let checked: Vec<&str> = resolved.mounts.iter().map(|m| m.name.as_str()).collect();
    resolved
        .apps
        .retain(|app| app.upstream_names().iter().all(|n| checked.contains(n)));
    let config_file = match args.config.as_deref() {
        Some(file) => file.to_path_buf(),
        None => std::path::PathBuf::from(&loaded.source),
    };
    let hosts = args.host.hosts();
    let sign_ins = if hosts.claude {
        super::sign_ins::gather(&loaded, &config_file, args.offline).await
    } else {
        Vec::new()
    };
    let options = super::check::Options {
        offline: args.offline,
        strict: args.strict,
        hosts,
        sign_ins,
        public_url: loaded.config.public_url.clone(),
        apps: overlay_apps(&loaded.resolved.apps),
        dir_named,
        heights: super::heights::Options {
            browser: args.browser,
            timeout: std::time::Duration::from_secs(args.browser_timeout),
        },
    };
    let report = super::check::run(
        &loaded.config.overlays,
        &loaded.resolved.mounts,
        &loaded.config.limits,
        options,
        &mut std::io::stderr(),
    )
    .await;
    let report = match report {
        Ok(report) => report,
        Err(message) => return usage_fail(&message),
    };
    let app_problems = check_apps(&loaded, args.offline).await;
    print_verdict(&loaded, &report, &app_problems);
    if report.is_clean() && app_problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The verdict on stdout: every problem and warning, the widget origins
/// behind `public_url`, and the summary; what each widget got on stderr.
fn print_verdict(loaded: &Loaded, report: &super::check::Report, app_problems: &[String]) {
    for problem in &report.problems {
        say!("{problem}");
    }
    for problem in app_problems {
        say!("{problem}");
    }
    for warning in &report.warnings {
        say!("warning: {warning}");
    }
    // What each widget got, beside the progress: stdout stays the verdict.
    for line in &report.bridges {
        eprintln!("{line}");
    }
    let public_url = loaded.config.public_url.as_deref();
    let apps = &loaded.resolved.apps;
    let paths = loaded.resolved.mounts.iter().map(|m| m.path.as_str());
    for path in paths.chain(apps.iter().map(|a| a.path.as_str())) {
        if let Some(o) = WidgetOrigins::behind(public_url, path) {
            say!("{}", o.line());
        }
    }
    say!("{}", report.summary());
}

/// `check`'s look at the `[[app]]` endpoints: their members' tool names and
/// authorization servers, live (nothing offline).
async fn check_apps(loaded: &Loaded, offline: bool) -> Vec<String> {
    if offline {
        return Vec::new();
    }
    let apps = &loaded.resolved.apps;
    let mut problems = super::apps::collisions(
        apps,
        &loaded.resolved.mounts,
        &loaded.config.limits,
        &mut std::io::stderr(),
    )
    .await;
    problems.extend(
        super::apps::auth_servers(apps, &loaded.resolved.mounts, &loaded.config.limits).await,
    );
    problems
}
