//! The run's report: the figures and the faults injected as a markdown table, what the run
//! checked in prose, and the first mismatches; and the daemons' logs kept beside it when there
//! are any.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ledgerboard_core::model::BoardId;
use ledgerboard_harness::Daemon;

use super::check::Checked;
use super::compare::{AfterModeration, BeforeRepair};
use super::drain::Drained;
use super::faults::{Fault, Probes, corruptions};
use super::ledger::Ledger;
use super::metrics::{FinalPass, drift};
use super::moderation;
use super::seasons::SeasonChecks;
use super::specs::SPECS;

/// Everything the report states, as the phases of the run left it.
pub(super) struct Figures<'a> {
    pub(super) seed: u64,
    pub(super) duration: Duration,
    pub(super) clients: usize,
    pub(super) projectors: usize,
    /// When the run began (the report states how long it took, drain and checks included).
    pub(super) started: Instant,
    pub(super) ledger: &'a Ledger,
    pub(super) probes: &'a Probes,
    pub(super) seasons: &'a SeasonChecks,
    pub(super) cup: &'a super::cup::CupChecks,
    pub(super) injected: &'a BTreeMap<Fault, u64>,
    pub(super) drained: &'a Drained,
    /// The event log checked after the drain, before any repair.
    pub(super) event_log: &'a super::event_log::EventLog,
    /// The board deleted after the drain.
    pub(super) lost: &'a BoardId,
    pub(super) before: &'a BeforeRepair,
    /// Moderation actions applied after the faults, and the comparison that followed them.
    pub(super) after_applied: usize,
    pub(super) after: &'a AfterModeration,
    pub(super) pass: &'a FinalPass,
    /// What the final check covered, board by board.
    pub(super) checked: &'a Checked,
    pub(super) mismatches: &'a [String],
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1000.0)
}

fn max_ms(ds: Vec<Duration>) -> String {
    ds.into_iter().max().map_or_else(|| "–".to_owned(), ms)
}

/// The report as markdown.
pub(super) fn markdown(f: &Figures) -> String {
    let mut md = String::from("# ledgerboard chaos run\n\n");
    md.push_str(&format!(
        "Seed {}, {} s of load and faults ({:.0} s with the drain and checks), {} clients, {} projectors.\n\n",
        f.seed,
        f.duration.as_secs(),
        f.started.elapsed().as_secs_f64(),
        f.clients,
        f.projectors
    ));
    md.push_str(
        "Boards: chaos-a undeclared add (deltas); chaos-b declared best, ascending, earliest \
         (scores 0 to 199); chaos-c declared latest, descending, earliest (scores 0 to 199); \
         chaos-d declared best, descending, earliest, reset every 2 s (scores 0 to 199), each \
         period a board of its own (`chaos-d~<period id>`), compared as one; chaos-e declared \
         best over three columns (laps descending, time ascending, pits descending; values 0 to \
         4 in each), earliest; chaos-f declared best over two columns (laps descending, time \
         ascending; values 0 to 19), earliest, feeding chaos-g (latest, earliest) and chaos-h \
         (best, ties by user id, at most 18 laps, so a command of 19 laps to chaos-f is refused \
         whole), both also posted to directly.\n\n",
    );
    md.push_str("| figure | value |\n|---|---|\n");
    let rows = [
        load_rows(f),
        board_rows(f),
        moderation_rows(f),
        probe_rows(f),
        event_log_rows(f),
        comparison_rows(f),
        period_rows(f),
        cup_rows(f),
        pass_rows(f),
    ];
    for (name, value) in rows.into_iter().flatten() {
        md.push_str(&format!("| {name} | {value} |\n"));
    }
    md.push_str("\n| fault | injected |\n|---|---|\n");
    for (fault, n) in f.injected {
        md.push_str(&format!("| {} | {n} |\n", fault.describe()));
    }
    md.push_str(CHECKED);
    if !f.mismatches.is_empty() {
        md.push_str("\n## Mismatches (first 50)\n\n");
        for m in f.mismatches.iter().take(50) {
            md.push_str(&format!("- {m}\n"));
        }
    }
    md
}

