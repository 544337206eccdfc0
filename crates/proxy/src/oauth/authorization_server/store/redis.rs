//! The Redis store every replica shares: a code redeemed is a key set once
//! (`SET … NX EXAT`); a family is a hash (its generation and pace) and each
//! user a sorted set of their families by expiry, both changed only by one
//! Lua script, which Redis runs atomically: two replicas redeeming the same
//! refresh token at once advance its generation once, and the other sees a
//! replay. Every key expires with what it names. A family Redis does not
//! hold is over (Redis emptied signs everyone out).

use super::record::{FamilyRef, Unavailable};
use mcp_ui_identity::authorization_server::family::{Family, Rotation, pace};

/// Keys in a shared Redis are prefixed with this.
const PREFIX: &str = "mcp-ui-gateway:oauth:";

/// How long a Redis command may take.
const REDIS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Opens, rotates and ends families. `KEYS[1]` is the family's hash,
/// `KEYS[2]` its user's set; `ARGV` the operation, the family's id, until
/// when its latest token lives, the time (s), the prefix of families' keys,
/// then the operation's own. The rules are `family::rotate`'s.
const FAMILIES: &str = r"
local family, user = KEYS[1], KEYS[2]
local op, id, untl, now, prefix = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local function keep()
  redis.call('ZADD', user, untl, id)
  local last = redis.call('ZRANGE', user, -1, -1, 'WITHSCORES')
  redis.call('EXPIREAT', user, math.max(untl, tonumber(last[2])))
end
local function finish()
  redis.call('DEL', family)
  redis.call('ZREM', user, id)
end
if op == 'open' then
  local per_user, now_ms = tonumber(ARGV[6]), ARGV[7]
  redis.call('ZREMRANGEBYSCORE', user, '-inf', now)
  local over = redis.call('ZCARD', user) - per_user + 1
  if over > 0 then
    local oldest = redis.call('ZPOPMIN', user, over)
    for i = 1, #oldest, 2 do redis.call('DEL', prefix .. oldest[i]) end
  end
  redis.call('DEL', family)
  redis.call('HSET', family, 'g', 0, 'p', now_ms)
  redis.call('EXPIREAT', family, untl)
  keep()
  return {'opened', 0}
elseif op == 'rotate' then
  local presented, now_ms = tonumber(ARGV[6]), tonumber(ARGV[7])
  local interval, tolerance = tonumber(ARGV[8]), tonumber(ARGV[9])
  local f = redis.call('HMGET', family, 'g', 'p')
  local g = tonumber(f[1])
  if not g then return {'ended', 0} end
  if g ~= presented then
    finish()
    return {'reused', 0}
  end
  local due = math.max(tonumber(f[2]), now_ms)
  if due > now_ms + tolerance then return {'wait', due - tolerance - now_ms} end
  redis.call('HSET', family, 'g', g + 1, 'p', due + interval)
  redis.call('EXPIREAT', family, untl)
  keep()
  return {'rotated', g + 1}
else
  finish()
  return {'ended', 0}
end
";

/// A Redis server the replicas share.
pub struct Redis {
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<redis::aio::MultiplexedConnection>>,
}

impl Redis {
    pub(super) fn at(url: &str) -> Result<Redis, String> {
        let client =
            redis::Client::open(url).map_err(|e| format!("authorization_server.store: {e}"))?;
        Ok(Redis {
            client,
            connection: tokio::sync::Mutex::new(None),
        })
    }

