//! Which traces are recorded: the standard samplers of `OTEL_TRACES_SAMPLER`.

use super::context::TraceId;

/// A root sampler, and whether a parent's decision is followed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    root: Root,
    parent_based: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Root {
    On,
    Off,
    /// Traces whose id falls below this bound (of 2^64) are sampled.
    Ratio(u64),
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler {
            root: Root::On,
            parent_based: true,
        }
    }
}

impl Sampler {
    /// The sampler `name` (with `arg` for the ratio ones, default 1.0).
    pub(crate) fn parse(name: &str, arg: Option<f64>) -> Result<Sampler, String> {
        let ratio = || -> Result<Root, String> {
            let r = arg.unwrap_or(1.0);
            if !(0.0..=1.0).contains(&r) {
                return Err(format!("sampler argument {r} is not between 0 and 1"));
            }
            // 2^64 * r, saturating at the top.
            Ok(Root::Ratio(if r >= 1.0 {
                u64::MAX
            } else {
                (r * 18_446_744_073_709_551_616.0) as u64
            }))
        };
        let (root, parent_based) = match name.trim() {
            "always_on" => (Root::On, false),
            "always_off" => (Root::Off, false),
            "traceidratio" => (ratio()?, false),
            "parentbased_always_on" => (Root::On, true),
            "parentbased_always_off" => (Root::Off, true),
            "parentbased_traceidratio" => (ratio()?, true),
            other => return Err(format!("unknown sampler {other:?}")),
        };
        Ok(Sampler { root, parent_based })
    }

    /// Whether a span of `trace_id` is recorded; `parent` is a remote
    /// parent's sampled flag.
    pub fn sample(&self, trace_id: &TraceId, parent: Option<bool>) -> bool {
        if self.parent_based
            && let Some(sampled) = parent
        {
            return sampled;
        }
        match self.root {
            Root::On => true,
            Root::Off => false,
            Root::Ratio(bound) => {
                // The trace id's last 8 bytes, as the SDKs read them.
                let low = u64::from_be_bytes(trace_id[8..].try_into().expect("8 bytes"));
                bound == u64::MAX || low < bound
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers() {
        let id = [7u8; 16];
        assert!(Sampler::default().sample(&id, None));
        assert!(!Sampler::default().sample(&id, Some(false)));
        assert!(
            Sampler::parse("always_on", None)
                .unwrap()
                .sample(&id, Some(false))
        );
        assert!(
            !Sampler::parse("always_off", None)
                .unwrap()
                .sample(&id, Some(true))
        );
        assert!(
            Sampler::parse("parentbased_always_off", None)
                .unwrap()
                .sample(&id, Some(true))
        );
        assert!(Sampler::parse("bogus", None).is_err());
        assert!(Sampler::parse("traceidratio", Some(2.0)).is_err());
        let one_percent = Sampler::parse("traceidratio", Some(0.01)).unwrap();
        let hits = (0..10_000u32)
            .filter(|_| one_percent.sample(&super::super::context::new_trace_id(), None))
            .count();
        assert!((20..400).contains(&hits), "{hits} of 10000 at 1%");
    }
}
