//! The faults the run injects during the load, the loop that injects them, and the probes
//! around the slow ones (a Redis restarted empty, a backlog).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use ledgerboard_core::board::periods;
use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::member;
use ledgerboard_harness::{Daemon, RedisServer};

use super::api::bounded_read;
use super::compare::REBUILD_LIMIT;
use super::ranking::page_scores;
use super::rng::Rng;
use super::specs::{BOARDS, run_boards, spec};
use crate::stack::{PROJECTOR, Stack};

/// How long the projectors stay stopped in a backlog fault: over `api.max_lag_ms` (2 s by
/// default), so that bounded reads must leave the projection for PostgreSQL.
const BACKLOG_FOR: Duration = Duration::from_millis(2_500);
/// The bound the brief of the seal sets: after Redis comes back empty, a bounded read answers
/// from PostgreSQL within this time.
const HONEST_READ_LIMIT: Duration = Duration::from_secs(1);

const TERMINATE_BACKENDS: &str = include_str!("../sql/terminate_backends.sql");

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Fault {
    KillProjector,
    FlushRedis,
    CrashRedis,
    RestartRedis,
    RestartRedisEmpty,
    Backlog,
    TerminateSessions,
    CorruptScore,
    CorruptVersion,
    DeleteMember,
}

pub const FAULTS: [Fault; 10] = [
    Fault::KillProjector,
    Fault::FlushRedis,
    Fault::CrashRedis,
    Fault::RestartRedis,
    Fault::RestartRedisEmpty,
    Fault::Backlog,
    Fault::TerminateSessions,
    Fault::CorruptScore,
    Fault::CorruptVersion,
    Fault::DeleteMember,
];

impl Fault {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Fault::KillProjector => "projector SIGKILLed and restarted",
            Fault::FlushRedis => "Redis FLUSHALL",
            Fault::CrashRedis => "Redis killed, restarted empty",
            Fault::RestartRedis => "Redis restarted (SHUTDOWN SAVE, data kept)",
            Fault::RestartRedisEmpty => {
                "Redis restarted without persistence, bounded reads timed until honest and rebuilt"
            }
            Fault::Backlog => "every projector stopped for 2.5 s under load, then restarted",
            Fault::TerminateSessions => {
                "daemons' PostgreSQL sessions terminated (pg_terminate_backend)"
            }
            Fault::CorruptScore => "a member's score set to a random value",
            Fault::CorruptVersion => "a member's version set lower or to garbage",
            Fault::DeleteMember => "a member deleted from the sorted set and the version hash",
        }
    }
}

/// What the faults and the probes around them found, beside the clients' ledger.
#[derive(Default)]
pub(super) struct Probes {
    /// Members whose score or version chaos overwrote in Redis: a whole board may differ from
    /// PostgreSQL before the repair at these members only (the seal counts members, it cannot
    /// see an edited value; the pass finds those).
    pub(super) corrupted: BTreeSet<(String, String)>,
    /// Per restart without persistence: time to the first honest bounded read, and to the
    /// first read that found the board's projection whole again.
    pub(super) restarts: Vec<(Duration, Option<Duration>)>,
    /// Per backlog: rows pending when the projectors came back, the `lag_ms` a bounded read
    /// stated then, and the time until fewer than 100 rows were pending.
    pub(super) backlogs: Vec<(i64, i64, Option<Duration>)>,
    /// Answers or states that break the contract.
    pub(super) problems: Vec<String>,
}

/// The kinds to inject: those asked for, each once (in the kinds' order), or every kind.
pub(super) fn chosen(asked: &[Fault]) -> Vec<Fault> {
    if asked.is_empty() {
        FAULTS.to_vec()
    } else {
        let set: BTreeSet<Fault> = asked.iter().copied().collect();
        set.into_iter().collect()
    }
}

