//! The upstream protected-resource metadata the gateway serves, one document
//! per mount, fetched at most once per TTL however many hosts ask for it:
//! what differs between answers (the `resource` each names, from the
//! request's origin) is written into each answer, never stored. The document
//! is kept serialised around that one value ([`Template`]), so an answer is
//! three copies.
//!
//! Entries are bounded by the number of mounts. A document expires after
//! [`DOC_TTL`]; "the upstream has none" (or could not be asked) after the
//! much shorter [`MISS_TTL`]. Concurrent requests for one mount wait for one
//! fetch instead of each starting their own.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value};
use tokio::time::Instant;

/// How long a fetched document is served from memory.
pub(crate) const DOC_TTL: Duration = Duration::from_secs(300);
/// How long a fetch that found no document is remembered.
pub(crate) const MISS_TTL: Duration = Duration::from_secs(5);

/// An upstream's metadata document, ready to be answered.
pub(crate) type Doc = Arc<Template>;

/// A metadata document serialised around its `resource` value: the members
/// before it (all of them when the upstream gave none, so that it comes
/// last), and those after it.
#[derive(Debug, PartialEq, Eq)]
pub struct Template {
    before: Bytes,
    after: Bytes,
}

impl Template {
    /// The document's every member but `resource`, in order, kept as bytes.
    pub fn new(doc: &Map<String, Value>) -> Template {
        let member = |out: &mut Vec<u8>, k: &String, v: &Value| {
            out.push(b',');
            serde_json::to_writer(&mut *out, k).expect("a string serialises");
            out.push(b':');
            serde_json::to_writer(&mut *out, v).expect("a JSON value serialises");
        };
        // Each member is written with a leading comma; the one `before`
        // starts with is the brace.
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut seen = false;
        for (k, v) in doc {
            match (k.as_str(), seen) {
                ("resource", _) => seen = true,
                (_, false) => member(&mut before, k, v),
                (_, true) => member(&mut after, k, v),
            }
        }
        before.extend_from_slice(br#","resource":"#);
        before[0] = b'{';
        after.push(b'}');
        Template {
            before: before.into(),
            after: after.into(),
        }
    }

    /// The document with `resource` set (in its place, or last). Pure.
    pub(crate) fn with_resource(&self, resource: &str) -> Bytes {
        let value = serde_json::to_vec(resource).expect("a string serialises");
        let mut out = BytesMut::with_capacity(self.before.len() + value.len() + self.after.len());
        out.extend_from_slice(&self.before);
        out.extend_from_slice(&value);
        out.extend_from_slice(&self.after);
        out.freeze()
    }
}

/// What the last fetch for one mount found.
struct Entry {
    at: Instant,
    /// The upstream metadata URL its challenges named when the fetch was
    /// made: a different one makes the entry stale.
    source: Option<String>,
    doc: Option<Doc>,
}

type Slot = Arc<tokio::sync::Mutex<Option<Entry>>>;

/// The documents, by mount index.
pub struct PrmCache {
    ttls: Mutex<(Duration, Duration)>,
    slots: Mutex<HashMap<usize, Slot>>,
}

impl Default for PrmCache {
    fn default() -> Self {
        PrmCache {
            ttls: Mutex::new((DOC_TTL, MISS_TTL)),
            slots: Mutex::default(),
        }
    }
}

impl PrmCache {
    /// Change how long documents and misses are kept (tests use short ones).
    pub fn set_ttls(&self, doc: Duration, miss: Duration) {
        *self.ttls.lock().unwrap_or_else(|e| e.into_inner()) = (doc, miss);
    }

