//! What a board is: its declared rule (operator, `board/operator.rs`), its order (sort, tie
//! break: `model/order.rs`, a leaf, since the read paths sort by it too), its resets and the
//! bounds of what may be submitted.

use serde::{Deserialize, Serialize};

pub use super::rules::{AttemptRule, ReviewRules};
use crate::board::operator::Operator;
pub use crate::model::order::{Columns, Order, Sort, TieBreak};
use crate::model::{BoardId, MAX_ABS_SCORE, MAX_DELTA, MIN_DELTA};

/// When a board starts a new period (docs/api.md, "Periods"): each period is a board of its own,
/// `<board>~<period id>` ([`BoardId::in_period`]), and a command lands in the period open when
/// its statement reads the database clock (`lb_command_board`, migration V7).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reset {
    /// One period for ever: the board keeps its plain id (every board before V7).
    Never,
    /// New periods only when an admin asks.
    Manual,
    /// At midnight of the board's time zone (and when an admin asks).
    Daily,
    /// At Monday's midnight of the board's time zone.
    Weekly,
    /// At midnight of the first of the month in the board's time zone.
    Monthly,
    /// Every so many seconds since the Unix epoch (1 to 99,999,999): short periods, for
    /// rounds of a few minutes and for tests.
    Every(u32),
    /// At the fire times of a five-field cron expression in the board's time zone (migration
    /// V8: the boundaries are written ahead into `board_resets`).
    Cron(Cron),
}

impl Reset {
    pub fn as_string(&self) -> String {
        match self {
            Self::Never => "never".into(),
            Self::Manual => "manual".into(),
            Self::Daily => "daily".into(),
            Self::Weekly => "weekly".into(),
            Self::Monthly => "monthly".into(),
            Self::Every(seconds) => format!("every {seconds}s"),
            Self::Cron(cron) => cron.as_str().to_owned(),
        }
    }

    /// The names [`Reset::as_string`] writes (the table's CHECK allows exactly these shapes).
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "never" => Self::Never,
            "manual" => Self::Manual,
            "daily" => Self::Daily,
            "weekly" => Self::Weekly,
            "monthly" => Self::Monthly,
            _ => {
                if let Some(cron) = Cron::parse(raw) {
                    return Some(Self::Cron(cron));
                }
                let digits = raw.strip_prefix("every ")?.strip_suffix('s')?;
                if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                match digits.parse::<u32>() {
                    Ok(n @ 1..=99_999_999) => Self::Every(n),
                    _ => return None,
                }
            }
        })
    }

    /// Whether the board has periods at all.
    pub fn resets(&self) -> bool {
        *self != Self::Never
    }
}

/// A board's cron schedule: five fields (minute, hour, day of month, month, day of week) with
/// lists, ranges, steps, month and weekday names, `L`, `W` and `#` (croner's syntax; a day of
/// month and a day of week both restricted fire on either, as Vixie cron). Seconds, years and
/// the `@daily` nicknames are refused: `@weekly` would start on Sunday where `weekly` starts
/// on Monday. The fire times are wall-clock times of the board's zone; PostgreSQL turns each
/// into an instant (`board/sql/period_schedule_extend.sql`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cron {
    /// The fields as sent, joined by single spaces.
    text: String,
    parsed: CronParsed,
}

/// croner's parsed pattern, compared by the text it came from (boxed: it is large, and a
/// definition carries it only on cron boards).
#[derive(Debug, Clone)]
struct CronParsed(Box<croner::Cron>);

impl PartialEq for CronParsed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for CronParsed {}
impl std::hash::Hash for CronParsed {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// How far ahead a cron schedule is looked for its next fire time: an expression that does not
/// fire within it (`0 0 30 2 *`) is refused.
const CRON_LOOKAHEAD_YEARS: i32 = 8;

impl Cron {
    /// A five-field expression that fires at least once in [`CRON_LOOKAHEAD_YEARS`]; None for
    /// anything else.
    pub fn parse(raw: &str) -> Option<Self> {
        let fields: Vec<&str> = raw.split_ascii_whitespace().collect();
        if fields.len() != 5 || fields.iter().any(|f| f.starts_with('@')) {
            return None;
        }
        let text = fields.join(" ");
        let parsed = croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Disallowed)
            .year(croner::parser::Year::Disallowed)
            .build()
            .parse(&text)
            .ok()?;
        let cron = Self {
            text,
            parsed: CronParsed(Box::new(parsed)),
        };
        let start = chrono::NaiveDate::from_ymd_opt(2000, 1, 1)?.and_hms_opt(0, 0, 0)?;
        // Asked of a fixed instant, so that the same text always parses the same way. What
        // does not fire within the lookahead is refused: never (`0 0 30 2 *`) or too rarely
        // for a leaderboard (`0 0 29 2 +MON`, every 28 years).
        cron.fire_times_after(start, 1).first()?;
        Some(cron)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Up to `count` fire times after `after` (exclusive), in wall-clock time, each within
    /// [`CRON_LOOKAHEAD_YEARS`] of the one before.
    pub fn fire_times_after(
        &self,
        after: chrono::NaiveDateTime,
        count: usize,
    ) -> Vec<chrono::NaiveDateTime> {
        let mut times = Vec::with_capacity(count.min(1_024));
        let mut from = after;
        while times.len() < count {
            let Ok(next) = self.parsed.0.find_next_occurrence(&from, false) else {
                break;
            };
            if next <= from
                || next - from > chrono::TimeDelta::days(366 * i64::from(CRON_LOOKAHEAD_YEARS))
            {
                break;
            }
            times.push(next);
            from = next;
        }
        times
    }
}

impl Serialize for Reset {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_string())
    }
}

