//! redis-benchmark, Redis's own limit: a lean C client sending one command, at a concurrency.

use anyhow::Context;

/// Requests per second of `command` (its words) sent by `clients` connections, `requests` in
/// all. With `random` set, each `__rand_int__` in the command is replaced, per request and
/// per occurrence, with a random 12-digit zero-padded number below it (redis-benchmark's `-r`).
pub fn rate(
    url: &str,
    clients: usize,
    requests: usize,
    random: Option<u64>,
    command: &[&str],
) -> anyhow::Result<f64> {
    let url = url::Url::parse(url)?;
    let mut cmd = std::process::Command::new("redis-benchmark");
    cmd.args(["-h", url.host_str().unwrap_or("127.0.0.1")])
        .args(["-p", &url.port().unwrap_or(6379).to_string()])
        .args([
            "-c",
            &clients.to_string(),
            "-n",
            &requests.to_string(),
            "-q",
        ]);
    if let Some(random) = random {
        cmd.args(["-r", &random.to_string()]);
    }
    let output = cmd
        .args(command)
        .output()
        .context("running redis-benchmark (apt-get install redis-tools)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success() && !text.contains("ERR"),
        "redis-benchmark failed: {text} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // "<command>: 45045.04 requests per second, p50=…" (the last \r-separated line). The
    // command's own words may hold anything, so the rate is the word before "requests".
    text.split(['\r', '\n'])
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words
                .windows(3)
                .position(|w| w[1] == "requests" && w[2] == "per")?;
            words[at].parse::<f64>().ok()
        })
        .next_back()
        .with_context(|| format!("no rate in redis-benchmark output: {text:?}"))
}
