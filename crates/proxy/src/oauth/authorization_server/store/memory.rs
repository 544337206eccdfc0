//! The memory store: this process's tables, each bounded, each entry
//! dropped in the order it expires, so that no request waits on a scan of a
//! whole table.
//!
//! - Codes (and identity assertions): at most [`MAX_CODES`] redeemed
//!   within their lifetime; past it a redemption is refused (503,
//!   `Retry-After` the seconds until the first expires), never allowed
//!   twice.
//! - Families: at most [`MAX_FAMILIES`]; past it, the family refreshed
//!   longest ago is forgotten (its next refresh is refused: sign in again).
//!   Each user keeps at most `sign_ins_per_user` of them.
//! - Clients' last uses: at most [`MAX_CLIENTS`]; past it, expired ones are
//!   swept at most once a minute, and a client not recorded counts as in use.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use super::record::{FamilyRef, Remembered, Unavailable};
use mcp_ui_identity::authorization_server::family::{self as rules, Family, Rotation};

/// Most codes remembered: sign-ins within one minute (each code lives 60 s).
pub(super) const MAX_CODES: usize = 100_000;
/// Most families remembered: sign-ins holding refresh tokens (about 250
/// bytes each).
pub(super) const MAX_FAMILIES: usize = 500_000;
/// Most registered clients whose last use is remembered.
const MAX_CLIENTS: usize = 1_000_000;

/// This process's memory.
pub struct Memory {
    codes: Mutex<Codes>,
    families: Mutex<Families>,
    clients: Mutex<Clients>,
    /// When this process started keeping them.
    started: u64,
    /// This store's random id, in the refresh tokens it issues: a token
    /// without it was issued by another process (before a restart, or
    /// another replica), whose families this one cannot know.
    id: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Memory {
    pub(super) fn new(id: String, started: u64, max_codes: usize, max_families: usize) -> Memory {
        Memory {
            codes: Mutex::new(Codes {
                max: max_codes,
                used: HashMap::new(),
                order: BTreeSet::new(),
            }),
            families: Mutex::new(Families {
                max: max_families,
                ..Families::default()
            }),
            clients: Mutex::new(Clients::default()),
            started,
            id,
        }
    }

    /// The id its refresh tokens carry.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    pub(super) fn first_use(&self, id: &str, until: u64, now: u64) -> Result<bool, Unavailable> {
        let mut c = lock(&self.codes);
        c.expire(now);
        if c.used.get(id).is_some_and(|u| *u > now) {
            return Ok(false);
        }
        if c.used.len() >= c.max {
            return Err(Unavailable {
                why: format!(
                    "the memory store holds {} codes redeemed within their minute",
                    c.max
                ),
                retry_after: c.order.first().map(|(u, _)| u.saturating_sub(now).max(1)),
            });
        }
        c.used.insert(id.to_owned(), until);
        c.order.insert((until, id.to_owned()));
        Ok(true)
    }

    pub(super) fn open(&self, family: &FamilyRef<'_>, per_user: u32, now_ms: u64) {
        let mut t = lock(&self.families);
        t.expire(now_ms / 1000);
        t.insert(family, Family::new(now_ms), per_user, now_ms / 1000);
    }

    pub(super) fn rotate(
        &self,
        family: &FamilyRef<'_>,
        presented: u64,
        issued_by: &str,
        per_minute: u32,
        per_user: u32,
        now_ms: u64,
    ) -> Rotation {
        let now = now_ms / 1000;
        let mut t = lock(&self.families);
        t.expire(now);
        let known = t.by_id.get(family.id).map(|e| e.family);
        let foreign = issued_by != self.id;
        let rotation = rules::rotate(known, presented, foreign, now_ms, per_minute);
        match rotation {
            Rotation::Rotated(next) if known.is_some() => t.update(family.id, next, family.until),
            Rotation::Rotated(adopted) => t.insert(family, adopted, per_user, now),
            Rotation::Reused => t.end(family.id),
            Rotation::TooSoon(_) | Rotation::Ended => {}
        }
        rotation
    }

