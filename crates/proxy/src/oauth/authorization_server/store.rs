//! What the authorization server remembers between requests, each in a
//! table of its own:
//! - the codes redeemed, each until it expires (60 s): a code is good once,
//!   and a second use revokes what the first gave (RFC 6749 §4.1.2);
//! - one entry per sign-in that holds refresh tokens (a family): the
//!   generation of its one live token, and the pace of its refreshes.
//!   Redeeming a refresh token advances the generation at once (a
//!   compare-and-set); a token of another generation is a replay and ends
//!   the family (RFC 9700 §4.14.2, OAuth 2.1 §4.3.1). A rotation replaces the
//!   entry, so however often a client refreshes, its sign-in costs one entry.
//!   A family the store does not hold is over: revocation removes it;
//! - when each registered client was last used, so that one unused for
//!   `registration.unused_client_secs` is forgotten.
//!
//! Two stores, by `authorization_server.store`:
//! - `memory` (the default): this process's memory, each table bounded
//!   ([`memory`]). A code replayed to another replica is not recognised
//!   there. A refresh token another process issued (before a restart, or
//!   another replica) is taken on as its family's latest when its family is
//!   unknown here or behind it (nothing here says otherwise), and the family
//!   is kept from then on; a client never seen since the start is given a
//!   full period.
//! - `redis://…`: a Redis server every replica shares ([`redis`]): a code is
//!   `SET … NX EXAT`, a family a hash changed by one script, atomically. A
//!   redemption it cannot record (Redis down) is refused, never allowed
//!   twice: sign-ins and refreshes stop while it is unreachable.
//!
//! Every user keeps at most `sign_ins_per_user` families: a sign-in past it
//! ends that user's family refreshed longest ago, so that no user can fill
//! what others need.

mod memory;
mod record;
mod redis;

use mcp_ui_identity::authorization_server::family::Rotation;

pub use memory::Memory;
pub(crate) use record::FamilyRef;
pub use record::{Remembered, Unavailable};
pub use redis::Redis;

pub enum Store {
    Memory(Memory),
    Redis(Redis),
}

impl Store {
    /// This process's memory, known as `id` in the refresh tokens it keeps.
    pub(super) fn memory(id: String, now: u64) -> Store {
        Store::Memory(Memory::new(
            id,
            now,
            memory::MAX_CODES,
            memory::MAX_FAMILIES,
        ))
    }

    /// What the refresh tokens it keeps the families of carry to name it:
    /// a memory store's id, nothing for a shared one.
    pub(super) fn id(&self) -> &str {
        match self {
            Store::Memory(m) => m.id(),
            Store::Redis(_) => "",
        }
    }

    /// A Redis store at `url` (`redis://`, `rediss://`, `unix://`); it is
    /// connected on first use, and again after a failure.
    pub(super) fn redis(url: &str) -> Result<Store, String> {
        Redis::at(url).map(Store::Redis)
    }

    /// Record the code `id` as redeemed until `until`: `Ok(true)` the first
    /// time, `Ok(false)` after.
    pub(super) async fn first_use(
        &self,
        id: &str,
        until: u64,
        now: u64,
    ) -> Result<bool, Unavailable> {
        match self {
            Store::Memory(m) => m.first_use(id, until, now),
            Store::Redis(r) => r.first_use(id, until, now).await,
        }
    }

    /// Begin `family`, its first token of generation 0, for a user who keeps
    /// at most `per_user` families.
    pub(super) async fn open(
        &self,
        family: &FamilyRef<'_>,
        per_user: u32,
        now_ms: u64,
    ) -> Result<(), Unavailable> {
        match self {
            Store::Memory(m) => {
                m.open(family, per_user, now_ms);
                Ok(())
            }
            Store::Redis(r) => r.open(family, per_user, now_ms).await,
        }
    }

    /// Redeem the token of generation `presented` of `family`, issued by
    /// the store `issued_by` (its [`Store::id`]), refreshes paced at
    /// `limits.0` a minute, a user keeping `limits.1` families.
    pub(super) async fn rotate(
        &self,
        family: &FamilyRef<'_>,
        presented: u64,
        issued_by: &str,
        limits: (u32, u32),
        now_ms: u64,
    ) -> Result<Rotation, Unavailable> {
        let (per_minute, per_user) = limits;
        match self {
            Store::Memory(m) => {
                Ok(m.rotate(family, presented, issued_by, per_minute, per_user, now_ms))
            }
            Store::Redis(r) => r.rotate(family, presented, per_minute, now_ms).await,
        }
    }

    /// End `family` (revoked, or replayed): none of its tokens is redeemed
    /// again. `issued_by` is the store that issued the token naming it.
    pub(super) async fn end(
        &self,
        family: &FamilyRef<'_>,
        issued_by: &str,
        now: u64,
    ) -> Result<(), Unavailable> {
        match self {
            Store::Memory(m) => {
                m.end(family, issued_by, now);
                Ok(())
            }
            Store::Redis(r) => r.end(family).await,
        }
    }

    /// Whether the registered client `client` (a digest of its id), issued
    /// at `issued_at`, has been used within the last `window` seconds (or
    /// was issued within them); if so, its use now is recorded for another
    /// `window`. A client found unused is not recorded: it stays forgotten.
    pub(super) async fn client_in_use(
        &self,
        client: &str,
        issued_at: u64,
        window: u64,
        now: u64,
    ) -> Result<bool, Unavailable> {
        match self {
            Store::Memory(m) => Ok(m.client_in_use(client, issued_at, window, now)),
            Store::Redis(r) => r.client_in_use(client, issued_at, window, now).await,
        }
    }

    /// How many codes and families this process's memory holds (none with
    /// Redis).
    pub(super) fn remembered(&self) -> Remembered {
        match self {
            Store::Memory(m) => m.remembered(),
            Store::Redis(_) => Remembered::default(),
        }
    }
}
