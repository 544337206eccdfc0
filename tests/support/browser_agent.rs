//! A user's browser for sign-in flows, as far as they need one: it follows redirects,
//! keeps cookies (by host and path, shared across ports as browsers do), submits the
//! gateway's consent form, and stops at the URL a client would receive its answer at.
//! Enough for the HTTP side of OAuth; the headless-Chromium tests drive the real thing.

use bytes::Bytes;
use hyper::{HeaderMap, Method, StatusCode};

use super::clients::{request_raw, resolve_url};

/// Most redirects followed in one navigation.
const MAX_HOPS: usize = 20;

#[derive(Default)]
pub struct Browser {
    /// (host, path, name, value)
    cookies: Vec<(String, String, String, String)>,
    /// Every URL navigated to, in order.
    pub visited: Vec<String>,
}

pub type Page = (StatusCode, HeaderMap, Bytes, String);

fn host_and_path(url: &str) -> (String, String) {
    let uri: hyper::Uri = url.parse().expect("a URL");
    (
        uri.host().unwrap_or_default().to_owned(),
        uri.path().to_owned(),
    )
}

impl Browser {
    pub fn new() -> Browser {
        Browser::default()
    }

    /// The cookie `name` this browser holds, any host.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|c| c.2 == name)
            .map(|c| c.3.as_str())
    }

    /// Forget the cookies whose name `forget` picks (a signing out somewhere).
    pub fn forget(&mut self, forget: impl Fn(&str) -> bool) {
        self.cookies.retain(|(_, _, name, _)| !forget(name));
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

    /// One request, cookies sent and kept.
    pub async fn request(&mut self, method: Method, url: &str, form: Option<&str>) -> Page {
        let cookie = self.cookie_header(url);
        let mut headers: Vec<(&str, &str)> = vec![("accept", "text/html")];
        if let Some(c) = &cookie {
            headers.push(("cookie", c));
        }
        if form.is_some() {
            headers.push(("content-type", "application/x-www-form-urlencoded"));
        }
        self.visited.push(url.to_owned());
        let (status, h, body) =
            request_raw(method, url, &headers, form.unwrap_or_default().to_owned()).await;
        self.keep(url, &h);
        (status, h, body, url.to_owned())
    }

    /// Navigate to `url` and follow redirects until a page that is no redirect, or a
    /// redirect to a URL starting with `stop` (returned as the page's URL, not fetched).
    pub async fn navigate(&mut self, url: &str, stop: &str) -> Page {
        let page = self.request(Method::GET, url, None).await;
        self.follow(page, stop).await
    }

    /// Submit `form` to `url` (POST) and follow as [`Browser::navigate`].
    pub async fn submit(&mut self, url: &str, form: &str, stop: &str) -> Page {
        let page = self.request(Method::POST, url, Some(form)).await;
        self.follow(page, stop).await
    }

    async fn follow(&mut self, mut page: Page, stop: &str) -> Page {
        for _ in 0..MAX_HOPS {
            if !page.0.is_redirection() {
                return page;
            }
            let location = page
                .1
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_else(|| panic!("a redirect without Location from {}", page.3));
            let next = resolve_url(&page.3, location).expect("a redirect to a URL");
            if next.starts_with(stop) {
                self.visited.push(next.clone());
                return (page.0, page.1, Bytes::new(), next);
            }
            page = self.request(Method::GET, &next, None).await;
        }
        panic!("more than {MAX_HOPS} redirects: {:?}", self.visited);
    }
}

/// The value of the hidden field `name` in an HTML page.
pub fn hidden_field(html: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(html);
    let marker = format!("name=\"{name}\" value=\"");
    let start = text.find(&marker)? + marker.len();
    let end = text[start..].find('"')? + start;
    Some(text[start..end].replace("&amp;", "&"))
}

/// The query parameters of `url`.
pub fn query_of(url: &str) -> Vec<(String, String)> {
    let q = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
    form_pairs(q)
}

/// `a=b&c=d` decoded.
pub fn form_pairs(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
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
