//! The live overlay snapshot: one immutable [`OverlaySet`] that requests
//! read once per exchange and a reload replaces whole. A reload that fails
//! keeps the last good snapshot and says why; one that changes nothing is
//! not announced. Watching the directory (debounced) lives here too.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use mcp_ui_overlay::overlay::{
    LoadError, LoadErrors, LoadOptions, OverlaySet, inspect_dir_with, load_dir_with,
};

/// What the gateway tells live sessions after an overlay reload.
pub(crate) const LIST_CHANGED: [&[u8]; 2] = [
    br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#,
];

/// Quiet time after the last file event before reloading: editors write a
/// file in several steps (truncate, write, rename, chmod).
const DEBOUNCE: Duration = Duration::from_millis(200);

/// Holds the current overlays and announces each change.
pub struct Live {
    dir: Option<PathBuf>,
    /// How the directory is read (`limits.max_widget_bytes`, `public_url`).
    options: LoadOptions,
    current: ArcSwap<OverlaySet>,
    generation: AtomicU64,
    changes: watch::Sender<u64>,
    /// Reloads that succeeded (applied or unchanged) and that failed.
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    /// The configured mounts, once [`Live::describe`] was called: what the
    /// overlays are compared with at start and after each reload.
    mounts: OnceLock<Vec<String>>,
}

/// What a reload did.
#[derive(Debug, PartialEq, Eq)]
pub enum Reloaded {
    /// A new snapshot is in force.
    Changed(u64),
    /// The files compile to what is already in force.
    Unchanged,
}

impl Live {
    /// No overlays: the gateway forwards everything as it is.
    pub fn empty() -> Arc<Self> {
        Self::new(None, OverlaySet::default())
    }

    pub fn new(dir: Option<PathBuf>, initial: OverlaySet) -> Arc<Self> {
        Self::build(dir, initial, LoadOptions::default())
    }

    fn build(dir: Option<PathBuf>, initial: OverlaySet, options: LoadOptions) -> Arc<Self> {
        Arc::new(Live {
            dir,
            options,
            current: ArcSwap::from_pointee(initial),
            generation: AtomicU64::new(0),
            changes: watch::channel(0).0,
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
            mounts: OnceLock::new(),
        })
    }

    /// Load `dir` for the first time. A missing directory means no overlays;
    /// a broken one is an error (there is no last good snapshot to keep).
    pub fn open(dir: &Path) -> Result<Arc<Self>, LoadErrors> {
        Self::open_with(dir, LoadOptions::default())
    }

    /// [`Live::open`], reading the directory with `options` at start and on
    /// every reload.
    pub fn open_with(dir: &Path, options: LoadOptions) -> Result<Arc<Self>, LoadErrors> {
        let set = if dir.exists() {
            load_dir_with(dir, &options)?
        } else {
            tracing::info!(dir = %dir.display(), "no overlay directory; upstreams are served unchanged");
            OverlaySet::default()
        };
        log_meta_overrides(&set);
        Ok(Self::build(Some(dir.to_path_buf()), set, options))
    }

