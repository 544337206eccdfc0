//! A table of things set aside under a random key until their owner comes
//! back for them (the 2026-07-28 rounds of `relay::rounds`), bounded in
//! count. A leaf: it knows nothing of what it holds.

use std::collections::HashMap;
use std::sync::Mutex;

/// Held things, by key.
pub struct Parked<T> {
    map: Mutex<HashMap<u64, T>>,
    max: usize,
}

impl<T> Parked<T> {
    pub fn new(max: usize) -> Parked<T> {
        Parked {
            map: Mutex::default(),
            max,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, T>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold `value` under a new key; `Err` gives it back when the table is
    /// full.
    pub fn insert(&self, value: T) -> Result<u64, T> {
        let mut map = self.lock();
        if map.len() >= self.max {
            return Err(value);
        }
        loop {
            let key: u64 = rand::random();
            if key != 0 && !map.contains_key(&key) {
                map.insert(key, value);
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
        let Some(v) = map.get(&key) else {
            return Ok(None);
        };
        keep(v)?;
        Ok(map.remove(&key))
    }

    /// Take what `key` holds.
    pub fn remove(&self, key: u64) -> Option<T> {
        self.lock().remove(&key)
    }

    /// How many things are held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