/// The fault loop: a fault every 200 to 800 ms until the deadline, and after it until every
/// kind was injected once; returns how many of each kind were.
pub(super) async fn inject_until(
    faults: &[Fault],
    deadline: Instant,
    stack: &Stack,
    redis: &mut RedisServer,
    projectors: &mut [Daemon],
    rng: &mut Rng,
    probes: &mut Probes,
) -> anyhow::Result<BTreeMap<Fault, u64>> {
    let mut injected: BTreeMap<Fault, u64> = faults.iter().map(|f| (*f, 0)).collect();
    // Every kind once per round, in a random order: a short run still tries them all.
    let mut round: Vec<Fault> = Vec::new();
    let mut first_round = true;
    // A kind not injected yet by the deadline (a slow fault, such as a Redis restart timed
    // until honest, can take most of a 12 s run) is still injected, after the load, within a
    // bound: the contract is checked under every kind in every run.
    let catch_up = deadline + Duration::from_secs(60);
    while Instant::now() < deadline
        || (Instant::now() < catch_up && injected.values().any(|n| *n == 0))
    {
        tokio::time::sleep(Duration::from_millis(200 + rng.below(600))).await;
        if round.is_empty() {
            round = faults.to_vec();
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i as u64 + 1) as usize);
            }
            // The backlog fault measures a backlog the load builds while every projector is
            // stopped: after the deadline there is no load, so nothing would pend. A slow
            // machine can take the whole load to inject the other kinds (a Redis restart timed
            // until honest takes seconds), so the first round starts with it.
            if std::mem::take(&mut first_round)
                && let Some(at) = round.iter().position(|f| *f == Fault::Backlog)
            {
                let last = round.len() - 1;
                round.swap(at, last);
            }
        }
        let Some(fault) = round.pop() else { continue };
        if Instant::now() >= deadline && injected.get(&fault).is_some_and(|n| *n > 0) {
            continue;
        }
        if inject(fault, stack, redis, projectors, rng, probes).await? {
            *injected.entry(fault).or_default() += 1;
        } else {
            // Nothing to act on yet (an empty board early in the run): try it again at the
            // end of this round rather than skip the kind.
            round.insert(0, fault);
        }
    }
    Ok(injected)
}

/// The corruptions injected (scores and versions overwritten, members deleted in Redis): the
/// most the final pass may repair.
pub(super) fn corruptions(injected: &BTreeMap<Fault, u64>) -> u64 {
    [
        Fault::CorruptScore,
        Fault::CorruptVersion,
        Fault::DeleteMember,
    ]
    .iter()
    .map(|f| injected.get(f).copied().unwrap_or(0))
    .sum()
}

