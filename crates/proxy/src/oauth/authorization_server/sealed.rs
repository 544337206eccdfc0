//! What the authorization server seals with the gateway's session key
//! (XChaCha20-Poly1305, the purpose as associated data, so that nothing
//! sealed for one purpose opens as another), and the cookies that carry
//! some of it in the user's browser (read and written by the `cookie`
//! crate, RFC 6265).

use cookie::{Cookie, SameSite};
use http::HeaderMap;
use http::header::{self, HeaderValue};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use mcp_ui_identity::authorization_server::authorize::Request;
use mcp_ui_identity::authorization_server::client::Client;
use mcp_ui_identity::urls::RedirectUri;
use mcp_ui_model::session_id::SessionKey;

/// What a sealed value is for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Purpose {
    /// A registered client: its `client_id`.
    Client,
    /// The consent page's form.
    Ticket,
    /// A login at the provider under way (a cookie).
    Login,
    Code,
    Refresh,
    /// The consents a browser remembers (a cookie).
    Consent,
    /// The provider's tokens for a user, inside the gateway's tokens.
    Upstream,
}

impl Purpose {
    fn aad(self) -> &'static [u8] {
        match self {
            Purpose::Client => b"mcp-ui-gateway/oauth/client",
            Purpose::Ticket => b"mcp-ui-gateway/oauth/ticket",
            Purpose::Login => b"mcp-ui-gateway/oauth/login",
            Purpose::Code => b"mcp-ui-gateway/oauth/code",
            Purpose::Refresh => b"mcp-ui-gateway/oauth/refresh",
            Purpose::Consent => b"mcp-ui-gateway/oauth/consent",
            Purpose::Upstream => b"mcp-ui-gateway/oauth/upstream",
        }
    }
}

/// The longest registered client id: it travels in URLs and, sealed again,
/// in the login cookie.
pub(super) const MAX_CLIENT_ID: usize = 1536;

/// The longest cookie value set: browsers keep about 4 KB a cookie, and drop
/// a longer one without a word.
pub(super) const MAX_COOKIE: usize = 4000;

/// The longest sealed value opened: anything longer is refused unread.
const MAX_SEALED: usize = 8192;

pub(super) fn seal<T: Serialize>(key: &SessionKey, purpose: Purpose, value: &T) -> String {
    let plain = serde_json::to_vec(value).unwrap_or_default();
    key.seal_bytes(purpose.aad(), &plain)
}

/// What `text` seals for `purpose`; `None` for anything else.
pub(super) fn open<T: DeserializeOwned>(
    key: &SessionKey,
    purpose: Purpose,
    text: &str,
) -> Option<T> {
    if text.len() > MAX_SEALED {
        return None;
    }
    let plain = key.open_bytes(purpose.aad(), text)?;
    serde_json::from_slice(&plain).ok()
}

/// A registered client, as its `client_id` seals it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Registered {
    pub client: Client,
    /// Its secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub issued_at: u64,
}

/// The consent page's form: the checked request, bound to the browser that
/// was shown it by the digest of a cookie only that browser has.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Ticket {
    pub request: Request,
    pub binding: String,
    pub expires_at: u64,
}

/// A login at the provider under way, in a cookie named by its state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Login {
    pub request: Request,
    /// The state, nonce and PKCE verifier sent to the provider.
    pub state: String,
    pub nonce: String,
    pub verifier: String,
    pub expires_at: u64,
    /// Remember the consent once the user is known.
    pub remember: bool,
    /// The user a remembered consent named, when the consent page was
    /// skipped for it: another user signing in is asked again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consented_as: Option<String>,
}

/// The identity provider's tokens for a user, for an upstream that acts as
/// them there (`provider_access_token`): sealed inside the gateway's code,
/// access and refresh tokens, readable by no one else.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ProviderTokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, if the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

impl ProviderTokens {
    /// Read from a provider's token answer; a refresh that names no new
    /// refresh token keeps `previous`'s.
    pub fn from_answer(
        answer: &serde_json::Map<String, serde_json::Value>,
        now: u64,
        previous: Option<&ProviderTokens>,
    ) -> Option<ProviderTokens> {
        let text = |k: &str| answer.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        Some(ProviderTokens {
            access_token: text("access_token")?,
            refresh_token: text("refresh_token")
                .or_else(|| previous.and_then(|p| p.refresh_token.clone())),
            expires_at: answer
                .get("expires_in")
                .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
                .map(|s| now + s),
        })
    }
}

