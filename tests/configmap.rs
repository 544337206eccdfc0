//! Overlays mounted from a Kubernetes ConfigMap reach a running gateway.
//!
//! The kubelet writes a ConfigMap volume atomically: the files go into a new
//! hidden directory named after the time (`..2026_05_13_10_26_00.123456789`),
//! a symlink `..data_tmp` to it is renamed over `..data`, each top-level
//! name is a symlink through `..data` (`demo.toml -> ..data/demo.toml`,
//! `widgets -> ..data/widgets` for keys mounted under a path), and the
//! previous timestamped directory is removed. No file the gateway reads is
//! ever written in place: only a rename of a symlink marks the change.
//!
//! This test lays out a directory exactly so, starts the overlay watcher the
//! binary starts (`Live::watch`), swaps in a new payload the kubelet's way,
//! and waits (bounded) for the new snapshot: a changed tool overlay and a
//! changed widget are both in force, and a later swap that removes a widget
//! file the overlay still names keeps the last good snapshot.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_ui_proxy::live::Live;
use tokio_util::sync::CancellationToken;

/// Bound on the wait for one reload (the watcher debounces for 200 ms).
const APPLY_LIMIT: Duration = Duration::from_secs(15);
/// Long enough for the watcher to have seen and refused a bad payload.
const SETTLE: Duration = Duration::from_millis(1500);

/// One ConfigMap payload: (path in the volume, contents).
type Payload = Vec<(&'static str, String)>;

fn payload(title: &str, heading: &str) -> Payload {
    vec![
        (
            "demo.toml",
            format!("[tools.list_tasks]\ntitle = \"{title}\"\nwidget = \"board\"\n"),
        ),
        (
            "widgets/board/widget.toml",
            "entry = \"index.html\"\ntitle = \"Board\"\n".into(),
        ),
        (
            "widgets/board/index.html",
            format!("<!doctype html><html><body><h1>{heading}</h1></body></html>\n"),
        ),
    ]
}

/// The kubelet's atomic writer, reduced to what a volume of one ConfigMap
/// with `items` needs.
struct AtomicWriter {
    dir: PathBuf,
    generation: u32,
}

impl AtomicWriter {
    fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        AtomicWriter {
            dir: dir.to_path_buf(),
            generation: 0,
        }
    }

    /// The hidden directory `..data` points to now, if any.
    fn current(&self) -> Option<PathBuf> {
        std::fs::read_link(self.dir.join("..data"))
            .ok()
            .map(|target| self.dir.join(target))
    }

    /// Writes `payload` as the kubelet does: new timestamped directory,
    /// `..data_tmp` renamed over `..data`, user-visible symlinks added for new
    /// top-level names and removed for vanished ones, old directory removed.
    fn write(&mut self, payload: &Payload) {
        self.generation += 1;
        let old = self.current();
        let ts = format!(
            "..2026_05_13_10_26_{:02}.{:09}",
            self.generation, 123_456_789
        );
        let new = self.dir.join(&ts);
        for (path, text) in payload {
            let file = new.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
        }
        let tmp = self.dir.join("..data_tmp");
        symlink(&ts, &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
        let top: Vec<&str> = payload
            .iter()
            .map(|(p, _)| p.split('/').next().unwrap())
            .collect();
        for name in &top {
            let link = self.dir.join(name);
            if std::fs::symlink_metadata(&link).is_err() {
                symlink(Path::new("..data").join(name), &link).unwrap();
            }
        }
        for entry in std::fs::read_dir(&self.dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("..") && !top.contains(&name.as_str()) {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        if let Some(old) = old {
            std::fs::remove_dir_all(old).unwrap();
        }
    }
}

/// The title the snapshot in force gives `list_tasks`, and the board's HTML.
fn in_force(live: &Live) -> (Option<String>, Option<String>) {
    let set = live.load();
    let title = set
        .mount("demo")
        .and_then(|m| m.tool("list_tasks"))
        .and_then(|t| t.title.clone());
    let html = set.widgets().get("board").map(|w| w.html.clone());
    (title, html)
}

/// Waits, at most [`APPLY_LIMIT`], for the snapshot's generation to pass `after`.
async fn wait_generation(live: &Arc<Live>, after: u64) -> u64 {
    let deadline = Instant::now() + APPLY_LIMIT;
    loop {
        let now = live.generation();
        if now > after {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "no reload within {APPLY_LIMIT:?} (generation {now}); reloads (ok, failed): {:?}",
            live.reload_counts()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_configmap_update_by_symlink_swap_reaches_the_running_gateway() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("overlays");
    let mut kubelet = AtomicWriter::new(&dir);
    kubelet.write(&payload("First title", "first board"));

    let live = Live::open(&dir).expect("the mounted ConfigMap loads");
    let (title, html) = in_force(&live);
    assert_eq!(title.as_deref(), Some("First title"));
    assert!(html.unwrap().contains("first board"));

    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    live.watch(stop).expect("the watcher starts");

    // The ConfigMap is edited: both the tool overlay and the widget change.
    let before = live.generation();
    kubelet.write(&payload("Second title", "second board"));
    let after = wait_generation(&live, before).await;
    let (title, html) = in_force(&live);
    assert_eq!(title.as_deref(), Some("Second title"));
    assert!(html.unwrap().contains("second board"));
    assert_eq!(live.reload_counts().1, 0, "no reload failed");

    // An edit that leaves the overlay naming a widget that is gone keeps the
    // last good snapshot.
    kubelet.write(&vec![(
        "demo.toml",
        "[tools.list_tasks]\ntitle = \"Broken\"\nwidget = \"board\"\n".into(),
    )]);
    let deadline = Instant::now() + APPLY_LIMIT;
    while live.reload_counts().1 == 0 {
        assert!(Instant::now() < deadline, "the bad payload was not seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(SETTLE).await;
    assert_eq!(live.generation(), after, "a bad payload is not applied");
    assert_eq!(in_force(&live).0.as_deref(), Some("Second title"));

    // And the next good one applies.
    kubelet.write(&payload("Third title", "third board"));
    wait_generation(&live, after).await;
    let (title, html) = in_force(&live);
    assert_eq!(title.as_deref(), Some("Third title"));
    assert!(html.unwrap().contains("third board"));
}
