//! `server/discover` for an upstream of the handshake era, written from its
//! answer to `initialize`: the capabilities it declared there (with the
//! listings the gateway answers for it, and the change notifications its
//! `subscriptions/listen` delivers), its instructions, and its `serverInfo`
//! where the revision puts it, in the result's `_meta`.

use serde_json::{Map, Value, json};

use super::answer::Hints;
use super::check::SUPPORTED;

/// What `subscriptions/listen` delivers for an upstream of the handshake
/// era: the changes of its tools (the upstream's and the overlays'), of the
/// resources (the upstream's and the widgets the overlays serve), of its
/// prompts when it announces them, and updates of the resources it lets
/// clients subscribe to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Announced {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    pub subscribe: bool,
}

impl Announced {
    /// From the upstream's `initialize` result.
    pub fn of(initialized: &Value) -> Announced {
        let caps = initialized.get("capabilities");
        let flag = |kind: &str, flag: &str| {
            caps.and_then(|c| c.get(kind)?.get(flag)?.as_bool()) == Some(true)
        };
        Announced {
            tools: caps.and_then(|c| c.get("tools")).is_some(),
            prompts: flag("prompts", "listChanged"),
            resources: true,
            subscribe: flag("resources", "subscribe"),
        }
    }
}

/// The `_meta` key a result of the revision names its server under.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `server/discover` result for an upstream whose `initialize` result
/// is `initialized`. The overlays' additions (the UI extension, resources)
/// are the caller's to apply, as for an upstream's own discover.
pub fn discover(initialized: &Value, hints: Hints) -> Value {
    let mut capabilities = match initialized.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    // The gateway answers these listings when the upstream has none.
    for kind in ["prompts", "resources"] {
        let entry = capabilities.entry(kind).or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
    }
    // Changes reach a client of the revision through `subscriptions/listen`,
    // which announces what the gateway can deliver.
    let announced = Announced::of(initialized);
    for (kind, flag, on) in [
        ("tools", "listChanged", announced.tools),
        ("prompts", "listChanged", announced.prompts),
        ("resources", "listChanged", announced.resources),
        ("resources", "subscribe", announced.subscribe),
    ] {
        if let Some(Value::Object(c)) = capabilities.get_mut(kind) {
            if on {
                c.insert(flag.into(), json!(true));
            } else if c.contains_key(flag) {
                c.insert(flag.into(), json!(false));
            }
        }
    }
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(SUPPORTED));
    result.insert("capabilities".into(), Value::Object(capabilities));
    if let Some(instructions) = initialized.get("instructions").filter(|i| i.is_string()) {
        result.insert("instructions".into(), instructions.clone());
    }
    result.insert("resultType".into(), json!("complete"));
    result.insert("ttlMs".into(), json!(hints.ttl_ms));
    result.insert("cacheScope".into(), json!(hints.scope.as_str()));
    let mut meta = match initialized.get("_meta") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    if let Some(info) = initialized.get("serverInfo") {
        meta.insert(META_SERVER_INFO.into(), info.clone());
    }
    if !meta.is_empty() {
        result.insert("_meta".into(), Value::Object(meta));
    }
    Value::Object(result)
}
