//! The client SDKs (`sdks/typescript`, `sdks/csharp`) tested against the real daemons: each
//! test starts the api, a projector and a reconciler as processes on a database and Redis
//! namespace of its own, plus two more api processes on the same database: one with a player
//! rate limit of one request at a time (the SDK must honour the 429's `Retry-After`) and one
//! behind a proxy that loses the answer to the first request it carries, after which the test
//! restarts that api ([`proxy::LosingProxy`]). Then it runs the SDK's own test suite (Node's
//! test runner; the C# runner under `mono`), which reads the addresses, an admin token and
//! the player key from the environment, and asserts its exit status and that the restart
//! left exactly one effect in PostgreSQL: the SDK's retries carried the same event id.

mod proxy;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ledgerboard_testkit::{
    Process, TEST_TOKEN, TestDb, TestRedis, daemon_env, http_request, migrate, workspace_binary,
};
use proxy::LosingProxy;

const API: &str = "ledgerboard-api";
/// The board, player and delta of the submission whose answer the proxy loses.
const RESTART_BOARD: &str = "restart";
const RESTART_USER: &str = "restart-player";
const RESTART_DELTA: i64 = 7;
/// The HS256 player key (`auth.player_keys`) the SDK tests mint player tokens with, standing in
/// for a game's backend: 33 bytes, base64url.
const PLAYER_KID: &str = "sdk";
const PLAYER_SECRET: &str = "c2RrLXBsYXllci10b2tlbnMtc2VjcmV0LW9mLXRlc3Rz";
/// Bounds the SDK's whole suite (its build included).
const SUITE_LIMIT: Duration = Duration::from_secs(600);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct SdkStack {
    db: TestDb,
    _redis: TestRedis,
    env: Vec<(String, String)>,
    api: SocketAddr,
    limited: SocketAddr,
    proxy: LosingProxy,
    /// The api behind the proxy (taken by the restart).
    restartable: Option<Process>,
    daemons: Vec<Process>,
}

impl SdkStack {
    async fn start() -> SdkStack {
        let db = TestDb::create().await;
        migrate(&db.url).await;
        let redis = TestRedis::new();
        let mut env = daemon_env(&db, &redis);
        for (k, v) in [
            ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
            ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "50"),
            // One pass at start-up; requested rebuilds (new boards' seals) between passes.
            ("LEDGERBOARD__RECONCILER__INTERVAL_MS", "3600000"),
            (
                "LEDGERBOARD__AUTH__PLAYER_KEYS",
                &format!("{PLAYER_KID}=HS256:{PLAYER_SECRET}"),
            ),
            // The suites poll reads with player tokens: only the limited api limits players.
            ("LEDGERBOARD__API__PLAYER_RATE_LIMIT_PER_MIN", "0"),
        ] {
            env.push((k.to_owned(), v.to_owned()));
        }
        let mut daemons = Vec::new();
        let (api_process, api) = start_api(&env, &[]);
        daemons.push(api_process);
        let (limited_process, limited) = start_api(
            &env,
            &[
                ("LEDGERBOARD__API__PLAYER_RATE_LIMIT_PER_MIN", "60"),
                ("LEDGERBOARD__API__PLAYER_RATE_LIMIT_BURST", "1"),
            ],
        );
        daemons.push(limited_process);
        let (restartable, restart_addr) = start_api(&env, &[]);
        for name in ["ledgerboard-projector", "ledgerboard-reconciler"] {
            let refs = ledgerboard_harness::env_refs(&env);
            let binary = workspace_binary(name);
            daemons.push(Process::start_ready(&binary.to_string_lossy(), &[], &refs));
        }
        let proxy = LosingProxy::start(restart_addr).await;
        let (status, body) = http_request(
            &api.to_string(),
            "PUT",
            &format!("/v1/boards/{RESTART_BOARD}"),
            r#"{"operator":"add","write_policy":"player"}"#,
        );
        assert_eq!(status, 201, "declare the restart board: {body}");
        SdkStack {
            db,
            _redis: redis,
            env,
            api,
            limited,
            proxy,
            restartable: Some(restartable),
            daemons,
        }
    }

    /// What the SDK suites read: addresses, the admin token, the player key, the restart case.
    fn sdk_env(&self) -> Vec<(String, String)> {
        vec![
            ("LB_API_URL".into(), format!("http://{}", self.api)),
            ("LB_LIMITED_URL".into(), format!("http://{}", self.limited)),
            (
                "LB_RESTART_URL".into(),
                format!("http://{}", self.proxy.addr()),
            ),
            ("LB_RESTART_BOARD".into(), RESTART_BOARD.into()),
            ("LB_RESTART_USER".into(), RESTART_USER.into()),
            ("LB_RESTART_DELTA".into(), RESTART_DELTA.to_string()),
            ("LB_ADMIN_TOKEN".into(), TEST_TOKEN.into()),
            ("LB_PLAYER_KID".into(), PLAYER_KID.into()),
            ("LB_PLAYER_SECRET".into(), PLAYER_SECRET.into()),
        ]
    }

    /// Runs `command` (an SDK's suite) to its end while restarting the api behind the proxy
    /// once the proxy has lost an answer (and putting it back once a retry has met the
    /// outage); returns its exit status and its output.
    async fn run_suite(&mut self, mut command: tokio::process::Command) -> (bool, String) {
        command
            .envs(self.sdk_env())
            .kill_on_drop(true)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let suite = command.output();
        let mut restartable = self.restartable.take().expect("the restartable api");
        let env = self.env.clone();
        let proxy = &self.proxy;
        let restart = async {
            proxy.lost_an_answer().await;
            // The answer is lost; the api crashes and comes back on another port.
            let (process, addr) = tokio::task::spawn_blocking(move || {
                restartable.kill();
                start_api(&env, &[])
            })
            .await
            .expect("restart the api");
            // Back only once a retry has met the outage (a connection closed unanswered).
            proxy.refused_a_connection().await;
            proxy.set_backend(addr);
            process
        };
        tokio::pin!(suite, restart);
        let deadline = tokio::time::sleep(SUITE_LIMIT);
        tokio::pin!(deadline);
        let mut restarted = None;
        let output = loop {
            tokio::select! {
                biased;
                process = &mut restart, if restarted.is_none() => restarted = Some(process),
                out = &mut suite => break out.expect("run the SDK's suite"),
                () = &mut deadline => panic!("the SDK's suite ran for more than {SUITE_LIMIT:?}"),
            }
        };
        self.restartable = restarted;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), text)
    }

    /// The proxy lost one answer, the api was restarted, and PostgreSQL holds exactly one
    /// effect of that submission: one event, the delta once, version 1.
    async fn assert_one_effect_of_the_restarted_submission(&self, output: &str) {
        let (lost, refused) = self.proxy.counts();
        assert_eq!(lost, 1, "the proxy lost no answer:\n{output}");
        assert!(refused >= 1, "no retry met the outage:\n{output}");
        assert!(
            self.restartable.is_some(),
            "the api was not restarted:\n{output}"
        );
        let client = self.db.client().await;
        let events: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM score_events \
                     WHERE board_id = '{RESTART_BOARD}' AND user_id = '{RESTART_USER}'"
                ),
                &[],
            )
            .await
            .expect("count the events")
            .get(0);
        let entry = client
            .query_opt(
                &format!(
                    "SELECT score, version FROM user_scores \
                     WHERE board_id = '{RESTART_BOARD}' AND user_id = '{RESTART_USER}'"
                ),
                &[],
            )
            .await
            .expect("read the entry")
            .map(|row| (row.get::<_, i64>(0), row.get::<_, i64>(1)));
        assert_eq!(
            (events, entry),
            (1, Some((RESTART_DELTA, 1))),
            "the submission whose answer was lost (then {refused} connections refused while \
             the api restarted) must have exactly one effect:\n{output}"
        );
    }

    fn assert_no_panic(&self) {
        for daemon in self.daemons.iter().chain(self.restartable.iter()) {
            let stderr = daemon.stderr();
            assert!(!stderr.contains("panicked"), "a daemon panicked:\n{stderr}");
        }
    }
}

