//! Declaring a competition, reading one and listing them.

use tokio_postgres::Row;
use tokio_postgres::types::Type;

use super::{
    Competition, CompetitionError, Declaration, MAX_PAGE, MAX_PRIZES, MAX_RATING, MAX_TIERS, Prize,
    State,
};
use crate::board::definition::{Definitions, Reset};
use crate::db::{Database, Op, Statement, StoreError};
use crate::model::BoardId;

/// Parameters: id, category, starts_at, ends_at, entry required, max size, metadata, prizes,
/// duration, cohort size, rating band, tiers.
static DECLARE: Statement<12> = Statement::new(
    Op::Competition,
    include_str!("sql/declare.sql"),
    [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::BOOL,
        Type::INT4,
        Type::TEXT,
        Type::TEXT,
        Type::INT4,
        Type::INT4,
        Type::INT8,
        Type::TEXT,
    ],
);
static GET: Statement<1> =
    Statement::new(Op::Competition, include_str!("sql/get.sql"), [Type::TEXT]);
/// Parameters: category, state, after, limit.
static LIST: Statement<4> = Statement::new(
    Op::Competition,
    include_str!("sql/list.sql"),
    [Type::TEXT, Type::TEXT, Type::TEXT, Type::INT8],
);

fn invalid<T>(code: &'static str, message: &str) -> Result<T, CompetitionError> {
    Err(CompetitionError::Invalid(code, message.to_owned()))
}

/// Checks a prize table: ascending, not overlapping ranges from 1, rewards of 1 to 64
/// characters, amounts not negative, at most [`MAX_PRIZES`] ranges.
fn check_prizes(prizes: &[Prize]) -> Result<(), CompetitionError> {
    let mut last = 0;
    for p in prizes {
        let reward_ok =
            (1..=64).contains(&p.reward.chars().count()) && !p.reward.chars().any(char::is_control);
        if p.from <= last || p.to < p.from || !reward_ok || p.amount < 0 {
            return invalid(
                "invalid_prizes",
                "prizes must be rank ranges {from, to, reward, amount} in ascending order, not overlapping, from 1, each reward 1 to 64 characters, amounts not negative",
            );
        }
        last = p.to;
    }
    if prizes.len() > MAX_PRIZES {
        return invalid("invalid_prizes", "at most 100 prize ranges");
    }
    Ok(())
}

impl Declaration {
    /// Checks what a row cannot: the window's times and order, the cap, the cohorts and tiers,
    /// the category, the metadata's size and the prize tables.
    fn check(&self) -> Result<(), CompetitionError> {
        let time = |t: &Option<String>| -> Result<(), CompetitionError> {
            use chrono::Datelike;
            match t.as_deref().map(chrono::DateTime::parse_from_rfc3339) {
                None => Ok(()),
                // Years the database's timestamps and period ids hold.
                Some(Ok(t))
                    if t.timestamp_subsec_nanos() == 0 && (1970..=9999).contains(&t.year()) =>
                {
                    Ok(())
                }
                Some(_) => invalid(
                    "invalid_window",
                    "starts_at and ends_at must be RFC 3339 times in whole seconds, years 1970 to 9999 (2026-12-07T18:00:00Z)",
                ),
            }
        };
        time(&self.starts_at)?;
        time(&self.ends_at)?;
        let parsed = |t: &Option<String>| {
            t.as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        };
        match (parsed(&self.starts_at), parsed(&self.ends_at)) {
            (Some(_), None) => {
                return invalid(
                    "invalid_window",
                    "a window needs ends_at (starts_at alone is not one; neither: recurring)",
                );
            }
            (Some(start), Some(end)) if end <= start => {
                return invalid("invalid_window", "ends_at must be after starts_at");
            }
            _ => {}
        }
        if self.ends_at.is_some() && self.duration_s.is_some() {
            return invalid(
                "invalid_duration",
                "duration_s is for recurring competitions (no window)",
            );
        }
        if self.duration_s.is_some_and(|d| d < 1) {
            return invalid("invalid_duration", "duration_s must be at least 1");
        }
        if self.max_size.is_some_and(|n| n < 1) {
            return invalid("invalid_max_size", "max_size must be at least 1");
        }
        if self.cohort_size.is_some_and(|n| !(2..=10_000).contains(&n)) {
            return invalid("invalid_cohort_size", "cohort_size must be 2 to 10000");
        }
        if self.cohort_size.is_some() && self.entry_required == Some(false) {
            return invalid(
                "invalid_cohort_size",
                "cohorts need entries: entry_required must be true",
            );
        }
        let band_ok = self
            .rating_band
            .is_none_or(|b| (0..=MAX_RATING).contains(&b));
        if !band_ok || (self.rating_band.is_some() && self.cohort_size.is_none()) {
            return invalid(
                "invalid_rating_band",
                "rating_band must be 0 to 9007199254740991, with a cohort_size",
            );
        }
        if !self.tiers.is_empty() {
            if self.cohort_size.is_none() || self.tiers.len() > MAX_TIERS {
                return invalid(
                    "invalid_tiers",
                    "a league's tiers (1 to 10) need a cohort_size",
                );
            }
            for (i, t) in self.tiers.iter().enumerate() {
                let name_ok = (1..=32).contains(&t.name.chars().count())
                    && !t.name.chars().any(char::is_control)
                    && !self.tiers[..i].iter().any(|o| o.name == t.name);
                if !name_ok || t.promote < 0 || t.relegate < 0 {
                    return invalid(
                        "invalid_tiers",
                        "each tier needs a unique name of 1 to 32 characters, and promote and relegate of at least 0",
                    );
                }
                check_prizes(t.prizes.as_deref().unwrap_or_default())?;
            }
        }
        let category = self.category.as_deref().unwrap_or_default();
        if category.chars().count() > 64 || category.chars().any(char::is_control) {
            return invalid(
                "invalid_category",
                "category must be at most 64 characters without control characters",
            );
        }
        // jsonb holds no \u0000: refused here as the metadata's error, not the store's.
        let fits = |m: &serde_json::Value| {
            let text = m.to_string();
            m.is_object() && text.len() <= 4096 && !text.contains("\\u0000")
        };
        if !self.metadata.as_ref().is_none_or(fits) {
            return invalid(
                "invalid_metadata",
                "metadata must be a JSON object of at most 4096 bytes, without \\u0000",
            );
        }
        check_prizes(&self.prizes)
    }
}

