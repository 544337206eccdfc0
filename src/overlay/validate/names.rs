//! Names that match nothing: what an overlay calls a tool its upstream does
//! not list, said with the name most likely meant, or the names there are.
//! Used by `check` against a probed listing and by `serve` against the
//! listings passing through.

/// Most tool names listed in a message.
const NAMES_SHOWN: usize = 12;

/// "upstream 'x' has no tool `y`", with the likely intended name among
/// `names` (the upstream's tools), or the names it does have.
pub fn unknown_tool(mount: &str, tool: &str, names: &[&str]) -> String {
    let mut reason = format!("upstream '{mount}' has no tool `{tool}`");
    if names.is_empty() {
        reason.push_str(" (it lists no tools)");
        return reason;
    }
    if let Some(name) = nearest(tool, names) {
        reason.push_str(&format!("; did you mean `{name}`?"));
        return reason;
    }
    let shown: Vec<String> = names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("`{n}`"))
        .collect();
    let more = names.len().saturating_sub(NAMES_SHOWN);
    reason.push_str(&format!(" (its tools: {}", shown.join(", ")));
    if more > 0 {
        reason.push_str(&format!(", and {more} more"));
    }
    reason.push(')');
    reason
}

/// The name among `names` most likely meant by `name`, if one is close.
pub fn nearest<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (distance(name, n), *n))
        .min()
        .filter(|(d, _)| *d <= (name.chars().count() / 3).max(2))
        .map(|(_, n)| n)
}

/// Levenshtein distance, for "did you mean". Tool names are short.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(distance("list_task", "list_tasks"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
