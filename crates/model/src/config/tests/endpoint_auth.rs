//! `[auth]` over the mounts and apps: inherited, overridden, turned off;
//! the audience each endpoint needs, and the bounds shared per issuer.

use super::super::*;

/// `[auth]` as a file writes it: inherited, overridden, turned off; and an
/// app that would let a member's tools past the member's own check refused.
#[test]
fn resource_server_settings_from_a_file() {
    let read = |text: &str| -> Config {
        figment::Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()
            .unwrap()
    };
    let c = read(
        r#"
public_url = "https://gw.example.com"

[auth]
issuer = "https://login.example.com"
scopes = ["mcp"]

[[upstream]]
name = "notes"
command = "notes-server"
auth = { scopes = ["mcp", "notes:write"] }

[[upstream]]
name = "status"
command = "status-server"
auth = false

[[app]]
name = "suite"
upstreams = ["status"]
"#,
    );
    let r = c.resolve().unwrap();
    let scopes = |i: usize| r.mounts[i].auth.as_ref().map(|a| a.scopes.clone());
    assert_eq!(scopes(0), Some(vec!["mcp".into(), "notes:write".into()]));
    assert_eq!(scopes(1), None, "auth = false");
    assert_eq!(r.apps[0].auth.as_ref().unwrap().scopes, ["mcp"]);
    // An app over the notes member must require its scopes too.
    for (app, why) in [
        ("auth = false", "the app asks for no token"),
        ("", "the app does not require the scopes notes:write"),
        (
            "auth = { issuer = \"https://other.example.com\", scopes = [\"mcp\", \"notes:write\"] }",
            "the app accepts tokens of https://other.example.com instead",
        ),
    ] {
        let c = read(&format!(
            "public_url = \"https://gw.example.com\"\n\
             [auth]\nissuer = \"https://login.example.com\"\nscopes = [\"mcp\"]\n\
             [[upstream]]\nname = \"notes\"\ncommand = \"n\"\nauth = {{ scopes = [\"mcp\", \"notes:write\"] }}\n\
             [[app]]\nname = \"suite\"\nupstreams = [\"notes\"]\n{app}\n"
        ));
        let ConfigError::Invalid { problems } = c.resolve().unwrap_err() else {
            panic!()
        };
        let text = problems.join("\n");
        assert!(
            text.contains("app[0].upstreams[0]: member \"notes\" requires a token of https://login.example.com with scopes mcp notes:write")
                && text.contains(why),
            "{app}: {text}"
        );
    }
    let fine = read(
        "public_url = \"https://gw.example.com\"\n\
         [auth]\nissuer = \"https://login.example.com\"\n\
         [[upstream]]\nname = \"notes\"\ncommand = \"n\"\nauth = { scopes = [\"notes:write\"] }\n\
         [[app]]\nname = \"suite\"\nupstreams = [\"notes\"]\nauth = { scopes = [\"notes:write\", \"more\"] }\n",
    );
    assert!(fine.resolve().is_ok());
}

/// The audience a token must name is the endpoint's URL under `public_url`,
/// or `audience`: never one built from the request's `Host`, which the
/// caller writes. So every endpoint `[auth]` protects needs one of the two,
/// and the problem names the field and what to write.
#[test]
fn auth_needs_a_public_url_or_an_audience() {
    let read = |text: &str| -> Config {
        figment::Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()
            .unwrap()
    };
    let mounts = concat!(
        "[[upstream]]\nname = \"notes\"\ncommand = \"n\"\n",
        "[[upstream]]\nname = \"status\"\ncommand = \"s\"\nauth = false\n",
        "[[upstream]]\nname = \"tasks\"\ncommand = \"t\"\nauth = { audience = \"https://tasks.example.com\" }\n",
        "[[app]]\nname = \"suite\"\nupstreams = [\"tasks\"]\nauth = { audience = \"https://suite.example.com\" }\n",
    );
    let without = read(&format!(
        "[auth]\nissuer = \"https://login.example.com\"\n{mounts}"
    ));
    let ConfigError::Invalid { problems } = without.resolve().unwrap_err() else {
        panic!()
    };
    assert_eq!(problems.len(), 1, "{problems:?}");
    for said in [
        "public_url: missing",
        "upstream \"notes\"",
        "public_url = \"https://gw.example.com\"",
        "public_url = \"http://127.0.0.1:8787\"",
        "auth.audience",
    ] {
        assert!(problems[0].contains(said), "{said} in {}", problems[0]);
    }
    // Those with an audience of their own, or no auth, are not named.
    for not in ["\"status\"", "\"tasks\"", "\"suite\""] {
        assert!(!problems[0].contains(not), "{not} in {}", problems[0]);
    }
    // An app inherits [auth]'s audience; one with none is named as an app.
    let inherited = read(
        "[auth]\nissuer = \"https://login.example.com\"\naudience = \"https://gw.example.com/notes/mcp\"\n\
         [[upstream]]\nname = \"notes\"\ncommand = \"n\"\n\
         [[app]]\nname = \"suite\"\nupstreams = [\"notes\"]\nauth = { scopes = [] }\n",
    );
    assert!(inherited.resolve().is_ok(), "the app inherits the audience");
    let app = |own: &str| {
        read(&format!(
            concat!(
                "[auth]\nissuer = \"https://login.example.com\"\n",
                "[[upstream]]\nname = \"notes\"\ncommand = \"n\"\nauth = {{ audience = \"https://notes.example.com\" }}\n",
                "[[app]]\nname = \"suite\"\nupstreams = [\"notes\"]\n{own}\n",
            ),
            own = own
        ))
        .resolve()
    };
    let problems = |own: &str| match app(own) {
        Err(ConfigError::Invalid { problems }) => problems.join("\n"),
        other => panic!("{own}: {other:?}"),
    };
    let text = problems("");
    assert!(
        text.contains("public_url: missing; [auth] protects app \"suite\",")
            && !text.contains("notes"),
        "{text}"
    );
    assert!(problems("auth = { audience = \"\" }").contains("app[0].auth.audience: empty"));
    assert!(app("auth = { audience = \"https://suite.example.com\" }").is_ok());
    // With public_url every endpoint's audience is its URL.
    let with = read(&format!(
        "public_url = \"https://gw.example.com\"\n[auth]\nissuer = \"https://login.example.com\"\n{mounts}"
    ));
    assert!(with.resolve().is_ok());
    // No [auth] anywhere: nothing to name.
    assert!(
        read("[[upstream]]\nname = \"notes\"\ncommand = \"n\"\n")
            .resolve()
            .is_ok()
    );
}