    pub(super) fn end(&self, family: &FamilyRef<'_>, issued_by: &str, now: u64) {
        let mut t = lock(&self.families);
        t.expire(now);
        if t.by_id.contains_key(family.id) {
            t.end(family.id);
        } else if issued_by != self.id {
            // Ended before this store knew it: remembered, or a token of it
            // would be taken on later.
            let ended = Family {
                adopted: true,
                revoked: true,
                ..Family::new(0)
            };
            t.insert(family, ended, 0, now);
        }
    }

    pub(super) fn client_in_use(
        &self,
        client: &str,
        issued_at: u64,
        window: u64,
        now: u64,
    ) -> bool {
        let recent = |t: u64| t.saturating_add(window) > now;
        let mut c = lock(&self.clients);
        let seen = c.until.get(client).is_some_and(|until| *until > now);
        if !(seen || recent(issued_at) || recent(self.started)) {
            return false;
        }
        let known = c.until.contains_key(client);
        if !known && c.until.len() >= MAX_CLIENTS && now >= c.swept + 60 {
            c.until.retain(|_, u| *u > now);
            c.swept = now;
        }
        if known || c.until.len() < MAX_CLIENTS {
            c.until.insert(client.to_owned(), now + window);
        }
        true
    }

    pub(super) fn remembered(&self) -> Remembered {
        Remembered {
            codes: lock(&self.codes).used.len(),
            families: lock(&self.families).by_id.len(),
        }
    }
}

/// Codes and identity assertions redeemed, in the order they expire (a
/// code lives 60 s, an assertion until its own `exp`).
struct Codes {
    max: usize,
    used: HashMap<String, u64>,
    order: BTreeSet<(u64, String)>,
}

impl Codes {
    fn expire(&mut self, now: u64) {
        while let Some((until, _)) = self.order.first()
            && *until <= now
        {
            let Some((until, id)) = self.order.pop_first() else {
                break;
            };
            if self.used.get(&id) == Some(&until) {
                self.used.remove(&id);
            }
        }
    }
}

#[derive(Default)]
struct Families {
    max: usize,
    by_id: HashMap<String, Entry>,
    /// Every family by when it expires: the first expires next, and is the
    /// one refreshed longest ago.
    by_until: BTreeSet<(u64, String)>,
    /// Each user's families still live (not the ended ones kept).
    by_user: HashMap<String, Vec<String>>,
    /// When a family was last forgotten for room (said at most once a
    /// minute).
    warned: u64,
}

struct Entry {
    family: Family,
    until: u64,
    user: String,
}

impl Families {
    fn expire(&mut self, now: u64) {
        while let Some((until, _)) = self.by_until.first()
            && *until <= now
        {
            if let Some((_, id)) = self.by_until.pop_first() {
                self.forget(&id);
            }
        }
    }

    /// Remove `id` from every index.
    fn forget(&mut self, id: &str) {
        let Some(e) = self.by_id.remove(id) else {
            return;
        };
        self.by_until.remove(&(e.until, id.to_owned()));
        self.unlist(&e.user, id);
    }

    fn unlist(&mut self, user: &str, id: &str) {
        if let Some(list) = self.by_user.get_mut(user) {
            list.retain(|f| f != id);
            if list.is_empty() {
                self.by_user.remove(user);
            }
        }
    }

    /// End `id`: forgotten, but an adopted family is kept as ended until it
    /// expires (its older tokens would be taken on again otherwise).
    fn end(&mut self, id: &str) {
        let Some(e) = self.by_id.get_mut(id) else {
            return;
        };
        if !e.family.adopted {
            self.forget(id);
            return;
        }
        e.family.revoked = true;
        let user = e.user.clone();
        self.unlist(&user, id);
    }