/// The clients' figures.
fn load_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures {
        ledger, duration, ..
    } = f;
    let load_secs = duration.as_secs_f64();
    vec![
        ("requests sent", ledger.sent.to_string()),
        (
            "commands accepted (each checked once in PostgreSQL)",
            ledger.accepted.len().to_string(),
        ),
        (
            "commands/s accepted during the faults",
            format!("{:.0}", ledger.accepted.len() as f64 / load_secs.max(0.001)),
        ),
        (
            "duplicates answered 200 with the first outcome",
            ledger.duplicates_confirmed.to_string(),
        ),
        (
            "conflicting reuses refused 409",
            ledger.conflicts_refused.to_string(),
        ),
        (
            "players' scores with an attempt (attempts started)",
            format!(
                "{} ({})",
                ledger.players.scores_sent, ledger.players.attempts_started
            ),
        ),
        (
            "forged, expired, replayed or foreign players' requests refused",
            ledger.players.attacks_refused.to_string(),
        ),
        (
            "retries after an answer was lost (5xx, timeout, reset)",
            ledger.retries.to_string(),
        ),
        (
            "commands left unresolved",
            ledger.unresolved.len().to_string(),
        ),
    ]
}

/// Per board: the commands accepted on it, and what the final check held it to.
fn board_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures {
        ledger, checked, ..
    } = f;
    let per_board = |board: &str| {
        let sent = |m: &std::collections::HashMap<uuid::Uuid, super::ledger::Command>| {
            m.values().filter(|c| c.board == board).count()
        };
        (sent(&ledger.accepted), sent(&ledger.refused))
    };
    let accepted = SPECS
        .iter()
        .map(|s| {
            let (accepted, refused) = per_board(s.name);
            let refused = if s.feeds.is_empty() && refused == 0 {
                String::new()
            } else {
                format!(" ({refused} refused)")
            };
            format!("{} {accepted}{refused}", s.name)
        })
        .collect::<Vec<_>>()
        .join(", ");
    // Periods of a board that resets are summed under it.
    let mut held: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for (board, (members, commands)) in &checked.boards {
        let base = board.split('~').next().unwrap_or(board).to_owned();
        let h = held.entry(base).or_default();
        *h = (h.0 + 1, h.1 + members, h.2 + commands);
    }
    let held = held
        .iter()
        .map(|(board, (ids, members, commands))| {
            let periods = if *ids > 1 {
                format!(" in {ids} periods")
            } else {
                String::new()
            };
            format!("{board} {members}/{commands}{periods}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        (
            "commands accepted per board sent to (refused: past a bound of a board of its set, nothing written)",
            accepted,
        ),
        (
            "final check per board: members / commands (direct and fed) held to its rule",
            held,
        ),
        (
            "final check: events fed by a linked command / refused commands with no event on any board",
            format!("{} / {}", checked.fed_events, checked.refused),
        ),
    ]
}

/// The moderation loop's figures.
fn moderation_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures { ledger, .. } = f;
    let banned_at_end = moderation::expectation(&ledger.moderation.applied, &mut Vec::new())
        .banned
        .len();
    vec![
        (
            "moderation: bans applied",
            ledger.moderation.count("ban").to_string(),
        ),
        (
            "moderation: unbans applied",
            ledger.moderation.count("unban").to_string(),
        ),
        (
            "moderation: removals applied",
            ledger.moderation.count("remove").to_string(),
        ),
        (
            "moderation: removals sent while a command of the member was in flight",
            ledger.moderation.racing_removals.to_string(),
        ),
        (
            "moderation: entries removed",
            ledger.moderation.entries_removed().to_string(),
        ),
        (
            "moderation: users banned at the end",
            banned_at_end.to_string(),
        ),
        (
            "moderation: repeats answered 200 with the first outcome",
            ledger.moderation.duplicates_confirmed.to_string(),
        ),
        (
            "moderation: id reuses refused 409",
            ledger.moderation.conflicts_refused.to_string(),
        ),
        (
            "moderation: retries after an answer was lost / left unresolved",
            format!(
                "{} / {}",
                ledger.moderation.retries, ledger.moderation.unresolved
            ),
        ),
    ]
}

