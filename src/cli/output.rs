//! What the commands print and how they end: lines on stdout that a closed
//! stdout does not make fatal, and the exit status of each kind of failure.

use std::process::ExitCode;

/// Exit status of `check` and `init` for a usage or configuration error (as
/// clap's own usage errors), apart from 1, "problems found"; and of `serve`
/// for flags that contradict each other.
pub const USAGE_ERROR: u8 = 2;

/// Print a line on stdout; a closed stdout (`| head`) is not an error worth
/// dying for, unlike with `println!`.
macro_rules! say {
    ($($arg:tt)*) => { $crate::cli::output::say_line(format_args!($($arg)*)) };
}
pub(crate) use say;

/// One line on stdout, flushed at once; a write that fails (a closed
/// stdout) is ignored.
pub fn say_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_fmt(line)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
}

/// A failure: the message on stderr, and exit status 1.
pub fn fail(message: &str) -> ExitCode {
    eprintln!("mcp-ui-gateway: {message}");
    ExitCode::FAILURE
}

/// A usage or configuration error: the message on stderr, and
/// [`USAGE_ERROR`].
pub fn usage_fail(message: &str) -> ExitCode {
    eprintln!("mcp-ui-gateway: {message}");
    ExitCode::from(USAGE_ERROR)
}