/// Injects one fault; false when there was nothing to act on (an empty board).
async fn inject(
    fault: Fault,
    stack: &Stack,
    redis: &mut RedisServer,
    projectors: &mut [Daemon],
    rng: &mut Rng,
    probes: &mut Probes,
) -> anyhow::Result<bool> {
    match fault {
        Fault::KillProjector => {
            let i = rng.below(projectors.len() as u64) as usize;
            projectors[i].kill();
            projectors[i] = tokio::task::block_in_place(|| stack.start(PROJECTOR, &[]))?;
        }
        Fault::FlushRedis => {
            redis.command(&["FLUSHALL"])?;
        }
        Fault::CrashRedis => tokio::task::block_in_place(|| {
            redis.crash();
            redis.restart()
        })?,
        Fault::RestartRedis => tokio::task::block_in_place(|| {
            redis.stop();
            redis.restart()
        })?,
        Fault::RestartRedisEmpty => {
            let board =
                probed_board(stack, BOARDS[rng.below(BOARDS.len() as u64) as usize]).await?;
            // SHUTDOWN NOSAVE, then the dump of an earlier SAVE deleted: the server comes back
            // as one without persistence does, empty. No pass runs, so only the seal, the
            // reads and the requested rebuild stand between the loss and a wrong answer.
            tokio::task::block_in_place(|| {
                let _ = redis.command(&["SHUTDOWN", "NOSAVE"]);
                redis.crash();
                redis.restart()
            })?;
            honest_after_restart(stack, &board, probes).await?;
        }
        Fault::Backlog => backlog(stack, projectors, rng, probes).await?,
        Fault::TerminateSessions => {
            let client = stack.db.client().await?;
            client
                .query_one(TERMINATE_BACKENDS, &[&stack.db_name])
                .await?;
        }
        Fault::CorruptScore | Fault::CorruptVersion | Fault::DeleteMember => {
            // On the board that resets, its current period: the one the clients write to.
            let board = BoardId::parse(BOARDS[rng.below(BOARDS.len() as u64) as usize])?;
            let board = match periods::current(&stack.db, &board).await? {
                Some(p) => board.in_period(&p.current)?,
                None => board,
            };
            let keys = stack.store.keys();
            let mut conn = stack.store.connection().await?;
            let member: Option<String> = redis::cmd("ZRANDMEMBER")
                .arg(keys.scores(&board))
                .query_async(&mut conn)
                .await?;
            let Some(member) = member else {
                return Ok(false);
            };
            // The member is spelt with its tie key on earliest boards; the versions hash and
            // the checks go by user id.
            let user = member::user_of(&member)
                .map_or_else(|| member.clone(), |(user, _)| user.to_owned());
            if fault != Fault::DeleteMember {
                probes
                    .corrupted
                    .insert((board.as_str().to_owned(), user.clone()));
            }
            let mut pipe = redis::pipe();
            match fault {
                Fault::CorruptScore => {
                    pipe.cmd("ZADD")
                        .arg(keys.scores(&board))
                        .arg("XX")
                        .arg(rng.below(1_000_000) as i64 - 500_000)
                        .arg(&member);
                }
                Fault::CorruptVersion => {
                    let value = if rng.below(2) == 0 {
                        "0".to_owned()
                    } else {
                        "garbage".to_owned()
                    };
                    pipe.cmd("HSET")
                        .arg(keys.versions(&board))
                        .arg(&user)
                        .arg(value);
                }
                _ => {
                    pipe.cmd("ZREM")
                        .arg(keys.scores(&board))
                        .arg(&member)
                        .cmd("HDEL")
                        .arg(keys.versions(&board))
                        .arg(&user);
                }
            }
            let _: () = pipe.query_async(&mut conn).await?;
        }
    }
    Ok(true)
}

/// The board the Redis restart's probe reads: `name` itself, or on a board that resets its
/// latest period with a visible entry (the current one under load; `period=<id>` reads it). The
/// probe waits for the projection to be whole again, and a period with no visible entry (one
/// just begun, or the current one once the load is over, when the fault is injected after it)
/// is never sealed.
async fn probed_board(stack: &Stack, name: &str) -> anyhow::Result<BoardId> {
    let board = BoardId::parse(name)?;
    if spec(name).period_secs.is_none() {
        return Ok(board);
    }
    // Sorted by id: a board's periods in time order.
    for id in run_boards(stack).await?.into_iter().rev() {
        if id.base() == board && id.period().is_some() && !stack.source(&id).await?.is_empty() {
            return Ok(id);
        }
    }
    Ok(board)
}

