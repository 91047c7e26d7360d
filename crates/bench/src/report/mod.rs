//! The report: ratios first, then details and the machine they were measured on. The
//! sections' tables are `sections.rs`, the ratios `ratios.rs`, the details `details.rs`, the
//! machine `machine.rs`.

use serde::Serialize;

use crate::boards::BoardsFigures;
use crate::commands::Commands;
use crate::events::EventsFigures;
use crate::growth::GrowthFigures;
use crate::kinds::KindsFigures;
use crate::latency::LatencyFigures;
use crate::live::LiveFigures;
use crate::memory::MemoryFigures;
use crate::periods::PeriodsFigures;
use crate::projector::ProjectorFigures;
use crate::ranks::RanksFigures;
use crate::reads::ReadFigures;
use crate::reconciler::ReconcilerFigures;

mod cpu;
mod details;
mod machine;
mod ratios;
mod sections;

pub use machine::Machine;
use sections::{growth_table, kinds_table, latency_table, periods_table, ranks_table};

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    /// Whether the daemons' telemetry (metrics and spans) ran, as in production.
    pub telemetry: bool,
    pub machine: Machine,
    // Each section is `None` when the run left it out (`--only`).
    pub commands: Option<Commands>,
    pub latency: Option<LatencyFigures>,
    pub projector: Option<ProjectorFigures>,
    pub reconciler: Option<ReconcilerFigures>,
    pub reads: Option<Vec<ReadFigures>>,
    pub memory: Option<MemoryFigures>,
    pub boards: Option<BoardsFigures>,
    pub kinds: Option<KindsFigures>,
    pub ranks: Option<RanksFigures>,
    pub periods: Option<PeriodsFigures>,
    pub growth: Option<GrowthFigures>,
    pub events: Option<EventsFigures>,
    pub live: Option<LiveFigures>,
}

/// `| a | b | … |` and a newline.
fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str("# ledgerboard benchmark\n\n");
        if self.quick {
            out.push_str("Quick run (CI): small sizes, rough figures.\n\n");
        }
        out.push_str(&self.ratios());
        out.push_str(&self.cpu_table());
        if let Some(l) = &self.latency {
            out.push_str(&latency_table(l));
        }
        if let Some(k) = &self.kinds {
            out.push_str(&kinds_table(k));
        }
        if let Some(r) = &self.ranks {
            out.push_str(&ranks_table(r));
        }
        if let Some(p) = &self.periods {
            out.push_str(&periods_table(p));
        }
        if let Some(g) = &self.growth {
            out.push_str(&growth_table(g));
        }
        if let Some(e) = &self.events {
            out.push_str(&e.table());
        }
        if let Some(l) = &self.live {
            out.push_str(&l.table());
        }
        out.push_str(&self.details());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame of the report (title, ratios, details, machine, telemetry) and one ratio row,
    /// for a fixed input: what the split of this module must not change.
    #[test]
    fn a_fixed_report_renders_the_same_text() {
        let report = Report {
            quick: true,
            telemetry: false,
            machine: Machine {
                cores: 2,
                cpu: "cpu".into(),
                postgres: "psql 15".into(),
                redis: "redis 7".into(),
                postgres_settings: "fsync=on".into(),
                redis_settings: "save=".into(),
            },
            commands: None,
            latency: None,
            projector: None,
            reconciler: None,
            reads: Some(vec![ReadFigures {
                clients: 8,
                seconds: 1.0,
                requests: 1000,
                per_s: 1000.0,
                p50_ms: 1.234,
                p99_ms: 5.678,
                redis_benchmark_per_s: 4000.0,
                cpu_us: crate::cpu::Cpu {
                    ours: 20.0,
                    load: 10.0,
                    postgres: 0.0,
                    redis: 15.0,
                    tools: 0.0,
                },
                redis_benchmark_cpu_us: crate::cpu::Cpu {
                    redis: 14.0,
                    tools: 6.0,
                    ..Default::default()
                },
            }]),
            memory: None,
            boards: None,
            kinds: None,
            ranks: None,
            periods: None,
            growth: None,
            events: None,
            live: None,
        };
        assert_eq!(
            report.markdown(),
            "# ledgerboard benchmark\n\n\
             Quick run (CI): small sizes, rough figures.\n\n\
             ## Ratios (ours ÷ limit, measured in the same run)\n\n\
             | figure | ours | limit | ratio | target |\n|---|---|---|---|---|\n\
             | top-100 reads through the API, 8 clients | 1000 /s (p50 1.23 ms, p99 5.68 ms) \
             | 4000 /s (redis-benchmark ZREVRANGE 0 99 WITHSCORES) | 0.25 | ≥ 0.5 |\n\
             \n\
             ## CPU per unit of work (µs of user + system time, ours ÷ limit)\n\n\
             Ours counts the code under test and the servers it uses (the api or projector, \
             PostgreSQL, Redis, a binary it runs); the limit counts the servers and, where \
             the limit's client does the work ours does itself (claim-and-mark, the \
             projection script, the reconciler's reads), that client. The load generators \
             (ours, pgbench's and redis-benchmark's for commands and reads) are shown after \
             `load` and counted on neither side.\n\n\
             | figure | ours per unit | limit per unit | ratio | detail | target |\n\
             |---|---|---|---|---|---|\n\
             | top-100 read, 8 clients | 35 µs (api 20 + redis 15; load 10) \
             | 14 µs (redis 14; load 6) | 2.50 |  |  |\n\
             \n\
             ## Details\n\n\
             \nMachine: 2 cores, cpu; psql 15; redis 7.\n\n\
             PostgreSQL settings: fsync=on.\n\n\
             Redis settings: save=.\n\
             \nTelemetry: off (`--without-telemetry`): no metrics recorded, no spans.\n"
        );
    }
}
