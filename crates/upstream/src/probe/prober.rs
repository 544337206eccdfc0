//! On whose behalf a probe lists an upstream's tools.

/// Who lists an upstream's tools: named in the log when the stdio process a
/// probe started is ended, so that the end reads as the probe's own doing
/// rather than a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prober {
    /// The gateway at start, comparing the overlays with the tools.
    Startup,
    /// A readiness check (`/readyz`).
    Readiness,
    /// A command (`check`, `init`).
    Command,
}

impl Prober {
    /// What the log says when this probe ends the stdio process it started.
    pub fn ending(self) -> &'static str {
        match self {
            Prober::Startup => {
                "the startup probe ended the stdio upstream it started, having listed its tools"
            }
            Prober::Readiness => {
                "the readiness probe ended the stdio upstream it started, having listed its tools"
            }
            Prober::Command => {
                "the command ended the stdio upstream it started, having listed its tools"
            }
        }
    }
}
