//! The memory the gateway may hold for upstream answers it reads whole (JSON
//! answers it rewrites or looks into), one budget for the whole process
//! (`limits.max_buffered_bytes`). An answer draws a [`Permit`] as it is read
//! and its bytes hold it until they are written to the client or dropped; an
//! answer that does not fit is refused rather than the process growing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;

/// Bytes of buffered answers held at once, across every request.
#[derive(Debug)]
pub struct Budget {
    max: usize,
    used: AtomicUsize,
}

/// Bytes drawn from a [`Budget`], given back when dropped (on every path:
/// an answer sent, an error, a client gone).
#[derive(Debug)]
pub struct Permit {
    budget: Arc<Budget>,
    held: usize,
}

impl Budget {
    pub fn new(max: usize) -> Arc<Budget> {
        Arc::new(Budget {
            max,
            used: AtomicUsize::new(0),
        })
    }

    /// The budget, in bytes.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Bytes held now.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// A permit for `bytes`, or `None` when they do not fit.
    pub fn try_take(self: &Arc<Self>, bytes: usize) -> Option<Permit> {
        let mut permit = Permit {
            budget: self.clone(),
            held: 0,
        };
        permit.try_grow(bytes).then_some(permit)
    }

    fn add(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.max)
            })
            .is_ok()
    }
}

impl Permit {
    /// Bytes this permit holds.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Hold at least `bytes`; `false` (and nothing more held) when the
    /// difference does not fit in the budget.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        let more = bytes.saturating_sub(self.held);
        if more == 0 {
            return true;
        }
        if !self.budget.add(more) {
            return false;
        }
        self.held = bytes;
        true
    }

    /// Hold exactly `bytes`, over the budget if need be: for bytes that exist
    /// already (a rewritten answer), so that the account stays true and the
    /// next answers wait for them.
    pub fn resize(&mut self, bytes: usize) {
        if bytes > self.held {
            self.budget
                .used
                .fetch_add(bytes - self.held, Ordering::AcqRel);
        } else {
            self.budget
                .used
                .fetch_sub(self.held - bytes, Ordering::AcqRel);
        }
        self.held = bytes;
    }
}

impl Permit {
    /// `bytes`, holding this permit until their last clone is dropped (once
    /// written to the client, or with a response never sent).
    pub fn hold(self, bytes: Bytes) -> Bytes {
        Bytes::from_owner(Held {
            bytes,
            _permit: self,
        })
    }
}

/// Bytes and the permit that accounts for them.
struct Held {
    bytes: Bytes,
    _permit: Permit,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.held, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_draw_from_one_budget_and_give_back_on_drop() {
        let budget = Budget::new(100);
        let a = budget.try_take(60).expect("fits");
        assert_eq!(budget.in_use(), 60);
        assert!(budget.try_take(41).is_none(), "60 + 41 is over 100");
        assert_eq!(budget.in_use(), 60, "a refusal holds nothing");
        let mut b = budget.try_take(40).expect("60 + 40 fits exactly");
        assert_eq!(budget.in_use(), 100);
        drop(a);
        assert_eq!(budget.in_use(), 40);
        assert!(b.try_grow(90));
        assert_eq!((b.held(), budget.in_use()), (90, 90));
        assert!(!b.try_grow(101), "alone over the budget");
        assert_eq!((b.held(), budget.in_use()), (90, 90));
        assert!(b.try_grow(10), "already held");
        b.resize(120);
        assert_eq!(
            budget.in_use(),
            120,
            "resize may go over, for bytes that exist"
        );
        assert!(budget.try_take(1).is_none());
        b.resize(5);
        assert_eq!(budget.in_use(), 5);
        drop(b);
        assert_eq!(budget.in_use(), 0);
        assert!(budget.try_take(100).is_some());
        assert_eq!(budget.in_use(), 0, "a permit dropped at once gives back");
        let held = budget.try_take(3).unwrap().hold(Bytes::from_static(b"abc"));
        let clone = held.clone();
        drop(held);
        assert_eq!((&clone[..], budget.in_use()), (&b"abc"[..], 3));
        drop(clone);
        assert_eq!(budget.in_use(), 0, "given back with the last clone");
    }

    #[test]
    fn concurrent_permits_never_exceed_the_budget() {
        let budget = Budget::new(1000);
        let peak = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (budget, peak) = (budget.clone(), peak.clone());
                s.spawn(move || {
                    for i in 0..2000 {
                        if let Some(mut p) = budget.try_take(100 + i % 200) {
                            let _ = p.try_grow(300);
                            peak.fetch_max(budget.in_use(), Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(budget.in_use(), 0);
        assert!(peak.load(Ordering::Relaxed) <= 1000);
    }
}
