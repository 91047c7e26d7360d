//! The ratios table: each figure of ours beside the limit measured in the same run.

use super::{Report, row};

impl Report {
    pub(super) fn ratios(&self) -> String {
        let mut out = String::from(
            "## Ratios (ours ÷ limit, measured in the same run)\n\n\
             | figure | ours | limit | ratio | target |\n|---|---|---|---|---|\n",
        );
        for c in self.commands.iter().flat_map(|c| &c.levels) {
            // Issue 42's targets: a lone command's p50 within 1.15× pgbench's of the same
            // statement; grouped commits pass pgbench's one statement per transaction at 64
            // clients (issue 23's, with its tail no worse than before grouping, 81.4 ms).
            let target = match c.clients {
                1 => "p50 ≤ 1.15 × pgbench's",
                16 => "≥ 0.7",
                64 => "≥ 1.5, p99 ≤ 81.4 ms",
                _ => "",
            };
            out.push_str(&row(&[
                format!("command API, {} client(s)", c.clients),
                format!(
                    "{:.0} /s (p50 {:.2} ms, p99 {:.2} ms)",
                    c.per_s, c.p50_ms, c.p99_ms
                ),
                format!(
                    "{:.0} /s (p50 {:.2} ms, p99 {:.2} ms) pgbench, same statement",
                    c.pgbench_per_s, c.pgbench_p50_ms, c.pgbench_p99_ms
                ),
                format!("{:.2}", c.per_s / c.pgbench_per_s),
                target.into(),
            ]));
            if c.clients == 1 {
                // A command is an HTTP hop in front of the statement: the hop's own latency
                // (the same api's 404) added to pgbench's is about the lowest p50 an api in
                // front of PostgreSQL reaches on this machine.
                let floor = (c.pgbench_p50_ms + c.ceiling_p50_ms) / c.pgbench_p50_ms;
                out.push_str(&row(&[
                    "command API p50, 1 client: the HTTP hop alone (404 of the same api)".into(),
                    format!(
                        "p50 {:.2} ms; ours ÷ pgbench's {:.2}",
                        c.ceiling_p50_ms,
                        c.p50_ms / c.pgbench_p50_ms
                    ),
                    format!("p50 {:.2} ms pgbench, same statement", c.pgbench_p50_ms),
                    format!("{floor:.2}"),
                    "(pgbench's p50 + the hop's) ÷ pgbench's: the p50 target's floor".into(),
                ]));
            }
        }
        if let Some(p) = &self.projector {
            for d in &p.drains {
                out.push_str(&row(&[
                    format!("projector drain, {} replica(s)", d.replicas),
                    format!("{:.0} rows/s", d.rows_per_s),
                    format!(
                        "{:.0} rows/s (lower of claim-and-mark SQL and projection script)",
                        p.limit_rows_per_s
                    ),
                    format!("{:.2}", d.rows_per_s / p.limit_rows_per_s),
                    // Issue 42: or, where the cores are the bound, CPU per row within 1.3× of
                    // the limit's (the CPU table).
                    if d.replicas == 4 { "≥ 0.8" } else { "" }.into(),
                ]));
            }
        }
        if let Some(r) = &self.reconciler {
            for (what, run, target) in [
                ("reconcile pass", &r.pass, "≤ 10 s at 1M users"),
                ("full rebuild", &r.rebuild, "≤ 6 s at 1M users"),
            ] {
                out.push_str(&row(&[
                    format!("{what}, {} users", r.users),
                    format!("{:.0} rows/s ({:.1} s)", run.rows_per_s, run.seconds),
                    format!(
                        "{:.0} rows/s (SELECT + pipelined ZSCORE/HGET)",
                        r.limit_rows_per_s
                    ),
                    format!("{:.2}", run.rows_per_s / r.limit_rows_per_s),
                    target.into(),
                ]));
            }
        }
        for r in self.reads.iter().flatten() {
            out.push_str(&row(&[
                format!("top-100 reads through the API, {} clients", r.clients),
                format!(
                    "{:.0} /s (p50 {:.2} ms, p99 {:.2} ms)",
                    r.per_s, r.p50_ms, r.p99_ms
                ),
                format!(
                    "{:.0} /s (redis-benchmark ZREVRANGE 0 99 WITHSCORES)",
                    r.redis_benchmark_per_s
                ),
                format!("{:.2}", r.per_s / r.redis_benchmark_per_s),
                "≥ 0.5".into(),
            ]));
        }
        for b in self.memory.iter().flat_map(|m| &m.boards) {
            // At rest: the markers of a user's last command expired
            // (`projector.event_marker_ttl_ms`, 10 min by default); what stays per user.
            out.push_str(&row(&[
                format!(
                    "Redis memory per user at rest (markers expired), {}-user board",
                    b.users
                ),
                format!("{:.0} B", b.per_user(b.at_rest())),
                format!(
                    "{:.0} B (the sorted set alone)",
                    b.per_user(b.sorted_set_bytes)
                ),
                format!("{:.2}", b.at_rest() as f64 / b.sorted_set_bytes as f64),
                // The target is the large board's; a small one is a listpack of a few bytes.
                if b.users >= 100_000 {
                    "≤ 1.6"
                } else {
                    "(listpack)"
                }
                .into(),
            ]));
            out.push_str(&row(&[
                format!(
                    "Redis memory per user with one live marker each, {}-user board",
                    b.users
                ),
                format!("{:.0} B", b.per_user(b.total())),
                format!(
                    "{:.0} B (the sorted set alone)",
                    b.per_user(b.sorted_set_bytes)
                ),
                format!("{:.2}", b.total() as f64 / b.sorted_set_bytes as f64),
                "(lower is better)".into(),
            ]));
        }
        out.push('\n');
        out
    }
}
