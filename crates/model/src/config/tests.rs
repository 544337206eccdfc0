//! Tests of the layered configuration and its checks.
//!
//! - `endpoint_auth`: `[auth]` over the mounts and apps, and the rules
//!   across them.

use super::*;

mod endpoint_auth;

fn up(name: &str) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        ..Default::default()
    }
}

#[test]
fn single_upstream_mounts_at_mcp() {
    let mut c = Config::default();
    c.upstreams.push(UpstreamConfig {
        url: Some("http://127.0.0.1:9/mcp".into()),
        ..up("a")
    });
    let m = c.resolve().unwrap().mounts;
    assert_eq!(m[0].path, "/mcp");
}

#[test]
fn reports_every_problem_by_field() {
    let mut c = Config {
        session_key: Some("12".into()),
        ..Config::default()
    };
    c.upstreams.push(up("a"));
    c.upstreams.push(UpstreamConfig {
        url: Some("ftp://x".into()),
        ..up("a")
    });
    let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
        panic!()
    };
    let text = problems.join("\n");
    assert!(text.contains("session_key"), "{text}");
    assert!(
        text.contains("upstream[0] (\"a\"): set exactly one"),
        "{text}"
    );
    assert!(text.contains("upstream[1].url"), "{text}");
}

/// Session ids carry the mount's name; one too long to carry is refused.
#[test]
fn upstream_names_fit_a_session_id() {
    let mut c = Config::default();
    for name in ["n".repeat(255), "n".repeat(256)] {
        c.upstreams = vec![UpstreamConfig {
            url: Some("http://127.0.0.1:9/mcp".into()),
            ..up(&name)
        }];
        match (name.len(), c.resolve().map(|r| r.mounts)) {
            (255, r) => assert!(r.is_ok()),
            (_, Err(ConfigError::Invalid { problems })) => {
                assert_eq!(
                    problems,
                    ["upstream[0].name: 256 characters, at most 255 allowed"]
                );
            }
            (_, r) => panic!("{r:?}"),
        }
    }
}

#[test]
fn auth_settings() {
    let c: Config = figment::Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::string(
            "public_url = \"https://gw.example.com\"\n[[upstream]]\nname = \"a\"\nurl = \"http://127.0.0.1:9/mcp\"\nauth_challenge = \"in-band\"\n",
        ))
        .extract()
        .unwrap();
    assert_eq!(c.public_url.as_deref(), Some("https://gw.example.com"));
    let m = c.resolve().unwrap().mounts;
    assert_eq!(m[0].auth_challenge, AuthChallenge::InBand);
    let bad = Config {
        public_url: Some("gw.example.com".into()),
        ..Config::default()
    };
    let ConfigError::Invalid { problems } = bad.resolve().unwrap_err() else {
        panic!()
    };
    assert!(problems[0].starts_with("public_url:"), "{problems:?}");
    assert!(
        figment::Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(
                "[[upstream]]\nname = \"a\"\nurl = \"http://x/\"\nauth_challenge = \"bogus\"\n",
            ))
            .extract::<Config>()
            .is_err()
    );
}

#[test]
fn several_upstreams_get_named_paths() {
    let mut c = Config::default();
    c.upstreams.push(UpstreamConfig {
        command: Some("x".into()),
        ..up("one")
    });
    c.upstreams.push(UpstreamConfig {
        sse_url: Some("http://127.0.0.1:1/sse".into()),
        ..up("two")
    });
    let m = c.resolve().unwrap().mounts;
    assert_eq!(m[0].path, "/one/mcp");
    assert_eq!(m[1].path, "/two/mcp");
}

#[test]
fn mounts_cannot_take_the_gateways_own_paths() {
    for taken in [
        "/metrics",
        "/readyz/",
        "/healthz",
        "/preview/x",
        "/.well-known/y",
    ] {
        let mut c = Config::default();
        c.upstreams.push(UpstreamConfig {
            command: Some("x".into()),
            path: Some(taken.into()),
            ..up("one")
        });
        let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
            panic!()
        };
        assert!(problems[0].contains("gateway's own paths"), "{problems:?}");
    }
    assert!(!is_reserved_path("/metrics/mcp") && !is_reserved_path("/previews"));
}

