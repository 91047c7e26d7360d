//! The CPU table: for each figure of the ratios table, what one unit of work (a command, a
//! projected row, a read, a rebuilt row) cost each process in CPU, ours beside the limit's,
//! and their ratio. On shared cores this is the figure that does not move with the hour.

use super::{Report, row};
use crate::cpu::Cpu;

/// One line: the figure, ours and the limit's CPU per unit (µs by process), what each side's
/// total counts, and the target.
struct Line {
    figure: String,
    ours: String,
    ours_total: f64,
    limit: String,
    limit_total: f64,
    extra: String,
    target: &'static str,
}

impl Report {
    pub(super) fn cpu_table(&self) -> String {
        let lines = self.cpu_lines();
        // A run of sections that have no limit (`--only boards,live`) still reports theirs.
        if lines.is_empty() {
            return self.cpu_alone_table();
        }
        let mut out = String::from(
            "## CPU per unit of work (µs of user + system time, ours ÷ limit)\n\n\
             Ours counts the code under test and the servers it uses (the api or projector, \
             PostgreSQL, Redis, a binary it runs); the limit counts the servers and, where \
             the limit's client does the work ours does itself (claim-and-mark, the \
             projection script, the reconciler's reads), that client. The load generators \
             (ours, pgbench's and redis-benchmark's for commands and reads) are shown after `load` and \
             counted on neither side.\n\n\
             | figure | ours per unit | limit per unit | ratio | detail | target |\n|---|---|---|---|---|---|\n",
        );
        for l in lines {
            out.push_str(&row(&[
                l.figure,
                format!("{:.0} µs ({})", l.ours_total, l.ours),
                format!("{:.0} µs ({})", l.limit_total, l.limit),
                format!("{:.2}", l.ours_total / l.limit_total),
                l.extra,
                l.target.into(),
            ]));
        }
        out.push('\n');
        out.push_str(&self.cpu_alone_table());
        if let Some(i) = self.commands.as_ref().map(|c| &c.itemised) {
            out.push_str(&itemised(i));
        }
        out
    }