/// One column of a board that declares columns (migration V14): a name, which end wins, and
/// the bounds of its values (inside ±(2^53 − 1)).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// 1 to 32 characters of a-z, 0-9 and `_`, starting with a letter; unique on the board.
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^[a-z][a-z0-9_]{0,31}$", example = "laps")
    )]
    pub name: String,
    /// `descending` (the greater value ranks first) or `ascending` (the smaller, a time).
    pub order: Sort,
    /// The smallest value a member may hold in this column (default -(2^53 − 1)).
    #[serde(default = "min_value")]
    pub min: i64,
    /// The greatest (default 2^53 − 1).
    #[serde(default = "max_value")]
    pub max: i64,
}

fn min_value() -> i64 {
    -MAX_ABS_SCORE
}
fn max_value() -> i64 {
    MAX_ABS_SCORE
}

/// Who may post scores to a board (issue 38). A command is judged by the policy of the board
/// it is sent to; the boards that board feeds take it as their source's (their links were
/// declared by an admin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum WritePolicy {
    /// Service tokens only (a game's servers): every board before issue 38.
    Server,
    /// Service tokens, and player tokens for their own user id.
    Player,
}

impl WritePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Player => "player",
        }
    }

    /// The names [`WritePolicy::as_str`] writes (the table's CHECK allows exactly these).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "server" => Some(Self::Server),
            "player" => Some(Self::Player),
            _ => None,
        }
    }
}

/// A board's declared definition, or the implicit one of an undeclared board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BoardDefinition {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub board: BoardId,
    pub display_name: String,
    pub operator: Operator,
    pub sort: Sort,
    pub tie_break: TieBreak,
    pub min_score: i64,
    pub max_score: i64,
    /// Bounds of one `delta`: add boards only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_delta: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delta: Option<i64>,
    /// When the board starts a new period: `never`, `manual`, `daily`, `weekly`, `monthly`,
    /// `every <n>s`, or a five-field cron expression.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "weekly"))]
    pub reset: Reset,
    /// The IANA time zone whose midnights start daily, weekly and monthly periods.
    pub time_zone: String,
    /// The board's columns, when it declares them (1 to 3; the first is the score's, and
    /// `sort`, `min_score` and `max_score` are its order and bounds); absent on a board of one
    /// column, its score.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Column>,
    /// The boards every command to this board also applies to (linked boards): each with the
    /// same columns, none of them feeding another board.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub feeds: Vec<BoardId>,
    /// Who may post scores: `server` (service tokens only, the default) or `player` (player
    /// tokens too, each for its own user id).
    pub write_policy: WritePolicy,
    /// Whether a player's score must carry an attempt, and the attempts' rule (absent: no).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<AttemptRule>,
    /// The rules past which a score is held for review (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRules>,
    /// 0 for an undeclared board; bumped by every change of a declared one.
    pub revision: i64,
    /// Whether the board is declared (a row in `board_definitions`).
    pub declared: bool,
}

/// The time zone of a definition that names none.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Longest display name, in characters (a CHECK in `board_definitions` too).
pub const MAX_DISPLAY_NAME_CHARS: usize = 128;

impl BoardDefinition {
    /// What a board without a definition is: today's behaviour, so existing clients and data
    /// keep working (add, descending, ties by user id, deltas within ±1000).
    pub fn implicit(board: BoardId) -> Self {
        Self {
            board,
            display_name: String::new(),
            operator: Operator::Add,
            sort: Sort::Descending,
            tie_break: TieBreak::UserId,
            min_score: -MAX_ABS_SCORE,
            max_score: MAX_ABS_SCORE,
            min_delta: Some(MIN_DELTA),
            max_delta: Some(MAX_DELTA),
            reset: Reset::Never,
            time_zone: DEFAULT_TIME_ZONE.into(),
            columns: Vec::new(),
            feeds: Vec::new(),
            write_policy: WritePolicy::Server,
            attempts: None,
            review: None,
            revision: 0,
            declared: false,
        }
    }

