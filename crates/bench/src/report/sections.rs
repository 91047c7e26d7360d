//! One table per section of the run: commit-to-visible, the board kinds, the reads players ask
//! for, the periods, the cost of growth.

use crate::growth::GrowthFigures;
use crate::kinds::KindsFigures;
use crate::latency::LatencyFigures;
use crate::periods::PeriodsFigures;
use crate::ranks::RanksFigures;

use super::row;

pub(super) fn latency_table(l: &LatencyFigures) -> String {
    let mut out = format!(
        "## Commit-to-visible under steady load\n\n\
             Commands through the API at a fraction of the command capacity measured above \
             ({:.0} /s), {} s per level after {} s of unmeasured warm-up, from an empty outbox, {} projector replicas; every {}th \
             command watched (its version read from Redis every millisecond, so ±1 ms). \
             Plot: `{}`.\n\n\
             | load | offered | achieved | sampled | p50 | p95 | p99 | max | target |\n\
             |---|---|---|---|---|---|---|---|---|\n",
        l.capacity_per_s,
        l.seconds,
        l.warmup_seconds,
        l.replicas,
        l.sample_every,
        std::path::Path::new(&l.plot)
            .file_name()
            .map_or(l.plot.clone(), |f| f.to_string_lossy().into_owned())
    );
    for v in &l.levels {
        out.push_str(&row(&[
            format!("{}%", v.percent),
            format!("{:.0} /s", v.offered_per_s),
            format!("{:.0} /s", v.achieved_per_s),
            v.samples.to_string(),
            format!("{:.1} ms", v.p50_ms),
            format!("{:.1} ms", v.p95_ms),
            format!("{:.1} ms", v.p99_ms),
            format!("{:.1} ms", v.max_ms),
            match v.percent {
                50 => "p99 < 20 ms",
                75 => "achieved = offered",
                _ => "",
            }
            .into(),
        ]));
    }
    out.push('\n');
    out
}

/// A reset under load, and the close of a large period.
pub(super) fn periods_table(p: &PeriodsFigures) -> String {
    let run = |r: &crate::periods::Run| {
        format!(
            "{:.0} /s, p50 {:.2} ms, p99 {:.2} ms, longest {:.1} ms",
            r.per_s, r.p50_ms, r.p99_ms, r.max_ms
        )
    };
    format!(
        "## Periods\n\n\
         A `manual` board whose first period holds {} seeded entries ({:.1} s to seed). \
         Commands through the API, {} clients, {} s per run: without a reset, then with one \
         half-way (the next period opens at the next whole second; commands wait only for a \
         close's lock, and no close runs during them).\n\n\
         | run | commands |\n\
         |---|---|\n\
         | without a reset | {} |\n\
         | across a reset | {} |\n\
         | during the close of the first period ({} s run) | {} |\n\n\
         Closing the first period ({} entries: the seed and the commands before the reset): \
         {:.2} s (the lock until the period's commands are in, then the pending check, the \
         standings and their SHA-256 in one transaction); verifying it (the digest again, each \
         row against the events): {:.2} s.\n\n",
        p.seeded,
        p.seed_seconds,
        p.clients,
        p.seconds,
        run(&p.without_reset),
        run(&p.across_reset),
        p.close_load_seconds,
        run(&p.during_close),
        p.closed_entries,
        p.close_seconds,
        p.verify_seconds
    )
}

