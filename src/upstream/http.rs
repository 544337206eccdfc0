//! The HTTP client shared by every HTTP and legacy SSE upstream: pooled
//! keep-alive connections, a connect timeout, and errors that name the
//! upstream.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::UpstreamError;

pub type Client = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;

/// A client with connection reuse. One per gateway process.
pub fn client(connect_timeout: Duration) -> Client {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    connector.enforce_http(true);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(256)
        .build(connector)
}

/// Send a request, waiting at most `timeout` for the response head.
pub async fn send(
    client: &Client,
    upstream: &str,
    req: http::Request<Full<Bytes>>,
    timeout: Duration,
) -> Result<http::Response<Incoming>, UpstreamError> {
    match tokio::time::timeout(timeout, client.request(req)).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) if is_parse_error(&e) => Err(UpstreamError::Protocol {
            upstream: upstream.to_owned(),
            detail: format!("its answer is not HTTP ({})", describe(&e)),
        }),
        Ok(Err(e)) => Err(UpstreamError::Unreachable {
            upstream: upstream.to_owned(),
            detail: describe(&e),
        }),
        Err(_) => Err(UpstreamError::Timeout {
            upstream: upstream.to_owned(),
            seconds: timeout.as_secs(),
        }),
    }
}

/// Whether the upstream was reached but answered something that is not an
/// HTTP response.
fn is_parse_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// The innermost cause, which is what an operator can act on
/// ("Connection refused"), rather than hyper's outer wording.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    let mut text = cur.to_string();
    while let Some(next) = cur.source() {
        cur = next;
        text = cur.to_string();
    }
    text
}
