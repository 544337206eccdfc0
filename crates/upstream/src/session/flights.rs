//! One at a time per key: the revival of a session whose connection is
//! gone runs once, however many of its client's requests find it gone at
//! once; the others wait for it and use what it opened.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// Keys with work in flight.
pub struct Flights<K> {
    map: Arc<Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>>,
}

impl<K> Default for Flights<K> {
    fn default() -> Self {
        Flights {
            map: Arc::default(),
        }
    }
}

/// The turn of one key's work: the next waiter's once dropped.
pub struct Turn<K: Hash + Eq + Clone> {
    key: K,
    map: Arc<Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl<K: Hash + Eq + Clone> Flights<K> {
    /// Wait for `key`'s turn.
    pub async fn turn(&self, key: K) -> Turn<K> {
        let lock = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(key.clone()).or_default().clone()
        };
        let guard = lock.lock_owned().await;
        Turn {
            key,
            map: self.map.clone(),
            guard: Some(guard),
        }
    }

    /// How many keys have work in flight or waiting.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Hash + Eq + Clone> Drop for Turn<K> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.guard.take());
        // Nobody else holds or waits for this key: forget it.
        if map
            .get(&self.key)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_turn_at_a_time_per_key_and_nothing_left_behind() {
        let flights: Arc<Flights<u32>> = Arc::default();
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (flights, running, most) = (flights.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    let _turn = flights.turn(7).await;
                    let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        // Another key is not held up.
        drop(flights.turn(8).await);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(most.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(flights.is_empty(), "no key left behind");
    }
}