    /// The figures no limit is run for: what a unit of their work cost, by process, so that
    /// a later run on another hour compares with this one by CPU rather than by rate.
    fn cpu_alone_table(&self) -> String {
        let mut lines: Vec<(String, crate::cpu::Cpu, &str)> = Vec::new();
        if let Some(l) = &self.latency {
            for level in &l.levels {
                lines.push((
                    format!("command committed and projected, {}% load", level.percent),
                    level.cpu_us,
                    "api + projector replicas + watcher",
                ));
            }
        }
        if let Some(k) = &self.kinds {
            for kind in &k.kinds {
                for t in &kind.commands {
                    lines.push((
                        format!("command, {} board, {} clients", kind.kind, t.clients),
                        t.cpu_us,
                        "api",
                    ));
                }
                lines.push((
                    format!("command committed and projected, {} board", kind.kind),
                    kind.visible.cpu_us,
                    "api + projector replicas + watcher",
                ));
            }
            for t in &k.entries {
                lines.push((
                    format!("tournament entry, {} clients", t.clients),
                    t.cpu_us,
                    "api",
                ));
            }
        }
        if let Some(p) = &self.periods {
            for (what, run) in [
                ("no reset", &p.without_reset),
                ("across a reset", &p.across_reset),
                ("during the close", &p.during_close),
            ] {
                lines.push((
                    format!("command on a period, {what}"),
                    run.cpu_us,
                    "api (and the close, in this process)",
                ));
            }
        }
        if let Some(g) = &self.growth {
            for s in &g.sizes {
                lines.push((
                    format!("users/{{id}} read, {} users", s.users),
                    s.reads_cpu_us,
                    "api",
                ));
                lines.push((
                    format!("ceiling request (404), {} users' stack", s.users),
                    s.ceiling_cpu_us,
                    "api",
                ));
            }
            for c in &g.commands {
                lines.push((format!("command over {} boards", c.boards), c.cpu_us, "api"));
            }
        }
        if let Some(b) = &self.boards {
            for m in &b.modes {
                lines.push((
                    format!("row drained over {} boards, {}", b.boards, m.mode),
                    m.drain_cpu_us,
                    "projector replicas",
                ));
                lines.push((
                    format!(
                        "board visited by a pass over {} boards, {}",
                        b.boards, m.mode
                    ),
                    m.pass_cpu_us_per_board,
                    "the reconciler (tools)",
                ));
            }
        }
        if let Some(l) = &self.live {
            for d in &l.projector {
                lines.push((
                    format!("row drained, events.top_n = {}", d.top_n),
                    d.cpu_us,
                    "projector replica",
                ));
            }
        }
        if let Some(e) = &self.events {
            for level in &e.cost {
                let mean = |f: fn(&crate::events::CostRun) -> f64| {
                    level.runs.iter().map(f).sum::<f64>() / level.runs.len().max(1) as f64
                };
                for (what, us, counts) in [
                    (
                        "with its event",
                        mean(|r| r.on_postgres_cpu_us),
                        "PostgreSQL alone, the sequencer's work included",
                    ),
                    (
                        "without its event",
                        mean(|r| r.off_postgres_cpu_us),
                        "PostgreSQL alone",
                    ),
                ] {
                    lines.push((
                        format!(
                            "pgbench command statement {what}, {} client(s)",
                            level.clients
                        ),
                        crate::cpu::Cpu {
                            postgres: us,
                            ..Default::default()
                        },
                        counts,
                    ));
                }
            }
            for level in &e.webhooks.levels {
                lines.push((
                    format!(
                        "webhook delivery, {} subscription(s), its command included",
                        level.subscriptions
                    ),
                    level.burst.cpu_us,
                    "api + dispatcher + receiver",
                ));
            }
        }
        if lines.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "### CPU per unit of work, figures without a limit (µs)\n\n\
             | figure | serving per unit | by process | load | ours is |\n|---|---|---|---|---|\n",
        );
        for (figure, c, ours) in lines {
            out.push_str(&row(&[
                figure,
                format!("{:.0} µs", c.serving()),
                c.breakdown("ours"),
                format!("{:.0}", c.load),
                ours.into(),
            ]));
        }
        out.push('\n');
        out
    }

    fn cpu_lines(&self) -> Vec<Line> {
        let mut lines = Vec::new();
        for c in self.commands.iter().flat_map(|c| &c.levels) {
            let (o, l) = (&c.cpu_us, &c.pgbench_cpu_us);
            lines.push(Line {
                figure: format!("command, {} client(s)", c.clients),
                ours: with_load(o.breakdown("api"), o.load),
                ours_total: o.serving(),
                limit: with_load(format!("postgres {:.0}", l.postgres), l.tools),
                limit_total: l.postgres + l.redis,
                extra: format!(
                    "postgres alone {:.2}; api ÷ its HTTP ceiling's per request ({:.0} µs) {:.2}",
                    o.postgres / l.postgres,
                    c.ceiling_cpu_us.ours,
                    o.ours / c.ceiling_cpu_us.ours
                ),
                target: "postgres alone ≤ 1.2",
            });
        }
        if let Some(p) = &self.projector {
            // The limit's own clients do the projector's work: pgbench claims and marks,
            // this process calls the script.
            let best = |v: &[crate::projector::Throughput]| {
                v.iter()
                    .max_by(|a, b| a.rows_per_s.total_cmp(&b.rows_per_s))
                    .map(|t| t.cpu_us)
                    .unwrap_or_default()
            };
            let (claim, script) = (best(&p.claim_and_mark), best(&p.script_alone));
            let limit_total = claim.postgres + claim.tools + script.redis + script.ours;
            for d in &p.drains {
                let o = &d.cpu_us;
                lines.push(Line {
                    figure: format!("projected row, {} replica(s)", d.replicas),
                    ours: o.breakdown("projector"),
                    ours_total: o.serving(),
                    limit: format!(
                        "claim-and-mark: postgres {:.0} + pgbench {:.0}; script: redis {:.0} + caller {:.0}",
                        claim.postgres, claim.tools, script.redis, script.ours
                    ),
                    limit_total,
                    extra: format!("postgres alone {:.2}", o.postgres / claim.postgres),
                    target: if d.replicas == 4 { "≤ 1.3" } else { "" },
                });
            }
        }
        if let Some(r) = &self.reconciler {
            let l = &r.limit_cpu_us;
            for (what, binary, run) in [
                ("reconciled row", "reconciler", &r.pass),
                ("rebuilt row", "lbctl", &r.rebuild),
            ] {
                let o = &run.cpu_us;
                lines.push(Line {
                    figure: format!("{what}, {} users", r.users),
                    ours: format!(
                        "{binary} {:.1} + postgres {:.1} + redis {:.1}",
                        o.tools, o.postgres, o.redis
                    ),
                    ours_total: o.tools + o.postgres + o.redis,
                    limit: l.breakdown("client"),
                    limit_total: l.serving(),
                    extra: String::new(),
                    target: "",
                });
            }
        }
        for r in self.reads.iter().flatten() {
            let (o, l) = (&r.cpu_us, &r.redis_benchmark_cpu_us);
            lines.push(Line {
                figure: format!("top-100 read, {} clients", r.clients),
                ours: with_load(o.breakdown("api"), o.load),
                ours_total: o.serving(),
                limit: with_load(format!("redis {:.0}", l.redis), l.tools),
                limit_total: l.redis,
                extra: String::new(),
                target: "",
            });
        }
        for r in self.ranks.iter().flat_map(|r| &r.reads) {
            let (o, l, c) = (&r.cpu_us, &r.redis_benchmark_cpu_us, &r.ceiling_cpu_us);
            // The floor of a read in the api: the ceiling's HTTP hop and a bare Redis one.
            let floor = c.ours + r.hop_cpu_us.ours;
            // Issue 42's targets are for the one-member reads; a friends list of 100 or a
            // page of 100 does a hundred members' work.
            let targeted = r.read.starts_with("users/{id}") || r.read.starts_with("around");
            let mut extra = format!(
                "api ÷ api per ceiling request ({:.0} µs) {:.2}; the two hops alone \
                 (+ a bare Redis round trip, {:.0} µs) {:.2} × the ceiling's, the read's \
                 own work {:.0} µs",
                c.ours,
                o.ours / c.ours,
                r.hop_cpu_us.ours,
                floor / c.ours,
                o.ours - floor
            );
            if targeted {
                extra.push_str(&format!("; {}", ceiling_arithmetic(o, l, c)));
            }
            lines.push(Line {
                figure: format!("{}, {} clients", r.read, r.clients),
                ours: with_load(o.breakdown("api"), o.load),
                ours_total: o.serving(),
                limit: with_load(format!("redis {:.0}", l.redis), l.tools),
                limit_total: l.redis,
                extra,
                target: if targeted {
                    "api ≤ 2 × ceiling's"
                } else {
                    ""
                },
            });
        }
        lines
    }
}

