//! Paths of files in a widget folder: a path's folder, and a reference
//! joined to the folder it is made from, kept inside the widget folder.

/// The folder of a relative path (`""` for the top).
pub(super) fn parent(path: &str) -> String {
    path.rsplit_once('/')
        .map_or(String::new(), |(dir, _)| dir.to_owned())
}

/// Joins `path` to `base` and folds `.` and `..`, refusing to climb above the
/// widget folder.
pub(crate) fn normalize(base: &str, path: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("leaves the widget folder".into());
                }
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err("names no file".into());
    }
    Ok(parts.join("/"))
}
