//! `RUST_LOG` across the gateway's crates. Each log line carries the module
//! path of the crate that wrote it (`mcp_ui_proxy::relay`,
//! `mcp_ui_upstream::upstream::stdio`, …). A directive naming
//! `mcp_ui_gateway`, the name every module logged under before the gateway
//! was split into crates, still reaches them: it is applied to each crate
//! as well, so `mcp_ui_proxy::relay=debug` is also
//! `mcp_ui_proxy::relay=debug`. (`mcp_ui=debug` names them all by prefix.)

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
    out.join(",")
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