/// What the probes around the Redis restarts and the backlogs timed.
fn probe_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures { probes, .. } = f;
    vec![
        (
            "Redis restarted empty: first honest bounded read, ms (max)",
            max_ms(probes.restarts.iter().map(|r| r.0).collect()),
        ),
        (
            "Redis restarted empty: projection whole again, ms (max)",
            max_ms(probes.restarts.iter().filter_map(|r| r.1).collect()),
        ),
        (
            "backlog: rows pending when the projectors restarted (max)",
            probes
                .backlogs
                .iter()
                .map(|b| b.0)
                .max()
                .map_or_else(|| "–".to_owned(), |n| n.to_string()),
        ),
        (
            "backlog: lag_ms a bounded read stated then (min)",
            probes
                .backlogs
                .iter()
                .map(|b| b.1)
                .min()
                .map_or_else(|| "–".to_owned(), |n| n.to_string()),
        ),
        (
            "backlog: drained below 100 rows, ms (max)",
            max_ms(probes.backlogs.iter().filter_map(|b| b.2).collect()),
        ),
    ]
}

/// The comparisons before any pass, and after the moderation that followed the faults.
/// The event log's figures (`event_log.rs`).
fn event_log_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let e = f.event_log;
    vec![
        (
            "before repair: recorded commands with exactly one score.accepted event",
            format!("{} of {}", e.logged_once, e.recorded),
        ),
        (
            "before repair: accepted commands with exactly one score.accepted event",
            format!("{} of {}", e.accepted_once, e.accepted),
        ),
    ]
}

fn comparison_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures {
        pass,
        lost,
        before,
        after_applied,
        after,
        ..
    } = f;
    let (passes_before, rebuilds, after_equal) = (pass.passes_before, pass.rebuilds, after.equal);
    vec![
        (
            "reconciler passes during the load and before the comparison",
            format!("{passes_before:.0}"),
        ),
        (
            "reconciler rebuilds served (requested, outcome done)",
            format!("{rebuilds:.0}"),
        ),
        (
            "board deleted after the drain (so one is not whole)",
            lost.to_string(),
        ),
        (
            "before repair: boards compared, whole / not whole / no visible entry (never sealed)",
            format!(
                "{}: {} / {} / {}",
                before.whole + before.not_whole + before.empty,
                before.whole,
                before.not_whole,
                before.empty
            ),
        ),
        (
            "before repair: whole boards' differing members, all at corrupted members",
            before.corrupted_differences.to_string(),
        ),
        (
            "before repair: not whole, read from PostgreSQL / rebuilt equal",
            format!("{} / {}", before.read_from_database, before.rebuilt_equal),
        ),
        (
            "before repair: slowest rebuild after the read, ms",
            before.rebuilt_max.map_or_else(|| "–".to_owned(), ms),
        ),
        (
            "after the faults: moderation actions applied / boards whole and equal after their drain",
            format!("{after_applied} / {after_equal}"),
        ),
    ]
}

/// The checks of the league with cohorts.
fn cup_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let c = f.cup;
    vec![
        (
            "league: entries (run, player) / scores accepted / cohort boards",
            format!("{} / {} / {}", c.entries, c.accepted, c.cohorts),
        ),
        (
            "league: cohorts whole and equal to PostgreSQL before any pass / rebuilt first",
            format!("{} / {}", c.whole_equal, c.rebuilt),
        ),
        (
            "league: runs closed and verified (digests chained run to run)",
            format!("{} ({})", c.runs_closed, c.verified),
        ),
    ]
}