#[test]
fn https_upstreams_take_tls_settings_and_plain_ones_refuse_them() {
    let mut c = Config::default();
    c.upstreams.push(UpstreamConfig {
        url: Some("https://mcp.example.com/mcp".into()),
        ca_file: Some("/etc/ca.pem".into()),
        client_cert: Some("/etc/c.pem".into()),
        client_key: Some("/etc/c.key".into()),
        tls_server_name: Some("internal.example".into()),
        ..up("secure")
    });
    let m = c.resolve().unwrap().mounts;
    assert_eq!(m[0].tls.server_name.as_deref(), Some("internal.example"));
    assert!(m[0].tls.client_auth.is_some());

    let mut c = Config {
        tls_cert: Some("/etc/tls.crt".into()),
        ..Config::default()
    };
    c.upstreams.push(UpstreamConfig {
        url: Some("http://127.0.0.1:9/mcp".into()),
        ca_file: Some("/etc/ca.pem".into()),
        ..up("plain")
    });
    c.upstreams.push(UpstreamConfig {
        sse_url: Some("https://127.0.0.1:9/sse".into()),
        client_cert: Some("/etc/c.pem".into()),
        tls_server_name: Some("not a name!".into()),
        ..up("half")
    });
    let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
        panic!()
    };
    let text = problems.join("\n");
    for want in [
        "tls_key: must be set with tls_cert",
        "upstream[0]: ca_file, client_cert, client_key and tls_server_name apply to an https:// url or sse_url only",
        "upstream[1].client_key: must be set with client_cert",
        "upstream[1].tls_server_name: \"not a name!\" is not a DNS name or an IP address",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

#[test]
fn session_modes_default_by_kind_and_are_checked() {
    let mut c = Config::default();
    c.upstreams.push(UpstreamConfig {
        url: Some("http://127.0.0.1:9/mcp".into()),
        ..up("http")
    });
    c.upstreams.push(UpstreamConfig {
        command: Some("server".into()),
        ..up("stdio")
    });
    c.upstreams.push(UpstreamConfig {
        sse_url: Some("http://127.0.0.1:9/sse".into()),
        sessions: Some(SessionMode::Conversation),
        conversation_key: Some("header:X-Conversation".into()),
        ..up("sse")
    });
    let m = c.resolve().unwrap().mounts;
    assert_eq!(
        m[0].sessions.mode,
        SessionMode::Client,
        "HTTP owns its sessions"
    );
    assert_eq!(m[1].sessions.mode, SessionMode::Shared, "stdio is shared");
    assert_eq!(m[1].sessions.pool, 1);
    assert_eq!(
        m[2].sessions.key,
        ConversationKey::Header(http::HeaderName::from_static("x-conversation"))
    );
    assert_eq!(
        ConversationKey::default().to_string(),
        "meta:openai/session"
    );

    let mut bad = Config::default();
    bad.upstreams.push(UpstreamConfig {
        command: Some("server".into()),
        pool: Some(0),
        ..up("a")
    });
    bad.upstreams.push(UpstreamConfig {
        command: Some("server".into()),
        sessions: Some(SessionMode::Client),
        pool: Some(2),
        conversation_key: Some("meta:x".into()),
        ..up("b")
    });
    bad.upstreams.push(UpstreamConfig {
        command: Some("server".into()),
        sessions: Some(SessionMode::Conversation),
        conversation_key: Some("openai/session".into()),
        ..up("c")
    });
    let ConfigError::Invalid { problems } = bad.resolve().unwrap_err() else {
        panic!()
    };
    let text = problems.join("\n");
    assert!(
        text.contains("upstream[0].pool: 0, must be 1 to 64"),
        "{text}"
    );
    assert!(
        text.contains("upstream[1].pool: only meaningful with sessions = \"shared\""),
        "{text}"
    );
    assert!(
        text.contains(
            "upstream[1].conversation_key: only meaningful with sessions = \"conversation\""
        ),
        "{text}"
    );
    assert!(
        text.contains("upstream[2].conversation_key: \"openai/session\" must be \"meta:<key of params._meta>\" or \"header:<name>\""),
        "{text}"
    );
    let toml = "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nsessions = \"sharde\"\n";
    let parsed: Result<Config, _> = toml::from_str(toml);
    assert!(parsed.is_err(), "an unknown mode is refused");
}
