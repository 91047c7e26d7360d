//! The chaos run's moderation mix (issue 22): while the clients post score commands, one
//! moderation loop sends bans, unbans and removals through the api's `POST /v1/moderation`
//! with the run's admin token, repeats some action ids (200, `duplicate: true`, the first
//! outcome) and reuses some with another payload (409). The check then holds every moderated
//! member to the contract exactly.
//!
//! # The order the check relies on
//!
//! Client send times and the database clock (`score_events.created_at` against
//! `moderation_actions.at`) do not order a command and an action that race: `now()` is the
//! transaction's start, not its commit. The check orders them by what the database decided:
//!
//! - Moderation actions among themselves: ONE loop sends them, one at a time, and the next
//!   only after the api answered the last one (a lost answer is retried with the same id until
//!   an answer says what happened). An action commits before its answer, so the loop's order
//!   is the commit order of the actions, exactly: the user's last ban or unban in it is the
//!   state at the end, and a removal's place among the bans and unbans is known.
//! - A score command against a ban or unban of its user: both write the member's row, so the
//!   row's version orders them (each takes the row lock and adds one), and the ban's table lock
//!   (`moderation_lock.sql`) makes the hidden flag exact: a command after the ban writes hidden.
//!   The check needs no version of a ban: a ban or unban changes no score, only adds one to the
//!   version of each entry its answer lists (`result.boards`).
//! - A score command against a removal of its member: the removal writes the entry's version
//!   plus one into `removed_entries`, and takes the table lock a ban takes, so a command either
//!   committed before the removal began (the lock waits for it: a command is one statement in
//!   one implicit transaction) or took its snapshot after the removal committed (it waited on
//!   the lock), read `removed_entries` and continued from that version. So the commands the
//!   member's entry is made of are exactly those whose recorded `score_events.version` is above
//!   the version `removed_entries` holds (the last removal's; an earlier one's is lower still),
//!   and no command can have that version itself. Before the removal took the lock this split
//!   was not exact: a command whose snapshot predated the removal's commit, and whose insert
//!   waited on the deleted row, started again from version 1 (`crates/core/tests/
//!   moderation_race.rs`). To keep that race covered, half of the removals pick a member a
//!   client has a command in flight for at that moment.
//!
//! # Periods
//!
//! A ban or an unban reaches the user's entries on every board, each period of a board that
//! resets included: its answer lists them as stored (`chaos-d~<period id>`), and each bumps the
//! version of the period's entry as of any board. A removal names a board, and the api takes no
//! period id there yet, so a removal naming a board that resets finds nothing to take (its
//! entries live in its periods): the check holds it to that.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use super::specs::{of_the_run, spec};

/// A moderation action of the mix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Act {
    Ban(String),
    Unban(String),
    Remove(&'static str, String),
}

impl Act {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Act::Ban(_) => "ban",
            Act::Unban(_) => "unban",
            Act::Remove(..) => "remove",
        }
    }

    pub(super) fn user(&self) -> &str {
        match self {
            Act::Ban(u) | Act::Unban(u) | Act::Remove(_, u) => u,
        }
    }

    pub(super) fn body(&self, id: Uuid, reason: &str) -> String {
        let mut body = json!({
            "action_id": id.to_string(),
            "action": self.name(),
            "user_id": self.user(),
            "reason": reason,
        });
        if let Act::Remove(board, _) = self {
            body["board"] = json!(board);
        }
        body.to_string()
    }
}

/// One action the api applied, as the ledger records it: what was asked, and what the api
/// answered and when.
#[derive(Debug, Clone)]
pub(super) struct Moderated {
    pub(super) id: Uuid,
    pub(super) act: Act,
    pub(super) reason: String,
    /// 201, or 200 after an attempt whose answer was lost.
    pub(super) status: u16,
    /// When the database applied it (the answer's `at`).
    pub(super) at: String,
    /// When the loop had the answer, from the start of the load.
    pub(super) answered: Duration,
    /// The answer's `result` (`entries`, `boards`, `changed`, `was_hidden`…).
    pub(super) result: Value,
}

impl Moderated {
    fn entries(&self) -> i64 {
        self.result["entries"].as_i64().unwrap_or(-1)
    }