/// Declares the competition `id` over its declared board, or changes it; answers it and whether
/// it was created. A one-off competition (a window) needs a board that resets by hand (its
/// window becomes the board's resets); a recurring one (no window) a board on a schedule.
pub async fn declare(
    db: &Database,
    definitions: &Definitions,
    id: &BoardId,
    declaration: &Declaration,
) -> Result<(Competition, bool), CompetitionError> {
    declaration.check()?;
    let definition = definitions.get(db, id).await?;
    let not_a_board = |why| Err(CompetitionError::NotABoard(id.clone(), why));
    if !definition.declared || id.period().is_some() {
        return not_a_board("declare it first (PUT /v1/boards/{id})");
    }
    match (&definition.reset, declaration.ends_at.is_some()) {
        (Reset::Never, _) => {
            return not_a_board(
                "a competition's runs are its board's periods: declare the board with reset manual (a one-off window) or a schedule (recurring)",
            );
        }
        (Reset::Manual, false) => {
            return not_a_board(
                "a board reset by hand holds a one-off competition: give its window",
            );
        }
        (r, true) if *r != Reset::Manual => {
            return not_a_board("a one-off competition (a window) needs a board with reset manual");
        }
        _ => {}
    }
    if declaration.cohort_size.is_some() && definition.review.is_some() {
        return not_a_board(
            "cohorts are not taken on a board with review rules (a held score's approval would land outside its cohort)",
        );
    }
    let to_json = |e: serde_json::Error| StoreError::Internal(format!("competition: {e}"));
    let metadata = declaration.metadata.as_ref().map(|m| m.to_string());
    let prizes = serde_json::to_string(&declaration.prizes).map_err(to_json)?;
    let tiers = serde_json::to_string(&declaration.tiers).map_err(to_json)?;
    let category = declaration.category.clone().unwrap_or_default();
    let row = db
        .query_one(
            &DECLARE,
            [
                &id.as_str(),
                &category,
                &declaration.starts_at,
                &declaration.ends_at,
                &declaration.entry_required.unwrap_or(true),
                &declaration.max_size,
                &metadata,
                &prizes,
                &declaration.duration_s,
                &declaration.cohort_size,
                &declaration.rating_band,
                &tiers,
            ],
        )
        .await?;
    let refusal: Option<String> = row.try_get("refusal")?;
    match refusal.as_deref() {
        None => {}
        Some("started") => return Err(CompetitionError::Started),
        Some("below_entrants") => {
            return Err(CompetitionError::BelowEntrants(row.try_get("entrants")?));
        }
        Some("past_start") => {
            return invalid(
                "invalid_window",
                "starts_at must be ahead (leave it out to start at the next whole second)",
            );
        }
        Some(other) => {
            return Err(StoreError::Internal(format!("unexpected refusal {other:?}")).into());
        }
    }
    let created: bool = row.try_get::<_, Option<bool>>("created")?.unwrap_or(false);
    let competition = get(db, id).await?.ok_or(CompetitionError::Unknown)?;
    Ok((competition, created))
}

fn of_row(row: &Row) -> Result<Competition, StoreError> {
    fn json<T: serde::de::DeserializeOwned>(
        row: &Row,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        row.try_get::<_, Option<String>>(name)?
            .map(|t| serde_json::from_str(&t))
            .transpose()
            .map_err(|e| StoreError::Internal(format!("competition {name}: {e}")))
    }
    let run: String = row.try_get("run")?;
    Ok(Competition {
        id: row.try_get("competition_id")?,
        category: row.try_get("category")?,
        starts_at: row.try_get("starts_at")?,
        ends_at: row.try_get("ends_at")?,
        duration_s: row.try_get("duration_s")?,
        state: row.try_get("state")?,
        entry_required: row.try_get("entry_required")?,
        max_size: row.try_get("max_size")?,
        cohort_size: row.try_get("cohort_size")?,
        rating_band: row.try_get("rating_band")?,
        tiers: json(row, "tiers")?.unwrap_or_default(),
        run: (!run.is_empty()).then_some(run),
        entrants: row.try_get("entrants")?,
        cohorts: row.try_get("cohorts")?,
        metadata: json(row, "metadata")?,
        prizes: json(row, "prizes")?.unwrap_or_default(),
    })
}

/// The competition `id`, if declared.
pub async fn get(db: &Database, id: &BoardId) -> Result<Option<Competition>, StoreError> {
    db.query_opt(&GET, [&id.as_str()])
        .await?
        .as_ref()
        .map(of_row)
        .transpose()
}

/// A page of competitions in id order, after `after`, of `category` and `state` (None: all).
pub async fn list(
    db: &Database,
    category: Option<&str>,
    state: Option<State>,
    after: Option<&BoardId>,
    limit: i64,
) -> Result<Vec<Competition>, StoreError> {
    let rows = db
        .query(
            &LIST,
            [
                &category,
                &state.map(State::as_str),
                &after.map_or("", BoardId::as_str),
                &limit.clamp(1, MAX_PAGE),
            ],
        )
        .await?;
    rows.iter().map(of_row).collect()
}
