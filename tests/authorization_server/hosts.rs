//! ChatGPT's and Claude's sign-in as they run: registering nothing, each known by its
//! own client id, the URL of its Client ID Metadata Document
//! (`https://chatgpt.com/oauth/client.json`,
//! `https://claude.ai/oauth/mcp-oauth-client-metadata`), a document shaped as theirs
//! served by a local HTTPS stand-in with a certificate for their names
//! (`client_metadata_documents.connect_to` sends the fetch there, `private_hosts` lets it
//! be loopback); each host's callback, its `state` (ChatGPT's are 400 characters and
//! more), no `scope` on a reconnect (as ChatGPT sends it); at an upstream's endpoint and
//! at an `[[app]]`'s.

use super::*;
use mcp_ui_model::config::{AppConfig, MemberConfig};

/// ChatGPT's callback (developers.openai.com/apps-sdk, "Authentication") and the one of
/// its app submission form.
const CHATGPT_CALLBACK: &str = "https://chatgpt.com/connector_platform_oauth_redirect";
const CHATGPT_SUBMISSION: &str = "https://platform.openai.com/apps-manage/oauth";
/// Claude's callback (support.claude.com, "Building custom connectors").
const CLAUDE_CALLBACK: &str = "https://claude.ai/api/mcp/auth_callback";

/// Each host's client id.
const CHATGPT: &str = "https://chatgpt.com/oauth/client.json";
const CLAUDE: &str = "https://claude.ai/oauth/mcp-oauth-client-metadata";

