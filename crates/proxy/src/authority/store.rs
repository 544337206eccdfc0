//! What the authorization server remembers between requests: the codes
//! and refresh tokens already redeemed (each is good once: a second use is
//! an attack, RFC 6749 §4.1.2 and OAuth 2.1 §4.3.1), and the families of
//! refresh tokens revoked. Each entry is kept until what it names would
//! have expired anyway.
//!
//! Two stores, by `authorization_server.store`:
//! - `memory` (the default): this process's memory. A code or refresh token
//!   replayed to another replica, or after a restart, is not recognised as
//!   used; the bound is the code's lifetime (60 s) and, for refresh tokens,
//!   their family's.
//! - `redis://…`: a Redis server every replica shares (`SET … NX EXAT`, one
//!   round trip a redemption). A redemption it cannot record (Redis down) is
//!   refused, never allowed twice: sign-ins stop while it is unreachable.
//!
//! Both also keep when each registered client was last used, so that one
//! unused for `registration.unused_client_secs` is forgotten. The memory
//! store knows nothing from before its start: a client it has not seen is
//! given a full period from then, so a restart never forgets a client in use.

use std::collections::HashMap;
use std::sync::Mutex;

/// Most entries kept; past it, expired ones are dropped, and if none has
/// expired the store refuses (a redemption it cannot record is refused,
/// never allowed twice).
const MAX_ENTRIES: usize = 1_000_000;

pub enum Store {
    Memory(Memory),
    Redis(Redis),
}

/// The store cannot record or answer (full, or unreachable).
#[derive(Debug)]
pub struct Unavailable(pub String);

/// Keys in a shared Redis are prefixed with this.
const PREFIX: &str = "mcp-ui-gateway:oauth:";

impl Store {
    pub(super) fn memory(now: u64) -> Store {
        Store::Memory(Memory {
            used: Mutex::new(HashMap::new()),
            revoked: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
            started: now,
        })
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
        let recent = |t: u64| t.saturating_add(window) > now;
        match self {
            Store::Memory(m) => {
                let mut map = m.clients.lock().unwrap_or_else(|e| e.into_inner());
                let seen = map.get(client).is_some_and(|until| *until > now);
                if !(seen || recent(issued_at) || recent(m.started)) {
                    return Ok(false);
                }
                if map.len() >= MAX_ENTRIES {
                    map.retain(|_, u| *u > now);
                }
                if map.len() < MAX_ENTRIES {
                    map.insert(client.to_owned(), now + window);
                }
                Ok(true)
            }
            Store::Redis(r) => {
                let key = format!("{PREFIX}client:{client}");
                if !recent(issued_at) && !r.exists(&key).await? {
                    return Ok(false);
                }
                let mut cmd = redis::cmd("SET");
                cmd.arg(&key).arg(1).arg("EXAT").arg(now + window.max(1));
                let _: Option<String> = r.run(cmd).await?;
                Ok(true)
            }
        }
    }

    /// A Redis store at `url` (`redis://`, `rediss://`, `unix://`); it is
    /// connected on first use, and again after a failure.
    pub(super) fn redis(url: &str) -> Result<Store, String> {
        let client =
            redis::Client::open(url).map_err(|e| format!("authorization_server.store: {e}"))?;
        Ok(Store::Redis(Redis {
            client,
            connection: tokio::sync::Mutex::new(None),
        }))
    }

    /// Record `id` as used until `until`: `Ok(true)` the first time,
    /// `Ok(false)` after.
    pub(super) async fn first_use(
        &self,
        id: &str,
        until: u64,
        now: u64,
    ) -> Result<bool, Unavailable> {
        match self {
            Store::Memory(m) => insert(&m.used, id, until, now)
                .map_err(|_| Unavailable("the store of redeemed codes is full".into())),
            Store::Redis(r) => r.set_once(&format!("{PREFIX}used:{id}"), until, now).await,
        }
    }

    /// Revoke the family `id` until `until`.
    pub(super) async fn revoke(
        &self,
        family: &str,
        until: u64,
        now: u64,
    ) -> Result<(), Unavailable> {
        match self {
            Store::Memory(m) => {
                let _ = insert(&m.revoked, family, until, now);
                Ok(())
            }
            Store::Redis(r) => r
                .set_once(&format!("{PREFIX}revoked:{family}"), until, now)
                .await
                .map(|_| ()),
        }
    }

