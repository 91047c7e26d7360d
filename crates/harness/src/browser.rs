//! A headless chromium of the caller's own, driven through chromedriver (WebDriver over plain
//! HTTP on localhost), for the operator console's browser tests. Debian's `chromium` and
//! `chromium-driver` packages provide both (`source deploy/tools/env.sh test` installs them and
//! puts `chromedriver` on the limited PATH).
//!
//! The WebDriver client is this module's own: the few W3C commands the tests use, as JSON over
//! the harness's HTTP client ([`crate::http::request`]), one bounded request per command. (A
//! WebDriver crate would bring second versions of http, thiserror, cookie and the ICU crates
//! into every crate that depends on the harness.) A command that fails panics with its name and
//! chromedriver's message, as the rest of the harness does in tests.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::Daemon;

/// How many ports [`Browser::start`] tries: a port found free may be taken before chromedriver
/// binds it, and then chromedriver exits.
const START_ATTEMPTS: u32 = 3;

/// How long chromedriver may take to answer `/status`; it usually needs well under a second.
const DRIVER_READY_LIMIT: Duration = Duration::from_secs(20);

/// How long a new session may take: chromedriver answers once chromium is up, which on a cold
/// CI machine can take several seconds.
const NEW_SESSION_LIMIT: Duration = Duration::from_secs(60);

/// How long any other command may take, in total, before it panics as unanswered.
const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// The session's own page load and script timeouts, in milliseconds: shorter than
/// [`COMMAND_LIMIT`], so that chromedriver reports a slow page or script as a `timeout` error
/// (W3C's defaults are 300 s and 30 s) before the HTTP request gives up on it.
const SESSION_TIMEOUT_MS: u64 = 20_000;

/// How long [`Browser::find`] waits for a match, and how often it and
/// [`Browser::wait_for_text`] look again.
const FIND_LIMIT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(100);

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

/// The key under which W3C WebDriver names an element in JSON: the spec's "web element
/// identifier", the one chromedriver sends and accepts.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

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

/// An element of the page, as chromedriver found it. It goes stale when the page it was found
/// on is left or the element is removed; a command on a stale element panics.
pub struct Element {
    session: Arc<Session>,
    id: String,
}

/// Where a session's commands go: chromedriver's address and the session's id.
struct Session {
    addr: SocketAddr,
    id: String,
}

/// Why a WebDriver command failed: chromedriver did not answer (in time, or with JSON), or it
/// answered with a W3C error.
enum Failure {
    Transport(String),
    WebDriver { error: String, message: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(e) => write!(f, "chromedriver did not answer: {e}"),
            Failure::WebDriver { error, message } => write!(f, "{error}: {message}"),
        }
    }
}

/// Chromium's user data folder, of one browser only. Dropping it kills whatever chromium still
/// uses it and deletes it, also when [`Browser::start`] panics half-way.
struct Profile(PathBuf);

