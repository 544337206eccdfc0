//! `RUST_LOG` across the gateway's crates. Each log line carries the module
//! path of the crate that wrote it (`mcp_ui_proxy::relay`,
//! `mcp_ui_upstream::upstream::stdio`, …). A directive naming
//! `mcp_ui_gateway`, the name every module logged under before the gateway
//! was split into crates, still reaches them: it is applied to each crate
//! as well, so `mcp_ui_gateway::relay=debug` is also
//! `mcp_ui_proxy::relay=debug`. (`mcp_ui=debug` names them all by prefix.)
//!
//! A bare `trace` leaves out the file watcher's line for each file event
//! (`notify` is kept at `debug`): the overlay directory's parent is watched,
//! so a log file written there would make an event of every line, and that
//! event a line, without end. Naming `notify` in `RUST_LOG` keeps what it says.

/// The crates whose modules log, beside this one.
const CRATES: [&str; 5] = [
    "mcp_ui_proxy",
    "mcp_ui_upstream",
    "mcp_ui_rewrite",
    "mcp_ui_overlay",
    "mcp_ui_wire",
];

/// `spec` (a `RUST_LOG` value) with each directive whose target is
/// `mcp_ui_gateway` or one of its paths followed by the same directive for
/// each crate of the gateway. A value with field filters (`{…}`), whose
/// commas are not all separators, is left as written.
pub fn directives(spec: &str) -> String {
    if spec.contains(['{', '"']) {
        return spec.to_owned();
    }
    let mut out: Vec<String> = Vec::new();
    for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        out.push(directive.to_owned());
        let Some(rest) = directive.strip_prefix("mcp_ui_gateway") else {
            continue;
        };
        if rest.is_empty() || rest.starts_with("::") || rest.starts_with(['=', '[']) {
            out.extend(CRATES.iter().map(|name| format!("{name}{rest}")));
        }
    }
    let names_the_watcher = out.iter().any(|d| {
        let target = d.split(['=', '[']).next().unwrap_or_default();
        target == WATCHER || target.starts_with(&format!("{WATCHER}::"))
    });
    if !names_the_watcher && out.iter().any(|d| is_bare_trace(d)) {
        out.push(format!("{WATCHER}=debug"));
    }
    out.join(",")
}

/// The crate that watches the overlay directory; it logs each file event at
/// `trace`.
const WATCHER: &str = "notify";

/// Whether `directive` is a level alone (no target, span or field) that
/// lets `trace` through: `trace`, `TRACE` or `5`.
fn is_bare_trace(directive: &str) -> bool {
    directive
        .parse::<tracing_subscriber::filter::LevelFilter>()
        .is_ok_and(|level| level == tracing_subscriber::filter::LevelFilter::TRACE)
}

#[cfg(test)]
mod tests {
    use super::directives;

    #[test]
    fn a_gateway_directive_reaches_every_crate() {
        assert_eq!(
            directives("warn,mcp_ui_gateway::relay=debug"),
            "warn,mcp_ui_gateway::relay=debug,mcp_ui_proxy::relay=debug,\
             mcp_ui_upstream::relay=debug,mcp_ui_rewrite::relay=debug,\
             mcp_ui_overlay::relay=debug,mcp_ui_wire::relay=debug"
        );
        assert_eq!(directives("mcp_ui_gateway").split(',').count(), 6);
        assert!(
            directives("mcp_ui_gateway[request]=trace").contains("mcp_ui_proxy[request]=trace")
        );
    }

    #[test]
    fn a_bare_trace_keeps_the_file_watcher_at_debug() {
        assert_eq!(directives("trace"), "trace,notify=debug");
        assert_eq!(
            directives("TRACE,hyper=info"),
            "TRACE,hyper=info,notify=debug"
        );
        assert_eq!(directives("5"), "5,notify=debug");
        // Named, it keeps what it is given; below trace there is nothing to keep.
        assert_eq!(directives("trace,notify=trace"), "trace,notify=trace");
        assert_eq!(
            directives("trace,notify::inotify=trace"),
            "trace,notify::inotify=trace"
        );
        assert_eq!(
            directives("trace,notifyish=info"),
            "trace,notifyish=info,notify=debug"
        );
        assert_eq!(directives("debug"), "debug");
        assert_eq!(directives("mcp_ui_proxy=trace"), "mcp_ui_proxy=trace");
    }

    #[test]
    fn other_directives_are_left_as_written() {
        assert_eq!(directives("info"), "info");
        assert_eq!(directives("hyper=debug, info"), "hyper=debug,info");
        // Another crate whose name only starts the same.
        assert_eq!(
            directives("mcp_ui_gateway_extra=debug"),
            "mcp_ui_gateway_extra=debug"
        );
        let fields = "mcp_ui_gateway[request{id=1,x=2}]=debug";
        assert_eq!(directives(fields), fields);
    }
}
