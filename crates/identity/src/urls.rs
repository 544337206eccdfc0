//! URLs as a browser reads them. Every URL the authorization server decides
//! on is parsed once by the WHATWG URL Standard (the `url` crate, which the
//! browsers' own parsers agree with), and is accepted only as that parser
//! writes it back: a URL a browser would read otherwise than it is written
//! (a backslash for a slash, a tab or newline dropped, an IPv4 address in
//! decimal or hex, upper case, dot segments, a default port) is refused, so
//! that what is checked, what is kept and where a browser is sent are one
//! string. The rules:
//!
//! - [`RedirectUri`]: a redirect URI a client registers or asks for, and
//!   which registered one an asked one may stand for (OAuth 2.1 §2.3.1,
//!   RFC 8252 §7.3, §8.3, RFC 9700 §4.1.1);
//! - [`client_id_url`]: a Client ID Metadata Document URL the gateway may
//!   fetch;
//! - [`names_resource`]: whether a `resource` parameter names a protected
//!   endpoint (RFC 8707 §2).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use url::Host;

pub use url::Url;

/// The longest client id URL (and the default longest redirect URI).
pub const MAX_URL: usize = 2048;

/// Why a URL is refused ([`as_written`], [`RedirectUri::parse`],
/// [`client_id_url`]). The fault is whoever wrote the URL: a client's
/// redirect URI or client id is the client's (answered as an OAuth error),
/// a URL in the configuration the operator's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("not an absolute URL ({0})")]
    NotAbsolute(url::ParseError),
    /// How a browser reads it, which differs from what is written.
    #[error("not written as a browser reads it (a browser reads {0:?})")]
    NotAsRead(String),
    #[error("a redirect URI may not have a fragment")]
    RedirectFragment,
    #[error("a redirect URI may not carry user information")]
    RedirectUserInformation,
    #[error("a redirect URI needs a host")]
    RedirectNoHost,
    #[error("http:// is allowed only on a loopback address; use https://")]
    RedirectHttp,
    #[error(
        "the scheme must be https, http on a loopback address, or an app's reverse-domain scheme"
    )]
    RedirectScheme,
    #[error("a client id URL may be at most {max} bytes", max = MAX_URL)]
    ClientIdTooLong,
    /// Why it is not a URL as written ([`as_written`]).
    #[error("a client id URL is {0}")]
    ClientIdNotAsWritten(Box<UrlError>),
    #[error("a client id URL must be https://")]
    ClientIdNotHttps,
    #[error("a client id URL may not carry user information")]
    ClientIdUserInformation,
    #[error("a client id URL may not have a fragment")]
    ClientIdFragment,
    #[error("a client id URL needs a path")]
    ClientIdNoPath,
}

/// `text` parsed, when the parser writes it back exactly as it is written;
/// otherwise why not, naming how a browser reads it.
pub fn as_written(text: &str) -> Result<Url, UrlError> {
    let url = Url::parse(text).map_err(UrlError::NotAbsolute)?;
    if url.as_str() != text {
        return Err(UrlError::NotAsRead(url.as_str().to_owned()));
    }
    Ok(url)
}

/// `text` parsed as [`as_written`] does, but that an `http(s)` URL of a
/// host alone may go without the `/` of its empty path
/// (`http://127.0.0.1:33418`, as some native clients register it): the
/// parser adds it, and a browser goes to the same place.
pub fn as_written_or_rootless(text: &str) -> Result<Url, UrlError> {
    match as_written(text) {
        Err(why) => match Url::parse(&format!("{text}/")) {
            Ok(url)
                if url.is_special()
                    && url.path() == "/"
                    && url.as_str().strip_suffix('/') == Some(text) =>
            {
                Ok(url)
            }
            _ => Err(why),
        },
        ok => ok,
    }
}

/// Whether `host` is a loopback IP address: in `127.0.0.0/8`, or `::1`
/// (an IPv4-mapped IPv6 address is not: RFC 8252 §7.3 names these two).
pub fn loopback_ip(host: Option<Host<&str>>) -> bool {
    match host {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        _ => false,
    }
}

/// Whether `url`'s host is a loopback IP address or `localhost`.
pub fn loopback_host(url: &Url) -> bool {
    loopback_ip(url.host()) || url.host() == Some(Host::Domain("localhost"))
}

