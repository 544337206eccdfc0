//! [`Warning`]: what a rewrite reports, for the log, instead of failing.

use std::fmt;

/// Something a rewrite skipped or could not do, for the log. The result it
/// concerns is still valid (left as the upstream sent it, where it matters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What it is about: a tool name, a key, a URI.
    pub subject: String,
    pub reason: String,
}

impl Warning {
    pub(crate) fn new(subject: impl Into<String>, reason: impl Into<String>) -> Self {
        Warning {
            subject: subject.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.reason)
    }
}
