//! The app's page cursor: which member the next page comes from and that
//! member's own cursor, `[member, cursor]` sealed with the session key for
//! this app: a client cannot make one up (a member would take its cursor
//! for its own), nor carry one to another app.

use serde_json::{Value, json};

use mcp_ui_model::session_id::SessionKey;

/// What a cursor is sealed for, before the app's name.
const AAD: &[u8] = b"mcp-ui-gateway app cursor v1\0";

fn aad(app: &str) -> Vec<u8> {
    [AAD, app.as_bytes()].concat()
}

/// Longest cursor accepted from a client.
pub(crate) const MAX_CURSOR: usize = 16 * 1024;

/// Where a listing continues: member `member`, at its cursor `upstream`
/// (`None`: its first page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub member: usize,
    pub upstream: Option<String>,
}

/// The cursor of `position` in `app`.
pub fn encode(key: &SessionKey, app: &str, position: &Position) -> String {
    let plain = json!([position.member, position.upstream]).to_string();
    key.seal_bytes(&aad(app), plain.as_bytes())
}

/// The position a client's cursor names (`None`: the start); `Err` for a
/// cursor this gateway did not make for `app` of `members` members.
pub(crate) fn decode(
    key: &SessionKey,
    app: &str,
    cursor: Option<&str>,
    members: usize,
) -> Result<Position, String> {
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
    let bytes = key.open_bytes(&aad(app), text).ok_or_else(bad)?;
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
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let key = SessionKey::random();
        let p = Position {
            member: 1,
            upstream: Some("abc=".into()),
        };
        assert_eq!(
            decode(&key, "a", Some(&encode(&key, "a", &p)), 2),
            Ok(p.clone())
        );
        let start = Position {
            member: 0,
            upstream: None,
        };
        assert_eq!(decode(&key, "a", None, 2), Ok(start.clone()));
        assert_eq!(
            decode(&key, "a", Some(&encode(&key, "a", &start)), 1),
            Ok(start)
        );
        let beyond = encode(
            &key,
            "a",
            &Position {
                member: 2,
                upstream: None,
            },
        );
        // What cursors were before they were sealed: plain base64 JSON.
        let made_up = URL_SAFE_NO_PAD.encode(r#"[1,"evil-cursor"]"#);
        let other_app = encode(&key, "b", &p);
        let other_key = encode(&SessionKey::random(), "a", &p);
        for bad in [
            "",
            "!!",
            "bnVsbA",
            &beyond,
            &made_up,
            &other_app,
            &other_key,
            &"A".repeat(MAX_CURSOR + 1),
        ] {
            let e = decode(&key, "a", Some(bad), 2).unwrap_err();
            assert!(e.starts_with("Invalid params: cursor"), "{e}");
        }
    }
}
