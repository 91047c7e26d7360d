//! A run's standings with the prize each rank earns, from PostgreSQL (what payouts read): the
//! frozen standings of a closed run with the prizes it froze, or the live standings of a run
//! still open with the prizes as declared; and a player's history of runs, tiers and moves.

use serde::Serialize;
use tokio_postgres::types::Type;

use super::{CompetitionError, Prize, Tier, get, prize_for};
use crate::board::definition::Definitions;
use crate::board::periods;
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::{BoardId, RankedEntry, UserId};
use crate::ranking::{RankMode, percentile};

/// Parameters: competition, run.
static RUN_PRIZES: Statement<2> = Statement::new(
    Op::Competition,
    include_str!("sql/run_prizes.sql"),
    [Type::TEXT, Type::TEXT],
);
/// Parameters: competition, user, limit.
static HISTORY: Statement<3> = Statement::new(
    Op::Competition,
    include_str!("sql/history.sql"),
    [Type::TEXT, Type::TEXT, Type::INT8],
);

/// One place of a run's results: the entry, ranked, and what its rank earns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Placed {
    #[serde(flatten)]
    pub entry: RankedEntry,
    /// The prize range the rank falls in; absent when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prize: Option<Prize>,
}

/// A page of a run's results (of one cohort, when it has cohorts), read from PostgreSQL.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Results {
    pub competition: super::Competition,
    pub run: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<u32>,
    /// True once the run is closed: these are its frozen standings and prizes, which `lbctl
    /// competition verify` proves (pay from a final page).
    #[serde(rename = "final")]
    pub is_final: bool,
    /// Entries ranked.
    pub total: u64,
    pub entries: Vec<Placed>,
}

/// A page of the results of `run` (None: the competition's run now) and `cohort` of the
/// competition `id`, each entry with the prize its rank (in `mode`) earns.
#[allow(clippy::too_many_arguments)]
pub async fn results(
    db: &Database,
    definitions: &Definitions,
    id: &BoardId,
    run: Option<&str>,
    cohort: Option<u32>,
    mode: RankMode,
    offset: u64,
    limit: u64,
) -> Result<Results, CompetitionError> {
    let competition = get(db, id).await?.ok_or(CompetitionError::Unknown)?;
    let Some(run) = run.map(str::to_owned).or_else(|| competition.run.clone()) else {
        return Err(CompetitionError::UnknownRun);
    };
    // With cohorts the run's standings are its cohorts': its own board holds nobody.
    if competition.cohort_size.is_some() && cohort.is_none() {
        return Err(CompetitionError::Invalid(
            "cohort_required",
            "this competition ranks by cohort: name one with cohort= (an entry answers its cohort)"
                .to_owned(),
        ));
    }
    let board = match cohort {
        Some(c) => id.in_cohort(&run, c),
        None => id.in_period(&run),
    }
    .map_err(|_| CompetitionError::UnknownRun)?;
    let frozen = db
        .query_opt(&RUN_PRIZES, [&id.as_str(), &run.as_str()])
        .await?;
    let Some(frozen) = frozen else {
        // Open: the board's live standings, the prizes as declared.
        let definition = definitions.get(db, id).await?;
        let tier = tier_of(db, id, &run, cohort).await?;
        let table = competition.prizes_of(tier).to_vec();
        let page =
            crate::db::reads::top(db, &board, definition.order(), mode, offset, limit).await?;
        return Ok(Results {
            is_final: false,
            total: page.total,
            entries: page
                .entries
                .into_iter()
                .map(|entry| Placed {
                    prize: prize_for(&table, i64::try_from(entry.rank).unwrap_or(i64::MAX)),
                    entry,
                })
                .collect(),
            competition,
            run,
            cohort,
        });
    };
    fn frozen_json<T: serde::de::DeserializeOwned>(
        row: &tokio_postgres::Row,
        name: &str,
    ) -> Result<T, StoreError> {
        let text: Option<String> = row.try_get(name)?;
        serde_json::from_str(text.as_deref().unwrap_or("[]"))
            .map_err(|e| StoreError::Internal(format!("a closed run's {name}: {e}")))
    }
    let prizes: Vec<Prize> = frozen_json(&frozen, "prizes")?;
    let tiers: Vec<Tier> = frozen_json(&frozen, "tiers")?;
    let tier = tier_of(db, id, &run, cohort).await?;
    let table = usize::try_from(tier)
        .ok()
        .and_then(|t| tiers.get(t))
        .and_then(|t| t.prizes.clone())
        .unwrap_or(prizes);
    let key = board.period().unwrap_or_default().to_owned();
    let total = periods::closed(db, id, &key)
        .await?
        .map_or(0, |c| u64::try_from(c.entries).unwrap_or(0));
    let after = i64::try_from(offset).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let standings = periods::standings(db, id, &key, after, limit).await?;
    let entries = standings
        .into_iter()
        .map(|s| {
            let rank = match mode {
                RankMode::Ordinal => s.position,
                RankMode::Competition => s.rank,
                RankMode::Dense => s.dense_rank,
            };
            Placed {
                prize: prize_for(&table, rank),
                entry: RankedEntry {
                    rank: u64::try_from(rank).unwrap_or(0),
                    percentile: percentile(total, u64::try_from(s.rank).unwrap_or(0)),
                    user_id: s.user_id,
                    score: s.score,
                    scores: s.scores,
                    metadata: s.metadata,
                },
            }
        })
        .collect();
    Ok(Results {
        is_final: true,
        total,
        entries,
        competition,
        run,
        cohort,
    })
}