    pub fn order(&self) -> Order {
        let orders: Vec<Sort> = self.columns.iter().map(|c| c.order).collect();
        Order {
            sort: self.sort,
            tie_break: self.tie_break,
            columns: Columns::of(&orders).unwrap_or(Columns::ONE),
        }
    }

    /// How many columns a command carries: the declared ones, or the score alone.
    pub fn column_count(&self) -> usize {
        self.columns.len().max(1)
    }

    /// The bounds of column `index` (0: the score's).
    pub fn column_bounds(&self, index: usize) -> (i64, i64) {
        match self.columns.get(index) {
            Some(c) if index > 0 => (c.min, c.max),
            _ => (self.min_score, self.max_score),
        }
    }

    /// The name of column `index` as an answer names it (`score` on a board of one column).
    pub fn column_name(&self, index: usize) -> &str {
        self.columns.get(index).map_or("score", |c| c.name.as_str())
    }

    /// Which columns (names and orders) a board ranks by, as linked boards must share them:
    /// the declared ones, or the score's order alone.
    pub fn shape(&self) -> Vec<(Option<&str>, Sort)> {
        if self.columns.is_empty() {
            vec![(None, self.sort)]
        } else {
            self.columns
                .iter()
                .map(|c| (Some(c.name.as_str()), c.order))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_is_a_name_a_period_in_seconds_or_a_cron_expression_that_fires() {
        let cron = |raw: &str| match Reset::parse(raw) {
            Some(Reset::Cron(c)) => Some(c.as_str().to_owned()),
            _ => None,
        };
        assert_eq!(cron("0 0 * * MON").as_deref(), Some("0 0 * * MON"));
        // Spaces and tabs between fields come back as single spaces (the table's CHECK).
        assert_eq!(
            cron(" */15\t9-17  * * 1-5 ").as_deref(),
            Some("*/15 9-17 * * 1-5")
        );
        assert_eq!(cron("0 0 L * *").as_deref(), Some("0 0 L * *"));
        assert_eq!(Reset::parse("every 10s"), Some(Reset::Every(10)));
        assert_eq!(Reset::parse("weekly"), Some(Reset::Weekly));
        // Refused: never fires, seconds or years, nicknames, out of range, not cron at all.
        for bad in [
            "0 0 30 2 *",
            "0 0 0 * * MON",
            "0 0 1 1 * 2027",
            "@weekly",
            "@daily * * * *",
            "61 * * * *",
            "0 24 * * *",
            "* * * *",
            "every 0s",
            "yearly",
        ] {
            assert_eq!(Reset::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_cron_schedule_walks_its_wall_clock_fire_times() {
        let Some(Reset::Cron(cron)) = Reset::parse("30 2 * * SUN") else {
            panic!("a cron schedule");
        };
        let at =
            |d: &str| chrono::NaiveDateTime::parse_from_str(d, "%Y-%m-%d %H:%M").expect("a time");
        // Wall-clock times: 2:30 on the Sunday a European clock skips it is still a fire time
        // (PostgreSQL moves it forward when it becomes an instant).
        assert_eq!(
            cron.fire_times_after(at("2027-03-27 12:00"), 3),
            vec![
                at("2027-03-28 02:30"),
                at("2027-04-04 02:30"),
                at("2027-04-11 02:30")
            ]
        );
        // Exclusive of the start, and no more than asked.
        assert_eq!(
            cron.fire_times_after(at("2027-03-28 02:30"), 1),
            vec![at("2027-04-04 02:30")]
        );
    }

    #[test]
    fn an_undeclared_board_is_todays_board() {
        let d = BoardDefinition::implicit(BoardId::parse("weekly").expect("board"));
        assert_eq!(d.operator, Operator::Add);
        assert_eq!(d.order().tie_sign(), 0);
        assert_eq!((d.min_delta, d.max_delta), (Some(-1000), Some(1000)));
        assert!(!d.declared);
    }

    #[test]
    fn resets_round_trip_and_odd_spellings_are_refused() {
        for r in [
            Reset::Never,
            Reset::Manual,
            Reset::Daily,
            Reset::Weekly,
            Reset::Monthly,
            Reset::Every(1),
            Reset::Every(604_800),
            Reset::Every(99_999_999),
        ] {
            assert_eq!(Reset::parse(&r.as_string()), Some(r));
        }
        for bad in [
            "",
            "hourly",
            "every 0s",
            "every 05s",
            "every s",
            "every 5",
            "every -5s",
            "every 100000000s",
            "Every 5s",
            "every 5 s",
        ] {
            assert_eq!(Reset::parse(bad), None, "{bad:?}");
        }
    }
}
