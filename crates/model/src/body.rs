//! Bodies read whole, within bounds, whoever sends them: a client's request
//! to an endpoint (JSON-RPC, or a form to the authorization server), and an
//! answer the gateway fetched (an identity provider's, an upstream's
//! protected-resource metadata, a client's metadata document). One reader,
//! one rule: at most `limit` bytes, and the whole of it within `patience`,
//! plus, where the reader allows a slow sender (a client on a poor link), a
//! second for every `floor` bytes received so far. A body of known length
//! ends with its last byte, with no further wait.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use tokio::time::Instant;

/// How much of a body is read, and how long it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The most bytes read; a longer body is refused.
    pub limit: usize,
    /// How long the whole body may take.
    pub patience: Duration,
    /// More time earned by what has arrived: a second per this many bytes
    /// (`None`: none; the patience is the whole of it).
    pub floor_bytes_per_sec: Option<u64>,
}

impl Bounds {
    /// At most `limit` bytes within `patience`, however they come.
    pub fn within(limit: usize, patience: Duration) -> Bounds {
        Bounds {
            limit,
            patience,
            floor_bytes_per_sec: None,
        }
    }
}

/// Why a body was not read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// It is longer than [`Bounds::limit`].
    TooLarge { limit: usize },
    /// It stopped arriving, after `received` bytes.
    Stalled { received: usize, patience: Duration },
    /// The connection failed under it.
    Broken(String),
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cut::TooLarge { limit } => write!(f, "the body is larger than {limit} bytes"),
            Cut::Stalled { received, patience } => write!(
                f,
                "the body stalled after {received} bytes (allowed {} s)",
                patience.as_secs()
            ),
            Cut::Broken(why) => write!(f, "the body could not be read: {why}"),
        }
    }
}

/// The whole of `body` within `bounds`.
pub async fn read<B>(body: B, bounds: Bounds) -> Result<Bytes, Cut>
where
    B: Body<Data = Bytes>,
    B::Error: fmt::Display,
{
    let mut body = std::pin::pin!(body);
    let start = Instant::now();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut received = 0usize;
    loop {
        let earned = bounds.floor_bytes_per_sec.map_or(Duration::ZERO, |floor| {
            Duration::from_millis(received as u64 * 1000 / floor.max(1))
        });
        // A patience too long to be a time is no deadline at all.
        let frame = match start.checked_add(bounds.patience.saturating_add(earned)) {
            Some(deadline) => tokio::time::timeout_at(deadline, body.frame()).await,
            None => Ok(body.frame().await),
        };
        let frame = match frame {
            Err(_) => {
                return Err(Cut::Stalled {
                    received,
                    patience: bounds.patience,
                });
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(Cut::Broken(e.to_string())),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            received += data.len();
            if received > bounds.limit {
                return Err(Cut::TooLarge {
                    limit: bounds.limit,
                });
            }
            chunks.push(data);
        }
        if body.is_end_stream() {
            break;
        }
    }
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().unwrap_or_default(),
        _ => Bytes::from(chunks.concat()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    #[tokio::test]
    async fn a_body_is_read_whole_within_its_limit_and_refused_past_it() {
        let ok = read(
            Full::new(Bytes::from_static(b"hello")),
            Bounds::within(5, Duration::from_secs(1)),
        );
        assert_eq!(ok.await.unwrap(), Bytes::from_static(b"hello"));
        let long = read(
            Full::new(Bytes::from_static(b"hello!")),
            Bounds::within(5, Duration::from_secs(1)),
        );
        assert_eq!(long.await, Err(Cut::TooLarge { limit: 5 }));
    }

    /// One chunk, then nothing more, ever.
    struct Stalls(Option<Bytes>);

    impl Body for Stalls {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            match self.0.take() {
                Some(b) => std::task::Poll::Ready(Some(Ok(http_body::Frame::data(b)))),
                None => std::task::Poll::Pending,
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_is_cut_at_its_patience_plus_what_it_earned() {
        let bounds = Bounds {
            limit: 1 << 20,
            patience: Duration::from_secs(10),
            floor_bytes_per_sec: Some(1024),
        };
        let started = Instant::now();
        let cut = read(Stalls(Some(Bytes::from(vec![0u8; 2048]))), bounds).await;
        assert_eq!(
            cut,
            Err(Cut::Stalled {
                received: 2048,
                patience: Duration::from_secs(10)
            })
        );
        // 10 s of patience and 2 s earned by 2 KiB at 1 KiB a second.
        assert_eq!(started.elapsed(), Duration::from_secs(12));
    }
}
