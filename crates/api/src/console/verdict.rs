//! The reconciler's verdict on one member as the board page gives it, and the answer to "why
//! is this player's rank wrong?" in words. A verdict needs both sides: when Redis did not
//! answer, the verdict is unknown and says so; it is never worked out from an empty
//! observation, which would read as `missing`.

use ledgerboard_core::projection::Seal;
use ledgerboard_core::projection::classify::Classification;
use ledgerboard_core::projection::inspect::Observed;
use ledgerboard_core::telemetry::metrics::Label;

/// The verdict on a member.
#[derive(Debug, Clone, Copy)]
pub enum Verdict {
    /// The reconciler's classification of the two sides.
    Class(Classification),
    /// No visible source row and nothing in Redis: the entry went while the page was read,
    /// or never was.
    Nothing,
    /// A side could not be read: why (which store did not answer).
    Unknown(&'static str),
}

impl Verdict {
    /// The verdict's CSS class: its name, `unknown`, or `nothing` (named by the caller).
    pub fn class(self, nothing: &'static str) -> &'static str {
        match self {
            Verdict::Class(c) => c.as_str(),
            Verdict::Nothing => nothing,
            Verdict::Unknown(_) => "unknown",
        }
    }

    /// The verdict in words: its name, or `unknown: <which store did not answer>`.
    pub fn text(self, nothing: &'static str) -> String {
        match self {
            Verdict::Unknown(why) => super::unanswered::unknown(why),
            other => other.class(nothing).to_owned(),
        }
    }
}

/// The answer to "why is this player's rank wrong?", from the verdict. `seen` is what Redis
/// holds (None: Redis did not say), `seal` the board's seal as the member read found it.
pub fn explain(
    verdict: Verdict,
    seen: Option<&Observed>,
    seal: Option<Seal>,
    banned: bool,
    visible: bool,
) -> String {
    let seal_note = match seal {
        Some(Seal::Whole) | None => "",
        Some(_) => {
            " The board's projection is not whole, so bounded reads answer from PostgreSQL and a rebuild has been asked for."
        }
    };
    let stored = seen.and_then(|s| s.version.as_deref()).unwrap_or("nothing");
    let text = match verdict {
        Verdict::Unknown(why) => format!(
            "{why}: what the projection holds for this player, and so the reconciler's verdict, is unknown. PostgreSQL's standing is authoritative; look again once it answers."
        ),
        Verdict::Class(Classification::Current) => {
            "Redis holds exactly PostgreSQL's score, version, tie and metadata: readers of the projection see the right rank.".to_owned()
        }
        Verdict::Class(Classification::Lagging) => {
            "The newest version is still pending in the outbox: the projector has yet to write it. Normal progress; reads that allow no lag answer from PostgreSQL meanwhile.".to_owned()
        }
        Verdict::Class(Classification::Stale) => {
            "Redis holds an older version and nothing is pending for the newer one: its outbox row was parked (see Parked rows) or lost. Requeue the row, or rebuild the board.".to_owned()
        }
        Verdict::Class(Classification::Missing) => {
            "Redis lacks this member (or half of it): evicted or deleted. The next reconciler pass repairs it; a rebuild does it now.".to_owned()
        }
        Verdict::Class(Classification::Corrupt) => format!(
            "Redis holds the same version with another score, tie or metadata (stored: {stored}): edited by hand. Readers of the projection see a wrong rank; rebuild the board (or let the next pass repair it)."
        ),
        Verdict::Class(Classification::Ahead) => {
            "Redis holds a newer version than PostgreSQL: a projection of another database, or a restored database. PostgreSQL is authoritative; rebuild the board.".to_owned()
        }
        Verdict::Class(Classification::Orphan) if banned => {
            "The user is banned and still in Redis: the hiding row has not been projected yet, or was parked.".to_owned()
        }
        Verdict::Class(Classification::Orphan) => {
            "Redis holds this member and PostgreSQL has no visible entry: removed, erased or never written. The next pass removes it; a rebuild does it now.".to_owned()
        }
        Verdict::Nothing if banned => {
            "The user is banned: hidden on every board, in PostgreSQL and in Redis.".to_owned()
        }
        Verdict::Nothing if visible => {
            "The entry changed while the page was read; look again.".to_owned()
        }
        Verdict::Nothing => "No entry on this board, in PostgreSQL or in Redis.".to_owned(),
    };
    format!("{text}{seal_note}")
}
