//! Sealed session ids: everything routing needs, sealed with a 32-byte key.
//!
//! An id carries the mount it belongs to and either the upstream's own session
//! id (HTTP upstreams: any gateway process holding the same key can serve the
//! next request, with no shared store) or a handle on a session this process
//! owns (stdio children and legacy SSE connections, which live in one
//! process). XChaCha20-Poly1305 with a random 192-bit nonce seals it: a forged,
//! truncated or foreign-key id fails to open and is answered 404. It also
//! carries the host that initialized the session (ChatGPT, Claude, another),
//! since a widget's domain differs by host; ids sealed before it did still
//! open, with no host. And it carries when the session started (Unix
//! milliseconds), so that whichever replica sees it end can time it; ids
//! sealed before it did open with no start. Last comes what the client said
//! of itself at `initialize` ([`Hello`]): its revision, capabilities and
//! name, with which a session whose upstream side is gone is opened again.
//!
//! An id names the caller it was made for ([`Owner`]): on an endpoint that
//! asks for tokens, a request naming it is served only for that caller,
//! as the MCP security best practices bind a session to its user
//! (`<user_id>:<session_id>`). The caller is a digest of its issuer and
//! subject that every process computes alike, so replicas sharing the key
//! agree on it; the sealing keeps it private.
//!
//! A session whose upstream connection the gateway shares between clients
//! (`sessions = "shared"` or `"conversation"`) names no connection at all,
//! only the client session ([`Route::Pooled`]): any process holding the key
//! serves it on a connection of its own.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;

pub mod hello;

pub use hello::Hello;
use mcp_ui_overlay::host::HostKind;

/// The layout sealed now; ids of the first (without an [`Owner`]) still open.
const VERSION: u8 = 2;
const VERSION_V1: u8 = 1;
const AAD: &[u8] = b"mcp-ui-gateway/session/v1";
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;

/// Longest upstream session id the gateway carries, in bytes. Its sealed
/// form (under 6 KB) fits the header limits of common HTTP clients; an
/// upstream that issues a longer one is refused at `initialize`.
pub const MAX_UPSTREAM_SESSION_ID: usize = 4096;
/// Longest mount name an id carries (the configuration refuses longer ones).
pub const MAX_MOUNT_NAME: usize = 255;
/// Most bytes a sealed [`Hello`] takes: capabilities and three strings of
/// at most 255 bytes, each with its length.
const MAX_HELLO: usize = 2 + 3 * 256;
/// Most bytes a sealed [`Owner`] takes: its kind and a digest.
const MAX_OWNER: usize = 1 + 32;
/// The longest id [`SessionKey::seal`] makes, so the longest [`SessionKey::open`]
/// looks at: version, kind, mount length, mount, flag, id length, id, owner,
/// host, start, hello.
pub const MAX_SEALED_ID: usize = base64_len(
    NONCE_LEN
        + 3
        + MAX_MOUNT_NAME
        + 3
        + MAX_UPSTREAM_SESSION_ID
        + MAX_OWNER
        + 1
        + 8
        + MAX_HELLO
        + TAG_LEN,
);

/// Length of `n` bytes in unpadded base64.
const fn base64_len(n: usize) -> usize {
    (n * 4).div_ceil(3)
}

/// Whether an upstream's session id is short enough to be carried.
pub fn carries_upstream_id(id: &str) -> bool {
    id.len() <= MAX_UPSTREAM_SESSION_ID
}

/// Where a downstream session leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A streamable HTTP upstream; `None` when the upstream issued no session id.
    Http { upstream_session: Option<String> },
    /// A session owned by one gateway process (`instance`), numbered `id` there.
    Local { instance: [u8; 16], id: u64 },
    /// A client session on connections the gateway shares (`sessions =
    /// "shared"` or `"conversation"`); `client` tells it apart from the
    /// others, so that what the upstream says reaches this client only.
    Pooled { client: u64 },
}

/// Whom a session was made for: a request naming its id is served only
/// for the same (no token is not any token).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Owner {
    /// Whoever calls an endpoint that asks for no token; also the owner of
    /// an id sealed before ids named one.
    #[default]
    Open,
    /// A caller without a token, on an endpoint that lets such callers in
    /// (`anonymous = true`).
    Anonymous,
    /// A verified caller: the SHA-256 of its issuer and subject
    /// ([`Owner::caller`]).
    Caller([u8; 32]),
}

