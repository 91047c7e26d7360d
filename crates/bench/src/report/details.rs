//! The details: how each figure was measured, the many-boards table, and the machine.

use crate::boards::BoardsFigures;

use super::{Report, row};

impl Report {
    pub(super) fn details(&self) -> String {
        let mut out = String::from("## Details\n\n");
        if let Some(c) = &self.commands {
            out.push_str(&format!(
            "Commands: {} s per client count, a new event id each, users drawn uniformly from {}; \
             a fresh database for each side; pgbench ran the same statement, prepared, with \
             durable commits.\n\n",
            c.seconds, c.users
        ));
        }
        if let Some(p) = &self.projector {
            out.push_str(&format!(
                "Projector backlog: {} rows, {} users, batch {}.\n\n",
                p.backlog_rows, p.users, p.batch_size
            ));
            out.push_str("| limit | clients | rows/s |\n|---|---|---|\n");
            for l in &p.claim_and_mark {
                out.push_str(&row(&[
                    "pgbench claim-and-mark SQL".into(),
                    l.clients.to_string(),
                    format!("{:.0}", l.rows_per_s),
                ]));
            }
            for l in &p.script_alone {
                out.push_str(&row(&[
                    "projection script, pipelined client".into(),
                    l.clients.to_string(),
                    format!("{:.0}", l.rows_per_s),
                ]));
            }
            out.push('\n');
        }
        if let Some(r) = &self.reconciler {
            out.push_str(&format!(
            "Peak memory (VmHWM) of the reconciler: {:.1} MB for {} users, {:.1} MB for {} users; of `lbctl rebuild`: {:.1} MB for {} users.\n\n",
            r.pass.peak_rss_mb, r.users, r.small_board_pass.peak_rss_mb, r.small_board_users, r.rebuild.peak_rss_mb, r.users
        ));
        }
        if let Some(memory) = &self.memory {
            out.push_str(&format!(
            "Redis memory (`MEMORY USAGE … SAMPLES 0`, user ids of {} bytes, one live event marker per user):\n\n\
             | board | sorted set | version hash | event markers | total | per user |\n|---|---|---|---|---|---|\n",
            memory.user_id_bytes
        ));
            for b in &memory.boards {
                out.push_str(&row(&[
                    format!("{} users", b.users),
                    format!("{} B", b.sorted_set_bytes),
                    format!("{} B", b.version_hash_bytes),
                    format!("{} B", b.markers_bytes),
                    format!("{} B", b.total()),
                    format!("{:.0} B", b.per_user(b.total())),
                ]));
            }
        }
        if let Some(b) = &self.boards {
            out.push_str(&self.boards_table(b));
        }
        let m = &self.machine;
        out.push_str(&format!(
            "\nMachine: {} cores, {}; {}; {}.\n\nPostgreSQL settings: {}.\n\nRedis settings: {}.\n",
            m.cores, m.cpu, m.postgres, m.redis, m.postgres_settings, m.redis_settings
        ));
        out.push_str(if self.telemetry {
            "\nTelemetry: on, as in the daemons (metrics recorded, request and batch spans created, no OTLP export).\n"
        } else {
            "\nTelemetry: off (`--without-telemetry`): no metrics recorded, no spans.\n"
        });
        out
    }

    /// Many boards, on one Redis and on a cluster, beside the one-board drain.
    fn boards_table(&self, b: &BoardsFigures) -> String {
        // None when the projector section did not run in this report: no ratio is printed.
        let one_board = self
            .projector
            .iter()
            .flat_map(|p| &p.drains)
            .find(|d| d.replicas == b.replicas)
            .map(|d| d.rows_per_s)
            .filter(|r| *r > 0.0);
        let one_board_head = one_board.map_or_else(
            || "not measured: the projector section did not run".to_owned(),
            |r| format!("{r:.0} rows/s"),
        );
        let mut out = format!(
            "\n{} boards ({} rows: 5 hot boards take all but one row in {}, the other boards one row each), \
             {} projector replicas, then one `ledgerboard-reconciler --once` over every board:\n\n\
             | Redis | drain | drain ÷ one-board drain ({one_board_head}) | reconcile pass |\n|---|---|---|---|\n",
            b.boards, b.rows, b.cold_every, b.replicas
        );
        for m in &b.modes {
            out.push_str(&row(&[
                m.mode.clone(),
                format!(
                    "{:.0} rows/s ({:.1} s)",
                    m.drain_rows_per_s, m.drain_seconds
                ),
                one_board.map_or_else(
                    || "–".to_owned(),
                    |r| format!("{:.2}", m.drain_rows_per_s / r),
                ),
                format!("{:.1} s for {} boards", m.pass_seconds, m.pass_boards),
            ]));
        }
        out.push_str(&format!(
            "\nBoards per cluster master (by hash-tag slot): {:?}. A one-member board's sorted set and version hash: {:.0} B.\n",
            b.boards_per_master, b.one_member_board_bytes
        ));
        out
    }
}
