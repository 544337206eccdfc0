//! What loading reads: nothing from outside the overlay directory, and no
//! file past the size limits.

use super::*;

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_overlay_directory_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.js", "steal()");
    write(outside.path(), "other.toml", "[tools.x]\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "widgets/w/index.html",
        "<script src=\"link.js\"></script>",
    );
    std::os::unix::fs::symlink(
        outside.path().join("secret.js"),
        root.join("widgets/w/link.js"),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path().join("other.toml"), root.join("linked.toml"))
        .unwrap();
    // A symlink that stays inside is fine.
    write(root, "shared/lib.js", "ok()");
    write(
        root,
        "widgets/v/index.html",
        "<script src=\"lib.js\"></script>",
    );
    std::os::unix::fs::symlink(root.join("shared/lib.js"), root.join("widgets/v/lib.js")).unwrap();
    let got = errors(root);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with("linked.toml: resolves to ")
            && got[0].contains("outside the overlay directory"),
        "{}",
        got[0]
    );
    assert!(
        got[1].starts_with("widgets/w/index.html:1: script src \"link.js\": resolves to "),
        "{}",
        got[1]
    );
}

#[test]
fn a_missing_directory_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let got = load_dir(&dir.path().join("nope")).unwrap_err();
    assert_eq!(got.0.len(), 1);
    assert!(
        got.to_string()
            .starts_with("1 problem in the overlays:\n  ")
    );
}

/// A file of `len` bytes that takes no disk space (a hole, read as zeros).
fn sparse(root: &Path, path: &str, len: u64) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::File::create(path).unwrap().set_len(len).unwrap();
}

#[test]
fn oversize_files_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "app.toml", "[tools.t]\nwidget = \"big\"\n");
    write(
        root,
        "widgets/big/index.html",
        "<p>x</p>\n<script src=\"huge.js\"></script>\n",
    );
    // 300 MB: reading it would cost gigabytes once inlined; its size alone
    // refuses it, under the default limit.
    sparse(root, "widgets/big/huge.js", 300_000_000);
    let errors = errors(root);
    assert_eq!(
        errors,
        [
            "widgets/big/index.html:2: script src \"huge.js\": is 300000000 bytes, over the 16777216-byte limit (limits.max_widget_bytes)",
        ],
    );
    // The entry document and mount files are bounded the same way.
    sparse(root, "widgets/big/index.html", 2_000);
    let e = load_dir_within(root, 1_000).unwrap_err().to_string();
    assert!(
        e.contains("widgets/big/index.html: is 2000 bytes, over the 1000-byte limit (limits.max_widget_bytes)"),
        "{e}"
    );
    let e = inspect_dir_within(root, 10).errors;
    assert!(
        e.iter()
            .any(|e| e.file.ends_with("app.toml") && e.reason.contains("over the 10-byte limit")),
        "{e:?}"
    );
}

#[test]
fn a_widget_with_its_assets_inlined_stays_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let html = "<script src=\"a.js\"></script><script src=\"a.js\"></script>";
    write(root, "widgets/w/index.html", html);
    write(root, "widgets/w/a.js", &"x".repeat(500));
    // The document and one copy fit in 1,000 bytes; a second copy does not.
    let e = load_dir_within(root, 1_000).unwrap_err().to_string();
    let taken = html.len() + 500;
    assert!(
        e.contains(&format!(
            "script src \"a.js\": is 500 bytes; with the {taken} bytes of the widget's other files that is over the 1000-byte limit (limits.max_widget_bytes)"
        )),
        "{e}"
    );
    let set = load_dir_within(root, 2_000).unwrap();
    assert!(set.widgets().get("w").unwrap().html.len() > 1_000);
}
