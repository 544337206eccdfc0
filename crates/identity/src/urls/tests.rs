use super::*;

fn redirect(text: &str) -> RedirectUri {
    RedirectUri::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn a_url_is_taken_only_as_a_browser_writes_it() {
    for ok in [
        "https://app.example/cb",
        "http://127.0.0.1:5555/callback?x=1",
        "http://[::1]/cb",
        "com.example.app:/oauth2redirect",
        "cursor.app://callback",
    ] {
        assert_eq!(as_written(ok).map(String::from).as_deref(), Ok(ok));
    }
    for (bad, read) in [
        (
            "http://127.0.0.1:5555\\@evil.example/cb",
            "/@evil.example/cb",
        ),
        ("http://127.0.0.1/call\tback", "/callback"),
        ("http://2130706433/cb", "127.0.0.1"),
        ("http://0x7f.1/cb", "127.0.0.1"),
        ("http://0177.0.0.1/cb", "127.0.0.1"),
        ("http://127.1/cb", "127.0.0.1"),
        ("http://127.0.0.1./cb", "127.0.0.1/"),
        ("HTTP://APP.example/cb", "http://app.example/cb"),
        ("https://app.example:443/cb", "https://app.example/cb"),
        ("https://app.example/a/../cb", "https://app.example/cb"),
        ("https://app.example/%2e%2e/cb", "https://app.example/cb"),
        ("http:127.0.0.1/cb", "http://127.0.0.1/cb"),
        ("http:/\\evil.example/cb", "http://evil.example/cb"),
        (" https://app.example/cb", "https://app.example/cb"),
        ("https://àpp.example/cb", "xn--"),
    ] {
        let why = as_written(bad).unwrap_err().to_string();
        assert!(
            why.contains("a browser reads") && why.contains(read),
            "{bad}: {why}"
        );
    }
    assert!(as_written("http://127.0.0.1:99999/cb").is_err());
    // A host alone may go without its `/`, and nothing else may.
    for (rootless, read) in [
        ("https://app.example", "https://app.example/"),
        ("http://127.0.0.1:33418", "http://127.0.0.1:33418/"),
    ] {
        assert!(as_written(rootless).is_err());
        assert_eq!(
            as_written_or_rootless(rootless)
                .map(String::from)
                .as_deref(),
            Ok(read)
        );
    }
    for bad in [
        "https://app.example?x",
        "https://APP.example",
        "http://127.0.0.1:80",
        "http://127.0.0.1:5555\\@evil.example",
    ] {
        assert!(as_written_or_rootless(bad).is_err(), "{bad}");
    }
    assert!(as_written("/relative").is_err());
}

#[test]
fn redirect_uris_are_https_loopback_http_or_an_apps_own_scheme() {
    for ok in [
        "https://chatgpt.com/connector_platform_oauth_redirect",
        "http://127.0.0.1:33418/callback",
        "http://127.4.5.6/callback",
        "http://localhost:6274/oauth/callback",
        "http://[::1]/cb",
        "com.example.app:/oauth2redirect",
        "cursor.app://callback",
    ] {
        redirect(ok);
    }
    for (bad, why) in [
        ("http://evil.example/cb", "only on a loopback address"),
        ("http://[::ffff:127.0.0.1]/cb", "a browser reads"),
        ("http://[::ffff:7f00:1]/cb", "only on a loopback address"),
        (
            "http://127.0.0.1.evil.example/cb",
            "only on a loopback address",
        ),
        (
            "http://localhost.evil.example/cb",
            "only on a loopback address",
        ),
        ("https://app.example/cb#frag", "fragment"),
        ("https://app.example/cb#", "fragment"),
        ("https://user@app.example/cb", "user information"),
        (
            "http://127.0.0.1:1@evil.example/callback",
            "user information",
        ),
        ("http://evil.example@127.0.0.1/callback", "user information"),
        ("https://user:pw@app.example/cb", "user information"),
        ("javascript:alert(1)", "scheme"),
        ("data:text/html,hi", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("/relative", "not an absolute URL"),
        ("https:///nohost", "a browser reads"),
        ("http://LOCALHOST/cb", "a browser reads"),
    ] {
        let got = RedirectUri::parse(bad).unwrap_err().to_string();
        assert!(got.contains(why), "{bad}: {got}");
    }
}

#[test]
fn a_loopback_ip_literal_is_free_in_its_port_and_in_nothing_else() {
    let registered = redirect("http://127.0.0.1/callback");
    assert!(registered.any_port());
    let admits = |asked: &str| registered.admits(&redirect(asked));
    assert!(admits("http://127.0.0.1/callback"));
    assert!(admits("http://127.0.0.1:5555/callback"));
    for other in [
        "http://127.0.0.1:5555/callback/",
        "http://127.0.0.1:5555/Callback",
        "http://127.0.0.1:5555/other",
        "http://127.0.0.1:5555/callback?x=1",
        "http://127.0.0.1:5555/callback?",
        "http://127.0.0.2:5555/callback",
        "http://localhost:5555/callback",
        "http://[::1]:5555/callback",
        "https://127.0.0.1:5555/callback",
    ] {
        assert!(!admits(other), "{other}");
    }
    // Registered without the `/` of its path, as some native apps do.
    let rootless = redirect("http://127.0.0.1:33418");
    assert_eq!(rootless.as_str(), "http://127.0.0.1:33418");
    assert!(rootless.admits(&redirect("http://127.0.0.1:33418")));
    assert!(rootless.admits(&redirect("http://127.0.0.1:5555/")));
    assert!(!rootless.admits(&redirect("http://127.0.0.1:5555/cb")));
    assert_eq!(
        rootless.with_query([("code", "c")]),
        "http://127.0.0.1:33418/?code=c"
    );
    let v6 = redirect("http://[::1]/cb?app=1");
    assert!(v6.admits(&redirect("http://[::1]:8080/cb?app=1")));
    assert!(!v6.admits(&redirect("http://[::1]:8080/cb?app=2")));
}

#[test]
fn every_other_redirect_uri_is_matched_exactly() {
    for (registered, other) in [
        ("http://localhost:6274/cb", "http://localhost:6275/cb"),
        ("http://localhost/cb", "http://localhost:80/cb"),
        ("https://app.example/cb", "https://app.example:8443/cb"),
        ("https://app.example/cb", "https://app.example/cb/"),
        ("https://app.example/cb", "https://app.example/CB"),
        ("https://app.example/cb", "https://app.example/cb?x=1"),
        ("https://app.example", "https://app.example/"),
        ("https://127.0.0.1/cb", "https://127.0.0.1:8443/cb"),
        ("com.example.app:/cb", "com.example.app:/cb2"),
    ] {
        let r = redirect(registered);
        assert!(!r.any_port(), "{registered}");
        assert!(r.admits(&redirect(registered)), "{registered}");
        if let Ok(o) = RedirectUri::parse(other) {
            assert!(!r.admits(&o), "{registered} admits {other}");
        }
    }
}

#[test]
fn the_answer_is_the_checked_uri_with_its_query_kept() {
    let pairs = [("code", "c d"), ("iss", "https://gw.example")];
    assert_eq!(
        redirect("https://app.example/cb").with_query(pairs),
        "https://app.example/cb?code=c+d&iss=https%3A%2F%2Fgw.example"
    );
    assert_eq!(
        redirect("http://127.0.0.1:5/cb?app=1").with_query(pairs),
        "http://127.0.0.1:5/cb?app=1&code=c+d&iss=https%3A%2F%2Fgw.example"
    );
    assert_eq!(
        redirect("com.example.app:/cb").with_query([("code", "x")]),
        "com.example.app:/cb?code=x"
    );
}

#[test]
fn a_sealed_redirect_uri_is_checked_again_when_read() {
    let r = redirect("http://127.0.0.1:5/cb");
    let text = serde_json::to_string(&r).unwrap();
    assert_eq!(text, "\"http://127.0.0.1:5/cb\"");
    assert_eq!(serde_json::from_str::<RedirectUri>(&text).unwrap(), r);
    assert!(serde_json::from_str::<RedirectUri>("\"http://127.0.0.1:1@evil.example/cb\"").is_err());
    let text: &str = "http://127.0.0.1:5/cb";
    assert_eq!(r, text);
    assert_eq!(text, r);
}

#[test]
fn client_id_urls_are_https_with_a_path_and_nothing_a_browser_reads_otherwise() {
    let url = "https://app.example.com/oauth/client.json";
    assert_eq!(client_id_url(url).map(String::from).as_deref(), Ok(url));
    for (bad, why) in [
        ("http://app.example.com/c.json", "https://"),
        ("https://app.example.com", "a browser reads"),
        ("https://app.example.com/", "needs a path"),
        ("https://app.example.com/a/../c.json", "a browser reads"),
        ("https://app.example.com/a/%2E%2E/c.json", "a browser reads"),
        ("https://u@app.example.com/c.json", "user information"),
        ("https://app.example.com/c.json#x", "fragment"),
        (
            "https://app.example.com\\@evil.example/c.json",
            "a browser reads",
        ),
        ("HTTPS://app.example.com/c.json", "a browser reads"),
    ] {
        let got = client_id_url(bad).unwrap_err().to_string();
        assert!(got.contains(why), "{bad}: {got}");
    }
    let long = format!("https://app.example.com/{}", "a".repeat(MAX_URL));
    assert!(
        client_id_url(&long)
            .unwrap_err()
            .to_string()
            .contains("at most")
    );
}

#[test]
fn a_resource_is_named_by_its_url_as_a_browser_reads_it() {
    let ours = "https://gw.example/notes";
    for yes in [
        ours,
        "https://gw.example/notes/",
        "https://GW.example/notes",
        "https://gw.example:443/notes",
    ] {
        assert!(names_resource(yes, ours), "{yes}");
    }
    for no in [
        "https://gw.example/notes#x",
        "https://gw.example/notes/more",
        "https://gw.example/Notes",
        "https://gw.example:8443/notes",
        "http://gw.example/notes",
        "https://u@gw.example/notes",
        "https://gw.example/notes?x=1",
        "https://gw.example.evil/notes",
        "https://gw.example\\@evil.example/notes",
        "notes",
    ] {
        assert!(!names_resource(no, ours), "{no}");
    }
    assert!(names_resource("api://notes", "api://notes"));
}
