use std::ffi::OsString;
use std::path::Path;

use super::browser::{dump_dom, find};
use super::page::{self, Outcome};

/// A directory holding `names` as executable files (and `plain` as a file
/// that is not executable).
fn bin_dir(names: &[&str], plain: &[&str]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    for (name, mode) in names
        .iter()
        .map(|n| (n, 0o755))
        .chain(plain.iter().map(|n| (n, 0o644)))
    {
        let file = dir.path().join(name);
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    dir
}

fn path_of(dirs: &[&Path]) -> Option<OsString> {
    Some(std::env::join_paths(dirs).unwrap())
}

#[test]
fn the_browser_is_the_flag_then_chromium_then_the_usual_names_on_the_path() {
    let first = bin_dir(&["google-chrome"], &["chromium"]);
    let second = bin_dir(&["chromium-browser"], &[]);
    let path = path_of(&[first.path(), second.path()]);
    // A non-executable `chromium` is passed over; `chromium-browser` comes
    // before `google-chrome` whatever the directories' order.
    assert_eq!(
        find(None, None, path.clone()).unwrap(),
        second.path().join("chromium-browser")
    );
    // $CHROMIUM, by name on the PATH or as a file; empty is unset.
    assert_eq!(
        find(None, Some("google-chrome".into()), path.clone()).unwrap(),
        first.path().join("google-chrome")
    );
    assert_eq!(
        find(None, Some("".into()), path.clone()).unwrap(),
        second.path().join("chromium-browser")
    );
    let chrome = first.path().join("google-chrome");
    assert_eq!(
        find(None, Some(chrome.clone().into()), None).unwrap(),
        chrome
    );
    // --browser wins, and is never replaced by another when it is wrong.
    let flag = second.path().join("chromium-browser");
    assert_eq!(
        find(Some(&flag), Some("google-chrome".into()), path.clone()).unwrap(),
        flag
    );
    assert_eq!(
        find(Some(Path::new("/nonexistent/chromium")), None, path.clone()).unwrap_err(),
        "--browser /nonexistent/chromium: no such file"
    );
    let plain = first.path().join("chromium");
    assert_eq!(
        find(Some(&plain), None, path.clone()).unwrap_err(),
        format!("--browser {}: not an executable file", plain.display())
    );
    assert_eq!(
        find(None, Some("nothing-here".into()), path).unwrap_err(),
        "$CHROMIUM (nothing-here): not found on the PATH"
    );
    let empty = bin_dir(&[], &[]);
    assert_eq!(
        find(None, None, path_of(&[empty.path()])).unwrap_err(),
        "no browser to render it in: none of chromium, chromium-browser, google-chrome, google-chrome-stable is on the PATH, and neither --browser nor $CHROMIUM names one"
    );
    assert!(find(None, None, None).is_err());
}

#[test]
fn the_dumped_heights_are_read_one_per_widget() {
    let dump = "<html><head></head><body><pre id=\"heights\">0 px 900\n1 no-size\n2 no-initialize\n3 no-initialized</pre></body></html>\n";
    assert_eq!(
        page::parse(dump, 4).unwrap(),
        [
            Outcome::Px(900),
            Outcome::NoSize,
            Outcome::NoInitialize,
            Outcome::NotInitialized
        ]
    );
    // The page did not finish, missed a widget, or wrote nonsense.
    let unfinished = "<html><body><script>…</script></body></html>";
    assert_eq!(
        page::parse(unfinished, 1).unwrap_err(),
        "the measuring page did not finish within its time"
    );
    assert!(page::parse(dump, 5).is_err());
    for bad in ["0 px", "0 px x", "7 px 10", "x px 1", "0 tall"] {
        let dump = format!("<pre id=\"heights\">{bad}</pre>");
        assert!(
            page::parse(&dump, 1)
                .unwrap_err()
                .starts_with("the measuring page wrote an unreadable line"),
            "{bad}"
        );
    }
}

#[test]
fn a_policy_in_a_meta_element_drops_what_only_a_header_sets() {
    let policy = "default-src 'none'; script-src 'self' 'unsafe-inline'; frame-ancestors 'self'; sandbox allow-scripts allow-forms";
    assert_eq!(
        page::meta_policy(policy),
        "default-src 'none'; script-src 'self' 'unsafe-inline'"
    );
}

/// A widget's HTML cannot end the page's data element early.
#[test]
fn the_page_carries_any_widget_html_as_data() {
    let job = page::Job {
        html: "<script>x</script><!-- </script> -->".into(),
        policy: String::new(),
        csp: serde_json::json!({}),
        arguments: serde_json::json!({}),
        result: serde_json::json!({}),
        tool: serde_json::json!({ "name": "t" }),
    };
    let html = page::html(&[job]);
    let data = html
        .split("<script type=\"application/json\" id=\"jobs\">")
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .unwrap();
    let jobs: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(jobs[0]["html"], "<script>x</script><!-- </script> -->");
}

/// A browser that fails is said with its exit status; nothing is waited
/// for.
#[tokio::test]
async fn a_browser_that_fails_is_said_with_its_status() {
    let work = tempfile::tempdir().unwrap();
    let why = dump_dom(
        Path::new("/bin/false"),
        "file:///nonexistent.html",
        work.path(),
        1_000,
        std::time::Duration::from_secs(30),
    )
    .await
    .unwrap_err();
    assert_eq!(why, "the browser /bin/false failed (exit status: 1)");
    let why = dump_dom(
        Path::new("/nonexistent/chromium"),
        "file:///nonexistent.html",
        work.path(),
        1_000,
        std::time::Duration::from_secs(30),
    )
    .await
    .unwrap_err();
    assert!(
        why.starts_with("the browser /nonexistent/chromium could not be started: "),
        "{why}"
    );
}
