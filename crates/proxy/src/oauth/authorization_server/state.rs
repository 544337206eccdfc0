//! The authorization server's state: its configuration, the key that seals
//! what travels between steps, its signing keys, the provider, the clients
//! known, what is remembered between requests, and the paths it answers at.

use std::time::Duration;

use http::Response;

use super::basics::too_many;
use super::endpoints::{self, Endpoint};
use super::{clients, enterprise, provider, store::Store};
use mcp_ui_identity::JwkSet;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::signing::{Signer, key_set};
use mcp_ui_identity::rate::{Buckets, WhenFull};
use mcp_ui_model::config::AuthorizationServer as Settings;
use mcp_ui_model::reply::Body;
use mcp_ui_model::session_id::SessionKey;

/// The gateway's authorization server.
pub struct AuthorizationServer {
    pub config: Settings,
    /// Seals everything that travels between steps.
    pub(super) key: SessionKey,
    /// The first signs; all are published.
    pub(super) signers: Vec<Signer>,
    pub(super) keys: JwkSet,
    pub(super) provider: provider::Provider,
    pub(super) clients: clients::Clients,
    /// The enterprise issuers whose identity assertions are redeemed.
    pub(super) enterprise: enterprise::Enterprise,
    pub(super) store: Store,
    /// Registrations by address: a full table refuses a new address
    /// rather than forget one a flood of addresses would empty.
    pub(super) registrations: std::sync::Mutex<Buckets<std::net::IpAddr>>,
    /// Token requests by client (a digest of its id) and address: a full
    /// table forgets one, refusing no one for want of room.
    pub(super) token_requests: std::sync::Mutex<Buckets<(String, std::net::IpAddr)>>,
    pub(super) endpoints: endpoints::Paths,
}

impl AuthorizationServer {
    /// The authorization server `config` describes, sealing with `key`; the
    /// signing keys are read now (a missing or bad file is an error naming
    /// it).
    pub fn new(
        config: Settings,
        key: SessionKey,
        connect_timeout: Duration,
    ) -> Result<AuthorizationServer, Vec<String>> {
        let mut problems = Vec::new();
        let mut signers = Vec::new();
        for (i, path) in config.signing_keys.iter().enumerate() {
            match std::fs::read(path) {
                Ok(pem) => match Signer::from_pem(&pem) {
                    Ok(s) => signers.push(s),
                    Err(e) => problems.push(format!(
                        "authorization_server.signing_keys[{i}]: {}: {e}",
                        path.display()
                    )),
                },
                Err(e) => problems.push(format!(
                    "authorization_server.signing_keys[{i}]: {}: {e}",
                    path.display()
                )),
            }
        }
        if config.signing_keys.is_empty() {
            match generated_key() {
                Ok(s) => {
                    tracing::warn!(
                        kid = s.kid(),
                        "authorization_server.signing_keys is unset: access tokens are signed with a key made at start; they stop verifying when this process ends, and replicas do not accept each other's"
                    );
                    signers.push(s);
                }
                Err(e) => problems.push(format!(
                    "authorization_server: no signing key could be made: {e}"
                )),
            }
        }
        let provider =
            provider::Provider::new(&config.provider, connect_timeout).map_err(|e| vec![e])?;
        let clients = clients::Clients::new(&config.documents).map_err(|e| vec![e])?;
        let enterprise = enterprise::Enterprise::new(&config.enterprise, connect_timeout)
            .map_err(|e| vec![e])?;
        let store = match &config.store {
            Some(url) => Store::redis(url).map_err(|e| vec![e])?,
            None => Store::memory(
                super::basics::random_text(12),
                mcp_ui_model::clock::unix_secs(),
            ),
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        let keys = key_set(&signers);
        let endpoints = endpoints::Paths::new(&config.issuer);
        Ok(AuthorizationServer {
            key,
            keys,
            signers,
            provider,
            clients,
            enterprise,
            store,
            registrations: std::sync::Mutex::new(Buckets::new(MAX_RATED, WhenFull::Refuse)),
            token_requests: std::sync::Mutex::new(Buckets::new(MAX_RATED, WhenFull::ForgetOne)),
            endpoints,
            config,
        })
    }

    /// The client `client_id` names, or `invalid_client` saying why not: one
    /// it registered and that has gone unused for
    /// `registration.unused_client_secs` is forgotten. Its use now is
    /// recorded (with the store out of reach, it is not refused for that).
    pub(super) async fn client(&self, client_id: &str) -> Result<clients::Known, OAuthError> {
        let known = self.clients.find(&self.key, client_id).await?;
        let window = self.config.registration.unused_client_secs;
        let Some(issued_at) = known.issued_at.filter(|_| window > 0) else {
            return Ok(known);
        };
        let id = super::sealed::digest(client_id);
        match self
            .store
            .client_in_use(&id, issued_at, window, mcp_ui_model::clock::unix_secs())
            .await
        {
            Ok(true) => Ok(known),
            Ok(false) => Err(OAuthError::new(
                "invalid_client",
                format!(
                    "the client is not registered here: it went unused for more than {} (registration.unused_client_secs); register again",
                    super::basics::span(window)
                ),
            )),
            Err(super::store::Unavailable { why, .. }) => {
                tracing::warn!(
                    "when the client was last used is not known ({why}); it is taken as in use"
                );
                Ok(known)
            }
        }
    }

    /// The grant types its token endpoint takes.
    pub(super) fn grant_types(&self) -> Vec<&'static str> {
        let mut all = vec!["authorization_code", "refresh_token"];
        if self.enterprise.offered() {
            all.push(mcp_ui_identity::authorization_server::assertion::GRANT_TYPE);
        }
        all
    }

