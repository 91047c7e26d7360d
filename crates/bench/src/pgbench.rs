//! pgbench, the database's own limit: the project's SQL run by PostgreSQL's load tool.

use std::path::Path;

use anyhow::Context;

/// SQL from `sql/` on one line, without its comments: pgbench reads one statement per line.
pub fn strip_comments(sql: &str) -> String {
    sql.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `transactions` runs of `script` by each of `clients`; transactions per second.
pub fn run_counted(
    url: &str,
    script: &Path,
    clients: usize,
    transactions: usize,
) -> anyhow::Result<f64> {
    let output = pgbench(url, script, clients, &["-t", &transactions.to_string()])?;
    tps(&output)
}

/// What a timed run measured.
pub struct Timed {
    pub tps: f64,
    /// Every transaction's latency, sorted, in milliseconds (from pgbench's `-l` log).
    pub latencies_ms: Vec<f64>,
}

/// `script` run by `clients` for `seconds`, prepared statements (as the API runs them).
pub fn run_timed(url: &str, script: &Path, clients: usize, seconds: f64) -> anyhow::Result<Timed> {
    let dir = script.with_extension("log.d");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let prefix = dir.join("pgbench");
    let output = pgbench(
        url,
        script,
        clients,
        &[
            "-T",
            &(seconds.ceil() as u64).to_string(),
            "-M",
            "prepared",
            "-l",
            "--log-prefix",
            &prefix.to_string_lossy(),
        ],
    )?;
    // One log per thread; each line: client, transaction, latency in µs, script, epoch s, µs.
    let mut latencies_ms = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let text = std::fs::read_to_string(entry?.path())?;
        for line in text.lines() {
            // A transaction pgbench gave up on (a serialization failure: the command statement
            // raises one when a member's first row was inserted concurrently, and the api runs
            // it again) is logged as `failed` in place of its latency; tps leaves it out too.
            if line.split_whitespace().nth(2) == Some("failed") {
                continue;
            }
            let micros: f64 = line
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("unexpected pgbench log line {line:?}"))?;
            latencies_ms.push(micros / 1000.0);
        }
    }
    latencies_ms.sort_by(f64::total_cmp);
    Ok(Timed {
        tps: tps(&output)?,
        latencies_ms,
    })
}

fn pgbench(url: &str, script: &Path, clients: usize, extra: &[&str]) -> anyhow::Result<String> {
    // One pgbench thread per core at most, as the API's runtime has.
    let threads = clients.min(std::thread::available_parallelism().map_or(1, |n| n.get()));
    let output = std::process::Command::new("pgbench")
        .args(["-n", "-c", &clients.to_string(), "-j", &threads.to_string()])
        .args(extra)
        .arg("-f")
        .arg(script)
        .arg(url)
        .output()
        .context("running pgbench (apt-get install postgresql-contrib?)")?;
    anyhow::ensure!(
        output.status.success(),
        "pgbench failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn tps(stdout: &str) -> anyhow::Result<f64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no tps in pgbench output: {stdout}"))
}
