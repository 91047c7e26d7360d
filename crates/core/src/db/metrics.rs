//! The database's instruments: the latency of every PostgreSQL call by [`Op`], and the cancel
//! requests sent for abandoned queries. docs/operations.md lists them as Prometheus sees them.

use std::fmt;
use std::sync::OnceLock;
use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram};

use crate::telemetry::metrics::{Label, counter, latency, meter, rows};

/// What a PostgreSQL call does: the `op` label of `ledgerboard_db_call_duration_seconds`.
/// Each statement carries one (see [`super::Statement`]); a few calls that are not one
/// statement (a ping, a commit, a pipelined pair) have their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// One score command's statement (`board/sql/{add,best,latest}.sql`) on its own.
    ScoreCommand,
    /// A group of score commands in one transaction: BEGIN and every command's statement in
    /// one pipelined round trip, then COMMIT (`board/group.rs`).
    CommandGroup,
    ReadTop,
    ReadUser,
    /// The members above and below one member, pipelined: one round trip, timed once.
    ReadAround,
    Freshness,
    OutboxStatus,
    OutboxClaim,
    OutboxLease,
    OutboxPublish,
    OutboxFail,
    OutboxRelease,
    /// A projector's commit of its batch.
    Commit,
    RetentionLock,
    RetentionOutbox,
    RetentionEvents,
    ParkedList,
    ParkedRequeue,
    ReconcileBoards,
    /// Reading the reconciler's progress (`reconcile/progress_get.sql`).
    ReconcileProgress,
    /// Recording the reconciler's progress (`reconcile/progress_set.sql`); until issue 19 it
    /// was timed as `reconcile_progress` too.
    ReconcileProgressSet,
    ReconcileChunk,
    ReconcileRecheck,
    ReconcileExisting,
    /// `SELECT 1` while waiting for PostgreSQL at start-up.
    Ping,
    /// The projectors' wake-up after commands commit (`outbox/wakeup.sql`, `db/wakeup.rs`).
    Wakeup,
    /// `SELECT 1` of `/readyz`.
    Ready,
    /// The schema check at start-up (both of `schema/*.sql`, one after the other).
    SchemaVersion,
    /// The chaos check's read of a whole board (`lbchaos chaos`).
    BoardScores,
    /// One board's definition (`board/sql/definition_get.sql`).
    BoardDefinition,
    /// Declaring or changing a board's definition.
    BoardDefine,
    /// A page of board definitions.
    BoardList,
    /// Several members' standings at once (a friends board).
    ReadUsers,
    /// A moderation command's statements (`board/sql/moderation_*.sql`).
    Moderate,
    /// A board's current and previous period (`board/sql/period_current.sql`).
    BoardPeriod,
    /// A manual reset of a board (`board/sql/period_reset.sql`).
    BoardReset,
    /// A cron schedule's boundaries written ahead (`board/sql/period_schedule_*.sql`).
    BoardSchedule,
    /// A period's close: its checks, its lock and the frozen standings
    /// (`board/sql/period_close*.sql`).
    PeriodClose,
    /// A closed period: its close row, a page of its standings, its verification, the periods
    /// due for a close (`board/sql/period_{get,standings,verify,due}.sql`).
    PeriodRead,
    /// Archiving closed periods past the retention (`board/sql/period_archive*.sql`).
    PeriodArchive,
    /// Recording a reconciler pass or an operator action (`history/*_record.sql`, V11).
    HistoryRecord,
    /// Reading the passes or the audit log (the console: `history/*_list.sql`,
    /// `history/pass_boards.sql`).
    HistoryRead,
    /// Starting an attempt, or a score command's use of one (`board/sql/attempt_*.sql`).
    Attempt,
    /// A guarded score command's review: its judgement, a held score, the queue and its
    /// decisions (`board/sql/review_*.sql`).
    Review,
    /// A competition's declaration, reads and entries (`competition/sql/*.sql`).
    Competition,
    /// A competition run's close (`competition/sql/close_*.sql`) and its verification.
    CompetitionClose,
    /// The event log's sequencer (events/sequence.rs).
    EventSequence,
    /// The event feed's pages and the log's bounds (events/feed.rs).
    EventFeed,
    /// The event log's retention.
    EventSweep,
    /// The projector's `rank.top_changed`: each board's first N compared with the last
    /// recorded, and the event (events/top.rs).
    EventTop,
    /// Webhook subscriptions: create, list, read, change, delete (`webhook/sql/*.sql`).
    WebhookSubscription,
    /// The dispatcher's claim of lanes (`webhook/sql/claim.sql`).
    WebhookClaim,
    /// A lane's next events, and a gap retention left (`webhook/sql/next.sql`, `gap.sql`).
    WebhookEvents,
    /// A lane moved past a delivered event or an empty window, or given back.
    WebhookAdvance,
    /// A failed delivery: the attempt, the back-off, the park, the circuit (`fail.sql`).
    WebhookFail,
    /// Parked deliveries: list, requeue, the requeued ones' claim and outcome.
    WebhookParked,
    /// What the dispatcher's gauges sample (`webhook/sql/status.sql`).
    WebhookStatus,
}

