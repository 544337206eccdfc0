//! The widget files the gateway serves itself: what a widget's document
//! cannot carry inline (code-split modules, large images, fonts), at
//! `/assets/<hash>/<path>` where `<hash>` names the set of one widget
//! version's files. Served from the snapshot in memory (no filesystem access
//! per request; nothing outside the compiled files can be named), cached as
//! immutable, and readable cross-origin: a host renders the widget in a
//! sandboxed frame of another origin, which loads module scripts and fonts
//! in CORS mode.

use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};

use crate::overlay::OverlaySet;
use crate::reply::{Body, empty, full, text};

/// The path every served widget file is under.
pub const PREFIX: &str = "/assets/";

/// Whether `path` is one of the served widget files' paths.
pub fn claims(path: &str) -> bool {
    path.starts_with(PREFIX)
}

/// Answers a request for `/assets/<hash>/<path>` from the snapshot `set`.
pub fn serve(set: &OverlaySet, method: &Method, path: &str) -> Response<Body> {
    let found = path
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('/'))
        .and_then(|(prefix, file)| set.widgets().asset(prefix, file));
    let Some(asset) = found else {
        return text(
            StatusCode::NOT_FOUND,
            "not found: no widget file of the overlays in force at this path\n",
        );
    };
    let mut response = match *method {
        Method::GET => Response::new(full(asset.body.clone())),
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
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.media_type),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(asset.body.len()));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if *method == Method::OPTIONS {
        headers.remove(header::CONTENT_LENGTH);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD"),
        );
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}
