//! OAuth challenges: an upstream's `WWW-Authenticate` rewritten to point at
//! the gateway's protected-resource metadata, and the in-band form
//! (`_meta["mcp/www_authenticate"]`) ChatGPT expects in a tool result.

use bytes::Bytes;
use http::StatusCode;
use http::header::{self, HeaderMap, HeaderValue};
use serde_json::Value;
use serde_json::value::RawValue;

use super::state::{AuthState, origin_of, prm_url};
use mcp_ui_model::config::{Mount, Transport};

/// Byte range of the value of auth-param `name` in a challenge (quotes
/// excluded), if present.
fn param_span(challenge: &str, name: &str) -> Option<(usize, usize, bool)> {
    let lower = challenge.to_ascii_lowercase();
    let bytes = challenge.as_bytes();
    let mut from = 0;
    while let Some(at) = lower[from..].find(name) {
        let start = from + at;
        from = start + name.len();
        let before_ok = start == 0 || matches!(bytes[start - 1], b' ' | b',' | b'\t');
        let mut i = start + name.len();
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        if !before_ok || i >= bytes.len() || bytes[i] != b'=' {
            continue;
        }
        i += 1;
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'"' {
            let s = i + 1;
            let mut j = s;
            while j < bytes.len() && bytes[j] != b'"' {
                if bytes[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            return Some((s, j.min(bytes.len()), true));
        }
        let s = i;
        let mut j = s;
        while j < bytes.len() && !matches!(bytes[j], b',' | b' ' | b'\t') {
            j += 1;
        }
        return Some((s, j, false));
    }
    None
}

/// The value of auth-param `name` in a challenge.
pub(crate) fn challenge_param(challenge: &str, name: &str) -> Option<String> {
    let (s, e, quoted) = param_span(challenge, name)?;
    let v = &challenge[s..e];
    Some(if quoted {
        v.replace("\\\"", "\"").replace("\\\\", "\\")
    } else {
        v.to_owned()
    })
}

/// The challenge with `resource_metadata` pointing at `prm`, added when the
/// upstream named none.
pub(crate) fn rewrite_challenge(challenge: &str, prm: &str) -> String {
    match param_span(challenge, "resource_metadata") {
        Some((s, e, true)) => format!("{}{prm}{}", &challenge[..s], &challenge[e..]),
        Some((s, e, false)) => format!("{}\"{prm}\"{}", &challenge[..s], &challenge[e..]),
        None => {
            let t = challenge.trim_end();
            if t.contains(' ') {
                format!("{t}, resource_metadata=\"{prm}\"")
            } else {
                format!("{t} resource_metadata=\"{prm}\"")
            }
        }
    }
}

/// Rewrite every `WWW-Authenticate` of an upstream's response in place,
/// remembering the upstream's own metadata URL for [`serve_prm`].
pub(crate) fn rewrite_challenges(
    auth: &AuthState,
    mount: usize,
    config: &Mount,
    request: &HeaderMap,
    headers: &mut HeaderMap,
) {
    if !headers.contains_key(header::WWW_AUTHENTICATE) {
        return;
    }
    let Some(base) = auth.base(request) else {
        return;
    };
    let prm = prm_url(&base, &config.path);
    point_challenges(headers, &prm, |text| {
        // Only a URL on the upstream's own origin is fetched later: the
        // gateway never follows a challenge elsewhere.
        if let Some(url) = challenge_param(text, "resource_metadata")
            && let Transport::Http { url: up } = &config.transport
            && url
                .strip_prefix(&origin_of(up))
                .is_some_and(|rest| rest.starts_with('/'))
        {
            auth.remember_challenge_url(mount, url);
        }
    });
}

/// Point every `WWW-Authenticate` of `headers` at the metadata `prm`, in
/// place and in their order; `each` sees every challenge that is text before
/// it is rewritten. A value that is not text, or whose rewrite is not a
/// valid header value, stays as it was.
pub(crate) fn point_challenges(headers: &mut HeaderMap, prm: &str, mut each: impl FnMut(&str)) {
    let values: Vec<HeaderValue> = headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .cloned()
        .collect();
    if values.is_empty() {
        return;
    }
    headers.remove(header::WWW_AUTHENTICATE);
    for v in values {
        let pointed = v.to_str().ok().and_then(|text| {
            each(text);
            HeaderValue::from_str(&rewrite_challenge(text, prm)).ok()
        });
        headers.append(header::WWW_AUTHENTICATE, pointed.unwrap_or(v));
    }
}

/// A challenge as ChatGPT requires it in-band: with `error` and
/// `error_description`.
fn complete_challenge(challenge: &str, status: StatusCode) -> String {
    let mut c = challenge.trim_end().to_owned();
    if !c.contains(' ') {
        c.push(' ');
    } else {
        c.push_str(", ");
    }
    let mut added = Vec::new();
    if challenge_param(challenge, "error").is_none() {
        let error = if status == StatusCode::FORBIDDEN {
            "insufficient_scope"
        } else {
            "invalid_token"
        };
        added.push(format!("error=\"{error}\""));
    }
    if challenge_param(challenge, "error_description").is_none() {
        let d = if status == StatusCode::FORBIDDEN {
            "The upstream requires more access; sign in again"
        } else {
            "Sign-in required"
        };
        added.push(format!("error_description=\"{d}\""));
    }
    if added.is_empty() {
        return challenge.to_owned();
    }
    c.push_str(&added.join(", "));
    c
}

/// The tool result a `tools/call` gets, in-band, for an upstream's HTTP 401
/// or 403 with these (already rewritten) challenges.
pub(crate) fn in_band_result(
    id: &RawValue,
    status: StatusCode,
    headers: &HeaderMap,
    prm: &str,
) -> Bytes {
    let mut challenges: Vec<String> = headers
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|c| complete_challenge(c, status))
        .collect();
    if challenges.is_empty() {
        challenges.push(complete_challenge(
            &format!("Bearer resource_metadata=\"{prm}\""),
            status,
        ));
    }
    let text = challenges
        .iter()
        .find_map(|c| challenge_param(c, "error_description"))
        .unwrap_or_else(|| "Authorization required".to_owned());
    let result = serde_json::json!({
        "isError": true,
        "content": [{"type": "text", "text": format!("Authorization required: {text}")}],
        "_meta": {"mcp/www_authenticate": challenges},
    });
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result.to_string().as_bytes());
    out.push(b'}');
    Bytes::from(out)
}