/// Each board kind's commands and commit-to-visible beside the `add` board's.
pub(super) fn kinds_table(k: &KindsFigures) -> String {
    let Some(add) = k.kinds.first() else {
        return String::new();
    };
    let spread = |values: &[f64], digits: usize| {
        values
            .iter()
            .map(|v| format!("{v:.digits$}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "## Board kinds\n\n\
         Commands through the API on a fresh database, {} round(s) of {} s per kind and client \
         count, the kinds in a balanced order (forward, then backward); the `best` boards are \
         sent only improving scores, so every command writes as an `add` does. Then \
         commit-to-visible, every kind offered the same {:.0} commands/s (half the `add` \
         board's best; a kind that took fewer, half its own best), {} round(s) of {} s each, \
         in the same order. Each ratio is the kind's \
         figure ÷ the `add` board's in this run (target: within 10%; the linked set of three, \
         which writes three entries a command: at least 0.5, and its commit-to-visible p99, \
         watched on the last board it feeds, within 20%; the player tokens' board: at least \
         0.9 of the service token's board beside it, one user per connection on both); the \
         rounds' own figures show the spread.\n\n\
         | board | clients | commands (rounds) | ÷ add | commit-to-visible p50 / p99 (rounds' p99) | p99 ÷ add |\n\
         |---|---|---|---|---|---|\n",
        k.rounds, k.seconds, k.visible_rate_per_s, k.rounds, k.visible_seconds
    );
    for kind in &k.kinds {
        for (i, c) in kind.commands.iter().enumerate() {
            let base = add.commands.get(i).map_or(f64::NAN, |a| a.per_s);
            let visible = if i == 0 {
                [
                    format!(
                        "{:.1} / {:.1} ms ({} ms), {:.0} of {:.0} /s achieved",
                        kind.visible.p50_ms,
                        kind.visible.p99_ms,
                        spread(&kind.visible_rounds_p99_ms, 1),
                        kind.visible.achieved_per_s,
                        kind.visible.offered_per_s
                    ),
                    format!("{:.2}", kind.visible.p99_ms / add.visible.p99_ms),
                ]
            } else {
                [String::new(), String::new()]
            };
            out.push_str(&row(&[
                kind.kind.clone(),
                c.clients.to_string(),
                format!(
                    "{:.0} /s ({}; p50 {:.2} ms, p99 {:.2} ms)",
                    c.per_s,
                    spread(&c.rounds_per_s, 0),
                    c.p50_ms,
                    c.p99_ms
                ),
                format!("{:.2}", c.per_s / base),
                visible[0].clone(),
                visible[1].clone(),
            ]));
        }
    }
    out.push('\n');
    let a = &k.attempts;
    out.push_str(&format!(
        "\nAttempts (issue 38): with player tokens, {} connections each its own player, {} \
         round(s) of {} s per side on fresh stacks, alternating: a plain command {:.0} /s (p50 \
         {:.2} ms, p99 {:.2} ms); an attempt round trip (start, then the score with it) {:.0} /s \
         (p50 {:.2} ms, p99 {:.2} ms): round trip ÷ plain command latency p50 {:.2}, p99 {:.2} \
         (target: under 2).\n",
        a.clients,
        a.rounds,
        a.seconds,
        a.plain_per_s,
        a.plain_p50_ms,
        a.plain_p99_ms,
        a.round_trip_per_s,
        a.round_trip_p50_ms,
        a.round_trip_p99_ms,
        a.round_trip_p50_ms / a.plain_p50_ms,
        a.round_trip_p99_ms / a.plain_p99_ms
    ));
    for (e, add) in k.entries.iter().zip(&add.commands) {
        out.push_str(&format!(
            "\nEntries into a tournament with cohorts of 50 (issue 39), {} clients, every entry \
             a new player: {:.0} /s ({}; p50 {:.2} ms, p99 {:.2} ms), {:.2} of the `add` board's \
             commands (target: at least 0.7).\n",
            e.clients,
            e.per_s,
            spread(&e.rounds_per_s, 0),
            e.p50_ms,
            e.p99_ms,
            e.per_s / add.per_s
        ));
    }
    let c = &k.close;
    out.push_str(&format!(
        "\nCohorts the entries opened: {} of {} sealed by their first entry (read from a whole \
         projection from then on; target: all, within 1 s of the first entry). A run of {} \
         cohorts ({} entrants, seeded in {:.1} s): closed in {:.2} s, verified in {:.2} s \
         ({}). A cohort's `top?limit=10` at {} clients: {:.0} /s against {:.0} /s for a plain \
         board of as many members, {:.2} (target: at least 0.9).\n",
        k.cohorts_sealed,
        k.cohorts_opened,
        c.cohorts,
        c.entrants,
        c.seed_seconds,
        c.close_seconds,
        c.verify_seconds,
        if c.holds { "holds" } else { "DOES NOT HOLD" },
        c.clients,
        c.cohort_top_per_s,
        c.board_top_per_s,
        c.cohort_top_per_s / c.board_top_per_s
    ));
    out
}

/// The uncoalesced reads beside redis-benchmark running the same Redis work.
pub(super) fn ranks_table(r: &RanksFigures) -> String {
    let mut out = format!(
        "## Reads players ask for\n\n\
         An undeclared board of {} users, {} distinct scores, sealed by `lbctl rebuild`; every \
         read answered by the projection (checked), {} s per read and client count; random \
         users and offsets, so no two requests share a Redis read. The limit is redis-benchmark \
         running the same Redis work as one `EVAL` per request; the ceiling is the same server \
         answering an unknown path (404, the same router, middleware and load tool). The last \
         column is the same read of a board of three columns holding the same users (target: \
         within 10% of the one-column board's rate).\n\n\
         | read | clients | ours | limit (redis-benchmark) | ratio | ÷ HTTP ceiling | target ÷ ceiling | three columns (÷ one) |\n|---|---|---|---|---|---|---|---|\n",
        r.users, r.distinct_scores, r.seconds
    );
    for x in &r.reads {
        out.push_str(&row(&[
            x.read.clone(),
            x.clients.to_string(),
            format!(
                "{:.0} /s (p50 {:.2} ms, p99 {:.2} ms)",
                x.per_s, x.p50_ms, x.p99_ms
            ),
            format!("{:.0} /s ({})", x.redis_benchmark_per_s, x.reference),
            format!("{:.2}", x.per_s / x.redis_benchmark_per_s),
            format!(
                "{:.2} of {:.0} /s",
                x.per_s / x.ceiling_per_s,
                x.ceiling_per_s
            ),
            if x.read.starts_with("users/{id}") {
                "≥ 0.4"
            } else if x.read.starts_with("around") {
                "≥ 0.35"
            } else {
                ""
            }
            .into(),
            format!(
                "{:.0} /s ({:.2})",
                x.three_columns_per_s,
                x.three_columns_per_s / x.per_s
            ),
        ]));
    }
    out.push('\n');
    out
}

/// Each larger size or count against the smaller one measured in the same run: 1 is flat.
pub(super) fn growth_table(g: &GrowthFigures) -> String {
    let mut out = String::from(
        "## The cost of growth\n\n\
         Each row against the first of its kind, measured in the same run (ratio 1: flat).\n\n\
         | figure | size | measured | ÷ smallest | target |\n|---|---|---|---|---|\n",
    );
    if let Some(base) = g.sizes.first() {
        for s in &g.sizes {
            let ten = s.users >= 10_000_000;
            for (what, run, target) in [
                (
                    "reconcile pass",
                    &s.pass,
                    if ten { "≤ 60 s; memory ≤ 2 ×" } else { "" },
                ),
                (
                    "full rebuild (`lbctl rebuild`)",
                    &s.rebuild,
                    if s.users == 1_000_000 { "≤ 5 s" } else { "" },
                ),
            ] {
                let first = if what.starts_with("reconcile") {
                    &base.pass
                } else {
                    &base.rebuild
                };
                out.push_str(&row(&[
                    what.into(),
                    format!("{} users", s.users),
                    format!(
                        "{:.1} s ({:.0} rows/s), peak {:.1} MB",
                        run.seconds, run.rows_per_s, run.peak_rss_mb
                    ),
                    format!(
                        "time {:.2}, rows/s {:.2}, memory {:.2}",
                        run.seconds / first.seconds,
                        run.rows_per_s / first.rows_per_s,
                        run.peak_rss_mb / first.peak_rss_mb
                    ),
                    target.into(),
                ]));
            }
            out.push_str(&row(&[
                "`users/{id}` of random users, 16 clients".into(),
                format!("{} users", s.users),
                format!(
                    "{:.0} /s ({:.2} of the HTTP ceiling, {:.0} /s)",
                    s.reads_per_s,
                    s.reads_per_s / s.ceiling_per_s,
                    s.ceiling_per_s
                ),
                format!(
                    "{:.2}",
                    (s.reads_per_s / s.ceiling_per_s) / (base.reads_per_s / base.ceiling_per_s)
                ),
                String::new(),
            ]));
        }
    }
    if let Some(base) = g.commands.first() {
        for c in &g.commands {
            out.push_str(&row(&[
                "commands, 64 clients".into(),
                format!("{} boards", c.boards),
                format!("{:.0} /s (p99 {:.1} ms)", c.per_s, c.p99_ms),
                format!("{:.2}", c.per_s / base.per_s),
                String::new(),
            ]));
        }
    }
    if let Some(base) = g.many_boards.first() {
        for m in &g.many_boards {
            out.push_str(&row(&[
                "dry-run reconcile pass, one-user boards".into(),
                format!("{} boards", m.boards),
                format!(
                    "{:.1} s ({:.0} boards/s), peak {:.1} MB, {} listed",
                    m.pass.seconds, m.pass.rows_per_s, m.pass.peak_rss_mb, m.listed
                ),
                format!(
                    "boards/s {:.2}, memory {:.2}",
                    m.pass.rows_per_s / base.pass.rows_per_s,
                    m.pass.peak_rss_mb / base.pass.peak_rss_mb
                ),
                String::new(),
            ]));
        }
    }
    if let Some(soak) = &g.soak {
        out.push_str(&row(&[
            "the api's resident memory under all-different requests".into(),
            format!(
                "{:.0} s, {} requests, {} boards, each a new client address and user",
                soak.seconds, soak.requests, soak.boards
            ),
            format!(
                "{} MB every 10 s; {} answers ≥ 500",
                soak.rss_mb
                    .iter()
                    .map(|m| format!("{m:.0}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                soak.server_errors
            ),
            format!("last ÷ after the first minute {:.2}", soak.growth()),
            "flat".into(),
        ]));
    }
    out.push('\n');
    out
}
