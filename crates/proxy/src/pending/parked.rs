//! A table of things set aside under a random key until their owner comes
//! back for them (the 2026-07-28 rounds of `relay::rounds`), bounded in
//! count, all told and per owner (a caller). A leaf: it knows nothing of
//! what it holds.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Held things, by key.
pub struct Parked<T> {
    map: Mutex<HashMap<u64, Held<T>>>,
    max: usize,
    per_owner: usize,
}

struct Held<T> {
    owner: u64,
    /// When it will be dropped if its owner does not come back.
    until: Instant,
    value: T,
}

/// Why a thing was not set aside: a bound was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Its owner holds as many as it may.
    Owner {
        max: usize,
        /// Until the first of the owner's is dropped unless taken.
        retry_after: Duration,
    },
    /// The table holds as many as it may.
    All { max: usize, retry_after: Duration },
}

impl<T> Parked<T> {
    /// At most `max` things held, `per_owner` of one owner's.
    pub fn new(max: usize, per_owner: usize) -> Parked<T> {
        Parked {
            map: Mutex::default(),
            max,
            per_owner,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Held<T>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold `value` of `owner`'s until `until`, under a new key. At a bound
    /// the things nobody can take any more (`gone`) are forgotten first;
    /// `Err` gives `value` back, saying which bound held.
    pub fn insert(
        &self,
        owner: u64,
        until: Instant,
        value: T,
        gone: impl Fn(&T) -> bool,
    ) -> Result<u64, (T, Full)> {
        let mut map = self.lock();
        let mine = |map: &HashMap<u64, Held<T>>| map.values().filter(|h| h.owner == owner).count();
        if map.len() >= self.max || mine(&map) >= self.per_owner {
            map.retain(|_, h| !gone(&h.value));
        }
        // The sooner of the first that would be dropped of those counted.
        let first = |map: &HashMap<u64, Held<T>>, of: &dyn Fn(&Held<T>) -> bool| {
            let until = map.values().filter(|h| of(h)).map(|h| h.until).min();
            until.map_or(Duration::ZERO, |u| {
                u.saturating_duration_since(Instant::now())
            })
        };
        if mine(&map) >= self.per_owner {
            let retry_after = first(&map, &|h| h.owner == owner);
            let full = Full::Owner {
                max: self.per_owner,
                retry_after,
            };
            return Err((value, full));
        }
        if map.len() >= self.max {
            let retry_after = first(&map, &|_| true);
            return Err((
                value,
                Full::All {
                    max: self.max,
                    retry_after,
                },
            ));
        }
        loop {
            let key: u64 = rand::random();
            if key != 0 && !map.contains_key(&key) {
                map.insert(
                    key,
                    Held {
                        owner,
                        until,
                        value,
                    },
                );
                return Ok(key);
            }
        }
    }

    /// Take what `key` holds when `keep` says it is the right one to take:
    /// `Ok(None)` when nothing is held, `Err` with `keep`'s refusal.
    pub fn take_if<E>(
        &self,
        key: u64,
        keep: impl FnOnce(&T) -> Result<(), E>,
    ) -> Result<Option<T>, E> {
        let mut map = self.lock();
        let Some(h) = map.get(&key) else {
            return Ok(None);
        };
        keep(&h.value)?;
        Ok(map.remove(&key).map(|h| h.value))
    }

    /// Take what `key` holds.
    pub fn remove(&self, key: u64) -> Option<T> {
        self.lock().remove(&key).map(|h| h.value)
    }

    /// How many things are held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One owner holds at most its share, told when the first of its own
    /// is dropped; another owner still has room; what nobody can take is
    /// forgotten for room first; the table as a whole is bounded too.
    #[tokio::test(start_paused = true)]
    async fn owners_hold_their_share_and_the_table_its_bound() {
        let table: Parked<(u64, bool)> = Parked::new(4, 2);
        let gone = |v: &(u64, bool)| v.1;
        let at = |secs| Instant::now() + Duration::from_secs(secs);
        let first = table.insert(1, at(30), (1, false), gone).unwrap();
        table.insert(1, at(60), (1, false), gone).unwrap();
        let (back, full) = table.insert(1, at(90), (1, false), gone).unwrap_err();
        assert_eq!(back, (1, false));
        assert_eq!(
            full,
            Full::Owner {
                max: 2,
                retry_after: Duration::from_secs(30)
            }
        );
        // Another owner is not held back by the first one's share.
        table.insert(2, at(10), (2, true), gone).unwrap();
        table.insert(2, at(20), (2, false), gone).unwrap();
        // Its first can be taken by nobody: forgotten for room.
        table.insert(2, at(40), (2, false), gone).unwrap();
        assert_eq!(table.len(), 4);
        let (_, full) = table.insert(3, at(5), (3, false), gone).unwrap_err();
        assert!(matches!(full, Full::All { max: 4, .. }), "{full:?}");
        // Taken back, its place is free again.
        assert_eq!(table.remove(first), Some((1, false)));
        assert!(table.insert(1, at(90), (1, false), gone).is_ok());
        assert_eq!(table.take_if(first, |_| Ok::<_, ()>(())), Ok(None));
    }
}
