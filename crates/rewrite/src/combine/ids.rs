//! Ids of the requests members send the client (sampling, elicitation,
//! roots): two members may both number theirs from 0, so the app hands the
//! client `"<member>~<the member's id as JSON>"` instead, and routes the
//! client's answer back by it with the member's own id restored.

use serde_json::Value;

/// The id the client sees for `member`'s request id `id`.
pub fn tag(member: usize, id: &Value) -> Value {
    Value::String(format!("{member}~{id}"))
}

/// The member and its own id, from an id [`tag`] made; `None` otherwise.
pub(crate) fn untag(id: &Value) -> Option<(usize, Value)> {
    let (member, own) = id.as_str()?.split_once('~')?;
    let member = member.parse().ok()?;
    Some((member, serde_json::from_str(own).ok()?))
}

/// A member's message with its request id tagged, when it is a request
/// (`method` and `id`); `None` for anything else (passed on as it is).
pub fn tag_request(member: usize, data: &[u8]) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(data).ok()?;
    let obj = v.as_object_mut()?;
    if !obj.contains_key("method") {
        return None;
    }
    let id = obj.get_mut("id")?;
    *id = tag(member, id);
    serde_json::to_vec(&v).ok()
}

/// The client's response to a tagged request: the member it is for, and the
/// response with the member's own id.
pub fn untag_response(data: &[u8]) -> Option<(usize, Vec<u8>)> {
    let mut v: Value = serde_json::from_slice(data).ok()?;
    let obj = v.as_object_mut()?;
    let (member, own) = untag(obj.get("id")?)?;
    obj.insert("id".into(), own);
    Some((member, serde_json::to_vec(&v).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip() {
        for id in [json!(0), json!("a~b"), json!(12345678901u64)] {
            assert_eq!(untag(&tag(3, &id)), Some((3, id)));
        }
        assert_eq!(untag(&json!(0)), None);
        assert_eq!(untag(&json!("x~1")), None);
        let req = br#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}"#;
        let tagged: Value = serde_json::from_slice(&tag_request(1, req).unwrap()).unwrap();
        assert_eq!(tagged["id"], "1~0");
        assert!(
            tag_request(1, br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).is_none()
        );
        assert!(tag_request(1, br#"{"jsonrpc":"2.0","id":0,"result":{}}"#).is_none());
        let answer = br#"{"jsonrpc":"2.0","id":"1~0","result":{"x":1}}"#;
        let (m, own) = untag_response(answer).unwrap();
        assert_eq!(m, 1);
        assert_eq!(serde_json::from_slice::<Value>(&own).unwrap()["id"], 0);
    }
}