    /// How many codes and families its memory store holds (none with
    /// Redis).
    pub fn remembered(&self) -> super::store::Remembered {
        self.store.remembered()
    }

    /// The issuer: the gateway's `public_url`.
    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    /// The published key set (the resource server checks the gateway's
    /// tokens against it, as any issuer's).
    pub fn key_set(&self) -> &JwkSet {
        &self.keys
    }

    /// Whether its cookies are `Secure` (the issuer is https).
    pub(super) fn secure(&self) -> bool {
        url::Url::parse(&self.config.issuer).is_ok_and(|u| u.scheme() == "https")
    }

    /// The URL of `endpoint`.
    pub(super) fn url(&self, endpoint: Endpoint) -> String {
        format!(
            "{}{}",
            endpoints::origin(&self.config.issuer),
            self.endpoints.path(endpoint)
        )
    }

    /// The URL of its metadata document (RFC 8414 §3.1).
    pub fn metadata_url(&self) -> String {
        self.url(Endpoint::Metadata)
    }

    /// Where the provider sends the user back.
    pub(super) fn callback_url(&self) -> String {
        self.url(Endpoint::Callback)
    }

    /// The authorization endpoint asked `request` again (to show the
    /// consent page to a user other than the one a remembered consent names).
    pub(super) fn authorize_again(
        &self,
        request: &mcp_ui_identity::authorization_server::authorize::Request,
    ) -> String {
        let scope = request.scopes.join(" ");
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", request.client_id.as_str()),
            ("code_challenge", request.code_challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", request.resource.as_str()),
        ];
        if request.redirect_uri_sent {
            pairs.push(("redirect_uri", &request.redirect_uri));
        }
        if let Some(s) = &request.state {
            pairs.push(("state", s));
        }
        if !scope.is_empty() {
            pairs.push(("scope", &scope));
        }
        mcp_ui_identity::authorization_server::authorize::redirect_to(
            &self.url(Endpoint::Authorize),
            &pairs,
        )
    }

    /// `caller`, a caller of the gateway's own tokens, with the provider's
    /// access token it carries sealed made readable as the claim
    /// `provider_access_token` (for `claims_to_headers` and
    /// `claims_to_env`), and the sealed claim removed. Anyone else's
    /// caller, and one carrying no provider token, is returned as it is.
    pub fn reveal(
        &self,
        caller: crate::oauth::resource_server::Caller,
    ) -> crate::oauth::resource_server::Caller {
        use mcp_ui_identity::authorization_server::signing::UPSTREAM_CLAIM;
        let v = &caller.verified;
        if v.issuer != self.config.issuer || !v.claims.contains_key(UPSTREAM_CLAIM) {
            return caller;
        }
        caller.with_claims(|verified| {
            let Some(serde_json::Value::String(sealed_tokens)) =
                verified.claims.remove(UPSTREAM_CLAIM)
            else {
                return;
            };
            if let Some(tokens) = super::sealed::open::<super::sealed::ProviderTokens>(
                &self.key,
                super::sealed::Purpose::Upstream,
                &sealed_tokens,
            ) {
                verified.claims.insert(
                    mcp_ui_model::config::auth::PROVIDER_ACCESS_TOKEN.into(),
                    tokens.access_token.into(),
                );
            }
        })
    }

    /// Every path it answers at: open to any `Origin`, as its defences are
    /// PKCE, client authentication and a `SameSite=Strict` cookie, not the
    /// page a request came from.
    pub fn paths(&self) -> Vec<String> {
        self.endpoints.all()
    }

    /// Which of its endpoints `path` is, if any.
    pub fn endpoint(&self, path: &str) -> Option<Endpoint> {
        self.endpoints.at(path)
    }

    /// Take one token or revocation request from the allowance of
    /// `client_id` at `peer` (`token_endpoint.per_minute`): `Err` with the
    /// 429.
    pub(super) fn rate_token_request(
        &self,
        client_id: &str,
        peer: Option<std::net::IpAddr>,
    ) -> Result<(), Box<Response<Body>>> {
        let per_minute = self.config.token_endpoint.per_minute;
        if per_minute == 0 {
            return Ok(());
        }
        let ip = peer.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let key = (super::sealed::digest(client_id), ip);
        let mut rates = self
            .token_requests
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        rates
            .take(key, 1, per_minute, std::time::Instant::now())
            .map_err(|wait| {
                Box::new(too_many(
                    wait,
                    &format!("more than {per_minute} token requests a minute from this client at this address (authorization_server.token_endpoint.per_minute)"),
                ))
            })
    }

    /// Take one registration from `peer`'s allowance: `Err` with the 429.
    pub(super) fn rate_registration(
        &self,
        peer: Option<std::net::IpAddr>,
    ) -> Result<(), Box<Response<Body>>> {
        let per_minute = self.config.registration.per_minute;
        let ip = peer.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        self.registrations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(ip, 1, per_minute, std::time::Instant::now())
            .map_err(|wait| Box::new(too_many(wait, REGISTRATIONS)))
    }
}

/// Why a registration is refused past its rate.
const REGISTRATIONS: &str = "too many registrations from this address";

/// Most clients and addresses (and, apart, most addresses registering)
/// whose requests are counted.
const MAX_RATED: usize = 65_536;

/// An EC P-256 key made now (aws-lc-rs).
fn generated_key() -> Result<Signer, String> {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let pair =
        EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).map_err(|e| e.to_string())?;
    let der = pair.to_pkcs8v1().map_err(|e| e.to_string())?;
    Signer::from_ec_pkcs8_der(der.as_ref()).map_err(|e| e.to_string())
}
