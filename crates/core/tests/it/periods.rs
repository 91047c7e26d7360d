//! Periods (migration V7, `board/periods.rs`) against the real PostgreSQL: where the schedule
//! puts a period's start (asked about instants the test chooses: a clock it controls), which
//! period a command lands in, manual resets, and the lock a period's close relies on, under
//! concurrent commands across real boundaries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{Env, env, lock_waits};
use ledgerboard_core::board::definitions::{self, Declaration};
use ledgerboard_core::board::{self, apply_score_command, moderation, periods};
use ledgerboard_core::db::Database;
use ledgerboard_core::definition::{Operator, Reset};
use ledgerboard_core::domain::{BoardId, CommandOutcome};
use ledgerboard_testkit::wait_until;
use serde_json::Number;
use uuid::Uuid;

fn board(name: &str) -> BoardId {
    BoardId::parse(name).expect("board")
}

impl Env {
    /// The board's current and previous periods, by the database clock.
    async fn current(&self, name: &str) -> periods::Periods {
        periods::current(&self.db, &board(name))
            .await
            .expect("periods")
            .expect("the board resets")
    }

    /// Declares `name` as an add board with `reset` in `zone`, through core's definitions.
    async fn declare_resetting(&self, name: &str, reset: Reset, zone: &str) {
        let declaration = Declaration {
            operator: Some(Operator::Add),
            reset: Some(reset),
            time_zone: Some(zone.to_owned()),
            ..Declaration::default()
        };
        definitions::declare(&self.db, &board(name), &declaration)
            .await
            .expect("declare");
    }

    /// One add command of `delta` for `user`, validated against the board's definition.
    async fn add_delta(&self, name: &str, user: &str, delta: i64) -> CommandOutcome {
        add(&self.db, name, user, delta).await
    }

    /// The period id the schedule gives `name` at `at` (RFC 3339), by the database function.
    async fn period_at(&self, name: &str, at: &str) -> Option<String> {
        self.client
            .query_one(
                "SELECT lb_period_id(lb_period_start(d.board_id, d.reset, d.time_zone,
                                                     $2::text::timestamptz))
                 FROM board_definitions d WHERE d.board_id = $1",
                &[&name, &at],
            )
            .await
            .expect("period at")
            .get(0)
    }

    /// user → (score, version) on one board (a board or a period of one).
    async fn entries_of(&self, board_id: &str) -> BTreeMap<String, (i64, i64)> {
        self.client
            .query(
                "SELECT user_id, score, version FROM user_scores WHERE board_id = $1",
                &[&board_id],
            )
            .await
            .expect("rows")
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2))))
            .collect()
    }
}

async fn add(db: &Database, name: &str, user: &str, delta: i64) -> CommandOutcome {
    let def = definitions::get(db, &board(name))
        .await
        .expect("definition");
    let delta = Number::from(delta);
    let cmd = board::command(
        &def,
        &Uuid::new_v4().to_string(),
        user,
        None,
        Some(&delta),
        None,
    )
    .expect("valid command");
    apply_score_command(db, &cmd, None).await.expect("applied")
}