    /// The snapshot in force; hold it for the whole exchange.
    pub fn load(&self) -> Arc<OverlaySet> {
        self.current.load_full()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Notified with the new generation after every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Swap in a new snapshot (keeping the widget versions the old one served
    /// readable) and announce it.
    pub(crate) fn publish(&self, mut next: OverlaySet) -> Reloaded {
        let previous = self.current.load_full();
        next.retain_previous_versions(&previous);
        if next == *previous {
            return Reloaded::Unchanged;
        }
        self.current.store(Arc::new(next));
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.changes.send_replace(generation);
        Reloaded::Changed(generation)
    }

    /// Log what the overlays do for the configured `mounts`: one line per
    /// mount (its files, tools, render tools and widgets) and a warning, with
    /// file and line, for each file whose upstream is not configured (the
    /// same finding as `check`'s). Again after each applied reload.
    pub fn describe(&self, mounts: Vec<String>) {
        let _ = self.mounts.set(mounts);
        self.log_what_applies();
    }

    fn log_what_applies(&self) {
        let (Some(dir), Some(mounts)) = (&self.dir, self.mounts.get()) else {
            return;
        };
        if !dir.exists() {
            return;
        }
        let inspection = inspect_dir_with(dir, &self.options);
        for mount in mounts {
            tracing::info!("{}", inspection.mount_summary(mount));
        }
        let configured: Vec<&str> = mounts.iter().map(String::as_str).collect();
        for finding in inspection.unconfigured(&configured) {
            tracing::warn!("overlay file ignored: {finding}");
        }
    }

    /// Read the directory again. On errors the snapshot in force stays.
    pub fn reload(&self) -> Result<Reloaded, LoadErrors> {
        let Some(dir) = &self.dir else {
            return Ok(Reloaded::Unchanged);
        };
        if !dir.exists() && self.current.load().mounts().next().is_some() {
            // Deleted (or moved) while serving: most often a step of a
            // checkout or a sync, not a wish to drop the UI. Keep serving the
            // last good overlays until the directory returns.
            self.reloads_failed.fetch_add(1, Ordering::Relaxed);
            return Err(LoadErrors(vec![LoadError {
                file: dir.clone(),
                line: None,
                place: None,
                reason: "the overlay directory is gone; the last good overlays stay in force \
                         until it returns"
                    .into(),
            }]));
        }
        let next = if dir.exists() {
            load_dir_with(dir, &self.options).inspect_err(|_| {
                self.reloads_failed.fetch_add(1, Ordering::Relaxed);
            })?
        } else {
            OverlaySet::default()
        };
        self.reloads_ok.fetch_add(1, Ordering::Relaxed);
        Ok(self.publish(next))
    }

    /// Reloads so far: (succeeded, failed).
    pub fn reload_counts(&self) -> (u64, u64) {
        (
            self.reloads_ok.load(Ordering::Relaxed),
            self.reloads_failed.load(Ordering::Relaxed),
        )
    }

    /// Watch the directory and reload on changes until `stop`.
    pub fn watch(self: &Arc<Self>, stop: CancellationToken) -> notify::Result<()> {
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        // Absolute, so the paths of events from both watches below compare
        // with it.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let (tx, mut rx) = mpsc::channel::<()>(1);
        let ours = dir.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = event.is_ok_and(|e| is_about(&e, &ours));
                if relevant {
                    // A full channel already means "reload pending".
                    let _ = tx.try_send(());
                }
            })?;
        // Watch the parent too, so the directory being created, replaced or
        // removed is noticed.
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        watcher.watch(&parent, RecursiveMode::NonRecursive)?;
        if dir.exists() {
            watcher.watch(&dir, RecursiveMode::Recursive)?;
        }
        let live = self.clone();
        tokio::spawn(async move {
            let mut watcher = watcher;
            let mut watching = dir.exists();
            loop {
                tokio::select! {
                    got = rx.recv() => if got.is_none() { return },
                    _ = stop.cancelled() => return,
                }
                // Debounce: wait for a quiet period, absorbing further events.
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(DEBOUNCE) => break,
                        got = rx.recv() => if got.is_none() { return },
                        _ = stop.cancelled() => return,
                    }
                }
                // An editor saving in place truncates first: an empty overlay
                // file is a save in progress, not "no overlays". Wait it out,
                // a bounded number of times.
                for _ in 0..10 {
                    if !has_empty_overlay_file(&dir) {
                        break;
                    }
                    tokio::time::sleep(DEBOUNCE).await;
                }
                if !watching && dir.exists() {
                    watching = watcher.watch(&dir, RecursiveMode::Recursive).is_ok();
                } else if watching && !dir.exists() {
                    watching = false;
                }
                live.reload_and_log();
            }
        });
        Ok(())
    }

    fn reload_and_log(&self) {
        match self.reload() {
            Ok(Reloaded::Changed(generation)) => {
                tracing::info!(generation, "overlays reloaded");
                self.log_what_applies();
                log_meta_overrides(&self.load());
            }
            Ok(Reloaded::Unchanged) => tracing::debug!("overlay files changed; nothing to apply"),
            Err(errors) => {
                tracing::warn!(
                    generation = self.generation(),
                    "overlay reload failed; the last good overlays stay in force\n{errors}"
                );
            }
        }
    }
}

/// Warns of each widget `meta` key that replaces one the gateway writes.
fn log_meta_overrides(set: &OverlaySet) {
    for line in set.meta_overrides() {
        tracing::warn!("{line}");
    }
}

/// Whether a file event concerns the overlay directory or what is in it.
/// The parent is watched only to see the directory come and go: a log file
/// written beside it must not cause a reload (each failed reload writes a
/// log line).
fn is_about(event: &notify::Event, dir: &Path) -> bool {
    if matches!(event.kind, notify::EventKind::Access(_)) {
        return false;
    }
    // No paths: the watcher lost track (queue overflow); read again.
    event.paths.is_empty() || event.paths.iter().any(|p| p.starts_with(dir))
}

/// Whether a mount file directly in `dir` is empty (being written).
fn has_empty_overlay_file(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        let overlay = matches!(
            path.extension().and_then(|x| x.to_str()),
            Some("toml" | "json")
        );
        overlay && e.metadata().is_ok_and(|m| m.is_file() && m.len() == 0)
    })
}
