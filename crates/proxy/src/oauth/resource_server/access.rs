//! Who a request is once admitted, and what it may reach.

use std::sync::Arc;

use mcp_ui_identity::{Rejection, Verified};

/// Who a request to an endpoint is, once admitted (in its extensions).
#[derive(Debug, Clone, Default)]
pub enum Access {
    /// The endpoint asks for no token.
    #[default]
    Open,
    /// No token, on an endpoint that lets such callers reach part of it
    /// (`anonymous = true`).
    Anonymous,
    /// A caller whose token was accepted.
    Granted(Caller),
}

impl Access {
    /// The verified caller's digest, if any.
    pub fn digest(&self) -> Option<u64> {
        match self {
            Access::Granted(c) => Some(c.digest),
            _ => None,
        }
    }
}

/// The methods a caller without a token may use on an endpoint that lets
/// such callers in: what a host needs to show the server and its widgets.
const ANONYMOUS_METHODS: [&str; 8] = [
    "initialize",
    "ping",
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// Whether a request (`method`, naming `tool` or `uri`) may go on with
/// `access`: a caller without a token only to what [`ANONYMOUS_METHODS`]
/// name, the widgets (`ui://` reads) and the tools whose overlay lists
/// `noauth`; a verified caller to a tool only with the scopes its overlay's
/// `oauth2` scheme names.
pub(crate) fn gate(
    access: &Access,
    method: &str,
    tool: Option<&mcp_ui_overlay::overlay::ToolOverlay>,
    uri: Option<&str>,
) -> Result<(), Rejection> {
    use mcp_ui_overlay::overlay::SecurityScheme;
    let schemes = tool
        .and_then(|t| t.security_schemes.as_deref())
        .unwrap_or_default();
    match access {
        Access::Open => Ok(()),
        Access::Anonymous => {
            let open = ANONYMOUS_METHODS.contains(&method)
                || (method == "resources/read" && uri.is_some_and(|u| u.starts_with("ui://")))
                || (method == "tools/call"
                    && schemes
                        .iter()
                        .any(|s| matches!(s, SecurityScheme::Noauth {})));
            match open {
                true => Ok(()),
                false => Err(Rejection::Missing),
            }
        }
        Access::Granted(caller) if method == "tools/call" => {
            let wanted: Vec<String> = schemes
                .iter()
                .find_map(|s| match s {
                    SecurityScheme::Oauth2 { scopes } => Some(scopes.clone()),
                    SecurityScheme::Noauth {} => None,
                })
                .unwrap_or_default();
            let missing = caller.verified.missing(&wanted);
            match missing.is_empty() {
                true => Ok(()),
                false => Err(Rejection::InsufficientScope(
                    missing.into_iter().map(str::to_owned).collect(),
                )),
            }
        }
        Access::Granted(_) => Ok(()),
    }
}

/// The caller of a request the gateway admitted.
#[derive(Debug, Clone)]
pub struct Caller {
    /// A digest of its issuer and subject (keyed per process): what its
    /// conversations and held sessions are found by.
    pub digest: u64,
    pub verified: Arc<Verified>,
}

impl Caller {
    pub fn new(verified: Verified) -> Caller {
        let digest = mcp_ui_upstream::session::pool::digest([
            verified.issuer.as_bytes(),
            verified.subject.as_bytes(),
        ]);
        Caller {
            digest,
            verified: Arc::new(verified),
        }
    }

    /// The same caller, its claims made anew by `change` (its issuer and
    /// subject, and so its digest, unchanged).
    pub fn with_claims(&self, change: impl FnOnce(&mut Verified)) -> Caller {
        let mut verified = (*self.verified).clone();
        change(&mut verified);
        Caller {
            digest: self.digest,
            verified: Arc::new(verified),
        }
    }
}

/// What a verified caller's claims give its upstream connection: headers
/// (`claims_to_headers`) and, for a process of its own, environment
/// variables (`claims_to_env`).
#[derive(Debug, Clone, Default)]
pub struct Claimed {
    pub headers: http::HeaderMap,
    pub env: Vec<(String, String)>,
}

impl Claimed {
    /// What `access` gives an upstream of an endpoint that requires `auth`;
    /// the environment only when the connection is the caller's alone
    /// (`own_process`).
    pub fn of(
        auth: Option<&mcp_ui_model::config::Auth>,
        access: &Access,
        own_process: bool,
    ) -> Claimed {
        let (Some(auth), Access::Granted(caller)) = (auth, access) else {
            return Claimed::default();
        };
        let v = &caller.verified;
        let mut headers = http::HeaderMap::new();
        for (name, claim) in &auth.claims_to_headers {
            // The provider's token in `authorization` is a bearer token.
            let bearer = name == http::header::AUTHORIZATION;
            if let Some(value) = v
                .claim_text(claim)
                .map(|t| if bearer { format!("Bearer {t}") } else { t })
                .and_then(|t| http::HeaderValue::from_str(&t).ok())
            {
                headers.insert(name.clone(), value);
            }
        }
        let env = match own_process {
            true => auth
                .claims_to_env
                .iter()
                .filter_map(|(var, claim)| Some((var.clone(), v.claim_text(claim)?)))
                .collect(),
            false => Vec::new(),
        };
        Claimed { headers, env }
    }
}