impl Label for Op {
    const ALL: &'static [Self] = &[
        Op::ScoreCommand,
        Op::CommandGroup,
        Op::ReadTop,
        Op::ReadUser,
        Op::ReadAround,
        Op::Freshness,
        Op::OutboxStatus,
        Op::OutboxClaim,
        Op::OutboxLease,
        Op::OutboxPublish,
        Op::OutboxFail,
        Op::OutboxRelease,
        Op::Commit,
        Op::RetentionLock,
        Op::RetentionOutbox,
        Op::RetentionEvents,
        Op::ParkedList,
        Op::ParkedRequeue,
        Op::ReconcileBoards,
        Op::ReconcileProgress,
        Op::ReconcileProgressSet,
        Op::ReconcileChunk,
        Op::ReconcileRecheck,
        Op::ReconcileExisting,
        Op::Ping,
        Op::Wakeup,
        Op::Ready,
        Op::SchemaVersion,
        Op::BoardScores,
        Op::BoardDefinition,
        Op::BoardDefine,
        Op::BoardList,
        Op::ReadUsers,
        Op::Moderate,
        Op::BoardPeriod,
        Op::BoardReset,
        Op::BoardSchedule,
        Op::PeriodClose,
        Op::PeriodRead,
        Op::PeriodArchive,
        Op::HistoryRecord,
        Op::HistoryRead,
        Op::Attempt,
        Op::Review,
        Op::Competition,
        Op::CompetitionClose,
        Op::EventSequence,
        Op::EventFeed,
        Op::EventSweep,
        Op::EventTop,
        Op::WebhookSubscription,
        Op::WebhookClaim,
        Op::WebhookEvents,
        Op::WebhookAdvance,
        Op::WebhookFail,
        Op::WebhookParked,
        Op::WebhookStatus,
    ];
    const KEY: &'static str = "op";
    fn as_str(self) -> &'static str {
        Op::as_str(self)
    }
}

