//! A family of refresh tokens (one sign-in) as the store keeps it: the
//! generation of its one live token, and the pace of its refreshes. A
//! rotation advances the generation (a compare-and-set in the store); a
//! token of any other generation is a replay and ends the family (RFC 9700
//! §4.14.2, OAuth 2.1 §4.3.1).

/// One family of refresh tokens as the store keeps it: which generation may
/// be redeemed next, and how soon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The generation of the family's one live refresh token.
    pub generation: u64,
    /// When its next refresh is due, in milliseconds since the epoch (the
    /// theoretical arrival time of the generic cell rate algorithm): refreshes
    /// come at most `per_minute` a minute, in bursts of up to a minute's worth.
    pub pace_ms: u64,
    /// Taken on from a token another store issued (this process's memory
    /// began after it, or another replica's keeps it): its end must be
    /// remembered, or a token of it would be taken on again.
    pub adopted: bool,
    /// Ended, and remembered as such (only an adopted family needs to be).
    pub revoked: bool,
}

impl Family {
    /// A family begun at a code's redemption: its first token is
    /// generation 0.
    pub fn new(now_ms: u64) -> Family {
        Family {
            generation: 0,
            pace_ms: now_ms,
            adopted: false,
            revoked: false,
        }
    }
}

/// What redeeming a refresh token of generation `presented` does to its
/// family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    /// Redeemed: the family now, whose `generation` is the new token's.
    Rotated(Family),
    /// Refreshed too often: nothing changed, and the same token may be
    /// redeemed after this many milliseconds.
    TooSoon(u64),
    /// A token of another generation: one of two holders replays it (RFC
    /// 9700 §4.14.2, OAuth 2.1 §4.3.1). The family must end.
    Reused,
    /// The family ended (revoked, reused, or forgotten).
    Ended,
}

/// The rotation of `family` (`None`: the store does not know it) by a token
/// of generation `presented`, at `now_ms`, refreshes paced at `per_minute`.
/// A token `foreign` to the store (issued by another process's memory) names
/// a family that may have moved on there: an unknown family, or a later
/// generation than known, is taken on (adopted). Otherwise an unknown family
/// is over, and any generation but the family's latest is a replay.
pub fn rotate(
    family: Option<Family>,
    presented: u64,
    foreign: bool,
    now_ms: u64,
    per_minute: u32,
) -> Rotation {
    let f = match family {
        None if foreign => Family {
            generation: presented,
            pace_ms: now_ms,
            adopted: true,
            revoked: false,
        },
        None => return Rotation::Ended,
        Some(f) if f.revoked => return Rotation::Ended,
        Some(f) if foreign && presented > f.generation => Family {
            generation: presented,
            adopted: true,
            ..f
        },
        Some(f) if f.generation != presented => return Rotation::Reused,
        Some(f) => f,
    };
    let (interval, tolerance) = pace(per_minute);
    let due = f.pace_ms.max(now_ms);
    if due > now_ms + tolerance {
        return Rotation::TooSoon(due - tolerance - now_ms);
    }
    Rotation::Rotated(Family {
        generation: presented + 1,
        pace_ms: due + interval,
        ..f
    })
}

/// The interval between refreshes at `per_minute`, and how far ahead of it
/// a burst may run (a minute's worth at once), in milliseconds.
pub fn pace(per_minute: u32) -> (u64, u64) {
    let per_minute = u64::from(per_minute.max(1));
    let interval = (60_000 / per_minute).max(1);
    (interval, interval * (per_minute - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_rotates_once_per_generation_and_is_paced() {
        let mut f = Family::new(0);
        // A minute's worth at once (3 a minute here), then one every 20 s.
        for g in 0..3 {
            match rotate(Some(f), g, false, 1_000, 3) {
                Rotation::Rotated(next) => f = next,
                other => panic!("generation {g}: {other:?}"),
            }
        }
        assert_eq!(f.generation, 3);
        assert_eq!(
            rotate(Some(f), 3, false, 1_000, 3),
            Rotation::TooSoon(20_000)
        );
        assert!(matches!(
            rotate(Some(f), 3, false, 21_000, 3),
            Rotation::Rotated(Family { generation: 4, .. })
        ));
        // Paced or not, an older (or a later) generation is a replay.
        assert_eq!(rotate(Some(f), 2, false, 1_000, 3), Rotation::Reused);
        assert_eq!(rotate(Some(f), 7, false, 99_000, 3), Rotation::Reused);
        // A family unknown is over, unless another store issued the token;
        // from there, a later generation is taken on, never an older one.
        assert_eq!(rotate(None, 5, false, 0, 3), Rotation::Ended);
        match rotate(None, 5, true, 0, 3) {
            Rotation::Rotated(a) => assert!(a.adopted && a.generation == 6),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            rotate(Some(f), 9, true, 99_000, 3),
            Rotation::Rotated(Family {
                generation: 10,
                adopted: true,
                ..
            })
        ));
        assert_eq!(rotate(Some(f), 2, true, 99_000, 3), Rotation::Reused);
        let ended = Family {
            revoked: true,
            ..Family::new(0)
        };
        assert_eq!(rotate(Some(ended), 0, true, 0, 3), Rotation::Ended);
        assert_eq!(pace(30), (2_000, 58_000));
        assert_eq!(pace(0), (60_000, 0));
    }
}
