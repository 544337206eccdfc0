//! The `init` command end to end: the configuration loaded as `serve` loads
//! it, then overlay stubs written for a live upstream's tools, or with
//! `--widget NAME` a minimal widget folder; what was written is printed on
//! stdout, failures and the next step on stderr.

use std::path::Path;
use std::process::ExitCode;

use super::args::InitArgs;
use super::loaded::load_config;
use super::output::{say, usage_fail};
use mcp_ui_model::config::Overrides;

/// Run `init`: exit 0 when every stub was written, 1 when some could not
/// be, and [`USAGE_ERROR`](super::output::USAGE_ERROR) for a usage or
/// configuration error.
pub async fn run(args: InitArgs) -> ExitCode {
    let one = match args.one.upstream("/mcp") {
        Ok(one) => one,
        Err(message) => return usage_fail(&message),
    };
    let overrides = Overrides {
        overlays: args.overlays.clone(),
        upstreams: one.map(|u| vec![u]),
        ..Default::default()
    };
    let loaded = match load_config(args.config.as_deref(), &overrides) {
        Ok(loaded) => loaded,
        Err(message) => return usage_fail(&message),
    };
    if let Some(name) = &args.widget {
        return init_widget(&loaded.config.overlays, name, args.force);
    }
    let options = super::init::Options {
        upstream: args.one.name.clone(),
        force: args.force,
    };
    let outcome = super::init::run(
        &loaded.config.overlays,
        &loaded.resolved.mounts,
        &loaded.config.limits,
        &options,
        &mut std::io::stderr(),
    )
    .await;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(message) => return usage_fail(&message),
    };
    for line in &outcome.written {
        say!("{line}");
    }
    for failure in &outcome.failures {
        eprintln!("mcp-ui-gateway: {failure}");
    }
    if outcome.failures.is_empty() {
        let check = super::upstreams::check_command(
            args.config.as_deref(),
            args.overlays.as_deref(),
            &args.one,
        );
        eprintln!("next: edit the stubs, then run `{check}`");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `init --widget NAME`.
fn init_widget(overlays: &Path, name: &str, force: bool) -> ExitCode {
    match super::init_widget::run(overlays, name, force) {
        Ok(written) => {
            for path in written {
                say!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(message) => usage_fail(&message),
    }
}
