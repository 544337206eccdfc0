//! The sealed `requestState` of a round: the parked request's key, the
//! request it was given for and when it expires, readable by this
//! gateway's session key only and bound to the mount.

use std::time::Duration;

use mcp_ui_model::session_id::SessionKey;
use mcp_ui_upstream::session::pool::digest;

/// What a sealed state is bound to (with the mount's name).
const AAD: &[u8] = b"mcp-ui-gateway/request-state/v1/";

/// What a state is bound to: the request's method and what it names.
pub(super) fn bound(method: &str, name: Option<&str>) -> u64 {
    digest([method.as_bytes(), name.unwrap_or_default().as_bytes()])
}

fn aad(mount: &str) -> Vec<u8> {
    let mut aad = AAD.to_vec();
    aad.extend_from_slice(mount.as_bytes());
    aad
}

/// The sealed state of parked request `key` of the mount named `mount`:
/// it, what it is bound to and when it expires, readable by the gateway's
/// `sealing` key only.
pub(super) fn seal(
    sealing: &SessionKey,
    mount: &str,
    key: u64,
    bound: u64,
    wait: Duration,
) -> String {
    let mut plain = Vec::with_capacity(24);
    plain.extend_from_slice(&key.to_be_bytes());
    plain.extend_from_slice(&bound.to_be_bytes());
    plain.extend_from_slice(
        &(mcp_ui_model::clock::unix_millis() + wait.as_millis() as u64).to_be_bytes(),
    );
    sealing.seal_bytes(&aad(mount), &plain)
}

/// The parked request a state names, if it opens, is unexpired and is
/// bound to `bound`.
pub(super) fn open(sealing: &SessionKey, mount: &str, state: &str, bound: u64) -> Option<u64> {
    let plain = sealing.open_bytes(&aad(mount), state)?;
    let word = |i: usize| {
        Some(u64::from_be_bytes(
            plain.get(i * 8..i * 8 + 8)?.try_into().ok()?,
        ))
    };
    let (key, sealed_bound, expires) = (word(0)?, word(1)?, word(2)?);
    (sealed_bound == bound && expires > mcp_ui_model::clock::unix_millis()).then_some(key)
}
