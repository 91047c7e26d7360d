//! Entering a run.

use tokio_postgres::types::Type;

use super::{CompetitionError, Entry, Tier};
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::{BoardId, UserId};

/// Parameters: competition, user, rating.
pub(super) static ENTER: Statement<3> = Statement::new(
    Op::Competition,
    include_str!("sql/enter.sql"),
    [Type::TEXT, Type::TEXT, Type::INT8],
);

/// How often [`enter`] runs its statement again after losing a race (the same new player at
/// once: the later insert aborts on the primary key).
const MAX_TRIES: usize = 4;

/// What an entry did, beyond the entry: whether it opened a new cohort (whose board is new,
/// with no row: `projection::generation::seal_new` may seal it at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entered {
    pub entry: Entry,
    /// The cohort's board, when this entry opened it.
    pub new_cohort: Option<BoardId>,
}

/// The name of `tier` in a league's tiers (JSON text as `competitions.tiers` holds them).
fn tier_name(tiers: Option<String>, tier: i32) -> Option<String> {
    let tiers: Vec<Tier> = serde_json::from_str(tiers.as_deref()?).ok()?;
    Some(tiers.get(usize::try_from(tier).ok()?)?.name.clone())
}

/// A rating within ±[`super::MAX_RATING`], or none.
pub(super) fn check_rating(rating: Option<i64>) -> Result<(), CompetitionError> {
    if rating.is_some_and(|r| r.abs() > super::MAX_RATING) {
        return Err(CompetitionError::Invalid(
            "invalid_rating",
            "rating must be within ±9007199254740991".to_owned(),
        ));
    }
    Ok(())
}

/// Enters `user` into the run of the competition `id` open now: once per run (a repeat answers
/// the first entry), only in its window, never past its cap; with cohorts, into a cohort of the
/// player's tier (with a rating, the nearest within the band).
pub async fn enter(
    db: &Database,
    id: &BoardId,
    user: &UserId,
    rating: Option<i64>,
) -> Result<Entered, CompetitionError> {
    check_rating(rating)?;
    let mut tries = 0;
    let row = loop {
        tries += 1;
        match db
            .query_one(&ENTER, [&id.as_str(), &user.as_str(), &rating])
            .await
        {
            Err(StoreError::Contended(_)) if tries < MAX_TRIES => {}
            other => break other?,
        }
    };
    entered(id, user, &row)
}

/// The entry a row of `sql/enter.sql` answers for `user` in `id`, or the refusal it names.
pub(super) fn entered(
    id: &BoardId,
    user: &UserId,
    row: &tokio_postgres::Row,
) -> Result<Entered, CompetitionError> {
    let outcome: String = row.try_get("outcome")?;
    let duplicate = match outcome.as_str() {
        "entered" => false,
        "repeat" => true,
        "unknown" => return Err(CompetitionError::Unknown),
        "not_started" => return Err(CompetitionError::NotStarted),
        "ended" => return Err(CompetitionError::Ended),
        "full" => return Err(CompetitionError::Full),
        "closing" => return Err(CompetitionError::Closing),
        other => {
            return Err(StoreError::Internal(format!("unexpected entry outcome {other:?}")).into());
        }
    };
    let run: String = row.try_get("run")?;
    let tier: i32 = row.try_get("tier")?;
    let cohort: Option<i32> = row.try_get("cohort")?;
    let new_cohort = match (row.try_get::<_, bool>("new_cohort")?, cohort) {
        (true, Some(c)) => Some(
            id.in_cohort(&run, u32::try_from(c).unwrap_or(0))
                .map_err(|_| StoreError::Internal(format!("cohort {c} of run {run:?}")))?,
        ),
        _ => None,
    };
    Ok(Entered {
        entry: Entry {
            competition: id.to_string(),
            user_id: user.to_string(),
            seat: row.try_get("seat")?,
            tier_name: tier_name(row.try_get("tiers")?, tier),
            tier,
            cohort,
            entered_at: row.try_get("entered_at")?,
            run,
            duplicate,
        },
        new_cohort,
    })
}
