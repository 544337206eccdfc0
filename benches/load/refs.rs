//! The reference proxies of the sweep, each in front of the same upstream as
//! the gateway: nginx and HAProxy (Debian's packages) as keep-alive HTTP/1.1
//! reverse proxies, the bar for what one HTTP hop costs; and `mcp-proxy`, the
//! Rust MCP gateway from crates.io (installed, pinned, by
//! scripts/install-bench-peers.sh), the bar among MCP gateways. Their
//! configurations are the files in `benches/load/refs/`, with `@…@` filled in
//! here, so a user can start the same ones by hand in front of their server.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::process;
use crate::procs::{self, Proc};

/// `refs/nginx.conf`, `refs/haproxy.cfg` and `refs/mcp-proxy.toml`.
const NGINX: &str = include_str!("refs/nginx.conf");
const HAPROXY: &str = include_str!("refs/haproxy.cfg");
const MCP_PROXY: &str = include_str!("refs/mcp-proxy.toml");

/// Where scripts/install-bench-peers.sh puts the `mcp-proxy` binary.
pub fn mcp_proxy_bin(root: &Path) -> PathBuf {
    root.join("tests/peers/.cargo-bench/bin/mcp-proxy")
}

/// Run scripts/install-bench-peers.sh for one peer (`mcp-proxy`,
/// `contextforge`); its exit code.
pub fn install(root: &Path, peer: &str) -> Option<i32> {
    std::process::Command::new("bash")
        .arg(root.join("scripts/install-bench-peers.sh"))
        .args(["--only", peer])
        .status()
        .ok()
        .and_then(|s| s.code())
}

/// `dir/file`, written from a template with its `@NAME@` values filled in.
pub fn write_filled(
    dir: &Path,
    file: &str,
    template: &str,
    values: &[(&str, String)],
) -> Result<PathBuf, String> {
    let conf = values.iter().fold(template.to_owned(), |t, (name, value)| {
        t.replace(&format!("@{name}@"), value)
    });
    let path = dir.join(file);
    std::fs::write(&path, conf).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// One worker per core.
pub fn workers() -> String {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .to_string()
}

/// nginx as a keep-alive reverse proxy in front of `upstream`; its CPU time
/// and memory are those of the master and its workers.
pub async fn nginx(upstream: SocketAddr, dir: &Path, logs: &Path) -> Result<Proc, String> {
    let Some(nginx) = on_path("nginx") else {
        return Err("nginx is not installed (scripts/install-peers.sh installs it)".into());
    };
    let dir = dir.join("nginx");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Run as root (a bench in a container), nginx's workers would otherwise
    // switch to `nobody`, who cannot write the temporary folders.
    let user = if rustix::process::geteuid().is_root() {
        "user root;\n"
    } else {
        ""
    };
    process::with_fresh_port(3, async |port| {
        let path = write_filled(
            &dir,
            "nginx.conf",
            NGINX,
            &[
                ("USER", user.into()),
                ("WORKERS", workers()),
                ("DIR", dir.display().to_string()),
                ("UPSTREAM", upstream.to_string()),
                ("PORT", port.to_string()),
            ],
        )?;
        let args = [
            "-p".to_owned(),
            dir.display().to_string(),
            "-e".into(),
            dir.join("nginx-error.log").display().to_string(),
            "-c".into(),
            path.display().to_string(),
        ];
        procs::start("nginx", &nginx, &args, &[], port, logs).await
    })
    .await
    .map(Proc::whole_tree)
}

/// HAProxy in HTTP mode in front of `upstream`, reusing idle upstream
/// connections across client connections.
pub async fn haproxy(upstream: SocketAddr, dir: &Path, logs: &Path) -> Result<Proc, String> {
    let Some(haproxy) = on_path("haproxy") else {
        return Err("haproxy is not installed (scripts/install-peers.sh installs it)".into());
    };
    let dir = dir.join("haproxy");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    process::with_fresh_port(3, async |port| {
        let path = write_filled(
            &dir,
            "haproxy.cfg",
            HAPROXY,
            &[
                ("WORKERS", workers()),
                ("DIR", dir.display().to_string()),
                ("UPSTREAM", upstream.to_string()),
                ("PORT", port.to_string()),
            ],
        )?;
        // -db: stay in the foreground, no master process.
        let args = ["-db".to_owned(), "-f".into(), path.display().to_string()];
        procs::start("haproxy", &haproxy, &args, &[], port, logs).await
    })
    .await
}

/// The Rust `mcp-proxy` (the binary `bin`) with the upstream as its one
/// backend, serving MCP at `/`.
pub async fn mcp_proxy(
    bin: &Path,
    upstream: SocketAddr,
    dir: &Path,
    logs: &Path,
) -> Result<Proc, String> {
    let dir = dir.join("mcp-proxy-rs");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    process::with_fresh_port(3, async |port| {
        let path = write_filled(
            &dir,
            "mcp-proxy.toml",
            MCP_PROXY,
            &[
                ("UPSTREAM", upstream.to_string()),
                ("PORT", port.to_string()),
            ],
        )?;
        let args = ["--config".to_owned(), path.display().to_string()];
        procs::start("mcp-proxy-rs", bin, &args, &[], port, logs).await
    })
    .await
}

/// `name`'s path on `PATH` (Debian puts nginx and haproxy in /usr/sbin,
/// which is not on every user's `PATH`).
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