/// Rewrite `resource_metadata` in a result's `_meta["mcp/www_authenticate"]`
/// (a string or an array of strings) when it is absent or points at the
/// upstream's origin (another origin's metadata is left alone); `None` when
/// there is nothing to change.
pub(crate) fn rewrite_result_challenges(
    response: &[u8],
    prm: &str,
    upstream_origin: &str,
) -> Option<Bytes> {
    if !may_carry_challenge(response) {
        return None;
    }
    let mut v: Value = serde_json::from_slice(response).ok()?;
    let slot = v
        .get_mut("result")?
        .get_mut("_meta")?
        .get_mut("mcp/www_authenticate")?;
    let mut changed = false;
    let mut fix = |s: &mut Value| {
        if let Value::String(c) = s {
            let ours = challenge_param(c, "resource_metadata").is_none_or(|u| {
                u.strip_prefix(upstream_origin)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            });
            if !ours {
                return;
            }
            let n = rewrite_challenge(c, prm);
            if n != *c {
                *c = n;
                changed = true;
            }
        }
    };
    match slot {
        Value::Array(items) => items.iter_mut().for_each(&mut fix),
        other => fix(other),
    }
    changed.then(|| Bytes::from(serde_json::to_vec(&v).expect("serializable")))
}

/// Whether a result may carry an in-band challenge: a cheap scan that
/// clears most results before any parse.
pub(crate) fn may_carry_challenge(response: &[u8]) -> bool {
    CHALLENGE_KEY.find(response).is_some()
}

/// The `_meta` key of an in-band challenge.
const CHALLENGE: &[u8] = b"mcp/www_authenticate";
static CHALLENGE_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(CHALLENGE));

