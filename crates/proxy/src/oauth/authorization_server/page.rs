//! The pages a person sees: the consent page, and what went wrong. Every
//! value is escaped; the pages run no script, load nothing, and refuse to be
//! framed (clickjacking would make consent a click someone else chose).

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

use mcp_ui_identity::authorization_server::authorize::Request;
use mcp_ui_identity::authorization_server::client::Client;
use mcp_ui_model::reply::{self, Body};

/// `text` safe inside HTML text and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}\
h1{font-size:1.4rem}code{word-break:break-all;background:#f2f2f2;padding:0 .2rem}\
.where{border-left:4px solid #c60;padding:.4rem .8rem;background:#fff6ec}\
button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem}small{color:#555}";

fn html(status: StatusCode, title: &str, body: &str) -> Response<Body> {
    let doc = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    );
    let mut r = reply::text(status, doc);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    reply::confine(
        h,
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        reply::Framing::Deny,
    );
    r
}

/// A page saying what went wrong, sent to no one.
pub(super) fn error(status: StatusCode, message: &str) -> Response<Body> {
    html(
        status,
        "Sign-in stopped",
        &format!(
            "<h1>Sign-in stopped</h1><p>{}</p><p><small>Nothing was sent to the application. Close this page and start again from it.</small></p>",
            escape(message)
        ),
    )
}

/// What the consent page shows.
pub(super) struct Consent<'a> {
    pub client: &'a Client,
    pub client_id: &'a str,
    pub request: &'a Request,
    pub provider: &'a str,
    /// Where the form is sent.
    pub action: &'a str,
    pub ticket: &'a str,
    pub remember_days: u32,
}

/// The consent page: which client, where it sends the user afterwards,
/// what it may do; Allow or Deny.
pub(super) fn consent(c: &Consent<'_>) -> Response<Body> {
    let known_by = if mcp_ui_identity::authorization_server::client::names_a_document(c.client_id) {
        format!("its metadata at <code>{}</code>", escape(c.client_id))
    } else {
        "a registration it made here itself".to_owned()
    };
    let name = c.client.client_name.as_deref().unwrap_or("An application");
    let uri = c
        .client
        .client_uri
        .as_deref()
        .map(|u| format!(" (<code>{}</code>)", escape(u)))
        .unwrap_or_default();
    let scopes = match c.request.scopes.is_empty() {
        true => "<li>call its tools as you</li>".to_owned(),
        false => c
            .request
            .scopes
            .iter()
            .map(|s| format!("<li><code>{}</code></li>", escape(s)))
            .collect::<String>(),
    };
    let remember = match c.remember_days {
        0 => String::new(),
        d => format!(
            "<p><label><input type=\"checkbox\" name=\"remember\" value=\"1\" checked> Remember this for {d} days for this application</label></p>"
        ),
    };
    let body = format!(
        "<h1>Allow {name} to use <code>{resource}</code>?</h1>\
<p><b>{name}</b>{uri} is known by {known_by}; its name is its own claim.</p>\
<p>It asks to:</p><ul>{scopes}</ul>\
<p class=\"where\">After you sign in with {provider}, you will be sent to<br><code>{redirect}</code><br>\
Allow only if you started this from that application.</p>\
<form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"ticket\" value=\"{ticket}\">{remember}\
<button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
        name = escape(name),
        resource = escape(&c.request.resource),
        provider = escape(c.provider),
        redirect = escape(&c.request.redirect_uri),
        action = escape(c.action),
        ticket = escape(c.ticket),
    );
    html(StatusCode::OK, "Allow access?", &body)
}