/// The checks of the periods.
fn period_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures { seasons, .. } = f;
    let or_dash = |n: Option<&usize>| n.map_or_else(|| "–".to_owned(), usize::to_string);
    let named_read = |which: &str| {
        seasons
            .named_reads
            .iter()
            .find(|r| r.0 == which)
            .map_or_else(|| "–".to_owned(), |r| format!("{} ({} entries)", r.1, r.2))
    };
    vec![
        (
            "periods: chaos-d periods with entries / accepted commands per period, min / max",
            format!(
                "{} / {} / {}",
                seasons.commands.len(),
                or_dash(seasons.commands.values().min()),
                or_dash(seasons.commands.values().max())
            ),
        ),
        (
            "periods: accepted commands in flight across a boundary (each in the period its answer named, open while it was in flight)",
            seasons.across_boundary.to_string(),
        ),
        (
            "periods: after the drain, period=current / period=previous read (strong) named",
            format!("{} / {}", named_read("current"), named_read("previous")),
        ),
        (
            "periods: closed by the final pass / after it (rows held at a corrupted member)",
            format!("{} / {}", seasons.closed_by_pass, seasons.closed_after),
        ),
        (
            "periods: closes verified (holds) / frozen standings equal to the period's ranking",
            format!("{} / {}", seasons.verified, seasons.standings_equal),
        ),
        (
            "periods: period=<id> top reads equal to the period's ranking",
            seasons.id_reads_equal.to_string(),
        ),
    ]
}

/// The final pass, the drain, and the verdict.
fn pass_rows(f: &Figures) -> Vec<(&'static str, String)> {
    let Figures {
        pass,
        injected,
        drained,
        mismatches,
        ..
    } = f;
    let totals = &pass.totals;
    let (repairs, corruptions) = (pass.repairs(), corruptions(injected));
    vec![
        ("final pass: rows checked", totals["checked"].to_string()),
        (
            "final pass: drift found (missing+stale+ahead+corrupt+orphan)",
            drift(totals).to_string(),
        ),
        ("final pass: ahead", totals["ahead"].to_string()),
        (
            "final pass: repaired / removed",
            format!("{} / {}", totals["repaired"], totals["removed"]),
        ),
        (
            "final pass: repairs / corruptions injected",
            format!("{repairs} / {corruptions}"),
        ),
        (
            "outbox after the drain: members with rows pending elsewhere / at corrupted members (held for the repair) / parked rows",
            format!(
                "{} / {} / {}",
                drained.elsewhere.len(),
                drained.held_at_corrupted,
                drained.parked
            ),
        ),
        ("**mismatches**", mismatches.len().to_string()),
    ]
}