    pub(super) async fn is_revoked(&self, family: &str, now: u64) -> Result<bool, Unavailable> {
        match self {
            Store::Memory(m) => {
                let map = m.revoked.lock().unwrap_or_else(|e| e.into_inner());
                Ok(map.get(family).is_some_and(|until| *until > now))
            }
            Store::Redis(r) => r.exists(&format!("{PREFIX}revoked:{family}")).await,
        }
    }
}

/// This process's memory.
pub struct Memory {
    used: Mutex<HashMap<String, u64>>,
    revoked: Mutex<HashMap<String, u64>>,
    /// Registered clients, until when each counts as in use.
    clients: Mutex<HashMap<String, u64>>,
    /// When this process started keeping them.
    started: u64,
}

/// A Redis server the replicas share.
pub struct Redis {
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<redis::aio::MultiplexedConnection>>,
}

/// How long a Redis command may take.
const REDIS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

impl Redis {
    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, Unavailable> {
        let mut held = self.connection.lock().await;
        if let Some(c) = held.as_ref() {
            return Ok(c.clone());
        }
        let c = tokio::time::timeout(
            REDIS_TIMEOUT,
            self.client.get_multiplexed_async_connection(),
        )
        .await
        .map_err(|_| Unavailable("Redis did not answer in time".into()))?
        .map_err(|e| Unavailable(format!("Redis: {e}")))?;
        *held = Some(c.clone());
        Ok(c)
    }

    /// A failed command drops the connection: the next one connects again.
    async fn forget(&self) {
        *self.connection.lock().await = None;
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, Unavailable> {
        let mut c = self.connection().await?;
        match tokio::time::timeout(REDIS_TIMEOUT, cmd.query_async::<T>(&mut c)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                self.forget().await;
                Err(Unavailable(format!("Redis: {e}")))
            }
            Err(_) => {
                self.forget().await;
                Err(Unavailable("Redis did not answer in time".into()))
            }
        }
    }

    /// `SET key 1 NX EXAT until`: whether it was set now.
    async fn set_once(&self, key: &str, until: u64, now: u64) -> Result<bool, Unavailable> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key)
            .arg(1)
            .arg("NX")
            .arg("EXAT")
            .arg(until.max(now + 1));
        let set: Option<String> = self.run(cmd).await?;
        Ok(set.is_some())
    }

    async fn exists(&self, key: &str) -> Result<bool, Unavailable> {
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(key);
        let n: u64 = self.run(cmd).await?;
        Ok(n > 0)
    }
}

/// The memory store is full of live entries.
#[derive(Debug)]
struct Full;

fn insert(map: &Mutex<HashMap<String, u64>>, id: &str, until: u64, now: u64) -> Result<bool, Full> {
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(u) = map.get(id)
        && *u > now
    {
        return Ok(false);
    }
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, u| *u > now);
        if map.len() >= MAX_ENTRIES {
            return Err(Full);
        }
    }
    map.insert(id.to_owned(), until);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_id_is_used_once_until_it_expires() {
        let s = Store::memory(0);
        assert!(s.first_use("c1", 100, 10).await.unwrap());
        assert!(!s.first_use("c1", 100, 20).await.unwrap());
        assert!(s.first_use("c1", 200, 100).await.unwrap());
        s.revoke("f1", 50, 10).await.unwrap();
        assert!(s.is_revoked("f1", 40).await.unwrap());
        assert!(!s.is_revoked("f1", 50).await.unwrap());
    }

    #[tokio::test]
    async fn a_client_unused_for_its_window_is_forgotten_and_one_in_use_is_kept() {
        // Started at 1,000; clients count as in use for 100 s after a use.
        let s = Store::memory(1_000);
        // Issued before the start: given a full window from the start.
        assert!(s.client_in_use("old", 10, 100, 1_050).await.unwrap());
        // Used at 1,050: in use until 1,150, and again when used.
        assert!(s.client_in_use("old", 10, 100, 1_140).await.unwrap());
        assert!(s.client_in_use("old", 10, 100, 1_230).await.unwrap());
        // Never used since the start, past the window: forgotten, and stays so.
        assert!(!s.client_in_use("idle", 10, 100, 1_101).await.unwrap());
        assert!(!s.client_in_use("idle", 10, 100, 1_102).await.unwrap());
        // Issued recently: in use; unused past its window: forgotten.
        assert!(s.client_in_use("new", 1_200, 100, 1_210).await.unwrap());
        assert!(!s.client_in_use("new", 1_200, 100, 1_311).await.unwrap());
    }
}