/// Seconds since the epoch, with a fraction.
fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The period id (`YYYYMMDDTHHMMSSZ`) of the whole second `secs` since the epoch.
fn period_id(secs: i64) -> String {
    // Civil date from days since the epoch (Howard Hinnant's algorithm), UTC.
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[tokio::test]
async fn the_schedule_cuts_periods_at_the_board_zones_midnights() {
    let env = env().await;
    env.declare_resetting("daily-paris", Reset::Daily, "Europe/Paris")
        .await;
    env.declare_resetting("weekly-utc", Reset::Weekly, "UTC")
        .await;
    env.declare_resetting("monthly-ny", Reset::Monthly, "America/New_York")
        .await;
    env.declare_resetting("rounds", Reset::Every(10), "UTC")
        .await;
    // The declaration opened each board's first period now: ask about instants after it.
    let cases = [
        // Paris springs forward on 2027-03-28: that day starts at 23:00 UTC the day before
        // (UTC+1), the next at 22:00 UTC (UTC+2).
        ("daily-paris", "2027-03-28T12:00:00Z", "20270327T230000Z"),
        ("daily-paris", "2027-03-28T22:30:00Z", "20270328T220000Z"),
        (
            "daily-paris",
            "2027-03-28T21:59:59.999Z",
            "20270327T230000Z",
        ),
        // Weeks start on Monday: 2027-01-06 is a Wednesday.
        ("weekly-utc", "2027-01-06T10:00:00Z", "20270104T000000Z"),
        ("weekly-utc", "2027-01-04T00:00:00Z", "20270104T000000Z"),
        ("weekly-utc", "2027-01-03T23:59:59Z", "20261228T000000Z"),
        // 2027-02-01 03:00 UTC is still 31 January in New York (UTC-5).
        ("monthly-ny", "2027-02-01T03:00:00Z", "20270101T050000Z"),
        ("monthly-ny", "2027-02-01T05:00:00Z", "20270201T050000Z"),
        ("rounds", "2027-01-01T12:00:07.5Z", "20270101T120000Z"),
        ("rounds", "2027-01-01T12:00:10Z", "20270101T120010Z"),
    ];
    for (name, at, expected) in cases {
        assert_eq!(
            env.period_at(name, at).await.as_deref(),
            Some(expected),
            "{name} at {at}"
        );
    }

    // A manual reset after a boundary starts a period of its own; the next boundary ends it.
    env.client
        .execute(
            "INSERT INTO board_resets (board_id, starts_at, actor)
             VALUES ('weekly-utc', '2027-01-07T15:30:00Z', 'test')",
            &[],
        )
        .await
        .expect("reset");
    for (at, expected) in [
        ("2027-01-07T15:29:59Z", "20270104T000000Z"),
        ("2027-01-07T15:30:00Z", "20270107T153000Z"),
        ("2027-01-10T23:00:00Z", "20270107T153000Z"),
        ("2027-01-11T00:00:00Z", "20270111T000000Z"),
    ] {
        assert_eq!(
            env.period_at("weekly-utc", at).await.as_deref(),
            Some(expected),
            "weekly-utc at {at}"
        );
    }

    // A board that never resets has no period; an unknown zone is refused at declaration.
    env.declare_resetting("plain", Reset::Never, "UTC").await;
    assert_eq!(env.period_at("plain", "2027-01-01T00:00:00Z").await, None);
    let bad = Declaration {
        operator: Some(Operator::Add),
        reset: Some(Reset::Daily),
        time_zone: Some("Mars/Olympus_Mons".into()),
        ..Declaration::default()
    };
    let refused = definitions::declare(&env.db, &board("mars"), &bad).await;
    assert!(
        matches!(
            refused,
            Err(definitions::DefineError::Invalid(
                definitions::DefinitionError::TimeZone
            ))
        ),
        "{refused:?}"
    );
}

#[tokio::test]
async fn commands_land_in_the_period_open_when_their_statement_runs() {
    let env = env().await;
    // A board that never resets keeps its plain id and its commands name no period.
    let plain = env.add_delta("plain", "ann", 5).await;
    assert_eq!(plain.period, None);
    assert_eq!(env.entries_of("plain").await.len(), 1);

    env.declare_resetting("season", Reset::Manual, "UTC").await;
    let first = periods::current(&env.db, &board("season"))
        .await
        .expect("periods")
        .expect("season resets");
    assert_eq!(
        first.previous, None,
        "a manual board starts with one period"
    );
    assert_eq!(first.ends_in_ms, None);
    let a = env.add_delta("season", "ann", 10).await;
    assert_eq!(a.period.as_deref(), Some(first.current.as_str()));
    let b = env.add_delta("season", "ann", 7).await;
    assert_eq!((b.score, b.version), (17, 2));

    // A reset opens the next period at the next whole second.
    let reset = periods::reset(&env.db, &board("season"), "test")
        .await
        .expect("reset")
        .expect("season resets");
    assert!(reset.opened && reset.period > first.current, "{reset:?}");
    let again = periods::reset(&env.db, &board("season"), "test")
        .await
        .expect("reset")
        .expect("season resets");
    assert!(
        !again.opened || again.period > reset.period,
        "a second reset in the same second opens nothing: {again:?}"
    );
    // Wait until the new period is open by the database clock.
    wait_until(Duration::from_secs(5), || async {
        env.current("season").await.current >= reset.period
    })
    .await
    .expect("the reset's period opens");
    let second = env.current("season").await;
    assert_eq!(second.previous.as_deref(), Some(first.current.as_str()));
    let c = env.add_delta("season", "ann", 3).await;
    let third = c.period.clone().expect("a period");
    assert!(third >= reset.period, "{third} before {}", reset.period);
    // A new period is a new entry: ann starts over there, and the old period keeps 17.
    assert_eq!((c.score, c.version), (3, 1));
    let old = format!("season~{}", first.current);
    let new = format!("season~{third}");
    assert_eq!(env.entries_of(&old).await["ann"], (17, 2));
    assert_eq!(env.entries_of(&new).await["ann"], (3, 1));
    assert!(
        env.entries_of("season").await.is_empty(),
        "nothing lands on the board itself"
    );
    // Each event and outbox row names the period its command landed in.
    let events: Vec<String> = env
        .client
        .query(
            "SELECT e.board_id FROM score_events e JOIN leaderboard_outbox o USING (event_id)
             WHERE e.board_id = o.board_id AND e.board_id LIKE 'season~%'
             ORDER BY e.created_at",
            &[],
        )
        .await
        .expect("events")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(events, [old.clone(), old, new]);

    // The rule of a board with entries (in any of its periods) does not change.
    let changed = definitions::update(
        &env.db,
        &board("season"),
        &Declaration {
            reset: Some(Reset::Daily),
            ..Declaration::default()
        },
    )
    .await;
    assert!(
        matches!(changed, Err(definitions::DefineError::HasEntries { .. })),
        "{changed:?}"
    );
}

#[tokio::test]
async fn commands_across_real_boundaries_each_land_in_one_period_and_a_closed_one_stays_closed() {
    let env = env().await;
    env.declare_resetting("rounds", Reset::Every(1), "UTC")
        .await;
    let db = Arc::new(env.db.clone());
    let stop = Instant::now() + Duration::from_millis(3_200);
    let mut tasks = Vec::new();
    for w in 0..6 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut n = 0;
            while Instant::now() < stop {
                let before = now_secs();
                let outcome = add(&db, "rounds", &format!("u{w}-{}", n % 3), 1).await;
                let after = now_secs();
                seen.push((before, after, outcome));
                n += 1;
            }
            seen
        }));
    }

    // Once a boundary has passed, hold the board's period lock exclusively (as a close does):
    // from then on, no command may add to the period that ended.
    let ended = std::cell::RefCell::new(None);
    wait_until(Duration::from_secs(3), || async {
        if let Some(previous) = env.current("rounds").await.previous
            && env.entries_of(&format!("rounds~{previous}")).await.len() > 1
        {
            *ended.borrow_mut() = Some(previous);
        }
        ended.borrow().is_some()
    })
    .await;
    let ended = ended
        .into_inner()
        .expect("a period with entries ended while commands ran");
    let ended_board = format!("rounds~{ended}");
    let count = "SELECT count(*), coalesce(sum(version), 0)::bigint FROM user_scores
                 WHERE board_id = $1";
    let mut close = env.db.client().await.expect("client");
    let tx = close.transaction().await.expect("begin");
    tx.execute(
        "SELECT pg_advisory_xact_lock(lb_period_lock_key('rounds'))",
        &[],
    )
    .await
    .expect("lock");
    let at_close: (i64, i64) = {
        let r = tx.query_one(count, &[&ended_board]).await.expect("count");
        (r.get(0), r.get(1))
    };
    tx.commit().await.expect("commit");
    // Commands go on for a while after the close.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let later = env
        .client
        .query_one(count, &[&ended_board])
        .await
        .expect("count");
    assert_eq!(
        (later.get::<_, i64>(0), later.get::<_, i64>(1)),
        at_close,
        "a command landed in period {ended} after its close held the lock"
    );

    let mut commands = 0;
    let mut periods_seen = std::collections::BTreeSet::new();
    for task in tasks {
        for (before, after, outcome) in task.await.expect("writer") {
            commands += 1;
            let period = outcome.period.expect("every command names its period");
            // The period is the 1-second period of an instant between the send and the answer
            // (the database and the test share this machine's clock).
            let earliest = period_id(before.floor() as i64);
            let latest = period_id(after.floor() as i64);
            assert!(
                earliest <= period && period <= latest,
                "sent at {before}, answered at {after}, landed in {period}"
            );
            periods_seen.insert(period);
        }
    }
    assert!(periods_seen.len() >= 3, "{periods_seen:?}");
    // Each command's effect is in exactly one period: the versions summed over every period
    // are the commands.
    let versions: i64 = env
        .client
        .query_one(
            "SELECT coalesce(sum(version), 0)::bigint FROM user_scores
             WHERE board_id > 'rounds~' AND board_id < 'rounds~~'",
            &[],
        )
        .await
        .expect("versions")
        .get(0);
    assert_eq!(versions, commands);
}

