//! HTTP for the OAuth scenarios: a pooled keep-alive client, form bodies,
//! and a user's browser that keeps cookies (by host and path, shared across
//! ports as browsers do) and signs in: it follows redirects, allows the
//! gateway's consent page and fills in the test provider's login form, and
//! stops at the client's redirect URI. Enough for the HTTP side of the
//! flows, as tests/support/browser_agent.rs is for the tests.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A pooled HTTP/1.1 client (keep-alive connections, shared by clones).
pub type Http = Client<HttpConnector, Full<Bytes>>;

/// Longest any one exchange may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Most redirects and forms in one sign-in.
const MAX_HOPS: usize = 24;
/// The test provider's password for every login name (tests/peers/oidc_provider.mjs).
const PASSWORD: &str = "correct horse";

pub fn client() -> Http {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build_http()
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The status and the start of the body, for an error message.
    pub fn describe(&self) -> String {
        let text = String::from_utf8_lossy(&self.body[..self.body.len().min(300)]).into_owned();
        format!("{} {text}", self.status)
    }
}

/// One request: `body` sent as is (with the headers given).
pub async fn request(
    http: &Http,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> Result<Answer, String> {
    let mut req = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("{url}: {e}"))?;
    let exchange = async {
        let resp = http.request(req).await.map_err(|e| format!("{url}: {e}"))?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("{url}: body: {e}"))?
            .to_bytes();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .map_err(|_| format!("{url}: no answer in {TIMEOUT:?}"))?
}

/// POST `pairs` as a form.
pub async fn post_form(http: &Http, url: &str, pairs: &[(&str, &str)]) -> Result<Answer, String> {
    let headers = [("content-type", "application/x-www-form-urlencoded")];
    request(http, Method::POST, url, &headers, encode_form(pairs)).await
}

/// POST `json`.
pub async fn post_json(http: &Http, url: &str, json: &serde_json::Value) -> Result<Answer, String> {
    let headers = [("content-type", "application/json")];
    request(http, Method::POST, url, &headers, json.to_string()).await
}

/// A browser of one user, who signs in as `user` wherever a login form asks.
pub struct Browser {
    http: Http,
    user: String,
    /// (host, path, name, value)
    cookies: Vec<(String, String, String, String)>,
}

impl Browser {
    pub fn new(http: &Http, user: &str) -> Browser {
        Browser {
            http: http.clone(),
            user: user.to_owned(),
            cookies: Vec::new(),
        }
    }

    /// Go to `url` and on until a redirect to `stop` (the client's redirect
    /// URI): consent allowed (and remembered), the login form filled in.
    /// The URL the client receives.
    pub async fn sign_in(&mut self, url: &str, stop: &str) -> Result<String, String> {
        let (mut method, mut at, mut form) = (Method::GET, url.to_owned(), None::<String>);
        for _ in 0..MAX_HOPS {
            let page = self.request(method, &at, form.take()).await?;
            if page.status.is_redirection() {
                let location = page
                    .headers
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| format!("{at}: a redirect without Location"))?;
                let next = resolve(&at, location);
                if next.starts_with(stop) {
                    return Ok(next);
                }
                (method, at) = (Method::GET, next);
                continue;
            }
            if page.status != StatusCode::OK {
                return Err(format!("{at}: {}", page.describe()));
            }
            let html = String::from_utf8_lossy(&page.body).into_owned();
            let action = form_action(&html).ok_or_else(|| format!("{at}: a page with no form"))?;
            let answer = if let Some(ticket) = hidden_field(&html, "ticket") {
                // The gateway's consent page.
                encode_form(&[
                    ("ticket", &ticket),
                    ("decision", "allow"),
                    ("remember", "1"),
                ])
            } else if action.starts_with("/interaction/") {
                encode_form(&[("login", &self.user), ("password", PASSWORD)])
            } else {
                return Err(format!("{at}: an unknown form posting to {action}"));
            };
            (method, at, form) = (Method::POST, resolve(&at, &action), Some(answer));
        }
        Err(format!("{url}: more than {MAX_HOPS} steps"))
    }

    async fn request(
        &mut self,
        method: Method,
        url: &str,
        form: Option<String>,
    ) -> Result<Answer, String> {
        let cookie = self.cookie_header(url);
        let mut headers = vec![("accept", "text/html")];
        if let Some(c) = &cookie {
            headers.push(("cookie", c));
        }
        if form.is_some() {
            headers.push(("content-type", "application/x-www-form-urlencoded"));
        }
        let answer = request(&self.http, method, url, &headers, form.unwrap_or_default()).await?;
        self.keep(url, &answer.headers);
        Ok(answer)
    }

    fn cookie_header(&self, url: &str) -> Option<String> {
        let (host, path) = host_and_path(url);
        let all: Vec<String> = self
            .cookies
            .iter()
            .filter(|(h, p, _, _)| *h == host && path.starts_with(p.as_str()))
            .map(|(_, _, n, v)| format!("{n}={v}"))
            .collect();
        (!all.is_empty()).then(|| all.join("; "))
    }

    fn keep(&mut self, url: &str, headers: &HeaderMap) {
        let (host, _) = host_and_path(url);
        for v in headers.get_all("set-cookie") {
            let text = v.to_str().unwrap_or_default();
            let mut parts = text.split(';').map(str::trim);
            let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let mut path = "/".to_owned();
            let mut gone = false;
            for attr in parts {
                let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
                match k.to_ascii_lowercase().as_str() {
                    "path" => path = v.to_owned(),
                    "max-age" => gone = v == "0",
                    "expires" => gone |= v.contains("1970"),
                    _ => {}
                }
            }
            self.cookies
                .retain(|(h, p, n, _)| !(*h == host && *p == path && n == name));
            if !gone {
                self.cookies
                    .push((host.clone(), path, name.to_owned(), value.to_owned()));
            }
        }
    }
}

fn host_and_path(url: &str) -> (String, String) {
    match url.parse::<http::Uri>() {
        Ok(uri) => (
            uri.host().unwrap_or_default().to_owned(),
            uri.path().to_owned(),
        ),
        Err(_) => (String::new(), String::new()),
    }
}

/// `location` against `base`: absolute, or a path on `base`'s origin.
fn resolve(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let origin_end = base
        .match_indices('/')
        .nth(2)
        .map(|(i, _)| i)
        .unwrap_or(base.len());
    format!("{}{location}", &base[..origin_end])
}

/// The `action` of the page's first form.
fn form_action(html: &str) -> Option<String> {
    let start = html.find("<form")?;
    let rest = &html[start..];
    let at = rest.find("action=\"")? + "action=\"".len();
    let end = rest[at..].find('"')? + at;
    Some(rest[at..end].replace("&amp;", "&"))
}

/// The value of the hidden field `name` in an HTML page.
fn hidden_field(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html.find(&marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(html[start..end].replace("&amp;", "&"))
}

/// The query parameter `name` of `url`, decoded.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(k) == name).then(|| decode(v))
    })
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `pairs` form-encoded.
pub fn encode_form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