    /// A new entry for `family` (replacing any), making room: the user's
    /// family refreshed longest ago ends past `per_user` live ones, and the
    /// table's is forgotten past its bound.
    fn insert(&mut self, family: &FamilyRef<'_>, state: Family, per_user: u32, now: u64) {
        self.forget(family.id);
        let live = !state.revoked;
        if live {
            let list = self.by_user.get(family.user).map(Vec::as_slice);
            if list.is_some_and(|l| l.len() >= per_user.max(1) as usize) {
                let oldest = list
                    .unwrap_or_default()
                    .iter()
                    .min_by_key(|id| self.by_id.get(*id).map_or(0, |e| e.until))
                    .cloned();
                if let Some(id) = oldest {
                    self.end(&id);
                }
            }
        }
        while self.by_id.len() >= self.max.max(1) {
            let Some((_, id)) = self.by_until.pop_first() else {
                break;
            };
            self.forget(&id);
            if now >= self.warned + 60 {
                self.warned = now;
                tracing::warn!(
                    max = self.max,
                    "the memory store of refresh tokens is full: the sign-in refreshed longest ago is forgotten (its next refresh asks it to sign in again); use a Redis store (authorization_server.store) for more"
                );
            }
        }
        self.by_until.insert((family.until, family.id.to_owned()));
        self.by_id.insert(
            family.id.to_owned(),
            Entry {
                family: state,
                until: family.until,
                user: family.user.to_owned(),
            },
        );
        if live {
            self.by_user
                .entry(family.user.to_owned())
                .or_default()
                .push(family.id.to_owned());
        }
    }

    /// The rotated `state` of the known family `id`, kept until `until`.
    fn update(&mut self, id: &str, state: Family, until: u64) {
        let Some(e) = self.by_id.get_mut(id) else {
            return;
        };
        let before = std::mem::replace(&mut e.until, until);
        e.family = state;
        self.by_until.remove(&(before, id.to_owned()));
        self.by_until.insert((until, id.to_owned()));
    }
}

/// Registered clients, until when each counts as in use.
#[derive(Default)]
struct Clients {
    until: HashMap<String, u64>,
    /// When expired ones were last swept.
    swept: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family<'a>(id: &'a str, user: &'a str, until: u64) -> FamilyRef<'a> {
        FamilyRef { id, user, until }
    }

    fn rotated(r: Rotation) -> u64 {
        match r {
            Rotation::Rotated(f) => f.generation,
            other => panic!("not rotated: {other:?}"),
        }
    }

    #[test]
    fn a_code_is_used_once_until_it_expires_and_a_full_table_says_when_to_come_back() {
        let m = Memory::new("m".into(), 0, 2, 10);
        assert!(m.first_use("c1", 100, 40).unwrap());
        assert!(!m.first_use("c1", 100, 50).unwrap());
        assert!(m.first_use("c2", 110, 50).unwrap());
        let full = m.first_use("c3", 120, 60).unwrap_err();
        assert_eq!(full.retry_after, Some(40), "{}", full.why);
        assert!(!m.first_use("c1", 100, 60).unwrap(), "still refused twice");
        // At 100 the first has expired, and made room; at 110 the second.
        assert!(m.first_use("c3", 160, 100).unwrap());
        assert!(m.first_use("c4", 160, 100).is_err());
        assert!(m.first_use("c1", 170, 110).unwrap());
        assert_eq!(m.remembered().codes, 2);
    }

    #[test]
    fn rotations_cost_no_entry_and_a_replay_ends_the_family() {
        let m = Memory::new("m".into(), 0, 10, 10);
        let f = family("f1", "ada", 1_000);
        m.open(&f, 5, 0);
        for g in 0..1_000 {
            assert_eq!(rotated(m.rotate(&f, g, "m", 60_000, 5, g)), g + 1);
        }
        assert_eq!(m.remembered().families, 1);
        assert_eq!(m.rotate(&f, 999, "m", 60_000, 5, 2_000), Rotation::Reused);
        assert_eq!(m.rotate(&f, 1_000, "m", 60_000, 5, 2_000), Rotation::Ended);
        assert_eq!(m.remembered().families, 0, "an ended family is forgotten");
        // Paced: 2 a minute, the same token good once its time has come.
        let g = family("f2", "ada", 1_000);
        m.open(&g, 5, 0);
        assert_eq!(rotated(m.rotate(&g, 0, "m", 2, 5, 0)), 1);
        assert_eq!(rotated(m.rotate(&g, 1, "m", 2, 5, 0)), 2);
        assert_eq!(m.rotate(&g, 2, "m", 2, 5, 0), Rotation::TooSoon(30_000));
        assert_eq!(rotated(m.rotate(&g, 2, "m", 2, 5, 30_000)), 3);
    }

