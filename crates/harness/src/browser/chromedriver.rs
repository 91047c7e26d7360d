//! chromedriver as a child process of the caller's own, and the headless chromium it starts:
//! its flags, its profile folder, and the cleanup when a test leaves either behind.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::Daemon;
use crate::wait::{wait_until_blocking, wait_until_every};

/// How many ports [`super::Browser::start`] tries: a port found free may be taken before chromedriver
/// binds it, and then chromedriver exits.
const START_ATTEMPTS: u32 = 3;

/// How long chromedriver may take to answer `/status`; it usually needs well under a second.
const DRIVER_READY_LIMIT: Duration = Duration::from_secs(20);

/// The session's own page load and script timeouts, in milliseconds: shorter than
/// [`super::webdriver::COMMAND_LIMIT`], so that chromedriver reports a slow page or script as a `timeout` error
/// (W3C's defaults are 300 s and 30 s) before the HTTP request gives up on it.
const SESSION_TIMEOUT_MS: u64 = 20_000;

/// Debian's launcher (it reads /etc/chromium.d, as chromium started by hand would), found on
/// `PATH` like every tool of the tests, so the limited PATH of `env.sh test` decides
/// (`LB_APT_BINS` declares it).
const CHROMIUM: &str = "chromium";

/// [`CHROMIUM`]'s path on `PATH`: chromedriver wants a path, not a name.
fn chromium() -> String {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(CHROMIUM))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| {
            panic!("no {CHROMIUM} on PATH (apt-get install chromium, or source deploy/tools/env.sh test)")
        })
}

/// Chromium's user data folder, of one browser only. Dropping it kills whatever chromium still
/// uses it and deletes it, also when [`super::Browser::start`] panics half-way.
pub(super) struct Profile(pub(super) PathBuf);

impl Drop for Profile {
    fn drop(&mut self) {
        // When chromedriver could not end the session (it hung, or chromium did), whatever of
        // chromium is left is found by the profile folder, which names this browser only.
        kill_processes_using(&self.0);
        remove_profile(&self.0);
    }
}

/// Starts chromedriver on a free port and waits for its `/status` to say it is ready. A port
/// taken between [`crate::free_port`] and chromedriver's bind makes chromedriver exit: then it
/// is started again on another port.
pub(super) async fn start_driver() -> (Daemon, u16) {
    let mut attempt = 1;
    loop {
        let port = crate::free_port().expect("a free port for chromedriver");
        let mut driver =
            Daemon::start(Path::new("chromedriver"), &[&format!("--port={port}")], &[])
                .unwrap_or_else(|e| {
                    panic!(
                        "{e} (apt-get install chromium-driver, or source deploy/tools/env.sh test)"
                    )
                });
        // Waits for an answer or an exit, whichever comes first; `is_running` wants `&mut`,
        // which each check's future borrows from the cell in turn.
        let cell = std::cell::RefCell::new(&mut driver);
        let cell_ref = &cell;
        let answered = wait_until_every(
            DRIVER_READY_LIMIT,
            Duration::from_millis(50),
            || async move {
                let running = cell_ref.borrow_mut().is_running();
                !running || driver_ready(port).await
            },
        )
        .await
        .is_some();
        let running = driver.is_running();
        if answered && running {
            return (driver, port);
        }
        if running {
            panic!(
                "chromedriver on port {port} did not answer within {DRIVER_READY_LIMIT:?}; \
                 its stderr:\n{}",
                stderr_of(&driver)
            );
        }
        if attempt == START_ATTEMPTS {
            panic!(
                "chromedriver exited before answering, {START_ATTEMPTS} times (ports taken?); \
                 the last one's stderr:\n{}",
                stderr_of(&driver)
            );
        }
        attempt += 1;
    }
}

/// True when chromedriver on `port` says it is ready for a new session.
async fn driver_ready(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let answer = crate::http::request(
        addr,
        "GET",
        "/status",
        &[],
        String::new(),
        Duration::from_secs(2),
    )
    .await;
    matches!(answer, Ok((200, body)) if body.replace(' ', "").contains("\"ready\":true"))
}

pub(super) fn stderr_of(driver: &Daemon) -> String {
    driver
        .stderr()
        .unwrap_or_else(|e| format!("(unreadable: {e})"))
}

/// The session's capabilities: headless chromium with `profile` as its user data folder, so
/// that browsers of parallel tests share no cookies, cache or profile lock; no implicit wait
/// (finding waits only where [`super::Browser::find`] says so) and timeouts within
/// [`super::webdriver::COMMAND_LIMIT`].
pub(super) fn capabilities(profile: &Path) -> Value {
    let args = [
        // The new headless mode is the browser itself without a window, so it renders pages
        // as a user's chromium does.
        "--headless=new".to_owned(),
        // Chromium refuses to start as root with its sandbox, and CI containers run as root.
        "--no-sandbox".to_owned(),
        // Containers often give /dev/shm 64 MB, which chromium outgrows and then crashes.
        "--disable-dev-shm-usage".to_owned(),
        // CI machines have no GPU: chromium renders in software instead of probing for one.
        "--disable-gpu".to_owned(),
        // The same window on every machine, so screenshots compare.
        "--window-size=1280,900".to_owned(),
        format!("--user-data-dir={}", profile.display()),
    ];
    json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium(),
            "args": args,
        },
        "timeouts": {
            "implicit": 0,
            "pageLoad": SESSION_TIMEOUT_MS,
            "script": SESSION_TIMEOUT_MS,
        },
    })
}

/// Kills the processes whose command line names `profile`: chromium's, which were started
/// with `--user-data-dir=<profile>` and which nothing else names (the folder is unique).
fn kill_processes_using(profile: &Path) {
    let needle = format!("--user-data-dir={}", profile.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .split(|&b| b == 0)
            .any(|arg| arg == needle.as_bytes())
        {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// Deletes chromium's profile folder. Helper processes of a killed chromium (the network
/// service, which writes cookies there) exit a moment after it and may still add files while
/// the folder is removed, so a failed removal is tried again for a while.
fn remove_profile(profile: &Path) {
    // A folder still there after 5 s stays: this runs in `Drop`, where a panic would hide
    // the test's own failure, and a leftover profile in the temp folder harms no other run.
    let _ = wait_until_blocking(Duration::from_secs(5), || {
        std::fs::remove_dir_all(profile).is_ok() || !profile.exists()
    });
}
