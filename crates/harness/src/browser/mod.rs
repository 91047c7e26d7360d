//! A headless chromium of the caller's own, driven through chromedriver (WebDriver over plain
//! HTTP on localhost), for the operator console's browser tests. Debian's `chromium` and
//! `chromium-driver` packages provide both (`source deploy/tools/env.sh test` installs them and
//! puts `chromedriver` on the limited PATH).
//!
//! The WebDriver client is the harness's own (`webdriver.rs`); chromedriver's process and
//! chromium's flags and profile are `chromedriver.rs`. A command that fails panics with its name
//! and chromedriver's message, as the rest of the harness does in tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::Daemon;
use crate::wait::wait_until_every;

/// How often a look through chromedriver is repeated: each is a WebDriver request, which a
/// tighter poll would only multiply on a loaded machine.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

mod chromedriver;
mod element;
mod webdriver;

use chromedriver::{Profile, capabilities, start_driver, stderr_of};
pub use element::Element;
use webdriver::{NEW_SESSION_LIMIT, Session, exchange, string_of};

/// How long [`Browser::find`] waits for a match.
const FIND_LIMIT: Duration = Duration::from_secs(10);

/// Keys for [`Browser::press`] and [`Element::send_keys`], as W3C WebDriver codes them (the
/// Unicode private use area).
pub mod keys {
    pub const BACKSPACE: &str = "\u{E003}";
    pub const TAB: &str = "\u{E004}";
    pub const ENTER: &str = "\u{E007}";
    /// Held by [`super::Browser::press`] until its keys end: `SHIFT` then `TAB` is Shift+Tab.
    pub const SHIFT: &str = "\u{E008}";
    pub const ESCAPE: &str = "\u{E00C}";
}

/// A chromedriver child process and one WebDriver session of a headless chromium with a
/// profile of its own. [`Browser::close`] ends the session (chromium exits); dropping it
/// without closing (a test that panicked) ends the session too, then stops chromedriver, and
/// deletes the profile either way.
pub struct Browser {
    session: Arc<Session>,
    /// False once [`Browser::close`] ended the session: then `Drop` does not end it again.
    open: bool,
    driver: Daemon,
    /// Declared last, so dropped last: after chromedriver is gone, nothing starts a chromium
    /// on it any more.
    _profile: Profile,
}

impl Browser {
    /// Starts chromedriver on a free port, waits until it answers, and opens a session of a
    /// headless chromium. Panics, with chromedriver's stderr, when either does not come up.
    pub async fn start() -> Browser {
        let suffix = crate::unique_suffix();
        let profile = Profile(std::env::temp_dir().join(format!("ledgerboard-chromium-{suffix}")));
        std::fs::create_dir_all(&profile.0).expect("a folder for chromium's profile");
        let (driver, port) = start_driver().await;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let body = json!({ "capabilities": { "alwaysMatch": capabilities(&profile.0) } });
        let reply = exchange(addr, "POST", "/session", Some(body), NEW_SESSION_LIMIT).await;
        let id = match reply {
            Ok(value) => match value.get("sessionId").and_then(Value::as_str) {
                Some(id) => id.to_owned(),
                None => panic!("chromedriver's new session has no sessionId: {value}"),
            },
            Err(e) => panic!(
                "chromedriver on port {port} opened no chromium session: {e}\n\
                 chromedriver's stderr:\n{}",
                stderr_of(&driver)
            ),
        };
        Browser {
            session: Arc::new(Session { addr, id }),
            open: true,
            driver,
            _profile: profile,
        }
    }

    /// Opens `url` and waits until it has loaded (W3C "navigate to").
    pub async fn goto(&self, url: &str) {
        self.session
            .command("navigate to", "POST", "/url", Some(json!({ "url": url })))
            .await;
    }

    /// The first element matching the CSS selector `css`, waiting up to 10 s for one to appear.
    /// Panics when none did, with the page's URL and the start of its source.
    pub async fn find(&self, css: &str) -> Element {
        // The condition keeps what it found: a `Cell`, since each check is a future of its own.
        let found = std::cell::Cell::new(None);
        let found_ref = &found;
        wait_until_every(FIND_LIMIT, POLL_INTERVAL, || async move {
            let element = self.try_find(css).await;
            let hit = element.is_some();
            found_ref.set(element);
            hit
        })
        .await;
        if let Some(element) = found.into_inner() {
            return element;
        }
        let url = self.current_url().await;
        let source: String = self.source().await.chars().take(2_000).collect();
        panic!(
            "no element matches {css:?} within {FIND_LIMIT:?} on {url}; \
             the page's source begins:\n{source}"
        );
    }

    /// Every element matching the CSS selector `css` now, in document order, without waiting.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let found = self
            .session
            .command(
                &format!("find elements {css:?}"),
                "POST",
                "/elements",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await;
        let Value::Array(references) = found else {
            panic!("find elements {css:?}: chromedriver answered no list: {found}");
        };
        references
            .iter()
            .map(|r| Element::from_reference(&self.session, r))
            .collect()
    }

    /// The first element matching the CSS selector `css` now, without waiting.
    pub async fn try_find(&self, css: &str) -> Option<Element> {
        self.find_all(css).await.into_iter().next()
    }

    pub async fn current_url(&self) -> String {
        self.text_of("get current URL", "/url").await
    }

    /// The page's HTML as chromium serialises its document now (W3C "get page source").
    pub async fn source(&self) -> String {
        self.text_of("get page source", "/source").await
    }