/// `[auth.introspection]`'s bounds: never 0, and one per issuer (its calls
/// are bounded once, whichever endpoint asks).
#[test]
fn introspection_bounds_are_one_per_issuer() {
    let read = |text: &str| -> Config {
        figment::Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()
            .unwrap()
    };
    let with = |own: &str| {
        read(&format!(
            "public_url = \"https://gw.example.com\"\n\
             [auth]\nissuer = \"https://login.example.com\"\n\
             [auth.introspection]\nclient_id = \"gw\"\nclient_secret = \"s\"\n\
             [[upstream]]\nname = \"notes\"\ncommand = \"n\"\n\
             [[upstream]]\nname = \"tasks\"\ncommand = \"t\"\n{own}\n"
        ))
    };
    let r = with("").resolve().unwrap();
    let i = r.mounts[0]
        .auth
        .as_ref()
        .unwrap()
        .introspection
        .as_ref()
        .unwrap();
    assert_eq!((i.calls_per_minute, i.max_concurrent_calls), (600, 8));
    let problems = |own: &str| match with(own).resolve() {
        Err(ConfigError::Invalid { problems }) => problems.join("\n"),
        other => panic!("{own}: {other:?}"),
    };
    let text = problems(
        "auth = { introspection = { client_id = \"gw\", client_secret = \"s\", calls_per_minute = 60 } }",
    );
    assert!(
        text.contains("upstream[1].auth.introspection.calls_per_minute: 60, but 600 for upstream \"notes\" at the same issuer"),
        "{text}"
    );
    let text = problems(
        "auth = { introspection = { client_id = \"gw\", client_secret = \"s\", calls_per_minute = 0, max_concurrent_calls = 0 } }",
    );
    for field in ["calls_per_minute", "max_concurrent_calls"] {
        assert!(
            text.contains(&format!(
                "upstream[1].auth.introspection.{field}: 0 would refuse"
            )),
            "{text}"
        );
    }
    // Another issuer has bounds of its own.
    let other = "auth = { issuer = \"https://other.example.com\", introspection = { client_id = \"gw\", client_secret = \"s\", calls_per_minute = 60 } }";
    assert!(with(other).resolve().is_ok());
}

/// With `[authorization_server]`, `[auth]` takes `public_url` as its issuer,
/// whatever else is wrong there: a provider secret whose variable is unset
/// is the one problem reported, naming the field and the variable, and not
/// again as every endpoint's issuer missing; a `public_url` that is wrong
/// or missing is reported as `public_url`, never as an issuer nobody wrote.
#[test]
fn an_authorization_server_problem_is_reported_once_not_as_each_endpoints_issuer() {
    let read = |public_url: &str| -> Config {
        figment::Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(&format!(
                "{public_url}\n[auth]\n\
                 [authorization_server.provider]\nissuer = \"http://127.0.0.1:9090\"\n\
                 client_id = \"gateway\"\nclient_secret_env = \"MCP_UI_TEST_SECRET_NEVER_SET\"\n\
                 [[upstream]]\nname = \"files\"\ncommand = \"f\"\n\
                 [[upstream]]\nname = \"notes\"\ncommand = \"n\"\nauth = {{ scopes = [\"notes\"] }}\n"
            )))
            .extract()
            .unwrap()
    };
    let problems = |c: Config| match c.resolve() {
        Err(ConfigError::Invalid { problems }) => problems,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        problems(read("public_url = \"http://127.0.0.1:8787\"")),
        [
            "authorization_server.provider.client_secret_env: the environment variable MCP_UI_TEST_SECRET_NEVER_SET is not set"
        ]
    );
    let wrong = problems(read("public_url = \"http://gw.example.com\""));
    assert!(
        wrong.iter().all(|p| p.starts_with("public_url: ")
            || p.starts_with("authorization_server.provider.client_secret_env: ")),
        "{wrong:?}"
    );
    assert!(
        wrong.iter().any(|p| p.contains("must be https://")),
        "{wrong:?}"
    );
    let missing = problems(read(""));
    assert!(
        missing.iter().all(|p| !p.contains("auth.issuer")),
        "{missing:?}"
    );
    assert!(
        missing
            .iter()
            .any(|p| p.starts_with("public_url: needed by [authorization_server]")),
        "{missing:?}"
    );
}