/// The gateway's own refusal of a `tools/call` (its challenge `challenge`,
/// of HTTP `status`), as the in-band tool result ChatGPT starts account
/// linking from.
pub(crate) fn in_band_refusal(
    id: &RawValue,
    status: StatusCode,
    challenge: HeaderValue,
    prm: &str,
) -> http::Response<mcp_ui_model::reply::Body> {
    let mut headers = HeaderMap::new();
    headers.insert(header::WWW_AUTHENTICATE, challenge);
    let result = in_band_result(id, status, &headers, prm);
    mcp_ui_model::reply::json(StatusCode::OK, result)
}

/// The gateway's refusal of request `id` for want of a token or a scope
/// (see [`crate::oauth::resource_server::gate`]): a `tools/call` answered `in_band` as
/// the tool result carrying the challenge, anything else as the HTTP
/// challenge.
pub(crate) fn refusal_of(
    auth: &mcp_ui_model::config::Auth,
    metadata_url: &str,
    r: &mcp_ui_identity::Rejection,
    id: Option<&RawValue>,
    in_band: bool,
) -> http::Response<mcp_ui_model::reply::Body> {
    let challenge = crate::oauth::resource_server::challenge_value(auth, metadata_url, r);
    match (in_band, id, challenge) {
        (true, Some(id), Some(c)) => {
            let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::UNAUTHORIZED);
            in_band_refusal(id, status, c, metadata_url)
        }
        _ => crate::oauth::resource_server::refusal_for(auth, metadata_url, r, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_quoted_token_and_missing_resource_metadata() {
        let prm = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";
        let c = r#"Bearer error="invalid_token", error_description="expired", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#;
        let r = rewrite_challenge(c, prm);
        assert_eq!(
            r,
            format!(
                r#"Bearer error="invalid_token", error_description="expired", resource_metadata="{prm}""#
            )
        );
        assert_eq!(
            challenge_param(&r, "error").as_deref(),
            Some("invalid_token")
        );
        assert_eq!(
            challenge_param(&r, "error_description").as_deref(),
            Some("expired")
        );
        assert_eq!(
            rewrite_challenge("Bearer", prm),
            format!(r#"Bearer resource_metadata="{prm}""#)
        );
        assert_eq!(
            rewrite_challenge(r#"Bearer realm="x""#, prm),
            format!(r#"Bearer realm="x", resource_metadata="{prm}""#)
        );
        assert_eq!(
            rewrite_challenge("Bearer resource_metadata=http://u/x, scope=a", prm),
            format!(r#"Bearer resource_metadata="{prm}", scope=a"#)
        );
    }

    #[test]
    fn in_band_result_has_error_and_description() {
        let mut h = HeaderMap::new();
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer resource_metadata="https://gw/x""#),
        );
        let id: Box<RawValue> = RawValue::from_string("7".into()).unwrap();
        let b = in_band_result(&id, StatusCode::UNAUTHORIZED, &h, "https://gw/x");
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["isError"], true);
        let c = v["result"]["_meta"]["mcp/www_authenticate"][0]
            .as_str()
            .unwrap();
        assert!(c.contains(r#"error="invalid_token""#), "{c}");
        assert!(c.contains("error_description="), "{c}");
        assert!(c.contains(r#"resource_metadata="https://gw/x""#), "{c}");
    }

    #[test]
    fn result_challenges_rewritten() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[],"_meta":{"mcp/www_authenticate":"Bearer resource_metadata=\"http://up/.well-known/oauth-protected-resource\", error=\"insufficient_scope\""}}}"#;
        assert!(rewrite_result_challenges(body, "https://gw/p", "http://elsewhere").is_none());
        let out = rewrite_result_challenges(body, "https://gw/p", "http://up").unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["result"]["_meta"]["mcp/www_authenticate"],
            r#"Bearer resource_metadata="https://gw/p", error="insufficient_scope""#
        );
        assert!(rewrite_result_challenges(br#"{"result":{}}"#, "x", "http://up").is_none());
    }
}
