//! The `auth` settings checked: each rule, and what each problem says.

use super::endpoint::resolve;
use super::*;

fn top() -> AuthConfig {
    AuthConfig {
        issuer: Some("https://login.example.com".into()),
        scopes: Some(vec!["mcp".into()]),
        ..AuthConfig::default()
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn endpoints_inherit_override_or_opt_out() {
    let t = top();
    let inherited = resolve(Some(&t), None, "upstream[0].", None, &no_env)
        .unwrap()
        .unwrap();
    assert_eq!(inherited.issuer, "https://login.example.com");
    assert_eq!(inherited.scopes, ["mcp"]);
    assert_eq!(inherited.algorithms.len(), 9);
    assert_eq!(
        (inherited.leeway_secs, inherited.forward_token),
        (60, false)
    );
    let off = AuthSetting::Enabled(false);
    assert_eq!(resolve(Some(&t), Some(&off), "", None, &no_env), Ok(None));
    assert_eq!(resolve(None, None, "", None, &no_env), Ok(None));
    let own = AuthSetting::Table(Box::new(AuthConfig {
        scopes: Some(vec!["notes:read".into()]),
        ..AuthConfig::default()
    }));
    let mine = resolve(Some(&t), Some(&own), "", None, &no_env)
        .unwrap()
        .unwrap();
    assert_eq!(
        (mine.issuer.as_str(), mine.scopes.as_slice()),
        ("https://login.example.com", &["notes:read".to_owned()][..])
    );
}

#[test]
fn an_issuer_is_a_url_written_as_a_browser_reads_it() {
    for ok in [
        "https://login.example.com",
        "https://login.example.com/",
        "https://login.example.com/realms/tools",
        "http://127.0.0.1:8080",
        "http://[::1]:8080/idp",
        "http://localhost:8080",
    ] {
        assert!(issuer_url(ok).is_ok(), "{ok}: {:?}", issuer_url(ok));
    }
    for (bad, why) in [
        ("http://login.example.com", "must be https://"),
        ("http://127.0.0.1.evil.example", "must be https://"),
        ("http://[::ffff:7f00:1]", "must be https://"),
        ("https://user@login.example.com", "no user information"),
        ("http://127.0.0.1:1@evil.example", "no user information"),
        ("https://login.example.com/?x=1", "no query or fragment"),
        ("https://login.example.com/#x", "no query or fragment"),
        (
            "https://login.example.com\\@evil.example",
            "as a browser reads it",
        ),
        ("http://2130706433:8080", "as a browser reads it"),
        ("HTTPS://Login.example.com", "as a browser reads it"),
        ("https://login.example.com:443/x", "as a browser reads it"),
        ("https://login.example.com/a/../b", "as a browser reads it"),
        ("https:login.example.com", "as a browser reads it"),
        ("login.example.com", "is not a URL"),
    ] {
        let got = issuer_url(bad).unwrap_err().to_string();
        assert!(got.contains(why), "{bad}: {got}");
    }
}

#[test]
fn every_problem_names_its_field() {
    let bad = AuthSetting::Table(Box::new(AuthConfig {
        issuer: Some("http://login.example.com".into()),
        algorithms: Some(vec!["HS256".into(), "none".into(), "RS1".into()]),
        scopes: Some(vec!["two words".into()]),
        introspection: Some(IntrospectionConfig {
            client_id: "gw".into(),
            client_secret_env: Some("GW_SECRET".into()),
            ..IntrospectionConfig::default()
        }),
        ..AuthConfig::default()
    }));
    let problems = resolve(None, Some(&bad), "upstream[1].", None, &no_env).unwrap_err();
    let text = problems.join("\n");
    for expected in [
        "upstream[1].auth.issuer: \"http://login.example.com\" must be https://",
        "upstream[1].auth.algorithms: \"HS256\" is refused",
        "upstream[1].auth.algorithms: \"none\" is refused",
        "upstream[1].auth.algorithms: \"RS1\" is not one of",
        "upstream[1].auth.scopes: \"two words\" is not a scope",
        "upstream[1].auth.introspection.client_secret_env: the environment variable GW_SECRET is not set",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    let missing = resolve(
        None,
        Some(&AuthSetting::Enabled(true)),
        "app[0].",
        None,
        &no_env,
    );
    assert!(missing.unwrap_err()[0].contains("app[0].auth: `true` needs an [auth] table"));
    // A loopback issuer may be http; a secret from the environment is read.
    let local = AuthSetting::Table(Box::new(AuthConfig {
        issuer: Some("http://127.0.0.1:9000".into()),
        introspection: Some(IntrospectionConfig {
            client_id: "gw".into(),
            client_secret_env: Some("GW_SECRET".into()),
            ..IntrospectionConfig::default()
        }),
        ..AuthConfig::default()
    }));
    let env = |v: &str| (v == "GW_SECRET").then(|| "s3cret".to_owned());
    let ok = resolve(None, Some(&local), "", None, &env)
        .unwrap()
        .unwrap();
    assert_eq!(ok.introspection.as_ref().unwrap().client_secret, "s3cret");
    assert!(
        !format!("{ok:?}").contains("s3cret"),
        "the secret is never printed"
    );
}