/// One consent a browser remembers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Remembered {
    /// The digest of the client's id (ids may be long).
    pub client: String,
    pub redirect_uri: RedirectUri,
    pub subject: String,
    pub until: u64,
}

/// The cookie of the consents a browser remembers.
pub(super) const REMEMBERED: &str = "mcp_ui_consent";

/// The consents the browser of `headers` remembers (none when its cookie is
/// not one `key` sealed).
pub(super) fn remembered_in(key: &SessionKey, headers: &HeaderMap) -> Vec<Remembered> {
    cookie(headers, REMEMBERED)
        .and_then(|c| open(key, Purpose::Consent, c))
        .unwrap_or_default()
}

/// The name of the cookie of the login whose state is `state`.
pub(super) fn login_cookie(state: &str) -> String {
    format!("mcp_ui_login_{}", &digest(state)[..12])
}

/// Most consents one browser remembers; the oldest are forgotten.
pub(super) const MAX_REMEMBERED: usize = 16;

/// A short digest of `text`, for cookies and bindings.
pub(super) fn digest(text: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest;
    let d = sha2::Sha256::digest(text.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&d[..18])
}

/// The value of cookie `name` in `headers` (the first, when a browser sends
/// two: RFC 6265 §5.4 puts the one of the longer path first).
pub(super) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == name)
        .and_then(|c| c.value_raw())
}

/// A `Set-Cookie` value: HttpOnly, `Secure` when the issuer is https, for
/// `path`, living `max_age` seconds (0 removes it), `same_site` `Strict` or
/// `Lax`. `None` when it cannot be written in a header.
pub(super) fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age: u64,
    secure: bool,
    same_site: &str,
) -> Option<HeaderValue> {
    let same_site = match same_site {
        "Strict" => SameSite::Strict,
        _ => SameSite::Lax,
    };
    let max_age = cookie::time::Duration::seconds(i64::try_from(max_age).ok()?);
    let c = Cookie::build((name, value))
        .path(path)
        .max_age(max_age)
        .http_only(true)
        .same_site(same_site)
        .secure(secure)
        .build();
    HeaderValue::from_str(&c.to_string()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_for_one_purpose_never_opens_as_another() {
        let key = SessionKey::random();
        let t = seal(&key, Purpose::Code, &vec!["a"]);
        assert_eq!(
            open::<Vec<String>>(&key, Purpose::Code, &t),
            Some(vec!["a".to_owned()])
        );
        assert_eq!(open::<Vec<String>>(&key, Purpose::Refresh, &t), None);
        assert_eq!(
            open::<Vec<String>>(&SessionKey::random(), Purpose::Code, &t),
            None
        );
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_static("a=1; b=two=2"));
        assert_eq!(cookie(&h, "b"), Some("two=2"));
        assert_eq!(cookie(&h, "c"), None);
    }

    #[test]
    fn cookies_are_read_and_written_as_rfc_6265_says() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("  a = 1 ;b=2;;c; mcp_ui_x=v1"),
        );
        h.append(header::COOKIE, HeaderValue::from_static("mcp_ui_x=v2; d=4"));
        assert_eq!(cookie(&h, "a"), Some("1"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "mcp_ui_x"), Some("v1"));
        assert_eq!(cookie(&h, "d"), Some("4"));
        assert_eq!(cookie(&h, "mcp_ui"), None);
        let set = set_cookie("n", "v", "/oauth", 600, true, "Strict").unwrap();
        let parsed = Cookie::parse(set.to_str().unwrap()).unwrap();
        assert_eq!((parsed.name(), parsed.value()), ("n", "v"));
        assert_eq!(parsed.path(), Some("/oauth"));
        assert_eq!(parsed.max_age(), Some(cookie::time::Duration::seconds(600)));
        assert_eq!(parsed.http_only(), Some(true));
        assert_eq!(parsed.secure(), Some(true));
        assert_eq!(parsed.same_site(), Some(SameSite::Strict));
        let gone = set_cookie("n", "", "/oauth", 0, false, "Lax").unwrap();
        let gone = Cookie::parse(gone.to_str().unwrap()).unwrap();
        assert_eq!(gone.max_age(), Some(cookie::time::Duration::ZERO));
        assert_eq!(
            (gone.secure(), gone.same_site()),
            (None, Some(SameSite::Lax))
        );
        assert!(set_cookie("n", "a\nb", "/", 1, false, "Lax").is_none());
    }
}
