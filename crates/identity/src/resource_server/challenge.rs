//! The `WWW-Authenticate` challenge of a refused request (RFC 6750 §3), with
//! where the client learns how to sign in (`resource_metadata`, RFC 9728
//! §5.1) and the scopes to ask for.

use crate::Rejection;

/// The challenge answering `rejection`: the metadata URL, the scopes the
/// client should ask for (`scope`), and for a token that was wrong, the
/// error and its description.
pub fn www_authenticate(resource_metadata: &str, scopes: &[&str], rejection: &Rejection) -> String {
    let mut params = vec![format!(
        "resource_metadata=\"{}\"",
        quoted(resource_metadata)
    )];
    if !scopes.is_empty() {
        params.push(format!("scope=\"{}\"", quoted(&scopes.join(" "))));
    }
    if let Some(error) = rejection.error() {
        params.push(format!("error=\"{error}\""));
    }
    if let Some(description) = rejection.description() {
        params.push(format!("error_description=\"{}\"", quoted(&description)));
    }
    format!("Bearer {}", params.join(", "))
}

/// `text` as an RFC 6750 quoted value may hold it: printable ASCII without
/// `"` and `\` (RFC 6750 §3's `error_description` characters); anything
/// else becomes `?`.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' '..='~' if c != '"' && c != '\\' => c,
            _ => '?',
        })
        .collect()
}