impl Owner {
    /// The verified caller `subject` of `issuer`: the same digest in every
    /// process, so that replicas sharing the session key agree, and for
    /// every token of that user (a refreshed one keeps its sessions).
    pub fn caller(issuer: &str, subject: &str) -> Owner {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"mcp-ui-gateway/session-owner/v1");
        for part in [issuer, subject] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&h.finalize());
        Owner::Caller(digest)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Owner::Open => out.push(0),
            Owner::Anonymous => out.push(1),
            Owner::Caller(d) => {
                out.push(2);
                out.extend_from_slice(d);
            }
        }
    }

    /// An owner read from the front of `r`, which it advances.
    pub fn decode_from(r: &mut &[u8]) -> Option<Owner> {
        let (&kind, rest) = r.split_first()?;
        let (owner, rest) = match kind {
            0 => (Owner::Open, rest),
            1 => (Owner::Anonymous, rest),
            2 => {
                let (digest, rest) = rest.split_at_checked(32)?;
                (Owner::Caller(digest.try_into().ok()?), rest)
            }
            _ => return None,
        };
        *r = rest;
        Some(owner)
    }
}

/// The sealed content of a downstream session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub mount: String,
    pub route: Route,
    /// The caller the session was made for.
    pub owner: Owner,
    /// The host that initialized the session; `None` in an id sealed before
    /// ids carried it.
    pub host: Option<HostKind>,
    /// When the session started, in Unix milliseconds; `None` in an id
    /// sealed before ids carried it.
    pub started: Option<u64>,
    /// What the client said at `initialize`; `None` in an id sealed before
    /// ids carried it (or by a session with no `initialize`).
    pub hello: Option<Hello>,
}

impl Token {
    /// How long ago the session started, when its id says.
    pub fn age(&self) -> Option<std::time::Duration> {
        let started = self.started?;
        Some(std::time::Duration::from_millis(
            crate::clock::unix_millis().saturating_sub(started),
        ))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("session key must be 64 hexadecimal characters (32 bytes), got {0} characters")]
    Length(usize),
    #[error("session key is not hexadecimal: {0}")]
    Hex(#[from] hex::FromHexError),
}

/// The key that seals session ids. Cloning shares nothing mutable.
#[derive(Clone)]
pub struct SessionKey {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        if text.len() != 64 {
            return Err(KeyError::Length(text.len()));
        }
        let bytes = hex::decode(text)?;
        Ok(Self::from_bytes(
            &bytes.try_into().expect("64 hex chars are 32 bytes"),
        ))
    }

    pub fn from_bytes(key: &[u8; 32]) -> Self {
        SessionKey {
            cipher: XChaCha20Poly1305::new(key.into()),
        }
    }

    /// A fresh key for this process only: its sessions do not survive a
    /// restart and cannot be served by replicas.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Self::from_bytes(&key)
    }

    /// Seal a token into an id of visible ASCII (base64url), at most
    /// [`MAX_SEALED_ID`] long when the token's upstream id and mount are
    /// within [`MAX_UPSTREAM_SESSION_ID`] and [`MAX_MOUNT_NAME`].
    pub fn seal(&self, token: &Token) -> String {
        self.seal_bytes(AAD, &encode(token))
    }

    /// Seal `plain` for the purpose `aad` names (an id sealed for one
    /// purpose never opens for another), as visible ASCII (base64url).
    pub fn seal_bytes(&self, aad: &[u8], plain: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plain, aad })
            .expect("encryption of a small buffer cannot fail");
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// Open an id; `None` for anything not sealed by this key.
    pub fn open(&self, id: &str) -> Option<Token> {
        if id.len() > MAX_SEALED_ID {
            return None;
        }
        decode(&self.open_bytes(AAD, id)?)
    }

    /// What [`SessionKey::seal_bytes`] sealed for `aad`; `None` for
    /// anything else. The caller bounds `id`'s length first.
    pub fn open_bytes(&self, aad: &[u8], id: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(id.trim()).ok()?;
        if bytes.len() < NONCE_LEN + TAG_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        self.cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad })
            .ok()
    }
}

/// Ids that opened recently, so that a session's every request does not
/// decrypt its id again. Only ids the key opened are kept, and an id maps to
/// what it seals forever, so a hit is what [`SessionKey::open`] would say.
/// Bounded: emptied when full.
#[derive(Default)]
pub struct OpenedIds {
    map: std::sync::Mutex<IdMap>,
}

/// Keys are ids the key opened: no client can pick them to collide.
type IdMap =
    std::collections::HashMap<Box<str>, std::sync::Arc<Token>, foldhash::fast::RandomState>;