    fn boards(&self) -> Vec<String> {
        self.result["boards"]
            .as_array()
            .map(|b| {
                b.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn to_json(&self) -> Value {
        let board = match &self.act {
            Act::Remove(board, _) => Some(*board),
            _ => None,
        };
        json!({
            "action_id": self.id.to_string(),
            "action": self.act.name(),
            "board": board,
            "user_id": self.act.user(),
            "reason": self.reason,
            "status": self.status,
            "at": self.at,
            "answered_ms": self.answered.as_millis() as u64,
            "result": self.result,
        })
    }
}

/// The moderation half of the ledger.
#[derive(Default)]
pub(super) struct ModerationLedger {
    /// The actions applied, in the loop's order: the database's commit order (see above).
    pub(super) applied: Vec<Moderated>,
    /// Users whose last applied ban or unban is a ban, as the loop goes.
    pub(super) banned: BTreeSet<String>,
    pub(super) sent: u64,
    pub(super) retries: u64,
    pub(super) duplicates_confirmed: u64,
    pub(super) conflicts_refused: u64,
    pub(super) unresolved: u64,
    /// Removals applied to a member a client had a command in flight for when it was sent.
    pub(super) racing_removals: u64,
}

impl ModerationLedger {
    pub(super) fn count(&self, action: &str) -> usize {
        self.applied
            .iter()
            .filter(|m| m.act.name() == action)
            .count()
    }

    pub(super) fn entries_removed(&self) -> i64 {
        self.applied
            .iter()
            .filter(|m| matches!(m.act, Act::Remove(..)))
            .map(|m| m.entries().max(0))
            .sum()
    }
}

/// What the applied actions, in the loop's order, make of the members.
#[derive(Default)]
pub(super) struct Expectation {
    /// Users whose last applied ban or unban is a ban.
    pub(super) banned: BTreeSet<String>,
    /// Members (board, user) a removal took an entry from.
    pub(super) removed: BTreeSet<(String, String)>,
    /// Per member, how many bans and unbans hid or showed its entry after the last removal
    /// that took one (each added one to its version).
    pub(super) bumps: HashMap<(String, String), i64>,
}

/// Folds the applied actions in the loop's order, checking each answer against the state the
/// ones before it left: a ban changes something exactly when the user is not banned, an unban
/// exactly when it is, a removal takes at most one entry, which is hidden exactly when the
/// user is banned.
pub(super) fn expectation(applied: &[Moderated], problems: &mut Vec<String>) -> Expectation {
    let mut out = Expectation::default();
    for m in applied {
        let user = m.act.user().to_owned();
        match &m.act {
            Act::Ban(_) | Act::Unban(_) => {
                let ban = matches!(m.act, Act::Ban(_));
                let changes = ban != out.banned.contains(&user);
                let boards = m.boards();
                if m.result["changed"].as_bool() != Some(changes)
                    || (!changes && !boards.is_empty())
                    || m.entries() != boards.len() as i64
                {
                    problems.push(format!(
                        "moderation {}: answered {}, but the user was {}banned before it",
                        m.id,
                        m.result,
                        if out.banned.contains(&user) {
                            ""
                        } else {
                            "not "
                        }
                    ));
                }
                if ban {
                    out.banned.insert(user.clone());
                } else {
                    out.banned.remove(&user);
                }
                // A ban or unban lists every entry it hid or showed: on a board that resets,
                // one per period the user has an entry in (each is a board of its own).
                for board in boards {
                    if !of_the_run(&board) {
                        problems.push(format!(
                            "moderation {}: a board {board} not of the run",
                            m.id
                        ));
                    }
                    *out.bumps.entry((board, user.clone())).or_default() += 1;
                }
            }
            Act::Remove(board, _) => {
                let member = ((*board).to_owned(), user.clone());
                match m.entries() {
                    0 => {}
                    // A removal names a board, and a board that resets holds its entries in its
                    // periods, which the api cannot name yet (api.md, Moderation: "removal from
                    // a period" is not done): it takes nothing. One that took an entry means
                    // that changed, and the check must learn which period it took it from.
                    _ if spec(board).period_secs.is_some() => problems.push(format!(
                        "moderation {}: a removal from {board}, a board that resets, answered {}",
                        m.id, m.result
                    )),
                    1 => {
                        let hidden = out.banned.contains(&user);
                        if m.result["was_hidden"].as_bool() != Some(hidden) {
                            problems.push(format!(
                                "moderation {}: removed an entry with was_hidden {}, the user {}banned",
                                m.id,
                                m.result["was_hidden"],
                                if hidden { "" } else { "not " }
                            ));
                        }
                        out.bumps.insert(member.clone(), 0);
                        out.removed.insert(member);
                    }
                    _ => problems.push(format!(
                        "moderation {}: a removal answered {}",
                        m.id, m.result
                    )),
                }
            }
        }
    }
    out
}

/// The versions PostgreSQL keeps for removed entries, and the banned users, compared with the
/// expectation; returns the versions, per member.
pub(super) fn compare_state(
    expectation: &Expectation,
    removed_entries: &BTreeMap<(String, String), i64>,
    banned_users: &BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    let recorded: BTreeSet<(String, String)> = removed_entries.keys().cloned().collect();
    for member in expectation.removed.symmetric_difference(&recorded) {
        problems.push(format!(
            "{}/{}: removed_entries {} a row, but the applied removals {} an entry",
            member.0,
            member.1,
            if recorded.contains(member) {
                "holds"
            } else {
                "has no"
            },
            if expectation.removed.contains(member) {
                "took"
            } else {
                "never took"
            }
        ));
    }
    for user in expectation.banned.symmetric_difference(banned_users) {
        problems.push(format!(
            "{user}: banned_users {}, but the last applied ban or unban is {}",
            if banned_users.contains(user) {
                "holds the user"
            } else {
                "does not hold the user"
            },
            if expectation.banned.contains(user) {
                "a ban"
            } else {
                "an unban (or none)"
            }
        ));
    }
}
