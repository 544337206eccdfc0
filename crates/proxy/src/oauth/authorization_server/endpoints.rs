//! The paths the authorization server answers at, from its issuer
//! (`public_url`): its metadata where RFC 8414 §3.1 and OpenID Connect
//! Discovery put it (the issuer's path inserted after the well-known prefix,
//! and appended), and its endpoints under the issuer's path. The issuer is
//! read as a browser reads it (`config::auth::issuer_url` held it to that).

use mcp_ui_identity::urls::Url;

/// One of the authorization server's endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Metadata,
    Keys,
    Register,
    Authorize,
    Callback,
    Token,
    Revoke,
}

impl Endpoint {
    /// The methods it takes (`Allow`).
    pub fn allow(self) -> &'static str {
        match self {
            Endpoint::Metadata | Endpoint::Keys => "GET, HEAD, OPTIONS",
            Endpoint::Authorize => "GET, POST",
            Endpoint::Callback => "GET",
            Endpoint::Register | Endpoint::Token | Endpoint::Revoke => "POST, OPTIONS",
        }
    }
}

/// The paths, computed once.
pub(super) struct Paths {
    /// The issuer's path, without a trailing slash (usually empty).
    base: String,
    metadata: [String; 3],
}

impl Paths {
    pub(super) fn new(issuer: &str) -> Paths {
        let path = Url::parse(issuer)
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        Paths {
            metadata: [
                format!("/.well-known/oauth-authorization-server{path}"),
                format!("/.well-known/openid-configuration{path}"),
                format!("{path}/.well-known/openid-configuration"),
            ],
            base: path,
        }
    }

    /// The endpoint at `path`, if any.
    pub(super) fn at(&self, path: &str) -> Option<Endpoint> {
        if self.metadata.iter().any(|m| m == path) {
            return Some(Endpoint::Metadata);
        }
        let rest = path
            .strip_prefix(self.base.as_str())?
            .strip_prefix("/oauth/")?;
        Some(match rest {
            "jwks.json" => Endpoint::Keys,
            "register" => Endpoint::Register,
            "authorize" => Endpoint::Authorize,
            "callback" => Endpoint::Callback,
            "token" => Endpoint::Token,
            "revoke" => Endpoint::Revoke,
            _ => return None,
        })
    }

    /// The path every endpoint but the metadata is under (the cookies'
    /// path).
    pub(super) fn prefix(&self) -> String {
        format!("{}/oauth", self.base)
    }

    /// Every path it answers at.
    pub(super) fn all(&self) -> Vec<String> {
        let mut all = self.metadata.to_vec();
        all.extend(
            [
                Endpoint::Keys,
                Endpoint::Register,
                Endpoint::Authorize,
                Endpoint::Callback,
                Endpoint::Token,
                Endpoint::Revoke,
            ]
            .map(|e| self.path(e)),
        );
        all
    }

    /// The path of `endpoint` (for the issuer's URL to be put before it).
    pub(super) fn path(&self, endpoint: Endpoint) -> String {
        let name = match endpoint {
            Endpoint::Metadata => return self.metadata[0].clone(),
            Endpoint::Keys => "jwks.json",
            Endpoint::Register => "register",
            Endpoint::Authorize => "authorize",
            Endpoint::Callback => "callback",
            Endpoint::Token => "token",
            Endpoint::Revoke => "revoke",
        };
        format!("{}/oauth/{name}", self.base)
    }
}

/// The origin of `url` (its scheme, host and port), as a browser writes it.
pub(super) fn origin(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_where_clients_look_for_it() {
        let root = Paths::new("https://gw.example.com");
        assert_eq!(
            root.at("/.well-known/oauth-authorization-server"),
            Some(Endpoint::Metadata)
        );
        assert_eq!(
            root.at("/.well-known/openid-configuration"),
            Some(Endpoint::Metadata)
        );
        assert_eq!(root.at("/oauth/token"), Some(Endpoint::Token));
        assert_eq!(root.at("/oauth/other"), None);
        assert_eq!(root.path(Endpoint::Callback), "/oauth/callback");
        let tenant = Paths::new("https://gw.example.com/t1");
        assert_eq!(
            tenant.at("/.well-known/oauth-authorization-server/t1"),
            Some(Endpoint::Metadata)
        );
        assert_eq!(
            tenant.at("/t1/.well-known/openid-configuration"),
            Some(Endpoint::Metadata)
        );
        assert_eq!(tenant.at("/t1/oauth/authorize"), Some(Endpoint::Authorize));
        assert_eq!(tenant.at("/oauth/authorize"), None);
        assert_eq!(
            origin("https://gw.example.com/t1"),
            "https://gw.example.com"
        );
        assert_eq!(origin("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(origin("http://[::1]:8080/t1"), "http://[::1]:8080");
    }
}
