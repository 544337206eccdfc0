//! `subscriptions/listen` for an upstream of the handshake era: the
//! filter a client asks for, the part of it the gateway can honor, the
//! acknowledgement, and each notification tagged with the subscription's
//! id, never one the client did not ask for.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::check::Refusal;
use super::discover::Announced;
use mcp_ui_wire::jsonrpc::{self, code};

/// The `_meta` key naming the subscription a notification belongs to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The method of a subscription's first message.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// What a client listens for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    #[serde(default)]
    pub tools_list_changed: bool,
    #[serde(default)]
    pub prompts_list_changed: bool,
    #[serde(default)]
    pub resources_list_changed: bool,
    #[serde(default)]
    pub resource_subscriptions: Vec<String>,
}

impl Filter {
    /// The filter of a `subscriptions/listen` request's params, which must
    /// name one (`-32602` otherwise).
    pub fn of(params: Option<&RawValue>) -> Result<Filter, Refusal> {
        #[derive(Deserialize)]
        struct P {
            notifications: Option<Filter>,
        }
        let invalid = || Refusal {
            status: 400,
            code: code::INVALID_PARAMS,
            message:
                "subscriptions/listen needs params.notifications, the notifications to listen for"
                    .into(),
            data: None,
        };
        let p: P = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .ok_or_else(invalid)?;
        p.notifications.ok_or_else(invalid)
    }

    /// What of it the gateway delivers for an upstream that announces
    /// `announced`.
    pub fn honored(&self, announced: &Announced) -> Filter {
        Filter {
            tools_list_changed: self.tools_list_changed && announced.tools,
            prompts_list_changed: self.prompts_list_changed && announced.prompts,
            resources_list_changed: self.resources_list_changed && announced.resources,
            resource_subscriptions: match announced.subscribe {
                true => self.resource_subscriptions.clone(),
                false => Vec::new(),
            },
        }
    }

    /// What an acknowledgement (`message`) says is honored; `None` when it
    /// is no acknowledgement.
    pub fn acknowledged(message: &[u8]) -> Option<Filter> {
        #[derive(Deserialize)]
        struct P {
            notifications: Filter,
        }
        let m = jsonrpc::classify_one(message).ok()?;
        if m.method.as_deref()? != ACKNOWLEDGED {
            return None;
        }
        serde_json::from_str::<P>(m.params?.get())
            .ok()
            .map(|p| p.notifications)
    }

    /// What two subscriptions honor together (an app's, of its members').
    pub fn unite(&mut self, other: &Filter) {
        self.tools_list_changed |= other.tools_list_changed;
        self.prompts_list_changed |= other.prompts_list_changed;
        self.resources_list_changed |= other.resources_list_changed;
        for uri in &other.resource_subscriptions {
            if !self.resource_subscriptions.contains(uri) {
                self.resource_subscriptions.push(uri.clone());
            }
        }
    }

    /// As the acknowledgement says it: the flags that are set and the
    /// subscriptions, nothing else.
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                m.insert(key.into(), json!(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            m.insert(
                "resourceSubscriptions".into(),
                json!(self.resource_subscriptions),
            );
        }
        Value::Object(m)
    }

    /// The first message of the stream: what is honored, under the
    /// subscription's id (the listen request's).
    pub fn acknowledgement(&self, id: &RawValue) -> Bytes {
        let params = json!({
            "_meta": { META_SUBSCRIPTION_ID: raw_value(id) },
            "notifications": self.to_value(),
        });
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","method":"{ACKNOWLEDGED}","params":{params}}}"#
        ))
    }

    /// `message` as the subscription delivers it (tagged with its id), or
    /// `None` when it is nothing this filter asked for.
    pub fn deliver(&self, message: &[u8], id: &RawValue) -> Option<Bytes> {
        let m = jsonrpc::classify_one(message).ok()?;
        let wanted = match m.method.as_deref()? {
            "notifications/tools/list_changed" => self.tools_list_changed,
            "notifications/prompts/list_changed" => self.prompts_list_changed,
            "notifications/resources/list_changed" => self.resources_list_changed,
            "notifications/resources/updated" => jsonrpc::params_view(m.params)
                .uri
                .is_some_and(|u| self.resource_subscriptions.iter().any(|s| *s == *u)),
            _ => false,
        };
        if !wanted {
            return None;
        }
        let mut params: Map<String, Value> = m
            .params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(META_SUBSCRIPTION_ID.into(), raw_value(id));
        }
        let method = json!(m.method.as_deref()?);
        Some(Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","method":{method},"params":{}}}"#,
            Value::Object(params)
        )))
    }
}

/// The result that ends a subscription gracefully.
pub fn ended(id: &RawValue) -> Bytes {
    let result = json!({
        "_meta": { META_SUBSCRIPTION_ID: raw_value(id) },
        "resultType": "complete",
    });
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        id.get()
    ))
}

fn raw_value(id: &RawValue) -> Value {
    serde_json::from_str(id.get()).unwrap_or(Value::Null)
}
