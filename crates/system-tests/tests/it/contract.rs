//! The consistency contract, proven the way a user would: `lbchaos experiment` (the reference
//! failure experiment) and a short `lbchaos chaos` run, each as a process driving the real
//! daemons against the real servers.

use std::time::Duration;

use ledgerboard_testkit::{Process, admin_database_url, redis_url, workspace_binary};

/// Runs `lbchaos <args> --out <dir>` to its end and returns its exit status, stderr and report.
fn lbchaos(args: &[&str], limit: Duration) -> (bool, String, String) {
    let out = std::env::temp_dir().join(format!("lbchaos-{}", uuid::Uuid::new_v4().simple()));
    let out_arg = out.to_string_lossy().into_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--out", &out_arg]);
    let database = admin_database_url();
    let redis = redis_url();
    let binary = workspace_binary("lbchaos");
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
        .unwrap_or_else(|| panic!("lbchaos {args:?} ran past {limit:?}: {}", process.stderr()));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    (status.success(), process.stderr(), report)
}

#[test]
fn the_reference_experiment_passes_every_stage() {
    let (ok, stderr, report) = lbchaos(&["experiment"], Duration::from_secs(120));
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

/// The value column of the report's row whose name starts with `name`.
fn figure<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.starts_with(&format!("| {name}")))
        .and_then(|l| l.trim_end_matches(" |").rsplit("| ").next())
        .unwrap_or_else(|| panic!("no row {name:?} in the report:\n{report}"))
}

/// "a / b" as two numbers.
fn pair(value: &str) -> (u64, u64) {
    let (a, b) = value
        .split_once(" / ")
        .unwrap_or_else(|| panic!("not a pair: {value}"));
    (
        a.trim().parse().unwrap_or_else(|_| panic!("{value}")),
        b.trim().parse().unwrap_or_else(|_| panic!("{value}")),
    )
}

