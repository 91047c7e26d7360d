//! Every SQL statement of the shared store code, kept in its own file under `db/sql/`.

pub const SCORE_COMMAND: &str = include_str!("sql/score_command.sql");
pub const SCHEMA_VERSION: &str = include_str!("sql/schema_version.sql");
pub const OUTBOX_STATUS: &str = include_str!("sql/outbox_status.sql");
pub const SCHEMA_HISTORY_EXISTS: &str = include_str!("sql/schema_history_exists.sql");
pub const OUTBOX_CLAIM: &str = include_str!("sql/outbox_claim.sql");
pub const OUTBOX_LEASE: &str = include_str!("sql/outbox_lease.sql");
pub const OUTBOX_PUBLISH: &str = include_str!("sql/outbox_publish.sql");
pub const OUTBOX_FAIL: &str = include_str!("sql/outbox_fail.sql");
pub const OUTBOX_RELEASE: &str = include_str!("sql/outbox_release.sql");
pub const RETENTION_LOCK: &str = include_str!("sql/retention_lock.sql");
pub const RETENTION_OUTBOX: &str = include_str!("sql/retention_outbox.sql");
pub const RETENTION_EVENTS: &str = include_str!("sql/retention_events.sql");
pub const PARKED_LIST: &str = include_str!("sql/parked_list.sql");
pub const PARKED_REQUEUE: &str = include_str!("sql/parked_requeue.sql");
pub const OUTBOX_WAKEUP: &str = include_str!("sql/outbox_wakeup.sql");
/// The channel `OUTBOX_WAKEUP` notifies and the projectors listen on.
pub const OUTBOX_CHANNEL: &str = "ledgerboard_outbox";
pub const RECONCILE_BOARDS: &str = include_str!("sql/reconcile_boards.sql");
pub const RECONCILE_PROGRESS_GET: &str = include_str!("sql/reconcile_progress_get.sql");
pub const RECONCILE_PROGRESS_SET: &str = include_str!("sql/reconcile_progress_set.sql");
pub const RECONCILE_CHUNK: &str = include_str!("sql/reconcile_chunk.sql");
pub const RECONCILE_EXISTING: &str = include_str!("sql/reconcile_existing.sql");
pub const RECONCILE_RECHECK: &str = include_str!("sql/reconcile_recheck.sql");
pub const READ_TOP: &str = include_str!("sql/read_top.sql");
pub const READ_USER: &str = include_str!("sql/read_user.sql");
pub const READ_ABOVE: &str = include_str!("sql/read_above.sql");
pub const READ_BELOW: &str = include_str!("sql/read_below.sql");
pub const FRESHNESS: &str = include_str!("sql/freshness.sql");