    #[test]
    fn a_user_past_their_sign_ins_ends_their_oldest_and_a_full_table_forgets_the_stalest() {
        let m = Memory::new("m".into(), 0, 10, 4);
        for (i, id) in ["a1", "a2", "a3"].into_iter().enumerate() {
            m.open(&family(id, "ada", 100 + i as u64), 2, 0);
        }
        // Ada keeps two: a1 (refreshed longest ago) ended.
        assert_eq!(
            m.rotate(&family("a1", "ada", 200), 0, "m", 60, 2, 0),
            Rotation::Ended
        );
        assert_eq!(
            rotated(m.rotate(&family("a2", "ada", 200), 0, "m", 60, 2, 0)),
            1
        );
        // Others fill the table: the one refreshed longest ago (a3) goes;
        // no one is refused.
        m.open(&family("g1", "grace", 150), 2, 0);
        m.open(&family("g2", "grace", 160), 2, 0);
        m.open(&family("b1", "bob", 170), 2, 0);
        assert_eq!(m.remembered().families, 4);
        assert_eq!(
            m.rotate(&family("a3", "ada", 200), 0, "m", 60, 2, 0),
            Rotation::Ended
        );
        assert_eq!(
            rotated(m.rotate(&family("a2", "ada", 300), 1, "m", 60, 2, 0)),
            2
        );
        // Expired families leave in their order, with no scan.
        m.open(&family("b2", "bob", 400), 2, 250_000);
        assert_eq!(m.remembered().families, 2, "a2 (300) and b2 (400)");
    }

    #[test]
    fn a_family_another_process_issued_is_taken_on_and_its_end_is_kept() {
        let m = Memory::new("m".into(), 0, 10, 10);
        let f = family("old", "ada", 5_000);
        assert_eq!(
            m.rotate(&f, 7, "m", 60, 5, 1_000),
            Rotation::Ended,
            "its own"
        );
        // Issued before a restart (or by another replica): taken on.
        assert_eq!(rotated(m.rotate(&f, 7, "before", 60, 5, 1_000)), 8);
        // The thief's older token, taken on second: a replay.
        assert_eq!(m.rotate(&f, 6, "before", 60, 5, 1_000), Rotation::Reused);
        // Ended, and kept so: no token of it is taken on again.
        assert_eq!(m.rotate(&f, 9, "before", 60, 5, 1_000), Rotation::Ended);
        assert_eq!(m.rotate(&f, 8, "m", 60, 5, 1_000), Rotation::Ended);
        // Revoking a token of a family never seen keeps its end too.
        let g = family("older", "ada", 5_000);
        m.end(&g, "before", 1);
        assert_eq!(m.rotate(&g, 3, "before", 60, 5, 1_000), Rotation::Ended);
        assert_eq!(m.remembered().families, 2);
    }

    #[test]
    fn a_client_unused_for_its_window_is_forgotten_and_one_in_use_is_kept() {
        // Started at 1,000; clients count as in use for 100 s after a use.
        let m = Memory::new("m".into(), 1_000, 10, 10);
        // Issued before the start: given a full window from the start.
        assert!(m.client_in_use("old", 10, 100, 1_050));
        // Used at 1,050: in use until 1,150, and again when used.
        assert!(m.client_in_use("old", 10, 100, 1_140));
        assert!(m.client_in_use("old", 10, 100, 1_230));
        // Never used since the start, past the window: forgotten, and stays so.
        assert!(!m.client_in_use("idle", 10, 100, 1_101));
        assert!(!m.client_in_use("idle", 10, 100, 1_102));
        // Issued recently: in use; unused past its window: forgotten.
        assert!(m.client_in_use("new", 1_200, 100, 1_210));
        assert!(!m.client_in_use("new", 1_200, 100, 1_311));
    }
}