#[test]
fn a_short_chaos_run_keeps_the_contract_under_every_fault() {
    let (ok, stderr, report) = lbchaos(
        &["chaos", "--duration-secs", "12", "--clients", "6"],
        Duration::from_secs(300),
    );
    assert!(ok, "{report}\n{stderr}");
    assert!(stderr.contains("lbchaos chaos: seed "), "{stderr}");
    assert!(report.contains("| **mismatches** | 0 |"), "{report}");
    // Every fault kind was injected at least once.
    let faults: Vec<u64> = report
        .split("| fault | injected |")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim_end_matches(" |").rsplit("| ").next()?.parse().ok())
        .collect();
    assert_eq!(faults.len(), 10, "{report}");
    assert!(faults.iter().all(|n| *n > 0), "{report}");
    let accepted: u64 = figure(&report, "commands accepted").parse().unwrap_or(0);
    assert!(accepted > 500, "{report}");
    // Boards with columns and linked boards (issue 37): the three-column board and each board
    // of the linked set took commands, the fed boards took the linked ones too, and a value the
    // set's last board refuses was refused whole (nothing written on any board: 0 mismatches).
    let per_board = figure(&report, "commands accepted per board sent to");
    for board in ["chaos-e", "chaos-f", "chaos-g", "chaos-h"] {
        let n: u64 = per_board
            .split(&format!("{board} "))
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(n > 20, "{board}: {per_board}\n{report}");
    }
    let (fed, refused) = pair(figure(
        &report,
        "final check: events fed by a linked command / refused commands",
    ));
    assert!(fed > 20 && refused >= 1, "{report}");

    // Moderation raced the commands: at least one of each action applied, a repeat answered
    // 200 with the first outcome and a reused id refused 409 (0 mismatches above covers the
    // moderated members' state).
    for name in [
        "moderation: bans applied",
        "moderation: unbans applied",
        "moderation: removals applied",
        "moderation: entries removed",
        "moderation: repeats answered 200 with the first outcome",
        "moderation: id reuses refused 409",
    ] {
        let n: u64 = figure(&report, name).parse().unwrap_or(0);
        assert!(n >= 1, "{name}: {n}\n{report}");
    }
    assert_eq!(
        figure(
            &report,
            "moderation: retries after an answer was lost / left unresolved"
        )
        .rsplit(" / ")
        .next(),
        Some("0"),
        "{report}"
    );
    // Periods: chaos-d resets every 2 s, so 12 s of load fill several periods, each compared
    // as a board of its own below (the 7 boards that do not reset, plus its periods).
    let (periods, rest) = figure(
        &report,
        "periods: chaos-d periods with entries / accepted commands per period",
    )
    .split_once(" / ")
    .unwrap_or_else(|| panic!("{report}"));
    let periods: u64 = periods.parse().unwrap_or(0);
    assert!(periods >= 4, "{report}");
    let (fewest, _) = pair(rest);
    assert!(fewest >= 1, "{report}");
    let boards = 7 + periods;
    // The pass closed every period with entries (or, for one whose rows a corruption held, the
    // run did after the drain); each close verifies, and its frozen standings, and a
    // `period=<id>` read, are the period's ranking.
    let (by_pass, after) = pair(figure(&report, "periods: closed by the final pass"));
    assert_eq!(by_pass + after, periods, "{report}");
    let (holds, standings) = pair(figure(&report, "periods: closes verified"));
    assert_eq!(holds, periods, "{report}");
    assert_eq!(standings, periods, "{report}");
    assert_eq!(
        figure(&report, "periods: period=<id> top reads equal"),
        periods.to_string(),
        "{report}"
    );

    // After the faults, with every board whole: a ban, a removal (and an unban when a user is
    // banned) applied, and each board whole and equal after their drain, with no rebuild between.
    let (applied, equal) = pair(figure(
        &report,
        "after the faults: moderation actions applied / boards whole and equal",
    ));
    assert!(applied >= 2, "{report}");
    assert_eq!(equal, boards, "{report}");

    // The comparison before repair ran with no pass behind it, and met a board not whole
    // (the one deleted after the drain at least), read from PostgreSQL and then rebuilt.
    assert_eq!(
        figure(
            &report,
            "reconciler passes during the load and before the comparison"
        ),
        "0",
        "{report}"
    );
    // A period whose every entry a ban hid has no visible entry: it is never sealed (nothing to
    // seal), and is counted apart.
    let compared = figure(&report, "before repair: boards compared, whole / not whole");
    let (total, rest) = compared
        .split_once(": ")
        .unwrap_or_else(|| panic!("{compared}"));
    assert_eq!(total, boards.to_string(), "{report}");
    let (whole, rest) = rest
        .split_once(" / ")
        .unwrap_or_else(|| panic!("{compared}"));
    let whole: u64 = whole.parse().unwrap_or_else(|_| panic!("{compared}"));
    let (not_whole, empty) = pair(rest);
    assert_eq!(whole + not_whole + empty, boards, "{report}");
    assert!(not_whole >= 1, "{report}");
    let (from_database, rebuilt) = pair(figure(
        &report,
        "before repair: not whole, read from PostgreSQL / rebuilt equal",
    ));
    assert_eq!(rebuilt, not_whole, "{report}");
    assert!(from_database >= 1, "{report}");

    // The one pass: nothing ahead, no more repairs than corruptions injected.
    assert_eq!(figure(&report, "final pass: ahead"), "0", "{report}");
    let (repairs, corruptions) = pair(figure(
        &report,
        "final pass: repairs / corruptions injected",
    ));
    assert!(repairs <= corruptions, "{report}");

    // Redis restarted empty: an honest read within 1 s, and the board rebuilt.
    let honest: u64 = figure(&report, "Redis restarted empty: first honest bounded read")
        .parse()
        .unwrap_or(u64::MAX);
    assert!(honest <= 1_000, "{report}");
    assert!(
        figure(&report, "Redis restarted empty: projection whole again")
            .parse::<u64>()
            .is_ok(),
        "{report}"
    );
    let backlog: i64 = figure(
        &report,
        "backlog: rows pending when the projectors restarted",
    )
    .parse()
    .unwrap_or(0);
    assert!(backlog > 0, "{report}");
}
