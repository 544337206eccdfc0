//! A JSON answer read whole before it is relayed, bounded in size, time and
//! the memory all such answers share: a planned rewrite needs all of it, and
//! so does the look for an in-band challenge.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::Response;
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use super::media::protocol_failure;
use crate::pending::finish::Finisher;
use crate::relay::context::Ctx;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};
use mcp_ui_upstream::upstream::budget::{Budget, Permit};
use mcp_ui_upstream::upstream::client::{BodyError, UpstreamBody};

/// The upstream's JSON answer `body` to request `id`, read whole and
/// finished by `finisher`, under `head`.
pub(super) async fn finished(
    cx: &Ctx<'_>,
    head: Response<()>,
    body: UpstreamBody,
    finisher: Finisher,
    id: &RawValue,
) -> Response<Body> {
    let gw = cx.gw;
    let limit = gw.limits.max_message_bytes;
    let (bytes, mut permit) = match read_whole(body, limit, &gw.upstreams.buffers).await {
        Ok(read) => read,
        Err(unread) => return unread.failure(cx).respond(Some(id)),
    };
    let bytes = match finisher.keeps(&bytes) {
        true => bytes,
        false => finisher.finish(&bytes).unwrap_or(bytes),
    };
    // Accounted until written to the client, or dropped with the response.
    permit.resize(bytes.len());
    head.map(|()| reply::full(permit.hold(bytes)))
}

/// Why an answer to read whole was not.
enum Unread {
    /// Over `limits.max_message_bytes`.
    TooLarge { limit: usize },
    /// It does not fit in what remains of the memory budget.
    NoRoom { at_least: usize, limit: usize },
    /// Still coming at the request's deadline.
    Timeout { secs: u64 },
    /// The connection failed.
    Failed(String),
}

impl Unread {
    fn failure(self, cx: &Ctx<'_>) -> Failure {
        match self {
            Unread::TooLarge { limit } => protocol_failure(
                cx,
                format!("its response exceeds {limit} bytes (limits.max_message_bytes)"),
            ),
            Unread::NoRoom { at_least, limit } => Failure::BufferFull {
                upstream: cx.upstream().to_owned(),
                at_least,
                limit,
            },
            Unread::Timeout { secs } => Failure::timeout(cx.upstream(), secs),
            Unread::Failed(e) => protocol_failure(cx, format!("could not read its response: {e}")),
        }
    }
}

/// A whole body, refused beyond `limit` bytes or beyond what `budget` has
/// left (an announced length is drawn before reading, so an answer that
/// cannot fit is refused unread); the permit holds its bytes. One frame is
/// kept as it came; several are gathered into one buffer of the announced
/// length, so the connection's read buffers they were cut from are freed as
/// it goes.
async fn read_whole(
    mut body: UpstreamBody,
    limit: usize,
    budget: &Arc<Budget>,
) -> Result<(Bytes, Permit), Unread> {
    let announced = http_body::Body::size_hint(&body)
        .exact()
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    if announced > limit {
        return Err(Unread::TooLarge { limit });
    }
    let no_room = |at_least| Unread::NoRoom {
        at_least,
        limit: budget.max(),
    };
    let mut permit = budget
        .try_take(announced)
        .ok_or_else(|| no_room(announced))?;
    let mut first: Option<Bytes> = None;
    let mut whole = BytesMut::new();
    let mut len = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| match e {
            BodyError::Timeout { secs } => Unread::Timeout { secs },
            BodyError::Read(e) => Unread::Failed(e.to_string()),
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        len += data.len();
        if len > limit {
            return Err(Unread::TooLarge { limit });
        }
        if !permit.try_grow(len) {
            return Err(no_room(len));
        }
        match first.take() {
            None if whole.is_empty() => first = Some(data),
            Some(f) => {
                whole.reserve(announced.max(len).min(limit));
                whole.extend_from_slice(&f);
                whole.extend_from_slice(&data);
            }
            None => whole.extend_from_slice(&data),
        }
    }
    Ok((first.unwrap_or_else(|| whole.freeze()), permit))
}
