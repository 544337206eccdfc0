//! Built-in widgets against content chosen to break them: markup, script
//! links, huge unclosed delimiters, extreme numbers; none of it runs.

use super::*;

/// The fixture's `echo` (its text back, unchanged) shown by built-in widgets, one mount
/// per kind: Markdown with markup and script links in it, 1.6 MB of unclosed inline
/// delimiters, a chart of the largest finite numbers, every kind with hostile records
/// (markup in text, `javascript:` and `data:` URLs where links and images go), a
/// descending sort, and each kind's empty state. Each must render, create no element
/// from the content's markup, link only http(s), and finish: before, the Markdown's
/// inline pattern backtracked over the paragraph from every `[`, and the chart's axis
/// overflowed to Infinity and its tick loop never ended.
#[test]
fn builtin_widgets_render_hostile_and_huge_content_and_run_none_of_it() {
    if !peers_ready() {
        return;
    }
    let _turn = turn();
    let json_kind = |kind: &str, view: &str| {
        format!(
            "[tools.echo]\nwidget = \"builtin:{kind}\"\nresult = {{ structured_from_text = true }}\nview = {view}\n"
        )
    };
    let mounts = [
        (
            "md",
            "[tools.echo]\nwidget = \"builtin:markdown\"\n".to_owned(),
        ),
        ("chart", json_kind("chart", "{ x = \"name\" }")),
        (
            "table",
            json_kind(
                "table",
                "{ columns = [\"name\", { key = \"site\", format = \"link\" }, { key = \"n\", format = \"number\" }], sort = \"n\" }",
            ),
        ),
        (
            "list",
            json_kind("list", "{ primary = \"name\", secondary = \"site\" }"),
        ),
        (
            "card",
            json_kind(
                "card",
                "{ title = \"name\", image = \"img\", fields = [{ key = \"site\", format = \"link\" }] }",
            ),
        ),
        (
            "kv",
            json_kind(
                "kv",
                "{ fields = [{ key = \"name\" }, { key = \"site\", format = \"link\" }] }",
            ),
        ),
    ];
    let (dir, mut gateway, base) = fixture_mounts(&mounts);
    let (md, chart) = (format!("{base}/md/mcp"), format!("{base}/chart/mcp"));
    let args_file = |name: &str, text: &str| {
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::json!({ "text": text }).to_string()).unwrap();
        format!("@{}", path.display())
    };

    // Markup and script links are text; only the http(s) link is a link.
    let hostile = "# Hostile\n\n<script>window.parent.postMessage('pwned', '*')</script> \
        <img src=x onerror=\"window.pwned = 1\"> <b onclick=\"alert(1)\">bold?</b>\n\n\
        [script](javascript:alert(1)) [data](data:text/html,<script>alert(1)</script>) \
        [fine](https://example.com/a) **strong** `code`";
    let hostile_args = args_file("hostile", hostile);
    for (selector, want) in [
        (
            ".md script, .md img, .md b, .md iframe, .md [onerror], .md [onclick], \
             .md a:not([href='https://example.com/a'])",
            0,
        ),
        (
            ".md a[href='https://example.com/a'], .md strong, .md code",
            3,
        ),
    ] {
        let (summary, _, _) = run_driver(
            &mut gateway,
            &md,
            "browser-builtin-markdown-hostile",
            &[
                "--tool",
                "echo",
                "--args",
                &hostile_args,
                "--count",
                selector,
            ],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        assert_eq!(summary["count"], want, "{selector}\n{}", context());
        let view_text = texts(&summary["view_text"]);
        assert!(
            view_text.contains("<script>") && view_text.contains("onerror="),
            "the markup shows as text: {view_text:?}"
        );
        let bad_console = console_errors(&summary);
        assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    }

    // 1.6 MB of inline delimiters that never close: rendered, as one paragraph
    // (before, the `[` alone kept the widget's thread busy for minutes).
    let huge = format!(
        "{} {} {} {} {}",
        "[".repeat(1_500_000),
        "*".repeat(40_000),
        "_".repeat(40_000),
        "`".repeat(40_000),
        "[a](".repeat(8_000)
    );
    let huge_args = args_file("huge", &huge);
    let started = Instant::now();
    let (summary, _, took) = run_driver(
        &mut gateway,
        &md,
        "browser-builtin-markdown-huge",
        &["--tool", "echo", "--args", &huge_args, "--count", ".md p"],
    );
    assert_eq!(
        summary["count"],
        1,
        "{}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
    eprintln!(
        "browser builtin:markdown, {} KB of unclosed delimiters: driver {:.1} s",
        huge.len() / 1000,
        took.as_secs_f64()
    );

    // The largest finite numbers, above and on both sides of zero: a bar each,
    // every axis label a number (before: the axis of the first overflowed to
    // Infinity and its tick loop never ended; the second drew NaN).
    for (name, rows) in [
        (
            "above",
            r#"[{"n":"big","v":1.7e308},{"n":"one","v":1},{"n":"max","v":1.7976931348623157e308}]"#,
        ),
        (
            "both",
            r#"[{"n":"big","v":1.7e308},{"n":"small","v":-1.7e308},{"n":"one","v":1}]"#,
        ),
    ] {
        let rows_args = args_file(name, rows);
        let (summary, _, _) = run_driver(
            &mut gateway,
            &chart,
            &format!("browser-builtin-chart-{name}"),
            &[
                "--tool", "echo", "--args", &rows_args, "--count", "svg rect",
            ],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        assert_eq!(summary["count"], 3, "a bar per row\n{}", context());
        let view_text = texts(&summary["view_text"]);
        assert!(
            !view_text.contains("Infinity")
                && !view_text.contains("NaN")
                && !view_text.contains('∞'),
            "every label is a number: {view_text:?}"
        );
        let bad_console = console_errors(&summary);
        assert!(bad_console.is_empty(), "browser errors: {bad_console:?}");
    }
    // Every kind, hostile records: markup in text, script and data URLs
    // where links and images go. Nothing is made of the markup, no link or
    // image but http(s) (and the image kinds' data:image/png) exists.
    let mount = |kind: &str| format!("{base}/{kind}/mcp");
    let hostile_rows = serde_json::json!([
        {
            "name": "<img src=x onerror=\"parent.postMessage('pwned', '*')\"><script>alert(1)</script>",
            "site": "javascript:alert(1)",
            "img": "javascript:alert(1)",
            "n": 2
        },
        {
            "name": "<a href=\"javascript:alert(1)\" onclick=\"alert(1)\">click</a>",
            "site": "https://example.com/x",
            "img": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+",
            "n": 1
        }
    ]);
    let nothing_made = "#root script, #root iframe, #root object, #root [onerror], \
        #root [onclick], #root [onload], #root img:not([src^='https:']):not([src^='data:image/png']), \
        #root a:not([href^='https:']):not([href^='http:'])";
    for kind in ["table", "list", "card", "kv", "chart"] {
        let data = if kind == "kv" {
            hostile_rows[0].clone()
        } else {
            hostile_rows.clone()
        };
        let args = args_file(&format!("{kind}-hostile"), &data.to_string());
        let (summary, _, _) = run_driver(
            &mut gateway,
            &mount(kind),
            &format!("browser-builtin-{kind}-hostile"),
            &["--tool", "echo", "--args", &args, "--count", nothing_made],
        );
        let context = || serde_json::to_string_pretty(&summary).unwrap_or_default();
        assert_eq!(summary["count"], 0, "{kind}\n{}", context());
        let view_text = texts(&summary["view_text"]);
        assert!(
            view_text.contains("<img src=x onerror="),
            "{kind}: the markup shows as text: {view_text:?}"
        );
        let bad_console = console_errors(&summary);
        assert!(
            bad_console.is_empty(),
            "{kind}: browser errors: {bad_console:?}"
        );
    }
    // The table's links that are links, and a descending sort.
    let rows = serde_json::json!([
        { "name": "alpha", "site": "https://example.com/a", "n": 1 },
        { "name": "gamma", "site": "https://example.com/g", "n": 3 },
        { "name": "beta", "site": "https://example.com/b", "n": 2 }
    ]);
    let args = args_file("table-sort", &rows.to_string());
    let (summary, _, _) = run_driver(
        &mut gateway,
        &mount("table"),
        "browser-builtin-table-descending",
        &[
            "--tool",
            "echo",
            "--args",
            &args,
            "--click",
            "th:nth-child(3) button",
            "--expect",
            "Sorted by N, descending.",
            "--count",
            "#root a[href^='https://example.com/']",
        ],
    );
    assert_eq!(
        summary["count"],
        3,
        "{}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
    let view_text = texts(&summary["view_text"]);
    let at = |name: &str| {
        view_text
            .find(name)
            .unwrap_or_else(|| panic!("{name} in {view_text:?}"))
    };
    assert!(
        at("gamma") < at("beta") && at("beta") < at("alpha"),
        "sorted by n, descending: {view_text:?}"
    );
    // 40,000 rows: the first 500 drawn, the count said, the rest on request.
    let many: Vec<serde_json::Value> = (0..40_000)
        .map(|i| serde_json::json!({ "name": format!("row {i}"), "site": "https://example.com/r", "n": i }))
        .collect();
    let args = args_file("table-many", &serde_json::Value::Array(many).to_string());
    let (summary, _, took) = run_driver(
        &mut gateway,
        &mount("table"),
        "browser-builtin-table-many",
        &[
            "--tool",
            "echo",
            "--args",
            &args,
            "--expect",
            "Showing 500 of 40",
            "--count",
            "#root tbody tr",
        ],
    );
    let view_text = texts(&summary["view_text"]);
    assert_eq!(summary["count"], 500, "{view_text:.300}");
    assert!(view_text.contains("40000 rows"), "{view_text:.300}");
    eprintln!(
        "browser builtin:table, 40,000 rows: driver {:.1} s",
        took.as_secs_f64()
    );
    // Each kind's empty state.
    for (kind, data) in [
        ("table", "[]"),
        ("list", "[]"),
        ("card", "[]"),
        ("chart", "[]"),
        ("kv", "{}"),
    ] {
        let args = args_file(&format!("{kind}-empty"), data);
        let (summary, _, _) = run_driver(
            &mut gateway,
            &mount(kind),
            &format!("browser-builtin-{kind}-empty"),
            &[
                "--tool",
                "echo",
                "--args",
                &args,
                "--expect",
                "Nothing to show.",
            ],
        );
        let bad_console = console_errors(&summary);
        assert!(
            bad_console.is_empty(),
            "{kind}: browser errors: {bad_console:?}"
        );
    }

    stop_gateway(gateway);
    eprintln!(
        "browser builtin widgets against hostile content: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
