//! The response rewrite under the bundled demo overlays (`overlays/`), on
//! arbitrary upstream answers, mostly `tools/list` pages: it never panics,
//! what it produces from JSON is JSON, and on a `tools/list` page every tool
//! the overlays do not touch comes out byte for byte as it went in, in place.
#![no_main]

use std::borrow::Cow;
use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::OverlaySet;
use mcp_ui_overlay::overlay::load::load_dir;
use mcp_ui_rewrite::plan::{Rewrite, apply};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

const MOUNT: &str = "demo";

fn overlays() -> &'static OverlaySet {
    static SET: OnceLock<OverlaySet> = OnceLock::new();
    SET.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../overlays");
        load_dir(&dir).unwrap_or_else(|e| panic!("the demo overlays load: {e}"))
    })
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    result: Page<'a>,
}

#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, response)) = data.split_first() else {
        return;
    };
    let set = overlays();
    let rewrite = match selector % 8 {
        0..=3 => Rewrite::ToolsListPage { first: true },
        4 => Rewrite::ToolsListPage { first: false },
        5 => Rewrite::ToolCall("list_tasks".into()),
        6 => Rewrite::Initialize,
        _ => Rewrite::ResourcesList,
    };
    // Odd selectors: the upstream listed every name already (render tools
    // then yield to it).
    let listed_all = |_: &str| selector & 0x10 != 0;
    let applied = apply(
        set,
        MOUNT,
        &rewrite,
        response,
        &Target::default(),
        &listed_all,
    );
    let Some(body) = applied.body else {
        return;
    };
    let input_is_json = serde_json::from_slice::<Value>(response).is_ok();
    if input_is_json {
        serde_json::from_slice::<Value>(&body).unwrap_or_else(|e| {
            panic!(
                "JSON in, not JSON out ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        });
    }
    let Rewrite::ToolsListPage { .. } = rewrite else {
        return;
    };
    let listed = applied
        .upstream_tools
        .expect("a tools/list page reports its names");
    // An unambiguous page (no repeated keys): untouched tools are byte-identical.
    let (Ok(before), Ok(after)) = (
        serde_json::from_slice::<Envelope<'_>>(response),
        serde_json::from_slice::<Envelope<'_>>(&body),
    ) else {
        return;
    };
    if !input_is_json {
        return;
    }
    let mount = set
        .mount(MOUNT)
        .expect("the demo overlays have the demo mount");
    assert!(after.result.tools.len() >= before.result.tools.len());
    let mut named = 0;
    for (i, raw) in before.result.tools.iter().enumerate() {
        let name = serde_json::from_str::<Named<'_>>(raw.get())
            .ok()
            .and_then(|n| n.name);
        if name.is_some() {
            named += 1;
        }
        if name.as_deref().is_some_and(|n| mount.tool(n).is_some()) {
            continue;
        }
        assert_eq!(
            after.result.tools[i].get(),
            raw.get(),
            "tool {i} has no overlay and must pass unchanged"
        );
    }
    assert_eq!(listed.names.len(), named, "every named tool is reported");
});
