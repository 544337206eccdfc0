//! Tests of how a failure is classified and answered.

use super::*;

fn id() -> Box<RawValue> {
    RawValue::from_string("7".into()).unwrap()
}

#[test]
fn sides_and_outcomes() {
    let timeout = Failure::timeout("a", 3);
    assert_eq!(timeout.side(), Side::Upstream);
    assert_eq!(timeout.outcome(), Outcome::Timeout);
    assert_eq!(
        timeout.to_string(),
        "upstream 'a' did not answer within 3 s"
    );
    let stalled = Failure::Stream {
        upstream: "a".into(),
        cause: StreamCause::Timeout { secs: 3 },
    };
    assert_eq!(stalled.outcome(), Outcome::Timeout);
    let broken = Failure::Stream {
        upstream: "a".into(),
        cause: StreamCause::Broken("reset".into()),
    };
    assert_eq!(broken.outcome(), Outcome::UpstreamError);
    let children = Failure::Upstream(UpstreamError::ChildLimit {
        upstream: "a".into(),
        max: 2,
    });
    assert_eq!(children.side(), Side::Gateway);
    assert_eq!(children.outcome(), Outcome::Http5xx);
    assert_eq!(Failure::HostNotAllowed.side(), Side::Client);
    assert_eq!(Failure::HostNotAllowed.outcome(), Outcome::Http4xx);
    assert_eq!(Failure::Cancelled.outcome(), Outcome::Cancelled);
}

/// The outcome never depends on the words: an upstream's own error that
/// reads like the gateway's is still the upstream's JSON-RPC error.
#[test]
fn answers_are_classified_by_status_and_shape_only() {
    assert_eq!(
        Outcome::of_answer(StatusCode::OK, true),
        Outcome::JsonRpcError
    );
    assert_eq!(Outcome::of_answer(StatusCode::OK, false), Outcome::Ok);
    assert_eq!(
        Outcome::of_answer(StatusCode::NOT_FOUND, true),
        Outcome::Http4xx
    );
    assert_eq!(
        Outcome::of_answer(StatusCode::BAD_GATEWAY, true),
        Outcome::Http5xx
    );
}

#[test]
fn upstream_failures_answer_the_request_in_band() {
    let r = Failure::timeout("a", 3).respond(Some(&id()));
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.extensions().get::<Outcome>(), Some(&Outcome::Timeout));
    let r = Failure::timeout("a", 3).respond(None);
    assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
    let r = Failure::Full { max: 1 }.respond(Some(&id()));
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    let children = Failure::Upstream(UpstreamError::ChildLimit {
        upstream: "a".into(),
        max: 2,
    });
    let r = children.respond(Some(&id()));
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    let r = Failure::TooManyInFlight { max: 1 }.respond(Some(&id()));
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()[header::RETRY_AFTER], "1");
    let r = Failure::MethodNotAllowed {
        allow: "POST",
        why: Some("DELETE needs a session"),
    }
    .respond(None);
    assert_eq!(r.headers()[header::ALLOW], "POST");
    assert_eq!(
        Failure::MethodNotAllowed {
            allow: "POST",
            why: Some("x")
        }
        .to_string(),
        "Method Not Allowed: x"
    );
}

#[test]
fn slots_hold_one_outcome() {
    let slot = OutcomeSlot::new();
    assert_eq!(slot.get(), None);
    slot.clone().set(Outcome::Timeout);
    assert_eq!(slot.get(), Some(Outcome::Timeout));
}
