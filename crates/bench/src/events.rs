//! Events out (issue 40): what the event log costs a command, and how fast the dispatcher
//! delivers webhooks (`webhooks.rs`).
//!
//! The cost: pgbench runs the `add` command's statement as the api sends it (its `score.accepted`
//! row and the locked read of the member's previous tuple) and the same statement without the
//! two ("off": the statement before issue 40), on fresh databases, alternating, three times
//! each in a full run, with the sequencer moving rows into the log during the "on" runs as a
//! deployed api does. The ratio on ÷ off of throughput and of p50 latency is the figure.

use std::path::Path;

use ledgerboard_core::board::Operator;
use ledgerboard_core::db::Database;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::cpu::Meter;
use crate::load::percentile;
use crate::pgbench;

#[derive(Debug, Serialize)]
pub struct CostRun {
    pub on_per_s: f64,
    pub off_per_s: f64,
    pub on_p50_ms: f64,
    pub off_p50_ms: f64,
    /// Events the sequencer moved into the log during the "on" run.
    pub sequenced: i64,
    /// PostgreSQL's CPU per transaction (µs), with the event (the sequencer's work included)
    /// and without.
    pub on_postgres_cpu_us: f64,
    pub off_postgres_cpu_us: f64,
}

#[derive(Debug, Serialize)]
pub struct CostLevel {
    pub clients: usize,
    pub runs: Vec<CostRun>,
}

#[derive(Debug, Serialize)]
pub struct EventsFigures {
    pub seconds: f64,
    pub cost: Vec<CostLevel>,
    pub webhooks: crate::webhooks::WebhookFigures,
}

pub async fn run(quick: bool, out: &Path) -> anyhow::Result<EventsFigures> {
    let seconds = if quick { 1.0 } else { 8.0 };
    let repeats = if quick { 1 } else { 3 };
    let on = out.join("command-events-on.sql");
    let off = out.join("command-events-off.sql");
    std::fs::write(&on, script(false))?;
    std::fs::write(&off, script(true))?;
    let mut cost = Vec::new();
    for clients in [1usize, 16] {
        let mut runs = Vec::new();
        for _ in 0..repeats {
            eprintln!("events: the command statement without its event, {clients} client(s)");
            let (db, _redis, _) = crate::settings::fresh().await?;
            let meter = Meter::start();
            let off_run = pgbench::run_timed(&db.url, &off, clients, seconds)?;
            let off_cpu = meter.stop().per(off_run.latencies_ms.len() as f64);
            drop(db);
            eprintln!("events: the command statement with its event, {clients} client(s)");
            let (db, _redis, settings) = crate::settings::fresh().await?;
            let pool = Database::connect(&settings.database, "bench-events")?;
            let stop = CancellationToken::new();
            let sequencer = tokio::spawn({
                let (pool, stop) = (pool.clone(), stop.clone());
                async move {
                    // As the api's upkeep: a turn every [events] sequence_interval_ms.
                    let interval = settings.events.sequence_interval();
                    while !stop.is_cancelled() {
                        ledgerboard_core::events::sequence::sequence_all(&pool).await?;
                        tokio::time::sleep(interval).await;
                    }
                    anyhow::Ok(())
                }
            });
            let url = db.url.clone();
            let on_script = on.clone();
            let meter = Meter::start();
            let on_run = tokio::task::spawn_blocking(move || {
                pgbench::run_timed(&url, &on_script, clients, seconds)
            })
            .await??;
            stop.cancel();
            sequencer.await??;
            let on_cpu = meter.stop().per(on_run.latencies_ms.len() as f64);
            ledgerboard_core::events::sequence::sequence_all(&pool).await?;
            let sequenced = ledgerboard_core::events::feed::bounds(&pool).await?.last;
            runs.push(CostRun {
                on_per_s: on_run.tps,
                off_per_s: off_run.tps,
                on_p50_ms: percentile(&on_run.latencies_ms, 0.5),
                off_p50_ms: percentile(&off_run.latencies_ms, 0.5),
                sequenced,
                on_postgres_cpu_us: on_cpu.postgres,
                off_postgres_cpu_us: off_cpu.postgres,
            });
        }
        cost.push(CostLevel { clients, runs });
    }
    let webhooks = crate::webhooks::run(quick).await?;
    Ok(EventsFigures {
        seconds,
        cost,
        webhooks,
    })
}

/// The `add` statement as pgbench runs it (`commands.rs`), with or without its event.
fn script(without_event: bool) -> String {
    let mut sql = Operator::Add.statement(false).sql().to_owned();
    if without_event {
        sql = strip_event(&sql);
    }
    crate::commands::pgbench_script_of(&sql)
}

/// The statement before issue 40: no `logged` CTE, `held` without its row lock.
fn strip_event(sql: &str) -> String {
    let mut out = sql.to_owned();
    if let (Some(start), Some(end)) = (out.find("logged AS ("), out.find("outbox AS (")) {
        out.replace_range(start..end, "");
    }
    if let Some(held) = out.find("held AS (")
        && let Some(lock) = out[held..].find("\n    FOR UPDATE\n")
    {
        // The clause on its own line, not the words in the CTE's comment.
        out.replace_range(held + lock..held + lock + "\n    FOR UPDATE".len(), "");
    }
    out
}

impl EventsFigures {
    pub fn table(&self) -> String {
        let mut out = String::from(
            "## Events\n\n### What the event log costs a command (pgbench, the `add` statement)\n\n\
             | clients | with event /s | without /s | ratio | p50 with | p50 without | p50 ratio | events sequenced |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for level in &self.cost {
            for r in &level.runs {
                out.push_str(&format!(
                    "| {} | {:.0} | {:.0} | {:.2} | {:.3} ms | {:.3} ms | {:.2} | {} |\n",
                    level.clients,
                    r.on_per_s,
                    r.off_per_s,
                    r.on_per_s / r.off_per_s,
                    r.on_p50_ms,
                    r.off_p50_ms,
                    r.on_p50_ms / r.off_p50_ms,
                    r.sequenced
                ));
            }
        }
        out.push_str(&format!(
            "\n{:.0} s per run; target: p50 ratio ≤ 1.10.\n\n",
            self.seconds
        ));
        out.push_str(&self.webhooks.table());
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_statement_without_its_event_has_neither_the_event_nor_the_lock() {
        let sql = ledgerboard_core::board::Operator::Add
            .statement(false)
            .sql();
        assert!(sql.contains("logged AS (") && sql.contains("FOR UPDATE"));
        let off = super::strip_event(sql);
        assert!(!off.contains("logged AS ("));
        assert!(!off.contains("event_queue"));
        let held = off.find("held AS (").expect("held");
        let go = off.find("go AS (").expect("go");
        assert!(!off[held..go].contains("\n    FOR UPDATE\n"));
        assert!(sql[sql.find("held AS (").expect("held")..].contains("\n    FOR UPDATE\n"));
    }
}
