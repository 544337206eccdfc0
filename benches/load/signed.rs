//! The `auth` scenario: what signing in costs a call. Four gateways with the
//! same settings in front of the same upstream, but for `[auth]`: open; and
//! accepting access tokens of oidc-provider (tests/peers/oidc_provider.mjs)
//! as RS256 JWTs, as ES256 JWTs, and as opaque tokens checked by
//! introspection (RFC 7662), each with a scope to check and a rate budget per
//! caller (`scopes = ["tools:call"]`, `requests_per_minute`). Each token is
//! the provider's own (`client_credentials` with the endpoint as
//! `resource`) and goes on every call, as hosts send it. The points are
//! interleaved; the ratios are against the open gateway.

use std::fmt::Write as _;
use std::path::Path;

use crate::client::Target;
use crate::oauth::{self, Oidc};
use crate::procs::{self, Proc};
use crate::report;
use crate::run::{self, Budget, Call, Point};
use crate::web::{self, Http};

/// The scenario's name in reports.
pub const SCENARIO: &str = "tools/call [auth]";
/// The reference: the same gateway without `[auth]`.
pub const OPEN: &str = "open";

/// Each gateway: its label, its endpoint's path (the provider picks the
/// token's kind from it) and whether it checks tokens by introspection.
const KINDS: [(&str, &str, Option<Check>); 4] = [
    (OPEN, "/mcp", None),
    ("RS256 JWT", "/mcp", Some(Check::Jwt)),
    ("ES256 JWT", "/es256/mcp", Some(Check::Jwt)),
    ("introspected", "/opaque/mcp", Some(Check::Introspection)),
];

#[derive(Clone, Copy)]
enum Check {
    Jwt,
    Introspection,
}

/// How the points are measured: at which concurrencies, each point's
/// budget, and the turns the gateways take in it.
pub struct Plan<'a> {
    pub concs: &'a [usize],
    pub budget: &'a dyn Fn(usize) -> Budget,
    pub rounds: usize,
}

/// The scenario: its points go to `points`, its ratios to `extra`.
pub async fn run(
    root: &Path,
    gateway_exe: &Path,
    upstream: &Proc,
    logs: &Path,
    plan: &Plan<'_>,
    (points, extra): (&mut Vec<Point>, &mut String),
) -> Result<(), String> {
    let Plan {
        concs,
        budget,
        rounds,
    } = *plan;
    let http = web::client();
    let oidc = oauth::provider(root, logs).await?;
    let ports = oauth::free_ports(KINDS.len())?;
    let mut gateways = Vec::new();
    let mut started = Ok(());
    for ((label, path, check), port) in KINDS.into_iter().zip(ports) {
        let name = format!("gateway-auth-{}", gateways.len());
        match start(
            &name,
            gateway_exe,
            port,
            path,
            upstream,
            check.map(|c| (&oidc, c)),
            logs,
        )
        .await
        {
            Ok(gw) => gateways.push((label, path, gw, check)),
            Err(e) => {
                started = Err(e);
                break;
            }
        }
    }
    let mut targets = Vec::new();
    if started.is_ok() {
        for (label, path, gw, check) in &gateways {
            let bearer = match check {
                None => None,
                Some(_) => match token(&http, &oidc, &format!("http://{}{path}", gw.addr)).await {
                    Ok(t) => Some(t),
                    Err(e) => {
                        started = Err(e);
                        break;
                    }
                },
            };
            let target = Target::Http {
                addr: gw.addr,
                host: gw.addr.to_string(),
                path: (*path).into(),
                tls: None,
                bearer,
                sessionless: false,
            };
            targets.push((*label, target, Some(gw), Call::Small));
        }
    }
    if started.is_ok() {
        for &c in concs {
            let measured = run::interleaved_calls(SCENARIO, &targets, c, &budget(c), rounds).await;
            for p in measured {
                println!("{}", report::line(&p));
                points.push(p);
            }
        }
        let labels: Vec<&str> = KINDS.iter().skip(1).map(|k| k.0).collect();
        let _ = writeln!(
            extra,
            "\n## Signed-in calls against open ones\n\nFour gateways in front of the same upstream, the same settings but `[auth]` (`scopes = [\"tools:call\"]`, `requests_per_minute`), the tokens oidc-provider's own, one per gateway, sent on every call.\n"
        );
        for label in labels {
            extra.push_str(&report::ratios(points, SCENARIO, label, &[OPEN]));
        }
    }
    drop(targets);
    for (_, _, gw, _) in gateways {
        gw.stop().await;
    }
    oidc.proc.stop().await;
    started
}

/// A gateway at `port` in front of `upstream` at `path`, accepting `oidc`'s
/// tokens when given.
async fn start(
    name: &str,
    exe: &Path,
    port: u16,
    path: &str,
    upstream: &Proc,
    auth: Option<(&Oidc, Check)>,
    logs: &Path,
) -> Result<Proc, String> {
    let auth = match auth {
        None => String::new(),
        Some((oidc, check)) => {
            let introspection = match check {
                Check::Jwt => "",
                Check::Introspection => {
                    "\n[auth.introspection]\nclient_id = \"gateway\"\nclient_secret = \"gateway-secret\"\n"
                }
            };
            format!(
                "\n[auth]\nissuer = \"{}\"\nscopes = [\"tools:call\"]\nrequests_per_minute = 1000000\n{introspection}",
                oidc.issuer
            )
        }
    };
    let toml = format!(
        "listen = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n\n[[upstream]]\nname = \"bench\"\nurl = \"http://{}/mcp\"\npath = \"{path}\"\n{auth}",
        upstream.addr
    );
    procs::gateway_with_config(name, exe, &toml, "info", logs).await
}

/// An access token of the provider's for `resource`, by `client_credentials`.
async fn token(http: &Http, oidc: &Oidc, resource: &str) -> Result<String, String> {
    let url = format!("{}/token", oidc.issuer);
    let form = web::encode_form(&[
        ("grant_type", "client_credentials"),
        ("resource", resource),
        ("scope", "tools:call"),
    ]);
    let headers = [
        ("content-type", "application/x-www-form-urlencoded"),
        // `test-client:test-secret` (client_secret_basic).
        ("authorization", "Basic dGVzdC1jbGllbnQ6dGVzdC1zZWNyZXQ="),
    ];
    let a = web::request(http, http::Method::POST, &url, &headers, form).await?;
    a.json()["access_token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{url} for {resource}: {}", a.describe()))
}
