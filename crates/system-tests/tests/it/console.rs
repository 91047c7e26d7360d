//! The operator console in a real headless chromium (Debian's, through chromedriver), against
//! the three daemons as processes: log in, declare a board, post scores, find a player, see a
//! member edited in Redis as drift and repair it, rebuild, ban a user and see the ranks close
//! up, requeue a parked row, move through a page by keyboard, log out. User ids carry markup
//! throughout, and must show as text. Each page's screenshot is saved under
//! `target/console-screens/`.
//!
//! The session's cookie flags, the content security policy and the CSRF and origin checks are
//! asserted on the HTTP answers themselves (a browser does not show headers).

use std::time::Duration;

use ledgerboard_core::model::{BoardId, EventId};
use ledgerboard_core::projection::KeyLayout;
use ledgerboard_harness::Browser;
use ledgerboard_harness::http::request_parts;
use ledgerboard_testkit::{
    Process, TEST_TOKEN, TestDb, TestRedis, daemon_env, http_request, migrate, workspace_binary,
};

/// A token of the test's `auth.tokens` with the moderate scope only: a valid token the
/// console must refuse.
const MODERATOR_TOKEN: &str = "console-test-moderator";
/// A user id made of markup: if any page put it into HTML unescaped, the image would load
/// and its handler run.
const MARKUP_USER: &str = "<img src=x onerror=\"document.title='owned'\">";
const BOARD: &str = "arena";

struct Stack {
    _db: TestDb,
    redis: redis::Client,
    keys: KeyLayout,
    api: String,
    _daemons: Vec<Process>,
}

impl Stack {
    fn start(db: TestDb, shared: &TestRedis) -> Stack {
        let mut env = daemon_env(&db, shared);
        env.retain(|(k, _)| k != "LEDGERBOARD__AUTH__TOKENS");
        let tokens = format!(
            "{};moderator={}@moderate",
            ledgerboard_testkit::test_tokens(),
            ledgerboard_core::auth::hash_token(MODERATOR_TOKEN)
        );
        for (k, v) in [
            ("LEDGERBOARD__AUTH__TOKENS", tokens.as_str()),
            ("LEDGERBOARD__API__LISTEN", "127.0.0.1:0"),
            // The loopback is this test's "proxy": its X-Forwarded-Proto says whether the
            // browser came over TLS.
            ("LEDGERBOARD__API__TRUSTED_PROXIES", "127.0.0.1/32"),
            ("LEDGERBOARD__PROJECTOR__POLL_INTERVAL_MS", "50"),
            // A row the script refuses is parked after two attempts, 50 ms apart.
            ("LEDGERBOARD__PROJECTOR__MAX_ATTEMPTS", "2"),
            ("LEDGERBOARD__PROJECTOR__RETRY_BASE_MS", "50"),
            ("LEDGERBOARD__PROJECTOR__RETRY_MAX_MS", "50"),
            // One pass at start-up and none after: every repair here is the console's.
            ("LEDGERBOARD__RECONCILER__INTERVAL_MS", "3600000"),
        ] {
            env.push((k.to_owned(), v.to_owned()));
        }
        let env = ledgerboard_harness::env_refs(&env);
        let limit = Duration::from_secs(20);
        let mut daemons = Vec::new();
        let mut api = String::new();
        for name in [
            "ledgerboard-api",
            "ledgerboard-projector",
            "ledgerboard-reconciler",
        ] {
            let mut p = Process::start(&workspace_binary(name).to_string_lossy(), &[], &env);
            let started = format!("{name} started");
            if name == "ledgerboard-api" {
                api = p.wait_for_addr(&started, limit).to_string();
            }
            assert!(p.wait_for_log(&started, limit), "{name}: {}", p.stderr());
            daemons.push(p);
        }
        Stack {
            redis: redis::Client::open(shared.url.as_str()).expect("redis url"),
            keys: KeyLayout::new(&shared.namespace),
            _db: db,
            api,
            _daemons: daemons,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.api)
    }

