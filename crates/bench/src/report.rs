//! The report: ratios first, then details and the machine they were measured on.

use serde::Serialize;

use crate::projector::ProjectorFigures;
use crate::reads::ReadFigures;
use crate::reconciler::ReconcilerFigures;

#[derive(Debug, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub postgres: String,
    pub redis: String,
}

impl Machine {
    pub async fn read() -> anyhow::Result<Self> {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let postgres = command_output("psql", &["--version"]);
        let redis = command_output("redis-server", &["--version"]);
        Ok(Self {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            postgres,
            redis,
        })
    }
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub quick: bool,
    /// Whether the daemons' telemetry (metrics and spans) ran, as in production.
    pub telemetry: bool,
    pub machine: Machine,
    pub projector: ProjectorFigures,
    pub reconciler: ReconcilerFigures,
    pub reads: Vec<ReadFigures>,
}

impl Report {
    pub fn markdown(&self) -> String {
        let p = &self.projector;
        let mut out = String::new();
        out.push_str("# ledgerboard benchmark\n\n");
        if self.quick {
            out.push_str("Quick run (CI): small sizes, rough figures.\n\n");
        }
        out.push_str("## Ratios (ours ÷ limit, measured in the same run)\n\n");
        out.push_str("| figure | ours | limit | ratio | target |\n|---|---|---|---|---|\n");
        for d in &p.drains {
            out.push_str(&format!(
                "| projector drain, {} replica(s) | {:.0} rows/s | {:.0} rows/s (lower of claim-and-mark SQL and projection script) | {:.2} | ≥ 0.5 with 4 replicas |\n",
                d.replicas, d.rows_per_s, p.limit_rows_per_s, d.rows_per_s / p.limit_rows_per_s
            ));
        }
        let r = &self.reconciler;
        out.push_str(&format!(
            "| reconcile pass, {} users | {:.0} rows/s ({:.1} s) | {:.0} rows/s (SELECT + pipelined ZSCORE/HGET) | {:.2} | pass ≤ 10 s at 1M users |\n",
            r.users, r.pass.rows_per_s, r.pass.seconds, r.limit_rows_per_s, r.pass.rows_per_s / r.limit_rows_per_s
        ));
        out.push_str(&format!(
            "| full rebuild, {} users | {:.0} rows/s ({:.1} s) | {:.0} rows/s | {:.2} | rebuild ≤ 15 s at 1M users |\n",
            r.users, r.rebuild.rows_per_s, r.rebuild.seconds, r.limit_rows_per_s, r.rebuild.rows_per_s / r.limit_rows_per_s
        ));
        for r in &self.reads {
            out.push_str(&format!(
                "| top-100 reads through the API, {} clients (p50 {:.2} ms, p99 {:.2} ms) | {:.0} /s | {:.0} /s (redis-benchmark ZREVRANGE 0 99 WITHSCORES) | {:.2} | ≥ 0.5 |\n",
                r.clients, r.p50_ms, r.p99_ms, r.per_s, r.redis_benchmark_per_s, r.per_s / r.redis_benchmark_per_s
            ));
        }
        out.push_str("\n## Details\n\n");
        out.push_str(&format!(
            "Backlog: {} rows, {} users, batch {}.\n\n",
            p.backlog_rows, p.users, p.batch_size
        ));
        out.push_str("| limit | clients | rows/s |\n|---|---|---|\n");
        for l in &p.claim_and_mark {
            out.push_str(&format!(
                "| pgbench claim-and-mark SQL | {} | {:.0} |\n",
                l.clients, l.rows_per_s
            ));
        }
        for l in &p.script_alone {
            out.push_str(&format!(
                "| projection script, pipelined client | {} | {:.0} |\n",
                l.clients, l.rows_per_s
            ));
        }
        out.push_str(&format!(
            "\nPeak memory (VmHWM) of the reconciler: {:.1} MB for {} users, {:.1} MB for {} users; of `lbctl rebuild`: {:.1} MB for {} users.\n",
            r.pass.peak_rss_mb, r.users, r.small_board_pass.peak_rss_mb, r.small_board_users, r.rebuild.peak_rss_mb, r.users
        ));
        let lat = &p.latency;
        out.push_str(&format!(
            "\nCommit-to-visible latency at {} commands/s offered for {} s ({} commands, {} sampled, {} projector replicas): p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 100 ms).\n",
            lat.offered_per_s, lat.seconds, lat.commands, lat.samples, lat.replicas, lat.p50_ms, lat.p95_ms, lat.p99_ms, lat.max_ms
        ));
        out.push_str(&format!(
            "\nMachine: {} cores, {}; {}; {}.\n",
            self.machine.cores, self.machine.cpu, self.machine.postgres, self.machine.redis
        ));
        out.push_str(if self.telemetry {
            "\nTelemetry: on, as in the daemons (metrics recorded, request and batch spans created, no OTLP export).\n"
        } else {
            "\nTelemetry: off (`--without-telemetry`): no metrics recorded, no spans.\n"
        });
        out
    }
}