impl Op {
    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Op::ScoreCommand => "score_command",
            Op::CommandGroup => "command_group",
            Op::ReadTop => "read_top",
            Op::ReadUser => "read_user",
            Op::ReadAround => "read_around",
            Op::Freshness => "freshness",
            Op::OutboxStatus => "outbox_status",
            Op::OutboxClaim => "outbox_claim",
            Op::OutboxLease => "outbox_lease",
            Op::OutboxPublish => "outbox_publish",
            Op::OutboxFail => "outbox_fail",
            Op::OutboxRelease => "outbox_release",
            Op::Commit => "commit",
            Op::RetentionLock => "retention_lock",
            Op::RetentionOutbox => "retention_outbox",
            Op::RetentionEvents => "retention_events",
            Op::ParkedList => "parked_list",
            Op::ParkedRequeue => "parked_requeue",
            Op::ReconcileBoards => "reconcile_boards",
            Op::ReconcileProgress => "reconcile_progress",
            Op::ReconcileProgressSet => "reconcile_progress_set",
            Op::ReconcileChunk => "reconcile_chunk",
            Op::ReconcileRecheck => "reconcile_recheck",
            Op::ReconcileExisting => "reconcile_existing",
            Op::Ping => "ping",
            Op::Wakeup => "wakeup",
            Op::Ready => "ready",
            Op::SchemaVersion => "schema_version",
            Op::BoardScores => "board_scores",
            Op::BoardDefinition => "board_definition",
            Op::BoardDefine => "board_define",
            Op::BoardList => "board_list",
            Op::ReadUsers => "read_users",
            Op::Moderate => "moderate",
            Op::BoardPeriod => "board_period",
            Op::BoardReset => "board_reset",
            Op::BoardSchedule => "board_schedule",
            Op::PeriodClose => "period_close",
            Op::PeriodRead => "period_read",
            Op::PeriodArchive => "period_archive",
            Op::HistoryRecord => "history_record",
            Op::HistoryRead => "history_read",
            Op::Attempt => "attempt",
            Op::Review => "review",
            Op::Competition => "competition",
            Op::CompetitionClose => "competition_close",
            Op::EventSequence => "event_sequence",
            Op::EventFeed => "event_feed",
            Op::EventSweep => "event_sweep",
            Op::EventTop => "event_top",
            Op::WebhookSubscription => "webhook_subscription",
            Op::WebhookClaim => "webhook_claim",
            Op::WebhookEvents => "webhook_events",
            Op::WebhookAdvance => "webhook_advance",
            Op::WebhookFail => "webhook_fail",
            Op::WebhookParked => "webhook_parked",
            Op::WebhookStatus => "webhook_status",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

struct DbMetrics {
    /// One PostgreSQL round trip (or a projector's claim / record step), by `op`.
    call_duration: Histogram<f64>,
    /// Cancel requests sent for queries whose caller gave up (`Database::bounded`).
    cancels: Counter<u64>,
    /// Commands per group of the api's grouped commits (`board/group.rs`), groups of one too.
    group_commands: Histogram<u64>,
    /// Groups that failed as a whole (rolled back, or their commit's outcome unknown) and
    /// whose commands then ran alone.
    group_failures: Counter<u64>,
}

static METRICS: OnceLock<DbMetrics> = OnceLock::new();

/// Created from the global meter provider on first use (after `telemetry::init` in a daemon;
/// no-ops in a library test that never called it).
fn metrics() -> &'static DbMetrics {
    METRICS.get_or_init(|| {
        let m = meter();
        DbMetrics {
            call_duration: latency(
                &m,
                "ledgerboard.db.call.duration",
                "PostgreSQL round trips by operation",
            ),
            cancels: counter(
                &m,
                "ledgerboard.db.cancels",
                "Queries cancelled on the server because their caller gave up",
            ),
            group_commands: rows(
                &m,
                "ledgerboard.db.command_group.commands",
                "Score commands per group of grouped commits (groups of one included)",
            ),
            group_failures: counter(
                &m,
                "ledgerboard.db.command_group.failures",
                "Command groups that failed as a whole; their commands then ran alone",
            ),
        }
    })
}

/// Records one PostgreSQL call that started at `started`.
pub(crate) fn record(op: Op, started: Instant) {
    metrics()
        .call_duration
        .record(started.elapsed().as_secs_f64(), &[op.key_value()]);
}

/// Counts one cancel request the server accepted.
pub(crate) fn cancelled() {
    metrics().cancels.add(1, &[]);
}

/// Counts one group of `commands` score commands.
pub(crate) fn command_group(commands: usize) {
    metrics().group_commands.record(commands as u64, &[]);
}

/// Counts one command group that failed as a whole.
pub(crate) fn command_group_failed() {
    metrics().group_failures.add(1, &[]);
}

/// Awaits `call` and records its latency under `op`.
pub async fn timed<T>(op: Op, call: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let out = call.await;
    record(op, started);
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_op_has_its_own_label_and_is_documented() {
        let labels: HashSet<&str> = Op::ALL.iter().map(|op| op.as_str()).collect();
        assert_eq!(labels.len(), Op::ALL.len(), "two ops share a label");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/operations.md");
        let doc = std::fs::read_to_string(path).expect("docs/operations.md");
        let row = doc
            .lines()
            .find(|l| l.starts_with("| `ledgerboard_db_call_duration_seconds` |"))
            .expect("the db call row of docs/operations.md");
        // The list runs from the `Op` reference to the first full stop.
        let list = row
            .split_once("db/metrics.rs`): ")
            .and_then(|(_, rest)| rest.split_once(". "))
            .map(|(list, _)| list)
            .expect("the op list of the db call row");
        let documented: HashSet<&str> = list
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| *w != "lbctl")
            .collect();
        assert_eq!(documented, labels, "docs/operations.md against Op");
    }
}