    fn post_score(&self, user: &str, score: i64, event: &str) {
        let body = serde_json::json!({ "event_id": event, "user_id": user, "score": score });
        let (status, answer) = http_request(
            &self.api,
            "POST",
            &format!("/v1/boards/{BOARD}/scores"),
            &body.to_string(),
        );
        assert!(status == 200 || status == 201, "{status}: {answer}");
    }

    fn redis(&self) -> redis::Connection {
        self.redis
            .get_connection_with_timeout(Duration::from_secs(5))
            .expect("redis connection")
    }

    fn board(&self) -> BoardId {
        BoardId::parse(BOARD).expect("board id")
    }
}

/// The cells of the table rows matching `css`, as text.
async fn rows(browser: &Browser, css: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for row in browser.find_all(css).await {
        let cells = browser
            .execute(
                "return Array.from(arguments[0].children).map(c => c.textContent.trim());",
                vec![row.reference()],
            )
            .await;
        out.push(
            cells
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| v.as_str().unwrap_or_default().to_owned())
                        .collect()
                })
                .unwrap_or_default(),
        );
    }
    out
}

/// Reloads `url` until `done` holds on the text of `css`, for at most `limit`; the last text.
async fn reload_until(
    browser: &Browser,
    url: &str,
    css: &str,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> (bool, String) {
    let text = std::cell::RefCell::new(String::new());
    // A look loads the page: every 200 ms, not the default 20.
    let every = Duration::from_millis(200);
    let held = ledgerboard_testkit::wait_until_every(limit, every, || async {
        browser.goto(url).await;
        // One script call reads the text: no element reference to go stale in between.
        let now = browser
            .execute(
                "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';",
                vec![serde_json::json!(css)],
            )
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let held = done(&now);
        *text.borrow_mut() = now;
        held
    })
    .await;
    (held.is_some(), text.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_finds_why_a_rank_is_wrong_and_fixes_it_from_the_console() {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    let shared = TestRedis::new();
    let stack = Stack::start(db, &shared);
    let browser = Browser::start().await;
    let wait = Duration::from_secs(15);

    // Without a session every page leads to the login form.
    browser.goto(&stack.url("/console/drift")).await;
    assert!(browser.current_url().await.ends_with("/console/login"));
    browser.screenshot("login").await;

    // A token that is not valid, and a valid one without the admin scope, are refused.
    for (token, says) in [
        ("not-a-token", "not valid"),
        (MODERATOR_TOKEN, "lacks the admin scope"),
    ] {
        // A page of its own for each try: the last try's answer (and its error) must not be
        // the page this one types into or reads.
        browser.goto(&stack.url("/console/login")).await;
        browser.find("#token").await.send_keys(token).await;
        browser.find("#login").await.click().await;
        let refused = browser.wait_for_text("#login-error", says, wait).await;
        let error = browser.find("#login-error").await.text().await;
        assert!(refused, "{token}: {error}");
    }
    browser.find("#token").await.send_keys(TEST_TOKEN).await;
    browser.find("#login").await.click().await;
    assert_eq!(browser.find("#actor").await.text().await, "tests");
    assert!(browser.current_url().await.ends_with("/console"));

    // Declare the board from the form; its display name carries markup too.
    browser.find("#new-board").await.send_keys(BOARD).await;
    browser
        .find("#new-name")
        .await
        .send_keys("Arena <b>finals</b>")
        .await;
    browser.find("#create").await.click().await;
    let notice = browser.find("#notice").await.text().await;
    assert!(notice.contains("arena declared"), "{notice}");
    assert!(
        browser
            .source()
            .await
            .contains("Arena &lt;b&gt;finals&lt;/b&gt;")
    );

    // Scores through the api, as a game backend posts them.
    for (user, score) in [
        ("alice", 300),
        ("bob", 500),
        (MARKUP_USER, 200),
        ("carol", 100),
    ] {
        stack.post_score(user, score, &uuid::Uuid::new_v4().to_string());
    }
    let board_url = stack.url(&format!("/console/boards/{BOARD}"));
    let (all_current, text) =
        reload_until(&browser, &board_url, "#side-by-side tbody", wait, |t| {
            t.matches("current").count() == 4
        })
        .await;
    assert!(all_current, "never projected: {text}");
    let side = rows(&browser, "#side-by-side tbody tr").await;
    let users: Vec<&str> = side.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(users, ["bob", "alice", MARKUP_USER, "carol"]);
    // The markup user is text: no image element, no handler ran.
    assert!(browser.find_all("main img").await.is_empty());
    assert_ne!(browser.title().await, "owned");
    browser.screenshot("board").await;

    // The freshness figures follow the board: the page's one script ran under the policy.
    let every = Duration::from_millis(100);
    let script_ran =
        ledgerboard_testkit::wait_until_every(Duration::from_secs(5), every, || async {
            browser
                .find("#freshness")
                .await
                .attr("data-updated")
                .await
                .is_some()
        });
    assert!(
        script_ran.await.is_some(),
        "the live freshness script never ran"
    );

    // Find a player.
    browser.find("#user").await.send_keys("alice").await;
    browser.find("#find").await.click().await;
    assert_eq!(browser.find("#user-verdict").await.text().await, "current");
    assert!(
        browser
            .find("#user-source")
            .await
            .text()
            .await
            .starts_with("rank 2 with 300")
    );
    browser.screenshot("player").await;

    // Someone edits alice's score in Redis: readers of the projection now see her first.
    let mut conn = stack.redis();
    let _: () = redis::cmd("ZADD")
        .arg(stack.keys.scores(&stack.board()))
        .arg(999)
        .arg("alice")
        .query(&mut conn)
        .expect("ZADD");
    let alice = stack.url(&format!("/console/boards/{BOARD}?user=alice"));
    browser.goto(&alice).await;
    assert_eq!(browser.find("#user-verdict").await.text().await, "corrupt");
    let why = browser.find("#user-why").await.text().await;
    assert!(why.contains("edited by hand"), "{why}");
    assert!(
        browser
            .find("#user-projection")
            .await
            .text()
            .await
            .starts_with("rank 1 with 999"),
    );
    let projected = rows(&browser, "#projected tbody tr").await;
    assert_eq!(projected[0][1], "alice", "{projected:?}");
    browser.screenshot("drift").await;

    // Check and repair now: the reconciler's pass over the board repairs her and says so.
    browser.find("#check").await.click().await;
    assert!(
        browser
            .find("#notice")
            .await
            .text()
            .await
            .contains("Check of arena")
    );
    let (repaired, verdict) =
        reload_until(&browser, &alice, "#user-verdict", wait, |t| t == "current").await;
    assert!(repaired, "still {verdict} after the check");
    // The pass repairs before it files its report: wait for the report, not only the repair.
    let (reported, last) = reload_until(&browser, &alice, "#last-pass", wait, |t| {
        t.contains("corrupt 1") && t.contains("repaired 1")
    })
    .await;
    assert!(reported, "{last}");
    browser.goto(&stack.url("/console/drift")).await;
    let passes = rows(&browser, "#passes tbody tr").await;
    assert!(passes[0][7].contains("corrupt 1"), "{passes:?}");
    assert!(passes[0][9].contains("arena"), "{passes:?}");
    browser.screenshot("drift-history").await;

    // A rebuild mends an edit too, whatever the seal says (the seal's counts still hold).
    let _: () = redis::cmd("ZADD")
        .arg(stack.keys.scores(&stack.board()))
        .arg(7)
        .arg("carol")
        .query(&mut conn)
        .expect("ZADD");
    let carol = stack.url(&format!("/console/boards/{BOARD}?user=carol"));
    browser.goto(&carol).await;
    assert_eq!(browser.find("#user-verdict").await.text().await, "corrupt");
    browser.find("#rebuild").await.click().await;
    let (rebuilt, verdict) =
        reload_until(&browser, &carol, "#user-verdict", wait, |t| t == "current").await;
    assert!(rebuilt, "still {verdict} after the rebuild");

    // Ban bob from the moderation page: the ranks close up, in PostgreSQL and in Redis.
    browser
        .goto(&stack.url("/console/moderation?user=bob"))
        .await;
    browser
        .find("#mod-reason")
        .await
        .send_keys("cheating")
        .await;
    browser.find("#moderate").await.click().await;
    let notice = browser.find("#notice").await.text().await;
    assert!(notice.contains("ban of bob applied"), "{notice}");
    let audit = rows(&browser, "#audit tbody tr").await;
    assert_eq!(
        (
            audit[0][1].as_str(),
            audit[0][2].as_str(),
            audit[0][4].as_str()
        ),
        ("tests", "ban", "bob")
    );
    assert!(
        audit.iter().any(|r| r[2] == "check") && audit.iter().any(|r| r[2] == "rebuild"),
        "every console action is audited: {audit:?}"
    );
    browser.screenshot("moderation").await;
    let (closed_up, text) = reload_until(&browser, &board_url, "#projected tbody", wait, |t| {
        !t.contains("bob")
    })
    .await;
    assert!(closed_up, "bob still projected: {text}");
    for table in ["#side-by-side tbody tr", "#projected tbody tr"] {
        let ranked: Vec<(String, String)> = rows(&browser, table)
            .await
            .into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        assert_eq!(
            ranked,
            [
                ("1".to_owned(), "alice".to_owned()),
                ("2".to_owned(), MARKUP_USER.to_owned()),
                ("3".to_owned(), "carol".to_owned())
            ],
            "{table}"
        );
    }

    // A row the projection script refuses for its own fault (its event's marker key holds a
    // hash) is parked; once the key is fixed, requeuing it from the console projects it.
    let event = uuid::Uuid::new_v4().to_string();
    let marker = stack
        .keys
        .event_marker(&stack.board(), &EventId::parse(&event).expect("event id"));
    let _: () = redis::cmd("HSET")
        .arg(&marker)
        .arg("not")
        .arg("a marker")
        .query(&mut conn)
        .expect("HSET");
    stack.post_score("dave", 400, &event);
    let parked_url = stack.url("/console/parked");
    let (parked, text) = reload_until(&browser, &parked_url, "#parked-rows tbody", wait, |t| {
        t.contains("dave") && t.contains("LBWRONGTYPE")
    })
    .await;
    assert!(parked, "never parked: {text}");
    browser.screenshot("parked").await;
    let _: () = redis::cmd("DEL")
        .arg(&marker)
        .query(&mut conn)
        .expect("DEL");
    browser
        .find("#parked-rows tbody input[type=checkbox]")
        .await
        .click()
        .await;
    browser.find("#requeue").await.click().await;
    let notice = browser.find("#notice").await.text().await;
    assert!(notice.contains("1 of 1 rows requeued"), "{notice}");
    let dave = stack.url(&format!("/console/boards/{BOARD}?user=dave"));
    let (projected, verdict) =
        reload_until(&browser, &dave, "#user-verdict", wait, |t| t == "current").await;
    assert!(projected, "the requeued row was never projected: {verdict}");
    browser.goto(&parked_url).await;
    assert!(
        browser
            .find_all("#parked-rows tbody tr[data-id]")
            .await
            .is_empty()
    );

    // By keyboard alone: Tab reaches the declaration form's first field, typing fills it.
    browser.goto(&stack.url("/console")).await;
    browser.screenshot("boards").await;
    let mut reached = false;
    for _ in 0..60 {
        browser.press("\u{E004}").await;
        if browser.focused_id().await == "new-board" {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reached the board id field");
    browser.press("kb").await;
    assert_eq!(
        browser.find("#new-board").await.prop("value").await,
        serde_json::json!("kb")
    );

    // Log out: the session ends.
    browser.find(".logout button").await.click().await;
    browser.goto(&stack.url("/console")).await;
    assert!(browser.current_url().await.ends_with("/console/login"));
    browser.close().await;
}

/// What a browser does not show: the cookie's flags, the security headers, and actions
/// refused without the form's CSRF token or from another origin.
#[tokio::test]
async fn the_session_cookie_csp_csrf_and_origin_are_enforced() {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    let shared = TestRedis::new();
    let stack = Stack::start(db, &shared);
    let addr: std::net::SocketAddr = stack.api.parse().expect("api address");
    let limit = Duration::from_secs(10);
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let login = format!("token={TEST_TOKEN}");

    let (status, headers, _) =
        request_parts(addr, "GET", "/console/login", &[], String::new(), limit)
            .await
            .expect("login page");
    assert_eq!(status, 200);
    let csp = header(&headers, "content-security-policy");
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");

    // Over plain HTTP: HttpOnly, SameSite=Strict, scoped to the console, not Secure.
    let (status, headers, _) =
        request_parts(addr, "POST", "/console/login", &form, login.clone(), limit)
            .await
            .expect("login");
    assert_eq!(status, 303);
    let cookie = header(&headers, "set-cookie");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "{cookie}");
    // Through the trusted proxy, over TLS: Secure as well.
    let tls = [
        ("content-type", "application/x-www-form-urlencoded"),
        ("x-forwarded-proto", "https"),
    ];
    let (_, headers, _) = request_parts(addr, "POST", "/console/login", &tls, login, limit)
        .await
        .expect("login over TLS");
    assert!(header(&headers, "set-cookie").contains("; Secure"));

    // A valid token without the admin scope opens no page.
    let moderator = format!("lb_console={MODERATOR_TOKEN}");
    let (status, _, page) = request_parts(
        addr,
        "GET",
        "/console",
        &[("cookie", moderator.as_str())],
        String::new(),
        limit,
    )
    .await
    .expect("boards page");
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("needs the admin scope"), "{page}");

    // An action with the session but without the page's CSRF token, or from another
    // origin, is refused and does nothing.
    let session = format!("lb_console={TEST_TOKEN}");
    let csrf = ledgerboard_core::auth::csrf_token(TEST_TOKEN);
    let declare = |csrf: &str| format!("csrf={csrf}&board=forged&operator=best");
    for (headers, body, why) in [
        (
            vec![
                ("cookie", session.as_str()),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            declare("0000"),
            "CSRF token",
        ),
        (
            vec![
                ("cookie", session.as_str()),
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", "http://evil.example"),
            ],
            declare(&csrf),
            "another origin",
        ),
    ] {
        let (status, _, page) = request_parts(addr, "POST", "/console", &headers, body, limit)
            .await
            .expect("forged action");
        assert_eq!(status, 403, "{page}");
        assert!(page.contains(why), "{page}");
    }
    let (status, _, _) = request_parts(
        addr,
        "GET",
        "/console/boards/forged",
        &[("cookie", session.as_str())],
        String::new(),
        limit,
    )
    .await
    .expect("board page");
    assert_eq!(status, 200);
    let (status, body) = http_request(&stack.api, "GET", "/v1/boards/forged", "");
    assert!(
        status == 200 && body.contains("\"declared\":false"),
        "a forged action declared the board: {body}"
    );
    // The same action with the token and this origin goes through.
    let (status, headers, _) = request_parts(
        addr,
        "POST",
        "/console",
        &[
            ("cookie", session.as_str()),
            ("content-type", "application/x-www-form-urlencoded"),
            ("origin", &format!("http://{addr}")),
        ],
        declare(&csrf),
        limit,
    )
    .await
    .expect("action");
    assert_eq!(status, 303);
    assert!(header(&headers, "location").contains("forged+declared"));
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} header: {headers:?}"))
}
