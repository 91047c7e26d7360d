//! What the reconciler reports: its passes and rebuilds (its metrics), and the totals of the
//! one pass the run makes.

use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_harness::http;

use super::api::REQUEST_LIMIT;

/// What the reconciler did up to the run's one pass, and that pass's totals.
pub(super) struct FinalPass {
    /// Passes counted during the load and before the comparison (none may run).
    pub(super) passes_before: f64,
    /// Rebuilds the daemon served (requested, outcome done).
    pub(super) rebuilds: f64,
    /// The final pass's `totals`, as its report gives them.
    pub(super) totals: serde_json::Value,
}

impl FinalPass {
    /// Rows the pass found ahead of PostgreSQL (`u64::MAX` when the report has no number).
    pub(super) fn ahead(&self) -> u64 {
        self.totals["ahead"].as_u64().unwrap_or(u64::MAX)
    }

    /// Members the pass repaired or removed (`u64::MAX` when the report has no number).
    pub(super) fn repairs(&self) -> u64 {
        self.totals["repaired"]
            .as_u64()
            .unwrap_or(u64::MAX)
            .saturating_add(self.totals["removed"].as_u64().unwrap_or(u64::MAX))
    }
}

/// Waits (up to 30 s) for the reconciler daemon's start-up pass, and returns the passes counted.
pub(super) async fn startup_pass(admin: &str) -> anyhow::Result<f64> {
    let started = Instant::now();
    loop {
        match reconciler_passes(admin).await {
            Ok(n) if n >= 1.0 => return Ok(n),
            // The last answer goes into the error: a metric the reconciler does not export
            // must not read as a pass that is merely slow.
            last if started.elapsed() > Duration::from_secs(30) => anyhow::bail!(
                "the reconciler's start-up pass did not finish within 30 s (last: {last:?})"
            ),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

pub(super) async fn reconciler_passes(admin: &str) -> anyhow::Result<f64> {
    metric_sum(admin, "ledgerboard_reconcile_passes_total", "").await
}

pub(super) async fn reconciler_rebuilds(admin: &str) -> anyhow::Result<f64> {
    metric_sum(
        admin,
        "ledgerboard_reconciler_rebuilds_total",
        "outcome=\"done\"",
    )
    .await
}

/// The sum of the samples of the reconciler's metric lines that start with `prefix` and
/// contain `label`; an error when no line does. The reconciler exports every series at 0 from
/// the start (`init_series`), so no line means a misspelt name, never 0: a "no pass ran"
/// check would pass on it.
async fn metric_sum(admin: &str, prefix: &str, label: &str) -> anyhow::Result<f64> {
    let (status, text) = http::request(
        admin.parse()?,
        "GET",
        "/metrics",
        &[],
        String::new(),
        REQUEST_LIMIT,
    )
    .await?;
    anyhow::ensure!(status == 200, "metrics: {status}");
    let samples: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(prefix) && l.contains(label))
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .with_context(|| format!("a metric line without a number: {l:?}"))
        })
        .collect::<anyhow::Result<_>>()?;
    anyhow::ensure!(
        !samples.is_empty(),
        "the reconciler exports no {prefix} {label}"
    );
    Ok(samples.iter().sum())
}

pub(super) fn drift(totals: &serde_json::Value) -> u64 {
    ["missing", "stale", "ahead", "corrupt", "orphan"]
        .iter()
        .map(|k| totals[*k].as_u64().unwrap_or(0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drift_is_every_kind_of_difference_the_pass_found_and_nothing_else() {
        let totals = json!({
            "checked": 500, "missing": 1, "stale": 2, "ahead": 3, "corrupt": 4, "orphan": 5,
            "repaired": 7, "removed": 2,
        });
        assert_eq!(drift(&totals), 15);
        assert_eq!(drift(&json!({"checked": 500})), 0);
    }

    #[test]
    fn repairs_are_repaired_and_removed_and_a_missing_number_is_never_small() {
        let pass = |totals| FinalPass {
            passes_before: 0.0,
            rebuilds: 0.0,
            totals,
        };
        let p = pass(json!({"ahead": 0, "repaired": 3, "removed": 2}));
        assert_eq!((p.ahead(), p.repairs()), (0, 5));
        let p = pass(json!({}));
        assert_eq!((p.ahead(), p.repairs()), (u64::MAX, u64::MAX));
    }
}