/// What the run checked, after the tables.
const CHECKED: &str = "\nDuring the load one moderation loop bans, unbans and removes entries through \
         `POST /v1/moderation` (one action at a time, so its order is the database's commit \
         order; half the removals race a command of the member in flight), repeats \
         action ids (200, the first outcome) and reuses them with another reason (409); each \
         action applied, with the api's answer and when it came, is in `moderation.json` beside \
         this report.\n\n\
         Before any reconciliation pass (none ran during the load), after the drain: every \
         command recorded in `score_events` (each accepted one, and each board it fed) has \
         exactly one `score.accepted` in the event log or its queue, on its board, for its user, \
         at its version, no such event names a command not recorded, and every command the api \
         accepted has exactly one; every whole \
         board equals `user_scores`' visible entries (score, every other column, column count, \
         version and tie) except at members chaos corrupted; every \
         board not whole is read through the api from PostgreSQL with PostgreSQL's visible \
         entries, then rebuilt by the requested rebuild and equal. Then, every board whole, a last \
         ban, removal and unban (none at a corrupted member), drained, and every board whole and \
         equal to the visible entries again: no rebuild follows them to mend a projector that \
         mishandles one. Then one pass: nothing ahead, \
         no more repairs than corruptions injected. Checked after it: every accepted command has \
         exactly one event with its board, user and value and no other event exists; every \
         member is what its board's rule makes of the accepted commands recorded above the \
         version its last removal left in `removed_entries` (chaos-a, add: the sum of the deltas; \
         chaos-b, best ascending: the lowest submission, each event recorded improving beating \
         the one before; chaos-c, latest: the submission of the highest recorded version; \
         chaos-e, chaos-f and chaos-h, best: the best whole tuple in the board's order, never a \
         mix of two submissions; chaos-g, latest: the whole tuple of the highest recorded \
         version; every column compared; the \
         version is the removal's, plus one per command (improving one on a best board), plus one per \
         ban or unban whose answer lists the entry since), and a member removed with no command \
         after has no row; `banned_users` holds exactly the users whose last applied ban or \
         unban is a ban, their entries are hidden with their scores intact and every other entry \
         is visible; `removed_entries` holds exactly the members a removal took an entry from; \
         each answer agrees with the state the actions before it left (a ban changes something \
         only for a user not banned, a removed entry was hidden only if its user was banned); \
         ties are 0 on chaos-a and chaos-h and on the earliest boards unique and of the board's \
         sign, and each row holds its board's column count and 0 past its columns; every \
         board's sorted set and version hash equal `user_scores`' visible entries (score, every \
         other column, column count, version and tie), so no banned user and no removed entry is \
         in Redis, and a bounded top read lists them in the whole tuple's order, with their \
         `scores`, and no banned user; after the drain no outbox row is parked, and \
         none is pending except at members chaos corrupted, whose rows the projection script \
         refuses until the repair (fail closed). The backlog fault is this run's scale; a \
         backlog of 1,000,000 rows is tested in `crates/api/tests/projection_truth.rs`.\n\n\
         Periods: every check above runs on each period of chaos-d with an entry, as a board \
         of its own (`chaos-d~<period id>`), with the corruptions aimed at the current period \
         of chaos-d when it is picked. Each accepted command's event is in the period its \
         answer named (a duplicate names the first answer's), that period was open by the \
         database clock while the command was in flight, and each period's entries are what \
         the commands that named it make of it. After the drain a strong `period=current` and \
         `period=previous` read named the database's periods and held their entries. The pass \
         started once every period with entries had ended; it closed each of them and nothing \
         else (a period whose rows were held at a corrupted member is closed after the drain \
         instead, as `lbctl period close` would); for each close `periods::verify` holds (a ban \
         and an unban re-version rows without an event; verify allows for them), the frozen \
         standings read through the api \
         are the period's visible entries in its order, and a `period=<id>` top read gives \
         them too. A removal naming chaos-d takes nothing (its entries are in its periods, \
         which the api cannot name yet).\n\n\
         Linked boards: a command to chaos-f applies to chaos-g and chaos-h too, all or nothing. \
         Each accepted one has its event on chaos-f and one on each fed board (the id \
         `fed_event(id, board)`, `source_event` its id), the same command, which counts under \
         that board's own rule beside the commands posted to it directly; its answer lists both \
         fed boards in declared order, each with the version and `improved` their event \
         recorded; a duplicate answers the first outcome of every board, a conflicting reuse \
         (another time) is refused 409; a command of 19 laps is refused 422 naming chaos-h and \
         has no event on any board, nor has one that was never accepted; and every fed event \
         belongs to an accepted command of chaos-f.\n";

/// A run with mismatches keeps every daemon's log beside its report, and prints the last lines
/// of each to stderr, which the contract test shows when it fails: a CI failure that cannot be
/// repeated at will must still say what the daemons did.
pub(super) fn keep_logs(out: &std::path::Path, daemons: &[(String, &Daemon)]) {
    const TAIL: usize = 25;
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("could not create {}: {e}", out.display());
    }
    for (name, daemon) in daemons {
        let log = match daemon.stderr() {
            Ok(log) => log,
            Err(e) => {
                eprintln!("{name}: log unreadable: {e}");
                continue;
            }
        };
        let path = out.join(format!("{name}.log"));
        if let Err(e) = std::fs::write(&path, &log) {
            eprintln!("could not write {}: {e}", path.display());
        }
        let lines: Vec<&str> = log.lines().collect();
        eprintln!(
            "--- {name}: last {TAIL} of {} log lines ({})",
            lines.len(),
            path.display()
        );
        for line in &lines[lines.len().saturating_sub(TAIL)..] {
            eprintln!("{}", line.chars().take(300).collect::<String>());
        }
    }
}
