//! The add rule (`board/sql/add.sql`): each command adds its delta (from [`MIN_DELTA`] to [`MAX_DELTA`]) to
//! the member's score, and each accepted command is one more version. A new member starts at
//! the delta, version 1. `user_scores` bounds the score to ±[`crate::domain::MAX_ABS_SCORE`]
//! (a CHECK; a command past it is refused as `score_out_of_range`).
//!
//! [`MIN_DELTA`]: crate::domain::MIN_DELTA
//! [`MAX_DELTA`]: crate::domain::MAX_DELTA

use super::Tally;

/// The tally after one more command with `delta`: the sum, and one more version.
pub fn fold(prior: Option<Tally>, delta: i64) -> Tally {
    let prior = prior.unwrap_or_default();
    Tally {
        score: prior.score + delta,
        version: prior.version + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_member_starts_at_its_delta_version_1() {
        assert_eq!(
            fold(None, -5),
            Tally {
                score: -5,
                version: 1
            }
        );
    }

    #[test]
    fn each_command_adds_its_delta_and_one_version() {
        let prior = Tally {
            score: 10,
            version: 1,
        };
        assert_eq!(
            fold(Some(prior), 7),
            Tally {
                score: 17,
                version: 2
            }
        );
    }
}
