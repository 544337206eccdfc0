//! The bearer token of a request (RFC 6750 §2.1): the `Authorization`
//! header's `Bearer` credentials. The other ways RFC 6750 allows (a form
//! field, a query parameter) are not read: a token in a URL ends up in
//! logs.

use crate::Rejection;

/// The token of a request whose `Authorization` header values are
/// `values`: `Ok(None)` without the header, `Err` for a header sent twice
/// or not of the `Bearer` scheme's form.
pub fn token<'a>(values: &[&'a [u8]]) -> Result<Option<&'a str>, Rejection> {
    let value = match values {
        [] => return Ok(None),
        [one] => *one,
        _ => {
            return Err(Rejection::BadRequest(
                "the request has several Authorization headers".into(),
            ));
        }
    };
    let text = std::str::from_utf8(value)
        .map_err(|_| Rejection::BadRequest("the Authorization header is not text".into()))?;
    let (scheme, rest) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Another scheme (Basic, DPoP, …) carries no bearer token: as if none.
        return Ok(None);
    }
    let token = rest.trim_matches(' ');
    if token.is_empty() || !token.bytes().all(is_b68token) {
        return Err(Rejection::BadRequest(
            "the Authorization header's Bearer token is not of the form RFC 6750 gives it".into(),
        ));
    }
    Ok(Some(token))
}

/// A character of RFC 6750's `b64token` (`=` only at the end, which is not
/// worth telling apart here): one table lookup a byte, as every request of
/// a signed-in caller reads its token.
fn is_b68token(b: u8) -> bool {
    B68TOKEN[b as usize]
}

const B68TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
        b += 1;
    }
    table
};
