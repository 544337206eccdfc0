//! The operator's identity provider, where users sign in: its endpoints
//! (discovered from its issuer, or configured), the authorization request
//! the gateway sends it (its own state, nonce and S256 PKCE), the code
//! exchanged with the gateway's client credentials, and the user read from
//! the ID token or the user info.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use serde_json::{Map, Value};
use url::Url;

use crate::oauth::fetch::{self, ClientAuth, Fetcher};
use mcp_ui_identity::authorization_server::provider as rules;
use mcp_ui_model::config::authorization::ProviderAuth;

/// Clock skew tolerated on the ID token's expiry.
const LEEWAY_SECS: u64 = 60;

pub(super) struct Provider {
    pub config: mcp_ui_model::config::Provider,
    fetcher: Fetcher,
    /// What its requests are known by in the HTTP client (its issuer, or
    /// its token endpoint): its TLS settings.
    anchor: String,
    found: ArcSwapOption<Endpoints>,
    finding: tokio::sync::Mutex<()>,
}

/// Where the provider is reached.
#[derive(Debug)]
pub(super) struct Endpoints {
    pub authorization: Url,
    pub token: Url,
    pub userinfo: Option<Url>,
    /// It sends `iss` with its answers (RFC 9207): then it is checked.
    pub iss_supported: bool,
}

/// What the provider's token endpoint answered.
pub(super) struct Tokens {
    pub answer: Map<String, Value>,
}

impl Provider {
    pub(super) fn new(
        config: &mcp_ui_model::config::Provider,
        connect_timeout: Duration,
    ) -> Result<Provider, String> {
        let anchor = config
            .issuer
            .clone()
            .or_else(|| config.token_endpoint.clone())
            .unwrap_or_default();
        let trusted = config.ca_file.as_ref().map(|ca| (anchor.as_str(), ca));
        let fetcher = Fetcher::new(connect_timeout, trusted)
            .map_err(|p| format!("authorization_server.provider: {}", p.join("; ")))?;
        Ok(Provider {
            config: config.clone(),
            fetcher,
            anchor,
            found: ArcSwapOption::empty(),
            finding: tokio::sync::Mutex::new(()),
        })
    }

