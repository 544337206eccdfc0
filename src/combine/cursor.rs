//! The app's page cursor: which member the next page comes from and that
//! member's own cursor, opaque to clients (base64url of `[member, cursor]`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// Longest cursor accepted from a client.
pub const MAX_CURSOR: usize = 16 * 1024;

/// Where a listing continues: member `member`, at its cursor `upstream`
/// (`None`: its first page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub member: usize,
    pub upstream: Option<String>,
}

/// The cursor of `position`.
pub fn encode(position: &Position) -> String {
    URL_SAFE_NO_PAD.encode(json!([position.member, position.upstream]).to_string())
}

/// The position a client's cursor names (`None`: the start); `Err` for a
/// cursor this gateway did not make for `members` members.
pub fn decode(cursor: Option<&str>, members: usize) -> Result<Position, String> {
    let Some(text) = cursor else {
        return Ok(Position {
            member: 0,
            upstream: None,
        });
    };
    let bad = || {
        format!(
            "Invalid params: cursor \"{}\" is not one this app gave",
            shorten(text)
        )
    };
    if text.len() > MAX_CURSOR {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| bad())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    match value.as_array().map(Vec::as_slice) {
        Some([Value::Number(m), c]) => {
            let member = m
                .as_u64()
                .filter(|&m| (m as usize) < members)
                .ok_or_else(bad)?;
            let upstream = match c {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                _ => return Err(bad()),
            };
            Ok(Position {
                member: member as usize,
                upstream,
            })
        }
        _ => Err(bad()),
    }
}

fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let p = Position {
            member: 1,
            upstream: Some("abc=".into()),
        };
        assert_eq!(decode(Some(&encode(&p)), 2), Ok(p));
        let start = Position {
            member: 0,
            upstream: None,
        };
        assert_eq!(decode(None, 2), Ok(start.clone()));
        assert_eq!(decode(Some(&encode(&start)), 1), Ok(start));
        let beyond = encode(&Position {
            member: 2,
            upstream: None,
        });
        for bad in ["", "!!", "bnVsbA", &beyond, &"A".repeat(MAX_CURSOR + 1)] {
            let e = decode(Some(bad), 2).unwrap_err();
            assert!(e.starts_with("Invalid params: cursor"), "{e}");
        }
    }
}