#[tokio::test]
async fn a_close_waits_for_the_command_in_flight_across_the_boundary() {
    let env = env().await;
    // A scheduled boundary: a manual reset waits for the commands in flight (it takes the
    // period lock: a_manual_reset_waits_for_the_command_in_flight), a schedule does not.
    env.declare_resetting("season", Reset::Every(4), "UTC")
        .await;
    // Start just after a boundary, so that the two commands below read clocks in one period.
    let wait = 4.0 - now_secs().rem_euclid(4.0) + 0.1;
    tokio::time::sleep(Duration::from_secs_f64(wait)).await;
    let first = env
        .add_delta("season", "ann", 10)
        .await
        .period
        .expect("period");
    let old = format!("season~{first}");

    // Hold ann's row so that her next command reads the clock (in the first period) and then
    // waits, in flight, across the boundary.
    let mut holder = env.db.client().await.expect("client");
    let hold = holder.transaction().await.expect("begin");
    hold.execute(
        "SELECT 1 FROM user_scores WHERE board_id = $1 AND user_id = 'ann' FOR UPDATE",
        &[&old],
    )
    .await
    .expect("hold the row");
    let db = env.db.clone();
    let in_flight = tokio::spawn(async move { add(&db, "season", "ann", 5).await });
    env.wait_for_a_lock_wait().await;
    assert!(
        !in_flight.is_finished(),
        "the command should wait for the row"
    );

    wait_until(Duration::from_secs(6), || async {
        env.current("season").await.current > first
    })
    .await
    .expect("the next period opens");

    // The first period has ended. Its close takes the period lock exclusively: it must wait
    // for the command still in flight in it.
    let db = env.db.clone();
    let closing_board = old.clone();
    let close = tokio::spawn(async move {
        let mut client = db.client().await.expect("client");
        let tx = client.transaction().await.expect("begin");
        tx.execute(
            "SELECT pg_advisory_xact_lock(lb_period_lock_key('season'))",
            &[],
        )
        .await
        .expect("lock");
        let version: i64 = tx
            .query_one(
                "SELECT version FROM user_scores WHERE board_id = $1 AND user_id = 'ann'",
                &[&closing_board],
            )
            .await
            .expect("ann")
            .get(0);
        tx.commit().await.expect("commit");
        version
    });
    env.wait_for_lock_waits(2).await;
    assert!(
        !close.is_finished(),
        "the close took the lock while a command of its period was in flight"
    );
    hold.commit().await.expect("release the row");
    let landed = in_flight.await.expect("command");
    assert_eq!(landed.period.as_deref(), Some(first.as_str()));
    assert_eq!((landed.score, landed.version), (15, 2));
    assert_eq!(
        close.await.expect("close"),
        2,
        "the close saw the late command"
    );
}

