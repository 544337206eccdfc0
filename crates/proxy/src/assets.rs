//! The widget files the gateway serves itself: what a widget's document
//! cannot carry inline (code-split modules, large images, fonts), at
//! `/assets/<hash>/<path>` where `<hash>` names the set of one widget
//! version's files. Served from the snapshot in memory (no filesystem access
//! per request; nothing outside the compiled files can be named), cached as
//! immutable, and readable cross-origin: a host renders the widget in a
//! sandboxed frame of another origin, which loads module scripts and fonts
//! in CORS mode.
//!
//! Every answer carries `Content-Security-Policy: sandbox`: a widget's code
//! loads these files as scripts, styles, images and fonts, which that header
//! does not touch, but an HTML or SVG file of the folder opened as a page
//! would otherwise run at the gateway's own origin, where `/mcp` is
//! same-origin. Paths are percent-decoded (a browser asks for `my%20file.png`)
//! and a `Range` of one span is answered with 206 (media seeking).

use std::ops::Range;

use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};

use mcp_ui_model::reply::{Body, empty, full, text};
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_wire::percent::{Plus, percent_decode};

/// The path every served widget file is under.
pub const PREFIX: &str = "/assets/";

/// Whether `path` is one of the served widget files' paths.
pub(crate) fn claims(path: &str) -> bool {
    path.starts_with(PREFIX)
}

/// Answers a request for `/assets/<hash>/<path>` from the snapshot `set`;
/// `range` is the request's `Range` header, if any.
pub fn serve(
    set: &OverlaySet,
    method: &Method,
    path: &str,
    range: Option<&HeaderValue>,
) -> Response<Body> {
    let found = path
        .strip_prefix(PREFIX)
        .and_then(|rest| percent_decode(rest, Plus::Itself).utf8())
        .and_then(|rest| {
            let (prefix, file) = rest.split_once('/')?;
            set.widgets().asset(prefix, file)
        });
    let Some(asset) = found else {
        return text(
            StatusCode::NOT_FOUND,
            "not found: no widget file of the overlays in force at this path\n",
        );
    };
    let len = asset.body.len();
    let span = match range
        .and_then(|r| r.to_str().ok())
        .map(|r| byte_range(r, len))
    {
        Some(Some(Ok(span))) if *method != Method::OPTIONS => Some(span),
        Some(Some(Err(()))) if *method != Method::OPTIONS => {
            let mut r = Response::new(empty());
            *r.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                r.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return r;
        }
        _ => None,
    };
    let mut response = match *method {
        Method::GET => Response::new(full(match &span {
            Some(span) => asset.body.slice(span.clone()),
            None => asset.body.clone(),
        })),
        Method::HEAD => Response::new(empty()),
        Method::OPTIONS => Response::new(empty()),
        _ => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, HEAD, OPTIONS"),
            );
            return r;
        }
    };
    describe(&mut response, method, asset.media_type, len, span.as_ref());
    response
}

/// The headers of a file's answer: its span (206), type and length, the
/// sandbox every one carries, caching, and cross-origin reading (a
/// preflight answered with 204).
fn describe(
    response: &mut Response<Body>,
    method: &Method,
    media_type: &'static str,
    len: usize,
    span: Option<&Range<usize>>,
) {
    if let Some(span) = span {
        *response.status_mut() = StatusCode::PARTIAL_CONTENT;
        let value = format!("bytes {}-{}/{len}", span.start, span.end - 1);
        if let Ok(v) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(header::CONTENT_RANGE, v);
        }
    }
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(span.map_or(len, |s| s.len())),
    );
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    // A file opened as a page runs in an opaque origin, never the
    // gateway's.
    mcp_ui_model::reply::confine(
        headers,
        "sandbox",
        mcp_ui_model::reply::Framing::AsItsPolicySays,
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if *method == Method::OPTIONS {
        headers.remove(header::CONTENT_LENGTH);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD"),
        );
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
}

/// The one span of `len` bytes a `Range` header asks for: `None` when it is
/// to be ignored (not bytes, several spans, malformed: the whole file is
/// the answer), `Err` when no byte of it exists (416).
fn byte_range(header: &str, len: usize) -> Option<Result<Range<usize>, ()>> {
    let spec = header.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (first, last) = spec.trim().split_once('-')?;
    let span = match (first.trim(), last.trim()) {
        ("", suffix) => {
            let n: u64 = suffix.parse().ok()?;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            len.saturating_sub(n)..len
        }
        (first, "") => first.parse::<usize>().ok()?..len,
        (first, last) => {
            let (first, last): (usize, usize) = (first.parse().ok()?, last.parse().ok()?);
            if last < first {
                return None;
            }
            first..last.saturating_add(1).min(len)
        }
    };
    Some(if span.start < span.end {
        Ok(span)
    } else {
        Err(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges() {
        let ok = |h: &str, len: usize| byte_range(h, len).unwrap().unwrap();
        assert_eq!(ok("bytes=0-0", 10), 0..1);
        assert_eq!(ok("bytes=2-5", 10), 2..6);
        assert_eq!(ok("bytes=2-", 10), 2..10);
        assert_eq!(ok("bytes=8-100", 10), 8..10);
        assert_eq!(ok("bytes=-3", 10), 7..10);
        assert_eq!(ok("bytes=-30", 10), 0..10);
        assert_eq!(ok(" bytes= 1 - 2 ", 10), 1..3);
        // Nothing of it exists: 416.
        for h in ["bytes=10-", "bytes=10-20", "bytes=-0", "bytes=0-"] {
            let len = if h == "bytes=0-" { 0 } else { 10 };
            assert_eq!(byte_range(h, len), Some(Err(())), "{h}");
        }
        // Ignored: the whole file.
        for h in [
            "items=0-1",
            "bytes=0-1,3-4",
            "bytes=5-2",
            "bytes=a-b",
            "bytes=",
            "bytes=-",
            "bytes=-18446744073709551616",
        ] {
            assert_eq!(byte_range(h, 10), None, "{h}");
        }
    }
}
