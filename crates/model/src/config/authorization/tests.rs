//! The `authorization` settings checked: each rule, and what each problem says.

use super::*;

fn google() -> AuthorizationServerConfig {
    AuthorizationServerConfig {
        provider: ProviderConfig {
            issuer: Some("https://accounts.google.com".into()),
            client_id: "gw.apps.googleusercontent.com".into(),
            client_secret_env: Some("GOOGLE_SECRET".into()),
            ..ProviderConfig::default()
        },
        ..AuthorizationServerConfig::default()
    }
}

#[test]
fn a_provider_needs_its_client_and_the_gateway_a_public_url() {
    let env = |v: &str| (v == "GOOGLE_SECRET").then(|| "s3cret".to_owned());
    let ok = resolve(&google(), Some("https://mcp.example.com/"), &env).unwrap();
    assert_eq!(ok.issuer, "https://mcp.example.com");
    assert_eq!(ok.provider.scopes, ["openid"]);
    assert_eq!(ok.provider.name, "accounts.google.com");
    assert!(!format!("{ok:?}").contains("s3cret"));
    let problems = resolve(&google(), None, &|_| None).unwrap_err().join("\n");
    assert!(
        problems.contains("public_url: needed by [authorization_server]"),
        "{problems}"
    );
    assert!(
        problems.contains("client_secret_env: the environment variable GOOGLE_SECRET is not set"),
        "{problems}"
    );
    let mut github = google();
    github.provider.issuer = None;
    github.provider.authorization_endpoint =
        Some("https://github.com/login/oauth/authorize".into());
    let problems = resolve(&github, Some("https://mcp.example.com"), &env)
        .unwrap_err()
        .join("\n");
    assert!(problems.contains("provider.issuer: missing"), "{problems}");
    assert!(
        problems.contains("provider.userinfo_endpoint: missing"),
        "{problems}"
    );
}

#[test]
fn an_enterprise_issuer_names_who_it_asserts_for_and_each_problem_its_field() {
    let env = |v: &str| (v == "GOOGLE_SECRET").then(|| "s3cret".to_owned());
    let mut config = google();
    config.enterprise_issuers = vec![EnterpriseIssuerConfig {
        issuer: "https://acme.okta.com".into(),
        clients: vec!["claude".into()],
        ..EnterpriseIssuerConfig::default()
    }];
    let ok = resolve(&config, Some("https://mcp.example.com"), &env).unwrap();
    let e = &ok.enterprise[0];
    assert_eq!(
        (e.subject_claim.as_str(), e.max_lifetime_secs),
        ("sub", 300)
    );
    let bad = |e: EnterpriseIssuerConfig| {
        let mut config = google();
        config.enterprise_issuers = vec![e.clone(), e];
        resolve(&config, Some("https://mcp.example.com"), &env)
            .unwrap_err()
            .join("\n")
    };
    let problems = bad(EnterpriseIssuerConfig {
        issuer: "http://acme.okta.com".into(),
        max_lifetime_secs: Some(0),
        ..EnterpriseIssuerConfig::default()
    });
    for says in [
        "enterprise_issuers[0].issuer: \"http://acme.okta.com\"",
        "enterprise_issuers[0].clients: missing",
        "enterprise_issuers[1].max_lifetime_secs: 0 must be between 1 and 3600",
    ] {
        assert!(problems.contains(says), "{says:?} in {problems}");
    }
    let problems = bad(EnterpriseIssuerConfig {
        issuer: "https://mcp.example.com".into(),
        clients: vec![" ".into()],
        ..EnterpriseIssuerConfig::default()
    });
    assert!(problems.contains("is the gateway itself"), "{problems}");
    assert!(problems.contains("\" \" is not a client_id"), "{problems}");
    let problems = bad(EnterpriseIssuerConfig {
        issuer: "https://acme.okta.com".into(),
        clients: vec!["*".into()],
        ..EnterpriseIssuerConfig::default()
    });
    assert!(
        problems
            .contains("enterprise_issuers[1].issuer: \"https://acme.okta.com\" is listed twice"),
        "{problems}"
    );
}

#[test]
fn a_pinned_document_host_names_an_address_and_port() {
    let env = |v: &str| (v == "GOOGLE_SECRET").then(|| "s3cret".to_owned());
    let mut config = google();
    let pins = &mut config.client_metadata_documents.connect_to;
    pins.insert("chatgpt.com".into(), "127.0.0.1:8443".into());
    resolve(&config, Some("https://mcp.example.com"), &env).unwrap();
    let pins = &mut config.client_metadata_documents.connect_to;
    pins.insert("claude.ai".into(), "localhost".into());
    let problems = resolve(&config, Some("https://mcp.example.com"), &env)
        .unwrap_err()
        .join("\n");
    assert!(
        problems.contains("client_metadata_documents.connect_to.\"claude.ai\": \"localhost\" is not an address and port"),
        "{problems}"
    );
}