/// What share of the HTTP ceiling a read can reach on cores that the api, Redis and the load
/// tool share, from CPU alone: the ceiling's request (api + load) ÷ the read's (api + Redis +
/// load), as measured, then with the api at its target (2 × the ceiling's), then with Redis
/// also doing no more than the limit's bare commands (no seal, no member lookup). A read's
/// throughput ratio cannot beat the last figure on this machine however the api is written,
/// and the measured ratio runs a little under these (the cores are not busy every instant).
fn ceiling_arithmetic(read: &Cpu, limit: &Cpu, ceiling: &Cpu) -> String {
    let request = ceiling.ours + ceiling.load;
    let at_target = 2.0 * ceiling.ours;
    format!(
        "÷ ceiling by CPU {:.2} as measured, {:.2} with the api at 2 × the ceiling's, {:.2} \
         with Redis at the limit's work too",
        request / (read.ours + read.redis + read.load),
        request / (at_target + read.redis + read.load),
        request / (at_target + limit.redis + read.load),
    )
}

/// `breakdown`, then the load generator's CPU per unit, counted on neither side.
fn with_load(breakdown: String, load: f64) -> String {
    format!("{breakdown}; load {load:.0}")
}

/// PostgreSQL's CPU per command statement in parts (`commands::Itemised`).
fn itemised(i: &crate::commands::Itemised) -> String {
    let parts = match i.without_triggers_us {
        Some(w) => format!(
            "a transaction of `SELECT 1` {:.0} µs + the statement's own work {:.0} µs + its \
             triggers (entry counts, foreign keys) {:.0} µs",
            i.transaction_us,
            w - i.transaction_us,
            i.statement_us - w
        ),
        None => format!(
            "a transaction of `SELECT 1` {:.0} µs + the statement {:.0} µs (triggers not \
             itemised: the role may not turn them off)",
            i.transaction_us,
            i.statement_us - i.transaction_us
        ),
    };
    format!(
        "PostgreSQL's CPU per command statement (pgbench, 1 client, a fresh database each): \
         {:.0} µs = {parts}.\n\n",
        i.statement_us
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(ours: f64, redis: f64, load: f64) -> Cpu {
        Cpu {
            ours,
            redis,
            load,
            ..Default::default()
        }
    }

    /// Run V1's `around` at 64 clients: the ceiling's request costs 13.6 + 6.8 µs, the read
    /// 33.0 + 27.0 + 7.6 µs, the limit's Redis 17.9 µs.
    #[test]
    fn the_ceiling_arithmetic_divides_the_ceilings_cpu_by_the_reads() {
        let text = ceiling_arithmetic(
            &cpu(33.0, 27.0, 7.6),
            &cpu(0.0, 17.9, 0.0),
            &cpu(13.6, 0.0, 6.8),
        );
        // 20.4 ÷ 67.6, 20.4 ÷ (27.2 + 27.0 + 7.6), 20.4 ÷ (27.2 + 17.9 + 7.6)
        assert_eq!(
            text,
            "÷ ceiling by CPU 0.30 as measured, 0.33 with the api at 2 × the ceiling's, 0.39 \
             with Redis at the limit's work too"
        );
    }
}
