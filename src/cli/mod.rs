//! The operator's commands besides `serve`: [`check`] validates the overlay
//! directory, offline and against each overlaid upstream's live `tools/list`;
//! [`init`] writes overlay stubs for the tools of a live upstream, and
//! [`init_widget`] a minimal widget folder (`init --widget NAME`);
//! [`directory`] holds the app directories' rules `check` applies,
//! [`sign_ins`] gathers how hosts sign in to each endpoint for them, and
//! [`heights`] measures the inline widgets' heights in a headless browser.
//!
//! [`args`] is the binary's command line; [`upstreams`] says which upstreams
//! its flags give `check` and `init`; [`loaded`] loads the configuration
//! exactly as `serve` does. [`run_check`] and [`run_init`] run the two
//! commands and print what they return, through [`output`] (findings and the
//! verdict on stdout, progress on stderr), so the wording of every finding
//! lives in one place.

pub mod apps;
pub mod args;
pub mod check;
pub mod directory;
pub mod heights;
pub mod init;
pub mod init_widget;
pub mod loaded;
pub mod output;
pub mod run_check;
pub mod run_init;
pub mod sign_ins;
pub mod upstreams;

use mcp_ui_model::config::{Mount, Transport};

/// How an upstream is reached, for progress lines and the `serve` banner:
/// "streamable HTTP http://…", "legacy SSE http://…" or "stdio `cmd args`".
pub fn describe_transport(mount: &Mount) -> String {
    match &mount.transport {
        Transport::Http { url } => format!("streamable HTTP {url}"),
        Transport::Sse { url } => format!("legacy SSE {url}"),
        Transport::Stdio(c) => format!(
            "stdio `{}`",
            std::iter::once(&c.program)
                .chain(&c.args)
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// What an endpoint requires of its callers, for the `serve` banner: empty
/// where no `[auth]` is configured anywhere, else "; requires a token of
/// ISSUER (scopes …)" or "; public (auth = false)".
pub fn describe_auth(auth: Option<&mcp_ui_model::config::Auth>, configured: bool) -> String {
    match auth {
        Some(a) if a.scopes.is_empty() => format!("; requires a token of {}", a.issuer),
        Some(a) => format!(
            "; requires a token of {} with scope {}",
            a.issuer,
            a.scopes.join(" ")
        ),
        None if configured => "; public (auth = false)".to_owned(),
        None => String::new(),
    }
}

/// Why `serve` cannot listen on `addr`, in words, with what to do: the
/// address is set by `--listen`, `listen` in the configuration or
/// `MCP_UI_GATEWAY_LISTEN`.
pub fn listen_error(addr: std::net::SocketAddr, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    const CHOOSE: &str =
        "choose another with --listen (or `listen` in the configuration, MCP_UI_GATEWAY_LISTEN)";
    let why = match e.kind() {
        ErrorKind::AddrInUse => format!(
            "the port is already in use (another gateway, or another program, listens there: `ss -ltnp 'sport = :{}'` names it); stop it, or {CHOOSE}",
            addr.port()
        ),
        ErrorKind::AddrNotAvailable => {
            format!(
                "no network interface of this machine has the address {}; {CHOOSE}",
                addr.ip()
            )
        }
        ErrorKind::PermissionDenied if addr.port() < 1024 => format!(
            "a port below 1024 needs privileges this process does not have; {CHOOSE}, such as 127.0.0.1:8787"
        ),
        _ => format!("{e}; {CHOOSE}"),
    };
    format!("cannot listen on {addr}: {why}")
}

/// `a, b, c`, or `(none)`: configured names in messages.
fn list(names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let names: Vec<String> = names
        .into_iter()
        .map(|n| format!("'{}'", n.as_ref()))
        .collect();
    if names.is_empty() {
        "(none)".into()
    } else {
        names.join(", ")
    }
}
