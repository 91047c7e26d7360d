//! The dispatcher's side of a subscription: lanes claimed by lease, their next events, and what
//! a delivery's outcome writes. No transaction stays open across a delivery: each step is one
//! statement, and every write of a lane's progress is fenced by the claim that leased it (its
//! `holder`), so a replica whose lease ran out and was taken over writes nothing.

use std::time::Duration;

use ring::rand::{SecureRandom, SystemRandom};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::board::definition::Definitions;
use crate::db::{Database, Op, Statement, StoreError};
use crate::events::render::{self, Stored};
use crate::events::{Event, feed};
use crate::model::{BoardId, Columns};

/// Parameters: holder, lease ms, limit, circuit threshold, circuit open ms.
static CLAIM: Statement<5> = Statement::new(
    Op::WebhookClaim,
    include_str!("sql/claim.sql"),
    [Type::TEXT, Type::INT8, Type::INT8, Type::INT4, Type::INT8],
);
/// Parameters: subscription, lane, lanes, after, window, kinds, boards, limit.
static NEXT: Statement<8> = Statement::new(
    Op::WebhookEvents,
    include_str!("sql/next.sql"),
    [
        Type::TEXT,
        Type::INT4,
        Type::INT4,
        Type::INT8,
        Type::INT8,
        Type::TEXT_ARRAY,
        Type::TEXT_ARRAY,
        Type::INT8,
    ],
);
/// Parameters: subscription, lane, holder, after, through.
static GAP: Statement<5> = Statement::new(
    Op::WebhookEvents,
    include_str!("sql/gap.sql"),
    [Type::TEXT, Type::INT4, Type::TEXT, Type::INT8, Type::INT8],
);
/// Parameters: subscription, lane, holder, position, lease ms, delivered.
static ADVANCE: Statement<6> = Statement::new(
    Op::WebhookAdvance,
    include_str!("sql/advance.sql"),
    [
        Type::TEXT,
        Type::INT4,
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::BOOL,
    ],
);
/// Parameters: subscription, lane, holder.
static RELEASE: Statement<3> = Statement::new(
    Op::WebhookAdvance,
    include_str!("sql/release.sql"),
    [Type::TEXT, Type::INT4, Type::TEXT],
);
/// Parameters: holders.
static GIVE_BACK: Statement<1> = Statement::new(
    Op::WebhookAdvance,
    include_str!("sql/give_back.sql"),
    [Type::TEXT_ARRAY],
);
/// Parameters: subscription, lane, holder, error, retry ms, max attempts, circuit threshold,
/// circuit open ms, position, event id, kind, board, body.
static FAIL: Statement<13> = Statement::new(
    Op::WebhookFail,
    include_str!("sql/fail.sql"),
    [
        Type::TEXT,
        Type::INT4,
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::INT4,
        Type::INT4,
        Type::INT8,
        Type::INT8,
        Type::UUID,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
    ],
);

/// Positions one read of a lane covers at most, however few of them are the lane's: a sparse
/// lane moves through the log in steps of this many instead of scanning it in one call.
pub const WINDOW: i64 = feed::WINDOW;

/// The longest error text kept on a lane or a parked delivery.
pub const MAX_ERROR_LEN: usize = 500;

/// When a subscription's circuit opens, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Circuit {
    /// Consecutive failed deliveries that open it.
    pub threshold: i32,
    pub open_for: Duration,
}

/// A lane leased to one claim, with what its deliveries need.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub subscription_id: String,
    pub lane: i32,
    /// The subscription's number of lanes (which boards go by this one).
    pub lanes: i32,
    /// Every event of the lane at or below it is done.
    pub position: i64,
    /// Failed attempts at its next event so far.
    pub attempts: i32,
    /// The half-open circuit's one trial.
    pub trial: bool,
    pub url: String,
    pub secret: String,
    pub kinds: Vec<String>,
    pub boards: Vec<String>,
    /// The claim that leased it: every write of its progress is fenced by it.
    pub holder: String,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Leases up to `limit` due lanes to `holder` for `lease` (see `sql/claim.sql`).
