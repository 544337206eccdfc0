//! The exporter's settings: the `[telemetry]` section, with the standard
//! `OTEL_*` variables taking precedence, checked once at start.

use std::collections::BTreeMap;
use std::time::Duration;

use http::Uri;
use http::header::{HeaderMap, HeaderName, HeaderValue};

use super::export::Target;
use super::sampler::Sampler;
use mcp_ui_model::config::Telemetry;
use mcp_ui_wire::percent::{Plus, percent_decode};

/// The default `service.name`.
pub(crate) const SERVICE_NAME: &str = "mcp-ui-gateway";

/// Resolved settings of an enabled exporter.
#[derive(Debug, Clone)]
pub struct Settings {
    pub target: Target,
    pub sampler: Sampler,
    pub(crate) max_queue: usize,
    pub limits: SpanLimits,
}

/// What one span may hold, and all queued spans together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanLimits {
    /// Characters of an attribute value, a status message, a `tracestate`.
    pub(crate) value_chars: usize,
    /// Characters of a span name.
    pub(crate) name_chars: usize,
    /// Bytes of spans waiting for export (their [`super::data::SpanData::weight`]).
    pub(crate) queue_bytes: usize,
}

impl Default for SpanLimits {
    fn default() -> Self {
        SpanLimits {
            value_chars: 1024,
            name_chars: 256,
            queue_bytes: 16 * 1024 * 1024,
        }
    }
}