/// Whether `url` carries user information (`user:password@`).
fn has_user_info(url: &Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// A redirect URI a client may register or ask for: written as a browser
/// reads it ([`as_written_or_rootless`]), kept as it was written (OAuth
/// compares redirect URIs as strings), without user information or a
/// fragment (RFC 6749 §3.1.2), and
/// `https` with a host; `http` on a loopback host (RFC 8252 §7.3, §8.3); or
/// an app's private-use scheme in reverse-domain form, such as
/// `com.example.app:/cb` (§7.1). Never a scheme a browser runs
/// (`javascript:`, `data:`, …).
#[derive(Clone, PartialEq, Eq)]
pub struct RedirectUri {
    url: Url,
    /// As written: the parser's serialisation, or it without its final `/`.
    text: String,
}

impl RedirectUri {
    pub fn parse(text: &str) -> Result<RedirectUri, UrlError> {
        let url = as_written_or_rootless(text)?;
        if url.fragment().is_some() {
            return Err(UrlError::RedirectFragment);
        }
        if has_user_info(&url) {
            return Err(UrlError::RedirectUserInformation);
        }
        match url.scheme() {
            "https" if url.host_str().is_some_and(|h| !h.is_empty()) => {}
            "https" => return Err(UrlError::RedirectNoHost),
            "http" if loopback_host(&url) => {}
            "http" => return Err(UrlError::RedirectHttp),
            scheme if scheme.contains('.') => {}
            _ => return Err(UrlError::RedirectScheme),
        }
        Ok(RedirectUri {
            url,
            text: text.to_owned(),
        })
    }

    /// As the client wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// As the parser reads it.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Whether it may be asked for on any port: `http` on a loopback IP
    /// literal, since a native app's port is chosen when it runs (RFC 8252
    /// §7.3). `localhost` is matched exactly: it may not resolve to the
    /// loopback interface (§8.3).
    pub fn any_port(&self) -> bool {
        self.url.scheme() == "http" && loopback_ip(self.url.host())
    }

    /// Whether a request asking for `asked` may be answered at it, this
    /// being the URI registered: the same string (OAuth 2.1 §2.3.1,
    /// RFC 9700 §4.1.1: exact matching), or for a loopback IP literal the
    /// same host, path and query on any port (RFC 8252 §7.3).
    pub fn admits(&self, asked: &RedirectUri) -> bool {
        let (r, a) = (&self.url, &asked.url);
        self.text == asked.text
            || (self.any_port()
                && asked.any_port()
                && r.host() == a.host()
                && r.path() == a.path()
                && r.query() == a.query())
    }

    /// Where a browser is sent: this URI with `pairs` added to its query
    /// (RFC 6749 §3.1.2: a query it has is kept), serialised by the parser
    /// that checked it.
    pub fn with_query<'a>(&self, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
        let mut url = self.url.clone();
        url.query_pairs_mut().extend_pairs(pairs);
        url.into()
    }
}

impl std::ops::Deref for RedirectUri {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for RedirectUri {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for RedirectUri {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<RedirectUri> for &str {
    fn eq(&self, other: &RedirectUri) -> bool {
        *self == other.as_str()
    }
}

impl Serialize for RedirectUri {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read back (from a sealed client id, consent ticket, login or code) by
/// the same rules: nothing unchecked is ever redirected to.
impl<'de> Deserialize<'de> for RedirectUri {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RedirectUri, D::Error> {
        let text = String::deserialize(d)?;
        RedirectUri::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `text` as a Client ID Metadata Document URL the gateway may fetch:
/// `https`, a host, a path other than `/`, no user information and no
/// fragment, at most [`MAX_URL`] bytes, written as a browser reads it (so
/// with no dot segments: the parser removes them). The URL returned is the
/// one fetched.
pub fn client_id_url(text: &str) -> Result<Url, UrlError> {
    if text.len() > MAX_URL {
        return Err(UrlError::ClientIdTooLong);
    }
    let url = as_written(text).map_err(|why| UrlError::ClientIdNotAsWritten(Box::new(why)))?;
    if url.scheme() != "https" {
        return Err(UrlError::ClientIdNotHttps);
    }
    if has_user_info(&url) {
        return Err(UrlError::ClientIdUserInformation);
    }
    if url.fragment().is_some() {
        return Err(UrlError::ClientIdFragment);
    }
    if url.path() == "/" {
        return Err(UrlError::ClientIdNoPath);
    }
    Ok(url)
}

/// Whether `asked`, a `resource` parameter, names the protected endpoint
/// whose URL is `ours`: the same string, or the same URL as a browser reads
/// both (scheme, host, port, path and query), a trailing slash of the path
/// aside. An `asked` with a fragment (RFC 8707 §2) or user information names
/// none.
pub fn names_resource(asked: &str, ours: &str) -> bool {
    if asked == ours {
        return true;
    }
    let (Ok(a), Ok(o)) = (Url::parse(asked), Url::parse(ours)) else {
        return false;
    };
    let path = |u: &Url| {
        let p = u.path();
        p.strip_suffix('/').unwrap_or(p).to_owned()
    };
    a.fragment().is_none()
        && !has_user_info(&a)
        && a.scheme() == o.scheme()
        && a.host() == o.host()
        && a.port_or_known_default() == o.port_or_known_default()
        && a.query() == o.query()
        && path(&a) == path(&o)
}

#[cfg(test)]
mod tests;