pub async fn claim(
    db: &Database,
    holder: &str,
    lease: Duration,
    limit: i64,
    circuit: Circuit,
) -> Result<Vec<Claimed>, StoreError> {
    let rows = db
        .query(
            &CLAIM,
            [
                &holder,
                &ms(lease),
                &limit,
                &circuit.threshold,
                &ms(circuit.open_for),
            ],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Claimed {
                subscription_id: r.try_get("subscription_id")?,
                lane: r.try_get("lane")?,
                lanes: r.try_get("lanes")?,
                position: r.try_get("position")?,
                attempts: r.try_get("attempts")?,
                trial: r.try_get("trial")?,
                url: r.try_get("url")?,
                secret: r.try_get("secret")?,
                kinds: r.try_get("kinds")?,
                boards: r.try_get("boards")?,
                holder: holder.to_owned(),
            })
        })
        .collect()
}

/// One event of a lane, rendered as every reader shows it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub event: Event,
    /// When it happened, in Unix seconds (the lag at delivery is measured from it).
    pub occurred_epoch: f64,
}

/// A lane's next events.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub events: Vec<Pending>,
    /// Once every event of the batch is done, the lane may move to this position (the
    /// window's end when the batch is short; the last event's when it is full).
    pub upto: i64,
    /// Retention deleted events after `after` through this position before the lane read
    /// them: recorded in `webhook_gaps`, the lane moved to it.
    pub gap: Option<i64>,
}

/// The next events of `lane` after `after`, at most `limit`. A lane whose position retention
/// has passed records the gap first and goes on from there.
pub async fn next(
    db: &Database,
    definitions: &Definitions,
    lane: &Claimed,
    after: i64,
    limit: i64,
) -> Result<Batch, StoreError> {
    let bounds = feed::bounds(db).await?;
    let mut after = after;
    let mut gap = None;
    if after < bounds.swept_through {
        let recorded = db
            .query_opt(
                &GAP,
                [
                    &lane.subscription_id,
                    &lane.lane,
                    &lane.holder,
                    &after,
                    &bounds.swept_through,
                ],
            )
            .await?;
        tracing::warn!(
            subscription = %lane.subscription_id,
            lane = lane.lane,
            after,
            through = bounds.swept_through,
            recorded = recorded.is_some(),
            "retention deleted events this lane had not delivered; the gap is recorded"
        );
        gap = Some(bounds.swept_through);
        after = bounds.swept_through;
    }
    // Every position up to `last` has committed (the sequencer commits them in order), so a
    // lane moved to the window's end never steps past an event still to come.
    let upto = after.saturating_add(WINDOW).min(bounds.last).max(after);
    if upto == after {
        return Ok(Batch {
            events: Vec::new(),
            upto,
            gap,
        });
    }
    let rows = db
        .query(
            &NEXT,
            [
                &lane.subscription_id,
                &lane.lane,
                &lane.lanes,
                &after,
                &(upto - after),
                &lane.kinds,
                &lane.boards,
                &limit,
            ],
        )
        .await?;
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        events.push(pending(db, definitions, row).await?);
    }
    let upto = if events.len() as i64 >= limit {
        events.last().map_or(upto, |e| e.event.position)
    } else {
        upto
    };
    Ok(Batch { events, upto, gap })
}

async fn pending(
    db: &Database,
    definitions: &Definitions,
    row: &Row,
) -> Result<Pending, StoreError> {
    let stored = Stored::from_row(row)?;
    let columns = if stored.is_score() {
        let board = BoardId::parse_stored(&stored.board_id).map_err(|e| {
            StoreError::Internal(format!(
                "event {} names a board it cannot: {e}",
                stored.event_id
            ))
        })?;
        definitions.get(db, &board).await?.order().columns
    } else {
        Columns::ONE
    };
    let occurred_epoch = row.try_get("occurred_epoch")?;
    Ok(Pending {
        event: render::event(stored, columns)?,
        occurred_epoch,
    })
}

/// Moves the lane past `position` and extends its lease; `delivered` (not a window that
/// matched nothing) also closes the subscription's circuit. False: the lease is no longer
/// this claim's (it ran out and another claim took the lane), and the caller stops.
pub async fn advance(
    db: &Database,
    lane: &Claimed,
    position: i64,
    lease: Duration,
    delivered: bool,
) -> Result<bool, StoreError> {
    let row = db
        .query_one(
            &ADVANCE,
            [
                &lane.subscription_id,
                &lane.lane,
                &lane.holder,
                &position,
                &ms(lease),
                &delivered,
            ],
        )
        .await?;
    let advanced: i64 = row.try_get("advanced")?;
    let healed: i64 = row.try_get("healed")?;
    if healed > 0 {
        tracing::info!(subscription = %lane.subscription_id, "delivery succeeded: the circuit is closed");
    }
    Ok(advanced > 0)
}