/// A variable of the environment, trimmed; `None` when unset or blank.
type Var<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The settings `file` and the environment (`env` looks a variable up)
/// give; `None` when no endpoint is set anywhere (tracing off).
pub(crate) fn resolve(
    file: &Telemetry,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Settings>, String> {
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let Some(url) = endpoint(file, &var)? else {
        return Ok(None);
    };
    let sampler = sampler(file, &var)?;
    let resource = resource(file, &var);
    let headers = headers(file, &var)?;
    let number =
        |name: &str, given: Option<u64>, default: u64| positive(&var, name, given, default);
    let timeout = number("OTEL_EXPORTER_OTLP_TIMEOUT", file.timeout_ms, 10_000)?;
    let delay = number("OTEL_BSP_SCHEDULE_DELAY", file.schedule_delay_ms, 1_000)?;
    let max_queue = number(
        "OTEL_BSP_MAX_QUEUE_SIZE",
        file.max_queue_size.map(|n| n as u64),
        2048,
    )?;
    let defaults = SpanLimits::default();
    let value_chars = number(
        "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
        file.attribute_value_length_limit.map(|n| n as u64),
        defaults.value_chars as u64,
    )?;
    // No standard variable bounds the queue in bytes: the file's key only.
    let queue_bytes = match file.max_queue_bytes {
        Some(0) => return Err("telemetry: max_queue_bytes must be above 0".into()),
        Some(n) => n as u64,
        None => defaults.queue_bytes as u64,
    };
    Ok(Some(Settings {
        limits: SpanLimits {
            value_chars: usize::try_from(value_chars).unwrap_or(usize::MAX),
            name_chars: defaults.name_chars,
            queue_bytes: usize::try_from(queue_bytes).unwrap_or(usize::MAX),
        },
        target: Target {
            url,
            headers,
            timeout: Duration::from_millis(timeout),
            delay: Duration::from_millis(delay),
            resource: resource.into_iter().collect(),
        },
        sampler,
        max_queue: usize::try_from(max_queue).unwrap_or(usize::MAX),
    }))
}

/// The traces endpoint: the traces one named, else the base one's
/// `/v1/traces`; an OTLP/HTTP URL. `None` when neither is set.
fn endpoint(file: &Telemetry, var: Var<'_>) -> Result<Option<Uri>, String> {
    let url = match (
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| file.traces_endpoint.clone()),
        var("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| file.endpoint.clone()),
    ) {
        (Some(traces), _) => traces,
        (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    let url: Uri = url
        .parse()
        .map_err(|e| format!("telemetry endpoint {url:?}: {e}"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.authority().is_none() {
        return Err(format!(
            "telemetry endpoint {url}: an http:// or https:// URL is needed (OTLP/HTTP)"
        ));
    }
    Ok(Some(url))
}

/// The sampler named, with its argument; the default when none is.
fn sampler(file: &Telemetry, var: Var<'_>) -> Result<Sampler, String> {
    let sampler_arg = match var("OTEL_TRACES_SAMPLER_ARG") {
        Some(a) => Some(
            a.parse::<f64>()
                .map_err(|_| format!("OTEL_TRACES_SAMPLER_ARG {a:?} is not a number"))?,
        ),
        None => file.sampler_arg,
    };
    match var("OTEL_TRACES_SAMPLER").or_else(|| file.sampler.clone()) {
        Some(name) => Sampler::parse(&name, sampler_arg).map_err(|e| format!("telemetry: {e}")),
        None => Ok(Sampler::default()),
    }
}

/// The resource's attributes: the file's, the environment's over them, and
/// the service's name and version.
fn resource(file: &Telemetry, var: Var<'_>) -> BTreeMap<String, String> {
    let mut resource: BTreeMap<String, String> = file.resource_attributes.clone();
    if let Some(list) = var("OTEL_RESOURCE_ATTRIBUTES") {
        resource.extend(pairs(&list));
    }
    let service = var("OTEL_SERVICE_NAME")
        .or_else(|| file.service_name.clone())
        .or_else(|| resource.get("service.name").cloned())
        .unwrap_or_else(|| SERVICE_NAME.to_owned());
    resource.insert("service.name".into(), service);
    resource
        .entry("service.version".into())
        .or_insert_with(|| env!("CARGO_PKG_VERSION").to_owned());
    resource
}

/// The headers sent with every export: the file's, the environment's over
/// them; sensitive (never logged).
fn headers(file: &Telemetry, var: Var<'_>) -> Result<HeaderMap, String> {
    let mut header_pairs: BTreeMap<String, String> = file.headers.clone();
    if let Some(list) = var("OTEL_EXPORTER_OTLP_HEADERS") {
        header_pairs.extend(pairs(&list));
    }
    let mut headers = HeaderMap::new();
    for (k, v) in header_pairs {
        let name = HeaderName::try_from(k.as_str())
            .map_err(|_| format!("telemetry header name {k:?} is not valid"))?;
        let mut value = HeaderValue::try_from(v.as_str())
            .map_err(|_| format!("telemetry header {k:?}: its value is not valid"))?;
        value.set_sensitive(true);
        headers.append(name, value);
    }
    Ok(headers)
}

/// A positive number: the variable `name`, else the file's `given`, else
/// `default`.
fn positive(var: Var<'_>, name: &str, given: Option<u64>, default: u64) -> Result<u64, String> {
    match var(name) {
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("{name} {v:?} is not a positive integer")),
        None => match given {
            Some(0) => Err(format!("telemetry: {name} must be above 0")),
            Some(n) => Ok(n),
            None => Ok(default),
        },
    }
}

/// `k=v,k=v` (the OTEL list form; values may be percent-encoded).
fn pairs(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// A `%XX` sequence is a byte; anything else, a malformed `%` or a `+`
/// included, is itself (the OpenTelemetry SDKs' leniency).
fn decode(s: &str) -> String {
    percent_decode(s, Plus::Itself).lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn off_without_an_endpoint() {
        assert!(
            resolve(&Telemetry::default(), &env_of(&[]))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn environment_wins_over_the_file() {
        let file = Telemetry {
            endpoint: Some("http://file:4318".into()),
            service_name: Some("from-file".into()),
            sampler: Some("always_off".into()),
            ..Telemetry::default()
        };
        let s = resolve(&file, &env_of(&[])).unwrap().unwrap();
        assert_eq!(s.target.url, "http://file:4318/v1/traces");
        assert!(
            s.target
                .resource
                .contains(&("service.name".into(), "from-file".into()))
        );
        let env = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318/"),
            ("OTEL_SERVICE_NAME", "from-env"),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.5"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod,team=a%20b",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=secret"),
        ]);
        let s = resolve(&file, &env).unwrap().unwrap();
        assert_eq!(s.target.url, "http://env:4318/v1/traces");
        assert!(
            s.target
                .resource
                .contains(&("service.name".into(), "from-env".into()))
        );
        assert!(s.target.resource.contains(&("team".into(), "a b".into())));
        assert_eq!(s.target.headers["x-api-key"], "secret");
        assert_eq!(
            s.sampler,
            Sampler::parse("traceidratio", Some(0.5)).unwrap()
        );
        let env = env_of(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c/x")]);
        assert_eq!(
            resolve(&file, &env).unwrap().unwrap().target.url,
            "https://c/x"
        );
    }

    #[test]
    fn bad_settings_are_refused() {
        let env = env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://x:4317")]);
        assert!(resolve(&Telemetry::default(), &env).is_err());
        let env = env_of(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:4318"),
            ("OTEL_TRACES_SAMPLER", "sometimes"),
        ]);
        assert!(resolve(&Telemetry::default(), &env).is_err());
    }
}
