//! Issue 39's figures. Entries into a tournament with cohorts of 50 (one call each, deciding
//! the cap and the cohort under the run's row lock, and sealing each new cohort's projection)
//! against the `add` board's commands of the same run, at the same client counts: every entry
//! a new player, so 100,000 entries open 2,000 cohorts. Afterwards every cohort the entries
//! opened is checked sealed (its reads come from a whole projection at its first entry). Then a
//! run of 2,000 cohorts seeded in PostgreSQL (100,000 entrants with their scores and events;
//! 200 and 10,000 in a quick run) is closed and verified, in seconds, and one cohort's top
//! page is read against the same page of a plain board of 50 members (both from the
//! projection).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::competition::{self, CloseOutcome};
use ledgerboard_core::db::Database;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::read::{self, Seal};
use serde::Serialize;

use crate::api::Stack;
use crate::load;

/// The next entrant's number.
static NEXT: AtomicU64 = AtomicU64::new(0);

const COHORT_SIZE: i64 = 50;

fn entry(_: usize, _: u64) -> Vec<u8> {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    load::request(
        "POST",
        "/v1/competitions/kind-cup/entries",
        Some(ledgerboard_testkit::TEST_TOKEN),
        Some(&format!(r#"{{"user_id":"entrant-{n}"}}"#)),
    )
}

/// Declares `id` over a board reset by hand, its window from the next second for `seconds`,
/// with `extra` fields, and waits for its start.
async fn open_competition(
    stack: &Stack,
    db: &Database,
    id: &str,
    seconds: u64,
    extra: &str,
) -> anyhow::Result<String> {
    stack
        .declare(id, r#"{"operator":"best","reset":"manual"}"#)
        .await?;
    // The window's end by the database clock (the one the competition is judged by).
    let ends: String = stack
        .db
        .client()
        .await
        .query_one(
            "SELECT to_char(now() AT TIME ZONE 'UTC' + $1::bigint * interval '1 second',
                            'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
            &[&(seconds as i64 + 1)],
        )
        .await?
        .try_get(0)?;
    stack
        .put(
            &format!("/v1/competitions/{id}"),
            &format!(r#"{{"ends_at":"{ends}"{extra}}}"#),
        )
        .await?;
    let board = BoardId::parse(id)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let c = competition::get(db, &board)
            .await?
            .context("the competition")?;
        if c.state == "open" {
            return c.run.context("its run");
        }
        anyhow::ensure!(Instant::now() < deadline, "{id} never opened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Entries at each of `clients_levels`, `rounds` rounds of `seconds` each, on fresh stacks:
/// each level's runs (the board kinds' `throughput` sums them up), and the cohorts the entries
/// opened with how many of them were sealed.
pub async fn entries(
    clients_levels: &[usize],
    seconds: f64,
    rounds: usize,
) -> anyhow::Result<(Vec<(usize, Vec<load::Closed>)>, (u64, u64))> {
    let mut out = Vec::new();
    let (mut cohorts, mut sealed) = (0, 0);
    for &clients in clients_levels {
        let mut runs = Vec::new();
        for _ in 0..rounds {
            eprintln!("entries into a tournament with cohorts of {COHORT_SIZE}, {clients} clients");
            let stack = Stack::start(clients + 4).await?;
            let db = Database::connect(&stack.settings.database, "bench-competitions")?;
            let run = open_competition(
                &stack,
                &db,
                "kind-cup",
                3600,
                &format!(r#","max_size":100000000,"cohort_size":{COHORT_SIZE}"#),
            )
            .await?;
            runs.push(
                load::closed_loop(
                    stack.addr,
                    clients,
                    Duration::from_secs_f64(seconds),
                    201,
                    entry,
                )
                .await?,
            );
            let board = BoardId::parse("kind-cup")?;
            let opened = competition::get(&db, &board)
                .await?
                .map_or(0, |c| c.cohorts);
            let store = ledgerboard_core::projection::Store::connect(&stack.settings.redis)?;
            for c in 1..=u32::try_from(opened).unwrap_or(0) {
                cohorts += 1;
                if read::board_seal(&store, &board.in_cohort(&run, c)?).await? == Seal::Whole {
                    sealed += 1;
                }
            }
            stack.stop().await?;
        }
        out.push((clients, runs));
    }
    Ok((out, (cohorts, sealed)))
}

/// A run's close and its verification, and a cohort's reads against a plain board's.
#[derive(Debug, Clone, Serialize)]
pub struct CloseFigures {
    pub entrants: i64,
    pub cohorts: i64,
    pub seed_seconds: f64,
    pub close_seconds: f64,
    pub verify_seconds: f64,
    /// Whether the verification held.
    pub holds: bool,
    pub clients: usize,
    pub seconds: f64,
    /// `top?limit=10&cohort=1` of the closed run, and `top?limit=10` of a plain board of as
    /// many members, both answered by the projection.
    pub cohort_top_per_s: f64,
    pub board_top_per_s: f64,
}

/// Seeds a run of `cohorts` cohorts of 50, closes it once it has ended, verifies it, and reads
/// one cohort against a plain board.
pub async fn close(quick: bool) -> anyhow::Result<CloseFigures> {
    let (cohorts, seconds): (i64, f64) = if quick { (200, 2.0) } else { (2_000, 10.0) };
    let entrants = cohorts * COHORT_SIZE;
    eprintln!("competitions: the close of a run of {cohorts} cohorts ({entrants} entrants)");
    let clients = 16;
    let stack = Stack::start(clients + 4).await?;
    let db = Database::connect(&stack.settings.database, "bench-competitions")?;
    let run = open_competition(
        &stack,
        &db,
        "league",
        3,
        &format!(r#","cohort_size":{COHORT_SIZE}"#),
    )
    .await?;
    let started = Instant::now();
    let client = stack.db.client().await;
    // As periods.rs seeds a period: triggers off, entry counts written once after. Each entry
    // with its cohort, its score and the event a command would have recorded.
    client
        .batch_execute("SET session_replication_role = replica")
        .await?;
    client
        .execute(
            "WITH r AS (
                 INSERT INTO competition_runs (competition_id, run, entrants, cohorts)
                 VALUES ('league', $1, $2, $3)),
             k AS (
                 INSERT INTO competition_cohorts (competition_id, run, cohort, tier, members, open)
                 SELECT 'league', $1, c, 0, 50, false FROM generate_series(1, $3) c),
             n AS (
                 INSERT INTO competition_entries (competition_id, run, user_id, seat, tier, cohort)
                 SELECT 'league', $1, 'p' || g, g, 0, (g - 1) / 50 + 1
                 FROM generate_series(1, $2) g),
             e AS (
                 INSERT INTO score_events
                     (event_id, board_id, user_id, submitted, operator, score, version)
                 SELECT gen_random_uuid(),
                        'league~' || $1 || '~' || lpad(((g - 1) / 50 + 1)::text, 6, '0'),
                        'p' || g, (g * 7919) % 100000, 'best', (g * 7919) % 100000, 1
                 FROM generate_series(1, $2::bigint) AS g
                 RETURNING board_id, user_id, score, version)
             INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT board_id, user_id, score, version FROM e",
            &[&run, &(entrants as i32), &(cohorts as i32)],
        )
        .await
        .context("seeding the run")?;
    client
        .batch_execute(
            "SET session_replication_role = DEFAULT;
             INSERT INTO board_entry_counts (board_id, shard, entries)
             SELECT board_id, hashtext(user_id) & 15, count(*) FROM user_scores GROUP BY 1, 2;
             ANALYZE user_scores; ANALYZE score_events;",
        )
        .await?;
    let seed_seconds = started.elapsed().as_secs_f64();
    let board = BoardId::parse("league")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let close_seconds = loop {
        let started = Instant::now();
        match competition::close(&db, &board, &run).await? {
            CloseOutcome::Closed(_) => break started.elapsed().as_secs_f64(),
            CloseOutcome::NotEnded => {
                anyhow::ensure!(Instant::now() < deadline, "the run never ended");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => anyhow::bail!("the close answered {other:?}"),
        }
    };
    let started = Instant::now();
    let verified = competition::verify(&db, &board).await?;
    let verify_seconds = started.elapsed().as_secs_f64();

    // One cohort against a plain board of as many members, both sealed by a rebuild.
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 'plain', user_id, score, version FROM user_scores
             WHERE board_id = 'league~' || $1 || '~000001'",
            &[&run],
        )
        .await?;
    let cohort_board = board.in_cohort(&run, 1)?;
    stack.rebuild(cohort_board.as_str())?;
    stack.rebuild("plain")?;
    let cohort_path = format!("/v1/boards/league/top?limit=10&period={run}&cohort=1");
    let read = |path: String| move |_: usize, _: u64| load::request("GET", &path, None, None);
    stack
        .answered_by_projection("a cohort's top", &read(cohort_path.clone())(0, 0))
        .await?;
    let duration = Duration::from_secs_f64(seconds);
    let cohort_top = load::closed_loop(stack.addr, clients, duration, 200, read(cohort_path))
        .await?
        .per_s();
    let plain_path = "/v1/boards/plain/top?limit=10".to_owned();
    stack
        .answered_by_projection("a plain board's top", &read(plain_path.clone())(0, 0))
        .await?;
    let board_top = load::closed_loop(stack.addr, clients, duration, 200, read(plain_path))
        .await?
        .per_s();
    stack.stop().await?;
    Ok(CloseFigures {
        entrants,
        cohorts,
        seed_seconds,
        close_seconds,
        verify_seconds,
        holds: verified.outcome.holds() && verified.runs.len() == 1,
        clients,
        seconds,
        cohort_top_per_s: cohort_top,
        board_top_per_s: board_top,
    })
}
