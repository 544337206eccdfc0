//! The messages waiting to be written to a message-oriented upstream, in the
//! order they were sent. Bounded in messages and bytes: an upstream that
//! stops reading makes new messages fail at once instead of the gateway
//! queueing without end. A message is always taken when nothing waits, however
//! large (its size is `limits.max_body_bytes`' business). Each message has a
//! number, so that a request whose requester gave up can be taken back while it
//! still waits, or told apart as already written.

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;
use tokio::sync::Notify;

/// Most messages waiting to be written to one upstream.
pub(crate) const MAX_QUEUED: usize = 256;
/// Most bytes waiting to be written to one upstream.
pub(crate) const MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// The queue was full: what was waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    pub messages: usize,
    pub bytes: usize,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<(u64, Bytes)>,
    bytes: usize,
    /// The number of the last message queued.
    last: u64,
    /// The number of the last message the writer took.
    taken: u64,
}

/// One upstream's write queue.
pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    ready: Notify,
    max_messages: usize,
    max_bytes: usize,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox::new(MAX_QUEUED, MAX_QUEUED_BYTES)
    }
}

impl Outbox {
    pub fn new(max_messages: usize, max_bytes: usize) -> Self {
        Outbox {
            queue: Mutex::default(),
            ready: Notify::new(),
            max_messages,
            max_bytes,
        }
    }

    /// Queue `message`; its number, or what already waits when it would not fit.
    pub fn push(&self, message: Bytes) -> Result<u64, Full> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let full = q.items.len() >= self.max_messages
            || (!q.items.is_empty() && q.bytes + message.len() > self.max_bytes);
        if full {
            return Err(Full {
                messages: q.items.len(),
                bytes: q.bytes,
            });
        }
        q.last += 1;
        let n = q.last;
        q.bytes += message.len();
        q.items.push_back((n, message));
        drop(q);
        self.ready.notify_one();
        Ok(n)
    }

    /// Take message `n` back if it still waits; whether it did.
    pub(crate) fn withdraw(&self, n: u64) -> bool {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if n <= q.taken {
            return false;
        }
        match q.items.iter().position(|(m, _)| *m == n) {
            Some(i) => {
                let (_, message) = q.items.remove(i).expect("found");
                q.bytes -= message.len();
                true
            }
            None => false,
        }
    }

    /// The next message to write, once there is one. Cancel safe.
    pub async fn next(&self) -> Bytes {
        loop {
            if let Some(message) = self.pop() {
                return message;
            }
            self.ready.notified().await;
        }
    }

    fn pop(&self) -> Option<Bytes> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let (n, message) = q.items.pop_front()?;
        q.bytes -= message.len();
        q.taken = n;
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_in_messages_and_bytes_and_withdrawable_until_taken() {
        let o = Outbox::new(3, 10);
        let big = Bytes::from(vec![b'x'; 64]);
        let a = o.push(big.clone()).expect("taken alone, however large");
        assert_eq!(
            o.push(Bytes::from_static(b"1")),
            Err(Full {
                messages: 1,
                bytes: 64
            })
        );
        assert_eq!(o.next().await, big);
        assert!(!o.withdraw(a), "already taken by the writer");
        let b = o.push(Bytes::from_static(b"one")).unwrap();
        let c = o.push(Bytes::from_static(b"two")).unwrap();
        let _d = o.push(Bytes::from_static(b"six")).unwrap();
        assert_eq!(o.push(Bytes::from_static(b"x")).unwrap_err().messages, 3);
        assert!(o.withdraw(c) && !o.withdraw(c));
        assert_eq!(&o.next().await[..], b"one");
        assert!(!o.withdraw(b));
        assert_eq!(&o.next().await[..], b"six");
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(20), o.next());
        assert!(waiting.await.is_err(), "nothing left");
    }
}