/// A `best` board's command of `score` for `user`, validated against the board's definition.
async fn best(db: &Database, name: &str, user: &str, score: i64) -> CommandOutcome {
    let def = definitions::get(db, &board(name))
        .await
        .expect("definition");
    let score = Number::from(score);
    let cmd = board::command(
        &def,
        &Uuid::new_v4().to_string(),
        user,
        Some(&score),
        None,
        None,
    )
    .expect("valid command");
    apply_score_command(db, &cmd, None).await.expect("applied")
}

async fn moderate(db: &Database, action: moderation::Action) {
    moderation::moderate(
        db,
        &moderation::Command {
            action_id: Uuid::new_v4(),
            action,
            reason: "test".into(),
            actor: "test".into(),
        },
    )
    .await
    .expect("moderated");
}

/// SHA-256 (hex) of the standings' lines, computed here from what the test expects.
fn digest(lines: &[(i64, &str, i64, i64)]) -> String {
    use sha2::Digest;
    let text = lines
        .iter()
        .map(|(p, u, s, t)| format!("{p}\t{u}\t{s}\t{t}"))
        .collect::<Vec<_>>()
        .join("\n");
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn a_close_freezes_the_standings_once_and_verify_checks_them() {
    let env = env().await;
    // A time trial: lowest first, equal times by who set them first.
    definitions::declare(
        &env.db,
        &board("cup"),
        &Declaration {
            operator: Some(Operator::Best),
            sort: Some(ledgerboard_core::definition::Sort::Ascending),
            tie_break: Some(ledgerboard_core::definition::TieBreak::Earliest),
            reset: Some(Reset::Manual),
            ..Declaration::default()
        },
    )
    .await
    .expect("declare");
    let period = best(&env.db, "cup", "ann", 50)
        .await
        .period
        .expect("period");
    for (user, time) in [
        ("bob", 48),
        ("cid", 50),
        ("dan", 52),
        ("eve", 47),
        ("ann", 49),
    ] {
        best(&env.db, "cup", user, time).await;
    }
    // eve is banned and dan removed before the close: neither is in the standings.
    let cup = board("cup").in_period(&period).expect("period board");
    let user = |u: &str| ledgerboard_core::domain::UserId::parse(u).expect("user");
    moderate(&env.db, moderation::Action::Ban { user: user("eve") }).await;
    moderate(
        &env.db,
        moderation::Action::Remove {
            board: cup.clone(),
            user: user("dan"),
        },
    )
    .await;
    // cid is banned and unbanned again: in the standings, at a version no event carries (each
    // ban and unban re-versions the entries; the chaos run found verify calling that a
    // disagreement).
    moderate(&env.db, moderation::Action::Ban { user: user("cid") }).await;
    moderate(&env.db, moderation::Action::Unban { user: user("cid") }).await;

    // Open: not ended.
    assert_eq!(
        periods::close(&env.db, &board("cup"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::NotEnded
    );
    periods::reset(&env.db, &board("cup"), "test")
        .await
        .expect("reset");
    wait_until(Duration::from_secs(5), || async {
        env.current("cup").await.current != period
    })
    .await
    .expect("the next period opens");
    // Ended, but nothing was projected yet (no projector runs here): the close waits for it.
    assert_eq!(
        periods::close(&env.db, &board("cup"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::Pending
    );
    env.client
        .execute(
            "UPDATE leaderboard_outbox SET published_at = now() WHERE published_at IS NULL",
            &[],
        )
        .await
        .expect("project");

    let closed = match periods::close(&env.db, &board("cup"), &period)
        .await
        .expect("close")
    {
        periods::CloseOutcome::Closed(c) => c,
        other => panic!("expected a close, got {other:?}"),
    };
    // ann improved to 49 after bob's 48: bob, ann; cid at 50; ties none left. The earliest
    // boards' ties are the database's: read them to build the expected lines.
    let ties: BTreeMap<String, i64> = env
        .client
        .query(
            "SELECT user_id, tie FROM user_scores WHERE board_id = $1",
            &[&cup.as_str()],
        )
        .await
        .expect("ties")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let expected =
        [(1, "bob", 48), (2, "ann", 49), (3, "cid", 50)].map(|(p, u, s)| (p, u, s, ties[u]));
    assert_eq!(closed.entries, 3);
    assert_eq!(
        closed.digest,
        digest(&expected),
        "the digest of the lines the test expects"
    );
    assert_eq!(
        (closed.sort.as_str(), closed.tie_break.as_str()),
        ("ascending", "earliest")
    );
    let rows = periods::standings(&env.db, &board("cup"), &period, 0, 10)
        .await
        .expect("standings");
    let got: Vec<(i64, i64, String, i64)> = rows
        .iter()
        .map(|r| (r.position, r.rank, r.user_id.clone(), r.score))
        .collect();
    assert_eq!(
        got,
        [
            (1, 1, "bob".to_owned(), 48),
            (2, 2, "ann".to_owned(), 49),
            (3, 3, "cid".to_owned(), 50)
        ]
    );

    // Closing twice writes once.
    assert_eq!(
        periods::close(&env.db, &board("cup"), &period)
            .await
            .expect("close"),
        periods::CloseOutcome::AlreadyClosed(closed.clone())
    );
    let verified = periods::verify(&env.db, &board("cup"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert!(verified.holds(), "{verified:?}");
    assert_eq!(
        (
            verified.agree,
            verified.left_out,
            verified.left_out_unexplained
        ),
        (3, 2, 0),
        "eve (banned) and dan (removed) are left out, and explained"
    );

    // An edit of a frozen row is found twice: the digest, and the events.
    env.client
        .execute(
            "UPDATE period_standings SET score = 47 WHERE board_id = 'cup' AND position = 1",
            &[],
        )
        .await
        .expect("tamper");
    let tampered = periods::verify(&env.db, &board("cup"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert!(
        !tampered.holds() && !tampered.digest_matches,
        "{tampered:?}"
    );
    assert_eq!(tampered.disagree, 1, "{tampered:?}");
    env.client
        .execute(
            "UPDATE period_standings SET score = 48 WHERE board_id = 'cup' AND position = 1",
            &[],
        )
        .await
        .expect("restore");

    // An erasure reaches the frozen rows too: the pseudonym replaces ann there as in her
    // events, so the rows still agree with the events, and the erasure re-sealed the digest
    // over the rows it left (migration V13), so it matches the new seal.
    moderate(&env.db, moderation::Action::Erase { user: user("ann") }).await;
    let left: i64 = env
        .client
        .query_one(
            "SELECT count(*) FROM period_standings WHERE user_id = 'ann'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0, "the erased id is gone from the frozen standings");
    let after = periods::verify(&env.db, &board("cup"), &period)
        .await
        .expect("verify")
        .expect("closed");
    assert_eq!(
        (
            after.digest_matches,
            after.erased,
            after.disagree,
            after.agree
        ),
        (true, 1, 0, 3),
        "{after:?}"
    );
    assert_eq!(
        after.outcome(),
        periods::Outcome::HoldsWithExplainedChanges,
        "{after:?}"
    );
}

fn cron(raw: &str) -> Reset {
    Reset::parse(raw).expect("a cron schedule")
}

impl Env {
    /// The starts a cron schedule wrote (UTC, RFC 3339), in order (each was ahead when
    /// written; a minute's boundary may have passed since).
    async fn scheduled(&self, name: &str) -> Vec<String> {
        self.client
            .query(
                "SELECT to_char(starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
                 FROM board_resets
                 WHERE board_id = $1 AND actor = 'schedule'
                 ORDER BY starts_at",
                &[&name],
            )
            .await
            .expect("scheduled")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }
}

/// A cron schedule's boundaries are written ahead by croner and PostgreSQL; the independent
/// reference is PostgreSQL's own calendar in the zone (`date_trunc` of the `daily`, `weekly`
/// and `monthly` kinds): at every instant from the first written boundary to the last, a cron
/// board that fires at the same midnights puts the period where its calendar twin does.
#[tokio::test]
async fn a_cron_schedule_starts_its_periods_where_the_same_calendar_kind_does() {
    let env = env().await;
    let pairs = [
        (
            "cron-weekly",
            "0 0 * * MON",
            "weekly-paris",
            Reset::Weekly,
            "Europe/Paris",
        ),
        (
            "cron-daily",
            "0 0 * * *",
            "daily-ny",
            Reset::Daily,
            "America/New_York",
        ),
        // A zone whose clock moves by half an hour.
        (
            "cron-monthly",
            "0 0 1 * *",
            "monthly-lh",
            Reset::Monthly,
            "Australia/Lord_Howe",
        ),
    ];
    for (cron_board, expr, twin, kind, zone) in &pairs {
        env.declare_resetting(cron_board, cron(expr), zone).await;
        env.declare_resetting(twin, kind.clone(), zone).await;
    }
    // A weekly schedule is written five weeks ahead, a daily one 35 days.
    assert_eq!(env.scheduled("cron-weekly").await.len(), 5);
    assert_eq!(env.scheduled("cron-daily").await.len(), 35);
    let mut compared = 0;
    for (cron_board, _, twin, _, _) in &pairs {
        let starts = env.scheduled(cron_board).await;
        let (first, last) = (starts.first().expect("one"), starts.last().expect("one"));
        let instants = env
            .client
            .query(
                "SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
                 FROM generate_series($1::text::timestamptz, $2::text::timestamptz,
                                      interval '5 hours 7 minutes') t
                 UNION ALL SELECT $1 UNION ALL SELECT $2",
                &[first, last],
            )
            .await
            .expect("instants");
        for r in instants {
            let at: String = r.get(0);
            let ours = env.period_at(cron_board, &at).await;
            assert!(ours.is_some(), "{cron_board} at {at}: no period");
            assert_eq!(ours, env.period_at(twin, &at).await, "{cron_board} at {at}");
            compared += 1;
        }
    }
    assert!(compared > 150, "{compared} instants compared");

    // The instants a skipped or repeated wall-clock time becomes: PostgreSQL's rule, written
    // through the same statement the schedule uses (times a test can choose).
    env.declare_resetting("dst", cron("30 2 * * *"), "Europe/Paris")
        .await;
    let times: Vec<String> = [
        "2027-03-28T02:30:00",
        "2027-03-28T03:00:00",
        "2027-10-31T02:30:00",
    ]
    .map(String::from)
    .to_vec();
    env.db
        .execute(
            &ledgerboard_core::board::schedule::EXTEND,
            [&"dst", &"30 2 * * *", &times],
        )
        .await
        .expect("extend");
    let written = env.scheduled("dst").await;
    for expected in [
        // 02:30 does not exist on 28 March 2027 in Paris: it fires at 03:30 CEST.
        "2027-03-28T01:30:00Z",
        "2027-03-28T01:00:00Z",
        // 02:30 happens twice on 31 October 2027: it fires at the later one (CET).
        "2027-10-31T01:30:00Z",
    ] {
        assert!(
            written.iter().any(|w| w == expected),
            "{expected} in {written:?}"
        );
    }
}

/// The definition writes a schedule's first boundaries; the reconciler's call extends the
/// schedules running short and leaves the others alone; a changed schedule takes its former
/// boundaries ahead with it.
#[tokio::test]
async fn a_cron_schedule_is_written_ahead_extended_when_short_and_cleared_when_changed() {
    let env = env().await;
    env.declare_resetting("minutely", cron("* * * * *"), "UTC")
        .await;
    let written = env.scheduled("minutely").await;
    assert_eq!(written.len(), 1_000, "a schedule that fires every minute");
    let minutes: Vec<i64> = env
        .client
        .query(
            "SELECT extract(epoch FROM starts_at)::bigint FROM board_resets
             WHERE board_id = 'minutely' AND actor = 'schedule' ORDER BY starts_at",
            &[],
        )
        .await
        .expect("epochs")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(minutes.iter().all(|m| m % 60 == 0), "whole minutes");
    assert!(
        minutes.windows(2).all(|w| w[1] - w[0] == 60),
        "one a minute, none missing"
    );
    // Nothing short: nothing extended.
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 0);

    // Time passes (as if 990 minutes had): ten boundaries left ahead.
    env.client
        .execute(
            "DELETE FROM board_resets WHERE board_id = 'minutely' AND actor = 'schedule'
               AND starts_at > (SELECT starts_at FROM board_resets
                                WHERE board_id = 'minutely' AND actor = 'schedule'
                                ORDER BY starts_at OFFSET 9 LIMIT 1)",
            &[],
        )
        .await
        .expect("shorten");
    assert_eq!(env.scheduled("minutely").await.len(), 10);
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 1);
    let extended = env.scheduled("minutely").await;
    // Continued where they stopped, a minute apart, up to 1,000 ahead (one more if a minute's
    // boundary passed meanwhile).
    assert!(
        matches!(extended.len(), 1_000 | 1_001),
        "{}",
        extended.len()
    );
    assert_eq!(extended[..1_000], written[..]);
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 0);

    // A yearly schedule: the next boundary is written however far, and it is not short.
    env.declare_resetting("july", cron("0 0 1 7 *"), "UTC")
        .await;
    let july = env.scheduled("july").await;
    assert_eq!(july.len(), 1, "{july:?}");
    assert!(july[0].ends_with("-07-01T00:00:00Z"), "{july:?}");
    assert_eq!(periods::extend_schedules(&env.db).await.expect("extend"), 0);

    // A board without entries may change its schedule: the former boundaries ahead go.
    definitions::update(
        &env.db,
        &board("minutely"),
        &Declaration {
            reset: Some(Reset::Daily),
            ..Declaration::default()
        },
    )
    .await
    .expect("update");
    assert!(env.scheduled("minutely").await.is_empty());
}

/// A manual reset writes its boundary under the period lock: a command holding it (reading the
/// clock, not yet committed) finishes first.
#[tokio::test]
async fn a_manual_reset_waits_for_the_command_in_flight() {
    let mut env = env().await;
    env.declare_resetting("season", Reset::Manual, "UTC").await;
    let tx = env.client.transaction().await.expect("tx");
    tx.execute(
        "SELECT pg_advisory_xact_lock_shared(lb_period_lock_key('season'))",
        &[],
    )
    .await
    .expect("shared lock");
    let db = env.db.clone();
    let reset = tokio::spawn(async move {
        periods::reset(&db, &board("season"), "test")
            .await
            .expect("reset")
    });
    lock_waits(&env.test_db.client().await, 1).await;
    assert!(
        !reset.is_finished(),
        "the reset must wait for the command in flight"
    );
    tx.commit().await.expect("commit");
    let done = tokio::time::timeout(Duration::from_secs(5), reset)
        .await
        .expect("the reset goes once the command committed")
        .expect("joined");
    assert!(done.is_some_and(|r| r.opened));
}
