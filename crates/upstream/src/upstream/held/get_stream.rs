//! The GET stream of a held session: what the upstream says on its own,
//! opened once and again after it ends, until the session ends.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::Method;
use http_body_util::Full;

use super::read::Events;
use super::{GET_RETRY, Pipe, lock};
use crate::upstream::client::send;
use crate::upstream::messages::MessageSession;

impl Pipe {
    /// Open the session's GET stream, once: what the upstream says on its
    /// own. An upstream that offers none (405) is not asked again.
    pub(super) fn start_get(&self, session: &Arc<MessageSession>) {
        if self.get_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(sid) = lock(&self.sid).clone() else {
            return;
        };
        let req = self.request(Method::GET, Bytes::new(), Some(&sid));
        let (client, name, limit, session) = (
            self.client.clone(),
            self.name.clone(),
            self.limit,
            session.clone(),
        );
        let timeout = self.timeout;
        tokio::spawn(async move {
            let mut req = Some(req);
            while let Some(r) = req.take() {
                let (method, uri, headers) =
                    (r.method().clone(), r.uri().clone(), r.headers().clone());
                let resp = tokio::select! {
                    r = send(&client, &name, r, timeout) => r,
                    _ = session.closed().cancelled() => return,
                };
                let ok = matches!(&resp, Ok(r) if r.status().is_success());
                if let (true, Ok(resp)) = (ok, resp) {
                    let mut events = Events::new(resp.into_body().unbounded(), limit);
                    loop {
                        let e = tokio::select! {
                            e = events.next() => e,
                            _ = session.closed().cancelled() => return,
                        };
                        match e {
                            Some(Ok(data)) => session.deliver(data).await,
                            _ => break,
                        }
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(GET_RETRY) => {}
                        _ = session.closed().cancelled() => return,
                    }
                    let mut again = http::Request::new(Full::new(Bytes::new()));
                    *again.method_mut() = method;
                    *again.uri_mut() = uri;
                    *again.headers_mut() = headers;
                    req = Some(again);
                }
            }
        });
    }
}
