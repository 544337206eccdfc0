//! OpenTelemetry traces, by the MCP semantic conventions, exported over
//! OTLP/HTTP protobuf. Off unless an endpoint is configured; then the hot
//! path pays one branch on `Option<Arc<Tracer>>` and nothing else.
//!
//! - [`settings`]: `[telemetry]` and the standard `OTEL_*` variables;
//! - [`context`]: W3C `traceparent`/`tracestate`;
//! - [`sampler`]: the standard samplers;
//! - [`meta`]: trace context in `params._meta`, read and written losslessly;
//! - [`tracer`]: sampling, and the queue spans are ended into;
//! - [`span`]: spans and their handles; [`data`] what they hold; [`otlp`]:
//!   their protobuf encoding;
//! - [`export`]: the bounded queue and the export thread;
//! - [`request_spans`]: the spans of one client request through the relay;
//! - [`outbound`]: the spans of requests an upstream sends the client, and
//!   [`pending`] those waiting for the client's answer.

pub mod context;
pub mod data;
pub mod export;
pub mod meta;
pub mod otlp;
pub mod outbound;
pub mod pending;
pub mod request_spans;
pub mod sampler;
pub mod settings;
pub mod span;
pub mod tracer;

pub use request_spans::Traced;
pub use span::{Kind, Parent, Span};
pub use tracer::Tracer;
