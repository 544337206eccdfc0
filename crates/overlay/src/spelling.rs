//! "Did you mean": the name most likely meant among the names there are,
//! for messages about a tool, a widget, a key or a setting that does not
//! exist.

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

    #[test]
    fn only_a_close_name_is_meant() {
        assert_eq!(
            nearest("visiblity", &["visibility", "view"]),
            Some("visibility")
        );
        assert_eq!(nearest("calendar", &["clock", "task-board"]), None);
    }
}