impl Browser {
    /// Starts chromedriver on a free port, waits until it answers, and opens a session of a
    /// headless chromium. Panics, with chromedriver's stderr, when either does not come up.
    pub async fn start() -> Browser {
        let suffix = super::unique_suffix();
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
        let started = Instant::now();
        loop {
            if let Some(element) = self.find_all(css).await.into_iter().next() {
                return element;
            }
            if started.elapsed() >= FIND_LIMIT {
                let url = self.current_url().await;
                let source: String = self.source().await.chars().take(2_000).collect();
                panic!(
                    "no element matches {css:?} within {FIND_LIMIT:?} on {url}; \
                     the page's source begins:\n{source}"
                );
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
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
        let started = Instant::now();
        loop {
            if let Some(element) = self.try_find(css).await
                && let Ok(Value::String(text)) = element.try_command("GET", "/text", None).await
                && text.contains(needle)
            {
                return true;
            }
            if started.elapsed() >= limit {
                return false;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
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
            let _ = super::http::request_blocking(
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

impl Element {
    /// An element from a W3C element reference, `{"element-6066-…": "<id>"}`.
    fn from_reference(session: &Arc<Session>, reference: &Value) -> Element {
        match reference.get(ELEMENT_KEY).and_then(Value::as_str) {
            Some(id) => Element {
                session: Arc::clone(session),
                id: id.to_owned(),
            },
            None => panic!("chromedriver answered no element reference: {reference}"),
        }
    }

    /// The element as W3C WebDriver names it in JSON: an argument of [`Browser::execute`].
    pub fn reference(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }

    /// Scrolls the element into view and clicks its centre (W3C "element click"); panics when
    /// something else would receive the click.
    pub async fn click(&self) {
        self.command("element click", "POST", "/click", Some(json!({})))
            .await;
    }

    /// Empties an editable element (W3C "element clear").
    pub async fn clear(&self) {
        self.command("element clear", "POST", "/clear", Some(json!({})))
            .await;
    }

    /// Focuses the element and types `text` into it (W3C "element send keys"; see [`keys`]).
    pub async fn send_keys(&self, text: &str) {
        self.command(
            &format!("element send keys {text:?}"),
            "POST",
            "/value",
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// The element's rendered text, as a user reads it (W3C "get element text").
    pub async fn text(&self) -> String {
        let text = self.command("get element text", "GET", "/text", None).await;
        string_of("get element text", text)
    }

    /// The attribute `name` as the markup set it, `None` when the element has none (W3C "get
    /// element attribute").
    pub async fn attr(&self, name: &str) -> Option<String> {
        let what = format!("get element attribute {name:?}");
        let path = format!("/attribute/{}", path_segment(name));
        match self.command(&what, "GET", &path, None).await {
            Value::Null => None,
            Value::String(value) => Some(value),
            other => panic!("{what}: chromedriver answered no string: {other}"),
        }
    }

    /// The DOM property `name` as it is now (W3C "get element property"): an input's `value`
    /// after typing, a checkbox's `checked`; `null` when the element has no such property.
    pub async fn prop(&self, name: &str) -> Value {
        let what = format!("get element property {name:?}");
        let path = format!("/property/{}", path_segment(name));
        self.command(&what, "GET", &path, None).await
    }

    async fn command(&self, what: &str, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/element/{}{path}", self.id);
        self.session.command(what, method, &path, body).await
    }

    async fn try_command(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let path = format!("/element/{}{path}", self.id);
        self.session.try_command(method, &path, body).await
    }
}

impl Session {
    /// Sends the command at `path` under the session and returns its value; panics, naming the
    /// command (`what`), when it fails.
    async fn command(&self, what: &str, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.try_command(method, path, body).await {
            Ok(value) => value,
            Err(e) => panic!("WebDriver command {what} ({method} {path}) failed: {e}"),
        }
    }

    async fn try_command(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Failure> {
        let path = format!("/session/{}{path}", self.id);
        exchange(self.addr, method, &path, body, COMMAND_LIMIT).await
    }
}

/// One WebDriver request to chromedriver at `addr`: the JSON `body` (none for GET and DELETE),
/// and the answer's `value`, or the W3C error it carries.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<Value>,
    limit: Duration,
) -> Result<Value, Failure> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let (status, answer) = super::http::request(addr, method, path, &[], body, limit)
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    let mut answer: Value = serde_json::from_str(&answer).map_err(|e| {
        let start: String = answer.chars().take(500).collect();
        Failure::Transport(format!("HTTP {status} with no JSON ({e}): {start}"))
    })?;
    let value = answer
        .get_mut("value")
        .map(Value::take)
        .unwrap_or(Value::Null);
    if let Some(error) = value.get("error").and_then(Value::as_str) {
        return Err(Failure::WebDriver {
            error: error.to_owned(),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    }
    if !(200..300).contains(&status) {
        return Err(Failure::Transport(format!("HTTP {status}: {answer}")));
    }
    Ok(value)
}

/// The string a command answered with; panics naming the command when it is something else.
fn string_of(what: &str, value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => panic!("{what}: chromedriver answered no string: {other}"),
    }
}

/// Whether W3C WebDriver's `key` is a modifier (Shift, Control, Alt, Meta, left or right),
/// which [`Browser::press`] holds down.
fn is_modifier(key: char) -> bool {
    matches!(key, '\u{E008}'..='\u{E00A}' | '\u{E03D}' | '\u{E050}'..='\u{E053}')
}

/// `name` fit for one segment of a URL path: bytes outside the unreserved set percent-encoded.
fn path_segment(name: &str) -> String {
    let mut segment = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            segment.push(char::from(byte));
        } else {
            segment.push_str(&format!("%{byte:02X}"));
        }
    }
    segment
}

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
async fn start_driver() -> (Daemon, u16) {
    let mut attempt = 1;
    loop {
        let port = super::free_port().expect("a free port for chromedriver");
        let mut driver =
            Daemon::start(Path::new("chromedriver"), &[&format!("--port={port}")], &[])
                .unwrap_or_else(|e| {
                    panic!(
                        "{e} (apt-get install chromium-driver, or source deploy/tools/env.sh test)"
                    )
                });
        let started = Instant::now();
        while started.elapsed() < DRIVER_READY_LIMIT {
            if !driver.is_running() {
                break;
            }
            if driver_ready(port).await {
                return (driver, port);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if driver.is_running() {
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
    let answer = super::http::request(
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

fn stderr_of(driver: &Daemon) -> String {
    driver
        .stderr()
        .unwrap_or_else(|e| format!("(unreadable: {e})"))
}

/// The session's capabilities: headless chromium with `profile` as its user data folder, so
/// that browsers of parallel tests share no cookies, cache or profile lock; no implicit wait
/// (finding waits only where [`Browser::find`] says so) and timeouts within [`COMMAND_LIMIT`].
fn capabilities(profile: &Path) -> Value {
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
    let started = Instant::now();
    while std::fs::remove_dir_all(profile).is_err()
        && profile.exists()
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
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
