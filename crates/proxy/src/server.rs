//! The listener: connections accepted on one or more worker threads, each
//! served over HTTP/1.1 or HTTP/2 by [`crate::stack`]'s service under the
//! connection limits (head and idle deadlines, a cap with the longest-idle
//! connection closed first), and the graceful shutdown that drains them;
//! [`tls`]: the listener's certificate, rotated without a restart.

mod conn;
mod listen;
pub mod tls;

pub use crate::fd::raise_fd_limit;
pub use listen::Server;
pub use tls::ListenerTls;