    /// Its endpoints: those configured, the rest from its metadata (found
    /// once; a failure is tried again on the next login).
    pub(super) async fn endpoints(&self) -> Result<Arc<Endpoints>, String> {
        if let Some(e) = self.found.load_full() {
            return Ok(e);
        }
        let _one = self.finding.lock().await;
        if let Some(e) = self.found.load_full() {
            return Ok(e);
        }
        let c = &self.config;
        let doc = match &c.issuer {
            Some(issuer) => Some(
                self.fetcher
                    .discover(&self.anchor, issuer)
                    .await
                    .map_err(|e| e.to_string())?
                    .1,
            ),
            None => None,
        };
        // A configured endpoint was held to the same rule at start.
        let configured = |u: &Option<String>| {
            u.as_deref()
                .and_then(|u| mcp_ui_model::config::auth::issuer_url(u).ok())
        };
        let from_doc = |k: &str| doc.as_ref().and_then(|d| fetch::endpoint(d, k));
        let missing = |k: &str| format!("the provider's metadata names no {k}");
        let endpoints = Endpoints {
            authorization: configured(&c.authorization_endpoint)
                .or_else(|| from_doc("authorization_endpoint"))
                .ok_or_else(|| missing("authorization_endpoint"))?,
            token: configured(&c.token_endpoint)
                .or_else(|| from_doc("token_endpoint"))
                .ok_or_else(|| missing("token_endpoint"))?,
            userinfo: configured(&c.userinfo_endpoint).or_else(|| from_doc("userinfo_endpoint")),
            iss_supported: doc
                .as_ref()
                .and_then(|d| d.get("authorization_response_iss_parameter_supported"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        tracing::info!(provider = %c.name, authorization = %endpoints.authorization, "found the identity provider's endpoints");
        let e = Arc::new(endpoints);
        self.found.store(Some(e.clone()));
        Ok(e)
    }

    /// Where the user is sent to sign in.
    pub(super) fn authorize_url(
        &self,
        e: &Endpoints,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        challenge: &str,
    ) -> String {
        let scope = self.config.scopes.join(" ");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", self.config.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("state", state),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
        ];
        if !scope.is_empty() {
            pairs.push(("scope", &scope));
        }
        if self.config.issuer.is_some() {
            pairs.push(("nonce", nonce));
        }
        mcp_ui_identity::authorization_server::authorize::redirect_to(
            e.authorization.as_str(),
            &pairs,
        )
    }

    /// The provider's tokens for `code`.
    pub(super) async fn exchange(
        &self,
        e: &Endpoints,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<Tokens, String> {
        let form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        self.token_request(e, form, "the code").await
    }

    /// New tokens for the user, for the provider's `refresh_token`.
    pub(super) async fn refresh(
        &self,
        e: &Endpoints,
        refresh_token: &str,
    ) -> Result<Tokens, String> {
        let form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        self.token_request(e, form, "the refresh token").await
    }

    /// A request to the provider's token endpoint with the gateway's client
    /// credentials.
    async fn token_request(
        &self,
        e: &Endpoints,
        mut form: Vec<(&str, &str)>,
        what: &str,
    ) -> Result<Tokens, String> {
        let c = &self.config;
        let auth = match c.auth {
            ProviderAuth::Post => {
                form.push(("client_id", &c.client_id));
                form.push(("client_secret", &c.client_secret));
                ClientAuth::None
            }
            ProviderAuth::Basic => ClientAuth::Basic {
                id: &c.client_id,
                secret: &c.client_secret,
            },
        };
        let answer = self
            .fetcher
            .post_form(&self.anchor, &e.token, &form, auth)
            .await
            .map_err(|why| format!("the identity provider refused {what}: {why}"))?;
        match answer {
            Value::Object(m) if m.get("access_token").and_then(Value::as_str).is_some() => {
                Ok(Tokens { answer: m })
            }
            Value::Object(m) => Err(format!(
                "the identity provider refused {what}: {}",
                m.get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("no access token in its answer")
            )),
            _ => Err("the identity provider's token answer is not a JSON object".into()),
        }
    }

    /// The user the provider signed in, by `subject_claim`: from the ID
    /// token when there is one (its claims checked against `nonce`), else
    /// from the user info.
    pub(super) async fn subject(
        &self,
        e: &Endpoints,
        tokens: &Tokens,
        nonce: &str,
    ) -> Result<String, String> {
        let c = &self.config;
        if let (Some(issuer), Some(id_token)) = (
            &c.issuer,
            tokens.answer.get("id_token").and_then(Value::as_str),
        ) {
            let claims = rules::id_token_claims(id_token).map_err(|e| e.to_string())?;
            rules::check_id_token(
                &claims,
                &rules::Expect {
                    issuer,
                    client_id: &c.client_id,
                    nonce,
                    now: mcp_ui_model::clock::unix_secs(),
                    leeway_secs: LEEWAY_SECS,
                },
            )
            .map_err(|e| e.to_string())?;
            if let Some(s) = rules::subject(&claims, &c.subject_claim) {
                return Ok(s);
            }
            if e.userinfo.is_none() {
                return Err(format!("the ID token has no `{}` claim", c.subject_claim));
            }
        } else if c.issuer.is_some()
            && !c.scopes.iter().any(|s| s == "openid")
            && e.userinfo.is_none()
        {
            return Err("the provider sent no ID token (ask for the `openid` scope) and has no userinfo_endpoint".into());
        }
        let Some(userinfo) = &e.userinfo else {
            return Err("the provider sent no ID token and has no userinfo_endpoint".into());
        };
        let token = tokens
            .answer
            .get("access_token")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let info = self
            .fetcher
            .get(&self.anchor, userinfo, ClientAuth::Bearer(token))
            .await?;
        info.as_object()
            .and_then(|m| rules::subject(m, &c.subject_claim))
            .ok_or_else(|| format!("the user info has no `{}`", c.subject_claim))
    }
}
