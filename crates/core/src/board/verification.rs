//! A closed period's verification (issue 35): its frozen standings checked against their seal
//! (the close's digest, or an erasure's re-seal since: migration V13) and against the events,
//! and the one outcome every reader states (`lbctl period verify`, the console, the api):
//! the standings hold, hold with changes the records explain, or do not hold.

use tokio_postgres::types::Type;

use super::periods::{TIMEOUT, WHOLE_PERIOD_TIMEOUT};
use crate::db::{Database, Op, Statement, StoreError, commit};
use crate::model::BoardId;

/// Parameters: board, period.
pub static VERIFY: Statement<2> = Statement::new(
    Op::PeriodRead,
    include_str!("sql/period_verify.sql"),
    [Type::TEXT, Type::TEXT],
);

/// What a verification concludes. Payout tooling keys on it (`lbctl period verify` exits 0 for
/// the first two, 1 for the third; `as_str` is the stable name in its JSON and the api's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every row is what the close froze and what the events say; nobody is left out.
    Holds,
    /// As `Holds`, except for rows re-keyed or left out for reasons the records explain: an
    /// erasure since the close (its re-seal checked the digest), a ban in force at the close,
    /// a removal from the period, an erasure before the close.
    HoldsWithExplainedChanges,
    /// A row or the digest disagrees, or a row is left out with no record explaining it.
    DoesNotHold,
}

impl Outcome {
    /// The stable name: `holds`, `holds_with_explained_changes`, `does_not_hold`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::HoldsWithExplainedChanges => "holds_with_explained_changes",
            Outcome::DoesNotHold => "does_not_hold",
        }
    }

    /// How a person reads it (the tab line's second field, the console's check).
    pub fn words(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::HoldsWithExplainedChanges => "holds with explained changes",
            Outcome::DoesNotHold => "does not hold",
        }
    }

    /// Whether a payout may rely on the standings (both outcomes but `DoesNotHold`).
    pub fn holds(self) -> bool {
        !matches!(self, Outcome::DoesNotHold)
    }
}

/// What [`verify`] found of a closed period.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Verification {
    /// The frozen rows now, and the count the close wrote.
    pub rows: i64,
    pub entries: i64,
    /// The digest recomputed from the rows as they are now equals the period's seal: the
    /// close's, or the newest erasure's re-seal.
    pub digest_matches: bool,
    /// Erasures since the close that re-sealed the digest, and those of them that found the
    /// rows (with the erased id put back) not matching the seal before them.
    pub resealed: i64,
    pub reseals_broken: i64,
    /// Rows whose score and version are those of the user's newest event in the period.
    pub agree: i64,
    /// Rows that are not (or whose user has no event in the period).
    pub disagree: i64,
    /// Rows whose user was erased since (they carry the erasure's pseudonym).
    pub erased: i64,
    /// Users with events in the period and no row; of them, those an erasure explains (the
    /// user is an erasure's pseudonym), a ban in force at the close, a removal from the
    /// period, and those no record explains.
    pub left_out: i64,
    pub left_out_erased: i64,
    pub left_out_banned: i64,
    pub left_out_removed: i64,
    pub left_out_unexplained: i64,
    /// Scores held for review in the period (issue 38: recorded, never applied, so never in
    /// its standings nor among its events): still pending at the check, and rejected.
    pub held_pending: i64,
    pub held_rejected: i64,
}

impl Verification {
    /// The three-way outcome (see [`Outcome`]).
    pub fn outcome(&self) -> Outcome {
        if !self.digest_matches
            || self.rows != self.entries
            || self.disagree > 0
            || self.left_out_unexplained > 0
            || self.reseals_broken > 0
        {
            Outcome::DoesNotHold
        } else if self.erased > 0
            || self.left_out > 0
            || self.resealed > 0
            || self.held_pending > 0
            || self.held_rejected > 0
        {
            Outcome::HoldsWithExplainedChanges
        } else {
            Outcome::Holds
        }
    }

    /// Whether a payout may rely on the standings (`Holds` or `HoldsWithExplainedChanges`).
    pub fn holds(&self) -> bool {
        self.outcome().holds()
    }