/// Starts an api process with `env` and `extra`, and the address it bound.
fn start_api(env: &[(String, String)], extra: &[(&str, &str)]) -> (Process, SocketAddr) {
    let mut refs = ledgerboard_harness::env_refs(env);
    refs.extend_from_slice(extra);
    let binary = workspace_binary(API);
    let mut process = Process::start(&binary.to_string_lossy(), &[], &refs);
    let addr = process.wait_for_addr("ledgerboard-api started", Duration::from_secs(20));
    (process, addr)
}

/// Runs a setup step of the SDKs (`sdks/sdk.sh ARGS`), which must succeed.
async fn sdk_sh(args: &[&str]) {
    let output = tokio::process::Command::new("bash")
        .arg(repo_root().join("sdks/sdk.sh"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(SUITE_LIMIT, output)
        .await
        .expect("sdks/sdk.sh ran for more than its limit")
        .expect("run sdks/sdk.sh");
    assert!(
        output.status.success(),
        "sdks/sdk.sh {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The suite passed, ran every test (none skipped: a missing variable skips the stack's
/// tests) and the four failure paths a game meets by name.
fn assert_suite_passed(success: bool, output: &str, passed: &str, skipped: &str, names: &[&str]) {
    // Shown with `--nocapture`: each test's line and time.
    eprintln!("{output}");
    assert!(success, "the SDK's suite failed:\n{output}");
    assert!(
        output.contains(skipped),
        "the suite skipped tests ({skipped} expected):\n{output}"
    );
    for name in names {
        assert!(
            output
                .lines()
                .any(|l| l.contains(name) && l.contains(passed)),
            "no passed test named {name:?}:\n{output}"
        );
    }
}

/// The failure paths both SDKs test by name (the same names in both suites).
const FAILURE_PATHS: [&str; 4] = [
    "the api restarted in the middle of a submission",
    "a 429 is honoured",
    "an expired player token is refreshed once",
    "a freshness that says database reaches the caller",
];

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_passes_its_tests_against_the_stack() {
    sdk_sh(&["install"]).await;
    let mut stack = SdkStack::start().await;
    let mut npm = tokio::process::Command::new("npm");
    npm.args(["test", "--silent"])
        .current_dir(repo_root().join("sdks/typescript"));
    let (success, output) = stack.run_suite(npm).await;
    assert_suite_passed(success, &output, "✔", "ℹ skipped 0", &FAILURE_PATHS);
    stack
        .assert_one_effect_of_the_restarted_submission(&output)
        .await;
    stack.assert_no_panic();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_csharp_sdk_builds_and_passes_its_tests_against_the_stack() {
    let out = tempdir();
    sdk_sh(&["build-csharp", &out.to_string_lossy()]).await;
    let mut stack = SdkStack::start().await;
    let mut mono = tokio::process::Command::new("mono");
    mono.arg("--debug")
        .arg(out.join("Ledgerboard.Client.Tests.exe"));
    let (success, output) = stack.run_suite(mono).await;
    assert_suite_passed(success, &output, "ok -", "# skipped 0", &FAILURE_PATHS);
    stack
        .assert_one_effect_of_the_restarted_submission(&output)
        .await;
    stack.assert_no_panic();
    let _ = std::fs::remove_dir_all(&out);
}

/// A folder of its own under the system's temporary folder, for the C# build.
fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lb-csharp-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("create the build folder");
    dir
}
