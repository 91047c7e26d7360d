//! The consistency contract, proven the way a user would: `lbctl experiment` (the reference
//! failure experiment) and a short `lbctl chaos` run, each as a process driving the real
//! daemons against the real servers.

use std::time::Duration;

use ledgerboard_testkit::{Process, admin_database_url, redis_url, workspace_binary};

/// Runs `lbctl <args> --out <dir>` to its end and returns its exit status, stderr and report.
fn lbctl(args: &[&str], limit: Duration) -> (bool, String, String) {
    let out = std::env::temp_dir().join(format!("lbctl-{}", uuid::Uuid::new_v4().simple()));
    let out_arg = out.to_string_lossy().into_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--out", &out_arg]);
    let database = admin_database_url();
    let redis = redis_url();
    let binary = workspace_binary("lbctl");
    let mut process = Process::start(
        &binary.to_string_lossy(),
        &all,
        &[
            ("LEDGERBOARD__DATABASE__URL", database.as_str()),
            ("LEDGERBOARD__REDIS__URL", redis.as_str()),
        ],
    );
    let status = process
        .wait_for_exit(limit)
        .unwrap_or_else(|| panic!("lbctl {args:?} ran past {limit:?}: {}", process.stderr()));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    (status.success(), process.stderr(), report)
}

#[test]
fn the_reference_experiment_passes_every_stage() {
    let (ok, stderr, report) = lbctl(&["experiment"], Duration::from_secs(120));
    assert!(ok, "{report}\n{stderr}");
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| "))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 6, "{report}");
    for row in rows {
        assert!(row.ends_with("| yes |"), "{row}");
    }
    assert!(
        report.contains("user-a 999"),
        "the hand edit is read back: {report}"
    );
    assert!(
        report.contains("1 corrupt, 1 current; 1 repaired"),
        "{report}"
    );
}

#[test]
fn a_short_chaos_run_keeps_the_contract_under_every_fault() {
    let (ok, stderr, report) = lbctl(
        &["chaos", "--duration-secs", "12", "--clients", "6"],
        Duration::from_secs(240),
    );
    assert!(ok, "{report}\n{stderr}");
    assert!(report.contains("| **mismatches** | 0 |"), "{report}");
    // Every fault kind was injected at least once.
    let faults: Vec<u64> = report
        .split("| fault | injected |")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim_end_matches(" |").rsplit("| ").next()?.parse().ok())
        .collect();
    assert_eq!(faults.len(), 8, "{report}");
    assert!(faults.iter().all(|n| *n > 0), "{report}");
    let accepted: u64 = report
        .lines()
        .find(|l| l.starts_with("| commands accepted"))
        .and_then(|l| l.trim_end_matches(" |").rsplit("| ").next()?.parse().ok())
        .unwrap_or(0);
    assert!(accepted > 500, "{report}");
}
