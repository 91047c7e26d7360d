//! Periods (migration V7, `board/periods.rs`) against the real PostgreSQL: where the schedule
//! puts a period's start (asked about instants the test chooses: a clock it controls), which
//! period a command lands in, manual resets, and the lock a period's close relies on, under
//! concurrent commands across real boundaries.

mod boundaries;
mod columns;
mod schedule;
mod standings;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{Env, env, lock_waits};
use ledgerboard_core::board::definition::{self, Declaration};
use ledgerboard_core::board::definition::{Operator, Reset};
use ledgerboard_core::board::{self, apply_score_command, moderation, periods};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::Submitted;
use ledgerboard_core::model::{BoardId, CommandOutcome};
use ledgerboard_testkit::wait_until;
use serde_json::Number;
use uuid::Uuid;

fn board(name: &str) -> BoardId {
    BoardId::parse(name).expect("board")
}

/// An archived period and an archived cohort of a competition's run are both found archived
/// by their stored board ids (migration V19): the reconciler's walk and moderation skip them,
/// so their dropped keys are never written back. A cohort's close row is keyed by
/// `<period>~<cohort>`, which V8's lookup never asked about.
#[tokio::test]
async fn archived_periods_and_cohorts_are_found_by_their_stored_ids() {
    let env = env().await;
    env.client
        .batch_execute(
            "INSERT INTO period_closes (board_id, period, sort, tie_break, entries, digest, archived_at)
             VALUES ('season', '20261130T000000Z', 'descending', 'user_id', 0, '', now()),
                    ('league', '20261130T000000Z~000002', 'descending', 'user_id', 0, '', now()),
                    ('league', '20261130T000000Z~000003', 'descending', 'user_id', 0, '', NULL)",
        )
        .await
        .expect("closes");
    for (board, archived) in [
        ("season~20261130T000000Z", true),
        ("season~20261207T000000Z", false),
        ("league~20261130T000000Z~000002", true),
        ("league~20261130T000000Z~000003", false),
        ("league~20261130T000000Z", false),
        ("season", false),
    ] {
        let id = BoardId::parse_stored(board).expect("a stored id");
        assert_eq!(
            periods::is_archived(&env.db, &id).await.expect("lookup"),
            archived,
            "{board}"
        );
    }
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
        definition::declare(&self.db, &board(name), &declaration)
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
    let def = definition::get(db, &board(name)).await.expect("definition");
    let delta = Submitted::One(Number::from(delta));
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

/// A `best` board's command of `score` for `user`, validated against the board's definition.
async fn best(db: &Database, name: &str, user: &str, score: i64) -> CommandOutcome {
    let def = definition::get(db, &board(name)).await.expect("definition");
    let score = Submitted::One(Number::from(score));
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