    pub(super) async fn first_use(
        &self,
        id: &str,
        until: u64,
        now: u64,
    ) -> Result<bool, Unavailable> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{PREFIX}code:{id}"))
            .arg(1)
            .arg("NX")
            .arg("EXAT")
            .arg(until.max(now + 1));
        let set: Option<String> = self.run(cmd).await?;
        Ok(set.is_some())
    }

    pub(super) async fn open(
        &self,
        family: &FamilyRef<'_>,
        per_user: u32,
        now_ms: u64,
    ) -> Result<(), Unavailable> {
        let _: (String, u64) = self
            .families(family, "open", now_ms, |cmd| {
                cmd.arg(per_user.max(1)).arg(now_ms);
            })
            .await?;
        Ok(())
    }

    pub(super) async fn rotate(
        &self,
        family: &FamilyRef<'_>,
        presented: u64,
        per_minute: u32,
        now_ms: u64,
    ) -> Result<Rotation, Unavailable> {
        let (interval, tolerance) = pace(per_minute);
        let (what, n): (String, u64) = self
            .families(family, "rotate", now_ms, |cmd| {
                cmd.arg(presented).arg(now_ms).arg(interval).arg(tolerance);
            })
            .await?;
        Ok(match what.as_str() {
            "rotated" => Rotation::Rotated(Family {
                generation: n,
                ..Family::new(now_ms)
            }),
            "wait" => Rotation::TooSoon(n),
            "reused" => Rotation::Reused,
            _ => Rotation::Ended,
        })
    }

    pub(super) async fn end(&self, family: &FamilyRef<'_>) -> Result<(), Unavailable> {
        let _: (String, u64) = self.families(family, "end", 0, |_| {}).await?;
        Ok(())
    }

    pub(super) async fn client_in_use(
        &self,
        client: &str,
        issued_at: u64,
        window: u64,
        now: u64,
    ) -> Result<bool, Unavailable> {
        let key = format!("{PREFIX}client:{client}");
        if issued_at.saturating_add(window) <= now && !self.exists(&key).await? {
            return Ok(false);
        }
        let mut cmd = redis::cmd("SET");
        cmd.arg(&key).arg(1).arg("EXAT").arg(now + window.max(1));
        let _: Option<String> = self.run(cmd).await?;
        Ok(true)
    }

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
        .map_err(|_| Unavailable::new("Redis did not answer in time"))?
        .map_err(|e| Unavailable::new(format!("Redis: {e}")))?;
        *held = Some(c.clone());
        Ok(c)
    }

    /// A failed command drops the connection: the next one connects again.
    async fn forget(&self) {
        *self.connection.lock().await = None;
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, Unavailable> {
        match self.answer(cmd).await? {
            Ok(v) => Ok(v),
            Err(e) => {
                self.forget().await;
                Err(Unavailable::new(format!("Redis: {e}")))
            }
        }
    }

    /// Redis's answer to `cmd`, an error included; `Err` when it gave none
    /// in time (the connection is then forgotten).
    async fn answer<T: redis::FromRedisValue>(
        &self,
        cmd: redis::Cmd,
    ) -> Result<redis::RedisResult<T>, Unavailable> {
        let mut c = self.connection().await?;
        match tokio::time::timeout(REDIS_TIMEOUT, cmd.query_async::<T>(&mut c)).await {
            Ok(answer) => Ok(answer),
            Err(_) => {
                self.forget().await;
                Err(Unavailable::new("Redis did not answer in time"))
            }
        }
    }

    /// [`FAMILIES`] run for `op` on `family`, `args` its own arguments: by
    /// its SHA-1 (`EVALSHA`, the script not sent again at every call), and
    /// whole (`EVAL`, which loads it) when Redis does not know it yet (a
    /// new or restarted server, `SCRIPT FLUSH`).
    async fn families<T: redis::FromRedisValue>(
        &self,
        family: &FamilyRef<'_>,
        op: &str,
        now_ms: u64,
        args: impl Fn(&mut redis::Cmd),
    ) -> Result<T, Unavailable> {
        let mut by_sha = script(family, op, now_ms, Some(families_sha()));
        args(&mut by_sha);
        match self.answer(by_sha).await? {
            Ok(v) => return Ok(v),
            Err(e) if e.kind() != redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                self.forget().await;
                return Err(Unavailable::new(format!("Redis: {e}")));
            }
            Err(_) => {}
        }
        let mut whole = script(family, op, now_ms, None);
        args(&mut whole);
        self.run(whole).await
    }

    async fn exists(&self, key: &str) -> Result<bool, Unavailable> {
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(key);
        let n: u64 = self.run(cmd).await?;
        Ok(n > 0)
    }
}

/// [`FAMILIES`]' SHA-1 in hex, by which Redis knows the script once loaded.
fn families_sha() -> &'static str {
    static SHA: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SHA.get_or_init(|| {
        use aws_lc_rs::digest::{SHA1_FOR_LEGACY_USE_ONLY, digest};
        let d = digest(&SHA1_FOR_LEGACY_USE_ONLY, FAMILIES.as_bytes());
        d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    })
}

/// [`FAMILIES`] for `op` on `family`, its common arguments set: `EVALSHA`
/// of `sha`, else `EVAL` of the script.
fn script(family: &FamilyRef<'_>, op: &str, now_ms: u64, sha: Option<&str>) -> redis::Cmd {
    let mut cmd = match sha {
        Some(sha) => {
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(sha);
            cmd
        }
        None => {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(FAMILIES);
            cmd
        }
    };
    cmd.arg(2)
        .arg(format!("{PREFIX}family:{}", family.id))
        .arg(format!("{PREFIX}user:{}", family.user))
        .arg(op)
        .arg(family.id)
        .arg(family.until.max(now_ms / 1000 + 1))
        .arg(now_ms / 1000)
        .arg(format!("{PREFIX}family:"));
    cmd
}