    /// One sentence for a person: the outcome's words, then every count it rests on.
    pub fn describe(&self) -> String {
        let digest = if self.digest_matches {
            "matches"
        } else if self.erased > 0 && self.resealed == 0 {
            // Erased by a release before re-seals (migration V13): nothing can check it now.
            "does not match (rows erased without a re-seal)"
        } else {
            "does not match"
        };
        format!(
            "{}: digest {digest}, {} rows for {} entries, {} agree and {} disagree with the events, \
             {} erased since the close ({} re-seals, {} of them broken), {} left out \
             ({} erased, {} banned at the close, {} removed, {} unexplained), {} held for review \
             and not in the standings ({} pending, {} rejected)",
            self.outcome().words(),
            self.rows,
            self.entries,
            self.agree,
            self.disagree,
            self.erased,
            self.resealed,
            self.reseals_broken,
            self.left_out,
            self.left_out_erased,
            self.left_out_banned,
            self.left_out_removed,
            self.left_out_unexplained,
            self.held_pending + self.held_rejected,
            self.held_pending,
            self.held_rejected
        )
    }
}

/// Checks a closed period's frozen standings against their seal and against the events; None
/// when the period is not closed.
pub async fn verify(
    db: &Database,
    board: &BoardId,
    period: &str,
) -> Result<Option<Verification>, StoreError> {
    let mut client = db.client().await?;
    let tx = client.transaction().await?;
    let stmts = db.statements();
    let bound = format!("{}ms", WHOLE_PERIOD_TIMEOUT.as_millis());
    stmts.query(&tx, &TIMEOUT, [&bound]).await?;
    let rows = stmts
        .query(&tx, &VERIFY, [&board.base().as_str(), &period])
        .await?;
    commit(tx).await?;
    rows.first().map(of_row).transpose()
}

/// A verification as `sql/period_verify.sql` (and, per board of a competition's run,
/// `competition/sql/verify_boards.sql`) answers it: one row of the same columns.
pub(crate) fn of_row(r: &tokio_postgres::Row) -> Result<Verification, StoreError> {
    Ok(Verification {
        rows: r.try_get("rows")?,
        entries: r.try_get("entries")?,
        digest_matches: r
            .try_get::<_, Option<bool>>("digest_matches")?
            .unwrap_or(false),
        resealed: r.try_get("resealed")?,
        reseals_broken: r.try_get("reseals_broken")?,
        agree: r.try_get("agree")?,
        disagree: r.try_get("disagree")?,
        erased: r.try_get("erased")?,
        left_out: r.try_get("left_out")?,
        left_out_erased: r.try_get("left_out_erased")?,
        left_out_banned: r.try_get("left_out_banned")?,
        left_out_removed: r.try_get("left_out_removed")?,
        left_out_unexplained: r.try_get("left_out_unexplained")?,
        held_pending: r.try_get("held_pending")?,
        held_rejected: r.try_get("held_rejected")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> Verification {
        Verification {
            rows: 3,
            entries: 3,
            digest_matches: true,
            resealed: 0,
            reseals_broken: 0,
            agree: 3,
            disagree: 0,
            erased: 0,
            left_out: 0,
            left_out_erased: 0,
            left_out_banned: 0,
            left_out_removed: 0,
            left_out_unexplained: 0,
            held_pending: 0,
            held_rejected: 0,
        }
    }

    #[test]
    fn the_outcome_separates_explained_changes_from_disagreement() {
        assert_eq!(clean().outcome(), Outcome::Holds);
        let erased = Verification {
            erased: 1,
            resealed: 1,
            ..clean()
        };
        assert_eq!(erased.outcome(), Outcome::HoldsWithExplainedChanges);
        let banned = Verification {
            left_out: 1,
            left_out_banned: 1,
            ..clean()
        };
        assert_eq!(banned.outcome(), Outcome::HoldsWithExplainedChanges);
        for broken in [
            Verification {
                digest_matches: false,
                ..erased.clone()
            },
            Verification {
                disagree: 1,
                ..clean()
            },
            Verification {
                left_out: 1,
                left_out_unexplained: 1,
                ..clean()
            },
            Verification {
                reseals_broken: 1,
                ..erased.clone()
            },
            Verification { rows: 2, ..clean() },
        ] {
            assert_eq!(broken.outcome(), Outcome::DoesNotHold, "{broken:?}");
            assert!(broken.describe().starts_with("does not hold: "));
        }
        assert_eq!(
            Outcome::HoldsWithExplainedChanges.as_str(),
            serde_json::to_value(Outcome::HoldsWithExplainedChanges).unwrap_or_default()
        );
    }
}
