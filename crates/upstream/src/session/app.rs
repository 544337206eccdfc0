//! The sealed id of a client session with an app (`[[app]]`): the app's
//! name, the client's number with its members, what it said at
//! `initialize` and the host it is, and which members were left out. The
//! app's members serve it as one of their own sessions that owns no
//! connection (the proxy's `relay::member`), so the id names no upstream
//! session: any replica holding the key serves the next request, opening
//! what it needs with the capabilities the id carries.
//!
//! It names the caller it was made for, as a mount's id does
//! ([`mcp_ui_model::session_id::Owner`]): a request naming it is served only for that
//! caller. Ids sealed before they named one open as an open endpoint's.
//!
//! Ids of the first format (each member's own session id, sealed inside)
//! still open: as a session of a number drawn from the id.

use mcp_ui_model::session_id::hello::Hello;
use mcp_ui_model::session_id::{MAX_MOUNT_NAME, MAX_SEALED_ID, Owner, SessionKey};
use mcp_ui_overlay::host::HostKind;

const AAD_V1: &[u8] = b"mcp-ui-gateway/app-session/v1";
const AAD: &[u8] = b"mcp-ui-gateway/app-session/v2";
const VERSION_V1: u8 = 1;
/// Sealed under [`AAD`] too: the second format, which named no caller.
const VERSION_V2: u8 = 2;
const VERSION: u8 = 3;

/// The sealed content of an app's client session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSession {
    pub app: String,
    /// The client's session number with each member; `None` for a client
    /// that has no session (it sent no id).
    pub client: Option<u64>,
    /// The caller the session was made for.
    pub owner: Owner,
    /// The host that initialized the session.
    pub host: Option<HostKind>,
    /// When the session began (Unix milliseconds; 0 when not known).
    pub started: u64,
    /// What the client said at `initialize`.
    pub hello: Option<Hello>,
    /// By member, in the app's order: left out of the session (it could not
    /// be initialized when the session began).
    pub failed: Vec<bool>,
}

/// The longest app session id opened for an app of `members` members (an
/// id of the first format, each member's own id inside, is the longest).
pub(crate) fn max_id(members: usize) -> usize {
    (24 + 16 + 2 + MAX_MOUNT_NAME + 1 + members * (3 + MAX_SEALED_ID)).div_ceil(3) * 4
}

impl AppSession {
    /// A client with no session, for an app of `members` members.
    pub fn sessionless(app: &str, members: usize) -> AppSession {
        AppSession {
            app: app.to_owned(),
            client: None,
            owner: Owner::Open,
            host: None,
            started: 0,
            hello: None,
            failed: vec![false; members],
        }
    }

    /// How long ago the session began, when its id says.
    pub fn age(&self) -> Option<std::time::Duration> {
        (self.started != 0).then(|| {
            std::time::Duration::from_millis(
                mcp_ui_model::clock::unix_millis().saturating_sub(self.started),
            )
        })
    }

    /// Seal it into an id of visible ASCII.
    pub fn seal(&self, key: &SessionKey) -> String {
        let mut out = vec![VERSION];
        let app = &self.app.as_bytes()[..self.app.len().min(MAX_MOUNT_NAME)];
        out.push(app.len() as u8);
        out.extend_from_slice(app);
        out.extend_from_slice(&self.client.unwrap_or(0).to_be_bytes());
        self.owner.encode(&mut out);
        out.push(self.host.map_or(u8::MAX, HostKind::code));
        out.extend_from_slice(&self.started.to_be_bytes());
        let failed = &self.failed[..self.failed.len().min(255)];
        out.push(failed.len() as u8);
        for byte in failed.chunks(8) {
            out.push(
                byte.iter()
                    .enumerate()
                    .fold(0u8, |b, (i, f)| b | (u8::from(*f) << i)),
            );
        }
        if let Some(hello) = &self.hello {
            hello.encode(&mut out);
        }
        key.seal_bytes(AAD, &out)
    }

    /// Open an id sealed by [`AppSession::seal`] for an app of at most
    /// `members` members; `None` for anything else.
    pub fn open(key: &SessionKey, id: &str, members: usize) -> Option<AppSession> {
        if id.len() > max_id(members) {
            return None;
        }
        if let Some(plain) = key.open_bytes(AAD, id) {
            return decode(&plain);
        }
        let plain = key.open_bytes(AAD_V1, id)?;
        decode_v1(&plain, id)
    }
}

fn decode(plain: &[u8]) -> Option<AppSession> {
    let mut r = plain;
    let r = &mut r;
    let version = take(r, 1)?[0];
    if version != VERSION && version != VERSION_V2 {
        return None;
    }
    let len = take(r, 1)?[0] as usize;
    let app = String::from_utf8(take(r, len)?.to_vec()).ok()?;
    let client = u64::from_be_bytes(take(r, 8)?.try_into().ok()?);
    let owner = match version {
        VERSION_V2 => Owner::Open,
        _ => Owner::decode_from(r)?,
    };
    let host = match take(r, 1)?[0] {
        u8::MAX => None,
        code => Some(HostKind::from_code(code)),
    };
    let started = u64::from_be_bytes(take(r, 8)?.try_into().ok()?);
    let count = take(r, 1)?[0] as usize;
    let bits = take(r, count.div_ceil(8))?;
    let failed = (0..count)
        .map(|i| bits[i / 8] & (1 << (i % 8)) != 0)
        .collect();
    let hello = match r.is_empty() {
        true => None,
        false => match Hello::decode(r)? {
            (hello, []) => Some(hello),
            _ => return None,
        },
    };
    Some(AppSession {
        app,
        client: (client != 0).then_some(client),
        owner,
        host,
        started,
        hello,
        failed,
    })
}

