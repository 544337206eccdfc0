//! File descriptors: every client connection, upstream connection and
//! stdio pipe takes one. The soft limit is raised to the hard one at start,
//! and the default connection cap is derived from what results.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Descriptors kept back from client connections for the listener, logs,
/// overlay files and the like.
const RESERVE: u64 = 128;

/// The soft limit on open files before and after raising it to the hard
/// limit, and the hard limit (`None`: unlimited).
#[derive(Debug, Clone, Copy)]
pub struct FdLimits {
    pub before: Option<u64>,
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// Raise the soft `RLIMIT_NOFILE` to the hard limit, as far as allowed.
pub fn raise_fd_limit() -> FdLimits {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    let mut limits = FdLimits {
        before: current,
        soft: current,
        hard: maximum,
    };
    if current != maximum
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: maximum,
                maximum,
            },
        )
        .is_ok()
    {
        limits.soft = getrlimit(Resource::Nofile).current;
    }
    limits
}

/// The default `limits.max_connections`: half the descriptors the soft limit
/// leaves after a reserve (the other half is for the upstream connections
/// and stdio pipes those clients cause), at least 16.
pub(crate) fn default_max_connections() -> usize {
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(1 << 20);
    derive(soft)
}

fn derive(soft: u64) -> usize {
    let half = soft.saturating_sub(RESERVE) / 2;
    usize::try_from(half.max(16)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_cap_leaves_room() {
        assert_eq!(super::derive(1024), 448);
        assert_eq!(super::derive(256), 64);
        assert_eq!(super::derive(100), 16);
    }
}