/// After Redis came back empty: bounded reads of `board` every 10 ms, each bounded to 1 s,
/// until one finds the board's projection whole again (at most [`REBUILD_LIMIT`]). The first
/// answer must come within [`HONEST_READ_LIMIT`], and every answer must come from PostgreSQL
/// or from a whole projection (one a rebuild sealed after the restart: nothing else can seal
/// an empty Redis).
async fn honest_after_restart(
    stack: &Stack,
    board: &BoardId,
    probes: &mut Probes,
) -> anyhow::Result<()> {
    let restarted = Instant::now();
    let mut honest = None;
    let mut rebuilt = None;
    while rebuilt.is_none() && restarted.elapsed() < REBUILD_LIMIT {
        if let Some(read) = bounded_read(stack, board, "").await? {
            let f = &read["freshness"];
            let source = f["source"].as_str().unwrap_or_default();
            let projection = f["projection"].as_str();
            if source == "database" || projection == Some("whole") {
                honest.get_or_insert(restarted.elapsed());
            } else {
                probes.problems.push(format!(
                    "{board}: a bounded read after Redis restarted empty answered from {source}                      with projection {projection:?}"
                ));
            }
            if projection == Some("whole") {
                rebuilt = Some(restarted.elapsed());
            } else if honest.is_some()
                && page_scores(&read["entries"]).is_empty()
                && stack.source(board).await?.is_empty()
            {
                // Nothing to rebuild: a board with no visible entry is never sealed.
                break;
            }
        }
        if honest.is_none() && restarted.elapsed() > HONEST_READ_LIMIT {
            probes.problems.push(format!(
                "{board}: no honest bounded read within {HONEST_READ_LIMIT:?} of Redis restarting empty"
            ));
            honest = Some(restarted.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A board with no rows yet has nothing to rebuild; one with rows must come back.
    if rebuilt.is_none() && !stack.source(board).await?.is_empty() {
        probes.problems.push(format!(
            "{board}: not whole again within {REBUILD_LIMIT:?} of Redis restarting empty"
        ));
    }
    probes
        .restarts
        .push((honest.unwrap_or(restarted.elapsed()), rebuilt));
    Ok(())
}

/// Every projector stopped (SIGTERM) for [`BACKLOG_FOR`] while the clients go on, a bounded
/// read while they are down, then all started again and the backlog timed until fewer than
/// 100 rows are pending (at most 30 s; under load it never reaches 0).
async fn backlog(
    stack: &Stack,
    projectors: &mut [Daemon],
    rng: &mut Rng,
    probes: &mut Probes,
) -> anyhow::Result<()> {
    tokio::task::block_in_place(|| {
        for p in projectors.iter_mut() {
            p.terminate(Duration::from_secs(15));
        }
    });
    tokio::time::sleep(BACKLOG_FOR).await;
    let board = BOARDS[rng.below(BOARDS.len() as u64) as usize];
    let mut lag = -1;
    if let Some(read) = bounded_read(stack, &BoardId::parse(board)?, "").await? {
        let f = &read["freshness"];
        lag = f["lag_ms"].as_i64().unwrap_or(-1);
        // Over api.max_lag_ms (2000 by default) a bounded read must leave the projection.
        if lag > 2_000 && f["source"] != "database" {
            probes.problems.push(format!(
                "{board}: a bounded read with lag_ms {lag} answered from {}",
                f["source"]
            ));
        }
    }
    let pending = ledgerboard_core::db::outbox_status(&stack.db)
        .await
        .map_or(-1, |s| s.pending);
    for p in projectors.iter_mut() {
        *p = tokio::task::block_in_place(|| stack.start(PROJECTOR, &[]))?;
    }
    let restarted = Instant::now();
    let mut drained = None;
    while restarted.elapsed() < Duration::from_secs(30) {
        if let Ok(s) = ledgerboard_core::db::outbox_status(&stack.db).await
            && s.pending < 100
        {
            drained = Some(restarted.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    probes.backlogs.push((pending, lag, drained));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_unless_some_are_asked_for_each_once() {
        assert_eq!(chosen(&[]), FAULTS);
        assert_eq!(
            chosen(&[Fault::DeleteMember, Fault::FlushRedis, Fault::DeleteMember]),
            [Fault::FlushRedis, Fault::DeleteMember]
        );
    }

    #[test]
    fn only_the_redis_edits_count_as_corruptions() {
        let injected: BTreeMap<Fault, u64> = FAULTS.iter().map(|f| (*f, 2)).collect();
        assert_eq!(corruptions(&injected), 6);
        assert_eq!(corruptions(&BTreeMap::new()), 0);
    }
}