/// Each host's metadata document, its client id the URL it is served at.
fn host_document(url: &str) -> Value {
    if url == CHATGPT {
        json!({"client_id": url, "client_name": "ChatGPT", "client_uri": "https://chatgpt.com",
            "logo_uri": "https://cdn.oaistatic.com/assets/favicon-miwirzcw.ico",
            "redirect_uris": [CHATGPT_CALLBACK, CHATGPT_SUBMISSION],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none",
            "application_type": "web"})
    } else {
        json!({"client_id": url, "client_name": "Claude", "client_uri": "https://claude.ai",
            "redirect_uris": [CLAUDE_CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none"})
    }
}

fn app() -> AppConfig {
    AppConfig {
        name: "suite".into(),
        path: None,
        upstreams: vec![MemberConfig::Table {
            upstream: "notes".into(),
            prefix: Some("notes_".into()),
        }],
        auth: None,
    }
}

/// A `state` as ChatGPT makes them: `oauth_s_` and a long random tail.
fn long_state(len: usize) -> String {
    let tail: String = (0..len)
        .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
        .collect();
    format!("oauth_s_{tail}")
}

/// One host's whole sign-in at `resource`: the authorization request as the host sends
/// it, the consent and the provider's login, the callback's shape, the code redeemed,
/// and a tool called with the access token; then a refresh.
async fn host_signs_in(
    w: &World,
    client_id: &str,
    callback: &str,
    resource: &str,
    scope: Option<&str>,
    call: (&str, &str),
) {
    let state = long_state(600);
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", callback),
        ("state", state.as_str()),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("resource", resource),
    ];
    if let Some(s) = scope {
        pairs.push(("scope", s));
    }
    let url = format!("{}?{}", w.url("/oauth/authorize"), encode_form(&pairs));
    let back = sign_in_to(w, &mut Browser::new(), &url, "allow", callback).await;
    let (at, _) = back.split_once('?').expect("a query");
    assert_eq!(at, callback, "{back}");
    let names: Vec<String> = query_of(&back).into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["code", "state", "iss"], "{back}");
    assert_eq!(
        param(&back, "state").as_deref(),
        Some(state.as_str()),
        "the state, whole"
    );
    assert_eq!(param(&back, "iss").as_deref(), Some(w.issuer.as_str()));
    let code = param(&back, "code").unwrap();
    let (status, _, tokens) = form(
        &w.url("/oauth/token"),
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", callback),
            ("code_verifier", VERIFIER),
            ("client_id", client_id),
            ("resource", resource),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(claims(access)["aud"], resource);
    assert_eq!(claims(access)["client_id"], client_id);
    let (path, tool) = call;
    let answer = call_tool(w, path, tool, access).await.expect("a tool call");
    assert!(answer.contains("signed in"), "{answer}");
    let refresh_token = tokens["refresh_token"].as_str().expect("a refresh token");
    let (status, again) = refresh(w, client_id, refresh_token).await;
    assert_eq!(status, StatusCode::OK, "{again}");
}

#[tokio::test]
async fn chatgpt_and_claude_sign_in_by_their_metadata_documents_as_they_run() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let docs = DocumentHost::start_as(&["chatgpt.com", "claude.ai"], host_document).await;
    let stand_in = docs.origin.trim_start_matches("https://").to_owned();
    let setup_apps = Setup {
        apps: vec![app()],
        ..Setup::default()
    };
    let w = world_set_up(
        &peers,
        |a| {
            a.registration.enabled = false;
            let docs_config = &mut a.client_metadata_documents;
            docs_config.private_hosts = vec!["chatgpt.com".into(), "claude.ai".into()];
            for host in ["chatgpt.com", "claude.ai"] {
                docs_config.connect_to.insert(host.into(), stand_in.clone());
            }
            docs_config.ca_file = Some(docs.ca_file.clone());
        },
        vec![fixture()],
        setup_apps,
    )
    .await;
    let (_, md) = get_json(&w.url("/.well-known/oauth-authorization-server")).await;
    assert_eq!(md["client_id_metadata_document_supported"], true, "{md}");
    assert_eq!(md["authorization_response_iss_parameter_supported"], true);
    assert!(
        md.get("registration_endpoint").is_none(),
        "registers nothing: {md}"
    );

    let (chatgpt, claude) = (CHATGPT.to_owned(), CLAUDE.to_owned());
    let notes = w.resource();
    let suite = w.url("/suite/mcp");
    // ChatGPT: with a scope, at the upstream's endpoint and at the app's; then a
    // reconnect, which sends no scope.
    host_signs_in(
        &w,
        &chatgpt,
        CHATGPT_CALLBACK,
        &notes,
        Some("tools:call"),
        ("/notes", "echo"),
    )
    .await;
    host_signs_in(
        &w,
        &chatgpt,
        CHATGPT_CALLBACK,
        &suite,
        Some("tools:call"),
        ("/suite/mcp", "notes_echo"),
    )
    .await;
    host_signs_in(
        &w,
        &chatgpt,
        CHATGPT_SUBMISSION,
        &suite,
        None,
        ("/suite/mcp", "notes_echo"),
    )
    .await;
    // Claude, at both.
    host_signs_in(
        &w,
        &claude,
        CLAUDE_CALLBACK,
        &notes,
        None,
        ("/notes", "echo"),
    )
    .await;
    host_signs_in(
        &w,
        &claude,
        CLAUDE_CALLBACK,
        &suite,
        Some("tools:call notes:write"),
        ("/suite/mcp", "notes_echo"),
    )
    .await;

    // One host's client may not send another's callback.
    let url = format!(
        "{}?{}",
        w.url("/oauth/authorize"),
        encode_form(&[
            ("response_type", "code"),
            ("client_id", &claude),
            ("redirect_uri", CHATGPT_CALLBACK),
            ("state", "s"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
            ("resource", &notes),
        ])
    );
    let (status, h, _, _) = Browser::new().request(Method::GET, &url, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(h.get("location").is_none());
}

/// `connect_to` chooses where a host's document is fetched from, not whether that place
/// may be reached: a loopback address still needs the host in `private_hosts`.
#[tokio::test]
async fn a_pinned_address_is_checked_as_a_resolved_one() {
    let Some((peers, _guard)) = setup().await else {
        return;
    };
    let docs = DocumentHost::start_as(&["chatgpt.com"], host_document).await;
    let stand_in = docs.origin.trim_start_matches("https://").to_owned();
    let w = world(&peers, |a| {
        let docs_config = &mut a.client_metadata_documents;
        docs_config
            .connect_to
            .insert("chatgpt.com".into(), stand_in);
        docs_config.ca_file = Some(docs.ca_file.clone());
    })
    .await;
    refused_page(&w, CHATGPT, "127.0.0.1, which is not a public address").await;
}