/// An id of the first format: the app, then by member a failed mark, no
/// session, or the member's own id. Its session's number is drawn from
/// the id; what the client said is not known.
fn decode_v1(plain: &[u8], id: &str) -> Option<AppSession> {
    let mut r = plain;
    let r = &mut r;
    if take(r, 1)? != [VERSION_V1] {
        return None;
    }
    let len = take(r, 1)?[0] as usize;
    let app = String::from_utf8(take(r, len)?.to_vec()).ok()?;
    let count = take(r, 1)?[0] as usize;
    let mut failed = Vec::with_capacity(count);
    for _ in 0..count {
        match take(r, 1)?[0] {
            0 => failed.push(true),
            1 => failed.push(false),
            2 => {
                let len = u16::from_be_bytes(take(r, 2)?.try_into().ok()?) as usize;
                take(r, len)?;
                failed.push(false);
            }
            _ => return None,
        }
    }
    if !r.is_empty() {
        return None;
    }
    Some(AppSession {
        app,
        client: Some(super::pool::digest([id.as_bytes()]) | 1),
        owner: Owner::Open,
        host: None,
        started: 0,
        hello: None,
        failed,
    })
}

fn take<'a>(r: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = r.split_at_checked(n)?;
    *r = rest;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_ui_model::session_id::{Route, Token};

    #[test]
    fn round_trip_and_refusals() {
        let key = SessionKey::from_bytes(&[7; 32]);
        let s = AppSession {
            app: "suite".into(),
            client: Some(42),
            owner: Owner::caller("https://login.example.com", "alice"),
            host: Some(HostKind::Claude),
            started: 1_700_000_000_000,
            hello: Some(Hello::gateway("2025-06-18")),
            failed: vec![false, true, false],
        };
        let id = s.seal(&key);
        assert_eq!(AppSession::open(&key, &id, 3), Some(s.clone()));
        assert_eq!(
            AppSession::open(&SessionKey::from_bytes(&[8; 32]), &id, 3),
            None
        );
        assert_eq!(AppSession::open(&key, &id[1..], 3), None);
        let bare = AppSession::sessionless("suite", 9);
        assert_eq!(AppSession::open(&key, &bare.seal(&key), 9), Some(bare));
        // A mount's id never opens as an app's, nor the reverse.
        let token = Token {
            mount: "suite".into(),
            route: Route::Http {
                upstream_session: None,
            },
            owner: Owner::Open,
            host: None,
            started: None,
            hello: None,
        };
        assert_eq!(AppSession::open(&key, &key.seal(&token), 3), None);
        assert_eq!(key.open(&id), None);
        // The longest id that fits.
        let long = AppSession {
            app: "a".repeat(MAX_MOUNT_NAME),
            client: Some(u64::MAX),
            owner: Owner::Caller([0xff; 32]),
            host: Some(HostKind::Other),
            started: u64::MAX,
            hello: Some(Hello {
                version: "v".repeat(32),
                client_name: "n".repeat(64),
                ..Hello::default()
            }),
            failed: vec![true; 255],
        };
        assert_eq!(AppSession::open(&key, &long.seal(&key), 255), Some(long));
    }

    /// An id of the second format, which named no caller, opens as an
    /// open endpoint's.
    #[test]
    fn second_format_ids_open_as_an_open_endpoints() {
        let key = SessionKey::from_bytes(&[7; 32]);
        let s = AppSession {
            app: "suite".into(),
            client: Some(42),
            owner: Owner::Open,
            host: Some(HostKind::Claude),
            started: 1_700_000_000_000,
            hello: None,
            failed: vec![false, true],
        };
        let mut plain = vec![VERSION_V2, 5];
        plain.extend_from_slice(b"suite");
        plain.extend_from_slice(&42u64.to_be_bytes());
        plain.push(HostKind::Claude.code());
        plain.extend_from_slice(&1_700_000_000_000u64.to_be_bytes());
        plain.extend_from_slice(&[2, 0b10]);
        let id = key.seal_bytes(AAD, &plain);
        assert_eq!(AppSession::open(&key, &id, 2), Some(s));
    }

    /// An id of the first format opens, as a session of a number drawn
    /// from it, with its failed members.
    #[test]
    fn first_format_ids_still_open() {
        let key = SessionKey::from_bytes(&[7; 32]);
        let mut plain = vec![VERSION_V1, 5];
        plain.extend_from_slice(b"suite");
        plain.push(3);
        plain.extend_from_slice(&[2, 0, 3]);
        plain.extend_from_slice(b"abc");
        plain.push(0);
        plain.push(1);
        let id = key.seal_bytes(AAD_V1, &plain);
        let s = AppSession::open(&key, &id, 3).expect("opens");
        assert_eq!(s.app, "suite");
        assert_eq!(s.failed, vec![false, true, false]);
        assert!(s.client.is_some());
        assert_eq!(AppSession::open(&key, &id, 3).unwrap().client, s.client);
    }
}
