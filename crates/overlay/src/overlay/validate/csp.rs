//! The syntax of the origins and domains a widget manifest may name: what a
//! Content-Security-Policy header can carry safely.

/// Characters that would let a value break out of its place in a
/// Content-Security-Policy header (the reference host drops such entries).
const CSP_UNSAFE: [(char, &str); 7] = [
    (';', "`;`"),
    ('\r', "a carriage return"),
    ('\n', "a line feed"),
    ('\'', "a `'`"),
    ('"', "a `\"`"),
    (' ', "a space"),
    (',', "a `,`"),
];

/// A CSP origin: `scheme://host[:port]`, where the host may start with the
/// wildcard label `*.`. Bare `*`, paths and anything that could inject a
/// CSP directive are refused.
pub(crate) fn origin(value: &str) -> Result<(), String> {
    if value == "*" || value.ends_with("://*") {
        return Err(
            "a bare `*` allows every origin (and ChatGPT rejects it); list the origins".into(),
        );
    }
    injection(value)?;
    let Some((scheme, rest)) = value.split_once("://") else {
        return Err(format!(
            "`{value}` is not an origin; write scheme://host[:port], e.g. https://api.example.com"
        ));
    };
    scheme_name(scheme)?;
    if let Some(cut) = rest.find(['/', '?', '#']) {
        return Err(format!(
            "`{value}` has a path; an origin is scheme://host[:port] only (try `{scheme}://{}`)",
            &rest[..cut]
        ));
    }
    let host = host_port(rest)?;
    if host.starts_with('[') {
        // An IPv6 literal, already checked by `host_port`.
        return Ok(());
    }
    let host = host.strip_prefix("*.").unwrap_or(host);
    hostname(host)
}

/// `_meta.ui.domain`: an origin (ChatGPT's form) or a bare hostname
/// (Claude's form); never a wildcard.
pub(crate) fn domain(value: &str) -> Result<(), String> {
    injection(value)?;
    if value.contains('*') {
        return Err("a widget domain cannot be a wildcard".into());
    }
    match value.split_once("://") {
        Some(_) => origin(value),
        None => hostname(value),
    }
}

/// ChatGPT's widget domain: an origin (`https://host[:port]`), never a
/// wildcard.
pub(crate) fn chatgpt_domain(value: &str) -> Result<(), String> {
    domain(value)?;
    if !value.contains("://") {
        return Err(format!(
            "`{value}` is a bare host name; ChatGPT's widget domain is an origin (try `https://{value}`)"
        ));
    }
    Ok(())
}

/// Claude's widget domain: a bare host name (Claude's is
/// `<32 hex digits>.claudemcpcontent.com`, hashed from the endpoint URL).
pub(crate) fn claude_domain(value: &str) -> Result<(), String> {
    domain(value)?;
    if let Some((_, rest)) = value.split_once("://") {
        return Err(format!(
            "`{value}` is an origin; Claude's widget domain is a bare host name such as `{rest}`, and the one Claude accepts is hashed from the endpoint URL: leave `claude` out and set public_url to have the gateway derive it"
        ));
    }
    Ok(())
}

fn injection(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("empty".into());
    }
    for (c, name) in CSP_UNSAFE {
        if value.contains(c) {
            return Err(format!(
                "contains {name}, which could inject into the Content-Security-Policy"
            ));
        }
    }
    if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("contains whitespace or a control character".into());
    }
    Ok(())
}

fn scheme_name(scheme: &str) -> Result<(), String> {
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{scheme}` is not a scheme (lowercase, e.g. https or wss)"
        ))
    }
}

/// Splits off and checks an optional `:port`; returns the host.
fn host_port(authority: &str) -> Result<&str, String> {
    if authority.contains('@') {
        return Err("an origin carries no user name or password".into());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let Some((addr, after)) = v6.split_once(']') else {
                return Err("unclosed `[` in an IPv6 address".into());
            };
            if addr.is_empty()
                || !addr
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
            {
                return Err(format!("`[{addr}]` is not an IPv6 address"));
            }
            return match after.strip_prefix(':') {
                None if after.is_empty() => Ok(authority),
                Some(port) => self::port(port).map(|()| authority),
                None => Err(format!("unexpected `{after}` after the IPv6 address")),
            };
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if let Some(port) = port {
        self::port(port)?;
    }
    Ok(host)
}

fn port(port: &str) -> Result<(), String> {
    match port.parse::<u16>() {
        Ok(n) if n > 0 && port.chars().all(|c| c.is_ascii_digit()) => Ok(()),
        _ => Err(format!("`{port}` is not a port (1 to 65535)")),
    }
}

fn hostname(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("no host".into());
    }
    if host.len() > 253 {
        return Err("host name longer than 253 characters".into());
    }
    for label in host.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            let hint = if label.contains('*') {
                " (a wildcard is only allowed as the whole first label, `*.`)"
            } else {
                ""
            };
            return Err(format!("`{host}` is not a host name{hint}"));
        }
    }
    Ok(())
}

/// The origin (`scheme://host[:port]`, lowercased) of a remote URL, with
/// protocol-relative `//host/…` read as https (widget sandboxes are https).
pub fn url_origin(url: &str) -> Option<String> {
    let (scheme, rest) = match url.strip_prefix("//") {
        Some(rest) => ("https".to_owned(), rest),
        None => {
            let (scheme, rest) = url.split_once("://")?;
            (scheme.to_ascii_lowercase(), rest)
        }
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    (!authority.is_empty()).then(|| format!("{scheme}://{}", authority.to_ascii_lowercase()))
}

/// Whether `origin` (from [`url_origin`]) is covered by one of `allowed`,
/// honouring `*.` wildcards (which, as in CSP, match subdomains only).
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|pattern| {
        let pattern = pattern.to_ascii_lowercase();
        if pattern == origin {
            return true;
        }
        let Some((scheme, host)) = pattern.split_once("://*.") else {
            return false;
        };
        let Some(rest) = origin
            .strip_prefix(scheme)
            .and_then(|r| r.strip_prefix("://"))
        else {
            return false;
        };
        rest.strip_suffix(host)
            .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1)
    })
}
