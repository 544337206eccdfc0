//! A widget's `domain` (a manifest's, or a built-in widget's `view`): each
//! value in the form its host reads.

use super::csp::{chatgpt_domain, claude_domain, domain};
use super::problem::Problem;
use crate::overlay::domain::WidgetDomain;

/// The problems of `value`, written at `key` (`domain`, `view.domain`).
pub(crate) fn check(key: &str, value: &WidgetDomain, problems: &mut Vec<Problem>) {
    match value {
        WidgetDomain::One(value) => {
            if let Err(reason) = domain(value) {
                problems.push(Problem::new(key, reason));
            }
        }
        WidgetDomain::PerHost(hosts) => {
            type Rule = fn(&str) -> Result<(), String>;
            let rules: [(&str, &Option<String>, Rule); 3] = [
                ("chatgpt", &hosts.chatgpt, chatgpt_domain),
                ("claude", &hosts.claude, claude_domain),
                ("other", &hosts.other, domain),
            ];
            for (host, value, rule) in rules {
                if let Some(value) = value
                    && let Err(reason) = rule(value)
                {
                    problems.push(Problem::new(format!("{key}.{host}"), reason));
                }
            }
        }
    }
}
