//! The one JSON helper the rewrites share: a member of an object, as an
//! object.

/// `parent[key]` as an object, made one if it is absent or not an object
/// (appended at the end when new, so existing keys keep their order).
pub(crate) fn object_at<'a>(
    parent: &'a mut serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> &'a mut serde_json::Map<String, serde_json::Value> {
    let slot = parent
        .entry(key)
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if !slot.is_object() {
        *slot = serde_json::Value::Object(Default::default());
    }
    match slot {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("made an object just above"),
    }
}