    pub async fn title(&self) -> String {
        self.text_of("get title", "/title").await
    }

    /// A GET of the session whose answer is a string.
    async fn text_of(&self, name: &str, path: &str) -> String {
        let value = self.session.command(name, "GET", path, None).await;
        string_of(name, value)
    }

    /// Runs `script` as the body of a function called with `args` (W3C "execute script", its
    /// synchronous form) and returns what it returned. An element among `args` is passed as
    /// [`Element::reference`]; an element returned comes back as one.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.session
            .command(
                "execute script",
                "POST",
                "/execute/sync",
                Some(json!({ "script": script, "args": args })),
            )
            .await
    }

    /// Polls the text of the first element matching `css` until it contains `needle`, for up to
    /// `limit`; returns whether it came to. No match yet, and an element that went stale while
    /// it was read (the page replaced it), count as "not yet".
    pub async fn wait_for_text(&self, css: &str, needle: &str, limit: Duration) -> bool {
        wait_until_every(limit, POLL_INTERVAL, || async {
            if let Some(element) = self.try_find(css).await
                && let Ok(Value::String(text)) = element.try_command("GET", "/text", None).await
            {
                text.contains(needle)
            } else {
                false
            }
        })
        .await
        .is_some()
    }

    /// Types `keys` into whatever element has the focus, through the W3C actions API, so that
    /// Tab moves the focus as a keyboard user's does (see [`keys`]). Each key is pressed and
    /// released in turn, but Shift is held until the last key is released.
    pub async fn press(&self, keys: &str) {
        let mut actions = Vec::new();
        let mut held = Vec::new();
        for key in keys.chars() {
            let value = key.to_string();
            actions.push(json!({ "type": "keyDown", "value": value }));
            if is_modifier(key) {
                held.push(value);
            } else {
                actions.push(json!({ "type": "keyUp", "value": value }));
            }
        }
        for value in held.into_iter().rev() {
            actions.push(json!({ "type": "keyUp", "value": value }));
        }
        let body = json!({
            "actions": [{ "type": "key", "id": "keyboard", "actions": actions }],
        });
        self.session
            .command(
                &format!("perform actions (keys {keys:?})"),
                "POST",
                "/actions",
                Some(body),
            )
            .await;
    }

    /// The `id` attribute of the element that has the focus, "" when it has none (or the focus
    /// is on the page's body).
    pub async fn focused_id(&self) -> String {
        let id = self
            .execute(
                "const e = document.activeElement; return e && e.id ? e.id : '';",
                Vec::new(),
            )
            .await;
        string_of("the focused element's id", id)
    }

    /// Saves a screenshot of the window to `<target dir>/console-screens/<name>.png` and
    /// returns its path: the run's pictures stay beside its build, where CI can collect them.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        assert!(
            !name.is_empty() && !name.contains(['/', '\\']) && name != "..",
            "a screenshot name is a file name without .png, not {name:?}"
        );
        let what = format!("take screenshot {name:?}");
        let encoded = self
            .session
            .command(&what, "GET", "/screenshot", None)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(string_of(&what, encoded))
            .unwrap_or_else(|e| panic!("{what}: chromedriver's answer is no base64: {e}"));
        let dir = target_dir().join("console-screens");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }

    /// Ends the session, which makes chromedriver close chromium and wait for it to exit;
    /// dropping the `Browser` then stops chromedriver and deletes the profile.
    pub async fn close(mut self) {
        self.open = false;
        // A failure here means the session is gone already (chromium crashed, or the test
        // closed the window); Drop still cleans up what is left, and the test's own
        // assertions, not the cleanup, say whether it passed.
        let _ = self.session.try_command("DELETE", "", None).await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium outlives a killed chromedriver and keeps writing into its profile, so the
        // session is ended first, with a request that needs no runtime (a panicking
        // `#[tokio::test]` blocks its one thread here): chromedriver answers once chromium has
        // exited.
        if self.open && self.driver.is_running() {
            let _ = crate::http::request_blocking(
                self.session.addr,
                "DELETE",
                &format!("/session/{}", self.session.id),
                &[],
                String::new(),
                Duration::from_secs(10),
            );
        }
        self.driver.kill();
        // The profile's own drop, right after this, kills what chromedriver left of chromium.
    }
}

/// Whether W3C WebDriver's `key` is a modifier (Shift, Control, Alt, Meta, left or right),
/// which [`Browser::press`] holds down.
fn is_modifier(key: char) -> bool {
    matches!(key, '\u{E008}'..='\u{E00A}' | '\u{E03D}' | '\u{E050}'..='\u{E053}')
}

/// Where cargo builds this workspace: `CARGO_TARGET_DIR` when set to an absolute path, else
/// the folder above the running executable that cargo marked with `CACHEDIR.TAG` (a test runs
/// from `<target>/<profile>/deps`, a binary from `<target>/<profile>`, under a `--target`
/// triple one level deeper, and `build.target-dir` may move it anywhere), else the workspace
/// root's `target`.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from)
        && dir.is_absolute()
    {
        return dir;
    }
    let exe = std::env::current_exe().ok();
    if let Some(dir) = exe
        .as_deref()
        .into_iter()
        .flat_map(Path::ancestors)
        .find(|d| d.join("CACHEDIR.TAG").is_file())
    {
        return dir.to_path_buf();
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target")
}