/// Gives the lane back (caught up, its turn over, or stopping).
pub async fn release(db: &Database, lane: &Claimed) -> Result<(), StoreError> {
    db.execute(&RELEASE, [&lane.subscription_id, &lane.lane, &lane.holder])
        .await?;
    Ok(())
}

/// Gives back what the claims `holders` leased, lanes and requeued parked deliveries: claims
/// whose answer was lost (see `sql/give_back.sql`). Returns how many leases it ended.
pub async fn give_back(db: &Database, holders: &[String]) -> Result<i64, StoreError> {
    let row = db.query_one(&GIVE_BACK, [&holders]).await?;
    Ok(row.try_get("given_back")?)
}

/// What a failed delivery asks for.
#[derive(Debug, Clone, Copy)]
pub struct Failure<'a> {
    pub error: &'a str,
    /// Until the next attempt ([`retry_delay`]).
    pub retry_in: Duration,
    /// At this many attempts the event is parked.
    pub max_attempts: i32,
    pub circuit: Circuit,
}

/// What a failure wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed {
    /// The lane's attempts at the event, this one included.
    pub attempts: i32,
    /// The event was parked and the lane moved past it.
    pub parked: bool,
    /// The subscription's circuit is open now.
    pub circuit_open: bool,
}

/// Records a failed delivery of `event` (its signed `body`): see `sql/fail.sql`. `None`: the
/// lease is no longer this claim's, nothing was written.
pub async fn fail(
    db: &Database,
    lane: &Claimed,
    event: &Event,
    body: &str,
    failure: Failure<'_>,
) -> Result<Option<Failed>, StoreError> {
    let error = truncate(failure.error);
    let row = db
        .query_one(
            &FAIL,
            [
                &lane.subscription_id,
                &lane.lane,
                &lane.holder,
                &error,
                &ms(failure.retry_in),
                &failure.max_attempts,
                &failure.circuit.threshold,
                &ms(failure.circuit.open_for),
                &event.position,
                &event.id,
                &event.kind,
                &event.board,
                &body,
            ],
        )
        .await?;
    let attempts: Option<i32> = row.try_get("attempts")?;
    Ok(match attempts {
        None => None,
        Some(attempts) => Some(Failed {
            attempts,
            parked: row.try_get("parked")?,
            circuit_open: row.try_get("circuit_open")?,
        }),
    })
}

/// At most [`MAX_ERROR_LEN`] bytes, cut at a character boundary.
pub fn truncate(error: &str) -> &str {
    if error.len() <= MAX_ERROR_LEN {
        return error;
    }
    let mut end = MAX_ERROR_LEN;
    while !error.is_char_boundary(end) {
        end -= 1;
    }
    &error[..end]
}

/// The wait before attempt `attempt + 1` after `attempt` failed ones: `first` doubled per
/// attempt up to `max`, then a random point in its upper half (`fraction` in [0, 1)), so that
/// lanes that failed together do not all come back at the same instant.
pub fn retry_delay(first: Duration, max: Duration, attempt: u32, fraction: f64) -> Duration {
    let doublings = attempt.saturating_sub(1).min(32);
    let full = first.saturating_mul(1 << doublings.min(31)).min(max);
    full.mul_f64(0.5 + 0.5 * fraction.clamp(0.0, 1.0))
}

/// A uniform fraction in [0, 1) from the system's random source (0.5 should it fail: the
/// jitter is a spread, not a secret).
pub fn jitter() -> f64 {
    let mut b = [0u8; 4];
    match SystemRandom::new().fill(&mut b) {
        Ok(()) => f64::from(u32::from_le_bytes(b)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_delay_doubles_up_to_its_cap_with_jitter_in_the_upper_half() {
        let (first, max) = (Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(retry_delay(first, max, 1, 1.0), Duration::from_secs(1));
        assert_eq!(retry_delay(first, max, 2, 1.0), Duration::from_secs(2));
        assert_eq!(retry_delay(first, max, 4, 1.0), Duration::from_secs(8));
        assert_eq!(retry_delay(first, max, 30, 1.0), Duration::from_secs(60));
        assert_eq!(retry_delay(first, max, 1_000, 0.0), Duration::from_secs(30));
        assert_eq!(retry_delay(first, max, 1, 0.0), Duration::from_millis(500));
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }

    #[test]
    fn errors_are_cut_at_a_character_boundary() {
        let long = "é".repeat(400);
        let cut = truncate(&long);
        assert!(cut.len() <= MAX_ERROR_LEN);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(truncate("short"), "short");
    }
}
