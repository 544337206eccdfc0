//! The command line itself: help, usage errors (exit 2), an upstream given
//! by flags, `--name` alone, the flags `check` does not take, a port in use,
//! and the peers' installer's groups.

use super::*;

#[tokio::test]
async fn usage_and_configuration_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let out = run(root, &["check", "--config", "missing.toml"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    write(root.join("bad.toml"), "[[upstream]]\nname = \"x\"\n");
    let out = run(root, &["check", "--config", "bad.toml"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    assert!(text(&out.stderr).contains("set exactly one of"));
    // No overlay directory to check.
    let out = run(root, &["check", "--overlays", "none"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    write(root.join("gw.toml"), &demo_upstream("demo"));
    let out = run(root, &["init", "--config", "gw.toml", "--name", "nope"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
    assert!(text(&out.stderr).contains("no upstream named 'nope' is configured"));
    let out = run(root, &["check", "--bogus"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", streams(&out).1);
}

#[tokio::test]
async fn both_commands_are_in_the_help() {
    let out = run(Path::new("."), &["--help"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.contains("\n  check "), "{both}");
    assert!(stdout.contains("\n  init "), "{both}");
    let out = run(Path::new("."), &["check", "--help"]).await;
    let (stdout, both) = streams(&out);
    assert!(stdout.contains("--offline"), "{both}");
    assert!(stdout.contains("--strict"), "{both}");
    assert!(
        stdout.contains("--browser <PATH>") && stdout.contains("headless Chromium"),
        "{both}"
    );
    assert!(stdout.contains("Exit status"), "{both}");
    let out = run(Path::new("."), &["init", "--help"]).await;
    let (stdout, both) = streams(&out);
    assert!(
        stdout.contains("--force") && stdout.contains("--upstream"),
        "{both}"
    );
}

/// Without a configuration file, `check` and `init` take one upstream from
/// the same flags as `serve`: `--name NAME -- COMMAND`.
#[tokio::test]
async fn a_command_line_upstream_needs_no_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let upstream = ["--name", "tasks", "--", BIN, "demo-server"];
    let init: Vec<&str> = ["init", "--overlays", "mine"]
        .into_iter()
        .chain(upstream)
        .collect();
    let out = run(root, &init).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.starts_with("wrote mine/tasks.toml: 4 tool stubs"),
        "{both}"
    );
    let check: Vec<&str> = ["check", "--overlays", "mine"]
        .into_iter()
        .chain(upstream)
        .collect();
    let out = run(root, &check).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains("checked against upstream 'tasks' (4 tools)"),
        "{both}"
    );
}

/// `--name NAME` alone: `check --offline` takes any name (no upstream is
/// needed to check files); online, and for `init`, it names a configured
/// upstream, and a name that is not one is a usage error saying what to give.
#[tokio::test]
async fn a_name_alone_is_enough_offline_and_names_a_configured_upstream_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("overlays/time.toml"),
        "[tools.get_current_time]\ntitle = \"Now\"\n",
    );
    let out = run(root, &["check", "--offline", "--name", "time"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.starts_with("overlays OK: 1 overlay file"), "{both}");
    // Online, a name nothing configures cannot be checked against.
    let out = run(root, &["check", "--name", "time"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(2), "{both}");
    assert!(
        text(&out.stderr).contains(
            "no upstream named 'time' is configured (configured: 'demo'); give its --upstream URL, --upstream-sse URL or `-- COMMAND`, or check its files alone with --offline"
        ),
        "{both}"
    );
    // A configured name is the configured upstream.
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("time")),
    );
    let out = run(root, &["check", "--config", "gw.toml", "--name", "time"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert!(
        stdout.starts_with("overlays/time.toml:1: tools.get_current_time: upstream 'time' has no tool `get_current_time`"),
        "{both}"
    );
}

/// `check` has no `--path`: a mount path changes nothing it checks.
#[tokio::test]
async fn check_has_no_path_flag() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("overlays")).unwrap();
    let out = run(root, &["check", "--offline", "--path", "/time/mcp"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(2), "{both}");
    assert!(
        text(&out.stderr).contains("unexpected argument '--path'"),
        "{both}"
    );
    let out = run(root, &["check", "--help"]).await;
    assert!(!text(&out.stdout).contains("--path"), "{}", streams(&out).1);
}

/// A port already taken: `serve` says so in words, and names the flag (and
/// the setting) that chooses another address, instead of only the OS error.
#[tokio::test]
async fn a_port_in_use_is_said_with_the_flag_that_moves_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["serve", "--listen", &addr, "--", "true"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "mcp-ui-gateway: cannot listen on {addr}: the port is already in use"
        )) && stderr.contains(
            "choose another with --listen (or `listen` in the configuration, MCP_UI_GATEWAY_LISTEN)"
        ),
        "{both}"
    );
}

/// `scripts/install-peers.sh --only GROUPS` installs a part of the peers
/// (`--only deploy` for `scripts/check-deploy.sh`, without browsers and
/// proxies); a group it does not know is a usage error naming the groups.
/// Nothing is installed here: the installs themselves run in `.ci/run`.
#[test]
fn install_peers_installs_groups_by_name() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-peers.sh");
    let out = std::process::Command::new("bash")
        .args([script, "--only", "deploy,nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "install-peers.sh: no group 'nope'; the groups are: node widgets browser proxies python deploy\n"
    );
    let out = std::process::Command::new("bash")
        .args([script, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("scripts/install-peers.sh --only deploy"),
        "{}",
        text(&out.stdout)
    );
}

/// `scripts/test-all.sh --help` prints what the suite needs and installs nothing
/// (before, it started installing the peers).
#[test]
fn the_test_command_has_help() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test-all.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stdout);
    for needed in ["apt-get", "x86_64", "rustfmt and clippy", "Python 3.11+"] {
        assert!(said.contains(needed), "{needed} in {said}");
    }
    assert!(!said.contains("[test-all]"), "nothing ran: {said}");
}
