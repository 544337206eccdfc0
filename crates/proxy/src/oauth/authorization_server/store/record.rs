//! What the store is asked about and answers with, shared by the memory
//! and the Redis store.

/// The store cannot record or answer (full, or unreachable); when it can
/// say, the seconds until it may.
#[derive(Debug)]
pub struct Unavailable {
    pub why: String,
    pub retry_after: Option<u64>,
}

impl Unavailable {
    pub(crate) fn new(why: impl Into<String>) -> Unavailable {
        Unavailable {
            why: why.into(),
            retry_after: None,
        }
    }
}

/// A family as a token names it.
pub(crate) struct FamilyRef<'a> {
    pub id: &'a str,
    /// The digest of its user's subject: what `sign_ins_per_user` counts by.
    pub user: &'a str,
    /// When its latest token expires: the entry is kept until then.
    pub until: u64,
}

/// How many entries the store holds, in this process's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remembered {
    pub codes: usize,
    pub families: usize,
}
