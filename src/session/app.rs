//! The sealed id of a client session with an app (`[[app]]`): the app's name
//! and, per member, the member's own client session id as its mount issued
//! it (itself sealed, carrying the upstream session and the host). Every
//! member's session is opened at `initialize`, so the id is complete when
//! the client gets it, and any replica holding the key serves the next
//! request of HTTP members with no shared store (stdio and legacy SSE
//! members live in the process that started them, as on their own mount).

use super::id::{MAX_MOUNT_NAME, MAX_SEALED_ID, SessionKey};

const AAD: &[u8] = b"mcp-ui-gateway/app-session/v1";
const VERSION: u8 = 1;

/// One member's part of an app session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberSession {
    /// The member could not be initialized for this session: its tools
    /// answer an error naming it.
    Failed,
    /// The member issued no session id.
    Sessionless,
    /// The member's client session id, as its mount issued it.
    Id(String),
}

/// The sealed content of an app's client session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSession {
    pub app: String,
    /// By member, in the app's order.
    pub members: Vec<MemberSession>,
}

/// The longest app session id opened: `members` members, each at most
/// [`MAX_SEALED_ID`].
pub fn max_id(members: usize) -> usize {
    (24 + 16 + 2 + MAX_MOUNT_NAME + 1 + members * (3 + MAX_SEALED_ID)).div_ceil(3) * 4
}

impl AppSession {
    /// Seal it into an id of visible ASCII.
    pub fn seal(&self, key: &SessionKey) -> String {
        let mut out = vec![VERSION];
        let app = &self.app.as_bytes()[..self.app.len().min(MAX_MOUNT_NAME)];
        out.push(app.len() as u8);
        out.extend_from_slice(app);
        out.push(self.members.len().min(255) as u8);
        for m in self.members.iter().take(255) {
            match m {
                MemberSession::Failed => out.push(0),
                MemberSession::Sessionless => out.push(1),
                MemberSession::Id(id) => {
                    let id = &id.as_bytes()[..id.len().min(u16::MAX as usize)];
                    out.push(2);
                    out.extend_from_slice(&(id.len() as u16).to_be_bytes());
                    out.extend_from_slice(id);
                }
            }
        }
        key.seal_bytes(AAD, &out)
    }

    /// Open an id sealed by [`AppSession::seal`] for an app of at most
    /// `members` members; `None` for anything else.
    pub fn open(key: &SessionKey, id: &str, members: usize) -> Option<AppSession> {
        if id.len() > max_id(members) {
            return None;
        }
        let plain = key.open_bytes(AAD, id)?;
        let mut r = plain.as_slice();
        let r = &mut r;
        if take(r, 1)? != [VERSION] {
            return None;
        }
        let len = take(r, 1)?[0] as usize;
        let app = String::from_utf8(take(r, len)?.to_vec()).ok()?;
        let count = take(r, 1)?[0] as usize;
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(match take(r, 1)?[0] {
                0 => MemberSession::Failed,
                1 => MemberSession::Sessionless,
                2 => {
                    let len = u16::from_be_bytes(take(r, 2)?.try_into().ok()?) as usize;
                    MemberSession::Id(String::from_utf8(take(r, len)?.to_vec()).ok()?)
                }
                _ => return None,
            });
        }
        if !r.is_empty() {
            return None;
        }
        Some(AppSession { app, members: out })
    }
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = r.split_at_checked(n)?;
    *r = rest;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Route, Token};

    #[test]
    fn round_trip_and_refusals() {
        let key = SessionKey::from_bytes(&[7; 32]);
        let s = AppSession {
            app: "suite".into(),
            members: vec![
                MemberSession::Id("abc".into()),
                MemberSession::Failed,
                MemberSession::Sessionless,
            ],
        };
        let id = s.seal(&key);
        assert_eq!(AppSession::open(&key, &id, 3), Some(s.clone()));
        assert_eq!(
            AppSession::open(&SessionKey::from_bytes(&[8; 32]), &id, 3),
            None
        );
        assert_eq!(AppSession::open(&key, &id[1..], 3), None);
        // A mount's id never opens as an app's, nor the reverse.
        let token = Token {
            mount: "suite".into(),
            route: Route::Http {
                upstream_session: None,
            },
            host: None,
            started: None,
            hello: None,
        };
        assert_eq!(AppSession::open(&key, &key.seal(&token), 3), None);
        assert_eq!(key.open(&id), None);
        // The longest id that fits.
        let long = AppSession {
            app: "a".repeat(MAX_MOUNT_NAME),
            members: vec![MemberSession::Id("x".repeat(MAX_SEALED_ID)); 4],
        };
        assert_eq!(AppSession::open(&key, &long.seal(&key), 4), Some(long));
    }
}
