//! The configuration as every command sees it: defaults, file, environment
//! and flags resolved into mounts, with the bundled demo as the upstream
//! when none is configured.

use std::path::Path;

use mcp_ui_model::config::{self, App, Config, Overrides, Resolved, UpstreamConfig};
use mcp_ui_overlay::overlay::AppScope;

/// The configuration as every command sees it: defaults, file, environment
/// and flags, with the bundled demo as the upstream when none is configured.
pub struct Loaded {
    pub config: Config,
    /// Its mounts and `[[app]]` endpoints, checked.
    pub resolved: Resolved,
    /// Where it came from, for messages.
    pub source: String,
    /// No upstream was configured: the bundled demo is served.
    pub demo: bool,
}

/// Load and check the configuration (`file` is `--config`); the error is the
/// message to print, naming where the configuration came from.
pub fn load_config(file: Option<&Path>, overrides: &Overrides) -> Result<Loaded, String> {
    let (mut config, file) =
        config::load(file, overrides).map_err(|e| format!("configuration error: {e}"))?;
    let source = file
        .map(|f| f.display().to_string())
        .unwrap_or_else(|| "defaults".into());
    let demo = config.upstreams.is_empty();
    if demo {
        config.upstreams.push(demo_upstream());
    }
    let resolved = config
        .resolve()
        .map_err(|e| format!("configuration error ({source}, environment and flags):\n{e}"))?;
    Ok(Loaded {
        config,
        resolved,
        source,
        demo,
    })
}

/// The `[[app]]` endpoints as overlay files see them.
pub fn overlay_apps(apps: &[App]) -> Vec<AppScope> {
    apps.iter().map(|app| app.overlay_scope()).collect()
}

/// The bundled demo: this same executable, run as a stdio server.
fn demo_upstream() -> UpstreamConfig {
    let program = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "mcp-ui-gateway".into());
    UpstreamConfig {
        name: "demo".into(),
        command: Some(program),
        args: vec!["demo-server".into()],
        ..Default::default()
    }
}
