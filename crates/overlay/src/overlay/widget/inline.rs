//! A widget's entry document and everything it references, turned into the
//! one HTML document a host renders plus the files the gateway serves.
//!
//! Every reference must resolve: scripts and stylesheets of the entry are
//! inlined (unless a module script loads other modules: it is served, so
//! the modules that import it back share one instance), small images and
//! media become `data:` URIs (hosts allow `data:` for those, not for fonts),
//! and everything else is served by the gateway at a
//! content-addressed URL. A reference to nothing, or out of the widget
//! folder, is an error naming the file and the reference.

use sha2::{Digest, Sha256};

pub use super::builder::BundleError;
use super::builder::{Builder, Piece, Rooted};
use super::media::media_type;
pub use super::options::{BundleOptions, Read};
use super::scan::{find_ci, last_ci, scan};
use super::urls::encode_path;

/// How many hex digits of the hash of the served files name their folder.
const PREFIX_DIGITS: usize = 16;

/// A file the gateway serves for a widget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// Its path in the widget folder.
    pub path: String,
    pub media_type: &'static str,
    pub body: bytes::Bytes,
}

/// What [`bundle`] produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inlined {
    /// The single HTML document.
    pub html: String,
    /// Script and stylesheet URLs left in place because they are remote
    /// (`http(s)://…` or `//…`), with their byte offsets in the entry: their
    /// origins must be in `csp.resource_domains` or the host blocks them.
    pub remote: Vec<(usize, String)>,
    /// The folder name of the served files (a hash of them all), empty when
    /// there are none.
    pub prefix: String,
    /// The files served under `<asset_base>/<prefix>/<path>`.
    pub assets: Vec<Asset>,
}

/// Bundles the entry document `html` (see the module documentation).
pub fn bundle<'r>(
    html: &str,
    options: &BundleOptions<'_>,
    read: &'r mut Read<'r>,
) -> Result<Inlined, Vec<BundleError>> {
    let mut b = Builder::new(options, read);
    let mut edits: Vec<(usize, usize, Vec<Piece>)> = Vec::new();
    let mut deferred: Vec<Piece> = Vec::new();
    let mut remote = Vec::new();
    for element in scan(html) {
        match element {
            Ok(element) => b.element(html, &element, &mut edits, &mut deferred, &mut remote),
            Err(e) => b.errors.push(BundleError {
                file: None,
                offset: e.offset,
                reason: e.reason,
            }),
        }
    }
    let assets = b.serve_closure();
    if !assets.is_empty() && options.asset_base.is_none() {
        let first = &assets[0].0;
        b.errors.push(BundleError {
            file: None,
            offset: 0,
            reason: format!(
                "{} file(s) of this widget must be served by the gateway (such as {first}), and public_url is not set: set public_url to the gateway's URL as the user's browser reaches it",
                assets.len()
            ),
        });
    }
    if !b.errors.is_empty() {
        return Err(b.errors);
    }
    let prefix = prefix_of(&assets);
    let base = options.asset_base.unwrap_or_default().trim_end_matches('/');
    let url = |path: &str| format!("{base}/{prefix}/{}", encode_path(path));

    // The document: the entry's text with the edits applied, deferred
    // scripts before the last `</body`.
    if !deferred.is_empty() {
        let at = find_ci(html, "</body", 0).map(|first| last_ci(html, "</body", first));
        match at.filter(|at| edits.iter().all(|(s, e, _)| at < s || at >= e)) {
            Some(at) => edits.push((at, at, deferred)),
            None => edits.push((html.len(), html.len(), deferred)),
        }
    }
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(html.len());
    let mut copied = 0;
    for (start, end, pieces) in &edits {
        out.push_str(&html[copied..*start]);
        for piece in pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Url(path) => out.push_str(&url(path)),
            }
        }
        copied = *end;
    }
    out.push_str(&html[copied..]);

    let assets = assets
        .into_iter()
        .map(|(path, body, rooted)| {
            let body = rewrite_root_refs(body, &rooted, &url);
            Asset {
                media_type: media_type(&path),
                path,
                body: body.into(),
            }
        })
        .collect();
    Ok(Inlined {
        html: out,
        remote,
        prefix,
        assets,
    })
}

/// The folder name of a set of served files: a hash of their paths and
/// original contents.
fn prefix_of(assets: &[(String, Vec<u8>, Vec<Rooted>)]) -> String {
    if assets.is_empty() {
        return String::new();
    }
    let mut hasher = Sha256::new();
    for (path, body, _) in assets {
        hasher.update((path.len() as u64).to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update((body.len() as u64).to_le_bytes());
        hasher.update(body);
    }
    hex::encode(hasher.finalize())[..PREFIX_DIGITS].to_owned()
}

/// A served file's root-relative references (`/assets/x.js`) made absolute
/// URLs of the served copy; relative ones resolve by themselves.
fn rewrite_root_refs(body: Vec<u8>, rooted: &[Rooted], url: &dyn Fn(&str) -> String) -> Vec<u8> {
    if rooted.is_empty() {
        return body;
    }
    let mut out = Vec::with_capacity(body.len());
    let mut copied = 0;
    for (range, target, suffix) in rooted {
        out.extend_from_slice(&body[copied..range.start]);
        out.extend_from_slice(url(target).as_bytes());
        out.extend_from_slice(suffix.as_bytes());
        copied = range.end;
    }
    out.extend_from_slice(&body[copied..]);
    out
}