    /// Mounts with an entry (at most the number of mounts).
    pub fn entries(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Mount `mount`'s document: the cached one while fresh, otherwise what
    /// `fetch` finds (remembered, found or not). `source` is the metadata
    /// URL the upstream's challenges named, if any.
    pub(crate) async fn get_or_fetch<F, Fut>(
        &self,
        mount: usize,
        source: Option<String>,
        fetch: F,
    ) -> Option<Doc>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Option<Map<String, Value>>>,
    {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(mount)
            .or_default()
            .clone();
        // Held across the fetch: the requests that arrive meanwhile get its
        // result rather than each asking the upstream.
        let mut entry = slot.lock().await;
        if let Some(e) = entry.as_ref().filter(|e| self.fresh(e, &source)) {
            return e.doc.clone();
        }
        let doc = fetch().await.map(|d| Arc::new(Template::new(&d)));
        *entry = Some(Entry {
            at: Instant::now(),
            source,
            doc: doc.clone(),
        });
        doc
    }

    fn fresh(&self, e: &Entry, source: &Option<String>) -> bool {
        let (doc_ttl, miss_ttl) = *self.ttls.lock().unwrap_or_else(|e| e.into_inner());
        let ttl = if e.doc.is_some() { doc_ttl } else { miss_ttl };
        e.source == *source && e.at.elapsed() < ttl
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;

    fn resource_after(doc: &Option<Doc>) -> Value {
        let out = doc.as_ref().unwrap().with_resource("http://gw/mcp");
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn resource_is_replaced_in_place_or_added_last() {
        let text = |v: Value| {
            let Value::Object(doc) = v else {
                unreachable!()
            };
            let out = Template::new(&doc).with_resource("http://gw/\"mcp\"");
            String::from_utf8(out.to_vec()).unwrap()
        };
        assert_eq!(
            text(json!({"a": [1], "resource": "http://up/mcp", "z": {"k": true}, "b": "é"})),
            r#"{"a":[1],"resource":"http://gw/\"mcp\"","z":{"k":true},"b":"é"}"#
        );
        assert_eq!(
            text(json!({"resource": 1})),
            r#"{"resource":"http://gw/\"mcp\""}"#
        );
        assert_eq!(
            text(json!({"z": 1, "a": 2})),
            r#"{"z":1,"a":2,"resource":"http://gw/\"mcp\""}"#
        );
        assert_eq!(text(json!({})), r#"{"resource":"http://gw/\"mcp\""}"#);
    }

    fn doc(version: usize) -> Option<Map<String, Value>> {
        match json!({"authorization_servers": ["https://as.example"], "v": version}) {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    async fn get(cache: &PrmCache, fetches: &AtomicUsize, found: bool) -> Option<Doc> {
        cache
            .get_or_fetch(0, None, || async {
                let n = fetches.fetch_add(1, Ordering::SeqCst) + 1;
                found.then(|| doc(n)).flatten()
            })
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn documents_expire_after_the_ttl_and_misses_sooner() {
        let cache = PrmCache::default();
        let fetches = AtomicUsize::new(0);
        let first = get(&cache, &fetches, true).await.unwrap();
        tokio::time::advance(DOC_TTL - Duration::from_secs(1)).await;
        assert!(Arc::ptr_eq(
            &first,
            &get(&cache, &fetches, true).await.unwrap()
        ));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        let second = get(&cache, &fetches, true).await;
        assert_eq!(resource_after(&second)["v"], 2);
        assert_eq!(resource_after(&second)["resource"], "http://gw/mcp");

        // A miss is asked again after MISS_TTL, not DOC_TTL.
        tokio::time::advance(DOC_TTL).await;
        assert!(get(&cache, &fetches, false).await.is_none());
        assert!(get(&cache, &fetches, false).await.is_none());
        assert_eq!(fetches.load(Ordering::SeqCst), 3);
        tokio::time::advance(MISS_TTL).await;
        assert_eq!(resource_after(&get(&cache, &fetches, true).await)["v"], 4);
        assert_eq!(cache.entries(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_challenge_url_is_fetched_at_once() {
        let cache = PrmCache::default();
        let fetches = AtomicUsize::new(0);
        let fetch = || async {
            fetches.fetch_add(1, Ordering::SeqCst);
            doc(0)
        };
        for source in [
            None,
            None,
            Some("http://up/a".to_owned()),
            Some("http://up/a".to_owned()),
        ] {
            cache.get_or_fetch(3, source, fetch).await.unwrap();
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn concurrent_requests_share_one_fetch() {
        let cache = PrmCache::default();
        let fetches = AtomicUsize::new(0);
        let many = (0..200).map(|_| {
            cache.get_or_fetch(0, None, || async {
                fetches.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                doc(0)
            })
        });
        let got = futures_util::future::join_all(many).await;
        assert!(got.iter().all(Option::is_some));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }
}
