//! Requests per caller: a token bucket per caller and endpoint, so that
//! one caller cannot starve the others, and a bounded table of them. Pure:
//! the caller passes the time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// One caller's bucket: `per_minute` requests a minute, up to `per_minute`
/// at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket at `now`.
    pub fn full(per_minute: u32, now: Instant) -> Bucket {
        Bucket {
            tokens: f64::from(per_minute),
            at: now,
        }
    }

    /// Take one request at `now`: `Ok`, or how long until one may be taken.
    pub fn take(&mut self, per_minute: u32, now: Instant) -> Result<(), Duration> {
        self.take_many(1, per_minute, now)
    }

    /// Take `cost` requests at once at `now` (a batch): all of them, or
    /// none and how long until all may be taken. A cost above `per_minute`
    /// never fits; [`Bucket::fits`] says so first.
    pub fn take_many(&mut self, cost: u32, per_minute: u32, now: Instant) -> Result<(), Duration> {
        let rate = f64::from(per_minute) / 60.0;
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(f64::from(per_minute));
        self.at = now;
        let cost = f64::from(cost);
        if self.tokens >= cost {
            self.tokens -= cost;
            return Ok(());
        }
        let wait = (cost - self.tokens) / rate;
        Err(Duration::from_secs_f64(wait.max(0.001)))
    }

    /// Whether `cost` requests at once can ever be taken: at most a
    /// minute's worth.
    pub fn fits(cost: u32, per_minute: u32) -> bool {
        cost <= per_minute
    }

    /// When it was last taken from.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// Whether it has been full again since `now` (forgetting it loses nothing).
    pub fn is_full(&self, per_minute: u32, now: Instant) -> bool {
        let rate = f64::from(per_minute) / 60.0;
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens + elapsed * rate >= f64::from(per_minute)
    }
}

/// What a full table does with a key it has no bucket for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Forget one bucket to make room (it starts full again): no one is
    /// refused for want of room.
    ForgetOne,
    /// Refuse the new key for a minute: room is never made by forgetting a
    /// bucket a flood of new keys would empty.
    Refuse,
}

/// Buckets by key, at most `max` of them. Past it, the buckets full again
/// are swept (at most once a second, never on every request: a flood of new
/// keys costs no scan each), then [`WhenFull`] decides.
#[derive(Debug)]
pub struct Buckets<K> {
    buckets: HashMap<K, Bucket>,
    max: usize,
    when_full: WhenFull,
    swept: Option<Instant>,
}

impl<K: Hash + Eq + Clone> Buckets<K> {
    pub fn new(max: usize, when_full: WhenFull) -> Buckets<K> {
        Buckets {
            buckets: HashMap::new(),
            max,
            when_full,
            swept: None,
        }
    }

    /// Take `cost` of `key`'s requests at `now`, `per_minute` a minute, all
    /// or none: `Err` with how long until they may go.
    pub fn take(
        &mut self,
        key: K,
        cost: u32,
        per_minute: u32,
        now: Instant,
    ) -> Result<(), Duration> {
        if self.buckets.len() >= self.max && !self.buckets.contains_key(&key) {
            if self
                .swept
                .is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(1))
            {
                self.buckets.retain(|_, b| !b.is_full(per_minute, now));
                self.swept = Some(now);
            }
            if self.buckets.len() >= self.max {
                match self.when_full {
                    WhenFull::Refuse => return Err(Duration::from_secs(60)),
                    WhenFull::ForgetOne => {
                        if let Some(any) = self.buckets.keys().next().cloned() {
                            self.buckets.remove(&any);
                        }
                    }
                }
            }
        }
        self.buckets
            .entry(key)
            .or_insert_with(|| Bucket::full(per_minute, now))
            .take_many(cost, per_minute, now)
    }

    /// How many buckets it holds.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_rate_and_says_how_long_to_wait() {
        let t0 = Instant::now();
        let mut b = Bucket::full(60, t0);
        for _ in 0..60 {
            assert_eq!(b.take(60, t0), Ok(()));
        }
        let wait = b.take(60, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 1.0).abs() < 0.01, "{wait:?}");
        // A second later, one more.
        assert_eq!(b.take(60, t0 + Duration::from_secs(1)), Ok(()));
        assert!(b.take(60, t0 + Duration::from_secs(1)).is_err());
        assert!(!b.is_full(60, t0 + Duration::from_secs(30)));
        assert!(b.is_full(60, t0 + Duration::from_secs(61)));
        // Never more than a minute's worth at once.
        let mut idle = Bucket::full(2, t0);
        let later = t0 + Duration::from_secs(3600);
        assert!(idle.take(2, later).is_ok() && idle.take(2, later).is_ok());
        assert!(idle.take(2, later).is_err());
    }

    #[test]
    fn a_batch_is_taken_whole_or_not_at_all() {
        let t0 = Instant::now();
        let mut b = Bucket::full(5, t0);
        assert_eq!(b.take_many(4, 5, t0), Ok(()));
        // Two do not fit in the one left: refused, and nothing taken.
        let wait = b.take_many(2, 5, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 12.0).abs() < 0.01, "{wait:?}");
        assert_eq!(b.take(5, t0), Ok(()));
        assert!(b.take(5, t0).is_err());
        assert!(Bucket::fits(5, 5) && !Bucket::fits(6, 5));
    }

    #[test]
    fn a_full_table_forgets_or_refuses_and_sweeps_at_most_once_a_second() {
        let t0 = Instant::now();
        let mut forget = Buckets::new(2, WhenFull::ForgetOne);
        let mut refuse = Buckets::new(2, WhenFull::Refuse);
        for key in ["a", "b"] {
            assert_eq!(forget.take(key, 1, 1, t0), Ok(()));
            assert_eq!(refuse.take(key, 1, 1, t0), Ok(()));
        }
        // Neither bucket is full again: one is forgotten, or the new key refused.
        assert_eq!(forget.take("c", 1, 1, t0), Ok(()));
        assert_eq!(forget.len(), 2);
        assert_eq!(refuse.take("c", 1, 1, t0), Err(Duration::from_secs(60)));
        // A minute later both are full again and swept: room for the new key.
        let later = t0 + Duration::from_secs(61);
        assert_eq!(refuse.take("c", 1, 1, later), Ok(()));
        assert_eq!(refuse.len(), 1);
    }
}
