//! [`Problem`]: one broken rule, where and why.

/// One broken rule: where (a key path such as `csp.connect_domains[1]`) and
/// why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub place: String,
    pub reason: String,
}

impl Problem {
    pub(super) fn new(place: impl Into<String>, reason: impl Into<String>) -> Self {
        Problem {
            place: place.into(),
            reason: reason.into(),
        }
    }
}
