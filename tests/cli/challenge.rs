//! `openai_apps_challenge`: ChatGPT's domain-verification token, answered at
//! `/.well-known/openai-apps-challenge` of the gateway's origin (the one
//! every mount and app is served at), exactly as configured; a token that
//! could not be served as meant stops `serve` and `check`, naming the field.

use super::*;

const PATH: &str = "/.well-known/openai-apps-challenge";

/// `serve` with `gw.toml` in `root`; its origin once it listens.
fn serve(root: &Path) -> (support::process::Proc, String) {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--config", "gw.toml", "--listen", "127.0.0.1:0"])
        .current_dir(root);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    let mut gateway = support::process::Proc::spawn("gateway", &mut cmd);
    let endpoint = gateway.wait_for("the endpoint line", RUN_TIMEOUT, |_, line| {
        support::process::endpoint_url(line)
    });
    // scheme://host:port, whatever the endpoint's path.
    let after_scheme = endpoint.find("://").map_or(0, |i| i + 3);
    let end = endpoint[after_scheme..]
        .find('/')
        .map_or(endpoint.len(), |i| after_scheme + i);
    (gateway, endpoint[..end].to_owned())
}

async fn get(method: hyper::Method, url: &str) -> (hyper::StatusCode, http::HeaderMap, String) {
    let (status, headers, body) = support::clients::request_raw(method, url, &[], "").await;
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// Set: `200 text/plain` with the token and nothing else (no line end), not
/// cached, to GET and HEAD (no body), 405 to POST; the mount and the app are
/// still served, and the path under a mount's or app's path is not the
/// token's. Unset: 404, as before. (Before: 404 whatever was configured, and
/// the setting was refused as an unknown field.)
#[tokio::test]
async fn the_openai_apps_challenge_token_is_answered_at_the_origin_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let token = "9f1c-Tok_en.~42";
    let upstreams = format!(
        "{}{}[[app]]\nname = \"suite\"\nupstreams = [\"demo\", \"other\"]\n",
        demo_upstream("demo"),
        demo_upstream("other")
    );
    write(
        root.join("gw.toml"),
        &format!(
            "openai_apps_challenge = \"{token}\"\npublic_url = \"https://example.com\"\n{LIMITS}{upstreams}"
        ),
    );
    let (mut gateway, base) = serve(root);
    let (status, headers, body) = get(hyper::Method::GET, &format!("{base}{PATH}")).await;
    assert_eq!(status, hyper::StatusCode::OK, "{body}");
    assert_eq!(body, token);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    let (status, headers, body) = get(hyper::Method::HEAD, &format!("{base}{PATH}")).await;
    assert_eq!(status, hyper::StatusCode::OK);
    assert_eq!(body, "");
    assert_eq!(headers["content-length"], token.len().to_string());
    let (status, headers, _) = get(hyper::Method::POST, &format!("{base}{PATH}")).await;
    assert_eq!(status, hyper::StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(headers["allow"], "GET, HEAD");
    for under in ["/demo", "/suite"] {
        let (status, _, body) = get(hyper::Method::GET, &format!("{base}{under}{PATH}")).await;
        assert_eq!(status, hyper::StatusCode::NOT_FOUND, "{under}: {body}");
    }
    for endpoint in ["/demo/mcp", "/suite/mcp"] {
        let (status, _, _) = get(hyper::Method::GET, &format!("{base}{endpoint}")).await;
        assert_ne!(
            status,
            hyper::StatusCode::NOT_FOUND,
            "{endpoint} is still served"
        );
    }
    let _ = gateway.terminate(Duration::from_secs(20));

    write(root.join("gw.toml"), &format!("{LIMITS}{upstreams}"));
    let (mut gateway, base) = serve(root);
    let (status, _, _) = get(hyper::Method::GET, &format!("{base}{PATH}")).await;
    assert_eq!(status, hyper::StatusCode::NOT_FOUND);
    let _ = gateway.terminate(Duration::from_secs(20));
}

/// A token with a space, a line end or a control character, an empty one and
/// one over 512 characters are refused by `serve` and `check`, naming the
/// file and the field.
#[tokio::test]
async fn a_token_that_cannot_be_served_as_meant_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let long = "a".repeat(513);
    for (token, said) in [
        ("tok en", "character 4 is ' '"),
        ("token\\n", "character 6 is '\\n'"),
        ("", "is empty"),
        (long.as_str(), "513 characters, over the limit of 512"),
    ] {
        write(
            root.join("gw.toml"),
            &format!(
                "listen = \"127.0.0.1:0\"\nopenai_apps_challenge = \"{token}\"\n{}",
                demo_upstream("demo")
            ),
        );
        let commands: [&[&str]; 2] = [
            &["serve", "--config", "gw.toml"],
            &["check", "--config", "gw.toml", "--offline"],
        ];
        for args in commands {
            let command = args[0];
            let out = run(root, args).await;
            assert!(!out.status.success(), "{command} {token:?}");
            let err = text(&out.stderr) + &text(&out.stdout);
            assert!(
                err.contains("gw.toml") && err.contains(&format!("openai_apps_challenge: {said}")),
                "{command} {token:?}: {err}"
            );
        }
    }
}