/// Parameters: competition, run, cohort.
static COHORT_TIER: Statement<3> = Statement::new(
    Op::Competition,
    "SELECT tier FROM competition_cohorts WHERE competition_id = $1 AND run = $2 AND cohort = $3",
    [Type::TEXT, Type::TEXT, Type::INT4],
);

/// The tier of a run's cohort (0 without cohorts).
async fn tier_of(
    db: &Database,
    id: &BoardId,
    run: &str,
    cohort: Option<u32>,
) -> Result<i32, StoreError> {
    let Some(c) = cohort.and_then(|c| i32::try_from(c).ok()) else {
        return Ok(0);
    };
    Ok(db
        .query_opt(&COHORT_TIER, [&id.as_str(), &run, &c])
        .await?
        .map(|r| r.try_get("tier"))
        .transpose()?
        .unwrap_or(0))
}

/// One run in a player's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunEntry {
    pub run: String,
    pub tier: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<i32>,
    pub seat: i32,
    pub entered_at: String,
    pub closed: bool,
    /// The frozen place (closed runs where the player scored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    /// The tier the close moved the player to (absent: stayed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<i32>,
}

/// A player's history in a competition: the tier now and the runs entered, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct History {
    pub competition: String,
    pub user_id: String,
    /// The league tier now (0: the lowest, or no league) and its name.
    pub tier: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_name: Option<String>,
    pub runs: Vec<RunEntry>,
}

/// Most runs one history answers.
pub const MAX_HISTORY: i64 = 100;

/// The player's history in the competition `id` (its last `limit` runs).
pub async fn history(
    db: &Database,
    id: &BoardId,
    user: &UserId,
    limit: i64,
) -> Result<History, CompetitionError> {
    let competition = get(db, id).await?.ok_or(CompetitionError::Unknown)?;
    let rows = db
        .query(
            &HISTORY,
            [&id.as_str(), &user.as_str(), &limit.clamp(1, MAX_HISTORY)],
        )
        .await?;
    let mut tier = 0;
    let mut runs = Vec::with_capacity(rows.len());
    for r in &rows {
        tier = r.try_get::<_, Option<i32>>("tier_now")?.unwrap_or(0);
        runs.push(RunEntry {
            run: r.try_get("run")?,
            tier: r.try_get("tier")?,
            cohort: r.try_get("cohort")?,
            seat: r.try_get("seat")?,
            entered_at: r.try_get("entered_at")?,
            closed: r.try_get("closed")?,
            position: r.try_get("position")?,
            rank: r.try_get("rank")?,
            score: r.try_get("score")?,
            moved_to: r.try_get("to_tier")?,
        });
    }
    Ok(History {
        competition: id.to_string(),
        user_id: user.to_string(),
        tier_name: usize::try_from(tier)
            .ok()
            .and_then(|t| competition.tiers.get(t))
            .map(|t| t.name.clone()),
        tier,
        runs,
    })
}
