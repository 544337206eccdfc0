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
