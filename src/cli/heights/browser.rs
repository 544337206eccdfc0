//! The browser `check` measures widgets in: found by `--browser`, else
//! `$CHROMIUM`, else the usual names on the PATH; run headless on the
//! measuring page once, its DOM dumped on stdout when the page's (virtual)
//! time is up. The run is bounded in wall-clock time. The browser leads a
//! process group of its own, which is killed whole at the bound and after
//! every run; and the group is on the list of the gateway's guardian
//! (`upstream::stdio::guardian`, started for the run), which ends it should
//! `check` die first, a Ctrl-C included (a Chromium told to stop while a
//! widget holds its renderer does not end by itself).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mcp_ui_upstream::upstream::stdio::guardian;

/// The names looked for on the PATH, in order, when neither `--browser`
/// nor `$CHROMIUM` names a browser.
pub const NAMES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// The browser to run: `flag` (`--browser`), else `env` (`$CHROMIUM`, when
/// not empty), else the first of [`NAMES`] on `path` (`$PATH`). A value
/// with a `/` is a file; one without is looked up on `path`. `Err` says
/// what was looked for, for the finding.
pub fn find(
    flag: Option<&Path>,
    env: Option<OsString>,
    path: Option<OsString>,
) -> Result<PathBuf, String> {
    let path = path.unwrap_or_default();
    let named = |label: String, value: &Path| {
        if value.as_os_str().as_encoded_bytes().contains(&b'/') {
            match std::fs::metadata(value) {
                Err(_) => Err(format!("{label}: no such file")),
                Ok(_) if !executable(value) => Err(format!("{label}: not an executable file")),
                Ok(_) => Ok(value.to_path_buf()),
            }
        } else {
            on_path(value.as_os_str(), &path)
                .ok_or_else(|| format!("{label}: not found on the PATH"))
        }
    };
    if let Some(flag) = flag {
        return named(format!("--browser {}", flag.display()), flag);
    }
    if let Some(env) = env.filter(|e| !e.is_empty()) {
        let value = PathBuf::from(env);
        return named(format!("$CHROMIUM ({})", value.display()), &value);
    }
    NAMES
        .iter()
        .find_map(|name| on_path(OsStr::new(name), &path))
        .ok_or_else(|| {
            format!(
                "no browser to render it in: none of {} is on the PATH, and neither --browser nor $CHROMIUM names one",
                NAMES.join(", ")
            )
        })
}

/// `name` in the first directory of `path` that holds it as an executable
/// file.
fn on_path(name: &OsStr, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| executable(candidate))
}

fn executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The flags of a run, besides the page and the profile. Each matters:
/// - `--headless`: no window; `--dump-dom`: the page's DOM on stdout once
///   `--virtual-time-budget` (ms of the page's own clock, which runs ahead
///   while the page waits on timers) is spent, so a page that waits for
///   quiet costs little real time;
/// - `--disable-site-isolation-trials`: a sandboxed frame otherwise runs
///   in a process of its own, whose timers virtual time does not drive;
///   the widgets' timers would never fire;
/// - `--disable-gpu`, `--disable-dev-shm-usage`: no GPU, and no reliance
///   on a large `/dev/shm`, as in containers and CI;
/// - `--hide-scrollbars`: a frame whose widget is taller than the frame
///   keeps its full width while it is resized;
/// - the rest keep the run to the page: no first-run tasks, extensions,
///   sync, updates or background requests, no sound.
pub fn flags(budget_ms: u64) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-site-isolation-trials",
        "--hide-scrollbars",
        "--mute-audio",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-sync",
        "--disable-background-networking",
        "--disable-component-update",
        "--window-size=800,600",
        "--dump-dom",
    ]
    .map(str::to_owned)
    .to_vec();
    flags.push(format!("--virtual-time-budget={budget_ms}"));
    // Chromium refuses to run as root with its own sandbox; the widgets
    // stay in their sandboxed frames.
    if rustix::process::geteuid().is_root() {
        flags.push("--no-sandbox".to_owned());
    }
    flags
}

/// Runs `browser` on `url` with [`flags`], its profile, stdout and stderr
/// in the directory `work` (files, not pipes: Chromium's crash handler,
/// outside its group, holds them a while after it ends), and returns what
/// it printed on stdout (the page's DOM). `Err` when it did not end within
/// `timeout` (it is then killed) or failed, in words.
pub async fn dump_dom(
    browser: &Path,
    url: &str,
    work: &Path,
    budget_ms: u64,
    timeout: Duration,
) -> Result<String, String> {
    let (dom, log) = (work.join("dom.html"), work.join("browser.log"));
    let create = |file: &Path| {
        std::fs::File::create(file).map_err(|e| format!("cannot write {}: {e}", file.display()))
    };
    let mut child = tokio::process::Command::new(browser)
        .args(flags(budget_ms))
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile").display()
        ))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(create(&dom)?)
        .stderr(create(&log)?)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            format!(
                "the browser {} could not be started: {e}",
                browser.display()
            )
        })?;
    let group = Group::led_by(child.id());
    let ran = tokio::time::timeout(timeout, child.wait()).await;
    // Whatever it left running, or all of it at the bound.
    drop(group);
    let Ok(status) = ran else {
        // Reaped: the group was killed above.
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        return Err(format!(
            "the browser did not answer within {} s (a widget that never yields, such as an endless loop, holds it; --browser-timeout gives it longer)",
            timeout.as_secs()
        ));
    };
    match status {
        Err(e) => Err(format!("the browser {} failed: {e}", browser.display())),
        Ok(status) if !status.success() => Err(format!(
            "the browser {} failed ({status}){}",
            browser.display(),
            last_error(&std::fs::read(&log).unwrap_or_default())
        )),
        Ok(_) => std::fs::read(&dom)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|e| format!("cannot read {}: {e}", dom.display())),
    }
}

/// The browser's process group, on the guardian's list while it may have
/// members; SIGKILLed whole when dropped.
struct Group(Option<rustix::process::Pid>);

impl Group {
    /// The group led by the child `pid` (started with `process_group(0)`).
    fn led_by(pid: Option<u32>) -> Group {
        let pid = pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            // Once per process; without one (it could not start) the group
            // is still ended here, only not should `check` be killed.
            let _ = std::env::current_exe().and_then(|exe| guardian::start(&exe));
            guardian::watch(pid.as_raw_nonzero().get());
        }
        Group(pid)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            guardian::forget(pid.as_raw_nonzero().get());
        }
    }
}

/// The last line of the browser's stderr that says an error, as `: …`,
/// shortened; empty when there is none.
fn last_error(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.contains("dbus"));
    match line {
        Some(l) if l.chars().count() > 300 => {
            format!(": {}…", l.chars().take(300).collect::<String>())
        }
        Some(l) => format!(": {l}"),
        None => String::new(),
    }
}