/// Most ids [`OpenedIds`] keeps.
const OPENED_MAX: usize = 4096;

impl OpenedIds {
    /// [`SessionKey::open`], remembered.
    pub fn open(&self, key: &SessionKey, id: &str) -> Option<std::sync::Arc<Token>> {
        if let Some(t) = self.lock().get(id) {
            return Some(t.clone());
        }
        let token = std::sync::Arc::new(key.open(id)?);
        let mut map = self.lock();
        if map.len() >= OPENED_MAX {
            map.clear();
        }
        map.insert(id.into(), token.clone());
        Some(token)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IdMap> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

// Layout: version, kind, mount (u8 length + bytes), then per kind:
// Http: flag, u16 length + upstream session id; Local: 16-byte instance, u64 id;
// Pooled: u64 client;
// then the owner (its kind, and a caller's 32-byte digest; absent from ids of
// the first version),
// then the host's byte (absent from ids sealed before hosts were recorded),
// then the start, u64 Unix milliseconds (absent from ids sealed before starts
// were; only after a host's byte), then the hello (absent from ids sealed
// before hellos were; only after a start).
fn encode(token: &Token) -> Vec<u8> {
    let mount = &token.mount.as_bytes()[..token.mount.len().min(255)];
    let mut out = vec![VERSION];
    match &token.route {
        Route::Http { .. } => out.push(1),
        Route::Local { .. } => out.push(2),
        Route::Pooled { .. } => out.push(3),
    }
    out.push(mount.len() as u8);
    out.extend_from_slice(mount);
    match &token.route {
        Route::Http { upstream_session } => match upstream_session {
            Some(s) => {
                let s = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
                out.push(1);
                out.extend_from_slice(&(s.len() as u16).to_be_bytes());
                out.extend_from_slice(s);
            }
            None => out.push(0),
        },
        Route::Local { instance, id } => {
            out.extend_from_slice(instance);
            out.extend_from_slice(&id.to_be_bytes());
        }
        Route::Pooled { client } => out.extend_from_slice(&client.to_be_bytes()),
    }
    token.owner.encode(&mut out);
    // Each later part only after every earlier one: the tail is read by length.
    let host = token.host.unwrap_or_default();
    let started = token.started.or(token.hello.as_ref().map(|_| 0));
    if token.host.is_some() || started.is_some() {
        out.push(host.code());
    }
    if let Some(started) = started {
        out.extend_from_slice(&started.to_be_bytes());
    }
    if let Some(hello) = &token.hello {
        hello.encode(&mut out);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<Token> {
    let mut r = Reader(bytes);
    let version = r.u8()?;
    if version != VERSION && version != VERSION_V1 {
        return None;
    }
    let kind = r.u8()?;
    let mount_len = r.u8()? as usize;
    let mount = String::from_utf8(r.take(mount_len)?.to_vec()).ok()?;
    let route = match kind {
        1 => {
            let upstream_session = match r.u8()? {
                0 => None,
                1 => {
                    let len = u16::from_be_bytes(r.take(2)?.try_into().ok()?) as usize;
                    Some(String::from_utf8(r.take(len)?.to_vec()).ok()?)
                }
                _ => return None,
            };
            Route::Http { upstream_session }
        }
        2 => Route::Local {
            instance: r.take(16)?.try_into().ok()?,
            id: u64::from_be_bytes(r.take(8)?.try_into().ok()?),
        },
        3 => Route::Pooled {
            client: u64::from_be_bytes(r.take(8)?.try_into().ok()?),
        },
        _ => return None,
    };
    let owner = match version {
        VERSION_V1 => Owner::Open,
        _ => Owner::decode_from(&mut r.0)?,
    };
    let (host, started, hello) = match r.0 {
        [] => (None, None, None),
        [code] => (Some(HostKind::from_code(*code)), None, None),
        [code, rest @ ..] if rest.len() >= 8 => {
            let (started, tail) = rest.split_at(8);
            let hello = match tail {
                [] => None,
                tail => match Hello::decode(tail)? {
                    (hello, []) => Some(hello),
                    _ => return None,
                },
            };
            (
                Some(HostKind::from_code(*code)),
                Some(u64::from_be_bytes(started.try_into().ok()?)),
                hello,
            )
        }
        _ => return None,
    };
    Some(Token {
        mount,
        route,
        owner,
        host,
        started,
        hello,
    })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
}

#[cfg(test)]
mod tests;
